/*
 * The image checksum: see include/hash64.h.
 *
 * Where the CPU has AVX-512 (F, VL, DQ), the whole 32-byte blocks go
 * through one vector of the four lanes: two 64-bit multiplies and a
 * rotate per block, where the plain code makes eight multiplies, the
 * CPU's limit on that path. The same function, bit for bit: the restorer
 * blob's plain code checks what this one summed (every restore with its
 * pages' sums). Issue 25: the checksums were a fifth of a splice dump's
 * CPU (perf, 256 MiB); 64 MiB hashed at 4-5.4 GB/s plain, 11-13 GB/s
 * here (this VM's EPYC, Figures).
 */
#include <immintrin.h>
#include <stdbool.h>

#include "image/hash.h"

#define AVX512	"avx512f,avx512vl,avx512dq"

static bool wide(void)
{
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
	       __builtin_cpu_supports("avx512dq");
}

__attribute__((target(AVX512)))
static inline __m256i lanes_mix(__m256i acc, __m256i w, __m256i k1, __m256i k2)
{
	acc = _mm256_add_epi64(acc, _mm256_mullo_epi64(w, k2));
	return _mm256_mullo_epi64(_mm256_rol_epi64(acc, 31), k1);
}

/* nr whole blocks at p into h's lanes (h64_block, each lane in its place). */
__attribute__((target(AVX512)))
static void blocks_wide(struct hash64 *h, const uint8_t *p, size_t nr)
{
	const __m256i k1 = _mm256_set1_epi64x((long long)H64_K1);
	const __m256i k2 = _mm256_set1_epi64x((long long)H64_K2);
	__m256i acc = _mm256_loadu_si256((const __m256i *)h->lane);

	for (size_t i = 0; i < nr; i++, p += 32)
		acc = lanes_mix(acc, _mm256_loadu_si256((const __m256i *)p), k1, k2);
	_mm256_storeu_si256((__m256i *)h->lane, acc);
	h->total += nr * 32;
}

/* The same blocks into a and b, each loaded once. */
__attribute__((target(AVX512)))
static void blocks_wide2(struct hash64 *a, struct hash64 *b, const uint8_t *p, size_t nr)
{
	const __m256i k1 = _mm256_set1_epi64x((long long)H64_K1);
	const __m256i k2 = _mm256_set1_epi64x((long long)H64_K2);
	__m256i x = _mm256_loadu_si256((const __m256i *)a->lane);
	__m256i y = _mm256_loadu_si256((const __m256i *)b->lane);

	for (size_t i = 0; i < nr; i++, p += 32) {
		__m256i w = _mm256_loadu_si256((const __m256i *)p);

		x = lanes_mix(x, w, k1, k2);
		y = lanes_mix(y, w, k1, k2);
	}
	_mm256_storeu_si256((__m256i *)a->lane, x);
	_mm256_storeu_si256((__m256i *)b->lane, y);
	a->total += nr * 32;
	b->total += nr * 32;
}

void hash64_init(struct hash64 *h)
{
	h64_init(h);
}

void hash64_update(struct hash64 *h, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t head, nr;

	if (len < 256 || !wide()) {
		h64_update(h, buf, len);
		return;
	}
	head = h->tail_len ? sizeof(h->tail) - h->tail_len : 0;
	h64_update(h, p, head);		/* completes the tail's block */
	p += head;
	len -= head;
	nr = len / 32;
	blocks_wide(h, p, nr);
	h64_update(h, p + nr * 32, len - nr * 32);
}

void hash64_update2(struct hash64 *a, struct hash64 *b, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t nr = len / 32;

	if (len < 256 || a->tail_len || b->tail_len || !wide()) {
		h64_update2(a, b, buf, len);
		return;
	}
	blocks_wide2(a, b, p, nr);
	h64_update(a, p + nr * 32, len - nr * 32);
	h64_update(b, p + nr * 32, len - nr * 32);
}

uint64_t hash64_final(const struct hash64 *h)
{
	return h64_final(h);
}
