/*
 * The process tree under a dump's target, for the refusal today and for the
 * tree freeze to come. Each pass walks /proc/P/task/T/children breadth first
 * from the root; a process forking or exiting meanwhile changes the next
 * pass, so passes repeat until two give the same PIDs in the same order.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "ctx/proc_tree.h"
#include "proc.h"

/* Field 52 of /proc/PID/stat: the wait status a zombie holds. */
static int exit_code_of(pid_t pid)
{
	char path[64], *buf = NULL, *p;
	int code = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (proc_read_file(path, &buf) < 0)
		return 0;
	p = strrchr(buf, ')');
	for (int f = 2; f < 52 && p; f++)
		p = strchr(p + 1, ' ');
	if (p)
		code = atoi(p + 1);
	free(buf);
	return code;
}

static int tree_add(struct proc_tree *t, pid_t pid, pid_t ppid)
{
	struct tree_proc *p;
	struct proc_stat st;
	pid_t *tids = NULL;
	int nt;

	for (int i = 0; i < t->n; i++)
		if (t->procs[i].pid == pid)
			return 0;	/* seen through another thread's list */
	if (t->n == TREE_MAX_PROCS)
		return -E2BIG;
	if (proc_read_stat(pid, &st))
		return 0;	/* gone since its parent listed it: the next pass tells */
	nt = proc_tasks(pid, &tids);
	free(tids);
	p = realloc(t->procs, (t->n + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	t->procs = p;
	p += t->n++;
	*p = (struct tree_proc){ .pid = pid, .ppid = ppid, .pgid = st.pgid, .sid = st.sid,
				 .state = st.state, .tracer = proc_tracer(pid),
				 .exit_signal = st.exit_signal, .nr_threads = nt,
				 .exit_code = st.state == 'Z' ? exit_code_of(pid) : 0 };
	snprintf(p->comm, sizeof(p->comm), "%s", st.comm);
	return 0;
}

/* The children every thread of pid lists, appended. */
static int add_children(struct proc_tree *t, pid_t pid)
{
	pid_t *tids = NULL;
	int nt = proc_tasks(pid, &tids), ret = 0;

	for (int i = 0; i < nt && !ret; i++) {
		char path[96], *buf = NULL, *p, *end;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", pid, tids[i]);
		if (proc_read_file(path, &buf) < 0)
			continue;	/* the thread exited */
		for (p = buf; !ret; p = end) {
			long child = strtol(p, &end, 10);

			if (end == p)
				break;
			ret = tree_add(t, (pid_t)child, pid);
		}
		free(buf);
	}
	free(tids);
	return ret;
}

static int tree_pass(pid_t root, struct proc_tree *t)
{
	int ret = tree_add(t, root, 0);

	if (!ret && !t->n)
		return -ESRCH;
	for (int i = 0; i < t->n && !ret; i++)
		if (!tree_is_zombie(&t->procs[i]))
			ret = add_children(t, t->procs[i].pid);
	return ret;
}

static bool same_pids(const struct proc_tree *a, const struct proc_tree *b)
{
	if (a->n != b->n)
		return false;
	for (int i = 0; i < a->n; i++)
		if (a->procs[i].pid != b->procs[i].pid || a->procs[i].ppid != b->procs[i].ppid)
			return false;
	return true;
}

int tree_collect(pid_t root, struct proc_tree *t)
{
	struct proc_tree prev = { 0 };
	int ret = 0;

	*t = (struct proc_tree){ 0 };
	for (int pass = 0; pass < TREE_MAX_PASSES && !ret; pass++) {
		ret = tree_pass(root, t);
		if (!ret && pass && same_pids(&prev, t))
			break;
		tree_free(&prev);
		prev = *t;
		*t = (struct proc_tree){ 0 };
		if (!ret && pass == TREE_MAX_PASSES - 1)
			ret = -EAGAIN;
	}
	tree_free(&prev);
	if (ret)
		tree_free(t);
	return ret;
}

void tree_free(struct proc_tree *t)
{
	free(t->procs);
	free(t->sk);
	*t = (struct proc_tree){ 0 };
}

bool tree_live_below(pid_t pid, struct proc_tree *t)
{
	if (tree_collect(pid, t)) {
		*t = (struct proc_tree){ 0 };
		return false;	/* the dump of pid alone says why */
	}
	for (int i = 1; i < t->n; i++)
		if (!tree_is_zombie(&t->procs[i]))
			return true;
	return false;
}

bool tree_same(const struct proc_tree *a, const struct proc_tree *b)
{
	if (!same_pids(a, b))
		return false;
	for (int i = 0; i < a->n; i++)
		if (tree_is_zombie(&a->procs[i]) != tree_is_zombie(&b->procs[i]))
			return false;
	return true;
}
