/* Load a whole image set into memory for the commands that read a dump. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "image/compress.h"
#include "image/feed.h"
#include "image/dumpset.h"
#include "image/image.h"
#include "image/runsum.h"
#include "image/verify.h"
#include "log.h"
#include "vma_status.h"

/* Every entry of a framed image into a growing array. */
static int read_all(int dirfd, enum img_type t, unsigned id,
		    const ProtobufCMessageDescriptor *desc, void ***arr, size_t *nr)
{
	struct image *img;
	size_t cap = 0;
	void *msg;
	int ret = img_open(dirfd, t, id, &img);

	*arr = NULL;
	*nr = 0;
	if (ret)
		return ret;
	while ((ret = img_read_msg(img, desc, &msg)) == 1) {
		if (*nr == cap) {
			void **n = realloc(*arr, (cap = cap ? cap * 2 : 16) * sizeof(*n));

			if (!n) {
				img_free(desc, msg);
				ret = -ENOMEM;
				break;
			}
			*arr = n;
		}
		(*arr)[(*nr)++] = msg;
	}
	img_abort(img);
	return ret < 0 ? ret : 0;
}

static void free_all(const ProtobufCMessageDescriptor *desc, void **arr, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		img_free(desc, arr[i]);
	free(arr);
}

static bool img_exists(int dirfd, enum img_type t, unsigned id)
{
	char name[64];

	img_name(t, id, name, sizeof(name));
	return faccessat(dirfd, name, F_OK, 0) == 0;
}

/* A required image: missing is "incomplete dump", said before img_open would. */
static int need_img(const struct dumpset *ds, enum img_type t, unsigned id)
{
	char name[64];

	img_name(t, id, name, sizeof(name));
	if (faccessat(ds->dirfd, name, F_OK, 0))
		return fail(-errno, "the dump is incomplete: %s: %s", name, strerror(errno));
	return 0;
}

static int open_dir(const char *dir, struct dumpset *ds)
{
	if (!dir)
		return fail(-EINVAL, "no dump directory given (-D DIR)");
	ds->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ds->dirfd < 0)
		return fail(-errno, "cannot open %s: %s", dir, strerror(errno));
	if (!img_exists(ds->dirfd, IMG_INVENTORY, 0))
		return fail(-ENOENT, "%s holds no complete dump (no inventory.img)", dir);
	return 0;
}

#define TASK_DEAD 2	/* CRIU's task_state of a zombie */

/* procs[i], i > 0: a zombie child of the root, with its core. */
static int load_zombie(struct dumpset *ds, size_t i)
{
	const PstreeEntry *z = ds->procs[i];
	const CoreEntry *c;
	int ret;

	if (z->ppid != ds->pstree->pid || z->n_threads > 1 ||
	    (z->n_threads && z->threads[0] != z->pid))
		return fail(-EOPNOTSUPP, "pstree.img: process %u is not a zombie child of %u "
			    "(process trees are not restored yet)", z->pid, ds->pstree->pid);
	ret = need_img(ds, IMG_CORE, z->pid);
	if (!ret)
		ret = img_read_one(ds->dirfd, IMG_CORE, z->pid, &core_entry__descriptor,
				   (void **)&ds->zombie_cores[i - 1]);
	if (ret)
		return ret;
	c = ds->zombie_cores[i - 1];
	if (!c->tc || c->tc->task_state != TASK_DEAD)
		return fail(-EOPNOTSUPP, "pstree.img: process %u is not a zombie "
			    "(process trees are not restored yet)", z->pid);
	return 0;
}

/* Does the inventory list the set of process pid of a dumped tree (proc-PID)? */
static bool lists_subset(const InventoryEntry *inv, unsigned pid)
{
	char name[32];

	snprintf(name, sizeof(name), "proc-%u", pid);
	for (size_t i = 0; i < inv->n_images; i++)
		if (inv->images[i]->name && !strcmp(inv->images[i]->name, name))
			return true;
	return false;
}

/*
 * The entries of a tree's other live processes (their sets listed as
 * proc-PID) move from procs to members: procs keeps the root and its zombies.
 */
static int split_members(struct dumpset *ds)
{
	size_t z = 1;

	ds->members = calloc(ds->nr_procs, sizeof(*ds->members));
	if (!ds->members)
		return -ENOMEM;
	for (size_t i = 1; i < ds->nr_procs; i++) {
		PstreeEntry *pe = ds->procs[i];

		if (pe->pid == ds->procs[0]->pid)
			return fail(-EIO, "pstree.img is corrupt: process %u is listed twice", pe->pid);
		if (lists_subset(ds->inv, pe->pid))
			ds->members[ds->nr_members++] = pe;
		else
			ds->procs[z++] = pe;
	}
	for (size_t i = 0; i < ds->nr_members; i++)
		ds->procs[z + i] = ds->members[i];	/* freed with procs */
	ds->nr_procs = z;
	ds->nr_pstree = z + ds->nr_members;
	return 0;
}

