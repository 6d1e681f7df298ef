/*
 * Tables two processes of a dumped tree share: one fd table (CLONE_FILES),
 * one fs information, i.e. root, cwd and umask (CLONE_FS), found with kcmp
 * and numbered as CRIU's ids-PID.img does (the same id: the same table).
 * Restore forks a process with its parent's table (CLONE_FILES, CLONE_FS),
 * so what it can give is a table shared with the parent, through any number
 * of generations; a table shared with another process of the tree but not
 * with the parent (two siblings, their parent unshared since) is refused by
 * name. Shared memory between processes (CLONE_VM without CLONE_THREAD) and
 * shared signal handlers (CLONE_SIGHAND, which the kernel gives only with
 * CLONE_VM) are refused by name too, and so is any of the four shared with a
 * process outside the dump (a restore would give the process a table of its
 * own), looked for before the target is seized.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/kcmp.h>

#include "common.h"
#include "log.h"
#include "dump/dump.h"
#include "dump/refuse.h"
#include "ctx/proc_tree.h"
#include "proc.h"
#include "mem/pages.h"

static bool same(pid_t a, pid_t b, int type)
{
	return syscall(SYS_kcmp, a, b, type, 0, 0) == 0;
}

/* The first earlier process with the same table as d, or -1. */
static int first_sharer(const struct dump_ctx *d, const struct dump_ctx *const *prev, int k,
			int type)
{
	for (int j = 0; j < k; j++)
		if (same(prev[j]->pid, d->pid, type))
			return j;
	return -1;
}

static int refuse_vm(const struct dump_ctx *d, const struct dump_ctx *const *prev, int k)
{
	int j = first_sharer(d, prev, k, KCMP_VM);

	if (j >= 0)
		return fail(-EOPNOTSUPP, "processes %d and %d of the tree share their memory "
			    "(CLONE_VM without CLONE_THREAD), which restore does not recreate",
			    prev[j]->pid, d->pid);
	j = first_sharer(d, prev, k, KCMP_SIGHAND);
	if (j >= 0)	/* only with CLONE_VM: caught above, unless the kernel changes */
		return fail(-EOPNOTSUPP, "processes %d and %d of the tree share their signal "
			    "handlers (CLONE_SIGHAND), which restore does not recreate",
			    prev[j]->pid, d->pid);
	return 0;
}

/* The id of d's table of this type: an earlier sharer's (its parent's), or a new one. */
static int table_id(const struct dump_ctx *d, const struct dump_ctx *const *prev, int k,
		    pid_t ppid, int type, uint32_t *id, bool *shared)
{
	static const char *const what[] = { [KCMP_FILES] = "fd table (CLONE_FILES)",
					    [KCMP_FS] = "fs information (CLONE_FS)" };
	int j = first_sharer(d, prev, k, type);
	int p = -1;

	*shared = j >= 0;
	if (j < 0) {
		*id = (uint32_t)k + 1;
		return 0;
	}
	for (int i = 0; i < k; i++)
		if (prev[i]->pid == ppid)
			p = i;
	if (p < 0 || !same(prev[p]->pid, d->pid, type))
		return fail(-EOPNOTSUPP, "processes %d and %d of the tree share their %s but %d "
			    "does not share it with its parent %d: restore gives a process only "
			    "its parent's", prev[j]->pid, d->pid, what[type], d->pid, ppid);
	*id = type == KCMP_FILES ? prev[p]->kobj.files : prev[p]->kobj.fs;
	return 0;
}

int share_ids(struct dump_ctx *d, const struct dump_ctx *const *prev, int k, pid_t ppid)
{
	bool fs_shared;
	int ret = refuse_vm(d, prev, k);

	d->kobj.self = (uint32_t)k + 1;
	if (!ret)
		ret = table_id(d, prev, k, ppid, KCMP_FILES, &d->kobj.files, &d->kobj.files_shared);
	if (!ret)
		ret = table_id(d, prev, k, ppid, KCMP_FS, &d->kobj.fs, &fs_shared);
	return ret;
}

static bool in_tree(const struct proc_tree *tree, pid_t p)
{
	for (int i = 0; tree && i < tree->n; i++)
		if (tree->procs[i].pid == p)
			return true;
	return false;
}

/* The first table of pid that process p shares, or NULL. */
static const char *shared_with(pid_t pid, pid_t p)
{
	static const struct { int type; const char *what; } tables[] = {
		{ KCMP_VM, "memory (CLONE_VM)" }, { KCMP_FILES, "fd table (CLONE_FILES)" },
		{ KCMP_FS, "fs information (CLONE_FS)" },
		{ KCMP_SIGHAND, "signal handlers (CLONE_SIGHAND)" } };

	for (size_t i = 0; i < ARRAY_SIZE(tables); i++)
		if (same(pid, p, tables[i].type))
			return tables[i].what;
	return NULL;
}

/* The same checks as share_ids(), from /proc, for pid of the tree: before anything is seized. */
static void refuse_in_tree(pid_t pid, const struct proc_tree *tree, struct refusals *r)
{
	pid_t ppid = 0;
	int k = 0;

	while (k < tree->n && tree->procs[k].pid != pid)
		k++;
	if (k < tree->n)
		ppid = tree->procs[k].ppid;
	for (int j = 0; j < k; j++) {
		pid_t o = tree->procs[j].pid;

		if (tree_is_zombie(&tree->procs[j]))
			continue;
		if (same(o, pid, KCMP_VM) || same(o, pid, KCMP_SIGHAND))
			refuse_add(r, "its memory and signal handlers (CLONE_VM without "
				   "CLONE_THREAD), shared with process %d of the tree, which restore "
				   "does not recreate", o);
		else if (same(o, pid, KCMP_FILES) && !same(ppid, pid, KCMP_FILES))
			refuse_add(r, "its fd table (CLONE_FILES), shared with process %d of the "
				   "tree but not with its parent %d: restore gives a process only its "
				   "parent's", o, ppid);
		else if (same(o, pid, KCMP_FS) && !same(ppid, pid, KCMP_FS))
			refuse_add(r, "its fs information (CLONE_FS), shared with process %d of the "
				   "tree but not with its parent %d: restore gives a process only its "
				   "parent's", o, ppid);
		else
			continue;
		return;	/* one is enough */
	}
}

pid_t share_vfork_child(pid_t pid, const struct proc_tree *tree)
{
	for (int i = 0; tree && i < tree->n; i++)
		if (tree->procs[i].ppid == pid && !tree_is_zombie(&tree->procs[i]) &&
		    same(pid, tree->procs[i].pid, KCMP_VM))
			return tree->procs[i].pid;
	return 0;
}

void share_refuse(pid_t pid, const struct proc_tree *tree, struct refusals *r)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (tree)
		refuse_in_tree(pid, tree, r);
	while (d && (e = readdir(d)) && n < 3) {
		pid_t p = atoi(e->d_name);
		const char *what;
		char comm[32] = "?";

		if (p <= 0 || p == pid || p == getpid() || in_tree(tree, p))
			continue;
		what = shared_with(pid, p);
		if (!what)
			continue;
		proc_comm(p, comm, sizeof(comm));
		refuse_add(r, "its %s, shared with process %d (%s) outside the dump, which restore "
			   "would not share", what, p, comm);
		n++;
	}
	if (d)
		closedir(d);
}
