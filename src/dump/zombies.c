/*
 * Zombie children of the target (issue 10's first tree piece). A zombie has
 * no memory, fds or threads left: its PID, its parent, group, session and
 * wait status are all there is. They go into pstree.img after the target's
 * entry and into core-ZPID.img (task_state TASK_DEAD, exit_code), as CRIU
 * writes them; restore/zombies.c makes them again.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "dump/dump.h"
#include "ctx/proc_tree.h"
#include "dump/images.h"
#include "dump/zombies.h"
#include "image/image.h"
#include "log.h"
#include "ns/pidns.h"
#include "proc.h"
#include "task/task.h"
#include "core.pb-c.h"
#include "pstree.pb-c.h"

#define TASK_DEAD 2	/* CRIU's task_state of a zombie */

/*
 * The restored zombie takes its own credentials (write_zombie_core), set by
 * root before it exits: true when it has more groups than a core holds.
 */
static bool groups_unsettable(pid_t z)
{
	struct creds c = { 0 };

	return !task_proc_creds(z, &c);
}

/*
 * How many members process group id (session: session id) has when they are
 * all zombies of root and its leader is gone; 0 otherwise.
 */
static int all_zombies_of(pid_t id, bool session, pid_t root)
{
	char path[32];
	struct dirent *e;
	bool ours = true;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d", id);
	if (!access(path, F_OK))
		return 0;		/* its leader is still there */
	d = opendir("/proc");
	if (!d)
		return 0;
	while (ours && (e = readdir(d))) {
		struct proc_stat st;
		pid_t p = atoi(e->d_name);

		if (p > 0 && !proc_read_stat(p, &st) && (session ? st.sid : st.pgid) == id) {
			ours = st.state == 'Z' && st.ppid == root;
			n++;
		}
	}
	closedir(d);
	return ours ? n : 0;
}

/*
 * A process group whose leader is gone and whose members are all zombies of
 * root (zdtm zombie01): the restore makes it again with a stand-in that has
 * the leader's PID (restore/zombies.c).
 */
static bool group_of_zombies(pid_t pgid, pid_t root)
{
	return all_zombies_of(pgid, false, root) > 0;
}

/*
 * A session whose leader is gone, whose one member is a zombie of root, the
 * init of a PID namespace of the tree, in the group the leader made:
 * restore makes it again with a stand-in leader that forks the zombie and
 * exits, so that the zombie falls to the init, as it had (zdtm
 * helper_zombie_child; restore/zombies.c).
 */
static bool session_of_zombies(const struct tree_proc *z, const struct tree_proc *root)
{
	return z->pgid == z->sid && pidns_own(root->pid) && pidns_inner(root->pid) == 1 &&
	       all_zombies_of(z->sid, true, root->pid) == 1;
}

/* The restored parent forks it into its own group, its own (pgid its PID), or one of zombies. */
static bool group_restorable(const struct tree_proc *z, const struct tree_proc *root)
{
	return z->pgid == root->pgid || z->pgid == z->pid || group_of_zombies(z->pgid, root->pid);
}

static bool live_in_tree(const struct proc_tree *tree, pid_t pid)
{
	for (int i = 0; tree && i < tree->n; i++)
		if (tree->procs[i].pid == pid)
			return !tree_is_zombie(&tree->procs[i]);
	return false;
}

/*
 * A zombie that leads its session (setsid, then exited): the first process of
 * that session outside the tree (it would hold the session's number at
 * restore), 0: none. Its members in the tree are forked by it again, which
 * the tree's plan checks (task/sessions.c, SK_ZOMBIE).
 */
static pid_t session_member_outside(const struct tree_proc *z, const struct proc_tree *tree)
{
	struct dirent *e;
	pid_t out = 0;
	DIR *d = opendir("/proc");

	if (!d)
		return z->pid;
	while (!out && (e = readdir(d))) {
		struct proc_stat st;
		pid_t p = atoi(e->d_name);

		if (p > 0 && p != z->pid && !proc_read_stat(p, &st) && st.sid == z->pid &&
		    !live_in_tree(tree, p))
			out = p;
	}
	closedir(d);
	return out;
}

bool zombie_refused(const struct tree_proc *z, const struct tree_proc *root,
		    const struct proc_tree *tree, char *why, size_t len)
{
	pid_t out = 0;

	if (z->ppid != root->pid)
		snprintf(why, len, "not a child of %d", root->pid);
	else if (z->sid == z->pid && z->sid != root->sid &&
		 (out = session_member_outside(z, tree)))
		snprintf(why, len, "leading session %d, whose member %d is not a live process of "
			 "the dump", z->sid, out);
	else if (z->sid != root->sid && z->sid != z->pid && !session_of_zombies(z, root))
		snprintf(why, len, "in session %d, not its parent's", z->sid);
	else if (!group_restorable(z, root))
		snprintf(why, len, "in process group %d, not its parent's, whose other members are "
			 "not zombies of the dump", z->pgid);
	else if (z->exit_signal != SIGCHLD)
		snprintf(why, len, "its exit signal is %d, not SIGCHLD", z->exit_signal);
	else if (WIFSIGNALED(z->exit_code) && WCOREDUMP(z->exit_code))
		snprintf(why, len, "it dumped core (signal %d)", WTERMSIG(z->exit_code));
	else if (!WIFEXITED(z->exit_code) && !WIFSIGNALED(z->exit_code))
		snprintf(why, len, "its wait status %#x is no exit", (unsigned)z->exit_code);
	else if (groups_unsettable(z->pid))
		snprintf(why, len, "with more than %d supplementary groups (Groups)",
			 CREDS_MAX_GROUPS);
	else
		return false;
	return true;
}

