/*
 * pages-1.img on its way to the disk while the dump goes on.
 *
 * Through the page cache the frozen copy only dirties the image's pages;
 * the disk used to get them once the target was killed or resumed, when
 * img_sync_all() waited for all of them at once (256 MiB: 150-350 ms on
 * this VM after a frozen copy of 40-80 ms). A thread here starts the
 * writeback of each stretch of the image as soon as it is written
 * (sync_file_range, SYNC_FILE_RANGE_WRITE: the I/O is queued, nothing is
 * waited for but room in the disk's queue), so that the disk works beside
 * the copy, the other images, the inventory and the kill; the sync after
 * them waits for the tail only. It blocks only in the kernel when the
 * disk's queue is full, and costs the copy one CPU's share of submitting
 * the writes.
 *
 * Not for an image whose tail goes with O_DIRECT (pagecache.c): the target
 * waits for that tail, which then has the disk to itself.
 * MEMDUMP_PAGES_FLUSH=0 turns it off, =after starts it once the copy is done
 * (benchmarks: before and after).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "log.h"
#include "mem/pages.h"

#define FLUSH_MIN	(4UL << 20)	/* queued at a time at least, but at the end */
#define FLUSH_MAX	(32UL << 20)	/* at most: the thread sees new bytes between */

struct pages_flush {
	int fd;			/* a copy of the image's */
	bool after;		/* MEMDUMP_PAGES_FLUSH=after: nothing before the copy ends */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t avail;		/* bytes of the image written */
	uint64_t done;		/* of them, queued for the disk */
	bool closed;		/* no more come */
	bool stop;		/* the dump failed: leave now */
};

/* The next stretch to queue, or 0 (the thread ends when closed, else waits). */
static uint64_t next_len(const struct pages_flush *f)
{
	uint64_t left = f->avail - f->done;

	if (f->stop || (f->after && !f->closed))
		return 0;
	if (left < FLUSH_MIN && !f->closed)
		return 0;
	return MIN(left, FLUSH_MAX);
}

static void *flush_main(void *arg)
{
	struct pages_flush *f = arg;

	pthread_mutex_lock(&f->lock);
	for (;;) {
		uint64_t off = f->done, len = next_len(f);

		if (!len && (f->closed || f->stop))
			break;
		if (!len) {
			pthread_cond_wait(&f->cond, &f->lock);
			continue;
		}
		pthread_mutex_unlock(&f->lock);
		/* an error here is the sync's to report (the page cache keeps it) */
		sync_file_range(f->fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE);
		pthread_mutex_lock(&f->lock);
		f->done = off + len;
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

/* MEMDUMP_PAGES_FLUSH: 0 none, after: once the copy is done, else beside it. */
static bool flush_wanted(bool *after)
{
	const char *env = getenv("MEMDUMP_PAGES_FLUSH");

	*after = env && !strcmp(env, "after");
	return !env || strcmp(env, "0");
}

/* A thread of its own, with every signal blocked: they go to the dumping thread. */
static bool flush_spawn(struct pages_flush *f)
{
	sigset_t all, old;
	bool ok;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ok = !pthread_create(&f->thread, NULL, flush_main, f);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ok;
}

void pages_flush_start(struct dump_ctx *d, int fd)
{
	struct pages_flush *f;
	bool after;

	/* an image under FLUSH_MIN would be queued at its close only: the sync after
	 * the kill or the resume does as much, with no thread started while frozen */
	if (d->nr_pages * PAGE_SIZE < FLUSH_MIN || d->staged)
		return;	/* staged for --stream: packed from the cache, never synced */
	if (d->pages_flush || !flush_wanted(&after) || !(f = calloc(1, sizeof(*f))))
		return;
	f->after = after;
	f->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	if (f->fd < 0 || !flush_spawn(f)) {	/* the sync does it all, as before */
		if (f->fd >= 0)
			close(f->fd);
		pthread_mutex_destroy(&f->lock);
		pthread_cond_destroy(&f->cond);
		free(f);
		return;
	}
	d->pages_flush = f;
}

static void flush_tell(struct pages_flush *f, uint64_t avail, bool closed, bool stop)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	if (avail > f->avail)
		f->avail = avail;
	f->closed |= closed;
	f->stop |= stop;
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

void pages_flush_written(struct pages_flush *f, uint64_t end)
{
	flush_tell(f, end, false, false);
}

void pages_flush_close(struct pages_flush *f, uint64_t end)
{
	flush_tell(f, end, true, false);
}

void pages_flush_end(struct dump_ctx *d)
{
	struct pages_flush *f = d->pages_flush;

	if (!f)
		return;
	flush_tell(f, 0, true, false);
	pthread_join(f->thread, NULL);
	close(f->fd);
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->cond);
	free(f);
	d->pages_flush = NULL;
}

void pages_flush_abort(struct dump_ctx *d)
{
	flush_tell(d->pages_flush, 0, true, true);
	pages_flush_end(d);
}
