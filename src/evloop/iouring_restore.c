/*
 * Restore of io_uring rings (mm_entry.iourings, evloop/iouring.c): checked
 * against the VMAs and the fds, then laid out in the restorer area for the
 * blob, which makes each ring again in the restored mm once the memory and
 * the fds are in place (parasite/restorer.c, restore_iourings).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>

#include "common.h"
#include "log.h"
#include "restorer.h"
#include "ctx/restore_ctx.h"
#include "evloop/iouring.h"

static bool pow2(uint32_t n, uint32_t max)
{
	return n && !(n & (n - 1)) && n <= max;
}

/* Does [s, e) meet a VMA of the dump? */
static bool meets_vma(const MmEntry *mm, uint64_t s, uint64_t e)
{
	for (size_t i = 0; i < mm->n_vmas; i++)
		if (mm->vmas[i]->start < e && s < mm->vmas[i]->end)
			return true;
	return false;
}

/* Is [s, e) inside the VMAs of the dump (runs of adjacent ones)? */
static bool in_vmas(const MmEntry *mm, uint64_t s, uint64_t e)
{
	while (s < e) {
		size_t i;

		for (i = 0; i < mm->n_vmas; i++)
			if (mm->vmas[i]->start <= s && s < mm->vmas[i]->end)
				break;
		if (i == mm->n_vmas)
			return false;
		s = mm->vmas[i]->end;
	}
	return true;
}

static bool fd_listed(const struct rst *r, uint32_t fd)
{
	for (size_t i = 0; i < r->ds.nr_fds; i++)
		if (r->ds.fds[i]->fd == fd)
			return true;
	return false;
}

static bool map_ok(const MmEntry *mm, const IouringMapEntry *m)
{
	return m->start < m->end && !(m->start & (PAGE_SIZE - 1)) && !(m->end & (PAGE_SIZE - 1)) &&
	       (m->pgoff == 0 || m->pgoff == 0x8000000 || m->pgoff == 0x10000000) &&
	       m->prot <= 7 && m->data.len == m->end - m->start && m->end - m->start <= (64u << 20) &&
	       !meets_vma(mm, m->start, m->end);
}

static int check_ring(struct rst *r, const IouringEntry *e)
{
	const MmEntry *mm = r->ds.mm;
	bool ok = pow2(e->sq_entries, 32768) && pow2(e->cq_entries, 65536) &&
		  e->cq_entries >= e->sq_entries && e->done <= IOURING_MAX_DONE &&
		  e->n_maps && e->n_maps <= 8 && e->n_files <= 64 && e->n_bufs <= 64 &&
		  !(e->fd_flags & ~(uint32_t)O_CLOEXEC) && e->fd < 1u << 20 && !fd_listed(r, e->fd) &&
		  !(mm->uffd && mm->uffd->fd == e->fd);

	for (size_t i = 0; ok && i < e->n_maps; i++)
		ok = map_ok(mm, e->maps[i]);
	for (size_t i = 0; ok && i < e->n_files; i++)
		ok = fd_listed(r, e->files[i]);
	for (size_t i = 0; ok && i < e->n_bufs; i++)
		ok = e->bufs[i]->len && e->bufs[i]->addr + e->bufs[i]->len > e->bufs[i]->addr &&
		     in_vmas(mm, e->bufs[i]->addr, e->bufs[i]->addr + e->bufs[i]->len);
	if (!ok)
		return fail(-EIO, "image mm-%u.img is corrupt: io_uring ring fd %u (%u/%u entries, "
			    "%u done, %zu mappings, %zu files, %zu buffers) is not one a restore "
			    "makes", r->pid, e->fd, e->sq_entries, e->cq_entries, e->done, e->n_maps,
			    e->n_files, e->n_bufs);
	return 0;
}

