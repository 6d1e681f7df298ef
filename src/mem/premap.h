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

#endif
