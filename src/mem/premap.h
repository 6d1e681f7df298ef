/* Restore: memory a tree shares copy-on-write, premapped before the fork (premap_restore.c). */
#ifndef MEMDUMP_MEM_PREMAP_H
#define MEMDUMP_MEM_PREMAP_H

#include "ctx/restore_ctx.h"
/*
 * premap_restore.c: a tree's memory shared copy-on-write between parent and
 * child (pages dumped with in_tree_parent, the VMA the same in both): plan
 * (memdump, every area built), fill (each forked process, before it forks
 * its children), free.
 */
int premap_plan(struct rst *root);
void premap_fill(struct rst *r);
void premap_free(struct rst *r);
/* restore --copies: r's memory in slots of its own, filled once in memdump (restore/fanout.c) */
int premap_plan_copies(struct rst *r, unsigned long *base, unsigned long *size);
/* premap_fill() in memdump itself: an error is returned, reported */
int premap_fill_here(struct rst *r);
void premap_sums(struct rst *r, uint64_t *sums, bool save);

#endif
