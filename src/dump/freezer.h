/*
 * The cgroup freezer (CRIU's --freeze-cgroup, RPC freeze_cgroup, which runc
 * sends): the tree is frozen by its cgroup while it is read and seized, so
 * that no process of it forks or exits in between; then thawed into the
 * ptrace stops its threads were asked for (freezer.c).
 */
#ifndef MEMDUMP_DUMP_FREEZER_H
#define MEMDUMP_DUMP_FREEZER_H

#include <stdbool.h>

struct dump_trace;
struct freezer {
	const char *path;	/* the cgroup directory, NULL: none asked for */
	struct dump_trace *trace;	/* told while the dump holds it frozen, or NULL */
	int dirfd;		/* open on it, -1 */
	bool v2;		/* cgroup.freeze, else v1's freezer.state */
	bool was_frozen;	/* frozen before the dump (a paused container) */
	bool frozen;		/* frozen now */
};

/* Open path (a v1 freezer or v2 cgroup directory holding pid) once, and freeze it; f->dirfd
 * is -1 before the first call. <0 after fail(). */
int freezer_freeze(struct freezer *f, const char *path, int pid);
/* Thaw what freezer_freeze() froze (a cgroup frozen before stays frozen until freezer_end). */
int freezer_thaw(struct freezer *f);
/* Before a left-running tree is released: a cgroup frozen before the dump frozen again. */
int freezer_refreeze(struct freezer *f);
/* The supervisor of a killed worker: thaw the cgroup the trace says the dump froze. */
void freezer_reclaim(struct dump_trace *t);
/* The dump is over: the cgroup as it was before (frozen again if it was), then closed. */
void freezer_end(struct freezer *f);

#endif
