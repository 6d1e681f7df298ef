/*
 * lz4blk-fuzz: the restorer blob's LZ4 block decoder (include/lz4blk.h),
 * built for the host, against liblz4.
 *
 *   lz4blk-fuzz [--iters N] [--seed S]
 *
 * Each iteration makes an input (random bytes, short repeated patterns,
 * zeros, words of a small alphabet, pages of one repeated word like a heap,
 * or a mix of them, up to the 256 KiB block of a compressed pages image),
 * compresses it with liblz4 (fast at several accelerations, or HC), and
 *   - decodes it: the same bytes, the same length;
 *   - decodes it into one byte less room: refused;
 *   - decodes damaged copies (cut short, bytes flipped or set to 0xff or 0,
 *     bytes added, random bytes): what both it and liblz4's safe decoder
 *     decode, they decode the same. Each refuses some the other takes:
 *     liblz4 takes an offset of 0, which the format calls corrupt; this
 *     decoder takes a match in the last bytes of a block, which liblz4's
 *     compressor never writes (both within bounds: counted, not failed).
 * The input ends at a page boundary followed by a PROT_NONE page and the
 * output starts right after one and ends right before one, so a read past
 * the input or a write outside the output faults (the suite builds it with
 * ASan and UBSan too). Exit 0 and one line of counts, or 1 naming the seed
 * and iteration of the first disagreement.
 */
#include <lz4.h>
#include <lz4hc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../include/lz4blk.h"

#define BLOCK		(256u << 10)
#define PAGE		4096u

static uint64_t rng;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static size_t below(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}

/* A buffer of room bytes whose end touches a PROT_NONE page, and whose start follows one. */
struct fenced {
	uint8_t *map, *base;
	size_t maplen;
};

static uint8_t *fence(struct fenced *f, size_t room)
{
	size_t pages = (room + PAGE - 1) / PAGE;

	f->maplen = (pages + 2) * PAGE;
	f->map = mmap(NULL, f->maplen, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (f->map == MAP_FAILED || mprotect(f->map + PAGE, pages * PAGE, PROT_READ | PROT_WRITE)) {
		perror("lz4blk-fuzz: mmap");
		exit(2);
	}
	f->base = f->map + PAGE;
	return f->base + pages * PAGE - room;
}

static void unfence(struct fenced *f)
{
	munmap(f->map, f->maplen);
}

static void gen_pattern(uint8_t *p, size_t n)
{
	size_t period = 1 + below(24);
	uint8_t pat[24];

	for (size_t i = 0; i < period; i++)
		pat[i] = (uint8_t)rnd();
	for (size_t i = 0; i < n; i++)
		p[i] = pat[i % period];
}

static void gen_words(uint8_t *p, size_t n)
{
	static const char *words[] = { "value ", "key", "'n': ", "dict", "\x00\x00\x00\x00",
				       "0123", "{'l': [", "]}, ", "\xff\xff", "a" };

	for (size_t i = 0; i < n;) {
		const char *w = words[below(10)];
		size_t l = w[0] ? strlen(w) : 4;

		for (size_t k = 0; k < l && i < n; k++)
			p[i++] = (uint8_t)w[k];
	}
}

/* pages of one repeated 8-byte word with every 64th word different (t-compress's heap) */
static void gen_heap(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t w = (i & 511) < 8 ? rnd() : (i / PAGE) * 0x9e3779b97f4a7c15ULL;

		p[i] = (uint8_t)(w >> (8 * (i & 7)));
	}
}

static void gen_one(uint8_t *p, size_t n, int kind)
{
	switch (kind) {
	case 0: for (size_t i = 0; i < n; i++) p[i] = (uint8_t)rnd(); break;
	case 1: gen_pattern(p, n); break;
	case 2: memset(p, 0, n); break;
	case 3: gen_words(p, n); break;
	default: gen_heap(p, n); break;
	}
}

static void gen(uint8_t *p, size_t n)
{
	int kind = (int)below(6);

	if (kind < 5) {
		gen_one(p, n, kind);
		return;
	}
	for (size_t i = 0; i < n;) {	/* a mix: pieces of each */
		size_t l = 1 + below(n - i < 9000 ? n - i : 9000);

		gen_one(p + i, l, (int)below(5));
		i += l;
	}
}

static size_t pick_len(void)
{
	switch (below(4)) {
	case 0: return below(64);
	case 1: return below(4096);
	case 2: return below(BLOCK + 1);
	default: return BLOCK;
	}
}

static int compress(const uint8_t *in, size_t n, uint8_t *out, size_t room)
{
	if (below(8) == 0)
		return LZ4_compress_HC((const char *)in, (char *)out, (int)n, (int)room,
				       1 + (int)below(LZ4HC_CLEVEL_MAX));
	return LZ4_compress_fast((const char *)in, (char *)out, (int)n, (int)room,
				 1 + (int)below(8));
}

