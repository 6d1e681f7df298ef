/* Within dump/: the pages image's checksums, taken while it is written (pagesum.c). */
#ifndef MEMDUMP_DUMP_PAGESUM_H
#define MEMDUMP_DUMP_PAGESUM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "image/runsum.h"
#include "ctx/restore_ctx.h"

struct dump_ctx;

/* Where the bytes to hash come from. */
enum pagesum_src {
	PAGESUM_FED,		/* pagesum_feed() by the caller */
	PAGESUM_MEMORY,		/* a thread reads the runs from the frozen target */
	PAGESUM_FILE,		/* a thread hashes the image as pagesum_written() says it grows */
	PAGESUM_LATER,		/* none now: read back once the target runs (images.c) */
};

struct pagesum {
	struct dump_ctx *d;
	enum pagesum_src src;
	int wfd;		/* PAGESUM_FILE: the image */
	pthread_mutex_t lock;	/* PAGESUM_FILE: avail, closed */
	pthread_cond_t cond;
	uint64_t avail;		/* bytes of the image written */
	bool closed;		/* no more come */
	pthread_t thread;	/* from_memory: reads the target */
	bool started;
	bool at_end;		/* PAGESUM_FILE, a small image: hashed in pagesum_finish */
	volatile bool stop;
	int err;
	int rfd;		/* PAGESUM_FILE: the image, opened for reading */
	uint8_t *buf;		/* PAGESUM_FILE: what is read back */
	uint64_t *lens;		/* of each run of d->runs */
	uint64_t *sums;		/* their checksums */
	uint64_t *marks;	/* their block marks (runsum.h) */
	struct runsum rs;	/* rs.total: the image's size */
};

/* fd: the image, for PAGESUM_FILE. */
int pagesum_start(struct dump_ctx *d, struct pagesum *ps, enum pagesum_src src, int fd);
/* PAGESUM_FILE: the image holds its first `end` bytes (else nothing). */
void pagesum_written(struct pagesum *ps, uint64_t end);
static inline void pagesum_feed(struct pagesum *ps, const void *buf, size_t len)
{
	runsum_feed(&ps->rs, buf, len);
}
/* Wait for it (abort: stop early); its error, or 0 with sums and rs.total set. */
int pagesum_finish(struct pagesum *ps, bool abort);

/* Restore (its _restore.c files) */

/*
 * pagecheck.c: the blob hashes the pages as it fills them (when the set was
 * loaded with its pages' sums deferred: rst_args.sum_pages); finish (ok: the
 * process is parked) compares its sums with the set's and gives the verdict.
 */
int pagecheck_mode(const struct dumpset *ds);	/* rst_args.sum_pages, before the fork */
int pagecheck_start(struct rst *r);
int pagecheck_finish(struct rst *r, bool ok);
void pagecheck_free(struct rst *r);

#endif