/* pstree.img: the root first, then the zombie children it had, then a tree's other processes. */
static int load_pstree(struct dumpset *ds)
{
	int ret = read_all(ds->dirfd, IMG_PSTREE, 0, &pstree_entry__descriptor,
			   (void ***)&ds->procs, &ds->nr_procs);

	if (!ret && !ds->nr_procs)
		ret = fail(-EIO, "image pstree.img is empty");
	ds->nr_pstree = ds->nr_procs;
	if (!ret)
		ret = split_members(ds);
	if (ret)
		return ret;
	ds->pstree = ds->procs[0];
	ds->zombie_cores = calloc(ds->nr_procs, sizeof(*ds->zombie_cores));
	if (!ds->zombie_cores)
		return -ENOMEM;
	for (size_t i = 1; i < ds->nr_procs && !ret; i++)
		ret = load_zombie(ds, i);
	return ret;
}

static int load_cores(struct dumpset *ds)
{
	PstreeEntry *pe = ds->pstree;
	size_t n = pe->n_threads ? pe->n_threads : 1;

	ds->cores = calloc(n, sizeof(*ds->cores));
	if (!ds->cores)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		unsigned tid = pe->n_threads ? pe->threads[i] : pe->pid;
		int ret = need_img(ds, IMG_CORE, tid);

		if (!ret)
			ret = img_read_one(ds->dirfd, IMG_CORE, tid, &core_entry__descriptor,
					   (void **)&ds->cores[i]);

		if (ret)
			return ret;
		ds->nr_cores++;
	}
	return 0;
}

