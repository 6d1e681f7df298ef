/* Within dump/: --snapshot, a copy-on-write snapshot of the memory (snapshot.c). */
#ifndef MEMDUMP_DUMP_SNAPSHOT_H
#define MEMDUMP_DUMP_SNAPSHOT_H

struct dump_ctx;

/* While frozen: protect what it covers, write pages-1.img's other runs.
 * 1: no snapshot possible (said why): write the pages as usual. */
int snapshot_arm(struct dump_ctx *d);
/* Once the target runs: every other page, as it was at the freeze. */
int snapshot_copy(struct dump_ctx *d);
/* Lift every protection and let go of the target's memory. */
void snapshot_end(struct dump_ctx *d);

#endif
