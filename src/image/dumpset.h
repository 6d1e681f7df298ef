/*
 * A whole image set loaded into memory, for the commands that read a dump
 * (show, read-mem, restore). Page data stays on disk: pages_fd is open on
 * pages-N.img and every pagemap run knows its offset there.
 */
#ifndef MEMDUMP_DUMPSET_H
#define MEMDUMP_DUMPSET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core.pb-c.h"
#include "files.pb-c.h"
#include "file-lock.pb-c.h"
#include "fs.pb-c.h"
#include "inventory.pb-c.h"
#include "mm.pb-c.h"
#include "pagemap.pb-c.h"
#include "pstree.pb-c.h"
#include "remap-file-path.pb-c.h"
#include "seccomp.pb-c.h"
#include "stats.pb-c.h"

struct pz_layout;
struct page_feed;

/* One run of pages from pagemap-PID.img. */
struct dump_run {
	uint64_t start, end;	/* addresses */
	bool present;		/* the bytes are in pages-N.img ... */
	uint64_t off;		/* ... at this offset */
	int fd;			/* that pages image (of this set or of one it is based on) */
	bool has_sum;		/* pagemap_entry.sum: the checksum of those bytes */
	uint64_t sum;
	bool tparent;		/* in_tree_parent: the tree parent's pages at these addresses,
				 * present once tparent_resolve() found them in its set */
	uint8_t lazy_use;	/* a lazy restore of a chain (chain_late): DUMP_RUN_USED_* */
	/* its block marks (pagemap_entry.block_lanes): dumpset.marks + marks_at */
	uint64_t nr_marks;
	size_t marks_at;
};

/* How a lazy restore uses a run of a chain's set (dumpset_whole_run): checked then. */
#define DUMP_RUN_USED_LAZY	1	/* a piece of it in a lazy VMA: the page handler's */
#define DUMP_RUN_USED_EARLY	2	/* a piece read before anything runs: checked first */

/*
 * A shared memory object (MAP_SHARED|MAP_ANONYMOUS, memfd): its runs from
 * pagemap-shmem-SHMID.img are keyed by offset in the object.
 */
struct dump_shmem {
	uint64_t shmid;
	int pages_fd;
	struct dump_run *runs;
	size_t nr_runs;
};

/* Where the bytes of one VMA are: runs keyed by base + (addr - vma start). */
struct vma_src {
	const struct dump_run *runs;
	size_t nr_runs;
	int pages_fd;
	uint64_t base;
};

