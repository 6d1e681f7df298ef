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
 * CLONE_VM) are refused by name too.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/kcmp.h>

#include "common.h"
#include "log.h"
#include "dump/dump.h"

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
