#ifndef MEMDUMP_ZOMBIES_H
#define MEMDUMP_ZOMBIES_H

#include <stdbool.h>
#include <stddef.h>

#include "ctx/proc_tree.h"

/*
 * zombies.c: zombie children of the target, dumped as CRIU does (a pstree
 * entry and a core with TASK_DEAD and the exit code) and recreated by the
 * restored process, which never reaps them.
 */
struct dump_ctx;
struct image;
struct refusals;
struct task_state;
/*
 * Why zombie z, a child of root, cannot be recreated, into why; false: it can.
 * tree: the tree dumped (NULL: one process).
 */
bool zombie_refused(const struct tree_proc *z, const struct tree_proc *root,
		    const struct proc_tree *tree, char *why, size_t len);
/* Once frozen: the target's zombie children into d. */
int collect_zombies(struct dump_ctx *d);
/* The same from its tree as read once frozen (refuse_check_frozen()): no second read. */
int collect_zombies_in(struct dump_ctx *d, const struct proc_tree *t);
/* Their pstree entries into the open pstree.img, and their core images with their
 * credentials (the securebits /proc does not show: the parent's, ts). */
int write_zombies(struct dump_ctx *d, const struct task_state *ts, struct image *pstree);

#endif
