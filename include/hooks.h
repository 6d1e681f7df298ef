/*
 * Hook points of a dump and a restore, where a runtime or a script may act:
 * CRIU's action-script points (names as CRIU's, for CRTOOLS_SCRIPT_ACTION and
 * the RPC's NOTIFY messages). The pipelines call hook_fire() at each point
 * they reach; who listens (an RPC client, --action-script) is the caller's
 * business (src/cli/). A hook that fails returns <0 after fail(): the
 * pipeline aborts where it still can (see README, "Hooks").
 */
#ifndef MEMDUMP_HOOKS_H
#define MEMDUMP_HOOKS_H

#include <sys/types.h>

enum hook_point {
	HOOK_PRE_DUMP,		/* before the target is frozen */
	HOOK_NETWORK_LOCK,	/* --tcp-established: before the connections are locked */
	HOOK_POST_DUMP,		/* every image written, the target still frozen */
	HOOK_NETWORK_UNLOCK,	/* the connections unlocked (leave-running, failure, restore) */
	HOOK_PRE_RESTORE,	/* the set checked, nothing started */
	HOOK_SETUP_NS,		/* the process exists in its namespaces (not yet run) */
	HOOK_POST_SETUP_NS,	/* and its mounts are made: a runtime's prestart hooks */
	HOOK_POST_RESTORE,	/* the process rebuilt and parked, with its PID */
	HOOK_PRE_RESUME,	/* just before its threads run on */
	HOOK_POST_RESUME,	/* it runs */
	HOOK_ORPHAN_PTS_MASTER,	/* a new pty master for a slave whose master was outside (an fd) */
	HOOK_STATUS_READY,	/* a lazy dump's page server listens (CRIU's status-ready) */
	HOOK_NR
};

struct hooks {
	/* pid: the dumped or restored process; <0 after fail() to abort */
	int (*fire)(void *arg, enum hook_point p, pid_t pid);
	/* the same, handing the listener fd (a copy: the caller keeps its own); NULL: no one
	 * can take an fd (CRIU gives the orphan-pts-master to an RPC client only) */
	int (*give_fd)(void *arg, enum hook_point p, pid_t pid, int fd);
	void *arg;
};

/* CRIU's name of the point: "pre-dump", "post-restore", ... */
const char *hook_name(enum hook_point p);

/* No hooks (h NULL or without fire): 0. */
int hook_fire(const struct hooks *h, enum hook_point p, pid_t pid);
/* Can h take an fd (hook_give_fd)? */
int hook_takes_fd(const struct hooks *h);
/* Hand fd to whoever listens at p; -ENOTSUP after fail() when no one can take it. */
int hook_give_fd(const struct hooks *h, enum hook_point p, pid_t pid, int fd);
/* A point whose hook cannot stop anything any more: a failure is a warning. */
void hook_fire_late(const struct hooks *h, enum hook_point p, pid_t pid);

#endif
