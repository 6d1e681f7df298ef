/*
 * The restore of a dumped process tree (dump/treedump.c wrote it): the
 * root's set is DIR, each other process's set DIR/proc-PID, listed by the
 * root's inventory and pstree.img.
 *
 *   1. Every set is loaded and checked as the root's is, and its place in
 *      the tree (its parent is the root or a process listed before it);
 *      fdinfo-1.img says which fds take an earlier process's description
 *      (share_pid, share_fd).
 *   2. Every process is prepared in memdump, in tree order: its files (a
 *      shared description is a copy of its first holder's fd; a pipe met in
 *      several processes is created once, its data put back once, and so
 *      is a shared memory object several processes map; a UNIX socket
 *      connected to another process's is made with it, sk_unix_tree.c), its
 *      restorer area (each at an address free in memdump beside the others).
 *   3. memdump forks the root; each process, still memdump's code, takes its
 *      session and group, then forks its children with their PIDs (waiting
 *      for each to take its own, which a later sibling may join), then goes
 *      on as one process's restore does (child.c).
 *   4. Once every process is parked and its pages checked, all are resumed;
 *      a failure anywhere kills every one of them before any has run.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "fault.h"
#include "log.h"
#include "restore/restore.h"
#include "mem/lazy.h"
#include "evloop/evloop.h"
#include "files/files.h"
#include "files/ghost.h"
#include "files/tty.h"
#include "mem/pagesum.h"
#include "mem/premap.h"
#include "net/sock.h"
#include "ns/cgroups.h"
#include "ns/mntns.h"
#include "ns/netns.h"
#include "ns/ns.h"
#include "restore/pipeline.h"
#include "task/sessions.h"
#include "task/task.h"
#include "inet/sk_inet.h"
#include "unix/sk_unix.h"

struct rst_pipe {
	uint32_t id;		/* pipe_id: the dumped pipe's inode */
	int fd[2];		/* memdump's copies of both ends */
};

/* A shared memory object (MAP_SHARED|MAP_ANONYMOUS memory, a memfd) of several processes. */
struct rst_shm {
	uint64_t shmid;		/* its inode at the dump */
	int fd;			/* memdump's copy */
	bool given;		/* its own description went to a process's fd */
};

/* One end of a UNIX socketpair across two processes, for the one holding it. */
struct rst_sock {
	uint32_t ino;		/* the dumped socket this fd is */
	int fd;
};

struct rst_tree {
	struct rst *m;		/* the processes but the root, in pstree order */
	size_t n;
	struct rst_sock *socks;
	size_t nr_socks;
	uint32_t *fifos;	/* FIFOs whose data an earlier process put back */
	size_t nr_fifos;
	struct rst_ghost {	/* deleted files recreated for an earlier process */
		uint32_t dev;
		uint64_t ino;
		const char *path;	/* its rghost's, until the tree's ghosts are deleted */
	} *ghosts;
	size_t nr_ghosts;
	struct rst_pipe *pipes;
	size_t nr_pipes;
	struct rst_shm *shms;
	size_t nr_shms;
	struct rst_pty {	/* pty pairs made for a process: their masters, by index */
		uint32_t idx;
		int fd;
	} *ptys;
	size_t nr_ptys;
	struct sess_plan plan;	/* who forks whom, and their sessions and groups */
};

struct rst *tree_member(struct rst *root, size_t i)
{
	return &root->tree->m[i];
}

size_t tree_size(const struct rst *root)
{
	return root->tree ? root->tree->n : 0;
}

static struct rst *proc_of(struct rst *root, pid_t pid, size_t before)
{
	if (root->pid == pid)
		return root;
	for (size_t i = 0; i < before && i < root->tree->n; i++)
		if (root->tree->m[i].pid == pid)
			return &root->tree->m[i];
	return NULL;
}

static bool has_fd(const struct dumpset *ds, uint32_t fd)
{
	for (size_t i = 0; i < ds->nr_fds; i++)
		if (ds->fds[i]->fd == fd)
			return true;
	return false;
}

