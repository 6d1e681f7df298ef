/*
 * Which pages to dump. For each dumped VMA, the PAGEMAP_SCAN ioctl returns
 * runs of present or swapped pages, leaving out the shared zero page and,
 * for private file mappings, the page-cache pages (only their COW copies
 * are the process's own data). Kernels without PAGEMAP_SCAN: the same from
 * /proc/PID/pagemap, one u64 per page. Untouched memory costs nothing.
 * Guard pages (MADV_GUARD_INSTALL) have no content: they are recorded, not
 * dumped (reading one faults), and installed again by the restorer.
 *
 * An incremental dump (a tracker and the set it is relative to, track.c)
 * asks for PAGE_IS_WPALLOWED and PAGE_IS_WRITTEN too: a page still
 * write-protected was not written since the previous iteration, and where
 * that set lists it, it is listed with PE_PARENT and not written again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "mem/snapshot.h"
#include "kernel_uapi.h"
#include "log.h"
#include "mem/pages.h"

#define VEC_LEN		4096
#define PM_PRESENT	(1ULL << 63)
#define PM_SWAPPED	(1ULL << 62)
#define PM_FILE		(1ULL << 61)
#define PM_UFFD_WP	(1ULL << 57)	/* write-protected by a userfaultfd */
#define PM_SWAP_TYPE	0x1fULL		/* bits 0-4 of a swap entry; all set: a PTE marker */

