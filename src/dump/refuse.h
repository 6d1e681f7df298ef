/*
 * Process state memdump cannot dump, found before the target is seized:
 * every such thing is collected into one list and the dump fails once,
 * naming all of them, with the target untouched.
 */
#ifndef MEMDUMP_REFUSE_H
#define MEMDUMP_REFUSE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "ctx/refusals.h"

struct dump_opts;
struct tracker;
struct proc_tree;
/* 0, or fail() once with everything the target holds that cannot be dumped
 * (the fds of memdump's own tracker t left out). */
int refuse_check(const struct dump_opts *o, const struct tracker *t);
/* A tree dump (o->tree): the same for every live process of it, in one line. */
int refuse_check_tree(const struct dump_opts *o);
/* The same for what can change until one process is frozen: its children (a tree's
 * dump reads its tree again instead, treedump.c); *children_only: children appeared and
 * nothing else stands in the way, so the tree can be dumped instead. The tree as read
 * into below (empty: pid is gone), for collect_zombies_in(); the caller frees it. */
int refuse_check_frozen(pid_t pid, struct proc_tree *below, bool *children_only);

#endif
