/*
 * The image checksum (inventory's image_sum_entry, pagemap_entry.sum): a
 * streaming 64-bit hash, four independent lanes over 32-byte blocks
 * (multiply-rotate rounds), so it runs at several GB/s and detects any
 * flipped byte. Not cryptographic: it guards against corruption and
 * mistakes, not against someone who rewrites the inventory too.
 *
 * Shared by memdump (src/image/hash.c) and the restorer blob, which sums the
 * pages as it reads them: plain C, no libc (only __builtin_memcpy of a
 * constant 8 bytes, which the compiler turns into a load).
 */
#ifndef MEMDUMP_HASH64_H
#define MEMDUMP_HASH64_H

#include <stddef.h>
#include <stdint.h>

struct hash64 {
	uint64_t lane[4];
	uint64_t total;
	uint8_t tail[32];
	size_t tail_len;
};

#define H64_K1 0x9e3779b185ebca87ULL
#define H64_K2 0xc2b2ae3d27d4eb4fULL
#define H64_K3 0x165667b19e3779f9ULL

static inline uint64_t h64_rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t h64_mix(uint64_t acc, uint64_t word)
{
	return h64_rotl(acc + word * H64_K2, 31) * H64_K1;
}

static inline uint64_t h64_load(const uint8_t *p)
{
	uint64_t v;

	__builtin_memcpy(&v, p, sizeof(v));
	return v;
}

static inline void h64_block(struct hash64 *h, const uint8_t *p)
{
	for (int i = 0; i < 4; i++)
		h->lane[i] = h64_mix(h->lane[i], h64_load(p + 8 * i));
}

static inline void h64_init(struct hash64 *h)
{
	h->lane[0] = H64_K1 + H64_K2;
	h->lane[1] = H64_K2;
	h->lane[2] = 0;
	h->lane[3] = -H64_K1;
	h->total = 0;
	h->tail_len = 0;
	for (size_t i = 0; i < sizeof(h->tail); i++)
		h->tail[i] = 0;
}

static inline void h64_update(struct hash64 *h, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	h->total += len;
	if (h->tail_len) {
		size_t n = sizeof(h->tail) - h->tail_len;

		if (n > len)
			n = len;
		for (size_t i = 0; i < n; i++)
			h->tail[h->tail_len + i] = p[i];
		h->tail_len += n;
		p += n;
		len -= n;
		if (h->tail_len < sizeof(h->tail))
			return;
		h64_block(h, h->tail);
		h->tail_len = 0;
	}
	for (; len >= 32; p += 32, len -= 32)
		h64_block(h, p);
	for (size_t i = 0; i < len; i++)
		h->tail[i] = p[i];
	h->tail_len = len;
}

/*
 * The same bytes into two hashes (a run's and the whole file's), each word
 * loaded once: what h64_update(a, ...) then h64_update(b, ...) gives.
 */
static inline void h64_update2(struct hash64 *a, struct hash64 *b, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t blocks = a->tail_len || b->tail_len ? 0 : len / 32 * 32;

	a->total += blocks;
	b->total += blocks;
	for (size_t done = 0; done < blocks; done += 32, p += 32) {
		for (int i = 0; i < 4; i++) {
			uint64_t w = h64_load(p + 8 * i);

			a->lane[i] = h64_mix(a->lane[i], w);
			b->lane[i] = h64_mix(b->lane[i], w);
		}
	}
	h64_update(a, p, len - blocks);
	h64_update(b, p, len - blocks);
}

static inline uint64_t h64_final(const struct hash64 *h)
{
	uint64_t acc = h64_rotl(h->lane[0], 1) + h64_rotl(h->lane[1], 7) +
		       h64_rotl(h->lane[2], 12) + h64_rotl(h->lane[3], 18);
	size_t i;

	for (i = 0; i < 4; i++)
		acc = (acc ^ h64_mix(0, h->lane[i])) * H64_K1 + H64_K3;
	acc += h->total;
	for (i = 0; i < h->tail_len; i++)
		acc = h64_rotl(acc ^ (h->tail[i] * H64_K3), 11) * H64_K1;
	acc ^= acc >> 33;
	acc *= H64_K2;
	acc ^= acc >> 29;
	acc *= H64_K3;
	acc ^= acc >> 32;
	return acc;
}

#endif
