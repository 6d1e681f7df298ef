/*
 * Whole reads and writes on a file descriptor (a pipe, a socket), retried
 * on EINTR and short counts (src/lib/fdio.c).
 */
#ifndef MEMDUMP_FDIO_H
#define MEMDUMP_FDIO_H

#include <stddef.h>

/* 0, or -errno (-EIO when write() wrote nothing) */
int fd_write_full(int fd, const void *buf, size_t len);
/* 0, -EPIPE at the end of the stream before len bytes, or -errno */
int fd_read_full(int fd, void *buf, size_t len);

#endif