static int cmp_run(const void *a, const void *b)
{
	const struct dump_run *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* A growing run list. */
struct run_list {
	struct dump_run *runs;
	size_t nr, cap;
	uint64_t off;		/* where the next present run's bytes start */
	unsigned int block_shift;	/* of the marks (0: none) */
	uint64_t *marks;
	size_t nr_marks, cap_marks;	/* u64s */
};

/* A run's block marks, as many as its size wants, else the set has none. */
static int add_marks(struct run_list *l, struct dump_run *r, const PagemapEntry *pe)
{
	uint64_t want = runsum_marks(r->end - r->start, l->block_shift);

	r->nr_marks = 0;
	r->marks_at = l->nr_marks;
	if (!l->block_shift || !r->present || !pe->has_sum)
		return pe->n_block_lanes ? fail(-EIO, "image corrupt: block checksums of the pagemap "
						"run at %#" PRIx64 " without their run's", pe->vaddr) : 0;
	if (pe->n_block_lanes != want * RUNSUM_LANES)
		return fail(-EIO, "image corrupt: the pagemap run at %#" PRIx64 " has %zu block "
			    "checksum words, not %" PRIu64, pe->vaddr, pe->n_block_lanes,
			    want * RUNSUM_LANES);
	if (l->nr_marks + pe->n_block_lanes > l->cap_marks) {
		size_t cap = (l->nr_marks + pe->n_block_lanes) * 2;
		uint64_t *m = realloc(l->marks, cap * sizeof(*m));

		if (!m)
			return -ENOMEM;
		l->marks = m;
		l->cap_marks = cap;
	}
	if (pe->n_block_lanes)
		memcpy(l->marks + l->nr_marks, pe->block_lanes, pe->n_block_lanes * sizeof(uint64_t));
	l->nr_marks += pe->n_block_lanes;
	r->nr_marks = want;
	return 0;
}

static int add_run(struct run_list *l, const PagemapEntry *pe)
{
	uint64_t nr = pe->has_nr_pages ? pe->nr_pages : pe->compat_nr_pages;
	struct dump_run *r;

	if (l->nr == l->cap) {
		r = realloc(l->runs, (l->cap = l->cap ? l->cap * 2 : 64) * sizeof(*r));
		if (!r)
			return -ENOMEM;
		l->runs = r;
	}
	if (!nr || nr > (1ULL << 36) || pe->vaddr % PAGE_SIZE ||
	    pe->vaddr + nr * PAGE_SIZE < pe->vaddr)
		return fail(-EIO, "image corrupt: pagemap run at %#" PRIx64 " of %" PRIu64
			    " pages", pe->vaddr, nr);
	r = &l->runs[l->nr++];
	r->start = pe->vaddr;
	r->end = pe->vaddr + nr * PAGE_SIZE;
	r->tparent = pe->has_in_tree_parent && pe->in_tree_parent;
	r->present = !r->tparent && (pe->has_flags ? !!(pe->flags & PE_PRESENT) : !pe->in_parent);
	r->off = l->off;
	r->has_sum = pe->has_sum;
	r->sum = pe->sum;
	r->lazy_use = 0;
	if (r->present)
		l->off += nr * PAGE_SIZE;
	return add_marks(l, r, pe);
}

/*
 * pages-ID.img; a compressed one (the pagemap head says so) as its raw bytes
 * in a memfd, or, keep: LZ4 as it is with its layout in *z, zstd as a memfd
 * of its size whose bytes come from *feed (image/feed.h).
 */
static int open_pages(const struct dumpset *ds, const PagemapHead *head, int *fd, bool keep,
		      struct pz_layout **z, struct page_feed **feed)
{
	char name[64];
	int raw;

	img_name(IMG_PAGES, head->pages_id, name, sizeof(name));
	*fd = img_open_file(ds->dirfd, name, 0);
	if (*fd < 0 || !head->has_compress || !head->compress)
		return *fd < 0 ? *fd : 0;
	if (keep && head->compress == PZ_LZ4) {
		*z = calloc(1, sizeof(**z));
		return *z ? pz_read_layout(*fd, name, *z) : -ENOMEM;
	}
	raw = keep && head->compress == PZ_ZSTD ? pz_open_fed(*fd, name, feed) :
					      pz_open_raw(*fd, name);
	close(*fd);
	*fd = raw;
	return raw < 0 ? raw : 0;
}

/* A pagemap image: a head naming pages-N.img, then the runs in file order. */
static int read_runs(const struct dumpset *ds, struct image *img, struct run_list *l,
		     int *pages_fd, unsigned *pages_id, bool keep, struct pz_layout **z,
		     struct page_feed **feed)
{
	PagemapHead *head = NULL;
	void *msg;
	int ret = img_read_msg(img, &pagemap_head__descriptor, (void **)&head);

	if (ret == 0)
		ret = fail(-EIO, "image %s is empty", img->name);
	if (ret > 0) {
		*pages_id = head->pages_id;
		ret = open_pages(ds, head, pages_fd, keep, z, feed);
	}
	if (ret >= 0 && head->has_block_shift &&
	    (head->block_shift < 12 || head->block_shift > 30))
		ret = fail(-EIO, "image %s is corrupt: block_shift %u", img->name, head->block_shift);
	if (ret >= 0 && head->has_block_shift)
		l->block_shift = head->block_shift;
	while (ret >= 0 && (ret = img_read_msg(img, &pagemap_entry__descriptor, &msg)) == 1) {
		ret = add_run(l, msg);
		img_free(&pagemap_entry__descriptor, msg);
	}
	img_free(&pagemap_head__descriptor, head);
	return ret;
}

static void free_layout(struct pz_layout **z)
{
	if (*z)
		pz_layout_free(*z);
	free(*z);
	*z = NULL;
}

/* Every present run with its checksum: the image can be checked run by run. */
static bool all_summed(const struct dump_run *runs, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		if (runs[i].present && !runs[i].tparent && !runs[i].has_sum)
			return false;
	return true;
}

/*
 * A compressed image kept for the blob (or fed to it) only when it sums
 * every run as it reads it (RST_SUM_RUNS); otherwise its raw bytes in a
 * memfd after all.
 */
static int keep_or_open_raw(const struct run_list *l, unsigned pages_id, int *fd,
			    struct pz_layout **z, struct page_feed **feed)
{
	char name[64];
	int raw, ret;

	if (*feed && !all_summed(l->runs, l->nr)) {
		ret = feed_fill(*feed);
		feed_free(*feed);
		*feed = NULL;
		return ret;
	}
	if (!*z || all_summed(l->runs, l->nr))
		return 0;
	free_layout(z);
	img_name(IMG_PAGES, pages_id, name, sizeof(name));
	raw = pz_open_raw(*fd, name);
	close(*fd);
	*fd = raw;
	return raw < 0 ? raw : 0;
}

struct name64 {
	char s[64];
};

static struct name64 img_name_of(enum img_type t, unsigned id)
{
	struct name64 n;

	img_name(t, id, n.s, sizeof(n.s));
	return n;
}

/* Sorted runs must not overlap. */
static int check_runs(const char *name, const struct dump_run *runs, size_t nr)
{
	for (size_t i = 1; i < nr; i++)
		if (runs[i].start < runs[i - 1].end)
			return fail(-EIO, "image %s is corrupt: runs at %#" PRIx64 " and %#" PRIx64
				    " overlap", name, runs[i - 1].start, runs[i].start);
	return 0;
}

/* The pages image must hold the bytes of the runs, no more, no less (z: its raw size). */
static int check_pages_size(const char *name, uint64_t bytes, int pages_fd,
			    const struct pz_layout *z)
{
	struct stat st;

	if (pages_fd < 0 || fstat(pages_fd, &st))
		return 0;
	if (z)
		st.st_size = (off_t)z->raw;
	if ((uint64_t)st.st_size != bytes)
		return fail(-EIO, "image %s is corrupt: it lists %" PRIu64 " bytes of pages, "
			    "its pages image holds %" PRIu64, name, bytes, (uint64_t)st.st_size);
	return 0;
}

int64_t dumpset_pages_size(const struct dumpset *ds)
{
	struct stat st;

	if (ds->pages_z)
		return (int64_t)ds->pages_z->raw;
	if (fstat(ds->pages_fd, &st))
		return fail(-errno, "cannot stat pages-1.img: %s", strerror(errno));
	return st.st_size;
}

static bool pages_checked(const struct dumpset *ds, unsigned id)
{
	for (size_t i = 0; i < ds->nr_pages_checked; i++)
		if (ds->pages_checked[i] == id)
			return true;
	return false;
}

static int mark_pages_checked(struct dumpset *ds, unsigned id)
{
	unsigned *n = realloc(ds->pages_checked, (ds->nr_pages_checked + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	ds->pages_checked = n;
	n[ds->nr_pages_checked++] = id;
	return 0;
}

/* pages-ID.img read once: its runs' checksums (runs in file order) and the inventory's. */
static int verify_pages(struct dumpset *ds, unsigned id, int fd, const struct dump_run *runs,
			size_t nr)
{
	int ret;

	if (pages_checked(ds, id))
		return 0;
	ret = imgset_verify_pages(ds->inv, img_name_of(IMG_PAGES, id).s, fd, runs, nr);
	return ret ? ret : mark_pages_checked(ds, id);
}

/* The pages images no pagemap named: their bytes as the inventory says. */
int dumpset_verify_other_pages(struct dumpset *ds)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < ds->inv->n_images; i++) {
		const char *name = ds->inv->images[i]->name;
		unsigned id;

		if (!img_is_pages(name, &id) || pages_checked(ds, id))
			continue;
		ret = imgset_verify_image(ds->dirfd, ds->inv, name);
		if (!ret)
			ret = mark_pages_checked(ds, id);
	}
	return ret;
}

static int load_runs(struct dumpset *ds, enum img_type t, unsigned id, struct dump_run **runs,
		     size_t *nr, int *pages_fd)
{
	struct run_list l = { 0 };
	struct image *img;
	unsigned pages_id = 0;
	struct pz_layout *z = NULL;
	struct page_feed *feed = NULL;
	/* the process's own pages, read by the blob alone: a set with no parent and no tree */
	bool keep = t == IMG_PAGEMAP && ds->blob_lz4 && ds->pages_sums_deferred && ds->inv &&
		    !ds->inv->has_parent_inventory && !ds->nr_members;
	int ret = need_img(ds, t, id);

	if (!ret)
		ret = img_open(ds->dirfd, t, id, &img);
	if (ret)
		return ret;
	ret = read_runs(ds, img, &l, pages_fd, &pages_id, keep, &z, &feed);
	img_abort(img);
	if (ret >= 0)
		ret = keep_or_open_raw(&l, pages_id, pages_fd, &z, &feed);
	if (t == IMG_PAGEMAP)
		ds->pages_feed = feed;
	else
		feed_free(feed);
	*runs = l.runs;
	*nr = l.nr;
	for (size_t i = 0; i < l.nr; i++)
		l.runs[i].fd = *pages_fd;
	if (t == IMG_PAGEMAP && !ds->marks) {
		ds->marks = l.marks;
		ds->block_shift = l.block_shift;
	} else {
		free(l.marks);
		for (size_t i = 0; i < l.nr; i++)
			l.runs[i].nr_marks = 0;
	}
	if (t == IMG_PAGEMAP)
		ds->pages_z = z;
	else
		free_layout(&z);
	if (ret < 0)
		return ret;
	ret = check_pages_size(img_name_of(t, id).s, l.off, *pages_fd, z);
	if (t == IMG_PAGEMAP)
		ds->pages_id = pages_id;
	if (t == IMG_PAGEMAP && ds->inv && ds->inv->has_parent_inventory)
		ds->pages_sums_deferred = false;	/* a chain: whole up front, or chain_late */
	if (t == IMG_PAGEMAP)
		ds->pages_late = ds->chain_late && !ds->pages_remote && all_summed(l.runs, l.nr);
	if (!ret && t == IMG_PAGEMAP && (ds->pages_sums_deferred || ds->pages_remote ||
					 ds->pages_late))
		ret = mark_pages_checked(ds, pages_id);	/* the restore's to check */
	else if (!ret)
		ret = verify_pages(ds, pages_id, *pages_fd, l.runs, l.nr);
	if (ret)
		return ret;
	if (l.nr)
		qsort(l.runs, l.nr, sizeof(*l.runs), cmp_run);
	return check_runs(img_name_of(t, id).s, l.runs, l.nr);
}

int dumpset_load_pagemap(struct dumpset *ds, unsigned pid)
{
	return load_runs(ds, IMG_PAGEMAP, pid, &ds->runs, &ds->nr_runs, &ds->pages_fd);
}

static const struct dump_shmem *find_shmem(const struct dumpset *ds, uint64_t shmid)
{
	for (size_t i = 0; i < ds->nr_shmems; i++)
		if (ds->shmems[i].shmid == shmid)
			return &ds->shmems[i];
	return NULL;
}

/* The content of the shared object v maps, once per object. */
static int load_shmem(struct dumpset *ds, const VmaEntry *v)
{
	if (!find_shmem(ds, v->shmid) && !img_exists(ds->dirfd, IMG_SHMEM_PAGEMAP, v->shmid)) {
		pr_warn("no content for the shared memory at %#" PRIx64 ": it reads as zeros",
			v->start);
		return 0;
	}
	return dumpset_load_shmem(ds, v->shmid);
}

static int load_shmems(struct dumpset *ds)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < ds->mm->n_vmas; i++)
		if (ds->mm->vmas[i]->status & VMA_ANON_SHARED)
			ret = load_shmem(ds, ds->mm->vmas[i]);
	return ret;
}