static int add_run(struct dump_ctx *d, const struct vma *v, uint64_t start, uint64_t end,
		   size_t *cap)
{
	struct page_run *last = d->nr_runs ? &d->runs[d->nr_runs - 1] : NULL;
	uint64_t nr = (end - start) >> PAGE_SHIFT;

	d->nr_pages += nr;
	if (last && last->start + last->nr_pages * PAGE_SIZE == start &&
	    last->unreadable == !(v->prot & PROT_READ) && start != v->start) {
		last->nr_pages += nr;
		return 0;
	}
	if (d->nr_runs == *cap) {
		struct page_run *n = realloc(d->runs, (*cap = *cap ? *cap * 2 : 1024) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		d->runs = n;
	}
	d->runs[d->nr_runs++] = (struct page_run){ start, nr, !(v->prot & PROT_READ) };
	return 0;
}

static int add_guard(struct dump_ctx *d, uint64_t start, uint64_t end)
{
	struct guard_region *g = realloc(d->guards, (d->nr_guards + 1) * sizeof(*g));

	if (!g)
		return -ENOMEM;
	d->guards = g;
	g[d->nr_guards++] = (struct guard_region){ start, end };
	pr_info("guard pages at %#lx-%#lx", (unsigned long)start, (unsigned long)end);
	return 0;
}

/* Pages the parent set holds: a PE_PARENT entry (capacity: the next power of two). */
static int add_parent_run(struct dump_ctx *d, const struct vma *v, uint64_t start, uint64_t end)
{
	size_t n = d->nr_parent_runs;
	struct page_run *last = n ? &d->parent_runs[n - 1] : NULL;
	uint64_t nr = (end - start) >> PAGE_SHIFT;

	d->stats.pages_in_parent += nr;
	if (last && last->start + last->nr_pages * PAGE_SIZE == start && start != v->start) {
		last->nr_pages += nr;	/* one VMA's: a run never spans two */
		return 0;
	}
	if (!(n & (n - 1))) {	/* 0, 1, 2, 4, ...: full */
		struct page_run *r = realloc(d->parent_runs, (n ? n * 2 : 1) * sizeof(*r));

		if (!r)
			return -ENOMEM;
		d->parent_runs = r;
	}
	d->parent_runs[d->nr_parent_runs++] = (struct page_run){ start, nr, false };
	return 0;
}

/* Pages not written since the parent: its own where it lists them, else dumped. */
static int add_unwritten(struct dump_ctx *d, const struct vma *v, uint64_t start, uint64_t end,
			 size_t *cap)
{
	int ret = 0;

	while (start < end && !ret) {
		bool held;
		uint64_t to = parent_stretch(&d->parent, start, end, &held);

		ret = held ? add_parent_run(d, v, start, to) : add_run(d, v, start, to, cap);
		start = to;
	}
	return ret;
}

/* Pages that are there: dumped, or the parent's. */
static int add_pages(struct dump_ctx *d, const struct vma *v, uint64_t categories,
		     uint64_t start, uint64_t end, size_t *cap)
{
	if (d->incremental && v->tracked && (categories & PAGE_IS_WPALLOWED) &&
	    !(categories & PAGE_IS_WRITTEN))
		return add_unwritten(d, v, start, end, cap);
	return add_run(d, v, start, end, cap);
}

/*
 * "Swapped" in a tracked VMA may be a userfaultfd-wp marker: a protected
 * page the kernel dropped (a private file page reclaimed, a COW copy zapped),
 * which holds nothing and reads as the file or zeros, as a hole does. The
 * pagemap entry tells: a swap entry of the last type (SWP_PTE_MARKER).
 */
static int add_swapped(struct dump_ctx *d, int pm_fd, const struct vma *v,
		       const struct page_region *r, size_t *cap)
{
	uint64_t buf[512];

	for (uint64_t a = r->start; a < r->end;) {
		size_t n = MIN((r->end - a) >> PAGE_SHIFT, ARRAY_SIZE(buf)), i = 0;
		ssize_t got = pread(pm_fd, buf, n * 8, (a >> PAGE_SHIFT) * 8);

		if (got <= 0)
			return got < 0 ? -errno : -EIO;
		n = got / 8;
		while (i < n) {
			bool marker = (buf[i] & PM_SWAPPED) && (buf[i] & PM_SWAP_TYPE) == PM_SWAP_TYPE;
			size_t j = i + 1;
			int ret = 0;

			while (j < n && marker == ((buf[j] & PM_SWAPPED) &&
						   (buf[j] & PM_SWAP_TYPE) == PM_SWAP_TYPE))
				j++;
			if (!marker)
				ret = add_pages(d, v, r->categories, a + i * PAGE_SIZE,
						a + j * PAGE_SIZE, cap);
			if (ret)
				return ret;
			i = j;
		}
		a += n * PAGE_SIZE;
	}
	return 0;
}

/* One region the scan returned: guard pages, pages to dump, or pages of the parent. */
static int add_region(struct dump_ctx *d, int pm_fd, const struct vma *v,
		      const struct page_region *r, size_t *cap)
{
	int ret;

	if (r->categories & PAGE_IS_GUARD)
		return add_guard(d, r->start, r->end);
	/* the snapshot armed before the freeze protects these again */
	if (v->snap_armed && (r->categories & PAGE_IS_WRITTEN)) {
		ret = snapshot_written(d, r->start, r->end);
		if (ret)
			return ret;
	}
	if (v->tracked && !(r->categories & PAGE_IS_PRESENT))
		return add_swapped(d, pm_fd, v, r, cap);
	return add_pages(d, v, r->categories, r->start, r->end, cap);
}

/*
 * guard: the kernel knows PAGE_IS_GUARD (6.14+). Guard markers are also
 * "swapped" entries, so they come back as regions of their own.
 */
static int scan_vma(struct dump_ctx *d, int pm_fd, struct vma *v, struct page_region *vec,
		    size_t *cap, bool guard)
{
	uint64_t skip = PAGE_IS_PFNZERO | (v->anon_only ? PAGE_IS_FILE : 0);
	uint64_t want = PAGE_IS_PRESENT | PAGE_IS_SWAPPED | (guard ? PAGE_IS_GUARD : 0);
	uint64_t track = v->tracked ? PAGE_IS_WPALLOWED | PAGE_IS_WRITTEN :
			 v->snap_armed ? PAGE_IS_WRITTEN : 0;
	struct pm_scan_arg arg = {
		.size = sizeof(arg),
		.start = v->start,
		.end = v->end,
		.vec = (uint64_t)vec,
		.vec_len = VEC_LEN,
		.category_inverted = skip,
		.category_mask = skip,
		.category_anyof_mask = want,
		.return_mask = want | track,
	};
	uint64_t before = d->nr_pages;

	while (arg.start < v->end) {
		long n = ioctl(pm_fd, PAGEMAP_SCAN, &arg);

		if (n < 0)
			return -errno;
		for (long i = 0; i < n; i++) {
			int ret = add_region(d, pm_fd, v, &vec[i], cap);

			if (ret)
				return ret;
		}
		/* walk_end can lag behind the regions returned (seen with
		 * WPALLOWED/WRITTEN asked for): never scan a page twice */
		arg.start = n > 0 ? MAX(arg.walk_end, vec[n - 1].end) : arg.walk_end;
		if (n < VEC_LEN && arg.start >= v->end)
			break;
	}
	v->nr_pages = d->nr_pages - before;
	d->stats.pages_scanned += (v->end - v->start) >> PAGE_SHIFT;
	return 0;
}

/* The same from /proc/PID/pagemap entries. */
static int read_vma_pagemap(struct dump_ctx *d, int pm_fd, struct vma *v, size_t *cap)
{
	uint64_t buf[4096], before = d->nr_pages;

	for (uint64_t a = v->start; a < v->end;) {
		size_t n = MIN((v->end - a) >> PAGE_SHIFT, ARRAY_SIZE(buf));
		ssize_t r = pread(pm_fd, buf, n * 8, (a >> PAGE_SHIFT) * 8);

		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		n = r / 8;
		for (size_t i = 0; i < n; i++) {
			uint64_t e = buf[i];
			bool take = (e & (PM_PRESENT | PM_SWAPPED)) &&
				    !(v->anon_only && (e & PM_FILE));
			int ret;

			if (!take)
				continue;
			ret = v->snap_armed && !(e & PM_UFFD_WP) ?
				snapshot_written(d, a + i * PAGE_SIZE, a + (i + 1) * PAGE_SIZE) : 0;
			ret = ret ?: add_run(d, v, a + i * PAGE_SIZE, a + (i + 1) * PAGE_SIZE, cap);
			if (ret)
				return ret;
		}
		a += n * PAGE_SIZE;
	}
	v->nr_pages = d->nr_pages - before;
	d->stats.pages_scanned += (v->end - v->start) >> PAGE_SHIFT;
	return 0;
}

static int scan_all(struct dump_ctx *d, int fd)
{
	struct page_region *vec = malloc(VEC_LEN * sizeof(*vec));
	bool scan = true, guard = true;
	size_t cap = 0;
	int ret = vec ? 0 : -ENOMEM;

	for (int i = 0; i < d->nr_vmas && !ret; i++) {
		struct vma *v = &d->vmas[i];

		if (!v->dump)
			continue;
		if (scan && guard) {
			ret = scan_vma(d, fd, v, vec, &cap, true);
			if (ret == -EINVAL) {	/* no PAGE_IS_GUARD: no guard pages either */
				guard = false;
				ret = 0;
			}
		}
		if (scan && !guard) {
			ret = scan_vma(d, fd, v, vec, &cap, false);
			if (ret == -ENOTTY || ret == -EINVAL) {
				pr_info("no PAGEMAP_SCAN here: reading pagemap entries");
				scan = false;
				ret = 0;
			}
		}
		if (!scan && !ret)
			ret = read_vma_pagemap(d, fd, v, &cap);
	}
	free(vec);
	return ret;
}

static void *scan_main(void *arg)
{
	struct dump_ctx *d = arg;

	d->scan.err = scan_all(d, d->scan.fd);
	return NULL;
}

/*
 * The scan reads the page tables only: it may run while the frozen target
 * does memdump's remote calls, which change no dumped page's presence. It
 * reports through d->scan.err, never fail() (one reason, the caller's).
 */
int select_pages_start(struct dump_ctx *d)
{
	char path[64];
	int err;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", d->pid);
	d->scan.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (d->scan.fd < 0)
		return fail(-errno, "cannot open %s: %s", path, strerror(errno));
	d->scan.opened = true;
	err = pthread_create(&d->scan.thread, NULL, scan_main, d);
	if (err)
		d->scan.err = scan_all(d, d->scan.fd);	/* no thread: here and now */
	d->scan.running = !err;
	return 0;
}

int select_pages_wait(struct dump_ctx *d)
{
	int ret;

	if (!d->scan.opened)
		return 0;
	if (d->scan.running)
		pthread_join(d->scan.thread, NULL);
	close(d->scan.fd);
	d->scan.opened = d->scan.running = false;
	ret = d->scan.err;
	if (ret)
		return fail(ret, "cannot scan the pages of process %d: %s", d->pid, strerror(-ret));
	pr_info("%lu pages to dump in %zu runs, %lu in the parent's", d->nr_pages, d->nr_runs,
		d->stats.pages_in_parent);
	return 0;
}

int select_pages(struct dump_ctx *d)
{
	return select_pages_start(d) ?: select_pages_wait(d);
}
