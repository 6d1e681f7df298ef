/*
 * The checksums of the pages image, taken while the pages are written:
 * every run's (pagemap_entry.sum) and the whole image's (inventory), so that
 * a killing dump need not read the image back before the kill.
 *
 * In read and mem modes the writer feeds every buffer it writes. In splice
 * mode the bytes never pass through memdump: a thread reads them from the
 * target's memory beside the splice, on the other CPU. The target is frozen,
 * so its memory is the image's content.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common.h"
#include "dump/dump.h"
#include "dump/pagesum.h"
#include "log.h"

#define CHUNK	(1UL << 20)

static int sum_run(struct pagesum *ps, const struct page_run *r, uint8_t *buf)
{
	uint64_t addr = r->start, left = r->nr_pages * PAGE_SIZE;

	while (left && !ps->stop) {
		ssize_t n = read_target_mem(ps->d, r->unreadable, addr, buf, MIN(left, CHUNK));

		if (n < 0 && errno == ESRCH)
			return fail(-ESRCH, "process %d died during the dump", ps->d->pid);
		if (n <= 0)
			return fail(n < 0 ? -errno : -EIO, "cannot read memory of process %d at %#lx "
				    "for its checksum: %s", ps->d->pid, addr,
				    n < 0 ? strerror(errno) : "short read");
		runsum_feed(&ps->rs, buf, n);
		addr += n;
		left -= n;
	}
	return 0;
}

static void *pagesum_main(void *arg)
{
	struct pagesum *ps = arg;
	uint8_t *buf = malloc(CHUNK);

	if (!buf) {
		ps->err = -ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < ps->d->nr_runs && !ps->err && !ps->stop; i++)
		ps->err = sum_run(ps, &ps->d->runs[i], buf);
	free(buf);
	return NULL;
}

int pagesum_start(struct dump_ctx *d, struct pagesum *ps, bool from_memory)
{
	memset(ps, 0, sizeof(*ps));
	ps->d = d;
	ps->lens = calloc(d->nr_runs + 1, sizeof(*ps->lens));
	ps->sums = calloc(d->nr_runs + 1, sizeof(*ps->sums));
	if (!ps->lens || !ps->sums)
		return -ENOMEM;
	for (size_t i = 0; i < d->nr_runs; i++)
		ps->lens[i] = d->runs[i].nr_pages * PAGE_SIZE;
	runsum_init(&ps->rs, ps->lens, ps->sums, d->nr_runs);
	if (!from_memory)
		return 0;
	if (pthread_create(&ps->thread, NULL, pagesum_main, ps))
		return fail(-EAGAIN, "cannot start the checksum thread");
	ps->started = true;
	return 0;
}

int pagesum_finish(struct pagesum *ps, bool abort)
{
	ps->stop = abort;
	if (ps->started)
		pthread_join(ps->thread, NULL);
	ps->started = false;
	runsum_end(&ps->rs);
	free(ps->lens);
	ps->lens = NULL;
	return ps->err;
}
