/*
 * Memory a parent and its child share copy-on-write (zdtm cow00, cow01;
 * issue 31): after fork() both map the same physical pages until one of
 * them writes. The dump lists such pages of the child as its parent's
 * (in_tree_parent, cowpages.c); restore makes them one page again.
 *
 * Where the child's VMA is its parent's, or a part of it (the same range, or
 * one the parent's VMA grew around after the fork; private anonymous
 * memory or a private mapping of the same file at the same offset, not a
 * stack that grows down), the parent's VMA is mapped and filled in the
 * parent's forked process before it forks its children, at a "slot" of a
 * range the tree reserves (free in memdump and in every dumped address
 * space). The child inherits the slot by the fork: its pages are the
 * parent's, shared; it writes only its own pages (those it wrote after the
 * fork, a copy of its own then) and drops those it does not have (zeros,
 * or the file's page).
 * A child's child inherits the slot from it in turn. The blob moves each
 * slot (a child's: its part of the parent's) to its VMA's address (mremap: the pages stay shared) and unmaps the
 * rest of the range; it reads nothing for those VMAs.
 *
 * The memdump process reads those pages and sums them (the checksums the
 * blob takes for the others: pagecheck_restore.c). Anything else that the
 * dump listed as the parent's (another VMA, a set whose checksum is of the
 * whole file, no free range) is read from the parent's set into a copy of
 * the child's own: the same bytes, not shared.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "kernel_uapi.h"
#include "log.h"
#include "ctx/restore_ctx.h"
#include "image/hash.h"
#include "vma_status.h"
#include "mem/premap.h"
#include "mem/shmem.h"
#include "mem/vma.h"

#define SLOT_ALIGN	RST_HUGE_SIZE	/* a slot keeps its VMA's place in a huge page */
#define RANGE_LOW	(1UL << 32)
#define RANGE_HIGH	0x7ff000000000UL
#define RANGE_MARGIN	(2UL << 20)

/* Private anonymous memory, or a private mapping of a file (its COW copies shared). */
static bool premappable(const VmaEntry *v)
{
	if (v->flags & (MAP_GROWSDOWN | MAP_DROPPABLE))	/* dropped: nothing to share */
		return false;
	if (v->flags & VMA_MAP_HUGETLB)	/* no huge page is moved: filled in its place */
		return false;
	if (vma_how(v) == RST_MAP_ANON)
		return true;
	return vma_how(v) == RST_MAP_FD && (v->flags & MAP_PRIVATE) &&
	       !(v->status & (VMA_FILE_SHARED | VMA_ANON_SHARED));
}

/*
 * Does p's VMA w map, over m's v (w holds v's range), what v maps: the same
 * object, at the same offset? A file's pages at v's start are w's at that
 * distance; an anonymous VMA's offset is what it was made with (0).
 */
static bool same_source(struct rst *m, const VmaEntry *v, struct rst *p, const VmaEntry *w)
{
	uint64_t pgoff = w->pgoff;
	const char *a, *b;

	if (vma_how(w) == RST_MAP_FD)
		pgoff += (v->start - w->start) / PAGE_SIZE;
	if (vma_how(v) != vma_how(w) || v->pgoff != pgoff || v->flags != w->flags ||
	    (v->has_madv ? v->madv : 0) != (w->has_madv ? w->madv : 0))
		return false;	/* what the mapping was made with is the parent's */
	if (vma_how(v) == RST_MAP_ANON)
		return true;
	if (vma_shm_private(v) || vma_shm_private(w))	/* a memfd's inode */
		return vma_shm_private(v) && vma_shm_private(w) && v->shmid == w->shmid;
	a = rst_reg_path(m, (uint32_t)v->shmid);
	b = rst_reg_path(p, (uint32_t)w->shmid);
	return a && b && !strcmp(a, b);
}

/*
 * The index of the VMA of mm that holds v's range, or -1: the same range, or a
 * larger one when the parent's VMA grew after the fork (a mapping it made next
 * to it merged, its heap's brk moved).
 */
