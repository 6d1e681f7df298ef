/* Within dump/: --snapshot, a copy-on-write snapshot of the memory (snapshot.c). */
#ifndef MEMDUMP_DUMP_SNAPSHOT_H
#define MEMDUMP_DUMP_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

struct dump_ctx;
struct vma;

/* While it runs, before the freeze: a userfaultfd made in a stop of a
 * millisecond or two, its private anonymous memory write-protected, writes
 * let through. 0 also when not possible (said why): snapshot_arm does it all. */
int snapshot_prearm(struct dump_ctx *d);
/* Frozen: what the handler lets through from now on is protected again. */
void snapshot_frozen(struct dump_ctx *d);
/* Is the VMA's userfaultfd write-protect registration (VmFlags uw) ours? */
bool snapshot_owns(struct dump_ctx *d, const struct vma *v);
/* Pre-armed: the scan found [start, end) written since (pagescan.c). */
int snapshot_written(struct dump_ctx *d, uint64_t start, uint64_t end);
/* While frozen: protect what it covers, write pages-1.img's other runs.
 * 1: no snapshot possible (said why): write the pages as usual. */
int snapshot_arm(struct dump_ctx *d);
/* Once the target runs: every other page, as it was at the freeze. */
int snapshot_copy(struct dump_ctx *d);
/* Lift every protection and let go of the target's memory. */
void snapshot_end(struct dump_ctx *d);

#endif
