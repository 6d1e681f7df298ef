/*
 * The checksums of the pages image, taken while the pages are written:
 * every run's (pagemap_entry.sum) and the whole image's (inventory), so that
 * a killing dump need not read the image back before the kill.
 *
 * In read and mem modes the writer feeds every buffer it writes. In splice
 * mode the bytes never pass through memdump. Through the page cache a
 * thread follows the splice on the other CPU and hashes the image's
 * page-cache pages as each chunk is written (PAGESUM_FILE): the bytes the
 * file really holds, read back with pread (feed_file_read says why not
 * mapped). With O_DIRECT (for the whole image or its tail, pagecache.c) there
 * is no page cache to follow: the thread reads the target's memory beside
 * the splice (the target is frozen, so its memory is the image's content;
 * the disk is the bottleneck there, not the CPUs). When the sums can wait
 * until the target runs again, none is taken here (pages.c, sum_source).
 *
 * Hashing from the page cache inline, after each chunk on the splicing
 * thread, was measured too: 1 GiB frozen 2.5 / 1.4 / 1.7 s against
 * 1.7 / 1.5 / 0.6 s with the follower (alternating, load 2-5).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "mem/pagesum.h"
#include "log.h"
#include "mem/pages.h"

#define CHUNK	(1UL << 20)
#define READ_CHUNK	(256UL << 10)
/*
 * PAGESUM_FILE up to this size: no follower, the image is hashed once it is
 * written, on the dumping thread (~0.1-0.2 ms a MiB): the thread's start,
 * its wake-ups and its join cost a frozen tiny target more than the hash
 * (a turn on a CPU each under load).
 */
#define SUM_AT_END_MAX	(1UL << 20)

static int sum_run(struct pagesum *ps, const struct page_run *r, uint8_t *buf)
{
	uint64_t addr = r->start, left = r->nr_pages * PAGE_SIZE;

	while (left && !ps->stop) {
		ssize_t n = read_target_mem(ps->d, r->unreadable, addr, buf,
					    MIN(left, CHUNK));

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

/*
 * Through a buffer of READ_CHUNK bytes, small enough to stay in the CPU's
 * cache between the copy and the hash. Not mapped: in this VM (shadow page
 * tables) every page of a fresh mapping costs a fault in the host when it
 * is first touched, and hashing the image's page cache through mmap ran at
 * 0.3-0.5 GB/s where pread and hash run at 1.5-2.3 GB/s (256 MiB, same
 * machine, alternating).
 */
static int feed_file_read(struct pagesum *ps, int fd, uint64_t off, size_t len)
{
	while (len) {
		ssize_t n = pread(fd, ps->buf, MIN(len, READ_CHUNK), (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return fail(n < 0 ? -errno : -EIO, "cannot read back the pages image for its "
				    "checksum: %s", n < 0 ? strerror(errno) : "short read");
		runsum_feed(&ps->rs, ps->buf, (size_t)n);
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* The image is open write-only: a readable fd of the same file, once. */
static int reader_fd(struct pagesum *ps, int fd)
{
	char path[64];

	if (ps->rfd >= 0)
		return ps->rfd;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ps->rfd = open(path, O_RDONLY | O_CLOEXEC);
	if (ps->rfd < 0)
		return fail(-errno, "cannot read back the pages image for its checksum: %s",
			    strerror(errno));
	return ps->rfd;
}

/* The len bytes of the image at off, read back from its page cache. */
static int feed_file(struct pagesum *ps, int wfd, uint64_t off, size_t len)
{
	int fd = len ? reader_fd(ps, wfd) : 0;

	if (fd < 0 || !len)
		return fd < 0 ? fd : 0;
	if (!ps->buf && !(ps->buf = malloc(READ_CHUNK)))
		return -ENOMEM;
	return feed_file_read(ps, fd, off, len);
}

/* PAGESUM_FILE: the image from offset `done` up to what is written, then wait for more. */
static void *follow_main(void *arg)
{
	struct pagesum *ps = arg;
	uint64_t done = 0;

	pthread_mutex_lock(&ps->lock);
	while (!ps->stop && !ps->err) {
		uint64_t end = ps->avail;

		if (done == end && ps->closed)
			break;
		if (done == end) {
			pthread_cond_wait(&ps->cond, &ps->lock);
			continue;
		}
		pthread_mutex_unlock(&ps->lock);
		for (uint64_t len; done < end && !ps->stop && !ps->err; done += len) {
			len = MIN(end - done, CHUNK);
			ps->err = feed_file(ps, ps->wfd, done, len);
		}
		pthread_mutex_lock(&ps->lock);
	}
	pthread_mutex_unlock(&ps->lock);
	return NULL;
}

void pagesum_written(struct pagesum *ps, uint64_t end)
{
	if (!ps || ps->src != PAGESUM_FILE)
		return;
	pthread_mutex_lock(&ps->lock);
	ps->avail = end;
	pthread_cond_signal(&ps->cond);
	pthread_mutex_unlock(&ps->lock);
}

int pagesum_start(struct dump_ctx *d, struct pagesum *ps, enum pagesum_src src, int fd)
{
	memset(ps, 0, sizeof(*ps));
	ps->d = d;
	ps->rfd = -1;
	pthread_mutex_init(&ps->lock, NULL);
	pthread_cond_init(&ps->cond, NULL);
	ps->lens = calloc(d->nr_runs + 1, sizeof(*ps->lens));
	ps->sums = calloc(d->nr_runs + 1, sizeof(*ps->sums));
	if (!ps->lens || !ps->sums)
		return -ENOMEM;
	for (size_t i = 0; i < d->nr_runs; i++)
		ps->lens[i] = d->runs[i].nr_pages * PAGE_SIZE;
	ps->marks = calloc(runsum_marks_size(ps->lens, d->nr_runs) + 1, sizeof(*ps->marks));
	if (!ps->marks)
		return -ENOMEM;
	runsum_init(&ps->rs, ps->lens, ps->sums, d->nr_runs, false);
	runsum_set_marks(&ps->rs, ps->marks);
	ps->src = src;
	ps->wfd = fd;
	ps->at_end = src == PAGESUM_FILE && d->nr_pages * PAGE_SIZE <= SUM_AT_END_MAX;
	if (src == PAGESUM_FED || src == PAGESUM_LATER || ps->at_end)
		return 0;
	if (pthread_create(&ps->thread, NULL, src == PAGESUM_MEMORY ? pagesum_main : follow_main, ps))
		return fail(-EAGAIN, "cannot start the checksum thread");
	ps->started = true;
	return 0;
}

int pagesum_finish(struct pagesum *ps, bool abort)
{
	pthread_mutex_lock(&ps->lock);
	ps->stop = abort;
	ps->closed = true;
	pthread_cond_signal(&ps->cond);
	pthread_mutex_unlock(&ps->lock);
	if (ps->started)
		pthread_join(ps->thread, NULL);
	ps->started = false;
	if (ps->at_end && !abort && !ps->err)
		ps->err = feed_file(ps, ps->wfd, 0, ps->avail);
	runsum_end(&ps->rs);
	if (ps->rfd >= 0)
		close(ps->rfd);
	ps->rfd = -1;
	free(ps->buf);
	ps->buf = NULL;
	pthread_mutex_destroy(&ps->lock);
	pthread_cond_destroy(&ps->cond);
	free(ps->lens);
	ps->lens = NULL;
	return ps->err;
}
