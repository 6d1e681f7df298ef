/*
 * The restorer area (layout in restorer.h): a memfd mapped MAP_SHARED at an
 * address free both in memdump and in the dumped address space (the hole),
 * holding the blob's code, its arguments and the threads' stacks; and the
 * fds the blob needs (files behind file mappings, shared memory objects,
 * pages-1.img, the exe), which it closes once done.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "blobs.h"
#include "common.h"
#include "log.h"
#include "ctx/restore_ctx.h"
#include "mem/lazy.h"
#include "vma_status.h"

/* Where each part of the area goes, offsets from its start. */
struct layout {
	size_t blob, vmas, runs, guards, threads, auxv, close, seals, xsave, sigs, filters, stacks,
	       size;
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

/*
 * The blob fd of an earlier mapping of the same file opened the same way, or
 * -1: one fd per file and mode, not per mapping (zdtm maps06 maps one file
 * 10240 times; an fd each would need more than RLIMIT_NOFILE allows).
 */
static int same_file_fd(const MmEntry *mm, const struct rst_vma *rv, size_t i, int fl,
			uint64_t *seen, size_t nseen)
{
	for (size_t k = nseen; k-- > 0;) {
		size_t j = (size_t)seen[k];
		const VmaEntry *w = mm->vmas[j];

		if (w->shmid == mm->vmas[i]->shmid &&
		    !!(w->status & VMA_FILE_SHARED) == (fl == O_RDWR) && rv[j].fd >= 0)
			return rv[j].fd;
	}
	return -1;
}

/* open_blob_files(): seen lists the file mappings given an fd so far. */
static int open_blob_files_in(struct rst *r, struct rst_vma *rv, uint64_t *seen, size_t *nseen)
{
	const MmEntry *mm = r->ds.mm;
	int ret, fd;

	for (size_t i = 0; i < mm->n_vmas; i++) {
		const VmaEntry *v = mm->vmas[i];

		rv[i].fd = -1;
		if (vma_how(v) == RST_MAP_SYSV) {
			if (v->shmid > INT32_MAX)
				return fail(-EIO, "mm-%u.img: System V shm id %" PRIu64, r->pid,
					    v->shmid);
			rv[i].fd = (int)v->shmid;	/* ns.c made it in the namespace */
			continue;
		}
		if (vma_how(v) != RST_MAP_FD)
			continue;
		if ((v->status & VMA_ANON_SHARED) || vma_shm_private(v)) {
			ret = shm_blob_fd(r, shm_find(r, v->shmid));
			if (ret < 0)
				return ret;
			rv[i].fd = ret;
			continue;
		}
		/* a file: one fd per file and mode (closed by the blob) */
		{
			char buf[PATH_MAX];
			const char *path = rst_path(r, rst_reg_path(r, v->shmid), buf, sizeof(buf));
			int fl = O_RDONLY;

			if (v->status & VMA_FILE_SHARED)
				fl = O_RDWR;
			rv[i].fd = same_file_fd(mm, rv, i, fl, seen, *nseen);
			if (rv[i].fd >= 0)
				continue;
			fd = open(path, fl | O_CLOEXEC);
			if (fd < 0 && fl == O_RDWR && !(v->prot & PROT_WRITE))
				fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				return fail(-errno, "cannot open %s for its mapping at %#" PRIx64 ": %s",
					    path, v->start, strerror(errno));
			ret = add_blob_fd(r, fd);
			if (ret < 0) {
				close(fd);
				return ret;
			}
			rv[i].fd = ret;	/* an index for now: numbers are final in the child */
			seen[(*nseen)++] = i;
		}
	}
	return 0;
}

/* Files behind file mappings, shmem objects, the exe file, pages-1.img. */
static int open_blob_files(struct rst *r, struct rst_vma *rv)
{
	const MmEntry *mm = r->ds.mm;
	uint64_t *seen = calloc(mm->n_vmas + 1, sizeof(*seen));	/* file mappings so far */
	size_t nseen = 0;
	int ret = seen ? open_blob_files_in(r, rv, seen, &nseen) : -ENOMEM;

	free(seen);
	return ret;
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
	size_t cap = mm->n_vmas + 256, n = 0;
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
	a->nr_vmas = r->ds.mm->n_vmas;
	a->nr_runs = r->ds.nr_runs;
	a->nr_threads = r->ds.nr_cores;
}

/* The VMAs, the page runs of pagemap-PID.img that fill them, their guard pages. */
static void fill_memory(struct rst *r)
{
	struct dumpset *ds = &r->ds;
	struct rst_vma *rv = (struct rst_vma *)(r->area + r->a->vmas_off);
	struct rst_run *rr = (struct rst_run *)(r->area + r->a->runs_off);
	struct rst_guard *rg = (struct rst_guard *)(r->area + r->a->guards_off);
	const MmEntry *mm = ds->mm;
	size_t vi = 0, gi = 0;

	for (size_t i = 0; i < mm->n_guards; i++)
		rg[i] = (struct rst_guard){ mm->guards[i]->start, mm->guards[i]->end };
	for (size_t i = 0; i < ds->nr_runs; i++) {
		rr[i].vaddr = ds->runs[i].start;
		rr[i].nr_pages = (ds->runs[i].end - ds->runs[i].start) / PAGE_SIZE;
		rr[i].file_off = ds->runs[i].off;
	}
	for (size_t i = 0; i < ds->mm->n_vmas; i++) {
		const VmaEntry *v = ds->mm->vmas[i];

		rv[i].start = v->start;
		rv[i].end = v->end;
		rv[i].pgoff = v->pgoff;
		rv[i].madv = v->has_madv ? v->madv : 0;
		rv[i].prot = v->prot;
		rv[i].flags = v->flags;
		rv[i].status = v->status;
		rv[i].how = vma_how(v);
		rv[i].locked = v->has_locked && v->locked;
		while (vi < ds->nr_runs && ds->runs[vi].start < v->start)
			vi++;
		rv[i].first_run = vi;
		while (vi < ds->nr_runs && ds->runs[vi].end <= v->end)
			vi++;
		rv[i].nr_runs = vi - rv[i].first_run;
		while (gi < mm->n_guards && mm->guards[gi]->start < v->start)
			gi++;
		rv[i].first_guard = gi;
		while (gi < mm->n_guards && mm->guards[gi]->end <= v->end)
			gi++;
		rv[i].nr_guards = gi - rv[i].first_guard;
	}
}

/*
 * A pages image for the blob, opened O_DIRECT where the filesystem allows it:
 * the disk then writes straight into the restored process's memory, with no
 * page cache to allocate and copy from (on this VM a cold 1 GiB image reads
 * in ~0.2 s this way against 1.2-2.5 s through the page cache). Every run
 * is page-aligned in the file and in memory, as O_DIRECT requires. The
 * image is reopened through memdump's own verified fd (fd, /proc/self/fd).
 * Not when its runs are small on average (the pieces of an incremental
 * chain: a page here, nine there): one O_DIRECT read per piece is a disk
 * round trip each, while the page cache reads ahead (1 GiB with 10% of its
 * pages from the last set: 4.5 s of reads with O_DIRECT, see docs/figures.md).
 */
#define DIRECT_MIN_RUN	(256UL << 10)

static bool large_runs(const struct dumpset *ds, int fd)
{
	uint64_t bytes = 0, runs = 0;

	for (size_t i = 0; i < ds->nr_runs; i++) {
		if (ds->runs[i].fd != fd)
			continue;
		bytes += ds->runs[i].end - ds->runs[i].start;
		runs++;
	}
	return !runs || bytes / runs >= DIRECT_MIN_RUN;
}

static int open_pages_for_blob(int fd, bool direct)
{
	char path[64];
	int d = -1;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (direct)
		d = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (d >= 0 && d < 3) {
		int high = fcntl(d, F_DUPFD_CLOEXEC, 3);

		close(d);
		d = high;
	}
	if (d < 0) {
		d = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		if (d >= 0)	/* read in file order, with gaps: a larger readahead */
			posix_fadvise(d, 0, 0, POSIX_FADV_SEQUENTIAL);
	}
	if (d < 0)
		return fail(-errno, "cannot duplicate the fd of a pages image: %s", strerror(errno));
	return d;
}

/* The blob's index of the pages image fd (of this set or a parent set), added once. */
static int pages_index(struct rst *r, int fd, int *seen, int *idx, size_t *nr, size_t cap)
{
	int d, i;

	for (size_t k = 0; k < *nr; k++)
		if (seen[k] == fd)
			return idx[k];
	if (*nr == cap)
		return fail(-EIO, "more pages images than sets in the chain");
	d = open_pages_for_blob(fd, large_runs(&r->ds, fd));
	if (d < 0)
		return d;
	i = add_blob_fd(r, d);
	if (i < 0) {
		close(d);
		return i;
	}
	seen[*nr] = fd;
	idx[(*nr)++] = i;
	return i;
}

/* Every run names the blob's fd of its pages image; pages-1.img is a->pages_fd. */
static int open_pages(struct rst *r)
{
	struct rst_run *rr = (struct rst_run *)(r->area + r->a->runs_off);
	size_t n = dumpset_other_pages(&r->ds) + 1, nr = 0;
	int *seen = calloc(n, sizeof(int)), *idx = calloc(n, sizeof(int)), ret = 0;

	if (!seen || !idx)
		ret = -ENOMEM;
	if (!ret)
		ret = r->a->pages_fd = pages_index(r, r->ds.pages_fd, seen, idx, &nr, n);
	for (size_t i = 0; ret >= 0 && i < r->ds.nr_runs; i++) {
		ret = pages_index(r, r->ds.runs[i].fd, seen, idx, &nr, n);
		rr[i].fd = ret;
	}
	free(seen);
	free(idx);
	return ret < 0 ? ret : 0;
}

/* The pages images and the exe file, for the blob. */
static int open_pages_exe(struct rst *r)
{
	char buf[PATH_MAX];
	const char *exe = rst_path(r, rst_reg_path(r, r->ds.mm->exe_file_id), buf, sizeof(buf));
	int ret = open_pages(r), idx;

	if (ret)
		return ret;
	r->exe_fd = open(exe, O_RDONLY | O_CLOEXEC);
	if (r->exe_fd < 0)
		return fail(-errno, "cannot open the exe file %s: %s", exe, strerror(errno));
	idx = add_blob_fd(r, r->exe_fd);
	if (idx < 0) {
		close(r->exe_fd);
		r->exe_fd = -1;
		return idx;
	}
	r->a->mm.exe_fd = idx;
	return 0;
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
	fill_memory(r);
	ret = open_blob_files(r, (struct rst_vma *)(r->area + l.vmas));
	if (!ret)
		ret = open_pages_exe(r);
	if (!ret)
		ret = lazy_plan(r);	/* --lazy-pages: lazy.h */
	if (ret)
		return ret;
	r->a->nr_seals = shm_blob_seals(r, (struct rst_seal *)(r->area + l.seals));
	fill_process(r);
	fill_threads(r, l.xsave, l.stacks);
	r->a->fill_stack_top = l.size;
	seccomp_fill(r, l.filters);
	attrs_fill(r);
	locks_fill(r);
	return 0;
}