static int share_corrupt(const struct rst *m, const FdinfoEntry *e)
{
	return fail(-EIO, "image fdinfo-1.img of process %d is corrupt: fd %u shares with fd "
		    "%u of process %u, which the images do not hold", m->pid, e->fd, e->share_fd,
		    e->share_pid);
}

/* Member i's fds that take an earlier process's description (share_pid in fdinfo-1.img). */
static int load_shares(struct rst *root, size_t i)
{
	struct rst *m = &root->tree->m[i];
	FdinfoEntry **e = m->ds.fds;
	size_t n = m->ds.nr_fds;

	m->shares = calloc(n + 1, sizeof(*m->shares));
	if (!m->shares)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		struct rst *o;

		if (!e[k]->has_share_pid && !e[k]->has_share_fd)
			continue;
		o = proc_of(root, (pid_t)e[k]->share_pid, i);
		if (!e[k]->has_share_pid || !e[k]->has_share_fd || !o ||
		    !has_fd(&o->ds, e[k]->share_fd))
			return share_corrupt(m, e[k]);
		m->shares[m->nr_shares++] = (struct rst_share){ .fd = (int)e[k]->fd, .owner = o,
			.owner_fd = (int)e[k]->share_fd, .src = -1 };
	}
	return 0;
}

/* step (rst_check_loaded, rst_prepare) for m, in its mount namespace (its files as it sees them). */
static int in_mntns(struct rst *m, int (*step)(struct rst *))
{
	struct mnt_back b;
	int ret = mntns_member_enter(m, &b);

	if (!ret)
		ret = step(m);
	mntns_member_leave(&b);
	return ret;
}

/* Member i: its set, its checks, its parent already in the tree. */
static int load_member(struct rst *root, size_t i)
{
	struct rst *m = &root->tree->m[i];
	const PstreeEntry *pe = root->ds.members[i];
	int ret;

	rst_init(m, root->o);
	m->tree = root->tree;
	m->tree_cgroup = root->leader->tc->cgroup;	/* --cgroup-root places it below that */
	m->mnt_stage = root->mnt_stage;		/* its files are under the tree's root */
	m->mnt_devs = root->mnt_devs;
	m->nr_mnt_devs = root->nr_mnt_devs;
	/* migrate --lazy-pages of a tree: its pages-1.img comes over a channel of its own */
	ret = root->o->lazy && lazy_remote_member_fd((pid_t)pe->pid) >= 0 ?
	      dumpset_load_member_remote(&root->ds, (pid_t)pe->pid, &m->ds) :
	      dumpset_load_member(&root->ds, (pid_t)pe->pid, &m->ds);
	if (ret)
		return ret;
	m->pid = dumpset_pid(&m->ds);
	m->tree_parent = proc_of(root, (pid_t)pe->ppid, i);
	if (!m->tree_parent || m->ds.pstree->ppid != pe->ppid)
		return fail(-EIO, "pstree.img is corrupt: the parent %u of process %u is not "
			    "listed before it", pe->ppid, pe->pid);
	ret = mntns_member_load(root, m);	/* a mount namespace other than the root's */
	if (!ret)
		ret = tparent_resolve(&m->ds, &m->tree_parent->ds);	/* pages shared with it */
	if (!ret)
		ret = in_mntns(m, rst_check_loaded);
	if (ret)
		return ret;
	if (m->ds.pstree->pgid != pe->pgid || m->ds.pstree->sid != pe->sid)
		return fail(-EIO, "image set proc-%u is corrupt: its group or session is not "
			    "the one pstree.img lists", pe->pid);
	return load_shares(root, i);
}

/* The zombies of r's set (r->ds.procs[1..]) that lead their own sessions, added to z. */
static void zombie_leaders(const struct rst *r, PstreeEntry *const *pe, int n, struct sess_proc *z,
			   int *nz)
{
	for (size_t i = 1; i < r->ds.nr_procs; i++)
		*nz += sess_zombie_of(pe, n, r->ds.procs[i], &z[*nz]);
}

static size_t tree_zombies(const struct rst *root)
{
	size_t nr = root->ds.nr_procs;

	for (size_t i = 0; i < root->tree->n; i++)
		nr += root->tree->m[i].ds.nr_procs;
	return nr;
}

