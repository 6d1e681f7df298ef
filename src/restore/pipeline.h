/*
 * The restore pipeline's own steps, between its files (restore.c, tree.c,
 * share.c, check.c, area.c, child.c, resume.c, abort.c, stall.c, zombies.c,
 * sweep.c). The kinds never include this: what they may call of the pipeline
 * is in ctx/restore_ctx.h; what cli/ calls is in restore/restore.h.
 */
#ifndef MEMDUMP_RESTORE_PIPELINE_H
#define MEMDUMP_RESTORE_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ctx/restore_ctx.h"

/* restore.c: the steps of one process's restore, which tree.c takes for each */
void rst_init(struct rst *r, const struct restore_opts *o);
int rst_check_loaded(struct rst *r);	/* r->ds loaded: every check before a start */
int rst_prepare(struct rst *r);
int rst_fork_target(struct rst *r);
/* every signal blocked (glibc's own two too: raw rt_sigprocmask), and back */
void rst_block_signals(uint64_t *old);
void rst_unblock_signals(const uint64_t *old);
int rst_load(struct rst *r, const struct restore_opts *o, bool defer_sums, bool enter);
/* rst_load(..., enter) with ds loaded and verified already: r borrows it (--copies) */
int rst_load_lent(struct rst *r, const struct restore_opts *o, const struct dumpset *ds,
		  bool own_checked);
int rst_restore_one(struct rst *r);	/* one process, r loaded */

/* fanout.c: restore --copies N */
int fanout_run(const struct restore_opts *o);
int fanout_fork(struct rst *r);		/* the copy, in a PID namespace of its own */
int fanout_disarm(struct rst *r);	/* before its commit point: its init outlives memdump */
void fanout_in_copy(void);		/* in a copy, first: its parent the init */
int rst_fire_setup_ns(const struct rst *r);	/* the hooks of its namespaces, parked */
int rst_wait_parked(struct rst *r);
int rst_wait_zombie_gone(pid_t id);	/* check.c: 0 free, 1 a live process has it */

/* stall.c: what a restored process has done so far, as its area tells */
struct rst_progress {
	unsigned int stage, prepped, read, creds, parked;
	unsigned long pages;
};
long rst_stall_limit_ms(void);
void rst_progress_take(const struct rst *r, struct rst_progress *p);
bool rst_progress_same(const struct rst_progress *x, const struct rst_progress *y);
int  rst_stall_fail(const struct rst *r, const struct rst_progress *p, long ms);
void rst_kill(struct rst *r);
int rst_area_error(const struct rst *r);
void rst_report(struct rst *r, uint64_t t0, uint64_t t1, uint64_t t2);
int rst_write_pidfile(const char *pidfile, pid_t pid);
int rst_detached(struct rst *r);
int rst_wait_restored(pid_t pid);
void rst_free(struct rst *r);

/*
 * tree.c: a dumped tree's other processes (DIR/proc-PID), loaded and checked;
 * restored with the root; in each forked process, its group then its children.
 */
int tree_load(struct rst *root);
int restore_tree(struct rst *root);
void tree_free_members(struct rst *r);
struct sess_plan *tree_plan(struct rst *r);
int tree_node(struct rst *r);
/*
 * treefork.c: in each forked process of a tree, still memdump's code: its
 * session and group, then its children (and the helpers of its sessions and
 * groups, task/sessions.c), each subtree whole before the next.
 */
void tree_fork_children(struct rst *r);
/*
 * share.c: the fd table and fs a process shares with its parent (ids-PID.img),
 * loaded after tree_load(); its clone flags; in the forked processes, the
 * owner of a shared fd table and its followers wait for each other.
 */
int share_load(struct rst *root);
void share_free(struct rst *root);
unsigned long share_clone_flags(const struct rst *m);
size_t share_followers(struct rst *owner, struct rst **g, size_t max);
void share_follower_wait(struct rst *m);
void share_owner_wait(struct rst *owner, struct rst *const *g, size_t n);
void share_owner_done(struct rst *const *g, size_t n);
/* Its listeners listened to again (sk_cred_remake_tree): tree_wait_listened() goes on. */
void share_listened(struct rst *r);
void rst_close_shares(struct rst *r);
/* Close every fd prepared for the target (after the fork, or on failure). */
void rst_close_prepared(struct rst *r);

/* check.c */
int check_images(struct rst *r);
void ghost_sweep_end(struct rst *r);
int build_area(struct rst *r);

/* zombies.c: the zombie children pstree.img lists after the process */
int zombies_check(struct rst *r);
/* In the child, once in its session and group: 0, or -errno with why[] filled. */
int zombies_make_in_child(struct rst *r, char *why, size_t len);
/*
 * A zombie that leads a session with live members of the tree (SK_ZOMBIE):
 * in it, forked by its parent and its members forked, end as it ended
 * (never returns); in the parent, its exit and status checked, not reaped.
 */
void zombie_leader_exit(const struct rst *r, pid_t host) __attribute__((noreturn));
int zombie_leader_wait(const struct rst *r, pid_t z, pid_t host, char *why, size_t len);

/* child.c */
void __attribute__((noreturn)) child_main(struct rst *r);
/* restore.c: fork with this PID (clone3 set_tid); 0 in the child, -1 and errno */
pid_t rst_fork_pid(pid_t pid);
/* The same in a PID namespace (ns_pid there too, 0: none), with clone flags (CLONE_NEWPID, CLONE_PARENT). */
pid_t rst_fork_pid_ns(pid_t pid, pid_t ns_pid, unsigned long flags);
/* Is the restored process not memdump's child (a tree's, or --restore-sibling)? */
bool rst_not_child(const struct rst *r);
/* The PID the process sees of itself in its tree's PID namespace, 0: none. */
pid_t rst_ns_pid(const PstreeEntry *pe);

/* resume.c: let the parked threads run into their dumped contexts */
int resume_threads(struct rst *r);
/* resume_threads() in three: trace the parked threads; let them go (the commit point);
 * run each to its dumped context, the lifeline closed and the area unmapped */
void resume_seize(struct rst *r);
/* after a SIGKILL: its threads memdump traces waited for (their leader is reaped after) */
void resume_reap_traced(struct rst *r);
void resume_go(struct rst *r);
int resume_finish(struct rst *r);

/*
 * abort.c: the commit point. Before it SIGINT, SIGTERM, SIGHUP fail the
 * restore (rst_interrupted(): -EINTR after fail(), or 0) and a dead memdump
 * takes the processes with it (their lifeline); after it they run on.
 */
void rst_catch_signals(void);
int rst_interrupted(void);
void rst_commit(struct rst *const *all, size_t n);	/* resume_go() each, seized */
/* golive.c: rst_commit(), then the TCP connections out of repair mode, unlocked, probed,
 * before any restored instruction runs; <0 after fail(): a lock left on (they run on) */
int rst_commit_live(struct rst *const *all, size_t n);
/* golive.c: the network-unlock hook (any connection), before pre-resume as CRIU's */
void rst_hook_network_unlock(struct rst *const *all, size_t n);
void rst_default_signals(void);		/* past the commit: memdump's own again, a signal
					 * that came meanwhile delivered */
void rst_release_signals(void);		/* the restore done: memdump's own again */
/* The area built: memdump's pidfd for the blob (r->lifeline), the blob's fault point */
int rst_arm_abort(struct rst *r);

#endif