static unsigned files_id(const struct dumpset *ds)
{
	const TaskKobjIdsEntry *ids = ds->inv->root_ids;

	if (ids && img_exists(ds->dirfd, IMG_FDINFO, ids->files_id))
		return ids->files_id;
	return 1;
}

static int load_files(struct dumpset *ds)
{
	int ret = 0;

	if (img_exists(ds->dirfd, IMG_FILES, 0))
		ret = read_all(ds->dirfd, IMG_FILES, 0, &file_entry__descriptor,
			       (void ***)&ds->files, &ds->nr_files);
	if (!ret && img_exists(ds->dirfd, IMG_FDINFO, files_id(ds)))
		ret = read_all(ds->dirfd, IMG_FDINFO, files_id(ds), &fdinfo_entry__descriptor,
			       (void ***)&ds->fds, &ds->nr_fds);
	return ret;
}

static int load_optional(struct dumpset *ds, unsigned pid)
{
	int ret = 0;

	if (img_exists(ds->dirfd, IMG_FS, pid))
		ret = img_read_one(ds->dirfd, IMG_FS, pid, &fs_entry__descriptor, (void **)&ds->fs);
	if (!ret && img_exists(ds->dirfd, IMG_IDS, pid))
		ret = img_read_one(ds->dirfd, IMG_IDS, pid, &task_kobj_ids_entry__descriptor,
				   (void **)&ds->ids);
	if (!ret && img_exists(ds->dirfd, IMG_MEMFD_INODE, 0))
		ret = read_all(ds->dirfd, IMG_MEMFD_INODE, 0, &memfd_inode_entry__descriptor,
			       (void ***)&ds->memfds, &ds->nr_memfds);
	if (!ret && img_exists(ds->dirfd, IMG_REMAP_FPATH, 0))
		ret = read_all(ds->dirfd, IMG_REMAP_FPATH, 0, &remap_file_path_entry__descriptor,
			       (void ***)&ds->remaps, &ds->nr_remaps);
	if (!ret && img_exists(ds->dirfd, IMG_FILE_LOCKS, 0))
		ret = read_all(ds->dirfd, IMG_FILE_LOCKS, 0, &file_lock_entry__descriptor,
			       (void ***)&ds->locks, &ds->nr_locks);
	if (!ret && img_exists(ds->dirfd, IMG_STATS, 0))
		ret = img_read_one(ds->dirfd, IMG_STATS, 0, &stats_entry__descriptor,
				   (void **)&ds->stats);
	if (!ret && img_exists(ds->dirfd, IMG_SECCOMP, 0))
		ret = img_read_one(ds->dirfd, IMG_SECCOMP, 0, &seccomp_entry__descriptor,
				   (void **)&ds->seccomp);
	return ret;
}

