/*
 * The restorer area (layout in restorer.h): a memfd mapped MAP_SHARED at an
 * address free both in memdump and in the dumped address space (the hole),
 * holding the blob's code, its arguments and the threads' stacks, laid out
 * here and filled by each kind: the VMAs and the fds the blob maps and reads
 * (mem/vma_restore.c), the threads, signals, seccomp filters and attributes
 * (task/), the POSIX locks (files/locks_restore.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "blobs.h"
#include "common.h"
#include "log.h"
#include "ctx/restore_ctx.h"
#include "files/locks.h"
#include "evloop/uffd.h"
#include "evloop/iouring.h"
#include "image/compress.h"
#include "mem/shmem.h"
#include "mem/vma.h"
#include "restore/pipeline.h"
#include "task/task.h"

/* Where each part of the area goes, offsets from its start. */
struct layout {
	size_t blob, vmas, runs, guards, uffd, iourings, threads, auxv, close, seals, xsave, sigs, filters, zblocks,
	       zbuf, stacks, size;
};

int add_blob_fd(struct rst *r, int fd)
{
	int *n = realloc(r->blob_fds, (r->nr_blob_fds + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	r->blob_fds = n;
	n[r->nr_blob_fds] = fd;
	return (int)r->nr_blob_fds++;
}

struct range {
	unsigned long s, e;
};

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->s < y->s ? -1 : x->s > y->s;
}

/* The dumped VMAs and memdump's own mappings, sorted; NULL on failure. */
static struct range *used_ranges(struct rst *r, size_t *nr)
{
	const MmEntry *mm = r->ds.mm;
	size_t cap = mm->n_vmas + 8 * mm->n_iourings + 256, n = 0;
	struct range *rg = malloc(cap * sizeof(*rg));
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];

	if (!rg || !f) {
		free(rg);
		if (f)
			fclose(f);
		return NULL;
	}
	for (size_t i = 0; i < mm->n_vmas; i++) {
		rg[n].s = mm->vmas[i]->start;
		rg[n++].e = mm->vmas[i]->end;
	}
	for (size_t i = 0; i < mm->n_iourings; i++)	/* rings the blob maps back: not VMAs */
		for (size_t k = 0; k < mm->iourings[i]->n_maps && n < cap; k++) {
			rg[n].s = mm->iourings[i]->maps[k]->start;
			rg[n++].e = mm->iourings[i]->maps[k]->end;
		}
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if (sscanf(line, "%lx-%lx", &s, &e) != 2)
			continue;
		if (n == cap) {
			struct range *x = realloc(rg, (cap *= 2) * sizeof(*rg));

			if (!x)
				break;	/* MAP_FIXED_NOREPLACE still refuses a used range */
			rg = x;
		}
		rg[n].s = s;
		rg[n++].e = e;
	}
	fclose(f);
	qsort(rg, n, sizeof(*rg), cmp_range);
	*nr = n;
	return rg;
}

/* An address where size bytes are free in memdump and in the target. */
static unsigned long find_hole(struct rst *r, size_t size)
{
	unsigned long best = 0, lo = 1UL << 32, hi = 0x7ff000000000UL, prev = lo;
	size_t n = 0;
	struct range *rg = used_ranges(r, &n);

	if (!rg)
		return 0;
	/* the highest gap below hi, with a 1 MiB margin on both sides */
	for (size_t i = 0; i <= n; i++) {
		unsigned long s = i < n ? rg[i].s : hi, e = i < n ? rg[i].e : hi;
		unsigned long at = ALIGN_UP(prev + (1UL << 20), RST_HUGE_SIZE);

		if (s > hi)
			s = hi;
		if (s > prev && s - prev >= size + (2UL << 20) && at + size <= s - (1UL << 20))
			best = at;
		if (e > prev)
			prev = e;
		if (prev >= hi)
			break;
	}
	free(rg);
	return best;
}