/* The sessions and groups of the tree, as the dump's dry run planned them too (sessions.c). */
static int plan_sessions(struct rst *root)
{
	size_t n = root->tree->n + 1;
	PstreeEntry **pe = calloc(n, sizeof(*pe));
	struct sess_proc *sp = calloc(n, sizeof(*sp));
	struct sess_proc *zs = calloc(tree_zombies(root), sizeof(*zs));
	int ret = pe && sp && zs ? 0 : -ENOMEM, nz = 0;

	if (!ret) {
		pe[0] = root->ds.pstree;
		for (size_t i = 1; i < n; i++)
			pe[i] = root->ds.members[i - 1];
		ret = sess_procs_of(pe, (int)n, sp);
	}
	if (!ret) {
		zombie_leaders(root, pe, (int)n, zs, &nz);
		for (size_t i = 0; i < root->tree->n; i++)
			zombie_leaders(&root->tree->m[i], pe, (int)n, zs, &nz);
		ret = sess_plan_make(sp, (int)n, zs, nz, rst_ns_pid(root->ds.pstree) == 1,
				     &root->tree->plan);
	}
	if (ret)
		fail_context("the tree's sessions and groups: ");
	free(pe);
	free(sp);
	free(zs);
	return ret;
}

int tree_load(struct rst *root)
{
	struct rst_tree *t = calloc(1, sizeof(*t));
	int ret = 0;

	if (!t)
		return -ENOMEM;
	root->tree = t;
	t->m = calloc(root->ds.nr_members, sizeof(*t->m));
	if (!t->m)
		return -ENOMEM;
	for (size_t i = 0; i < root->ds.nr_members && !ret; i++) {
		t->n = i + 1;
		ret = load_member(root, i);
	}
	if (!ret)
		ret = plan_sessions(root);
	return ret ? ret : share_load(root);
}

struct sess_plan *tree_plan(struct rst *r)
{
	return &r->tree->plan;
}

/* r's node in the plan: the root 0, then the members in pstree order. */
int tree_node(struct rst *r)
{
	struct rst_tree *t = r->tree;

	return r >= t->m && r < t->m + t->n ? (int)(r - t->m) + 1 : 0;
}

int tree_shm_get(struct rst *r, uint64_t shmid)
{
	struct rst_tree *t = r->tree;

	for (size_t i = 0; t && i < t->nr_shms; i++)
		if (t->shms[i].shmid == shmid) {
			int fd = fcntl(t->shms[i].fd, F_DUPFD_CLOEXEC, 3);

			return fd >= 0 ? fd : -1;
		}
	return -1;
}