static uint64_t seed0, iter, only_ours, only_lz4;

static void __attribute__((noreturn)) disagree(const char *what, long got, long want)
{
	fprintf(stderr, "lz4blk-fuzz: seed %llu iteration %llu: %s (got %ld, want %ld)\n",
		(unsigned long long)seed0, (unsigned long long)iter, what, got, want);
	fflush(stderr);
	_exit(1);
}

/* src (slen) through both decoders into want bytes of room: the same answer when liblz4 has one. */
static int differ(const uint8_t *src, size_t slen, size_t want, uint8_t *ref)
{
	struct fenced fi, fo;
	uint8_t *in = fence(&fi, slen), *out = fence(&fo, want);
	long n, r;

	memcpy(in, src, slen);
	n = lz4blk_decode(in, slen, out, want);
	r = LZ4_decompress_safe((const char *)in, (char *)ref, (int)slen, (int)want);
	if (n < -1 || n > (long)want)
		disagree("a length outside the room", n, (long)want);
	if (n >= 0 && r >= 0 && (n != r || memcmp(out, ref, (size_t)r)))
		disagree("a damaged block both decoders decode, to different bytes", n, r);
	only_ours += n >= 0 && r < 0;
	only_lz4 += n < 0 && r >= 0;
	unfence(&fi);
	unfence(&fo);
	return n >= 0;
}

/* A damaged copy of c (clen bytes) into d: its length. */
static size_t damage(const uint8_t *c, size_t clen, uint8_t *d, size_t room)
{
	size_t n = clen;

	memcpy(d, c, clen);
	switch (below(6)) {
	case 0:	/* cut short */
		return below(clen + 1);
	case 1:	/* bytes flipped */
		for (int k = 1 + (int)below(8); k-- && n;)
			d[below(n)] ^= (uint8_t)(1 + below(255));
		return n;
	case 2:	/* a length stretched: 0xff bytes */
		for (int k = 1 + (int)below(4); k-- && n;)
			d[below(n)] = 0xff;
		return n;
	case 3:	/* offsets to zero */
		for (int k = 1 + (int)below(4); k-- && n;)
			d[below(n)] = 0;
		return n;
	case 4:	/* bytes added at the end */
		for (int k = 1 + (int)below(8); k-- && n < room;)
			d[n++] = (uint8_t)rnd();
		return n;
	default:	/* random bytes */
		n = below(room < 4096 ? room : 4096);
		for (size_t i = 0; i < n; i++)
			d[i] = (uint8_t)rnd();
		return n;
	}
}

int main(int argc, char **argv)
{
	uint64_t iters = 2000, decoded = 0, damaged = 0, refused = 0;
	size_t room = (size_t)LZ4_compressBound(BLOCK) + 64;
	uint8_t *raw = malloc(BLOCK), *c = malloc(room), *d = malloc(room), *ref = malloc(BLOCK);

	seed0 = 0x5eed1234;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--iters"))
			iters = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--seed"))
			seed0 = strtoull(argv[i + 1], NULL, 0);
	}
	if (!raw || !c || !d || !ref)
		return 2;
	rng = seed0 | 1;
	for (iter = 0; iter < iters; iter++) {
		size_t n = pick_len();
		struct fenced fi, fo;
		uint8_t *in, *out;
		int clen;
		long got;

		gen(raw, n);
		clen = compress(raw, n, c, room);
		if (clen <= 0)
			disagree("liblz4 did not compress", clen, (long)n);
		in = fence(&fi, (size_t)clen);
		out = fence(&fo, n);
		memcpy(in, c, (size_t)clen);
		got = lz4blk_decode(in, (size_t)clen, out, n);
		if (got != (long)n || memcmp(out, raw, n))
			disagree("a block of liblz4 decodes wrong", got, (long)n);
		unfence(&fo);
		if (n) {	/* one byte less room: refused, and nothing written past it */
			out = fence(&fo, n - 1);
			got = lz4blk_decode(in, (size_t)clen, out, n - 1);
			if (got != -1)
				disagree("a block decoded into less room than it needs", got, -1);
			unfence(&fo);
		}
		unfence(&fi);
		decoded++;
		for (int k = 0; k < 8; k++) {
			size_t dl = damage(c, (size_t)clen, d, room);

			refused += !differ(d, dl, below(4) ? n : pick_len(), ref);
			damaged++;
		}
	}
	printf("lz4blk-fuzz: %llu blocks decoded exactly, %llu damaged ones (%llu refused; "
	       "%llu taken by this decoder only, %llu by liblz4 only), seed %llu\n",
	       (unsigned long long)decoded, (unsigned long long)damaged,
	       (unsigned long long)refused, (unsigned long long)only_ours,
	       (unsigned long long)only_lz4, (unsigned long long)seed0);
	free(raw);
	free(c);
	free(d);
	free(ref);
	return 0;
}