struct dumpset {
	int dirfd;
	int pages_fd;			/* pages-N.img, -1 without pagemap */
	InventoryEntry *inv;
	PstreeEntry *pstree;		/* the root: procs[0] */
	PstreeEntry **procs;		/* pstree.img: the root, then its zombie children */
	size_t nr_procs;
	PstreeEntry **members;		/* a dumped tree's other live processes (proc-PID/) */
	size_t nr_members;
	size_t nr_pstree;		/* entries read: procs and members */
	CoreEntry **zombie_cores;	/* procs[i + 1]'s core (TASK_DEAD, exit_code) */
	CoreEntry **cores;		/* one per pstree thread, leader first */
	size_t nr_cores;
	MmEntry *mm;
	struct dump_run *runs;		/* sorted by address */
	size_t nr_runs;
	FileEntry **files;
	size_t nr_files;
	FdinfoEntry **fds;
	size_t nr_fds;
	FsEntry *fs;			/* NULL when absent */
	TaskKobjIdsEntry *ids;		/* ids-PID.img: which tables it shares (a tree), NULL when absent */
	StatsEntry *stats;		/* NULL when absent */
	SeccompEntry *seccomp;		/* seccomp.img, NULL when absent */
	struct dump_shmem *shmems;	/* one per shared object the VMAs map */
	size_t nr_shmems;
	MemfdInodeEntry **memfds;	/* memfd.img, when present */
	size_t nr_memfds;
	RemapFilePathEntry **remaps;	/* remap-fpath.img: deleted files, when present */
	size_t nr_remaps;
	FileLockEntry **locks;		/* filelocks.img, when present */
	size_t nr_locks;
	unsigned *pages_checked;	/* ids of the pages images verified so far */
	size_t nr_pages_checked;
	/*
	 * The sets of an incremental chain (chain.c): chain[0] is `parent`,
	 * chain[1] its parent, ... Each is verified whole; runs that pointed into
	 * them (PE_PARENT) now name their pages images.
	 */
	struct dumpset **chain;
	size_t nr_chain;
	/*
	 * Set by dumpset_load_for_restore() for a set without a parent: the
	 * checksums of the process's own pages image (pages_fd) were not read;
	 * the restore checks them from the memory it filled, before the process
	 * runs (mem/pagecheck_restore.c).
	 */
	bool pages_sums_deferred;
	/*
	 * dumpset_load_for_restore(..., blob_lz4): an LZ4 compressed pages image
	 * of the process (a set alone: no parent, no tree) is left compressed
	 * for the restorer blob to decode into the memory it fills: pages_fd is
	 * the compressed file, pages_z its layout (runs' offsets stay those of
	 * the raw bytes). NULL: pages_fd holds the raw bytes (a memfd for a
	 * compressed image).
	 */
	bool blob_lz4;
	struct pz_layout *pages_z;
	/*
	 * The same for a zstd compressed one: pages_fd is a memfd of its raw
	 * size, its bytes fed to the blob as they are decompressed, or put there
	 * first (image/feed.h); NULL: pages_fd holds them.
	 */
	struct page_feed *pages_feed;
	/*
	 * dumpset_load_remote_pages(): the set's own pages-1.img is being
	 * fetched from a migration's source (mem/lazy_remote.c): not read at
	 * load, its runs checked as their bytes arrive.
	 */
	bool pages_remote;
	/*
	 * dumpset_load_lazy(): a chain's (no tree) pages images, the set's own
	 * and its parents', are not read at load (their size is checked): each
	 * run is the lazy restore's to check whole, once, before anything runs
	 * or in the page handler (mem/lazy_restore.c). A pages image with a
	 * run without checksum is checked whole at load even so.
	 */
	bool chain_late;
	bool pages_late;		/* chain_late, and this set's pages image was not read */
	unsigned pages_id;		/* the N of pages-N.img the pagemap names */
	/*
	 * The runs' block marks (image/runsum.h), every 1 << block_shift bytes of
	 * a run (pagemap_head.block_shift); block_shift 0: the set has none.
	 */
	unsigned int block_shift;
	uint64_t *marks;
};

/* Within image/: a set's pagemap runs and pages images, verified (dumpset.c). */
int dumpset_load_pagemap(struct dumpset *ds, unsigned pid);
int dumpset_verify_other_pages(struct dumpset *ds);
/* chain.c: runs in parent sets resolved to the parents' pages images. */
int chain_resolve(struct dumpset *ds);
/*
 * A tree's process: its in_tree_parent runs replaced by the pieces of its
 * parent's runs (parent: loaded and resolved before it) that hold them.
 */
int tparent_resolve(struct dumpset *ds, const struct dumpset *parent);
/* How many pages images other than its own its runs may name (parent sets, the tree parent's). */
size_t dumpset_other_pages(const struct dumpset *ds);
/* Does ds list pages of its tree parent (resolved or not)? */
bool dumpset_has_tparent(const struct dumpset *ds);

/* Load DIR; fails with "DIR holds no complete dump" without inventory.img. */
int dumpset_load(const char *dir, struct dumpset *ds);
/*
 * The same, but everything about the process's pages image except its bytes'
 * checksums (its size, its runs): ds->pages_sums_deferred is set and the
 * caller must check them with imgset_check_run_sums() before using the pages.
 * blob_lz4: an LZ4 compressed pages image may stay compressed (pages_z).
 */
int dumpset_load_for_restore(const char *dir, struct dumpset *ds, bool blob_lz4);
/* migrate --lazy-pages: as dumpset_load(), pages-1.img of DIR not read (pages_remote),
 * a chain's parents as dumpset_load_lazy(). */
int dumpset_load_remote_pages(const char *dir, struct dumpset *ds);
/*
 * restore --lazy-pages with the late check: as dumpset_load_for_restore(); a
 * chain's pages images (chain_late) left to the restore to check run by run.
 */