static void plan_layout(struct rst *r, struct layout *l)
{
	struct dumpset *ds = &r->ds;
	size_t nt = ds->nr_cores, off;

	l->blob = ALIGN_UP((size_t)(restorer_blob_end - restorer_blob), PAGE_SIZE);
	off = l->blob + ALIGN_UP(sizeof(struct rst_args), 64);
	l->vmas = off;
	off += ALIGN_UP(ds->mm->n_vmas * sizeof(struct rst_vma), 64);
	l->runs = off;
	off += ALIGN_UP(ds->nr_runs * sizeof(struct rst_run), 64);
	l->guards = off;
	off += ALIGN_UP(ds->mm->n_guards * sizeof(struct rst_guard), 64);
	l->uffd = off;
	off += ALIGN_UP(uffd_area_size(r), 64);
	l->iourings = off;
	off += ALIGN_UP(iouring_area_size(r), 64);
	l->threads = off;
	off += ALIGN_UP(nt * sizeof(struct rst_thread), 64);
	l->auxv = off;
	off += ALIGN_UP(RST_MAX_AUXV * 8, 64);
	l->close = off;
	off += ALIGN_UP(blob_fd_room(ds) * sizeof(int), 64);
	l->seals = off;
	off += ALIGN_UP(r->nr_shms * sizeof(struct rst_seal), 64);
	l->xsave = off;
	for (size_t i = 0; i < nt; i++) {
		const UserX86FpregsEntry *fp = ds->cores[i]->thread_info->fpregs;

		if (fp && fp->has_xsave_raw)
			off += ALIGN_UP(fp->xsave_raw.len, 64);
	}
	l->sigs = off;
	off += pending_sigs_count(r) * sizeof(struct rst_siginfo);
	l->filters = ALIGN_UP(off, 64);
	off = l->filters + seccomp_area_size(r);
	l->zblocks = ALIGN_UP(off, 64);	/* an LZ4 pages image the blob decodes: its blocks */
	off = l->zblocks + (ds->pages_z ? ds->pages_z->nr_blocks * sizeof(struct rst_zblock) : 0);
	l->zbuf = ALIGN_UP(off, PAGE_SIZE);	/* and the decoding threads' buffers */
	off = l->zbuf + (ds->pages_z ? RST_ZTHREADS * 2 * RST_ZBLOCK : 0);
	l->stacks = ALIGN_UP(off, PAGE_SIZE);
	l->size = l->stacks + (nt + 2) * RST_STACK_SIZE;	/* + the fill helpers' */
}

/* The memfd, mapped in the hole, with the blob's code copied in. */
static int map_area(struct rst *r, size_t size)
{
	unsigned long addr = find_hole(r, size);

	r->area_size = size;
	if (!addr)
		return fail(-ENOMEM, "no free address range of %zu bytes for the restorer", size);
	r->area_fd = memfd_create("memdump-restorer", MFD_CLOEXEC);
	if (r->area_fd < 0 || ftruncate(r->area_fd, size))
		return fail(-errno, "cannot create the restorer area: %s", strerror(errno));
	r->area = mmap((void *)addr, size, PROT_READ | PROT_WRITE | PROT_EXEC,
		       MAP_SHARED | MAP_FIXED_NOREPLACE, r->area_fd, 0);
	if (r->area == MAP_FAILED) {
		r->area = NULL;
		return fail(-errno, "cannot map the restorer area at %#lx: %s", addr, strerror(errno));
	}
	close(r->area_fd);
	r->area_fd = -1;
	memcpy(r->area, restorer_blob, restorer_blob_end - restorer_blob);
	return 0;
}

static void fill_args(struct rst *r, const struct layout *l)
{
	struct rst_args *a = r->a = (struct rst_args *)(r->area + l->blob);

	a->magic = RST_MAGIC;
	a->area_start = (unsigned long)r->area;
	a->area_size = r->area_size;
	a->blob_size = l->blob;
	a->vmas_off = l->vmas;
	a->runs_off = l->runs;
	a->guards_off = l->guards;
	a->nr_guards = r->ds.mm->n_guards;
	a->threads_off = l->threads;
	a->auxv_off = l->auxv;
	a->close_off = l->close;
	a->sigs_off = l->sigs;
	a->seals_off = l->seals;
	a->zblocks_off = l->zblocks;
	a->zbuf_off = l->zbuf;
	a->nr_vmas = r->ds.mm->n_vmas;
	a->nr_runs = r->ds.nr_runs;
	a->nr_threads = r->ds.nr_cores;
}

int build_area(struct rst *r)
{
	struct layout l;
	int ret;

	plan_layout(r, &l);
	ret = map_area(r, l.size);
	if (ret)
		return ret;
	fill_args(r, &l);
	r->a->nr_sigs = pending_sigs_fill(r, (struct rst_siginfo *)(r->area + l.sigs));
	ret = vma_area_fill(r);
	if (ret)
		return ret;
	r->a->nr_seals = shm_blob_seals(r, (struct rst_seal *)(r->area + l.seals));
	uffd_area_fill(r, l.uffd);
	iouring_area_fill(r, l.iourings);
	fill_process(r);
	fill_threads(r, l.xsave, l.stacks);
	r->a->fill_stack_top = l.size;
	seccomp_fill(r, l.filters);
	attrs_fill(r);
	locks_fill(r);
	return 0;
}
