/*
 * Restore of the process's own userfaultfd (mm_entry.uffd, evloop/uffd.c):
 * checked against the VMAs, then laid out in the restorer area for the blob,
 * which makes it in the restored mm (parasite/restorer.c, restore_uffd).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>

#include "common.h"
#include "log.h"
#include "restorer.h"
#include "ctx/restore_ctx.h"
#include "evloop/uffd.h"


/* The VMA holding [s, e), or NULL. */
static const VmaEntry *vma_of(const MmEntry *mm, uint64_t s, uint64_t e)
{
	for (size_t i = 0; i < mm->n_vmas; i++)
		if (mm->vmas[i]->start <= s && e <= mm->vmas[i]->end)
			return mm->vmas[i];
	return NULL;
}

/* [s, e) page-aligned, not empty, after prev_end, inside one VMA. */
static bool span_ok(const MmEntry *mm, uint64_t s, uint64_t e, uint64_t prev_end)
{
	return s < e && !(s & (PAGE_SIZE - 1)) && !(e & (PAGE_SIZE - 1)) && s >= prev_end &&
	       vma_of(mm, s, e);
}

/* Does a range with mode m of e hold [s, end)? */
static bool in_range(const UffdEntry *e, uint64_t s, uint64_t end, unsigned m)
{
	for (size_t i = 0; i < e->n_ranges; i++)
		if ((e->ranges[i]->modes & m) && e->ranges[i]->start <= s && end <= e->ranges[i]->end)
			return true;
	return false;
}

static int check_runs(struct rst *r, const UffdEntry *e, UffdWpEntry **w, size_t n, unsigned m,
		      const char *what)
{
	uint64_t prev = 0;

	for (size_t i = 0; i < n; i++) {
		if (!span_ok(r->ds.mm, w[i]->start, w[i]->end, prev) ||
		    !in_range(e, w[i]->start, w[i]->end, m))
			return fail(-EIO, "image mm-%u.img is corrupt: userfaultfd %s run %zu "
				    "%#" PRIx64 "-%#" PRIx64 " is not sorted, page-aligned and inside "
				    "a range of its mode", r->pid, what, i, w[i]->start, w[i]->end);
		prev = w[i]->end;
	}
	return 0;
}

static int check_fd_free(struct rst *r, uint32_t fd)
{
	for (size_t i = 0; i < r->ds.nr_fds; i++)
		if (r->ds.fds[i]->fd == fd)
			return fail(-EIO, "image mm-%u.img is corrupt: its userfaultfd's fd %u is "
				    "listed in fdinfo too", r->pid, fd);
	return fd > 1u << 20 ? fail(-EIO, "image mm-%u.img is corrupt: userfaultfd fd %u is out "
				    "of range", r->pid, fd) : 0;
}

int uffd_check(struct rst *r)
{
	const UffdEntry *e = r->ds.mm->uffd;
	uint64_t prev = 0;
	int ret;

	if (!e)
		return 0;
	if (r->o->lazy)
		return fail(-EOPNOTSUPP, "process %u has a userfaultfd of its own (fd %u), which "
			    "restore --lazy-pages does not restore (its MISSING ranges' pages that "
			    "were never filled must fault to the process's handler, not to the "
			    "lazy restore's): restore it without --lazy-pages", r->pid, e->fd);
	if ((e->flags & ~(uint32_t)(O_CLOEXEC | O_NONBLOCK)) ||
	    (e->features & (UFFD_NONCOOP_FEATURES | (1UL << 31))) || !e->n_ranges)
		return fail(-EIO, "image mm-%u.img is corrupt: userfaultfd flags %#x, features "
			    "%#" PRIx64 ", %zu ranges", r->pid, e->flags, e->features, e->n_ranges);
	for (size_t i = 0; i < e->n_ranges; i++) {
		const UffdRangeEntry *g = e->ranges[i];

		if (!span_ok(r->ds.mm, g->start, g->end, prev) || !g->modes ||
		    (g->modes & ~(UFFD_MODE_MISSING | UFFD_MODE_WP)))
			return fail(-EIO, "image mm-%u.img is corrupt: userfaultfd range %zu "
				    "%#" PRIx64 "-%#" PRIx64 " (modes %u) is not sorted, inside one "
				    "VMA, MISSING or WP", r->pid, i, g->start, g->end, g->modes);
		prev = g->end;
	}
	ret = check_runs(r, e, e->protected_, e->n_protected_, UFFD_MODE_WP, "write-protected");
	if (!ret)
		ret = check_runs(r, e, e->zero, e->n_zero, UFFD_MODE_MISSING, "zero-page");
	if (!ret)
		ret = check_fd_free(r, e->fd);
	if (!ret)	/* the blob's own fds go above it (restore/child.c) */
		r->max_target_fd = MAX(r->max_target_fd, (int)e->fd);
	return ret;
}

size_t uffd_area_size(const struct rst *r)
{
	const UffdEntry *e = r->ds.mm->uffd;

	return e ? (e->n_ranges + e->n_protected_ + e->n_zero) * sizeof(struct rst_uffd_span) : 0;
}

static struct rst_uffd_span *put_runs(struct rst_uffd_span *s, UffdWpEntry **w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		*s++ = (struct rst_uffd_span){ w[i]->start, w[i]->end, 0, 0 };
	return s;
}

void uffd_area_fill(struct rst *r, unsigned long off)
{
	const UffdEntry *e = r->ds.mm->uffd;
	struct rst_args *a = r->a;
	struct rst_uffd_span *s = (struct rst_uffd_span *)(r->area + off);

	a->uffd_fd = -1;
	if (!e)
		return;
	a->uffd_fd = (int)e->fd;
	a->uffd_flags = e->flags;
	a->uffd_features = e->features;
	a->uffd_off = off;
	a->nr_uffd_ranges = e->n_ranges;
	a->nr_uffd_wp = e->n_protected_;
	a->nr_uffd_zero = e->n_zero;
	for (size_t i = 0; i < e->n_ranges; i++) {
		*s++ = (struct rst_uffd_span){ e->ranges[i]->start, e->ranges[i]->end,
					       e->ranges[i]->modes, 0 };
		a->uffd_nothp |= e->ranges[i]->modes & UFFD_MODE_MISSING;
	}
	s = put_runs(s, e->protected_, e->n_protected_);
	put_runs(s, e->zero, e->n_zero);
}
