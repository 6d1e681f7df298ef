/* The image checksum: see include/hash64.h. */
#include "image/hash.h"

void hash64_init(struct hash64 *h)
{
	h64_init(h);
}

void hash64_update(struct hash64 *h, const void *buf, size_t len)
{
	h64_update(h, buf, len);
}

void hash64_update2(struct hash64 *a, struct hash64 *b, const void *buf, size_t len)
{
	h64_update2(a, b, buf, len);
}

uint64_t hash64_final(const struct hash64 *h)
{
	return h64_final(h);
}