int dumpset_load_lazy(const char *dir, struct dumpset *ds);
/*
 * A chain's (chain_late): the run of its own set that run (one of ds->runs, a piece
 * of it) comes from, *set that set (ds or one of ds->chain), *level its place in
 * the chain (0: ds); NULL when it is not a present run of one of them.
 */
struct dump_run *dumpset_whole_run(struct dumpset *ds, const struct dump_run *run,
				   struct dumpset **set, size_t *level);
/* Its pages image's name as seen from ds's directory ("parent/parent/pages-1.img"). */
void dumpset_chain_pages_name(const struct dumpset *set, size_t level, char *buf, size_t len);
/* The raw bytes of the process's pages image (pages_z: its raw size); <0 after fail(). */
int64_t dumpset_pages_size(const struct dumpset *ds);
/*
 * The set of process pid of the tree whose root set is root (proc-PID/,
 * never through a symlink), checked against root's inventory, loaded as
 * dumpset_load()/dumpset_load_for_restore() (as root was) load a set.
 */
int dumpset_load_member(const struct dumpset *root, pid_t pid, struct dumpset *ds);
/* As dumpset_load_member(), its pages-1.img being fetched from a migration's source
 * (pages_remote: migrate --lazy-pages of a tree). */
int dumpset_load_member_remote(const struct dumpset *root, pid_t pid, struct dumpset *ds);
void dumpset_free(struct dumpset *ds);
/*
 * A pre-dump's set in dirfd, alone (migrate-receive, as each pre-copied set
 * arrives): its inventory's images, and each process's pages image read
 * against its pagemap's runs (a tree's in proc-PID/ too); the parent sets
 * are not followed. 1: not a pre-dump's set (nothing read), 0: verified.
 */
int dumpset_verify_predump(int dirfd);

pid_t dumpset_pid(const struct dumpset *ds);
const char *dumpset_comm(const struct dumpset *ds);
const FileEntry *dumpset_file(const struct dumpset *ds, uint32_t id);
/* Path of a file entry (regular file, tty); NULL for pipes and others. */
const char *dumpset_file_path(const FileEntry *fe);
/* The remap (ghost) of file entry id, or NULL: the file was not deleted. */
const RemapFilePathEntry *dumpset_remap(const struct dumpset *ds, uint32_t id);
/* The memfd inode of that id, or NULL. */
const MemfdInodeEntry *dumpset_memfd(const struct dumpset *ds, uint64_t inode_id);
/* Index of the first run that ends after key (nr if none). */
size_t runs_after(const struct dump_run *runs, size_t nr, uint64_t key);
/* Pages of [start, end) whose bytes the runs hold. */
uint64_t runs_pages_in(const struct dump_run *runs, size_t nr, uint64_t start, uint64_t end);
/* The same on the process's own pagemap (addresses). */
size_t dumpset_run_after(const struct dumpset *ds, uint64_t addr);
uint64_t dumpset_pages_in(const struct dumpset *ds, uint64_t start, uint64_t end);
/* Where v's bytes are: the process pagemap, or its shared object's. */
void dumpset_vma_src(const struct dumpset *ds, const VmaEntry *v, struct vma_src *src);
/* Pages of v whose bytes the dump holds. */
uint64_t dumpset_vma_pages(const struct dumpset *ds, const VmaEntry *v);
/*
 * The hot pages: in a chain (some of the process's pages are in a parent
 * set), those in this set's own pages image, written since the last
 * pre-dump; a lazy restore fills them first. 0 for a set without a parent.
 * dumpset_run_hot(): run k of the process's pagemap is one of them.
 */
bool dumpset_has_parent_pages(const struct dumpset *ds);
bool dumpset_run_hot(const struct dumpset *ds, size_t k);
uint64_t dumpset_hot_pages(const struct dumpset *ds);
/* The loaded content of shared object shmid, or NULL. */
const struct dump_shmem *dumpset_shmem(const struct dumpset *ds, uint64_t shmid);
/*
 * Load pagemap-shmem-SHMID.img when dumpset_load() did not (an object only
 * open as an fd, like a memfd that nothing maps); no image: no content.
 */
int dumpset_load_shmem(struct dumpset *ds, uint64_t shmid);
/* The VMA that holds addr, or NULL. */
const VmaEntry *dumpset_vma_at(const struct dumpset *ds, uint64_t addr);

#endif
