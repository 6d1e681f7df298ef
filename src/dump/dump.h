/*
 * The dump pipeline: it turns a live process, or a tree of them, into an
 * image set (dump.c drives it: freeze, collect, write, release; treedump.c
 * for a tree). It calls the kinds of state (mem/, files/, evloop/, net/,
 * ns/, task/), infect/ (freeze, remote syscalls, the parasite), image/ and
 * lib; only cli/ calls it.
 */
#ifndef MEMDUMP_DUMP_H
#define MEMDUMP_DUMP_H

#include "ctx/dump_ctx.h"

/* reclaim.c: after the worker that kept t died, leave the target as it was. */
int dump_reclaim(struct dump_trace *t);
/* Is there anything in t for dump_reclaim() to undo? */
bool dump_trace_pending(const struct dump_trace *t);
/* Nothing to undo: the worker ended (what it left, it meant to), or it was undone. */
void dump_trace_clear(struct dump_trace *t);

/* dump.c: the pipeline; <0 after fail() */
int dump_run(const struct dump_opts *o);
/* Options that cannot go together: 0, or <0 after fail() (dump_run() asks too). */
int dump_check_opts(const struct dump_opts *o);

struct dump_ctx;
/* Process k of a tree (prev: the k before it, its parent among them at ppid): its ids. */
int share_ids(struct dump_ctx *d, const struct dump_ctx *const *prev, int k, pid_t ppid);
struct proc_tree;
struct refusals;
/* Before the seize: pid's tables shared with a process outside the dump (tree, or NULL). */
void share_refuse(pid_t pid, const struct proc_tree *tree, struct refusals *r);
/* A child of pid in tree that shares its memory (a vfork() not exec'd yet: pid cannot
 * be stopped until it is), or 0. */
pid_t share_vfork_child(pid_t pid, const struct proc_tree *tree);

/*
 * dump.c's steps, which the dump of a process tree (treedump.c) takes for
 * each of its processes; dump_run() dumps one process, or the tree below it.
 */
struct task_state;
void dump_catch_signals(void);
/* The dump directory (o->dir), opened: its fd, or with o->key the fd of its staging,
 * *crypt what seals it there (crypt.h); <0 after fail(). */
int dump_open_dir(const struct dump_opts *o, struct img_crypt **crypt);
bool dump_target_stopped(pid_t pid);
int dump_collect(struct dump_ctx *d, struct task_state *ts, const struct dump_opts *o);
int dump_write_images(struct dump_ctx *d, const struct task_state *ts, bool snapshot);
int dump_finish_images(struct dump_ctx *d, const struct dump_opts *o, bool leave_running,
		       bool *inventory);
void dump_undo(struct dump_ctx *d);
/* Before its pages are chosen: the previous images (relative to d->dir), and whether the
 * tracker the process holds dates from them (d->incremental). */
int dump_prepare_incremental(struct dump_ctx *d, const char *prev_dir);
/* The set's inventory.img written: the tracker's record names it (a pre-dump, --track-mem). */
int dump_track_commit(struct dump_ctx *d);
int dump_make_durable(struct dump_ctx *d, bool leave_running);
void dump_summary(const struct dump_ctx *d, uint64_t frozen_us, bool quiet);
void dump_ctx_free(struct dump_ctx *d);
struct proc_tree;
/* treedump.c: PID and the live processes below it (t, from tree_live_below()). */
int dump_tree(const struct dump_opts *o, struct proc_tree *t);

#endif
