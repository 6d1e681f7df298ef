/* The image checksum: see hash.h. */
#include <string.h>

#include "image/hash.h"

#define K1 0x9e3779b185ebca87ULL
#define K2 0xc2b2ae3d27d4eb4fULL
#define K3 0x165667b19e3779f9ULL

static uint64_t rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static uint64_t mix(uint64_t acc, uint64_t word)
{
	return rotl(acc + word * K2, 31) * K1;
}

static uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void block(struct hash64 *h, const uint8_t *p)
{
	for (int i = 0; i < 4; i++)
		h->lane[i] = mix(h->lane[i], load64(p + 8 * i));
}

void hash64_init(struct hash64 *h)
{
	memset(h, 0, sizeof(*h));
	h->lane[0] = K1 + K2;
	h->lane[1] = K2;
	h->lane[2] = 0;
	h->lane[3] = -K1;
}

void hash64_update(struct hash64 *h, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	h->total += len;
	if (h->tail_len) {
		size_t n = sizeof(h->tail) - h->tail_len;

		if (n > len)
			n = len;
		memcpy(h->tail + h->tail_len, p, n);
		h->tail_len += n;
		p += n;
		len -= n;
		if (h->tail_len < sizeof(h->tail))
			return;
		block(h, h->tail);
		h->tail_len = 0;
	}
	for (; len >= 32; p += 32, len -= 32)
		block(h, p);
	memcpy(h->tail, p, len);
	h->tail_len = len;
}

uint64_t hash64_final(const struct hash64 *h)
{
	uint64_t acc = rotl(h->lane[0], 1) + rotl(h->lane[1], 7) + rotl(h->lane[2], 12) +
		       rotl(h->lane[3], 18);
	size_t i;

	for (i = 0; i < 4; i++)
		acc = (acc ^ mix(0, h->lane[i])) * K1 + K3;
	acc += h->total;
	for (i = 0; i < h->tail_len; i++)
		acc = rotl(acc ^ (h->tail[i] * K3), 11) * K1;
	acc ^= acc >> 33;
	acc *= K2;
	acc ^= acc >> 29;
	acc *= K3;
	acc ^= acc >> 32;
	return acc;
}