/* VMAs sorted, page-aligned, not empty and not overlapping. */
static int check_vmas(const MmEntry *mm, pid_t pid)
{
	for (size_t i = 0; i < mm->n_vmas; i++) {
		const VmaEntry *v = mm->vmas[i];

		if (v->start >= v->end || v->start % PAGE_SIZE || v->end % PAGE_SIZE ||
		    (i && v->start < mm->vmas[i - 1]->end))
			return fail(-EIO, "image mm-%d.img is corrupt: VMA %zu %#" PRIx64 "-%#"
				    PRIx64 " is empty, unaligned, unsorted or overlapping",
				    pid, i, v->start, v->end);
	}
	return 0;
}

/* Every run of the process's own pagemap lies inside one of its VMAs. */
static int check_runs_in_vmas(const struct dumpset *ds)
{
	for (size_t i = 0; i < ds->nr_runs; i++) {
		const VmaEntry *v = dumpset_vma_at(ds, ds->runs[i].start);

		if (!v || ds->runs[i].end > v->end)
			return fail(-EIO, "image pagemap-%d.img is corrupt: run at %#" PRIx64
				    " is not inside one VMA", ds->pstree->pid, ds->runs[i].start);
	}
	return 0;
}

/*
 * Guard regions (mm_entry.guards): sorted, page-aligned, each inside one VMA
 * that restore maps, and holding no dumped page (a guard page has no content).
 */
static int check_guards(const struct dumpset *ds)
{
	const MmEntry *mm = ds->mm;

	for (size_t i = 0; i < mm->n_guards; i++) {
		const GuardRegionEntry *g = mm->guards[i];
		const VmaEntry *v = dumpset_vma_at(ds, g->start);
		size_t r = dumpset_run_after(ds, g->start);

		if (g->start >= g->end || (g->start | g->end) % PAGE_SIZE ||
		    (i && g->start < mm->guards[i - 1]->end) || !v || g->end > v->end ||
		    (v->status & (VMA_AREA_VDSO | VMA_AREA_VVAR | VMA_AREA_VSYSCALL)) ||
		    (r < ds->nr_runs && ds->runs[r].start < g->end))
			return fail(-EIO, "image mm-%d.img is corrupt: guard region %zu %#" PRIx64 "-%#"
				    PRIx64 " is empty, unaligned, unsorted, outside one VMA or holds "
				    "dumped pages", ds->pstree->pid, i, g->start, g->end);
	}
	return 0;
}

/* Does the directory hold name, or (name ending in '-') a file whose name starts so? */
static bool holds_file(int dirfd, const char *name)
{
	size_t n = strlen(name);
	struct dirent *e;
	bool found = false;
	DIR *d;
	int fd;

	if (name[n - 1] != '-')
		return !faccessat(dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW);
	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	while (!found && (e = readdir(d)))
		found = !strncmp(e->d_name, name, n);
	closedir(d);
	return found;
}

/*
 * Images of memdump's own that older versions wrote, behind magics crit does
 * not know; their state is now in CRIU's images. Such a set is refused by
 * name rather than restored without it.
 */
