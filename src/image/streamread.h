/*
 * A file read once from start to end on two CPUs: a reader thread fills a
 * ring of page-aligned buffers, with O_DIRECT where the file allows it (a
 * cold image then comes off the disk at its speed, with no page cache to
 * allocate), while the caller's thread consumes them in order (hashes
 * them). Used to verify pages images before a restore.
 */
#ifndef MEMDUMP_STREAMREAD_H
#define MEMDUMP_STREAMREAD_H

#include <stddef.h>

/* Called in file order with every piece of the file; must not keep buf. */
typedef void (*stream_consume_fn)(void *arg, const void *buf, size_t n);

/*
 * Read fd (any offset of it: pread from 0) to its end through consume.
 * name is for the error line. 0 or -errno (reported).
 */
int stream_read(int fd, const char *name, stream_consume_fn consume, void *arg);

#endif
