/*
 * A whole image set loaded into memory, for the commands that only read a
 * dump (show, read-mem). Page data stays on disk: pages_fd is open on
 * pages-N.img and every pagemap entry knows its offset there.
 */
#ifndef MEMDUMP_DUMPSET_H
#define MEMDUMP_DUMPSET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core.pb-c.h"
#include "files.pb-c.h"
#include "fs.pb-c.h"
#include "inventory.pb-c.h"
#include "mm.pb-c.h"
#include "pagemap.pb-c.h"
#include "pstree.pb-c.h"
#include "stats.pb-c.h"

/* One run of pages from pagemap-PID.img. */
struct dump_run {
	uint64_t start, end;	/* addresses */
	bool present;		/* the bytes are in pages-N.img ... */
	uint64_t off;		/* ... at this offset */
};

struct dumpset {
	int dirfd;
	int pages_fd;			/* pages-N.img, -1 without pagemap */
	InventoryEntry *inv;
	PstreeEntry *pstree;
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
	StatsEntry *stats;		/* NULL when absent */
};

/* Load DIR; fails with "DIR holds no complete dump" without inventory.img. */
int dumpset_load(const char *dir, struct dumpset *ds);
void dumpset_free(struct dumpset *ds);

pid_t dumpset_pid(const struct dumpset *ds);
const char *dumpset_comm(const struct dumpset *ds);
const FileEntry *dumpset_file(const struct dumpset *ds, uint32_t id);
/* Path of a file entry (regular file, tty); NULL for pipes and others. */
const char *dumpset_file_path(const FileEntry *fe);
/* Index of the first run that ends after addr (nr_runs if none). */
size_t dumpset_run_after(const struct dumpset *ds, uint64_t addr);
/* Pages of [start, end) whose bytes the dump holds. */
uint64_t dumpset_pages_in(const struct dumpset *ds, uint64_t start, uint64_t end);
/* The VMA that holds addr, or NULL. */
const VmaEntry *dumpset_vma_at(const struct dumpset *ds, uint64_t addr);

#endif