static long holding_vma(const MmEntry *mm, const VmaEntry *v)
{
	size_t lo = 0, hi = mm->n_vmas;

	while (lo < hi) {	/* the first VMA starting after v's start */
		size_t mid = lo + (hi - lo) / 2;

		if (mm->vmas[mid]->start <= v->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && mm->vmas[lo - 1]->end >= v->end)
		return (long)lo - 1;
	return -1;
}

static bool has_tparent_in(const struct dumpset *ds, const VmaEntry *v)
{
	for (size_t i = dumpset_run_after(ds, v->start); i < ds->nr_runs &&
	     ds->runs[i].start < v->end; i++)
		if (ds->runs[i].tparent)
			return true;
	return false;
}

/* The offset in the range of a new slot for v (never 0), the range grown. */
static unsigned long new_slot(unsigned long *size, const VmaEntry *v)
{
	unsigned long off = ALIGN_UP(*size + PAGE_SIZE, SLOT_ALIGN) + v->start % SLOT_ALIGN;

	*size = off + (v->end - v->start);
	return off;
}

static int alloc_slots(struct rst *x)
{
	if (x->premap)
		return 0;
	x->premap = calloc(x->ds.mm->n_vmas + 1, sizeof(*x->premap));
	x->inherited = calloc(x->ds.mm->n_vmas + 1, sizeof(*x->inherited));
	return x->premap && x->inherited ? 0 : -ENOMEM;
}

/* m's VMAs shared with its parent p: slots, as offsets in the range. */
static int plan_member(struct rst *m, unsigned long *size)
{
	struct rst *p = m->tree_parent;
	const MmEntry *mm = m->ds.mm;
	int ret = 0;

	if (!p || m->a->sum_pages == RST_SUM_WHOLE || p->a->sum_pages == RST_SUM_WHOLE)
		return 0;
	for (size_t j = 0; j < mm->n_vmas && !ret; j++) {
		const VmaEntry *v = mm->vmas[j];
		long k;

		if (!premappable(v) || !has_tparent_in(&m->ds, v))
			continue;
		k = holding_vma(p->ds.mm, v);
		if (k < 0 || !premappable(p->ds.mm->vmas[k]) ||
		    !same_source(m, v, p, p->ds.mm->vmas[k]))
			continue;
		ret = alloc_slots(p) ?: alloc_slots(m);
		if (ret)
			break;
		if (!p->premap[k])
			p->premap[k] = new_slot(size, p->ds.mm->vmas[k]);
		/* v's part of the parent's slot: the blob moves just that into place */
		m->premap[j] = p->premap[k] + (v->start - p->ds.mm->vmas[k]->start);
		m->inherited[j] = true;
	}
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

static int add_range(struct range **rg, size_t *n, size_t *cap, unsigned long s, unsigned long e)
{
	if (*n == *cap) {
		struct range *x = realloc(*rg, (*cap = *cap ? *cap * 2 : 256) * sizeof(*x));

		if (!x)
			return -ENOMEM;
		*rg = x;
	}
	(*rg)[(*n)++] = (struct range){ s, e };
	return 0;
}

/* Every dumped VMA of the tree and memdump's own mappings, sorted. */
static int used_ranges(struct rst *root, struct range **rg, size_t *n)
{
	size_t cap = 0;
	int ret = 0;
	FILE *f;
	char line[512];

	*rg = NULL;
	*n = 0;
	for (size_t i = 0; i <= tree_size(root) && !ret; i++) {
		const MmEntry *mm = (i ? tree_member(root, i - 1) : root)->ds.mm;

		for (size_t j = 0; j < mm->n_vmas && !ret; j++)
			ret = add_range(rg, n, &cap, mm->vmas[j]->start, mm->vmas[j]->end);
	}
	f = fopen("/proc/self/maps", "re");
	if (!f)
		ret = ret ?: -errno;
	while (!ret && fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if (sscanf(line, "%lx-%lx", &s, &e) == 2)
			ret = add_range(rg, n, &cap, s, e);
	}
	if (f)
		fclose(f);
	if (!ret)
		qsort(*rg, *n, sizeof(**rg), cmp_range);
	return ret;
}

/* The highest SLOT_ALIGN-aligned address with size bytes free around it, or 0. */
static unsigned long find_range(struct rst *root, unsigned long size)
{
	unsigned long best = 0, prev = RANGE_LOW;
	struct range *rg;
	size_t n;

	if (used_ranges(root, &rg, &n))
		return 0;
	for (size_t i = 0; i <= n; i++) {
		unsigned long s = i < n ? MIN(rg[i].s, RANGE_HIGH) : RANGE_HIGH;
		unsigned long at = ALIGN_UP(prev + RANGE_MARGIN, SLOT_ALIGN);

		if (s > at && s - at >= size + RANGE_MARGIN)
			best = at;
		if (i < n && rg[i].e > prev)
			prev = rg[i].e;
		if (prev >= RANGE_HIGH)
			break;
	}
	free(rg);
	return best;
}

/* The slots of x at their addresses, for its blob too. */
static void place(struct rst *x, unsigned long base, unsigned long size)
{
	struct rst_vma *rv = (struct rst_vma *)(x->area + x->a->vmas_off);

	x->premap_lo = x->a->premap_lo = base;
	x->premap_hi = x->a->premap_hi = base + size;
	for (size_t j = 0; x->premap && j < x->ds.mm->n_vmas; j++) {
		if (!x->premap[j])
			continue;
		x->premap[j] += base;
		rv[j].premap = x->premap[j];
		rv[j].nr_runs = 0;	/* filled before the fork (premap_fill) */
	}
}

static void drop_plan(struct rst *root)
{
	for (size_t i = 0; i <= tree_size(root); i++) {
		struct rst *x = i ? tree_member(root, i - 1) : root;

		free(x->premap);
		free(x->inherited);
		x->premap = NULL;
		x->inherited = NULL;
	}
}

int premap_plan(struct rst *root)
{
	unsigned long size = 0, base;
	int ret = 0;

	for (size_t i = 0; i < tree_size(root) && !ret; i++)
		ret = plan_member(tree_member(root, i), &size);
	if (ret || !size) {
		drop_plan(root);
		return ret;
	}
	size = ALIGN_UP(size, SLOT_ALIGN);
	base = find_range(root, size);
	if (base && mmap((void *)base, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
			 MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0) != (void *)base)
		base = 0;
	if (!base) {	/* the pages are read into copies of each one's own */
		pr_warn("no free range of %lu MiB for the memory the tree shares: each process "
			"gets a copy of its own", size >> 20);
		drop_plan(root);
		return 0;
	}
	for (size_t i = 0; i <= tree_size(root); i++)
		place(i ? tree_member(root, i - 1) : root, base, size);
	pr_info("memory shared copy-on-write in the tree: %lu MiB premapped at %#lx", size >> 20,
		base);
	return 0;
}

/* run's bytes from its pages image into to; its checksum into *sum. */
static int read_run(struct rst *r, const struct dump_run *run, char *to, uint64_t *sum,
		    char *why, size_t wlen)
{
	uint64_t len = run->end - run->start, done = 0;
	struct hash64 h;

	while (done < len) {
		ssize_t n = pread(run->fd, to + done, len - done, (off_t)(run->off + done));

		if (n <= 0) {
			snprintf(why, wlen, "cannot read the pages at %#" PRIx64 " of process %d: %s",
				 run->start, r->pid, n ? strerror(errno) : "end of file");
			return n ? -errno : -EIO;
		}
		done += (uint64_t)n;
	}
	r->a->pages_restored += len / PAGE_SIZE;	/* progress for memdump's watchdog (stall.c) */
	if (r->a->sum_pages == RST_SUM_RUNS && run->fd == r->ds.pages_fd && !run->tparent) {
		h64_init(&h);
		h64_update(&h, to, len);
		*sum = h64_final(&h);
	}
	return 0;
}

/* [a, b) of VMA v, at its slot, holds nothing of this process: zeros, or the file's. */
static int drop_pages(struct rst *r, const VmaEntry *v, char *slot, uint64_t a, uint64_t b,
		      char *why, size_t wlen)
{
	if (a < b && madvise(slot + (a - v->start), b - a, MADV_DONTNEED)) {
		snprintf(why, wlen, "cannot drop the pages at %#" PRIx64 " of process %d: %s", a,
			 r->pid, strerror(errno));
		return -errno;
	}
	return 0;
}

static int map_slot(struct rst *r, size_t j, char *why, size_t wlen)
{
	const VmaEntry *v = r->ds.mm->vmas[j];
	const struct rst_vma *rv = (const struct rst_vma *)(r->area + r->a->vmas_off);
	int fl = MAP_PRIVATE | MAP_FIXED | (v->flags & MAP_NORESERVE);
	char *slot = (char *)r->premap[j];
	int fd = -1;

	if (vma_how(v) == RST_MAP_FD)	/* the blob's fd, an index in blob_fds yet */
		fd = r->blob_fds[rv[j].fd];
	else
		fl |= MAP_ANONYMOUS;
	if (mmap(slot, v->end - v->start, PROT_READ | PROT_WRITE, fl, fd,
		 fd >= 0 ? (off_t)v->pgoff : 0) != slot) {
		snprintf(why, wlen, "cannot map the memory at %#" PRIx64 " of process %d before "
			 "its children: %s", v->start, r->pid, strerror(errno));
		return -errno;
	}
	if (v->has_madv && (v->madv & (1UL << MADV_HUGEPAGE)))
		madvise(slot, v->end - v->start, MADV_HUGEPAGE);
	return 0;
}

static int fill_slot(struct rst *r, size_t j, char *why, size_t wlen)
{
	const VmaEntry *v = r->ds.mm->vmas[j];
	struct rst_run *rr = (struct rst_run *)(r->area + r->a->runs_off);
	char *slot = (char *)r->premap[j];
	uint64_t at = v->start;
	int ret = r->inherited[j] ? 0 : map_slot(r, j, why, wlen);

	for (size_t i = dumpset_run_after(&r->ds, v->start); !ret && i < r->ds.nr_runs &&
	     r->ds.runs[i].start < v->end; i++) {
		const struct dump_run *run = &r->ds.runs[i];

		if (r->inherited[j])
			ret = drop_pages(r, v, slot, at, run->start, why, wlen);
		at = run->end;
		if (!ret && (!r->inherited[j] || !run->tparent))	/* else its parent's page, kept */
			ret = read_run(r, run, slot + (run->start - v->start), &rr[i].sum, why, wlen);
	}
	if (!ret && r->inherited[j])
		ret = drop_pages(r, v, slot, at, v->end, why, wlen);
	return ret;
}

static int fill_all(struct rst *r, char *why, size_t wlen)
{
	int ret = 0;

	for (size_t j = 0; !ret && r->premap && j < r->ds.mm->n_vmas; j++)
		if (r->premap[j])
			ret = fill_slot(r, j, why, wlen);
	return ret;
}

void premap_fill(struct rst *r)
{
	char why[256];
	int ret = fill_all(r, why, sizeof(why));

	if (ret)
		child_exit_fail(r, ret, "%s", why);
}

/*
 * restore --copies: the template's fill, in memdump, as fast as the blob's
 * (docs/restore.md "Filling memory"; docs/fanout.md "Speed"). The runs are
 * cut in pieces of FAST_PIECE at aligned addresses (a slot keeps its VMA's
 * place in a huge page, so each 2 MiB of the VMA is one of the slot's), and
 * three stages go over them in order, on both CPUs: a helper makes each
 * piece present (huge pages where the restored VMA may have them: populate
 * one page per 2 MiB, then MADV_COLLAPSE, which leaves the VMA's flags
 * alone; a MADV_HUGEPAGE VMA's populate faults them in whole), this thread
 * reads it with O_DIRECT (the disk writes into the slot, no page cache),
 * another helper sums it behind the reads into its run's checksum, which
 * each copy's pagecheck compares as ever. MEMDUMP_FILL and
 * MEMDUMP_FILL_HELPER choose as for the blob.
 */
#define FAST_PIECE	(16UL << 20)

struct fast_piece {
	char *at;		/* in the slot */
	uint64_t len, off;	/* bytes, and where in the run's pages image */
	size_t vma, run;
	bool first, last;	/* of its run */
};

struct fast_fill {
	struct rst *r;
	struct fast_piece *p;
	size_t n, cap;
	int dio;		/* pages-1.img opened O_DIRECT, or -1 */
	int mode;		/* RST_FILL_* */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	size_t prepped, read;	/* pieces made present, read */
	int err;
	char why[256];
	struct hash64 h;	/* the run being summed */
};

static void fast_fail(struct fast_fill *f, int err, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&f->lock);
	if (!f->err) {
		f->err = err;
		va_start(ap, fmt);
		vsnprintf(f->why, sizeof(f->why), fmt, ap);
		va_end(ap);
	}
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

static bool fast_failed(struct fast_fill *f)
{
	bool failed;

	pthread_mutex_lock(&f->lock);
	failed = f->err != 0;
	pthread_mutex_unlock(&f->lock);
	return failed;
}

/* *count moved on to n, for the stage behind. */
static void fast_publish(struct fast_fill *f, size_t *count, size_t n)
{
	pthread_mutex_lock(&f->lock);
	*count = n;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

/* Until the stage ahead is past piece k: 0, or a stage failed. */
static int fast_wait(struct fast_fill *f, const size_t *count, size_t k)
{
	int err;

	pthread_mutex_lock(&f->lock);
	while (*count <= k && !f->err)
		pthread_cond_wait(&f->cond, &f->lock);
	err = f->err;
	pthread_mutex_unlock(&f->lock);
	return err;
}

static int add_piece(struct fast_fill *f, struct fast_piece p)
{
	if (f->n == f->cap) {
		struct fast_piece *x = realloc(f->p, (f->cap = f->cap ? f->cap * 2 : 64) * sizeof(*x));

		if (!x)
			return -ENOMEM;
		f->p = x;
	}
	f->p[f->n++] = p;
	return 0;
}

/* Run i of VMA j in pieces. */
static int cut_run(struct fast_fill *f, size_t j, size_t i)
{
	const struct dump_run *run = &f->r->ds.runs[i];
	const VmaEntry *v = f->r->ds.mm->vmas[j];
	char *slot = (char *)f->r->premap[j];
	int ret = 0;

	for (uint64_t a = run->start, b; a < run->end && !ret; a = b) {
		b = MIN((a & ~(FAST_PIECE - 1)) + FAST_PIECE, run->end);
		ret = add_piece(f, (struct fast_piece){ slot + (a - v->start), b - a,
			run->off + (a - run->start), j, i, a == run->start, b == run->end });
	}
	return ret;
}

/* Every slot mapped, every run of them in pieces. */
static int cut_pieces(struct fast_fill *f)
{
	struct rst *r = f->r;
	int ret = 0;

	for (size_t j = 0; !ret && j < r->ds.mm->n_vmas; j++) {
		const VmaEntry *v = r->ds.mm->vmas[j];

		if (!r->premap[j])
			continue;
		ret = map_slot(r, j, f->why, sizeof(f->why));
		if (ret)
			return ret;
		for (size_t i = dumpset_run_after(&r->ds, v->start); !ret && i < r->ds.nr_runs &&
		     r->ds.runs[i].start < v->end; i++)
			ret = cut_run(f, j, i);
		if (ret)
			snprintf(f->why, sizeof(f->why), "out of memory");
	}
	return ret;
}

static uint64_t fast_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* [h0, h1) in huge pages without VM_HUGEPAGE. */
static void fast_collapse(char *h0, char *h1)
{
	for (char *c = h0; c < h1; c += RST_HUGE_SIZE)
		madvise(c, PAGE_SIZE, MADV_POPULATE_WRITE);
	madvise(h0, (size_t)(h1 - h0), MADV_COLLAPSE);
}

/* Piece p present: huge pages where the VMA may have them, as the blob makes them. */
static int fast_prep(struct fast_fill *f, const struct fast_piece *p)
{
	const VmaEntry *v = f->r->ds.mm->vmas[p->vma];
	uint64_t madv = v->has_madv ? v->madv : 0;
	char *h0 = (char *)ALIGN_UP((unsigned long)p->at, RST_HUGE_SIZE);
	char *h1 = (char *)(((unsigned long)p->at + p->len) & ~(RST_HUGE_SIZE - 1));

	if (h0 < h1 && f->mode != RST_FILL_PLAIN && !(madv & (1UL << MADV_NOHUGEPAGE)) &&
	    !f->r->a->thp_disabled) {
		if (madv & (1UL << MADV_HUGEPAGE))	/* map_slot() set it: faulted in whole */
			madvise(h0, (size_t)(h1 - h0), MADV_POPULATE_WRITE);
		else
			fast_collapse(h0, h1);
	}
	if (madvise(p->at, p->len, MADV_POPULATE_WRITE) && errno != EINVAL) {
		fast_fail(f, -errno, "cannot populate the memory of %#" PRIx64 " of process %d: %s",
			  f->r->ds.runs[p->run].start, f->r->pid, strerror(errno));
		return -1;
	}
	return 0;
}

/* Piece p from its pages image: O_DIRECT where it can be. */
static int fast_read(struct fast_fill *f, const struct fast_piece *p)
{
	const struct dump_run *run = &f->r->ds.runs[p->run];
	bool direct = f->dio >= 0 && run->fd == f->r->ds.pages_fd;
	uint64_t done = 0;

	while (done < p->len) {
		ssize_t n = pread(direct ? f->dio : run->fd, p->at + done, p->len - done,
				  (off_t)(p->off + done));

		if (n < 0 && direct && errno == EINVAL) {	/* no O_DIRECT here after all */
			direct = false;
			continue;
		}
		if (n <= 0) {
			fast_fail(f, n ? -errno : -EIO, "cannot read the pages at %#" PRIx64
				  " of process %d: %s", run->start, f->r->pid,
				  n ? strerror(errno) : "end of file");
			return -1;
		}
		done += (uint64_t)n;
	}
	f->r->a->pages_restored += p->len / PAGE_SIZE;	/* progress for the watchdog (stall.c) */
	return 0;
}

/* Piece p into its run's checksum (a run of pages-1.img: pagecheck_restore.c). */
static void fast_sum(struct fast_fill *f, const struct fast_piece *p)
{
	const struct dump_run *run = &f->r->ds.runs[p->run];
	struct rst_run *rr = (struct rst_run *)(f->r->area + f->r->a->runs_off);

	if (f->r->a->sum_pages != RST_SUM_RUNS || run->fd != f->r->ds.pages_fd || run->tparent)
		return;
	if (p->first)
		hash64_init(&f->h);
	hash64_update(&f->h, p->at, p->len);
	if (p->last)
		rr[p->run].sum = hash64_final(&f->h);
}

static void *fast_prep_helper(void *arg)
{
	struct fast_fill *f = arg;

	for (size_t k = 0; k < f->n && !fast_failed(f); k++) {
		if (fast_prep(f, &f->p[k]))
			break;
		fast_publish(f, &f->prepped, k + 1);
	}
	return NULL;
}

static void *fast_sum_helper(void *arg)
{
	struct fast_fill *f = arg;

	for (size_t k = 0; k < f->n; k++) {
		if (fast_wait(f, &f->read, k))
			break;
		fast_sum(f, &f->p[k]);
	}
	return NULL;
}

/* This thread's stage: the reads (and the others' when their helper is not there). */
static void fast_reads(struct fast_fill *f, bool prep_helper, bool sum_helper)
{
	for (size_t k = 0; k < f->n; k++) {
		if (prep_helper ? fast_wait(f, &f->prepped, k) != 0 : fast_prep(f, &f->p[k]) != 0)
			return;
		if (fast_read(f, &f->p[k]))
			return;
		if (!sum_helper)
			fast_sum(f, &f->p[k]);
		fast_publish(f, &f->read, k + 1);
	}
}

static void fast_run(struct fast_fill *f)
{
	pthread_t prep, sum;
	int help = f->r->a->fill_helper;
	bool has_prep = help == RST_HELP_BOTH && !pthread_create(&prep, NULL, fast_prep_helper, f);
	bool has_sum = help != RST_HELP_NONE && !pthread_create(&sum, NULL, fast_sum_helper, f);

	fast_reads(f, has_prep, has_sum);	/* failed: the helpers stop at their next piece */
	if (has_prep)
		pthread_join(prep, NULL);
	if (has_sum)
		pthread_join(sum, NULL);
}

/* pages-1.img again, O_DIRECT (through memdump's verified fd), or -1. */
static int open_direct(int fd)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return fd < 0 ? -1 : open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
}

static bool any_inherited(const struct rst *r)
{
	for (size_t j = 0; r->premap && j < r->ds.mm->n_vmas; j++)
		if (r->inherited[j])
			return true;
	return false;
}

int premap_fill_here(struct rst *r)
{
	/*
	 * Huge pages kept (auto is collapse here, not the blob's 4 KiB pages once
	 * collapsing runs slow): each copy's fork copies one entry for 2 MiB of
	 * the template instead of 512, and the fill is paid once.
	 */
	struct fast_fill f = { .r = r, .dio = -1, .mode = r->a->fill_mode == RST_FILL_AUTO ?
						       RST_FILL_COLLAPSE : r->a->fill_mode };
	uint64_t t0 = fast_now_us();
	bool direct = false;
	int ret;

	if (any_inherited(r)) {	/* a tree's: the plain fill (premap_fill) */
		ret = fill_all(r, f.why, sizeof(f.why));
		return ret ? fail(ret, "%s", f.why) : 0;
	}
	pthread_mutex_init(&f.lock, NULL);
	pthread_cond_init(&f.cond, NULL);
	ret = cut_pieces(&f);
	if (!ret) {
		f.dio = open_direct(r->ds.pages_fd);
		direct = f.dio >= 0;
		fast_run(&f);
		ret = f.err;
	}
	if (f.dio >= 0)
		close(f.dio);
	free(f.p);
	pthread_cond_destroy(&f.cond);
	pthread_mutex_destroy(&f.lock);
	if (ret)
		return fail(ret, "%s", f.why);
	pr_info("--copies: the template filled in %" PRIu64 " ms (%s)",
		(fast_now_us() - t0) / 1000, direct ? "O_DIRECT" : "the page cache");
	return 0;
}

void premap_free(struct rst *r)
{
	if (!r->tree_parent && r->premap_hi && !r->premap_kept)	/* the root's memdump reserved it */
		munmap((void *)r->premap_lo, r->premap_hi - r->premap_lo);
	r->premap_lo = r->premap_hi = 0;
	free(r->premap);
	free(r->inherited);
	r->premap = NULL;
	r->inherited = NULL;
}

static bool has_runs(const struct rst *r, const VmaEntry *v)
{
	size_t i = dumpset_run_after(&r->ds, v->start);

	return i < r->ds.nr_runs && r->ds.runs[i].start < v->end;
}

/*
 * restore --copies (restore/fanout.c): each private anonymous VMA of r that
 * has pages gets a slot of its own, filled by premap_fill() in memdump (the
 * template) before the copies are forked; each copy inherits the slots and
 * its blob moves them in place, so the copies share the pages copy-on-write.
 * *base: the range, 0 for the first copy (found and reserved here; then
 * *base and *size are set for the others, whose slots are the same).
 * Without a free range or with an LZ4 pages image the blob of each copy
 * fills its own memory (the same bytes, not shared).
 */
int premap_plan_copies(struct rst *r, unsigned long *base, unsigned long *size)
{
	unsigned long sz = 0;
	int ret;

	if (r->ds.pages_z || r->a->sum_pages == RST_SUM_WHOLE)
		return 0;
	ret = alloc_slots(r);
	if (ret)
		return ret;
	for (size_t j = 0; j < r->ds.mm->n_vmas; j++) {
		const VmaEntry *v = r->ds.mm->vmas[j];

		if (premappable(v) && vma_how(v) == RST_MAP_ANON && has_runs(r, v))
			r->premap[j] = new_slot(&sz, v);
	}
	sz = ALIGN_UP(sz, SLOT_ALIGN);
	if (sz && !*base) {
		unsigned long b = find_range(r, sz);

		if (b && mmap((void *)b, sz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
			      MAP_FIXED_NOREPLACE, -1, 0) == (void *)b) {
			*base = b;
			*size = sz;
		}
	}
	if (!sz || !*base || *size != sz) {
		if (sz)
			pr_warn("no free range of %lu MiB for the memory the copies share: each copy "
				"gets a copy of its own", sz >> 20);
		drop_plan(r);
		return 0;
	}
	place(r, *base, sz);
	r->premap_kept = true;
	return 0;
}

/* The checksums premap_fill() took of r's premapped runs: into sums (save), or back. */
void premap_sums(struct rst *r, uint64_t *sums, bool save)
{
	struct rst_run *rr = (struct rst_run *)(r->area + r->a->runs_off);

	for (size_t j = 0; r->premap && j < r->ds.mm->n_vmas; j++) {
		const VmaEntry *v = r->ds.mm->vmas[j];

		if (!r->premap[j])
			continue;
		for (size_t i = dumpset_run_after(&r->ds, v->start); i < r->ds.nr_runs &&
		     r->ds.runs[i].start < v->end; i++) {
			if (save)
				sums[i] = rr[i].sum;
			else
				rr[i].sum = sums[i];
		}
	}
}
