/*
 * Per-run checksums of a pages image: every present run of a pagemap has the
 * checksum of its bytes (pagemap_entry.sum, field 50, ignored by crit), so a
 * damaged page is reported with the address of its run. One read of the
 * pages image gives the runs' sums, and the whole file's for a set written
 * before the inventory listed it by its runs.
 *
 * The inventory's checksum of a pages image memdump writes is that of its
 * runs' checksums (image_sum_entry.of_runs): every byte of the file is in
 * exactly one run (its size is their total, checked), so it guards the file
 * as a hash of its bytes would, and the bytes are hashed once, not twice
 * (one hash runs at the multiplier's throughput, two at half of it).
 */
#ifndef MEMDUMP_RUNSUM_H
#define MEMDUMP_RUNSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "image/hash.h"

/*
 * Block marks: the checksum of a run is taken in one pass, and its state
 * (the four lanes of struct hash64) at every 1 << RUNSUM_BLOCK_SHIFT bytes
 * inside the run is kept (pagemap_entry.block_lanes): block k of a run is
 * then checked alone, fed from mark k-1 (block 0: a fresh hash) and
 * compared with mark k, the last block with the run's sum. Nothing is hashed
 * twice. 64 KiB: what the page handler serves at a fault (lazy_handler.c,
 * 16 pages), so a fault hashes one block, at most two, and the background
 * piece (256 KiB) four; 32 bytes of pagemap per 64 KiB of pages.
 */
#define RUNSUM_BLOCK_SHIFT	16
#define RUNSUM_BLOCK		(1ULL << RUNSUM_BLOCK_SHIFT)
#define RUNSUM_LANES		4

/* The marks of a run of len bytes (its block boundaries inside it). */
static inline uint64_t runsum_marks(uint64_t len, unsigned int shift)
{
	return len ? (len - 1) >> shift : 0;
}
/* The u64s of the marks of nr runs of lens[i] bytes. */
size_t runsum_marks_size(const uint64_t *lens, size_t nr);
/*
 * Block k (of len bytes) of a run of sum, with the run's marks (nr_marks of
 * them): true when its bytes are the dumped ones.
 */
bool runsum_block_ok(const uint64_t *marks, uint64_t nr_marks, unsigned int shift, uint64_t k,
		     const void *buf, size_t len, uint64_t sum);

/* The same, fed piece by piece: the spans' bytes in order. */
struct runsum {
	const uint64_t *lens;
	uint64_t *sums;
	size_t nr, i;		/* the span being fed */
	uint64_t left;		/* of it */
	struct hash64 h;	/* of it */
	uint64_t total;		/* bytes fed */
	bool with_whole;	/* whole: the file's bytes too */
	struct hash64 whole;
	uint64_t *marks;	/* runsum_set_marks(): the spans' marks, in order, or NULL */
	size_t at;		/* the next mark's place in marks */
};

/* with_whole: the whole file's bytes hashed too (a set listing it so). */
void runsum_init(struct runsum *p, const uint64_t *lens, uint64_t *sums, size_t nr,
		 bool with_whole);
/* Keep the spans' block marks in marks (runsum_marks_size() u64s), before any feed. */
void runsum_set_marks(struct runsum *p, uint64_t *marks);
void runsum_feed(struct runsum *p, const void *buf, size_t n);
void runsum_end(struct runsum *p);

/*
 * Read fd from offset 0 to its end: sums[i] is the checksum of the i-th of
 * the nr consecutive spans of lens[i] bytes, *whole the whole file's if
 * with_whole, else only its total (the size: a file longer or shorter than
 * the spans is the caller's to refuse). name is for the error line.
 */
int runsum_read(int fd, const char *name, const uint64_t *lens, size_t nr, uint64_t *sums,
		struct hash64 *whole, bool with_whole);
/* The same, with the block marks (marks NULL: none). */
int runsum_read_marks(int fd, const char *name, const uint64_t *lens, size_t nr, uint64_t *sums,
		      struct hash64 *whole, uint64_t *marks);
/*
 * The same for a cold image about to be used once: read with O_DIRECT
 * where the file allows it, by a second thread while this one hashes
 * (streamread.h); the page cache is left as it was.
 */
int runsum_stream(int fd, const char *name, const uint64_t *lens, size_t nr, uint64_t *sums,
		  struct hash64 *whole, bool with_whole);
/* The checksum of one buffer (what runsum_read gives a span). */
uint64_t runsum_buf(const void *buf, size_t len);
/* The checksum of nr runs' checksums, each as 8 little-endian bytes, in file order. */
uint64_t runsum_of_runs(const uint64_t *sums, size_t nr);

#endif