static int refuse_old_images(const struct dumpset *ds)
{
	static const char *const old[][2] = {
		{ "fd-share.img", "fds a tree's processes share, now in fdinfo-1.img" },
		{ "mqueues-1.img", "POSIX message queues, now in ipcns-var-1.img" },
		{ "tmpfs-", "a tmpfs's files, now in mountpoints-1.img" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(old); i++)
		if (holds_file(ds->dirfd, old[i][0]))
			return fail(-EPROTO, "the image set holds %s%s (%s), which only an older "
				    "memdump wrote and this one does not read: dump again", old[i][0],
				    old[i][0][strlen(old[i][0]) - 1] == '-' ? "MNTID.img" : "",
				    old[i][1]);
	return 0;
}

static int load_images(struct dumpset *ds)
{
	int ret = img_read_one(ds->dirfd, IMG_INVENTORY, 0, &inventory_entry__descriptor,
			       (void **)&ds->inv);

	if (!ret)
		ret = imgset_verify(ds->dirfd, ds->inv);
	if (!ret)
		ret = refuse_old_images(ds);
	if (!ret && ds->inv->has_pre_dump_mode)
		ret = fail(-EINVAL, "this is a pre-dump (memory only): use the dump made after it "
			   "(--prev-images-dir)");
	if (!ret)
		ret = need_img(ds, IMG_PSTREE, 0);
	if (!ret)
		ret = load_pstree(ds);
	if (!ret)
		ret = load_cores(ds);
	if (!ret)
		ret = need_img(ds, IMG_MM, ds->pstree->pid);
	if (!ret)
		ret = img_read_one(ds->dirfd, IMG_MM, ds->pstree->pid, &mm_entry__descriptor,
				   (void **)&ds->mm);
	if (!ret)
		ret = check_vmas(ds->mm, ds->pstree->pid);
	/* chain_late: a chain's only, not a tree's (its pieces are checked in their sets) */
	ds->chain_late = ds->chain_late && !ds->nr_members && ds->inv->has_parent_inventory;
	if (!ret)
		ret = dumpset_load_pagemap(ds, ds->pstree->pid);
	if (!ret)
		ret = check_runs_in_vmas(ds);
	if (!ret)
		ret = check_guards(ds);
	if (!ret)
		ret = chain_resolve(ds);
	if (!ret)
		ret = load_shmems(ds);
	if (!ret)
		ret = load_files(ds);
	if (!ret)
		ret = load_optional(ds, ds->pstree->pid);
	if (!ret)
		ret = dumpset_verify_other_pages(ds);
	return ret;
}

static int load_set(const char *dir, struct dumpset *ds, bool defer_sums, bool blob_lz4,
		    bool remote, bool chain_late)
{
	int ret;

	memset(ds, 0, sizeof(*ds));
	ds->pages_fd = -1;
	ds->dirfd = -1;
	ds->pages_sums_deferred = defer_sums && !remote;
	ds->pages_remote = remote;
	ds->chain_late = chain_late;
	ds->blob_lz4 = blob_lz4;
	ret = open_dir(dir, ds);
	if (!ret)
		ret = load_images(ds);
	if (ret)
		dumpset_free(ds);
	return ret;
}

/* The listed size and checksum of a tree's process set against its inventory.img now. */
static int check_subset_inventory(const struct dumpset *root, const char *name, int dirfd)
{
	uint64_t size, hash;
	int ret = img_sum_file(dirfd, "inventory.img", &size, &hash);

	if (ret)
		return ret;
	for (size_t i = 0; i < root->inv->n_images; i++) {
		const ImageSumEntry *e = root->inv->images[i];

		if (e->name && !strcmp(e->name, name))
			return e->size == size && e->hash == hash ? 0 :
			       fail(-EIO, "image set %s is corrupt: its inventory.img does not "
				    "match the inventory", name);
	}
	return fail(-EIO, "image set %s is not listed in inventory.img", name);
}

static int load_member(const struct dumpset *root, pid_t pid, struct dumpset *ds, bool remote)
{
	char name[32];
	int ret;

	snprintf(name, sizeof(name), "proc-%d", pid);
	memset(ds, 0, sizeof(*ds));
	ds->pages_fd = -1;
	ds->pages_sums_deferred = root->pages_sums_deferred && !remote;
	ds->pages_remote = remote;
	ds->dirfd = img_open_subset(root->dirfd, name);
	if (ds->dirfd < 0)
		return ds->dirfd;
	ret = check_subset_inventory(root, name, ds->dirfd);
	if (!ret)
		ret = load_images(ds);
	if (!ret && (ds->pstree->pid != (uint32_t)pid || ds->nr_members))
		ret = fail(-EIO, "image set %s is corrupt: it is not the set of process %d alone",
			   name, pid);
	if (ret) {
		fail_context("image set %s: ", name);
		dumpset_free(ds);
	}
	return ret;
}

int dumpset_load_member(const struct dumpset *root, pid_t pid, struct dumpset *ds)
{
	return load_member(root, pid, ds, false);
}

int dumpset_load_member_remote(const struct dumpset *root, pid_t pid, struct dumpset *ds)
{
	return load_member(root, pid, ds, true);
}

int dumpset_load(const char *dir, struct dumpset *ds)
{
	return load_set(dir, ds, false, false, false, false);
}

int dumpset_load_for_restore(const char *dir, struct dumpset *ds, bool blob_lz4)
{
	return load_set(dir, ds, true, blob_lz4, false, false);
}

int dumpset_load_lazy(const char *dir, struct dumpset *ds)
{
	return load_set(dir, ds, true, false, false, true);
}

int dumpset_load_remote_pages(const char *dir, struct dumpset *ds)
{
	return load_set(dir, ds, false, false, true, true);
}

/* Each pagemap-PID.img of the set against its pages image (a pre-dump's: no parent followed). */
static int verify_pagemaps(struct dumpset *ds)
{
	int fd = openat(ds->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	int ret = 0, pid;
	char tail;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return fail(-errno, "cannot read a set's directory: %s", strerror(errno));
	}
	while (!ret && (e = readdir(d))) {
		if (sscanf(e->d_name, "pagemap-%d.im%c", &pid, &tail) != 2 || tail != 'g' || pid <= 0)
			continue;
		ret = dumpset_load_pagemap(ds, (unsigned)pid);
		free(ds->runs);
		ds->runs = NULL;
		ds->nr_runs = 0;
		if (ds->pages_fd >= 0)
			close(ds->pages_fd);
		ds->pages_fd = -1;
	}
	closedir(d);
	return ret;
}

/* The proc-PID/ sets of a tree's pre-dump, each verified alone. */
static int verify_predump_subsets(const InventoryEntry *inv, int dirfd)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < inv->n_images; i++) {
		const char *name = inv->images[i]->name;
		int sub;

		if (!name || strncmp(name, "proc-", 5) || strchr(name, '.'))
			continue;
		sub = img_open_subset(dirfd, name);
		if (sub < 0)
			return sub;
		ret = dumpset_verify_predump(sub);
		close(sub);
		if (ret > 0)
			ret = fail(-EIO, "image set %s is not a pre-dump's, as its parent is", name);
		if (ret < 0)
			fail_context("image set %s: ", name);
	}
	return ret;
}

