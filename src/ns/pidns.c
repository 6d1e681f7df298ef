/*
 * A PID namespace of a dumped tree: the tree's root is the init of a PID
 * namespace one level below memdump's (`unshare --pid --fork`, a
 * container's init), and the tree is every process of it. pstree.img keeps,
 * beside the PIDs memdump sees, what each process sees: its threads' IDs,
 * its group and session there (pstree_entry fields 50-52); restore makes the
 * namespace again with its init, and every process and thread with both IDs
 * (clone3 set_tid at both levels).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "ns/pidns.h"
#include "ctx/refusals.h"
#include "ctx/proc_tree.h"
#include "proc.h"

/* The values of a status line (NSpid, NSpgid, NSsid) of a thread: count, or <0. */
static int ns_values(pid_t pid, pid_t tid, const char *key, long v[4])
{
	char line[128], *p = line, *e;
	int n;

	if (proc_task_status_field(pid, tid, key, line, sizeof(line)))
		return -ESRCH;
	for (n = 0; n < 4; n++, p = e) {
		v[n] = strtol(p, &e, 10);
		if (e == p)
			break;
	}
	return n;
}

static ino_t ns_ino(pid_t pid, const char *kind)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, kind);
	return stat(path, &st) ? 0 : st.st_ino;
}

bool pidns_own(pid_t pid)
{
	ino_t theirs = ns_ino(pid, "pid"), mine = ns_ino(getpid(), "pid");

	return theirs && mine && theirs != mine;
}

pid_t pidns_inner(pid_t pid)
{
	long v[4];
	int n = ns_values(pid, pid, "NSpid", v);

	return n > 0 ? (pid_t)v[n - 1] : -ESRCH;
}

/* Processes in the namespace ino that the tree does not hold (setns, a ptraced outsider...). */
static int strangers(ino_t ino, const struct proc_tree *t, pid_t *first)
{
	DIR *dir = opendir("/proc");
	struct dirent *de;
	int n = 0;

	if (!dir)
		return 0;
	while ((de = readdir(dir))) {
		pid_t p = atoi(de->d_name);
		bool known = false;

		if (p <= 0 || ns_ino(p, "pid") != ino)
			continue;
		for (int i = 0; i < t->n && !known; i++)
			known = t->procs[i].pid == p;
		if (!known && !n++)
			*first = p;
	}
	closedir(dir);
	return n;
}

/* The process group of process pid of tree t, 0 if it is not in t. */
static pid_t pgid_of(const struct proc_tree *t, pid_t pid)
{
	for (int i = 0; i < t->n; i++)
		if (t->procs[i].pid == pid)
			return t->procs[i].pgid;
	return 0;
}

void pidns_refuse(const struct proc_tree *t, struct refusals *r)
{
	pid_t root = t->procs[0].pid, other = 0;
	ino_t ino = ns_ino(root, "pid");
	long v[4];
	int n = ns_values(root, root, "NSpid", v), k;

	if (n != 2 || v[1] != 1) {
		refuse_add(r, "process %d is in a PID namespace of which it is not the init "
			   "(NSpid %s)", root, n == 2 ? "ends in no 1" : "of more than two levels");
		return;
	}
	k = strangers(ino, t, &other);
	if (k)
		refuse_add(r, "%d process(es) of its PID namespace outside its tree (%d first)",
			   k, other);
	for (int i = 0; i < t->n; i++) {
		const struct tree_proc *p = &t->procs[i];

		if (tree_is_zombie(p) && p->pgid != p->pid && p->pgid != pgid_of(t, p->ppid) &&
		    (ns_values(p->pid, p->pid, "NSpgid", v) != 2 || !v[1]))
			refuse_add(r, "child process %d (%s) of %d, a zombie in a PID namespace in "
				   "process group %d, which is outside it", p->pid, p->comm, p->ppid,
				   p->pgid);
		else if (tree_is_zombie(p))
			continue;	/* made again by its parent there (restore/zombies.c) */
		else if (ns_ino(p->pid, "pid_for_children") != ino)
			refuse_add(r, "process %d (%s), whose children would be in another PID "
				   "namespace (unshare(CLONE_NEWPID))", p->pid, p->comm);
	}
}

int pidns_ids(pid_t pid, const pid_t *tids, int n, uint32_t *ns_tids, uint32_t *ns_pgid,
	      uint32_t *ns_sid)
{
	long v[4];

	for (int i = 0; i < n; i++) {
		if (ns_values(pid, tids[i], "NSpid", v) != 2)
			return -ESRCH;
		ns_tids[i] = (uint32_t)v[1];
	}
	if (ns_values(pid, pid, "NSpgid", v) != 2)
		return -ESRCH;
	*ns_pgid = (uint32_t)v[1];	/* 0: a group outside the namespace */
	if (ns_values(pid, pid, "NSsid", v) != 2)
		return -ESRCH;
	*ns_sid = (uint32_t)v[1];
	return 0;
}

/* N of "/proc/N (deleted)" or "/proc/N/FILE" (no " (deleted)" after FILE); 0: neither. */
static pid_t gone_proc_pid(const char *link)
{
	int pid = 0, end = 0;
	const char *rest;

	if (sscanf(link, "/proc/%d%n", &pid, &end) != 1 || pid <= 0 || link[6] < '1' ||
	    link[6] > '9')
		return 0;
	rest = link + end;
	if (!strcmp(rest, " (deleted)"))
		return pid;
	return rest[0] == '/' && rest[1] && !strstr(rest, " (deleted)") ? pid : 0;
}

/* Is the /proc holder's root shows the procfs of holder's PID namespace, on device dev? */
static bool root_proc_is_own(pid_t holder, dev_t dev)
{
	char path[96];
	struct proc_stat ps, mine;
	struct stat st;
	pid_t inner = pidns_inner(holder);

	snprintf(path, sizeof(path), "/proc/%d/root/proc", holder);
	if (inner <= 0 || stat(path, &st) || st.st_dev != dev || proc_read_stat(holder, &mine))
		return false;
	snprintf(path, sizeof(path), "/proc/%d/root/proc/%d/stat", holder, inner);
	return !proc_read_stat_path(path, &ps) && ps.start_time == mine.start_time;
}

pid_t pidns_gone_proc(pid_t holder, int fd, const char *link)
{
	char what[32];

	snprintf(what, sizeof(what), "fd/%d", fd);
	return pidns_gone_proc_at(holder, what, link);
}

pid_t pidns_gone_proc_at(pid_t holder, const char *what, const char *link)
{
	pid_t n = gone_proc_pid(link);
	char path[96];
	struct stat st;

	if (!n)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/%s", holder, what);
	if (stat(path, &st) || !root_proc_is_own(holder, st.st_dev))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/root/proc/%d", holder, n);
	return lstat(path, &st) && errno == ENOENT ? n : 0;
}