int collect_zombies(struct dump_ctx *d)
{
	struct proc_tree t;
	int ret = tree_collect(d->pid, &t);

	if (ret)
		return fail(ret, "cannot read the process tree of %d: %s", d->pid, strerror(-ret));
	ret = collect_zombies_in(d, &t);
	tree_free(&t);
	return ret;
}

int collect_zombies_in(struct dump_ctx *d, const struct proc_tree *t)
{
	int ret = 0;

	if (!t->n)
		return fail(-ESRCH, "cannot read the process tree of %d: %s", d->pid,
			    strerror(ESRCH));
	d->zombies = calloc(t->n, sizeof(*d->zombies));
	if (!d->zombies)
		return -ENOMEM;
	for (int i = 1; i < t->n; i++) {
		char why[128];

		if (d->tree && (t->procs[i].ppid != d->pid || !tree_is_zombie(&t->procs[i])))
			continue;	/* a tree dump: the live ones are its processes */
		if (!tree_is_zombie(&t->procs[i]) || zombie_refused(&t->procs[i], &t->procs[0],
								    d->tree, why, sizeof(why)))
			ret = fail(-EOPNOTSUPP, "child process %d (%s) of %d cannot be dumped "
				   "once frozen", t->procs[i].pid, t->procs[i].comm, d->pid);
		else
			d->zombies[d->nr_zombies++] = t->procs[i];
	}
	return ret;
}

/*
 * Its core: TASK_DEAD, the wait status and, as a live thread's, its
 * credentials; the securebits /proc does not show are its parent's (ts).
 */
static int write_zombie_core(struct dump_ctx *d, const struct task_state *ts,
			     const struct tree_proc *z)
{
	CoreEntry core = CORE_ENTRY__INIT;
	TaskCoreEntry tc = TASK_CORE_ENTRY__INIT;
	ThreadCoreEntry thc = THREAD_CORE_ENTRY__INIT;
	CredsEntry ce = CREDS_ENTRY__INIT;
	struct creds cr = { 0 };
	uint32_t caps[5][2];
	struct image *img;
	int ret;

	if (!task_proc_creds(z->pid, &cr))	/* refused at collect: not so many groups then */
		return fail(-EOPNOTSUPP, "zombie %d has more than %d supplementary groups", z->pid,
			    CREDS_MAX_GROUPS);
	cr.secbits = ts->creds.secbits;
	fill_creds(&ce, &cr, caps);
	thc.creds = &ce;
	core.thread_core = &thc;
	core.mtype = CORE_ENTRY__MARCH__X86_64;
	core.tc = &tc;
	tc.task_state = TASK_DEAD;
	tc.exit_code = (uint32_t)z->exit_code;
	tc.comm = (char *)z->comm;
	ret = img_create(&d->dir, IMG_CORE, (unsigned)z->pid, &img);
	if (ret)
		return ret;
	ret = img_write_msg(img, &core.base);
	if (ret) {
		img_abort(img);
		return ret;
	}
	return img_close(img);
}

static int zombie_ns_ids(PstreeEntry *pe, uint32_t *ns_tid)
{
	pid_t tid = (pid_t)pe->pid;
	int ret = pidns_ids(tid, &tid, 1, ns_tid, &pe->ns_pgid, &pe->ns_sid);

	if (ret)
		return fail(ret, "cannot read the PID namespace IDs of zombie %u", pe->pid);
	pe->n_ns_threads = 1;
	pe->ns_threads = ns_tid;
	pe->has_ns_pgid = pe->has_ns_sid = true;
	return 0;
}

int write_zombies(struct dump_ctx *d, const struct task_state *ts, struct image *pstree)
{
	int ret = 0;

	bool pid_ns = d->tree && pidns_own(d->pid);

	for (int i = 0; i < d->nr_zombies && !ret; i++) {
		const struct tree_proc *z = &d->zombies[i];
		PstreeEntry pe = PSTREE_ENTRY__INIT;
		uint32_t tid = (uint32_t)z->pid, ns_tid = 0;

		pe.pid = z->pid;
		pe.ppid = z->ppid;
		pe.pgid = z->pgid;
		pe.sid = z->sid;
		pe.n_threads = 1;
		pe.threads = &tid;
		if (pid_ns)	/* its IDs in the tree's PID namespace too, as a live one's */
			ret = zombie_ns_ids(&pe, &ns_tid);
		if (!ret)
			ret = img_write_msg(pstree, &pe.base);
		if (!ret)
			ret = write_zombie_core(d, ts, z);
	}
	return ret;
}
