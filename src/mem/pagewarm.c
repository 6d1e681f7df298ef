/*
 * pages-1.img's page cache, made before the freeze.
 *
 * Writing the pages through the page cache copies them into pages the
 * kernel first has to allocate. On a VM whose host takes free guest memory
 * back (free page reporting, balloons; this project's Firecracker VM) every
 * fresh page then costs a fault in the host, and the copy runs at ~0.5 GB/s
 * where it runs at ~4 GB/s into pages already in the cache (docs/figures.md,
 * Figures). So, while the target still runs, the image is created at the
 * size of the target's anonymous memory (as much of it as goes through the
 * cache: pagecache.c), allocated on the disk (fallocate: unwritten extents,
 * no I/O) and filled with zeros written into it (dirty pages, which the
 * frozen copy overwrites before the kernel's flusher would write them, as
 * far as its background threshold leaves room; the rest read: zeroed clean
 * pages, no I/O either; populate_window says why written). write_pages()
 * cuts the image to what it wrote. The warming costs the running target some CPU and no frozen
 * time; on a machine that does not fault in the host it is a wash.
 *
 * A snapshot's image is not warmed: its pages are written once the target
 * runs again, the copier's with O_DIRECT (snapshot.c), and the warming cost
 * as much as writing them (4 GiB: 14 s of CPU against 3-4 s for the whole
 * dump without it, 2026-12-07). Nor incremental dumps (the dirty pages are few,
 * and unknown until frozen), O_DIRECT images, small targets, an estimate the disk has no room
 * for (the write then reports the full disk, as it would have), and
 * filesystems without O_TMPFILE.
 * MEMDUMP_PAGES_WARM=0 turns it off (benchmarks: before and after), =BYTES
 * warms that much whatever the target holds (tests: more than is written).
 *
 * The image is an unnamed file (O_TMPFILE) until the frozen dump names it
 * pages-1.img (img_link_fd): a dump that ends before, killed even, leaves
 * nothing behind. A tree's processes each get one (treedump.c), made in
 * the set's directory before their own directories exist.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "image/crypt.h"
#include "image/image.h"
#include "log.h"
#include "proc.h"
#include "mem/pages.h"

#define WARM_MIN	(16UL << 20)	/* below this the fresh pages cost little */
#define WARM_ALIGN	(2UL << 20)
#define WARM_WINDOW	(64UL << 20)	/* warmed at a time */
#define WARM_READ	(256UL << 10)	/* read at a time */

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

bool pages_warm_wanted(const struct dump_opts *o)
{
	/* nor pages spliced into a stream: no image here to write them into */
	return o->pages_write != PAGES_DIRECT && !o->prev_dir && !o->xfer && !o->stream;
}

/* MEMDUMP_PAGES_WARM=BYTES: that much for each process, whatever it holds (tests). */
static bool forced(uint64_t *bytes)
{
	const char *env = getenv("MEMDUMP_PAGES_WARM");

	if (env)
		*bytes = strtoull(env, NULL, 0) & ~(PAGE_SIZE - 1);
	return env != NULL;
}

/*
 * Zeros written from a small buffer (write), or read into it: not mapped
 * with MADV_POPULATE_READ, as every page of a mapping costs a fault in the
 * host of this VM (shadow page tables) when it is set up, and taking the
 * mapping down flushes every CPU's TLB (256 MiB, caches dropped,
 * alternating: 1.07 / 1.25 s read against 1.77 / 1.35 s mapped).
 *
 * Written rather than read since issue 25's durable time: reading the
 * unwritten extents has ext4 zero large folios of readahead, and that
 * zeroing ran at 0.3-1 GB/s on this VM (70% of a dump's CPU in perf),
 * where writing the same zeros ran at 2.5-4 GB/s; the copy into the cache
 * after is as fast either way. memdump dump, load 14-17, alternating, 256
 * MiB: 1.7-2.8 s wall and 210-310 ms CPU written against 3.1-4.9 s and
 * 590-830 ms read; 1 GiB: 4.5-5.6 s and 0.8-1.0 s against 11.6-12.5 s and
 * 3.2 s, frozen 2.6-2.7 s against 1.9-2.5 s (7.6-11 s not warmed).
 * Written zeros are dirty: the copy overwrites them (it adds no dirty
 * page), and pages_cache_room() is told they are the image's.
 */