int dumpset_verify_predump(int dirfd)
{
	struct dumpset ds;
	int ret;

	memset(&ds, 0, sizeof(ds));
	ds.dirfd = dirfd;
	ds.pages_fd = -1;
	ret = img_read_one(dirfd, IMG_INVENTORY, 0, &inventory_entry__descriptor, (void **)&ds.inv);
	if (!ret && !ds.inv->has_pre_dump_mode)
		ret = 1;
	if (!ret)
		ret = imgset_verify(dirfd, ds.inv);
	if (!ret)
		ret = verify_pagemaps(&ds);
	if (!ret)
		ret = dumpset_verify_other_pages(&ds);
	if (!ret)
		ret = verify_predump_subsets(ds.inv, dirfd);
	img_free(&inventory_entry__descriptor, ds.inv);
	free(ds.pages_checked);
	free(ds.marks);
	return ret;
}

void dumpset_free(struct dumpset *ds)
{
	img_free(&inventory_entry__descriptor, ds->inv);
	free_all(&pstree_entry__descriptor, (void **)ds->procs,
		 ds->nr_pstree > ds->nr_procs ? ds->nr_pstree : ds->nr_procs);
	free(ds->members);
	if (ds->zombie_cores)
		free_all(&core_entry__descriptor, (void **)ds->zombie_cores, ds->nr_procs - 1);
	free_all(&core_entry__descriptor, (void **)ds->cores, ds->nr_cores);
	img_free(&mm_entry__descriptor, ds->mm);
	free(ds->runs);
	free(ds->marks);
	free_layout(&ds->pages_z);
	feed_free(ds->pages_feed);
	ds->pages_feed = NULL;
	free_all(&file_entry__descriptor, (void **)ds->files, ds->nr_files);
	free_all(&fdinfo_entry__descriptor, (void **)ds->fds, ds->nr_fds);
	img_free(&fs_entry__descriptor, ds->fs);
	img_free(&task_kobj_ids_entry__descriptor, ds->ids);
	img_free(&stats_entry__descriptor, ds->stats);
	img_free(&seccomp_entry__descriptor, ds->seccomp);
	if (ds->pages_fd >= 0)
		close(ds->pages_fd);
	for (size_t i = 0; i < ds->nr_shmems; i++) {
		free(ds->shmems[i].runs);
		if (ds->shmems[i].pages_fd >= 0)
			close(ds->shmems[i].pages_fd);
	}
	free(ds->shmems);
	free_all(&memfd_inode_entry__descriptor, (void **)ds->memfds, ds->nr_memfds);
	free_all(&remap_file_path_entry__descriptor, (void **)ds->remaps, ds->nr_remaps);
	free_all(&file_lock_entry__descriptor, (void **)ds->locks, ds->nr_locks);
	free(ds->pages_checked);
	for (size_t i = 0; i < ds->nr_chain; i++) {
		dumpset_free(ds->chain[i]);
		free(ds->chain[i]);
	}
	free(ds->chain);
	if (ds->dirfd >= 0)
		close(ds->dirfd);
	memset(ds, 0, sizeof(*ds));
	ds->pages_fd = -1;
	ds->dirfd = -1;
}

pid_t dumpset_pid(const struct dumpset *ds)
{
	return ds->pstree->pid;
}

