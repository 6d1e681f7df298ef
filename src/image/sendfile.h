#ifndef MEMDUMP_IMAGE_SENDFILE_H
#define MEMDUMP_IMAGE_SENDFILE_H

#include <stdint.h>

#include "image/hash.h"

/*
 * Send the size bytes of the regular file fd (from offset 0) to out, and add
 * them to h. Into a pipe the bytes are spliced from the page cache (no copy
 * in memdump) while a thread reads and hashes them on the other CPU; else,
 * or where the file cannot be spliced, read into buf (buf_len bytes) and
 * written. 0, or -errno with what failed in *what ("read" or "write"): a
 * file shorter than size is -EIO ("read").
 */
int img_send_file(int fd, uint64_t size, int out, struct hash64 *h, void *buf, size_t buf_len,
		  const char **what);

/* out's pipe made larger (up to 4 MiB, what this process may), if out is a pipe */
void img_send_grow_pipe(int out);

#endif
