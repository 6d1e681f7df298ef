/*
 * Naming the target's sockets. memdump does not dump sockets yet; when it
 * refuses one it says what it is (TCP 127.0.0.1:8080 LISTEN, UNIX stream
 * /run/x.sock, ...), asked from the kernel with sock_diag over netlink.
 */
#ifndef MEMDUMP_SOCKETS_H
#define MEMDUMP_SOCKETS_H

#include <stddef.h>
#include <stdint.h>

/* Describe the socket with inode ino into buf; "socket" when unknown. */
void socket_describe(uint64_t ino, char *buf, size_t len);

#endif
