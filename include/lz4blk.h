/*
 * An LZ4 block decoder (the block format of lz4's doc/lz4_Block_format.md,
 * written from that description): a block is a series of sequences, each a
 * token (high nibble: literal count, low nibble: match length - 4; 15 in
 * either: more length bytes follow, each added, until one is not 255), the
 * literals, then a 2-byte little-endian offset back into what was decoded
 * and the match length's extra bytes. The last sequence has its literals
 * only: the block ends there.
 *
 * Shared by the restorer blob, which decodes a compressed pages image's
 * blocks straight into the restored memory, and by the host build that
 * fuzzes it (test/lz4blk-fuzz.c): plain C, no libc, no tables, only
 * __builtin_memcpy of a constant 8 bytes (a load and a store).
 *
 * Bounds: every read is inside [src, src + slen) and every write inside
 * [dst, dst + dlen), whatever the input; a match may not reach before dst.
 * Copies go 8 bytes at a time only where those 8 bytes are inside both.
 */
#ifndef MEMDUMP_LZ4BLK_H
#define MEMDUMP_LZ4BLK_H

#include <stddef.h>
#include <stdint.h>

static inline void lz4blk_copy8(uint8_t *d, const uint8_t *s)
{
	uint64_t v;

	__builtin_memcpy(&v, s, 8);
	__builtin_memcpy(d, &v, 8);
}

/*
 * n bytes from s to d, forward (d - s >= 8 or s - d >= 8 when they overlap:
 * each 8-byte step reads what earlier steps wrote); 8 at a time while
 * room_s and room_d (the bytes readable at s, writable at d) allow it,
 * 16 at a time where 16 more are.
 */
static inline void lz4blk_copy(uint8_t *d, const uint8_t *s, size_t n, size_t room_s,
			       size_t room_d)
{
	size_t i = 0;

	if (room_s >= n + 16 && room_d >= n + 16) {
		do {			/* may write up to 15 bytes past n: inside room_d */
			lz4blk_copy8(d + i, s + i);
			lz4blk_copy8(d + i + 8, s + i + 8);
			i += 16;
		} while (i < n);
		return;
	}
	for (; i + 8 <= n; i += 8)
		lz4blk_copy8(d + i, s + i);
	for (; i < n; i++)
		d[i] = s[i];
}

/* A length's extra bytes after a nibble of 15: 0, or -1 when the input ends first. */
static inline int lz4blk_len(const uint8_t **ip, const uint8_t *iend, size_t *len)
{
	uint8_t b;

	do {
		if (*ip >= iend)
			return -1;
		b = *(*ip)++;
		*len += b;
	} while (b == 255);
	return 0;
}

/*
 * The match at op, len bytes from off back (off <= op - dst, checked by the
 * caller), with oend the end of the output. An offset under 8 repeats a
 * short pattern: its first bytes one by one, then 8 at a time from a
 * multiple of off that is at least 8 back (the same pattern).
 */
static inline void lz4blk_match(uint8_t *op, size_t off, size_t len, uint8_t *oend)
{
	size_t back = off, i = 0;

	if (off < 8) {
		while (back < 8)
			back += off;
		for (; i < len && i < back; i++)
			op[i] = op[i - off];
		if (i == len)
			return;
	}
	lz4blk_copy(op + i, op + i - back, len - i, (size_t)(oend - (op + i - back)),
		     (size_t)(oend - (op + i)));
}

/*
 * The block src (slen bytes) decoded into dst (dlen bytes of room): the
 * bytes written, or -1 when src is not a valid block that fits in dlen.
 */
static inline long lz4blk_decode(const uint8_t *src, size_t slen, uint8_t *dst, size_t dlen)
{
	const uint8_t *ip = src, *iend = src + slen;
	uint8_t *op = dst, *oend = dst + dlen;

	for (;;) {
		size_t lit, len, off;
		unsigned token;

		if (ip >= iend)
			return -1;
		token = *ip++;
		lit = token >> 4;
		if (lit == 15 && lz4blk_len(&ip, iend, &lit))
			return -1;
		if (lit > (size_t)(iend - ip) || lit > (size_t)(oend - op))
			return -1;
		lz4blk_copy(op, ip, lit, (size_t)(iend - ip), (size_t)(oend - op));
		ip += lit;
		op += lit;
		if (ip == iend)
			return (long)(op - dst);	/* the last sequence: literals only */
		if (iend - ip < 2)
			return -1;
		off = (size_t)ip[0] | (size_t)ip[1] << 8;
		ip += 2;
		if (!off || off > (size_t)(op - dst))
			return -1;
		len = token & 15;
		if (len == 15 && lz4blk_len(&ip, iend, &len))
			return -1;
		len += 4;
		if (len > (size_t)(oend - op))
			return -1;
		lz4blk_match(op, off, len, oend);
		op += len;
	}
}

#endif
