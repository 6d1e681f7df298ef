/*
 * Tables a process of a tree shares with its parent (dump/share.c found
 * them; ids-PID.img numbers them as CRIU's: the same files_id, the same fd
 * table; the same fs_id, the same root, cwd and umask). Its parent forks it
 * with CLONE_FILES / CLONE_FS, so the restored processes share them again.
 *
 * A shared fd table is filled once, by the first process of it (its owner):
 * the others' images hold no fds. Each follower, forked with the owner's
 * table full of memdump's prepared fds, forks its own children (which need
 * those), then says it is ready and waits; the owner, once every follower
 * of its table is ready, installs the fds and every follower's restorer fds
 * above them (each blob closes its own), then lets them go on.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "restore/restore.h"
#include "restore/pipeline.h"

/* In memory every process of the tree shares (MAP_SHARED, mapped before the forks). */
struct share_sync {
	int ready;		/* a follower: its children forked, its table may change */
	int installed;		/* its owner: the fds and its restorer fds are in place */
	int listened;		/* its listeners listened to again (tree_wait_listened) */
};

static uint32_t files_id(const struct rst *r)
{
	return r->ds.ids ? r->ds.ids->files_id : 0;
}

static uint32_t fs_id(const struct rst *r)
{
	return r->ds.ids ? r->ds.ids->fs_id : 0;
}

/*
 * Are the ids of m and its parent per process? Sets of memdump before this
 * wrote 1 for every id of every process; vm_id is never shared in a set
 * (dump/share.c refuses it), so the same vm_id says the ids mean nothing.
 */
static bool per_process(const struct rst *m, const struct rst *p)
{
	return m->ds.ids && p->ds.ids && m->ds.ids->vm_id != p->ds.ids->vm_id;
}

/* m's ids: its parent's tables, or its own (an earlier process's is not restorable). */
static int load_one(struct rst *m, struct rst *const *prev, size_t n)
{
	const struct rst *p = m->tree_parent;

	if (!per_process(m, p))
		return 0;	/* an older set: nothing shared */

	if (files_id(m) && files_id(m) == files_id(p)) {
		m->share_flags |= CLONE_FILES;
		m->fdt_owner = p->fdt_owner ? p->fdt_owner : (struct rst *)p;
		if (m->ds.nr_fds)
			return fail(-EIO, "image set proc-%d is corrupt: it shares the fd table of "
				    "process %d and lists fds of its own", m->pid, p->pid);
	}
	if (fs_id(m) && fs_id(m) == fs_id(p))
		m->share_flags |= CLONE_FS;
	for (size_t i = 0; i < n; i++) {
		if (prev[i] == p || !per_process(m, prev[i]))
			continue;
		if ((files_id(m) && files_id(m) == files_id(prev[i]) && !(m->share_flags & CLONE_FILES)) ||
		    (fs_id(m) && fs_id(m) == fs_id(prev[i]) && !(m->share_flags & CLONE_FS)))
			return fail(-EIO, "ids-%d.img is corrupt: process %d shares a table with "
				    "process %d but not with its parent %d", m->pid, m->pid,
				    prev[i]->pid, p->pid);
	}
	return 0;
}

int share_load(struct rst *root)
{
	size_t n = tree_size(root);
	struct rst *all[n + 1];
	struct share_sync *s;
	int ret = 0;

	all[0] = root;
	for (size_t i = 0; i < n; i++)
		all[i + 1] = tree_member(root, i);
	for (size_t i = 1; i <= n && !ret; i++)
		ret = load_one(all[i], all, i);
	if (ret)
		return ret;
	s = mmap(NULL, (n + 1) * sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		 -1, 0);
	if (s == MAP_FAILED)
		return fail(-errno, "cannot map the tree's table sync: %s", strerror(errno));
	for (size_t i = 0; i <= n; i++)
		all[i]->share_sync = &s[i];
	return 0;
}

void share_free(struct rst *root)
{
	if (root->share_sync && root->tree)
		munmap(root->share_sync, (tree_size(root) + 1) * sizeof(*root->share_sync));
	root->share_sync = NULL;
}

unsigned long share_clone_flags(const struct rst *m)
{
	return m->share_flags;
}

/* The followers of owner's fd table, in tree order, into g (up to max); how many. */
size_t share_followers(struct rst *owner, struct rst **g, size_t max)
{
	struct rst *root = owner;
	size_t k = 0;

	while (root->tree_parent)
		root = root->tree_parent;
	for (size_t i = 0; root->tree && i < tree_size(root); i++) {
		struct rst *m = tree_member(root, i);

		if (m->fdt_owner == owner && k < max)
			g[k] = m;
		k += m->fdt_owner == owner;
	}
	return k;
}

/* Wait until *w is set, or until the process whose area is a failed (then fail too);
 * why: what other is to self, for the message. */
static void wait_flag(struct rst *self, int *w, const struct rst *other, const char *why)
{
	for (int i = 0; i < 30000; i++) {
		if (__atomic_load_n(w, __ATOMIC_SEQ_CST))
			return;
		if (__atomic_load_n(&other->a->stage, __ATOMIC_SEQ_CST) == RST_STAGE_FAILED)
			child_exit_fail(self, -ECHILD, "process %d, %s, failed", other->pid, why);
		usleep(1000);
	}
	child_exit_fail(self, -ETIMEDOUT, "process %d, %s, did not get ready within 30 s",
			other->pid, why);
}

void share_follower_wait(struct rst *m)
{
	__atomic_store_n(&m->share_sync->ready, 1, __ATOMIC_SEQ_CST);
	wait_flag(m, &m->share_sync->installed, m->fdt_owner, "which shares its fd table");
}

void share_owner_wait(struct rst *owner, struct rst *const *g, size_t n)
{
	for (size_t i = 0; i < n; i++)
		wait_flag(owner, &g[i]->share_sync->ready, g[i], "which shares its fd table");
}

void share_listened(struct rst *r)
{
	if (r->share_sync)
		__atomic_store_n(&r->share_sync->listened, 1, __ATOMIC_SEQ_CST);
}

void tree_wait_listened(struct rst *self, const struct rst *lis)
{
	wait_flag(self, &lis->share_sync->listened, lis, "whose listener it connects to");
}

void share_owner_done(struct rst *const *g, size_t n)
{
	for (size_t i = 0; i < n; i++)
		__atomic_store_n(&g[i]->share_sync->installed, 1, __ATOMIC_SEQ_CST);
}
