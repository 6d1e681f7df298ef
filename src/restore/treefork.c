/*
 * A dumped tree forked, in each of its processes while still memdump's code
 * (child.c): its session and process group as the plan says
 * (task/sessions.c), then its children, each with its PID, one subtree after
 * the other (a child tells its parent once its whole subtree is forked), so
 * every group is made before its members join it.
 *
 * Beside the processes, helpers of the plan: a dead session leader (its PID,
 * setsid) or a carrier forked by the live leader forks, in that session, the
 * children of the PID namespace's init that were reparented to it, and exits
 * (they go back to the init); a dead group leader (its PID) makes its group
 * for its first member and exits once the member is in it. Each is reaped by
 * the process that forked it, before anything of the tree runs, but a session
 * leader that is a zombie of the tree: forked by its parent, it exits as it
 * did and stays that parent's zombie.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/sched.h>

#include "common.h"
#include "log.h"
#include "files/tty.h"
#include "restore/pipeline.h"
#include "restore/restore.h"
#include "task/sessions.h"
#include "task/task.h"

static void fork_kid(struct rst *r, int k, bool from_helper);

/*
 * A helper of node n: its PID where it is forked (a carrier's: any free one),
 * and in a PID namespace the one memdump saw too (a carrier's: any).
 */
static pid_t fork_helper(const struct sess_node *n)
{
	pid_t tids[2] = { n->pid, n->host };
	struct clone_args ca;

	memset(&ca, 0, sizeof(ca));
	ca.exit_signal = SIGCHLD;
	ca.set_tid = (uintptr_t)tids;
	ca.set_tid_size = n->host && n->host != n->pid ? 2 : 1;
	return (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
}

static void reap_helper(struct rst *r, pid_t h, pid_t pid, const char *what)
{
	int st = 0;

	while (waitpid(h, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		child_exit_fail(r, -ECHILD, "the helper %d of the %s failed (status %#x)", pid,
				what, (unsigned)st);
}

/* A session helper or carrier: forks its kids in its session, then exits (a zombie leader: as it did). */
static void run_helper(struct rst *r, const struct sess_node *n)
{
	if (n->kind != SK_CARRIER && setsid() < 0)
		child_exit_fail(r, -errno, "the helper %d cannot lead session %d again: %m",
				n->pid, n->pid);
	for (int i = 0; i < n->nr_kids; i++)
		fork_kid(r, n->kids[i], true);
	if (n->kind == SK_ZOMBIE)
		zombie_leader_exit(r, n->host);
	_exit(0);
}

static void fork_session_helper(struct rst *r, int k)
{
	const struct sess_node *n = &tree_plan(r)->n[k];
	pid_t h = fork_helper(n);

	if (h == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		run_helper(r, n);
	}
	if (h < 0)
		child_exit_fail(r, -errno, errno == EEXIST ? "PID %d of a session helper is in use" :
				"cannot create the helper %d of a session: %m", n->pid);
	if (n->kind == SK_ZOMBIE) {
		char why[160];
		int ret = zombie_leader_wait(r, h, n->host, why, sizeof(why));

		if (ret)
			child_exit_fail(r, ret, "%s", why);
		return;
	}
	reap_helper(r, h, n->pid, "session");
}

/* A process of the tree, with its PIDs; back once it and its subtree are forked. */
static void fork_proc(struct rst *r, struct rst *k, bool from_helper)
{
	unsigned long flags = share_clone_flags(k);	/* CLONE_FILES: one table, the parent closes */
	int p[2];
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC))
		child_exit_fail(r, -errno, "cannot create a pipe: %m");
	pid = rst_fork_pid_ns(k->pid, rst_ns_pid(k->ds.pstree), flags);
	if (pid == 0) {
		if (!(flags & CLONE_FILES))
			close(p[0]);
		k->tree_sync_fd = p[1];
		k->via_helper = from_helper ? getppid() : 0;
		child_main(k);
	}
	if (pid < 0)
		child_exit_fail(r, -errno, errno == EEXIST ? "PID %d is in use" :
				"cannot create process %d: %m", k->pid);
	if (!(flags & CLONE_FILES))
		close(p[1]);
	if (read(p[0], &c, 1) != 1)	/* it failed: its own area says why */
		pr_debug("process %d stopped before its subtree was forked\n", k->pid);
	close(p[0]);
	if (flags & CLONE_FILES)
		close(p[1]);
}

static void fork_kid(struct rst *r, int k, bool from_helper)
{
	if (k < tree_plan(r)->nr_procs)
		fork_proc(r, tree_proc(r, (size_t)k), from_helper);
	else
		fork_session_helper(r, k);
}

/* The stand-in leader of the group r joins (its PID), held until *hold is closed. */
static pid_t group_helper(struct rst *r, const struct sess_node *g, int *hold)
{
	int p[2];
	pid_t h;
	char c;

	if (pipe2(p, O_CLOEXEC))
		child_exit_fail(r, -errno, "cannot create a pipe: %m");
	h = fork_helper(g);
	if (h == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[1]);
		setpgid(0, 0);
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(p[0]);
	if (h < 0 || setpgid(h, h))	/* the group exists before r joins it */
		child_exit_fail(r, -errno, "cannot make process group %d again (its leader %d "
				"for the restore): %m", g->pid, g->pid);
	*hold = p[1];
	return h;
}

/* setpgid's argument: 0 for its own group, the root's now for the root's outside the tree. */
static pid_t join_target(struct rst *r, const struct sess_node *n)
{
	const struct sess_plan *pl = tree_plan(r);

	if (n->join == n->pid)
		return 0;
	if (pl->outer_pgid && n->join == pl->outer_pgid)
		return getpgid(pl->n[0].pid);	/* memdump's group, as the root kept it */
	return n->join;
}

/* Its session and group as planned: failing it fails the restore. */
static void apply_groups(struct rst *r, const struct sess_node *n)
{
	pid_t h = 0;
	int hold = -1;

	if (n->do_setsid && setsid() < 0)
		child_exit_fail(r, -errno, "process %d cannot lead its session again: %m", r->pid);
	if (n->group_helper >= 0)
		h = group_helper(r, &tree_plan(r)->n[n->group_helper], &hold);
	if (n->join && setpgid(0, join_target(r, n)))
		child_exit_fail(r, -errno, "process %d cannot join its process group %d: %m",
				r->pid, n->join);
	if (h > 0) {
		close(hold);
		reap_helper(r, h, n->join, "process group");
	}
}

static void tty_early(struct rst *r)
{
	char why[256];
	int ret = tty_ctty_early(r, why, sizeof(why));	/* its children are in its session */

	if (!ret)
		ret = tty_fg_early(r, why, sizeof(why));	/* in its group: the foreground */
	if (ret)
		child_exit_fail(r, ret, "%s", why);
}

/* Forked by a helper: back to the namespace's init once the helper exits, then dies with it. */
static void after_helper(struct rst *r)
{
	for (int i = 0; getppid() == r->via_helper; i++) {
		if (i == 30000)
			child_exit_fail(r, -ETIMEDOUT, "the helper %d that forked process %d did "
					"not exit", r->via_helper, r->pid);
		usleep(1000);
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != 1)
		child_exit_fail(r, -ECHILD, "process %d went to %d, not its PID namespace's init, "
				"when its helper exited", r->pid, (int)getppid());
}

void tree_fork_children(struct rst *r)
{
	int k = tree_node(r);
	const struct sess_node *n = &tree_plan(r)->n[k];
	char c = 1;

	pr_debug("process %d: node %d, %d kids (%d early)%s%s join %d\n", r->pid, k, n->nr_kids,
		 n->nr_early, n->do_setsid ? ", setsid" : "", n->setsid_late ? ", setsid late" : "",
		 n->join);
	if (k)
		apply_groups(r, n);
	else
		attrs_apply_groups(r);	/* the root: memdump's session unless its own */
	if (!n->setsid_late)
		tty_early(r);
	for (int i = 0; i < n->nr_early; i++)
		fork_kid(r, n->kids[i], false);
	if (n->setsid_late) {
		if (setsid() < 0)
			child_exit_fail(r, -errno, "process %d cannot lead its session again "
					"after forking its children: %m", r->pid);
		tty_early(r);
	}
	for (int i = n->nr_early; i < n->nr_kids; i++)
		fork_kid(r, n->kids[i], false);
	if (r->tree_sync_fd >= 0) {
		if (write(r->tree_sync_fd, &c, 1) != 1)
			child_exit_fail(r, -errno, "cannot tell its parent it is forked: %m");
		if (!(r->share_flags & CLONE_FILES))	/* one table: its parent closes it */
			close(r->tree_sync_fd);
		r->tree_sync_fd = -1;
	}
	if (r->via_helper)
		after_helper(r);
}