int tree_shm_put(struct rst *r, uint64_t shmid, int fd)
{
	struct rst_tree *t = r->tree;
	struct rst_shm *n;

	if (!t)
		return 0;
	n = realloc(t->shms, (t->nr_shms + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	t->shms = n;
	n[t->nr_shms].shmid = shmid;
	n[t->nr_shms].given = false;
	n[t->nr_shms].fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (n[t->nr_shms].fd < 0)
		return fail(-errno, "cannot keep shared memory for the tree: %s", strerror(errno));
	t->nr_shms++;
	return 0;
}

/*
 * May r give the object's own open file description (memfd_create's) to one
 * of its fds? Once in the tree: later holders get descriptions of their own.
 * Without a tree the caller keeps count.
 */
bool tree_shm_give(struct rst *r, uint64_t shmid)
{
	struct rst_tree *t = r->tree;

	for (size_t i = 0; t && i < t->nr_shms; i++)
		if (t->shms[i].shmid == shmid) {
			if (t->shms[i].given)
				return false;
			t->shms[i].given = true;
			return true;
		}
	return true;
}

static struct rst *tree_root(struct rst *r)
{
	while (r->tree_parent)
		r = r->tree_parent;
	return r;
}

struct rst *tree_proc(struct rst *r, size_t i)
{
	struct rst *root = tree_root(r);

	if (!i)
		return root;
	return root->tree && i - 1 < root->tree->n ? &root->tree->m[i - 1] : NULL;
}

const char *tree_ghost_get(struct rst *r, uint32_t dev, uint64_t ino)
{
	struct rst_tree *t = r->tree;

	for (size_t i = 0; t && i < t->nr_ghosts; i++)
		if (t->ghosts[i].dev == dev && t->ghosts[i].ino == ino)
			return t->ghosts[i].path;
	return NULL;
}

int tree_ghost_put(struct rst *r, uint32_t dev, uint64_t ino, const char *path)
{
	struct rst_tree *t = r->tree;
	struct rst_ghost *n;

	if (!t)
		return 0;
	n = realloc(t->ghosts, (t->nr_ghosts + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	t->ghosts = n;
	n[t->nr_ghosts++] = (struct rst_ghost){ dev, ino, path };
	return 0;
}

bool tree_fifo_first(struct rst *r, uint32_t id)
{
	struct rst_tree *t = r->tree;
	uint32_t *n;

	if (!t)
		return true;
	for (size_t i = 0; i < t->nr_fifos; i++)
		if (t->fifos[i] == id)
			return false;
	n = realloc(t->fifos, (t->nr_fifos + 1) * sizeof(*n));
	if (n) {
		t->fifos = n;
		t->fifos[t->nr_fifos++] = id;
	}
	return true;
}

int tree_sock_get(struct rst *r, uint32_t ino)
{
	struct rst_tree *t = r->tree;

	for (size_t i = 0; t && i < t->nr_socks; i++)
		if (t->socks[i].ino == ino && t->socks[i].fd >= 0) {
			int fd = t->socks[i].fd;

			t->socks[i].fd = -1;	/* one process holds it */
			return fd;
		}
	return -1;
}

int tree_sock_peek(struct rst *r, uint32_t ino)
{
	struct rst_tree *t = r->tree;

	for (size_t i = 0; t && i < t->nr_socks; i++)
		if (t->socks[i].ino == ino && t->socks[i].fd >= 0)
			return t->socks[i].fd;
	return -1;
}

int tree_sock_put(struct rst *r, uint32_t ino, int fd)
{
	struct rst_tree *t = r->tree;
	struct rst_sock *n = t ? realloc(t->socks, (t->nr_socks + 1) * sizeof(*n)) : NULL;

	if (!n)
		return -ENOMEM;
	t->socks = n;
	n[t->nr_socks].ino = ino;
	n[t->nr_socks].fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (n[t->nr_socks].fd < 0)
		return fail(-errno, "cannot keep a socket for the tree: %s", strerror(errno));
	t->nr_socks++;
	return 0;
}

int tree_pty_get(struct rst *r, uint32_t idx)
{
	struct rst_tree *t = r->tree;

	for (size_t i = 0; t && i < t->nr_ptys; i++)
		if (t->ptys[i].idx == idx)
			return t->ptys[i].fd;
	return -1;
}

int tree_pty_put(struct rst *r, uint32_t idx, int fd)
{
	struct rst_tree *t = r->tree;
	struct rst_pty *n = t ? realloc(t->ptys, (t->nr_ptys + 1) * sizeof(*n)) : NULL;

	if (!t)
		return 0;
	if (!n)
		return -ENOMEM;
	t->ptys = n;
	n[t->nr_ptys].idx = idx;
	n[t->nr_ptys].fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (n[t->nr_ptys].fd < 0)
		return fail(-errno, "cannot keep a pty master for the tree: %s", strerror(errno));
	t->nr_ptys++;
	return 0;
}

static void close_shared(struct rst_tree *t)
{
	for (size_t i = 0; i < t->nr_ptys; i++)
		close(t->ptys[i].fd);
	free(t->ptys);
	t->ptys = NULL;
	t->nr_ptys = 0;
	for (size_t i = 0; i < t->nr_socks; i++)
		if (t->socks[i].fd >= 0)
			close(t->socks[i].fd);
	free(t->socks);
	t->socks = NULL;
	t->nr_socks = 0;
	free(t->fifos);
	t->fifos = NULL;
	t->nr_fifos = 0;
	for (size_t i = 0; i < t->nr_shms; i++)
		close(t->shms[i].fd);
	free(t->shms);
	t->shms = NULL;
	t->nr_shms = 0;
	for (size_t i = 0; i < t->nr_pipes; i++) {
		close(t->pipes[i].fd[0]);
		close(t->pipes[i].fd[1]);
	}
	free(t->pipes);
	t->pipes = NULL;
	t->nr_pipes = 0;
}

void tree_free_members(struct rst *r)
{
	struct rst_tree *t = r->tree;

	if (!t || (r >= t->m && r < t->m + t->n))
		return;		/* a member: its root frees the tree */
	for (size_t i = 0; i < t->n; i++) {
		rst_close_shares(&t->m[i]);
		free(t->m[i].shares);
		rst_free(&t->m[i]);
	}
	close_shared(t);
	share_free(r);
	sess_plan_free(&t->plan);
	free(t->m);
	free(t);
	r->tree = NULL;
}

/* files.c: a pipe of the tree already made for an earlier process (copies of its ends). */
bool tree_pipe_get(struct rst *r, uint32_t id, int p[2])
{
	struct rst_tree *t = r->tree;

	for (size_t i = 0; t && i < t->nr_pipes; i++) {
		if (t->pipes[i].id != id)
			continue;
		p[0] = fcntl(t->pipes[i].fd[0], F_DUPFD_CLOEXEC, 3);
		p[1] = fcntl(t->pipes[i].fd[1], F_DUPFD_CLOEXEC, 3);
		return true;
	}
	return false;
}

typedef bool (*file_is)(const FileEntry *fe, uint32_t id);

static bool is_pipe_end(const FileEntry *fe, uint32_t id)
{
	return fe->type == FD_TYPES__PIPE && fe->pipe && fe->pipe->pipe_id == id;
}

/* Does some fd of the set open a file that is(id)? */
static bool holds(const struct dumpset *ds, file_is is, uint32_t id)
{
	for (size_t i = 0; i < ds->nr_fds; i++) {
		const FileEntry *fe = dumpset_file(ds, ds->fds[i]->id);

		if (fe && is(fe, id))
			return true;
	}
	return false;
}

/* Does another process of r's tree hold such a file? */
static bool others_hold(struct rst *r, file_is is, uint32_t id)
{
	struct rst *root;

	if (!r->tree)
		return false;
	root = tree_root(r);
	if (root != r && holds(&root->ds, is, id))
		return true;
	for (size_t i = 0; i < root->tree->n; i++)
		if (&root->tree->m[i] != r && holds(&root->tree->m[i].ds, is, id))
			return true;
	return false;
}

bool tree_has_pipe(struct rst *r, uint32_t id)
{
	return others_hold(r, is_pipe_end, id);
}

int tree_pipe_put(struct rst *r, uint32_t id, const int p[2])
{
	struct rst_tree *t = r->tree;
	struct rst_pipe *np;

	if (!t)
		return 0;
	np = realloc(t->pipes, (t->nr_pipes + 1) * sizeof(*np));
	if (!np)
		return -ENOMEM;
	t->pipes = np;
	np[t->nr_pipes].id = id;
	np[t->nr_pipes].fd[0] = fcntl(p[0], F_DUPFD_CLOEXEC, 3);
	np[t->nr_pipes].fd[1] = fcntl(p[1], F_DUPFD_CLOEXEC, 3);
	if (np[t->nr_pipes].fd[0] < 0 || np[t->nr_pipes].fd[1] < 0)
		return fail(-errno, "cannot keep a pipe for the tree: %s", strerror(errno));
	t->nr_pipes++;
	return 0;
}

/* Is o an ancestor of m (m forked in its subtree, after it)? */
static bool descends(const struct rst *m, const struct rst *o)
{
	for (const struct rst *p = m->tree_parent; p; p = p->tree_parent)
		if (p == o)
			return true;
	return false;
}

/* The shared fds of m: copies of their owners' prepared descriptions. */
static int resolve_shares(struct rst *m)
{
	for (size_t i = 0; i < m->nr_shares; i++) {
		struct rst_share *s = &m->shares[i];
		const struct rst *o = s->owner;

		for (size_t k = 0; k < o->nr_fds && s->src < 0 && !s->late; k++) {
			if (o->fds[k].target != s->owner_fd)
				continue;
			if (o->fds[k].proc_reg && !descends(m, o))
				return fail(-EOPNOTSUPP, "fd %d of process %d: %s, which process %d "
					    "opens once forked, and it does not fork this one",
					    s->fd, m->pid, o->fds[k].proc_reg->name, o->pid);
			if (o->fds[k].proc_reg)
				s->late = true;		/* inherited: tree_open_late() */
			else
				s->src = fcntl(o->fds[k].src, F_DUPFD_CLOEXEC, 3);
		}
		if (s->src < 0 && !s->late)
			return fail(-EIO, "fd %d of process %d: the fd %d of process %d it shares "
				    "was not prepared", s->fd, m->pid, s->owner_fd, o->pid);
	}
	return 0;
}

int rst_share_src(const struct rst *r, int fd)
{
	for (size_t i = 0; i < r->nr_shares; i++)
		if (r->shares[i].fd == fd)
			return r->shares[i].src;
	return -1;
}

bool rst_share_late(const struct rst *r, int fd)
{
	for (size_t i = 0; i < r->nr_shares; i++)
		if (r->shares[i].fd == fd)
			return r->shares[i].late;
	return false;
}

/* Members of r's tree sharing r's fd owner_fd late: their fds take fd (inherited). */
static bool give_late(struct rst *r, int owner_fd, int fd)
{
	struct rst *root = tree_root(r);
	bool any = false;

	for (size_t i = 0; root->tree && i < root->tree->n; i++) {
		struct rst *m = &root->tree->m[i];

		for (size_t k = 0; k < m->nr_shares; k++) {
			if (!m->shares[k].late || m->shares[k].owner != r ||
			    m->shares[k].owner_fd != owner_fd)
				continue;
			for (size_t j = 0; j < m->nr_fds; j++)
				if (m->fds[j].target == m->shares[k].fd)
					m->fds[j].src = fd;
			any = true;
		}
	}
	return any;
}

int tree_open_late(struct rst *r, char *why, size_t len)
{
	for (size_t i = 0; i < r->nr_fds; i++) {
		struct rfd *f = &r->fds[i];
		int fd;

		if (!f->proc_reg || !give_late(r, f->target, -1))
			continue;

		fd = reg_proc_open_in_child(r, f->proc_reg);
		if (fd < 0) {
			snprintf(why, len, "cannot open %s: %s", f->proc_reg->name, strerror(-fd));
			return fd;
		}
		for (size_t k = i; k < r->nr_fds; k++)	/* its dups too: one description */
			if (r->fds[k].proc_reg && r->fds[k].id == f->id && k != i) {
				r->fds[k].src = fd;
				r->fds[k].proc_reg = NULL;
			}
		give_late(r, f->target, fd);
		f->src = fd;
		f->proc_reg = NULL;
	}
	return 0;
}

void rst_close_shares(struct rst *r)
{
	for (size_t i = 0; i < r->nr_shares; i++) {
		if (r->shares[i].src >= 0)
			close(r->shares[i].src);
		r->shares[i].src = -1;
	}
}

static void kill_all(struct rst *root)
{
	for (size_t i = root->tree->n; i-- > 0;)
		kill(root->tree->m[i].pid, SIGKILL);
	rst_kill(root);
}

/* Why the restore failed: a process's own reason first, then the one given. */
static int first_failure(struct rst *root, int ret)
{
	if (root->a && root->a->stage == RST_STAGE_FAILED) {
		fail_clear();
		return rst_area_error(root);
	}
	for (size_t i = 0; i < root->tree->n; i++)
		if (root->tree->m[i].a && root->tree->m[i].a->stage == RST_STAGE_FAILED) {
			fail_clear();
			return rst_area_error(&root->tree->m[i]);
		}
	return ret;
}

/* Every process's files open: the deleted files recreated for them go again. */
static void unlink_ghosts(struct rst *root)
{
	ghost_unlink_all(root);
	sk_unix_unlink_gone(root);
	for (size_t i = 0; i < root->tree->n; i++) {
		ghost_unlink_all(&root->tree->m[i]);
		sk_unix_unlink_gone(&root->tree->m[i]);
	}
	free(root->tree->ghosts);
	root->tree->ghosts = NULL;
	root->tree->nr_ghosts = 0;
}

static bool aliases_kept(const struct rst *root)
{
	bool kept = sk_unix_aliases_kept(root);

	for (size_t i = 0; i < root->tree->n; i++)
		kept = kept || sk_unix_aliases_kept(&root->tree->m[i]);
	return kept;
}

static int prepare_all(struct rst *root)
{
	int ret = rst_prepare(root);

	if (!ret)	/* no area when its preparation failed */
		root->a->sum_pages = pagecheck_mode(&root->ds);
	for (size_t i = 0; i < root->tree->n && !ret; i++) {
		struct rst *m = &root->tree->m[i];

		ret = resolve_shares(m);
		if (!ret)
			ret = in_mntns(m, rst_prepare);
		if (!ret)
			m->a->sum_pages = pagecheck_mode(&m->ds);
		if (ret)
			fail_context("process %d: ", m->pid);
	}
	if (!ret)
		ret = sk_tree_plan_queues(root);	/* every socket made: senders anywhere */
	if (!ret)
		ret = premap_plan(root);	/* every area built: memory shared copy-on-write */
	for (size_t i = 0; i <= root->tree->n && !ret; i++)	/* that memory, if remote: now */
		ret = lazy_remote_shared(root, i ? &root->tree->m[i - 1] : root);
	unlink_ghosts(root);
	if (!aliases_kept(root))	/* else once all are parked: the sweeper would take them */
		ghost_sweep_end(root);	/* every name removed */
	return ret;
}

/* --lazy-pages: one page handler for every process of the tree (lazy.h) */
static int start_lazy(struct rst *root)
{
	size_t n = root->tree->n + 1;
	struct rst **all = calloc(n, sizeof(*all));
	int ret;

	if (!all)
		return fail(-ENOMEM, "out of memory");
	all[0] = root;
	for (size_t i = 1; i < n; i++)
		all[i] = &root->tree->m[i - 1];
	ret = lazy_start(all, n);
	free(all);
	return ret;
}

static int fork_all(struct rst *root)
{
	int ret = start_lazy(root);

	if (!ret)
		ret = rst_fork_target(root);	/* it forks the others (tree_fork_children) */

	for (size_t i = 0; i < root->tree->n; i++) {
		rst_close_prepared(&root->tree->m[i]);
		rst_close_shares(&root->tree->m[i]);
	}
	close_shared(root->tree);	/* a copy here would keep a reader from its EOF */
	return ret;
}

static bool any_failed(struct rst *root)
{
	if (__atomic_load_n(&root->a->stage, __ATOMIC_SEQ_CST) == RST_STAGE_FAILED)
		return true;
	for (size_t i = 0; i < root->tree->n; i++)
		if (root->tree->m[i].a &&
		    __atomic_load_n(&root->tree->m[i].a->stage, __ATOMIC_SEQ_CST) == RST_STAGE_FAILED)
			return true;
	return false;
}

/*
 * Its parent, or a helper another process forks, forks m (treefork.c): it
 * exists, or why it never will (a process failed, told by its own area, or
 * its parent is gone).
 */
static int wait_born(struct rst *root, struct rst *m)
{
	for (int i = 0; i < 30000; i++) {
		const struct rst *p = m->tree_parent;

		if (kill(m->pid, 0) == 0)
			return 0;
		if (rst_interrupted())
			return -EINTR;
		if (any_failed(root) || (p->tree_parent && kill(p->pid, 0)))
			return fail(-ECHILD, "process %d was not created: a process of the tree "
				    "or its parent %d failed", m->pid, p->pid);
		usleep(1000);
	}
	return fail(-ETIMEDOUT, "process %d was not created within 30 s", m->pid);
}

/* Every process parked and its pages checked, or why not (all killed then). */
static int wait_all(struct rst *root)
{
	struct rst *all[root->tree->n + 1];
	size_t n = 0;
	int ret = 0;

	all[n++] = root;
	for (size_t i = 0; i < root->tree->n; i++)
		all[n++] = &root->tree->m[i];
	for (size_t i = 0; i < n && !ret; i++) {
		ret = i ? wait_born(root, all[i]) : 0;
		if (!ret)
			ret = pagecheck_start(all[i]);
	}
	for (size_t i = 0; i < n && !ret; i++)
		ret = rst_wait_parked(all[i]);
	for (size_t i = 0; i < n; i++)
		sk_unix_unlink_all(all[i]);	/* aliases their children connected to */
	ghost_sweep_end(root);	/* each child closed its copy of the sweeper's socket */
	for (size_t i = 0; i < n; i++)
		ret = pagecheck_finish(all[i], !ret) ?: ret;
	if (ret) {
		ret = first_failure(root, ret);
		kill_all(root);
	}
	return ret;
}

/*
 * Every process traced, then all let go at once (the commit point: memdump
 * killed before it, they all exit; after it, they all run), then each run
 * into its dumped contexts, the children first.
 */
static int resume_all(struct rst *root, int *net)
{
	struct rst *all[root->tree->n + 1];
	size_t n = 0;
	int ret = 0;

	for (size_t i = root->tree->n; i-- > 0;)
		all[n++] = &root->tree->m[i];
	all[n++] = root;
	for (size_t i = 0; i < n; i++)
		resume_seize(all[i]);
	*net = rst_commit_live(all, n);	/* then the connections live (golive.c) */
	for (size_t i = 0; i < n && !ret; i++)
		ret = resume_finish(all[i]);
	if (!ret)
		rst_default_signals();
	return ret;
}

/* Every process parked: timers, the network, the hooks, then all run. */
static int release_all(struct rst *root)
{
	const struct hooks *h = root->o->hooks;
	int ret = rst_fire_setup_ns(root) ?: hook_fire(h, HOOK_POST_RESTORE, root->pid);
	int net;

	for (size_t i = 0; i <= root->tree->n && !ret; i++)
		ret = cgroups_move_threads(i ? &root->tree->m[i - 1] : root) ?:
		      timerfd_arm_all(i ? &root->tree->m[i - 1] : root);
	for (size_t i = 0; i <= root->tree->n; i++)	/* what the restore did to watched ghosts */
		inotify_drain_all(i ? &root->tree->m[i - 1] : root);
	if (!ret)
		ret = netns_firewall_late(root);	/* the connections rebuilt, the lock on */
	/* the connections stay in repair mode and locked until the commit (golive.c) */
	if (!ret) {
		struct rst *all[root->tree->n + 1];

		for (size_t i = 0; i <= root->tree->n; i++)
			all[i] = i < root->tree->n ? &root->tree->m[i] : root;	/* the root last */
		rst_hook_network_unlock(all, root->tree->n + 1);
		ret = hook_fire(h, HOOK_PRE_RESUME, root->pid);
	}
	if (!ret)
		ret = fault_step(RST_FAULT_COMMIT) ?: rst_interrupted();
	if (ret) {
		kill_all(root);
		return ret;
	}
	ret = resume_all(root, &net);
	if (ret)
		kill_all(root);
	else
		hook_fire_late(h, HOOK_POST_RESUME, root->pid);
	return ret ?: net;	/* a lock left on: they run on, it is named */
}

int restore_tree(struct rst *root)
{
	uint64_t t0 = now_us(), t1, t2;
	int ret = prepare_all(root);	/* in its namespaces since load_and_check() */

	if (!ret)
		ret = fault_step(RST_FAULT_PREPARED) ?: rst_interrupted();
	if (!ret)
		ret = fork_all(root);
	mntns_restore_leave(root);
	ns_restore_leave(root);
	if (ret)
		return ret;
	ret = fault_step(RST_FAULT_FORKED) ?: rst_interrupted();
	if (ret) {
		kill_all(root);		/* those not yet forked die with their parents */
		return ret;
	}
	t1 = now_us();
	ret = wait_all(root);
	t2 = now_us();
	if (!ret)
		ret = release_all(root);
	if (ret)
		return ret;
	rst_report(root, t0, t1, t2);
	pr_info("restored process tree of %d: %zu processes\n", root->pid, root->tree->n + 1);
	ret = rst_write_pidfile(root->o->pidfile, root->pid);
	if (ret)
		return ret;
	if (root->o->detach || root->o->sibling)
		return rst_detached(root);
	return rst_wait_restored(root->pid);
}
