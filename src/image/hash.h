/* The image checksum (include/hash64.h), as functions for memdump's own code. */
#ifndef MEMDUMP_HASH_H
#define MEMDUMP_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "hash64.h"

void hash64_init(struct hash64 *h);
void hash64_update(struct hash64 *h, const void *buf, size_t len);
/* The same bytes into a and b, read once. */
void hash64_update2(struct hash64 *a, struct hash64 *b, const void *buf, size_t len);
uint64_t hash64_final(const struct hash64 *h);

#endif
