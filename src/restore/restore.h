/*
 * The restore pipeline: it recreates the processes of an image set
 * (restore.c drives it: check, prepare, fork the tree, resume; tree.c for
 * a tree, child.c in each forked process). It calls the kinds of state
 * (mem/, files/, evloop/, net/, ns/, task/), image/ and lib; never dump/
 * or infect/; only cli/ calls it.
 */
#ifndef MEMDUMP_RESTORE_H
#define MEMDUMP_RESTORE_H

#include "ctx/restore_ctx.h"

/* restore.c: the pipeline; the restored process's exit status, or -d: 0; <0 after fail() */
int restore_run(const struct restore_opts *o);
/* Load the set and make every check restore_run() makes, start nothing (the fuzzer's). */
int restore_check(const struct restore_opts *o);

#endif
