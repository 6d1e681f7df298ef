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
};

/* with_whole: the whole file's bytes hashed too (a set listing it so). */
void runsum_init(struct runsum *p, const uint64_t *lens, uint64_t *sums, size_t nr,
		 bool with_whole);
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
