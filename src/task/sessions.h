/*
 * Sessions and process groups of a dumped tree: how a restore rebuilds them
 * (sessions.c). The same plan is made by the dump's dry run, which refuses
 * what it cannot rebuild, and by the restore, which follows it.
 */
#ifndef MEMDUMP_SESSIONS_H
#define MEMDUMP_SESSIONS_H

#include <stdbool.h>
#include <sys/types.h>

#include "pstree.pb-c.h"

/* In: a live process of the tree, its IDs as it sees them (0: outside its PID namespace). */
struct sess_proc {
	pid_t pid, pgid, sid;
	pid_t host, host_pgid, host_sid;	/* as memdump sees them */
	int parent;		/* its index; -1 for the root (index 0) */
};

enum sess_kind {
	SK_PROC,		/* a process of the tree */
	SK_SESSION,		/* a helper with the PID of a dead session leader: setsid */
	SK_CARRIER,		/* a helper forked by a live session leader, in its session */
	SK_GROUP,		/* a helper with the PID of a dead group leader: its group */
	SK_ZOMBIE,		/* a zombie session leader, forked by its parent: setsid, forks
				 * like SK_SESSION, then exits as it did and stays a zombie */
};

/* Out: what a process (node < nr_procs, same index) or a helper does once forked. */
struct sess_node {
	enum sess_kind kind;
	pid_t pid;		/* as seen where it is forked */
	pid_t host;		/* a helper: its PID as memdump sees it (0: any) */
	int forker;		/* the node that forks it; -1: the root */
	bool do_setsid;		/* setsid once forked */
	bool setsid_late;	/* setsid after forking its first nr_early kids, born in another */
	pid_t join;		/* setpgid(0, join) once forked (its own PID: a group of its own); 0: none */
	int group_helper;	/* >= 0: the SK_GROUP node it forks first, to make 'join' */
	int *kids;		/* what it forks, in order */
	int nr_kids, nr_early;
};

struct sess_plan {
	struct sess_node *n;
	int nr, nr_procs;
	pid_t outer_pgid;	/* the root's group when it is not its own (memdump's at restore), or 0 */
};

/*
 * The plan for procs[0..n) (the root first, every parent before its children);
 * zombies[0..nz): the tree's zombies that lead their own sessions
 * (sess_zombie_of): the one of a session with live members is the helper
 * that forks them (SK_ZOMBIE, forked by its parent, zombies[i].parent);
 * ns_init: the root is the init of its own PID namespace (a helper's children
 * are reparented to it). -errno with fail() naming what cannot be rebuilt.
 */
int sess_plan_make(const struct sess_proc *procs, int n, const struct sess_proc *zombies, int nz,
		   bool ns_init, struct sess_plan *plan);
void sess_plan_free(struct sess_plan *plan);
/* pstree entries (the root, then the others, zombies left out) as the plan takes them. */
int sess_procs_of(PstreeEntry *const *pe, int n, struct sess_proc *out);
/* Zombie z as the plan takes it when it leads its own session (1), its parent among pe[0..n); 0: not so. */
int sess_zombie_of(PstreeEntry *const *pe, int n, const PstreeEntry *z, struct sess_proc *out);

#endif