int iouring_check(struct rst *r)
{
	const MmEntry *mm = r->ds.mm;

	if (mm->n_iourings && r->o->lazy)
		return fail(-EOPNOTSUPP, "process %u has an io_uring ring (fd %u), which restore "
			    "--lazy-pages does not restore (its registered buffers pin pages the "
			    "lazy restore has not filled yet): restore it without --lazy-pages",
			    r->pid, mm->iourings[0]->fd);
	for (size_t i = 0; i < mm->n_iourings; i++) {
		int ret = check_ring(r, mm->iourings[i]);

		for (size_t k = 0; !ret && k < i; k++)
			if (mm->iourings[k]->fd == mm->iourings[i]->fd)
				ret = fail(-EIO, "image mm-%u.img is corrupt: two io_uring rings at "
					   "fd %u", r->pid, mm->iourings[i]->fd);
		if (ret)
			return ret;
		/* the blob's own fds go above it (restore/child.c) */
		r->max_target_fd = MAX(r->max_target_fd, (int)mm->iourings[i]->fd);
	}
	return 0;
}

/* What ring e takes in the area besides its struct rst_iouring. */
static size_t ring_size(const IouringEntry *e)
{
	size_t n = e->n_maps * sizeof(struct rst_iouring_map) + ALIGN_UP(e->n_files * 4, 8) +
		   e->n_bufs * sizeof(struct rst_iouring_buf);

	for (size_t i = 0; i < e->n_maps; i++)
		n += ALIGN_UP(e->maps[i]->data.len, 64);
	return ALIGN_UP(n, 64);
}

size_t iouring_area_size(const struct rst *r)
{
	const MmEntry *mm = r->ds.mm;
	size_t n = ALIGN_UP(mm->n_iourings * sizeof(struct rst_iouring), 64);

	for (size_t i = 0; i < mm->n_iourings; i++)
		n += ring_size(mm->iourings[i]);
	return n;
}

/* Ring e's parts at off in the area, described in *g; the offset after them. */
static unsigned long fill_ring(struct rst *r, const IouringEntry *e, struct rst_iouring *g,
			       unsigned long off)
{
	struct rst_iouring_map *m = (struct rst_iouring_map *)(r->area + off);
	uint32_t *files;
	struct rst_iouring_buf *b;

	*g = (struct rst_iouring){ (int)e->fd, e->fd_flags, e->sq_entries, e->cq_entries, e->done,
				   (unsigned)e->n_maps, (unsigned)e->n_files, (unsigned)e->n_bufs,
				   off, 0, 0 };
	off += e->n_maps * sizeof(*m);
	g->files_off = off;
	files = (uint32_t *)(r->area + off);
	for (size_t i = 0; i < e->n_files; i++)
		files[i] = e->files[i];
	off += ALIGN_UP(e->n_files * 4, 8);
	g->bufs_off = off;
	b = (struct rst_iouring_buf *)(r->area + off);
	for (size_t i = 0; i < e->n_bufs; i++)
		b[i] = (struct rst_iouring_buf){ e->bufs[i]->addr, e->bufs[i]->len };
	off += e->n_bufs * sizeof(*b);
	for (size_t i = 0; i < e->n_maps; i++) {
		const IouringMapEntry *x = e->maps[i];

		off = ALIGN_UP(off, 64);
		m[i] = (struct rst_iouring_map){ x->start, x->end - x->start, x->pgoff, x->prot, off };
		memcpy(r->area + off, x->data.data, x->data.len);
		off += x->data.len;
	}
	return ALIGN_UP(off, 64);
}

void iouring_area_fill(struct rst *r, unsigned long off)
{
	const MmEntry *mm = r->ds.mm;
	struct rst_iouring *g = (struct rst_iouring *)(r->area + off);
	unsigned long at = off + ALIGN_UP(mm->n_iourings * sizeof(*g), 64);

	r->a->iourings_off = off;
	r->a->nr_iourings = (unsigned)mm->n_iourings;
	for (size_t i = 0; i < mm->n_iourings; i++)
		at = fill_ring(r, mm->iourings[i], &g[i], at);
}
