/*
 * The memory part of the restorer area (restore/area.c lays it out): each
 * VMA with the page runs and guard pages that fill it, the fds the blob maps
 * (files behind file mappings, shared memory objects) and reads (the pages
 * images, the exe), and the lazy pages' plan.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "ctx/restore_ctx.h"
#include "image/compress.h"
#include "image/feed.h"
#include "mem/lazy.h"
#include "mem/pagesum.h"
#include "vma_status.h"
#include "mem/shmem.h"
#include "mem/vma.h"

/* RST_MAP_*: how the blob maps v */
int vma_how(const VmaEntry *v)
{
	if (v->status & (VMA_AREA_VSYSCALL | VMA_AREA_VDSO | VMA_AREA_VVAR))
		return RST_MAP_SKIP;
	if (v->status & VMA_AREA_SYSVIPC)
		return RST_MAP_SYSV;
	if (v->status & (VMA_FILE_PRIVATE | VMA_FILE_SHARED | VMA_ANON_SHARED))
		return RST_MAP_FD;
	return RST_MAP_ANON;
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
			const char *path = rst_reg_host_path(r, v->shmid, buf, sizeof(buf));
			int fl = O_RDONLY;

			if (v->status & VMA_FILE_SHARED)
				fl = O_RDWR;
			rv[i].fd = same_file_fd(mm, rv, i, fl, seen, *nseen);
			if (rv[i].fd >= 0)
				continue;
			fd = rst_reg_open(r, (uint32_t)v->shmid, fl);
			if (fd < 0 && fl == O_RDWR && !(v->prot & PROT_WRITE))
				fd = rst_reg_open(r, (uint32_t)v->shmid, O_RDONLY);
			if (fd < 0)
				return fail(fd, "cannot open %s for its mapping at %#" PRIx64 ": %s",
					    path, v->start, strerror(-fd));
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
		rv[i].sealed = v->has_sealed && v->sealed;
		rv[i].lock_onfault = v->has_lock_onfault && v->lock_onfault;
		/* the attach's mode (fdflags); an older image: the VMA's prot */
		rv[i].sysv_rdonly = v->has_fdflags ? (v->fdflags & O_ACCMODE) == O_RDONLY :
				    !(v->prot & PROT_WRITE);
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

static int open_pages_for_blob(int fd, bool direct, bool compressed)
{
	char path[64];
	int d = -1;

	if (compressed) {	/* read block by block, not aligned: through the page cache */
		direct = false;
		posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);	/* read ahead while memdump prepares */
	}
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

/*
 * May the blob read pages-1.img from a pipe, as it is made (decrypted,
 * decompressed: image/feed.h)? When it reads every byte of it once, in file
 * order: no parent, no tree, no lazy pages, not a copy of a fan-out, not
 * left LZ4 compressed, its runs in address order one after the other in the
 * file and filling it; and when the blob sums what it reads (memdump then
 * reads none of it: pagecheck.c).
 */
static bool feedable(const struct rst *r)
{
	const struct dumpset *ds = &r->ds;
	uint64_t next = 0;

	if (r->tree || r->o->lazy || r->ds_lent || ds->pages_z ||
	    pagecheck_mode(ds) == RST_SUM_NONE)
		return false;
	for (size_t i = 0; i < ds->nr_runs; i++) {
		const struct dump_run *run = &ds->runs[i];

		if (run->fd != ds->pages_fd || !run->present || run->tparent || run->off != next)
			return false;
		next = run->off + (run->end - run->start);
	}
	return (int64_t)next == dumpset_pages_size(ds);
}

/*
 * pages-1.img kept as it is on disk (sealed: restore --decrypt, image/crypt.h;
 * zstd compressed: image/compress.h): fed to the blob through a pipe as it
 * is made when it may be, else made into its stand-in file first. *fd the
 * pipe's read end, or -1 (the file as ever).
 */
static int fed_pages(struct rst *r, int *fd)
{
	struct page_feed *f = feed_find(r->o->feed, r->ds.pages_fd) ?:
			      feed_find(r->ds.pages_feed, r->ds.pages_fd);
	int ret;

	*fd = -1;
	if (!f)
		return 0;
	if (!feedable(r)) {
		pr_info("pages-1.img %s before the restore (not read in file order)", feed_made(f));
		return feed_fill(f);
	}
	ret = feed_open(f, fd);	/* its threads once forked: restore.c */
	if (ret)
		return ret;
	r->feed = f;
	r->a->pages_feed = 1;
	r->a->feed_pos = 0;
	pr_info("pages-1.img fed to the restorer as it is %s", feed_made(f));
	return 0;
}

/* The pages image fd for the blob: its own open file, or the pipe of its feed. */
static int open_for_blob(struct rst *r, int fd)
{
	int d = -1, ret = fd == r->ds.pages_fd ? fed_pages(r, &d) : 0;

	if (ret || d >= 0)
		return ret ? ret : d;
	return open_pages_for_blob(fd, large_runs(&r->ds, fd), r->ds.pages_z && fd == r->ds.pages_fd);
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
	d = open_for_blob(r, fd);
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

/*
 * An LZ4 compressed pages-1.img left compressed (dumpset.h, pages_z): its
 * blocks for the blob, which decodes them into the memory it fills.
 */
_Static_assert(RST_ZBLOCK == PZ_BLOCK, "the blob's block is the image's");

static void fill_zblocks(struct rst *r)
{
	const struct pz_layout *z = r->ds.pages_z;
	struct rst_zblock *zb = (struct rst_zblock *)(r->area + r->a->zblocks_off);

	if (!z)
		return;
	r->a->nr_zblocks = z->nr_blocks;
	r->a->z_raw = z->raw;
	for (uint64_t b = 0; b < z->nr_blocks; b++)
		zb[b] = (struct rst_zblock){ z->off[b], z->len[b], z->stored[b] };
}

/* The pages images and the exe file, for the blob. */
static int open_pages_exe(struct rst *r)
{
	char buf[PATH_MAX];
	const char *exe = rst_reg_host_path(r, r->ds.mm->exe_file_id, buf, sizeof(buf));
	int ret = open_pages(r), idx;

	if (ret)
		return ret;
	r->exe_fd = rst_reg_open(r, r->ds.mm->exe_file_id, O_RDONLY);
	if (r->exe_fd < 0)
		return fail(r->exe_fd, "cannot open the exe file %s: %s", exe, strerror(-r->exe_fd));
	idx = add_blob_fd(r, r->exe_fd);
	if (idx < 0) {
		close(r->exe_fd);
		r->exe_fd = -1;
		return idx;
	}
	r->a->mm.exe_fd = idx;
	return 0;
}

/* The VMAs, their runs and guards, and the blob's fds, in the area r->a describes. */
int vma_area_fill(struct rst *r)
{
	int ret;

	fill_memory(r);
	fill_zblocks(r);
	ret = open_blob_files(r, (struct rst_vma *)(r->area + r->a->vmas_off));
	if (!ret)
		ret = open_pages_exe(r);
	if (!ret)
		ret = lazy_plan(r);	/* --lazy-pages: lazy.h */
	return ret;
}