static int populate_window(int fd, uint64_t off, size_t len, uint8_t *buf, bool write)
{
	while (len) {
		ssize_t n;

		if (dump_interrupted)
			return -EINTR;
		n = write ? pwrite(fd, buf, MIN(len, WARM_READ), (off_t)off) :
			    pread(fd, buf, MIN(len, WARM_READ), (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * How many of the first bytes are warmed by writing zeros: as many as the
 * kernel's flusher leaves alone (dirty pages under its background
 * threshold, those of the processes warmed before counted), so that no
 * zero goes to the disk before the copy overwrites it; the rest is read.
 * MEMDUMP_PAGES_WARM_HOW=read: all read (comparisons).
 */
static uint64_t write_part(uint64_t bytes)
{
	const char *env = getenv("MEMDUMP_PAGES_WARM_HOW");
	uint64_t room = pages_background_room();

	if (env && !strcmp(env, "read"))
		return 0;
	return bytes <= room ? bytes : room & ~(WARM_WINDOW - 1);
}

static int warm_file(pid_t pid, int dirfd, uint64_t bytes, uint64_t *dirty, int *out)
{
	uint64_t t0 = now_us();
	int fd = img_create_unnamed(dirfd), ret;
	uint64_t wr = write_part(bytes);
	uint8_t *buf;

	*out = -1;
	if (fd < 0) {	/* a filesystem without O_TMPFILE: written as it comes */
		pr_debug("pages image of process %d not warmed (%s)", pid, strerror(-fd));
		return 0;
	}
	buf = calloc(1, WARM_READ);	/* zeros */
	ret = !buf ? -ENOMEM : fallocate(fd, 0, 0, (off_t)bytes) ? -errno : 0;
	for (uint64_t off = 0; off < bytes && !ret; off += WARM_WINDOW)
		ret = populate_window(fd, off, MIN(WARM_WINDOW, bytes - off), buf, off < wr);
	free(buf);
	if (ret) {
		close(fd);	/* it vanishes */
		if (ret == -EINTR)
			return fail(ret, "interrupted while filling the page cache of the pages "
				    "image, before process %d was frozen", pid);
		pr_debug("pages image of process %d not warmed (%s)", pid, strerror(-ret));
		return 0;	/* no room, or a filesystem that cannot: written as it comes */
	}
	*dirty += wr;
	pr_info("pages image of process %d: %" PRIu64 " MiB of page cache ready in %.3f s, "
		"before the freeze", pid, bytes >> 20, (now_us() - t0) / 1e6);
	*out = fd;
	return 0;
}

/* How much each of n processes warms: its anonymous memory, as far as the cache has room
 * for them all (pagecache.c), on a 2 MiB boundary; none below WARM_MIN. */
static void warm_sizes(const struct dump_opts *o, struct warm_file *w, int n)
{
	uint64_t total = 0, room;

	for (int i = 0; i < n; i++) {
		w[i].bytes = anon_bytes(w[i].pid) & ~(WARM_ALIGN - 1);
		total += w[i].bytes;
	}
	room = o->pages_write == PAGES_CACHE ? total : MIN(total, pages_cache_room(total, 0));
	for (int i = 0; i < n; i++) {
		uint64_t bytes = MIN(w[i].bytes, room) & ~(WARM_ALIGN - 1);

		w[i].bytes = bytes < WARM_MIN ? 0 : bytes;
		room -= w[i].bytes;
	}
}

int pages_warm_procs(const struct dump_opts *o, const pid_t *pids, int n, int dirfd,
		     struct warm_file *out)
{
	uint64_t bytes, dirty = 0;
	int ret = 0;

	for (int i = 0; i < n; i++)
		out[i] = (struct warm_file){ pids[i], -1, 0, 0 };
	if (forced(&bytes))
		for (int i = 0; i < n; i++)
			out[i].bytes = bytes;
	else
		warm_sizes(o, out, n);
	for (int i = 0; i < n && !ret; i++) {
		uint64_t before = dirty;

		ret = out[i].bytes ? warm_file(pids[i], dirfd, out[i].bytes, &dirty, &out[i].fd) : 0;
		if (out[i].fd < 0)
			out[i].bytes = 0;
		out[i].dirty = dirty - before;
	}
	return ret;
}

int pages_warm(struct dump_ctx *d, const struct dump_opts *o)
{
	struct warm_file w;
	int ret;

	if (!pages_warm_wanted(o))
		return 0;
	/* a sealed pages image is written in the real directory, not the staging */
	ret = pages_warm_procs(o, &d->pid, 1, d->seal_pages && d->dir.crypt ?
			       crypt_pages_dir(d->dir.crypt) : d->dir.fd, &w);
	d->pages_fd = w.fd;
	d->pages_warm = w.bytes;
	d->pages_warm_dirty = w.dirty;
	return ret;
}

int pages_image_fd(struct dump_ctx *d)
{
	int fd = d->pages_fd, ret;

	if (fd < 0)
		return img_create_fd(&d->dir, IMG_PAGES, 1);
	ret = img_link_fd(&d->dir, IMG_PAGES, 1, fd);
	if (ret)
		return ret;
	d->pages_fd = -1;	/* the caller's now */
	return fd;
}

int pages_warm_trim(struct dump_ctx *d, int fd, uint64_t written)
{
	if (d->pages_warm <= written)
		return 0;
	if (ftruncate(fd, (off_t)written))
		return fail(-errno, "cannot truncate the pages image: %s", strerror(errno));
	return 0;
}
