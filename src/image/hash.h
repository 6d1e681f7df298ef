/*
 * A streaming 64-bit checksum for image files: four independent lanes over
 * 32-byte blocks (multiply-rotate rounds), so it runs at several GB/s and
 * detects any flipped byte. Not cryptographic: it guards against corruption
 * and mistakes, not against someone who rewrites the inventory too.
 */
#ifndef MEMDUMP_HASH_H
#define MEMDUMP_HASH_H

#include <stddef.h>
#include <stdint.h>

struct hash64 {
	uint64_t lane[4];
	uint64_t total;
	uint8_t tail[32];
	size_t tail_len;
};

void hash64_init(struct hash64 *h);
void hash64_update(struct hash64 *h, const void *buf, size_t len);
uint64_t hash64_final(const struct hash64 *h);

#endif
