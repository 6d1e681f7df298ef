/*
 * Pages a process of a tree shares with its parent: after fork() both map
 * the same physical page, copy-on-write, until one of them writes it. Such
 * a page is written once, in the parent's set: the child's pagemap lists
 * it with in_tree_parent (pagemap_entry field 51) and its pages image does
 * not hold it. Restore takes the bytes from the parent's set and, where the
 * VMA is the parent's too, keeps the page shared (premap_restore.c).
 *
 * Both processes are frozen: a page with the same frame number in both
 * (/proc/PID/pagemap, which shows frame numbers to root) holds the same
 * bytes at this instant. Only pages the parent's set holds at that address
 * (its runs, the runs of its previous set, or of its own parent) are taken; a page swapped
 * out, or any page when frame numbers read as 0 (no CAP_SYS_ADMIN), is
 * written as before.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "log.h"
#include "mem/pages.h"

#define PM_PRESENT	(1ULL << 63)
#define PM_PFN_MASK	((1ULL << 55) - 1)
#define CHUNK_PAGES	512

struct run_vec {
	struct page_run *runs;
	size_t nr, cap;
};

static int vec_add(struct run_vec *v, uint64_t start, uint64_t nr, bool unreadable)
{
	if (!nr)
		return 0;
	if (v->nr == v->cap) {
		struct page_run *n = realloc(v->runs, (v->cap = v->cap ? v->cap * 2 : 64) *
						      sizeof(*n));

		if (!n)
			return -ENOMEM;
		v->runs = n;
	}
	v->runs[v->nr++] = (struct page_run){ start, nr, unreadable };
	return 0;
}

/* Does one of the sorted runs hold the page at addr? */
static bool runs_hold(const struct page_run *runs, size_t nr, uint64_t addr)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (runs[mid].start + runs[mid].nr_pages * PAGE_SIZE <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nr && runs[lo].start <= addr;
}

static bool parent_holds(const struct dump_ctx *p, uint64_t addr)
{
	return runs_hold(p->runs, p->nr_runs, addr) ||
	       runs_hold(p->parent_runs, p->nr_parent_runs, addr) ||
	       runs_hold(p->tparent_runs, p->nr_tparent_runs, addr);	/* its own parent's */
}

struct cow_scan {
	struct dump_ctx *d;
	int fd, pfd;		/* the pagemaps of the process and its parent */
	struct run_vec *own;	/* d->runs' or d->parent_runs' remains */
	struct run_vec shared;
	uint64_t nr_shared;
};

/* One run of d->runs (or d->parent_runs), split into the pages of its own and the parent's. */
static int split_run(struct cow_scan *s, const struct page_run *r)
{
	uint64_t a[CHUNK_PAGES], b[CHUNK_PAGES];
	uint64_t end = r->start + r->nr_pages * PAGE_SIZE, from = r->start;
	bool in_shared = false;
	int ret = 0;

	for (uint64_t at = r->start; at < end && !ret;) {
		size_t n = MIN((end - at) >> PAGE_SHIFT, (uint64_t)CHUNK_PAGES);
		off_t off = (off_t)((at >> PAGE_SHIFT) * 8);

		if (pread(s->fd, a, n * 8, off) != (ssize_t)(n * 8) ||
		    pread(s->pfd, b, n * 8, off) != (ssize_t)(n * 8))
			return errno ? -errno : -EIO;
		for (size_t i = 0; i < n && !ret; i++, at += PAGE_SIZE) {
			bool same = (a[i] & PM_PRESENT) && (b[i] & PM_PRESENT) &&
				    (a[i] & PM_PFN_MASK) && (a[i] & PM_PFN_MASK) == (b[i] & PM_PFN_MASK) &&
				    parent_holds(s->d->tree_parent, at);

			if (same == in_shared)
				continue;
			ret = vec_add(in_shared ? &s->shared : s->own, from,
				      (at - from) >> PAGE_SHIFT, r->unreadable);
			from = at;
			in_shared = same;
		}
	}
	return ret ?: vec_add(in_shared ? &s->shared : s->own, from, (end - from) >> PAGE_SHIFT,
			      r->unreadable);
}

static int open_pagemap(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	return open(path, O_RDONLY | O_CLOEXEC);
}

static int cmp_run(const void *a, const void *b)
{
	const struct page_run *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * The pages written now (d->runs) and those of its previous set (an
 * incremental dump's d->parent_runs): both may be the parent's very pages.
 */
static int split_all(struct cow_scan *s, struct run_vec *own, struct run_vec *prev)
{
	struct dump_ctx *d = s->d;
	int ret = 0;

	s->own = own;
	for (size_t i = 0; i < d->nr_runs && !ret; i++)
		ret = split_run(s, &d->runs[i]);
	s->own = prev;
	for (size_t i = 0; i < d->nr_parent_runs && !ret; i++)
		ret = split_run(s, &d->parent_runs[i]);
	return ret;
}

int cow_select(struct dump_ctx *d)
{
	struct cow_scan s = { .d = d, .fd = -1, .pfd = -1 };
	struct run_vec own = { 0 }, prev = { 0 };
	uint64_t nr_own = 0;
	int ret = 0;

	if (!d->tree_parent || d->pre_dump || !(d->nr_runs + d->nr_parent_runs))
		return 0;
	s.fd = open_pagemap(d->pid);
	s.pfd = open_pagemap(d->tree_parent->pid);
	if (s.fd < 0 || s.pfd < 0)
		ret = -errno;
	if (!ret)
		ret = split_all(&s, &own, &prev);
	if (s.fd >= 0)
		close(s.fd);
	if (s.pfd >= 0)
		close(s.pfd);
	if (ret) {
		free(own.runs);
		free(prev.runs);
		free(s.shared.runs);
		return fail(ret, "cannot compare the pages of process %d with its parent's: %s",
			    d->pid, strerror(-ret));
	}
	if (s.shared.nr)	/* none: no array (qsort must not get NULL) */
		qsort(s.shared.runs, s.shared.nr, sizeof(*s.shared.runs), cmp_run);
	for (size_t i = 0; i < s.shared.nr; i++)
		s.nr_shared += s.shared.runs[i].nr_pages;
	for (size_t i = 0; i < own.nr; i++)
		nr_own += own.runs[i].nr_pages;
	free(d->runs);
	free(d->parent_runs);
	d->runs = own.runs;
	d->nr_runs = own.nr;
	d->parent_runs = prev.runs;
	d->nr_parent_runs = prev.nr;
	d->tparent_runs = s.shared.runs;
	d->nr_tparent_runs = s.shared.nr;
	d->nr_pages = nr_own;
	pr_info("%lu pages shared with parent %d (copy-on-write): listed, not written",
		(unsigned long)s.nr_shared, d->tree_parent->pid);
	return 0;
}
