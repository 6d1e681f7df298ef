/*
 * pages-1.img's page cache, made before the freeze.
 *
 * Writing the pages through the page cache copies them into pages the
 * kernel first has to allocate. On a VM whose host takes free guest memory
 * back (free page reporting, balloons; this project's Firecracker VM) every
 * fresh page then costs a fault in the host, and the copy runs at ~0.5 GB/s
 * where it runs at ~4 GB/s into pages already in the cache (README,
 * Figures). So, while the target still runs, the image is created at the
 * size of the target's anonymous memory (as much of it as goes through the
 * cache: pagecache.c), allocated on the disk (fallocate: unwritten extents,
 * no I/O) and read (zeroed clean pages in the cache, no I/O either). The
 * frozen copy overwrites those pages; write_pages() cuts the image to what
 * it wrote. The warming costs the running target some CPU and no frozen
 * time; on a machine that does not fault in the host it is a wash.
 *
 * Not warmed: incremental dumps (the dirty pages are few, and unknown
 * until frozen), snapshots (their pages are written while the target
 * runs), O_DIRECT images, small targets, and an estimate the disk has no
 * room for (the write then reports the full disk, as it would have).
 * MEMDUMP_PAGES_WARM=0 turns it off (benchmarks: before and after), =BYTES
 * warms that much whatever the target holds (tests: more than is written).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"
#include "dump/dump.h"
#include "image/image.h"
#include "log.h"
#include "proc.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ	22
#endif

#define WARM_MIN	(16UL << 20)	/* below this the fresh pages cost little */
#define WARM_ALIGN	(2UL << 20)
#define WARM_WINDOW	(64UL << 20)	/* mapped at a time while populating */

/* The target's anonymous memory (smaps_rollup), in bytes: its pages image, roughly. */
static uint64_t anon_bytes(pid_t pid)
{
	char path[64], *text = NULL;
	const char *v;
	uint64_t bytes = 0;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", pid);
	if (proc_read_file(path, &text) > 0 && (v = proc_line_after(text, "Anonymous:")))
		bytes = strtoull(v, NULL, 10) << 10;
	free(text);
	return bytes;
}

static bool warm_wanted(const struct dump_ctx *d, const struct dump_opts *o)
{
	return d->pages_write != PAGES_DIRECT && !o->prev_dir && !o->snapshot;
}

/* How much to warm: the target's anonymous memory, as far as the cache has room. */
static uint64_t warm_bytes(const struct dump_ctx *d)
{
	const char *env = getenv("MEMDUMP_PAGES_WARM");
	uint64_t est, bytes;

	if (env)
		return strtoull(env, NULL, 0) & ~(PAGE_SIZE - 1);
	est = anon_bytes(d->pid);
	if (est < WARM_MIN)
		return 0;
	bytes = d->pages_write == PAGES_CACHE ? est : MIN(est, pages_cache_room(est));
	bytes &= ~(WARM_ALIGN - 1);
	return bytes < WARM_MIN ? 0 : bytes;
}

static int populate_window(int fd, uint64_t off, size_t len)
{
	void *p;
	int ret = 0;

	if (dump_interrupted)
		return -EINTR;
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)off);
	if (p == MAP_FAILED)
		return -errno;
	if (madvise(p, len, MADV_POPULATE_READ))
		ret = -errno;
	munmap(p, len);
	return ret;
}

/* Read [0, bytes) of the image into the page cache without copying it out. */
static int populate(int wfd, uint64_t bytes)
{
	char path[64];
	int fd, ret = 0;

	/* it is open write-only: a readable fd of the same file (as pagesum.c) */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", wfd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (uint64_t off = 0; off < bytes && !ret; off += WARM_WINDOW)
		ret = populate_window(fd, off, MIN(WARM_WINDOW, bytes - off));
	close(fd);
	return ret;
}


int pages_warm(struct dump_ctx *d, const struct dump_opts *o)
{
	uint64_t bytes, t0 = now_us();
	int fd, ret;

	if (!warm_wanted(d, o) || !(bytes = warm_bytes(d)))
		return 0;
	fd = img_create_fd(&d->dir, IMG_PAGES, 1);
	if (fd < 0)
		return fail(fd, "cannot create the pages image: %s", strerror(-fd));
	d->pages_fd = fd;
	ret = fallocate(fd, 0, 0, (off_t)bytes) ? -errno : populate(fd, bytes);
	if (ret == -EINTR)
		return fail(ret, "interrupted while filling the page cache of the pages image, "
			    "before process %d was frozen", d->pid);
	if (ret) {	/* no room, or a filesystem that cannot: written as it comes */
		pr_debug("pages-1.img not warmed (%s)", strerror(-ret));
		return ftruncate(fd, 0) ? fail(-errno, "cannot truncate the pages image: %s",
					       strerror(errno)) : 0;
	}
	d->pages_warm = bytes;
	pr_info("pages-1.img: %" PRIu64 " MiB of page cache ready in %.3f s, before the freeze",
		bytes >> 20, (now_us() - t0) / 1e6);
	return 0;
}

int pages_warm_trim(struct dump_ctx *d, int fd, uint64_t written)
{
	if (d->pages_warm <= written)
		return 0;
	if (ftruncate(fd, (off_t)written))
		return fail(-errno, "cannot truncate the pages image: %s", strerror(errno));
	return 0;
}
