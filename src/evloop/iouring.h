/*
 * io_uring instances (docs/io_uring.md): refused, by name and with the
 * state fdinfo shows, until memdump restores their rings.
 */
#ifndef MEMDUMP_IOURING_H
#define MEMDUMP_IOURING_H

#include <stddef.h>
#include <sys/types.h>

/* What io_uring fd of pid holds, as its refusal says it, in why. */
void iouring_refusal(pid_t pid, int fd, char *why, size_t len);

#endif
