/* Within dump/: the pages image's checksums, taken while it is written (pagesum.c). */
#ifndef MEMDUMP_DUMP_PAGESUM_H
#define MEMDUMP_DUMP_PAGESUM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "image/runsum.h"

struct dump_ctx;

struct pagesum {
	struct dump_ctx *d;
	pthread_t thread;	/* from_memory: reads the target */
	bool started;
	volatile bool stop;
	int err;
	uint64_t *lens;		/* of each run of d->runs */
	uint64_t *sums;		/* their checksums */
	struct runsum rs;	/* rs.whole: the whole image's */
};

/* from_memory: a thread reads the runs from the target; else feed them. */
int pagesum_start(struct dump_ctx *d, struct pagesum *ps, bool from_memory);
static inline void pagesum_feed(struct pagesum *ps, const void *buf, size_t len)
{
	runsum_feed(&ps->rs, buf, len);
}
/* Wait for it (abort: stop early); its error, or 0 with sums and rs.whole set. */
int pagesum_finish(struct pagesum *ps, bool abort);

#endif