const char *dumpset_comm(const struct dumpset *ds)
{
	const CoreEntry *c = ds->nr_cores ? ds->cores[0] : NULL;

	if (c && c->tc && c->tc->comm)
		return c->tc->comm;
	if (c && c->thread_core && c->thread_core->comm)
		return c->thread_core->comm;
	return "?";
}

const FileEntry *dumpset_file(const struct dumpset *ds, uint32_t id)
{
	for (size_t i = 0; i < ds->nr_files; i++)
		if (ds->files[i]->id == id)
			return ds->files[i];
	return NULL;
}

const char *dumpset_file_path(const FileEntry *fe)
{
	if (!fe)
		return NULL;
	if (fe->type == FD_TYPES__REG && fe->reg)
		return fe->reg->name;
	if (fe->type == FD_TYPES__TTY && fe->tty && fe->tty->name)
		return fe->tty->name;
	return NULL;
}

const RemapFilePathEntry *dumpset_remap(const struct dumpset *ds, uint32_t id)
{
	for (size_t i = 0; i < ds->nr_remaps; i++)
		if (ds->remaps[i]->orig_id == id)
			return ds->remaps[i];
	return NULL;
}

const MemfdInodeEntry *dumpset_memfd(const struct dumpset *ds, uint64_t inode_id)
{
	for (size_t i = 0; i < ds->nr_memfds; i++)
		if (ds->memfds[i]->inode_id == inode_id)
			return ds->memfds[i];
	return NULL;
}

size_t runs_after(const struct dump_run *runs, size_t nr, uint64_t key)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (runs[mid].end <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint64_t runs_pages_in(const struct dump_run *runs, size_t nr, uint64_t start, uint64_t end)
{
	uint64_t bytes = 0;

	for (size_t i = runs_after(runs, nr, start); i < nr; i++) {
		const struct dump_run *r = &runs[i];

		if (r->start >= end)
			break;
		if (r->present)
			bytes += MIN(r->end, end) - MAX(r->start, start);
	}
	return bytes / PAGE_SIZE;
}

size_t dumpset_run_after(const struct dumpset *ds, uint64_t addr)
{
	return runs_after(ds->runs, ds->nr_runs, addr);
}

uint64_t dumpset_pages_in(const struct dumpset *ds, uint64_t start, uint64_t end)
{
	return runs_pages_in(ds->runs, ds->nr_runs, start, end);
}

void dumpset_vma_src(const struct dumpset *ds, const VmaEntry *v, struct vma_src *src)
{
	const struct dump_shmem *s = find_shmem(ds, v->shmid);

	if (!(v->status & VMA_ANON_SHARED)) {
		*src = (struct vma_src){ ds->runs, ds->nr_runs, ds->pages_fd, v->start };
		return;
	}
	if (s)
		*src = (struct vma_src){ s->runs, s->nr_runs, s->pages_fd, v->pgoff };
	else
		*src = (struct vma_src){ NULL, 0, -1, v->pgoff };
}

uint64_t dumpset_vma_pages(const struct dumpset *ds, const VmaEntry *v)
{
	struct vma_src src;

	dumpset_vma_src(ds, v, &src);
	return runs_pages_in(src.runs, src.nr_runs, src.base, src.base + (v->end - v->start));
}

bool dumpset_has_parent_pages(const struct dumpset *ds)
{
	for (size_t k = 0; k < ds->nr_runs; k++)
		if (ds->runs[k].present && !ds->runs[k].tparent && ds->runs[k].fd != ds->pages_fd)
			return true;
	return false;
}

bool dumpset_run_hot(const struct dumpset *ds, size_t k)
{
	return ds->runs[k].present && ds->runs[k].fd == ds->pages_fd && ds->pages_fd >= 0;
}

uint64_t dumpset_hot_pages(const struct dumpset *ds)
{
	uint64_t n = 0;

	if (!dumpset_has_parent_pages(ds))
		return 0;
	for (size_t k = 0; k < ds->nr_runs; k++)
		if (dumpset_run_hot(ds, k))
			n += (ds->runs[k].end - ds->runs[k].start) / PAGE_SIZE;
	return n;
}

const VmaEntry *dumpset_vma_at(const struct dumpset *ds, uint64_t addr)
{
	size_t lo = 0, hi = ds->mm->n_vmas;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const VmaEntry *v = ds->mm->vmas[mid];

		if (addr < v->start)
			hi = mid;
		else if (addr >= v->end)
			lo = mid + 1;
		else
			return v;
	}
	return NULL;
}

const struct dump_shmem *dumpset_shmem(const struct dumpset *ds, uint64_t shmid)
{
	return find_shmem(ds, shmid);
}

int dumpset_load_shmem(struct dumpset *ds, uint64_t shmid)
{
	struct dump_shmem *s;

	if (find_shmem(ds, shmid) || !img_exists(ds->dirfd, IMG_SHMEM_PAGEMAP, shmid))
		return 0;
	s = realloc(ds->shmems, (ds->nr_shmems + 1) * sizeof(*s));
	if (!s)
		return -ENOMEM;
	ds->shmems = s;
	s = &s[ds->nr_shmems++];
	memset(s, 0, sizeof(*s));
	s->shmid = shmid;
	s->pages_fd = -1;
	return load_runs(ds, IMG_SHMEM_PAGEMAP, shmid, &s->runs, &s->nr_runs, &s->pages_fd);
}
