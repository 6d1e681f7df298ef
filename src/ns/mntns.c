/*
 * A mount namespace of the process's own (`unshare --mount`, `--mount-proc`),
 * taken as what it changed from memdump's: its mountinfo is memdump's in
 * the same order (the copy the namespace began as) but for mounts it has
 * unmounted and mounts it made since. mountpoints-1.img lists every mount
 * (CRIU's mnt_entry) with how restore makes it from memdump's copy: kept
 * (with its propagation: private, slave, or as memdump's), unmounted, or
 * mounted: proc, sysfs, mqueue, devpts, tmpfs (its files in its entry,
 * memdump's field 55), and bind mounts of a path the namespace sees. A root
 * of its own (pivot_root, a container) is a bind mount of a path memdump
 * sees, and so is every mount from outside it (a cgroup hierarchy); any
 * other mount is refused by name.
 */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <limits.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <linux/mount.h>
#include <linux/sockios.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <linux/kcmp.h>
#include <sys/xattr.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "ns/mntns.h"
#include "ns/pidns.h"
#include "ctx/refusals.h"
#include "ctx/proc_tree.h"
#include "image/image.h"
#include "log.h"
#include "mountinfo.h"
#include "proc.h"
#include "mnt.pb-c.h"
#include "tmpfs-file.pb-c.h"

#define TMPFS_LIMIT	(64ULL << 20)	/* bytes of tmpfs content saved, at most */

struct mnt_plan {
	struct mounts own, theirs;
	bool own_root;		/* the process has a root of its own (pivot_root) */
	int *how;		/* per theirs[]: HOW_KEPT or HOW_MOUNTED */
	int *kept_as;		/* per theirs[]: its own[] index when kept */
	bool *gone;		/* per own[]: unmounted by the process */
};

static void plan_free(struct mnt_plan *p)
{
	mounts_free(&p->own);
	mounts_free(&p->theirs);
	free(p->how);
	free(p->kept_as);
	free(p->gone);
}

static int index_of(const struct mounts *ms, int id)
{
	for (size_t k = 0; k < ms->n; k++)
		if (ms->m[k].id == id)
			return (int)k;
	return -1;
}

/* Is path a under directory b (b a prefix of a, up to a '/'), not b itself? */
static bool path_below(const char *a, const char *b)
{
	size_t n = strcmp(b, "/") ? strlen(b) : 0;

	return !strncmp(a, b, n) && a[n] == '/' && a[n + 1];
}

/*
 * A mount hidden under a sibling (same parent, its point under the
 * sibling's: zdtm overmount_with_shared_parent, a copy propagation made
 * before the sibling covered the place) was there first: it goes before the
 * sibling, so restore can still reach its point when it mounts it.
 */
static void hidden_first(struct mounts *ms)
{
	for (size_t i = 1, moves = 0; i < ms->n && moves < ms->n * ms->n; i++) {
		for (size_t j = 0; j < i; j++) {
			struct mount m = ms->m[i];

			if (ms->m[j].parent != m.parent || !path_below(m.mountpoint, ms->m[j].mountpoint))
				continue;
			memmove(&ms->m[j + 1], &ms->m[j], (i - j) * sizeof(m));
			ms->m[j] = m;
			moves++;
			break;
		}
	}
}

/*
 * Every mount after the one it is on (restore mounts in this order): a mount
 * moved (MS_MOVE) onto one made after it is listed before its parent (zdtm
 * tempfs_overmounted01). The order is kept otherwise.
 */
static int parents_first(struct mounts *ms)
{
	struct mount *out = calloc(ms->n + 1, sizeof(*out));
	bool *done = calloc(ms->n + 1, sizeof(*done));
	size_t n = 0;

	for (bool progress = true; out && done && progress;) {
		progress = false;
		for (size_t i = 0; i < ms->n; i++) {
			int pi = index_of(ms, ms->m[i].parent);

			if (done[i] || (pi >= 0 && pi != (int)i && !done[pi]))
				continue;
			out[n++] = ms->m[i];
			done[i] = progress = true;
		}
	}
	for (size_t i = 0; out && done && i < ms->n; i++)
		if (!done[i])
			out[n++] = ms->m[i];	/* a loop of parents: as listed */
	free(done);
	if (!out || n != ms->n) {
		free(out);
		return -ENOMEM;
	}
	free(ms->m);
	ms->m = out;
	return 0;
}

/*
 * Which of the process's mounts memdump has too: the same mount (point,
 * device, root, type, source) on the same parent. A namespace's copy lists
 * its mounts parents first, not in the original's order, so the match goes
 * by the tree, not by the order.
 */
static int plan_make(pid_t pid, struct mnt_plan *p)
{
	char path[64];
	int ret;

	struct stat a, b;

	memset(p, 0, sizeof(*p));
	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	p->own_root = stat(path, &a) || stat("/", &b) || a.st_dev != b.st_dev ||
		      a.st_ino != b.st_ino;
	snprintf(path, sizeof(path), "/proc/%d/mountinfo", pid);
	ret = mounts_read("/proc/thread-self/mountinfo", &p->own);
	if (!ret)
		ret = mounts_read(path, &p->theirs);
	if (!ret)
		ret = parents_first(&p->theirs);
	if (ret)
		return ret;
	hidden_first(&p->theirs);
	p->how = calloc(p->theirs.n + 1, sizeof(*p->how));
	p->kept_as = calloc(p->theirs.n + 1, sizeof(*p->kept_as));
	p->gone = calloc(p->own.n + 1, sizeof(*p->gone));
	if (!p->how || !p->kept_as || !p->gone)
		return -ENOMEM;
	for (size_t k = 0; k < p->own.n; k++)
		p->gone[k] = true;
	for (size_t i = 0; i < p->theirs.n; i++) {
		int tp = index_of(&p->theirs, p->theirs.m[i].parent);

		p->how[i] = HOW_MOUNTED;
		if (tp >= 0 && p->how[tp] != HOW_KEPT)
			continue;	/* on a mount of its own: its own too */
		for (size_t k = 0; k < p->own.n; k++) {
			int op = index_of(&p->own, p->own.m[k].parent);

			if (!p->gone[k] || !mount_same(&p->own.m[k], &p->theirs.m[i]) ||
			    (tp < 0) != (op < 0) || (tp >= 0 && p->kept_as[tp] != op))
				continue;
			p->how[i] = HOW_KEPT;
			p->kept_as[i] = (int)k;
			p->gone[k] = false;
			break;
		}
	}
	return 0;
}

static bool is_kind(const struct mount *m, const char *const *kinds)
{
	for (; *kinds; kinds++)
		if (!strcmp(m->fstype, *kinds))
			return true;
	return false;
}

static const char *const made_kinds[] = { "proc", "sysfs", "mqueue", "devpts", "tmpfs", NULL };

/*
 * Mount i is one restore makes anew (a proc, a tmpfs ... mounted whole): the
 * first mount of its filesystem. Another of the same filesystem (a tmpfs
 * bound elsewhere whole) is bound from the first, so both show one content.
 */
static bool made_anew(const struct mount *ms, size_t i)
{
	const struct mount *m = &ms[i];

	if (!is_kind(m, made_kinds) || strcmp(m->root, "/"))
		return false;
	for (size_t k = 0; k < i; k++)
		if (ms[k].major == m->major && ms[k].minor == m->minor &&
		    !strcmp(ms[k].fstype, m->fstype))
			return false;
	return true;
}

/* Where bind mount m comes from: a path under mount s of the same device. */
static char *path_under(const struct mount *s, const struct mount *m)
{
	size_t rl = strlen(s->root);
	const char *rest;
	char *out;

	if (s->major != m->major || s->minor != m->minor || strcmp(s->fstype, m->fstype))
		return NULL;
	if (!strcmp(s->root, "/"))
		rest = m->root;
	else if (!strncmp(m->root, s->root, rl) && (m->root[rl] == '/' || !m->root[rl]))
		rest = m->root + rl;
	else
		return NULL;
	if (asprintf(&out, "%s%s", strcmp(s->mountpoint, "/") ? s->mountpoint : "", rest) < 0)
		return NULL;
	if (!*out) {
		free(out);
		out = strdup("/");
	}
	return out;
}

/* Is mount k covered, when mount i is made, by one made between them? */
static bool hidden_at(const struct mounts *ms, size_t k, size_t i)
{
	for (size_t j = k + 1; j < i; j++)
		if (!strcmp(ms->m[j].mountpoint, ms->m[k].mountpoint) ||
		    path_below(ms->m[k].mountpoint, ms->m[j].mountpoint))
			return true;
	return false;
}

/*
 * Is path at, under mount k, covered when mount i is made (by a mount made
 * between them at it or at a directory above it)? Binding it then would
 * bind the covering mount's root (zdtm tempfs_overmounted01).
 */
static bool path_hidden(const struct mounts *ms, size_t k, size_t i, const char *at)
{
	size_t n = strlen(at);

	while (n > 1 && at[n - 1] == '/')	/* a whole mount's point: "/mnt/" */
		n--;
	for (size_t j = k + 1; j < i; j++) {
		const char *mp = ms->m[j].mountpoint;

		if ((strlen(mp) == n && !strncmp(mp, at, n)) || path_below(at, mp))
			return true;
	}
	return false;
}

/*
 * The path mount i is bound from: under an earlier mount of the process's
 * (*from its index), or, for a root of its own, under one of memdump's
 * (*from -1: a path memdump sees, to bind before the process's root is
 * entered). NULL: nowhere memdump can reach.
 */
static char *bind_source(const struct mnt_plan *p, size_t i, int *from)
{
	const struct mount *m = &p->theirs.m[i];
	char *out;

	for (size_t k = i; k-- > 0;)
		if ((out = path_under(&p->theirs.m[k], m)) && !path_hidden(&p->theirs, k, i, out)) {
			*from = (int)k;
			return out;
		} else {
			free(out);
		}
	if (!p->own_root)
		return NULL;
	for (size_t k = p->own.n; k-- > 0;)
		if ((out = path_under(&p->own.m[k], m))) {
			*from = -1;
			return out;
		}
	return NULL;
}

static bool holds(const struct mounts *ms, int a, int b);

/*
 * For mount i, of a root of its own, that bind_source finds no path for: an
 * earlier mount k it is bound from (*from), hidden by then, which restore
 * reaches by the fd it took on k's root when it made it (zdtm mntns_remap,
 * tempfs_overmounted01); the path under k's root (rest), or NULL. The path
 * must not be covered by a mount made on k since.
 */
static char *hidden_source(const struct mnt_plan *p, size_t i, int *from)
{
	const struct mounts *ms = &p->theirs;
	const struct mount *m = &ms->m[i];

	for (size_t k = i; p->own_root && k-- > 0;) {
		const struct mount *s = &ms->m[k];
		char *out = path_under(s, m), *rest;
		bool covered = false;

		if (!out)
			continue;
		for (size_t j = k + 1; j < i && !covered; j++)
			covered = holds(ms, (int)k, index_of(ms, ms->m[j].parent)) &&
				  path_below(ms->m[j].mountpoint, s->mountpoint) &&
				  (!strcmp(ms->m[j].mountpoint, out) ||
				   path_below(out, ms->m[j].mountpoint));
		rest = covered ? NULL : strdup(out + (strcmp(s->mountpoint, "/") ?
						     strlen(s->mountpoint) : 0));
		free(out);
		if (rest) {
			*from = (int)k;
			return rest;
		}
	}
	return NULL;
}

/*
 * Mounted by the restored init rather than memdump: its PID namespace's
 * proc, what is mounted on it or bound from it (in[] so far).
 */
static bool by_init(const struct mnt_plan *p, size_t i, const bool *in, bool pid_ns, int from)
{
	const struct mount *m = &p->theirs.m[i];
	int parent = index_of(&p->theirs, m->parent);

	if (p->how[i] != HOW_MOUNTED)
		return false;
	if (pid_ns && !strcmp(m->fstype, "proc") && from == -2)
		return true;
	return (parent >= 0 && in[parent]) || (from >= 0 && in[from]);
}

/* How the propagation of kept mount i differs from memdump's; -1: it cannot be made. */
static int kept_propagation(const struct mnt_plan *p, size_t i)
{
	const struct mount *t = &p->theirs.m[i], *o = &p->own.m[p->kept_as[i]];

	if (t->shared)
		return t->shared == o->shared ? 0 : -1;
	if (t->master)
		return t->master == o->master && !o->shared ? 0 :
		       t->master == o->shared ? MS_SLAVE : -1;
	return o->shared || o->master ? MS_PRIVATE : 0;
}

#ifndef SIOCUNIXFILE
#define SIOCUNIXFILE (SIOCPROTOPRIVATE + 0)	/* linux/un.h: an O_PATH fd on the file of its name */
#endif

/* A copy of pid's fd, or -errno. */
static int fd_copy(pid_t pid, int fd)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0), copy;

	if (pidfd < 0)
		return -errno;
	copy = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	if (copy < 0)
		copy = -errno;
	close(pidfd);
	return copy;
}

/* The path name socket copy is bound to (getsockname()), "" if none. */
static void unix_path_name(int copy, char *path, size_t len)
{
	struct sockaddr_un a;
	socklen_t l = sizeof(a);

	memset(&a, 0, sizeof(a));
	path[0] = 0;
	if (!getsockname(copy, (struct sockaddr *)&a, &l) && a.sun_family == AF_UNIX &&
	    l > offsetof(struct sockaddr_un, sun_path) && a.sun_path[0])
		snprintf(path, len, "%.*s", (int)sizeof(a.sun_path), a.sun_path);
}

/*
 * Is the file of the absolute path name a socket of pid is bound to, its
 * socket file (pfd), at that path in pid's root? Restore binds the name
 * under the root it builds; a name bound before a pivot_root or chroot, or
 * a file a mount now covers, would be another file there.
 */
static bool unix_name_in_root(pid_t pid, const char *name, int pfd)
{
	struct stat a, b;
	int fd = proc_root_open(pid, name, O_PATH | O_NOFOLLOW);
	bool same = fd >= 0 && !fstat(fd, &a) && !fstat(pfd, &b) && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino;

	if (fd >= 0)
		close(fd);
	return same;
}

/*
 * The directory a socket's name was bound from (base) and the name below it
 * (rel): the root and the name less its '/', or, for a relative name, the
 * directory its file's path (file) ends with it in. false: it does not.
 */
static bool name_base(const char *sun, const char *file, char *base, size_t len,
		      const char **rel)
{
	size_t fl = strlen(file), nl = strlen(sun);

	if (sun[0] == '/') {
		snprintf(base, len, "/");
		*rel = sun + 1;
		return sun[1] != 0;
	}
	*rel = sun;
	if (fl <= nl + 1 || file[fl - nl - 1] != '/' || strcmp(file + fl - nl, sun))
		return false;
	snprintf(base, len, "%.*s", (int)(fl - nl - 1), file);
	if (!base[0])
		snprintf(base, len, "/");
	return true;
}

/* A listener (copy) with connections not accepted yet: it polls readable. */
static bool has_pending(int copy)
{
	struct pollfd p = { .fd = copy, .events = POLLIN };

	return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

/*
 * A socket (copy, its file pfd) whose name's file is not at its path in
 * pid's root. Covered by a mount since (zdtm overmount_sock), it is there in
 * a clone of its directory's mount alone, where restore binds it again
 * (sk_unix_restore.c) and connects an accepted connection's peer through its
 * listener's file; connections not accepted yet (the restored child connects
 * them by name) and datagram sockets (sent to by name) would meet the mount
 * on top: those are refused.
 */
static void refuse_unix_covered(pid_t pid, const char *fd, const char *link, const char *sun,
				const char *path, int copy, int pfd, struct refusals *r)
{
	char base[PATH_MAX];
	const char *rel = NULL;
	int type = 0, listens = 0;
	socklen_t l = sizeof(type);
	bool covered = name_base(sun, path, base, sizeof(base), &rel) &&
		       proc_root_covered(pid, base, rel, pfd) == 1;

	getsockopt(copy, SOL_SOCKET, SO_TYPE, &type, &l);
	l = sizeof(listens);
	getsockopt(copy, SOL_SOCKET, SO_ACCEPTCONN, &listens, &l);
	if (!covered)
		refuse_add(r, "process %d: fd %s (%s, a UNIX socket named %s) in a root of its own, "
			   "its file not at that path in its root", pid, fd, link, sun);
	else if (type == SOCK_DGRAM || (listens && has_pending(copy)))
		refuse_add(r, "process %d: fd %s (%s, a UNIX socket named %s) in a root of its own, "
			   "%s whose file a mount covers since (memdump restores stream "
			   "listeners and their accepted connections only there)", pid, fd, link,
			   sun, listens ? "a listener with connections not accepted yet" :
			   "a datagram socket");
}

/*
 * A UNIX socket (fd, its link) of pid, a process with a root of its own,
 * bound to a path: restore binds it again under the root it builds, as the
 * process sees it (unix/sk_unix_restore.c), a removed name there too. Its file
 * must be at its absolute name in that root; a relative name is bound in the
 * directory its file is in, where its file must be too.
 */
static void refuse_unix_in_own_root(pid_t pid, const char *fd, const char *link,
				    struct refusals *r)
{
	int copy = fd_copy(pid, atoi(fd)), pfd = -1, removed = 0;
	char sun[120], path[PATH_MAX];

	if (copy < 0)
		return;		/* gone since, or not a socket memdump can take: sockets.c says */
	unix_path_name(copy, sun, sizeof(sun));
	if (sun[0])
		pfd = ioctl(copy, SIOCUNIXFILE);
	if (pfd >= 0)
		removed = self_fd_link(pfd, path, sizeof(path));	/* as the process sees it */
	if (sun[0] && (pfd < 0 || removed < 0))
		refuse_add(r, "process %d: fd %s (%s, a UNIX socket named %s): the file of its "
			   "name cannot be found", pid, fd, link, sun);
	else if (sun[0] && !removed &&
		 !unix_name_in_root(pid, sun[0] == '/' ? sun : path, pfd))
		refuse_unix_covered(pid, fd, link, sun, path, copy, pfd, r);
	if (pfd >= 0)
		close(pfd);
	close(copy);
}

/*
 * A pty of the devpts its root shows at that path: tty.c decides (a slave
 * whose master a runtime holds is made again in the restored devpts).
 */
static bool same_pty(const char *in_root, const struct stat *at)
{
	struct stat in;

	return S_ISCHR(at->st_mode) && !stat(in_root, &in) && S_ISCHR(in.st_mode) &&
	       in.st_rdev == at->st_rdev && in.st_dev == at->st_dev;
}

/*
 * The mount flags (MS_*) of the mount fd of pid is on, and whether it is a
 * proc, when its /proc/PID/mountinfo lists it: a mount under its root, in its
 * namespace (the kernel leaves the mounts outside its root out of that file).
 * -ENOENT: not listed.
 */
static int fd_mount(pid_t pid, int fd, unsigned long *flags, bool *proc)
{
	char path[64], *info = NULL;
	const char *id = NULL;
	struct mounts ms = { 0 };
	int ret = -ENOENT;

	if (proc_fdinfo(pid, fd, &info) > 0)
		id = proc_line_after(info, "mnt_id:");
	snprintf(path, sizeof(path), "/proc/%d/mountinfo", pid);
	if (id && !mounts_read(path, &ms))
		for (size_t i = 0; i < ms.n && ret; i++)
			if (ms.m[i].id == atoi(id)) {
				*flags = ms.m[i].flags;
				*proc = !strcmp(ms.m[i].fstype, "proc");
				ret = 0;
			}
	mounts_free(&ms);
	free(info);
	return ret;
}

static int fd_mount_flags(pid_t pid, int fd, unsigned long *flags)
{
	bool proc;

	return fd_mount(pid, fd, flags, &proc);
}

/*
 * A /proc file (not a process's) of pid, on a proc of its own PID namespace:
 * the restored init mounts it, and the process opens the file itself then
 * (files_restore.c, as a process's /proc files).
 */
static bool proc_by_init(pid_t pid, pid_t at_root, const char *fd)
{
	unsigned long flags;
	bool proc = false;

	return pidns_own(at_root) && !fd_mount(pid, atoi(fd), &flags, &proc) && proc;
}

static bool held_before(pid_t pid, int fd, const struct proc_tree *tree);

/*
 * A deleted file (fd, link) of pid: restore makes it again under the root it
 * builds, once every mount is there; one on a mount outside that root (or
 * not in its namespace) cannot be made so. One on a read-only mount is
 * ghost.c's to judge; one an earlier process holds, that process's.
 */
static void refuse_ghost_in_own_root(pid_t pid, const char *fd, const char *link,
				     struct refusals *r, const struct proc_tree *tree)
{
	unsigned long flags = 0;

	if (held_before(pid, atoi(fd), tree))
		return;	/* an earlier process's description (inherited): opened for that one */
	if (fd_mount_flags(pid, atoi(fd), &flags))
		refuse_add(r, "process %d: fd %s (%s), a deleted file on a mount outside its root "
			   "or its mount namespace", pid, fd, link);
	/* on a read-only mount: ghost.c decides (a read-only bind of a writable
	 * filesystem is written through a writable clone of it) */
}

/* /proc/N/..., /proc/self/..., /proc/thread-self/...: opened by the restored process itself */
static bool proc_of_a_process(const char *link)
{
	const char *p = link + 6;

	if (!strncmp(p, "self/", 5) || !strncmp(p, "thread-self/", 12))
		return true;
	while (*p >= '0' && *p <= '9')
		p++;
	return p > link + 6 && (*p == '/' || !*p);
}

static bool same_mntns(pid_t a, pid_t b);
static int fd_mnt_id(pid_t pid, int fd);
static bool ns_lists(pid_t q, int mnt_id);

/* A process of the tree in another mount namespace than pid's that has fd's mount, or 0. */
static pid_t mount_of_another_ns(pid_t pid, int fd, const struct proc_tree *tree)
{
	int mnt_id = fd_mnt_id(pid, fd);

	for (int i = 0; mnt_id >= 0 && tree && i < tree->n; i++) {
		pid_t q = tree->procs[i].pid;

		if (q != pid && !tree_is_zombie(&tree->procs[i]) && !same_mntns(pid, q) &&
		    ns_lists(q, mnt_id))
			return q;
	}
	return 0;
}


/*
 * fd of pid, on a file outside its root: named the sharper when another
 * namespace has it. A description an earlier process of the tree holds too
 * (stdio inherited before an unshare and a pivot_root: zdtm mntns_pivot_root)
 * is opened for that one, where it is, and pid's fd is a copy.
 */
static void refuse_outside_root(pid_t pid, const char *fd, const char *link,
				const struct proc_tree *tree, struct refusals *r)
{
	pid_t q;

	if (held_before(pid, atoi(fd), tree))
		return;
	q = mount_of_another_ns(pid, atoi(fd), tree);
	if (q)
		refuse_add(r, "process %d: fd %s (%s), a file on a mount of the mount namespace of "
			   "process %d, another than its own (memdump opens a file in its holder's "
			   "namespace, or the tree root's)", pid, fd, link, q);
	else
		refuse_add(r, "process %d: fd %s (%s), a file outside its root", pid, fd, link);
}

/* Does one of q's fds share pid's fd's description? */
static bool holds_file(pid_t q, pid_t pid, int fd)
{
	char path[64];
	struct dirent *e;
	bool hit = false;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fd", q);
	dir = opendir(path);
	while (dir && !hit && (e = readdir(dir)))
		hit = e->d_name[0] != '.' && !syscall(SYS_kcmp, pid, q, KCMP_FILE, fd, atoi(e->d_name));
	if (dir)
		closedir(dir);
	return hit;
}

/*
 * The first process of the tree before pid, with an fd table of its own,
 * holding fd's description (inherited over fork), or 0: restore opens the
 * description for that one.
 */
static pid_t first_holder(pid_t pid, int fd, const struct proc_tree *tree)
{
	for (int i = 0; tree && i < tree->n && tree->procs[i].pid != pid; i++)
		if (!tree_is_zombie(&tree->procs[i]) &&
		    !syscall(SYS_kcmp, pid, tree->procs[i].pid, KCMP_FILES, 0, 0))
			return 0;	/* its fd table is an earlier process's: that one's fds */
	for (int i = 0; tree && i < tree->n && tree->procs[i].pid != pid; i++) {
		pid_t q = tree->procs[i].pid;

		if (!tree_is_zombie(&tree->procs[i]) && syscall(SYS_kcmp, pid, q, KCMP_FILES, 0, 0) &&
		    holds_file(q, pid, fd))
			return q;
	}
	return 0;
}

/* Is pid a descendant of anc in tree? */
static bool descends_from(pid_t pid, pid_t anc, const struct proc_tree *tree)
{
	for (int hops = 0; pid > 0 && hops <= (tree ? tree->n : 0); hops++) {
		pid_t parent = 0;

		for (int i = 0; tree && i < tree->n; i++)
			if (tree->procs[i].pid == pid)
				parent = tree->procs[i].ppid;
		if (parent == anc)
			return true;
		pid = parent;
	}
	return false;
}

/*
 * A /proc file that is no process's in a root of its own: what restore cannot
 * open. A description held by several processes is opened by the first once
 * forked, before it forks the others (tree_open_late), which inherit it:
 * they must be its descendants.
 */
static void refuse_proc_in_own_root(pid_t pid, pid_t at_root, const char *fd, const char *link,
				    const struct proc_tree *tree, struct refusals *r)
{
	pid_t first;

	if (!proc_by_init(pid, at_root, fd))
		refuse_add(r, "process %d: fd %s (%s), a /proc file in a root of its own (its /proc "
			   "is mounted by the restored init, after the files are opened)", pid, fd,
			   link);
	else if ((first = first_holder(pid, atoi(fd), tree)) && !descends_from(pid, first, tree))
		refuse_add(r, "process %d: fd %s (%s), a /proc file in a root of its own that process "
			   "%d holds too, which is not its ancestor (the first holder opens such a "
			   "file once forked, its descendants inherit it)", pid, fd, link, first);
}

/* fd (its link, stat at) of pid, a process with a root of its own: what restore cannot make */
static void refuse_fd_in_own_root(pid_t pid, pid_t at_root, const char *fd, const char *link,
				  const struct stat *at, const struct proc_tree *tree,
				  struct refusals *r)
{
	char path[4300];
	struct stat in;

	if (link[0] != '/') {
		if (!strncmp(link, "socket:", 7))
			refuse_unix_in_own_root(pid, fd, link, r);
		if (!strcmp(link, "anon_inode:[fanotify]"))	/* its marks: by memdump's paths */
			refuse_add(r, "process %d: fd %s (%s) in a root of its own", pid, fd, link);
		return;	/* inotify: its watches are found as pid sees them (inotify.c) */
	}
	if (!strncmp(link, "/memfd:", 7) ||
	    (S_ISREG(at->st_mode) && !strcmp(link, "/dev/zero (deleted)")))
		return;		/* no path: shared memory (shmem.c), anonymous or a memfd */
	if (pidns_gone_proc(pid, atoi(fd), link))
		return;		/* /proc of a process gone: opened by pid with a stand-in */
	if (!strncmp(link, "/proc/", 6) && !proc_of_a_process(link))
		refuse_proc_in_own_root(pid, at_root, fd, link, tree, r);
	snprintf(path, sizeof(path), "/proc/%d/root%s", at_root, link);
	if (strstr(link, " (deleted)") && S_ISCHR(at->st_mode) && major(at->st_rdev) >= 136 &&
	    major(at->st_rdev) < 144)
		return;	/* a hung-up pty slave: tty.c decides (a ptmx beside its path) */
	if (strstr(link, " (deleted)"))
		refuse_ghost_in_own_root(pid, fd, link, r, tree);
	else if (!strncmp(link, "/dev/pts/", 9) && !same_pty(path, at))
		refuse_add(r, "process %d: fd %s (%s) in a root of its own", pid, fd, link);
	else if ((S_ISLNK(at->st_mode) ? lstat(path, &in) : stat(path, &in)) ||
		 (!(S_ISCHR(at->st_mode) && S_ISCHR(in.st_mode) && at->st_rdev == in.st_rdev) &&
		  (in.st_dev != at->st_dev || in.st_ino != at->st_ino)))
		refuse_outside_root(pid, fd, link, tree, r);
}

static bool same_mntns(pid_t a, pid_t b)
{
	char pa[64], pb[64];
	struct stat sa, sb;

	snprintf(pa, sizeof(pa), "/proc/%d/ns/mnt", a);
	snprintf(pb, sizeof(pb), "/proc/%d/ns/mnt", b);
	return !stat(pa, &sa) && !stat(pb, &sb) && sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev;
}

/* Is pid's root the root of its mount namespace (not a chroot in it)? */
static bool at_ns_root(pid_t pid)
{
	char path[64], link[8];

	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	return readlink(path, link, sizeof(link)) == 1 && link[0] == '/';
}

/*
 * A process of the tree (or pid itself) whose root is the root of pid's mount
 * namespace: the links of pid's fds are paths from there (a process that
 * chrooted, zdtm chroot: its fds opened before, outside its root, are
 * opened there by restore, before it chroots). pid itself when none is.
 */
static pid_t ns_root_proc(pid_t pid, const struct proc_tree *tree)
{
	for (int i = 0; !at_ns_root(pid) && tree && i < tree->n; i++)
		if (!tree_is_zombie(&tree->procs[i]) && at_ns_root(tree->procs[i].pid) &&
		    same_mntns(pid, tree->procs[i].pid))
			return tree->procs[i].pid;
	return pid;
}

/* Does pid's root show the file st at path (not deleted)? */
static bool root_shows(pid_t pid, const char *path, const struct stat *st)
{
	char in[PATH_MAX + 64];
	struct stat at;

	snprintf(in, sizeof(in), "/proc/%d/root%s", pid, path);
	return path[0] == '/' && !strstr(path, " (deleted)") && !stat(in, &at) &&
	       at.st_dev == st->st_dev && at.st_ino == st->st_ino;
}

bool mntns_path_of_root(pid_t pid, const char *path, const struct stat *st, pid_t root)
{
	return pid != root && !root_shows(pid, path, st) && root_shows(root, path, st);
}

/*
 * Files pid maps (its program too) outside its root: restore opens them at
 * their path in the process's root, or, for a process of another namespace
 * than the tree root's, in the root's (a program run before the pivot_root).
 */
static void refuse_maps_outside_root(pid_t pid, pid_t at_root, const struct proc_tree *tree,
				     struct refusals *r)
{
	pid_t root = tree && tree->n ? tree->procs[0].pid : pid;
	char path[64], *line = NULL;
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	while (f && getline(&line, &cap, f) > 0) {
		char mf[96], *name = strchr(line, '/');
		unsigned long s, e;
		struct stat st;

		line[strcspn(line, "\n")] = 0;
		if (!name || strstr(name, " (deleted)") || !strncmp(name, "/memfd:", 7) ||
		    !strncmp(name, "/SYSV", 5) || sscanf(line, "%lx-%lx", &s, &e) != 2)
			continue;
		snprintf(mf, sizeof(mf), "/proc/%d/map_files/%lx-%lx", pid, s, e);
		if (stat(mf, &st) || root_shows(at_root, name, &st) ||
		    (!same_mntns(pid, root) && root_shows(root, name, &st)))
			continue;
		refuse_add(r, "process %d: its mapping %lx-%lx of %s, a file outside its root", pid,
			   s, e, name);
		break;	/* one names the kind; a program maps its file several times */
	}
	free(line);
	if (f)
		fclose(f);
}

/* A root of its own: what memdump restores there only without it (rst_path). */
static void refuse_in_own_root(pid_t pid, const struct proc_tree *tree, struct refusals *r)
{
	char dir[64], link[4200], path[4300];
	pid_t at_root = ns_root_proc(pid, tree);
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		struct stat at;
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0 || stat(path, &at))
			continue;
		link[n] = 0;
		refuse_fd_in_own_root(pid, at_root, de->d_name, link, &at, tree, r);
	}
	if (d)
		closedir(d);
	refuse_maps_outside_root(pid, at_root, tree, r);
}

/* Is mount m of pid's mountinfo hidden (not the mount on top at its point, as pid sees it)? */
static bool mount_hidden(pid_t pid, const struct mount *m)
{
	char path[4200];
	struct statx sx;

	snprintf(path, sizeof(path), "/proc/%d/root%s", pid, m->mountpoint);
	return statx(AT_FDCWD, path, 0, STATX_MNT_ID, &sx) || sx.stx_mnt_id != (uint64_t)m->id;
}

/*
 * fds of pid on a mount hidden under another (zdtm overmounted_file: a file
 * of a tmpfs under a bind of itself): restore opens files by path, through
 * the mount on top, which would be another mount (or no such file).
 */
static void refuse_hidden_fds(pid_t pid, struct refusals *r)
{
	char path[64], fdp[320], link[4200], *info = NULL;
	struct mounts ms = { 0 };
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/mountinfo", pid);
	if (mounts_read(path, &ms))
		return;
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		const char *id;
		ssize_t n;
		int k;

		free(info);
		info = NULL;
		if (de->d_name[0] == '.' || proc_fdinfo(pid, atoi(de->d_name), &info) <= 0 ||
		    !(id = proc_line_after(info, "mnt_id:")) || (k = index_of(&ms, atoi(id))) < 0 ||
		    !mount_hidden(pid, &ms.m[k]))
			continue;
		snprintf(fdp, sizeof(fdp), "%s/%s", path, de->d_name);
		n = readlink(fdp, link, sizeof(link) - 1);
		link[n > 0 ? n : 0] = 0;
		refuse_add(r, "process %d: fd %s (%s), on the %s mount at %s, hidden under another "
			   "mount", pid, de->d_name, link, ms.m[k].fstype, ms.m[k].mountpoint);
	}
	free(info);
	if (d)
		closedir(d);
	mounts_free(&ms);
}

/* m's place in its parent mount pm: its point under pm's, "" when the same */
static const char *rel_point(const struct mount *m, const struct mount *pm)
{
	size_t n = strcmp(pm->mountpoint, "/") ? strlen(pm->mountpoint) : 0;

	return strncmp(m->mountpoint, pm->mountpoint, n) ? m->mountpoint : m->mountpoint + n;
}

/*
 * Mount i is a copy mount propagation made: its parent receives mounts from
 * another mount's peer group (slave or peer of it), and the same filesystem
 * is mounted at the same place on that other mount. Restore makes every
 * mount private and each once: the copy would be mounted twice, and an
 * unmount would no longer take it away (zdtm mntns_overmount).
 */
static bool propagated_copy(const struct mnt_plan *p, size_t i)
{
	const struct mount *m = &p->theirs.m[i];
	int pi = index_of(&p->theirs, m->parent);
	const struct mount *mp = pi >= 0 ? &p->theirs.m[pi] : NULL;

	if (!mp || (!mp->shared && !mp->master))
		return false;
	for (size_t k = 0; k < p->theirs.n; k++) {
		const struct mount *o = &p->theirs.m[k];
		int pk = index_of(&p->theirs, o->parent);
		const struct mount *op = pk >= 0 ? &p->theirs.m[pk] : NULL;

		if (k == i || !op || pk == pi || !op->shared ||
		    (op->shared != mp->master && op->shared != mp->shared))
			continue;
		if (o->major == m->major && o->minor == m->minor && !strcmp(o->fstype, m->fstype) &&
		    !strcmp(o->root, m->root) && !strcmp(rel_point(o, op), rel_point(m, mp)))
			return true;
	}
	return false;
}

/* A mount of a directory removed since (mountinfo's root ends in "//deleted"). */
static bool deleted_root(const struct mount *m)
{
	size_t n = strlen(m->root), k = strlen("//deleted");

	return n >= k && !strcmp(m->root + n - k, "//deleted");
}

/* Is filesystem root a at or under root b of the same filesystem as mount mb? */
static bool root_within(const struct mount *ma, const struct mount *mb)
{
	return ma->major == mb->major && ma->minor == mb->minor &&
	       (!strcmp(ma->root, mb->root) || path_below(ma->root, mb->root));
}

/* Has peer group g a mount in memdump's namespace (it reaches outside the process's)? */
static bool group_outside(const struct mnt_plan *p, int g)
{
	for (size_t k = 0; k < p->own.n; k++)
		if (p->own.m[k].shared == g)
			return true;
	return false;
}

/* Is peer group g a single mount with no slaves (an LXC container's mounts)? */
static bool group_alone(const struct mnt_plan *p, int g)
{
	int n = 0;

	for (size_t k = 0; k < p->theirs.n; k++)
		n += (p->theirs.m[k].shared == g) + 2 * (p->theirs.m[k].master == g);
	return n == 1 && !group_outside(p, g);
}

static int mntprop_leader(const struct mount *ms, size_t n, int g);

/*
 * Mount i, made by the restored init (in_before: which of the mounts before
 * it are too), can be made shared in its peer group: the group has no
 * slaves; its leader is i (made shared), or one memdump makes, not covered
 * (the init joins it by its point) and holding i's root.
 */
static bool init_can_join(const struct mnt_plan *p, size_t i, const bool *in_before)
{
	int g = p->theirs.m[i].shared, lead = mntprop_leader(p->theirs.m, p->theirs.n, g);

	for (size_t k = 0; k < p->theirs.n; k++)
		if (p->theirs.m[k].master == g)
			return false;
	if (group_outside(p, g))
		return false;
	if (lead == (int)i)
		return true;
	return lead < (int)i && !in_before[lead] && !hidden_at(&p->theirs, (size_t)lead, p->theirs.n) &&
	       root_within(&p->theirs.m[i], &p->theirs.m[lead]);
}

/*
 * The mount of peer group g restore makes first (the others join it, and its
 * slaves are made from it: move_mount(MOVE_MOUNT_SET_GROUP) takes a mount
 * whose root holds theirs): the first with the shortest root; -1 if none.
 */
static int mntprop_leader(const struct mount *ms, size_t n, int g)
{
	int best = -1;

	for (size_t k = 0; g && k < n; k++)
		if (ms[k].shared == g && (best < 0 || strlen(ms[k].root) < strlen(ms[best].root)))
			best = (int)k;
	return best;
}

/*
 * The peer group of memdump's mount that mount i, of a root of its own, is
 * bound from (restore binds it from there: a bind of memdump's copy, a slave
 * of that group, is a slave of it too), or 0.
 */
static int host_group(const struct mnt_plan *p, size_t i)
{
	int from = -2;
	char *src = made_anew(p->theirs.m, i) ? NULL : bind_source(p, i, &from), *out;

	free(src);	/* a whole tmpfs, proc ... is made anew: no slave of anything */
	for (size_t k = p->own.n; from == -1 && k-- > 0;)
		if ((out = path_under(&p->own.m[k], &p->theirs.m[i]))) {
			free(out);
			return p->own.m[k].shared;
		}
	return 0;
}

/*
 * The mount namespaces of a tree restore makes before the one being checked
 * (the tree root's, then the others in tree order): a peer group one of them
 * has, restore makes there first and anchors, and the later ones join it.
 */
struct mnt_before {
	pid_t pid;			/* the process checked */
	const struct proc_tree *tree;	/* or NULL */
	struct mnt_plan *plans;		/* the earlier namespaces' */
	bool **in;			/* per plan: mounted by its restored init */
	size_t n;
};

/* Has another mount namespace of the tree than pid's a mount in peer group g (or a slave of it)? */
static bool group_elsewhere(const struct mnt_before *b, int g);

/*
 * Peer group g's first mount in the earliest namespace before that has it:
 * *lead (NULL if none); false if the restored init of that namespace makes
 * it (memdump cannot anchor it).
 */
static bool earlier_leader(const struct mnt_before *b, int g, const struct mount **lead)
{
	*lead = NULL;
	for (size_t k = 0; b && g && k < b->n; k++) {
		int l = mntprop_leader(b->plans[k].theirs.m, b->plans[k].theirs.n, g);

		if (l < 0)
			continue;
		*lead = &b->plans[k].theirs.m[l];
		return !b->in[k][l] && b->plans[k].own_root;
	}
	return true;
}

/*
 * Why restore cannot give mount i, which the process made under a root of
 * its own, its propagation (peers and master among the namespace's own
 * mounts and those of the tree's namespaces made before, b), or NULL; in:
 * mounted by the restored init.
 */
static const char *propagation_why(const struct mnt_plan *p, size_t i, bool in,
				   const bool *in_before, const struct mnt_before *b)
{
	const struct mount *m = &p->theirs.m[i], *ms = p->theirs.m, *el = NULL, *em = NULL;
	int pi = index_of(&p->theirs, m->parent), lead;
	bool root_parent = p->own_root && pi == 0;	/* the root joins its group after */

	if (in && (m->master || (m->shared && (!init_can_join(p, i, in_before) ||
						group_elsewhere(b, m->shared)))))
		return "mounted by the restored init (its PID namespace's proc), a slave or in a "
		       "peer group it cannot join (slaves, another mount namespace's mounts, or "
		       "its first mount covered or the init's too)";
	if (in && pi >= 0 && ms[pi].shared && !root_parent &&
	    (!group_alone(p, ms[pi].shared) || group_elsewhere(b, ms[pi].shared)))
		return "mounted by the restored init on a mount whose peer group has other mounts "
		       "or slaves (it would propagate there)";
	if (m->shared && group_outside(p, m->shared))
		return "its peer group has mounts outside its mount namespace";
	if (m->master && group_outside(p, m->master) && !m->shared && host_group(p, i) == m->master)
		return NULL;	/* zdtm mnt_ext_master: bound again from that group, a slave */
	if (m->master && group_outside(p, m->master))
		return "a slave of a peer group outside its mount namespace (but of the one of "
		       "the mount it is bound from)";
	if (!earlier_leader(b, m->shared, &el) || !earlier_leader(b, m->master, &em))
		return "its peer group or master is made by the restored init of another mount "
		       "namespace of the tree, or in one without a root of its own";
	lead = mntprop_leader(ms, p->theirs.n, m->master);
	if (m->master && !(em ? root_within(m, em) : lead >= 0 && root_within(m, &ms[lead])))
		return "a slave of a peer group none of whose mounts in its namespace (or in the "
		       "tree's namespace that has it first) holds its root";
	lead = mntprop_leader(ms, p->theirs.n, m->shared);
	if (m->shared && !root_within(m, el ? el : &ms[lead]))
		return "its peer group has no mount whose root holds all of theirs (in its "
		       "namespace, or the first of the tree's namespaces that has it)";
	return NULL;
}

static bool made_tmpfs(const struct mnt_plan *p, size_t i);

/* A root of its own (its first mount) restore binds from a directory of memdump's mounts. */
static bool root_bound_from_host(const struct mnt_plan *p)
{
	int from = -2;
	char *src = made_anew(p->theirs.m, 0) ? NULL : bind_source(p, 0, &from);
	bool ok = src && from == -1;

	free(src);
	return ok;
}

static void refuse_plan(pid_t pid, const struct proc_tree *tree, const struct mnt_plan *p,
			const struct mnt_before *b, struct refusals *r)
{
	bool *in = calloc(p->theirs.n + 1, sizeof(*in)), pid_ns = pidns_own(pid);

	if (p->own_root && !tree)
		refuse_in_own_root(pid, NULL, r);
	for (int i = 0; p->own_root && tree && i < tree->n; i++)	/* every process is in it */
		if (!tree_is_zombie(&tree->procs[i]))
			refuse_in_own_root(tree->procs[i].pid, tree, r);
	if (!tree)
		refuse_hidden_fds(pid, r);
	for (int i = 0; tree && i < tree->n; i++)
		if (!tree_is_zombie(&tree->procs[i]))
			refuse_hidden_fds(tree->procs[i].pid, r);
	for (size_t i = 0; in && i < p->theirs.n; i++) {
		const struct mount *m = &p->theirs.m[i];
		bool made = made_anew(p->theirs.m, i), hidden = false;
		int from = -2;
		char *src = NULL;

		if (p->how[i] == HOW_KEPT) {
			if (kept_propagation(p, i) < 0)
				refuse_add(r, "the mount at %s, whose propagation (shared:%d master:%d) "
					   "restore cannot give it", m->mountpoint, m->shared, m->master);
			continue;
		}
		if (!made && !(src = bind_source(p, i, &from)) && (src = hidden_source(p, i, &from)))
			hidden = true;
		in[i] = by_init(p, i, in, pid_ns, from);
		if ((m->shared || m->master) && !p->own_root)
			refuse_add(r, "the %s mount at %s, made shared or slave", m->fstype,
				   m->mountpoint);
		else if (propagation_why(p, i, in[i], in, b))
			refuse_add(r, "the %s mount at %s (shared:%d master:%d): %s", m->fstype,
				   m->mountpoint, m->shared, m->master,
				   propagation_why(p, i, in[i], in, b));
		else if (!p->own_root && propagated_copy(p, i))
			refuse_add(r, "the %s mount at %s, a copy mount propagation made (restore "
				   "makes mounts private, each once)", m->fstype, m->mountpoint);
		else if (deleted_root(m))
			refuse_add(r, "the mount at %s, bound from a deleted directory (%s)",
				   m->mountpoint, m->root);
		else if (!made && !src)
			refuse_add(r, "the %s mount at %s (%s), which memdump cannot make", m->fstype,
				   m->mountpoint, m->source);
		else if (in[i] && hidden)
			refuse_add(r, "the mount at %s, bound from a hidden path of the mount at %s, "
				   "both mounted by the restored init", m->mountpoint,
				   p->theirs.m[from].mountpoint);
		else if (in[i] && from == -1)
			refuse_add(r, "the mount at %s, bound from outside its root onto its proc",
				   m->mountpoint);
		if (made && (m->flags & MS_UNBINDABLE) && hidden_at(&p->theirs, i, p->theirs.n))
			refuse_add(r, "the unbindable %s at %s, under another mount (memdump reads "
				   "its files through the process's root)", m->fstype, m->mountpoint);
		free(src);
	}
	if (p->own_root && (!p->theirs.n || strcmp(p->theirs.m[0].mountpoint, "/") ||
			    p->how[0] != HOW_MOUNTED))
		refuse_add(r, "a root of its own that is not its first mount");
	else if (p->own_root && !root_bound_from_host(p) && !made_tmpfs(p, 0))
		refuse_add(r, "a root of its own that is a %s mounted there, not a directory bound "
			   "from memdump's mounts or a tmpfs (pivot_root into a fresh mount: memdump "
			   "makes only a tmpfs so)", p->theirs.m[0].fstype);
	free(in);
}

bool mntns_own(pid_t pid)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", pid);
	return !stat(path, &a) && !stat("/proc/thread-self/ns/mnt", &b) && a.st_ino != b.st_ino;
}

void mntns_refuse(pid_t pid, const struct proc_tree *tree, struct refusals *r)
{
	struct mnt_before b = { .pid = pid, .tree = tree };	/* the first made */
	struct mnt_plan p;
	int ret;

	if (!mntns_own(pid))
		return;
	ret = plan_make(pid, &p);

	if (ret)
		refuse_add(r, "a mount namespace memdump cannot read (%s)", strerror(-ret));
	else
		refuse_plan(pid, tree, &p, &b, r);
	plan_free(&p);
}

static bool mount_listed(const struct mounts *ms, int id)
{
	return index_of(ms, id) >= 0;
}

static int fd_mnt_id(pid_t pid, int fd)
{
	char path[64], line[256];
	int mnt_id = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", pid, fd);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f) && sscanf(line, "mnt_id: %d", &mnt_id) != 1)
		;
	if (f)
		fclose(f);
	return mnt_id;
}

/* Does q's mount namespace list mount mnt_id? */
static bool ns_lists(pid_t q, int mnt_id)
{
	char path[64];
	struct mounts ms;
	bool hit;

	snprintf(path, sizeof(path), "/proc/%d/mountinfo", q);
	if (mounts_read(path, &ms))
		return false;
	hit = index_of(&ms, mnt_id) >= 0;
	mounts_free(&ms);
	return hit;
}

bool mntns_fd_of_root(pid_t pid, int fd, pid_t root)
{
	int mnt_id = fd_mnt_id(pid, fd);

	return mnt_id >= 0 && !ns_lists(pid, mnt_id) && ns_lists(root, mnt_id);
}

/*
 * Its fd's file as the tree's root sees it at the same path (what restore
 * opens there): not deleted, the same inode.
 */
static bool root_sees(pid_t pid, int fd, const char *link, pid_t root)
{
	char a[64], b[PATH_MAX + 64];
	struct stat sa, sb;

	snprintf(a, sizeof(a), "/proc/%d/fd/%d", pid, fd);
	snprintf(b, sizeof(b), "/proc/%d/root%s", root, link);
	return !strstr(link, " (deleted)") && !stat(a, &sa) && !stat(b, &sb) &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/*
 * Does a process of the tree before pid hold fd's description? Restore
 * opens it for that one, in its namespace, and pid's fd is a copy.
 */
static bool held_before(pid_t pid, int fd, const struct proc_tree *tree)
{
	for (int i = 0; tree && i < tree->n && tree->procs[i].pid != pid; i++)
		if (!tree_is_zombie(&tree->procs[i]) && holds_file(tree->procs[i].pid, pid, fd))
			return true;
	return false;
}

/*
 * Its fds on a file of a mount its namespace does not have (opened in
 * another), but copies of an earlier process's, which restore opens there.
 */
static void refuse_fds_elsewhere(pid_t pid, const struct mnt_plan *p,
				 const struct proc_tree *tree, struct refusals *r)
{
	char path[64];
	struct dirent *e;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo", pid);
	dir = opendir(path);
	while (dir && (e = readdir(dir))) {
		char fdi[96], link[PATH_MAX];
		int mnt_id, fd = atoi(e->d_name);
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(fdi, sizeof(fdi), "/proc/%d/fd/%d", pid, fd);
		n = readlink(fdi, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (link[0] != '/' || !strncmp(link, "/memfd:", 7))
			continue;	/* pipes, sockets, anon inodes, memfds: no mount of a namespace */
		mnt_id = fd_mnt_id(pid, fd);
		if (mnt_id >= 0 && !mount_listed(&p->theirs, mnt_id) &&
		    !held_before(pid, fd, tree) &&
		    !(ns_lists(tree->procs[0].pid, mnt_id) && root_sees(pid, fd, link, tree->procs[0].pid)))
			refuse_add(r, "fd %d (%s), a file of another mount namespace than its "
				   "process's", fd, link);
	}
	if (dir)
		closedir(dir);
}

static bool made_tmpfs(const struct mnt_plan *p, size_t i);

/*
 * Tmpfs i of a tree's other mount namespace as a mount of the tree root's
 * namespace (a copy unshare made): the index of one restore makes there
 * that holds it, bound from it again; -1 if none.
 */
static int root_tmpfs(const struct mnt_plan *p, size_t i, const struct mnt_plan *rp)
{
	const struct mount *m = &p->theirs.m[i];

	if (!made_tmpfs(p, i))
		return -1;
	for (size_t k = 0; k < rp->theirs.n; k++)
		if (rp->how[k] == HOW_MOUNTED && !strcmp(rp->theirs.m[k].fstype, "tmpfs") &&
		    root_within(m, &rp->theirs.m[k]))
			return (int)k;
	return -1;
}

/* Its tmpfs the tree root's namespace has too, which restore would make twice. */
static void refuse_tmpfs_shared(const struct mnt_plan *p, const struct mnt_plan *rp,
				struct refusals *r)
{
	for (size_t i = 0; i < p->theirs.n; i++) {
		const struct mount *m = &p->theirs.m[i];

		/* (a bind of one of its own namespace's is bound from that one) */
		if (!made_tmpfs(p, i) || root_tmpfs(p, i, rp) >= 0)
			continue;
		for (size_t k = 0; k < rp->theirs.n; k++)
			if (rp->theirs.m[k].major == m->major && rp->theirs.m[k].minor == m->minor) {
				refuse_add(r, "the tmpfs at %s, which the tree root's mount "
					   "namespace has too (at %s) but does not hold whole",
					   m->mountpoint, rp->theirs.m[k].mountpoint);
				break;
			}
	}
}

/* A peer group id of q's namespace, or master id, is group g? */
static bool group_in(pid_t q, int g)
{
	char path[64];
	struct mounts ms;
	bool hit = false;

	snprintf(path, sizeof(path), "/proc/%d/mountinfo", q);
	if (mounts_read(path, &ms))
		return false;
	for (size_t k = 0; k < ms.n && !hit; k++)
		hit = ms.m[k].shared == g || ms.m[k].master == g;
	mounts_free(&ms);
	return hit;
}

static unsigned long mnt_ns_ino(pid_t pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", pid);
	return stat(path, &st) ? 0 : (unsigned long)st.st_ino;
}

static bool group_elsewhere(const struct mnt_before *b, int g)
{
	unsigned long mine = b ? mnt_ns_ino(b->pid) : 0;

	for (int k = 0; b && b->tree && g && k < b->tree->n; k++) {
		pid_t q = b->tree->procs[k].pid;

		if (!tree_is_zombie(&b->tree->procs[k]) && mnt_ns_ino(q) != mine && group_in(q, g))
			return true;
	}
	return false;
}

/* Which of p's mounts (pid's namespace) its restored init mounts: a new array, or NULL. */
static bool *plan_by_init(pid_t pid, const struct mnt_plan *p)
{
	bool *in = calloc(p->theirs.n + 1, sizeof(*in)), pid_ns = pidns_own(pid);

	for (size_t i = 0; in && i < p->theirs.n; i++) {
		int from = -2;
		char *src = NULL;

		if (p->how[i] != HOW_MOUNTED)
			continue;
		if (!made_anew(p->theirs.m, i) && !(src = bind_source(p, i, &from)))
			src = hidden_source(p, i, &from);
		in[i] = by_init(p, i, in, pid_ns, from);
		free(src);
	}
	return in;
}

static void before_free(struct mnt_before *b)
{
	for (size_t k = 0; k < b->n; k++) {
		plan_free(&b->plans[k]);
		free(b->in[k]);
	}
	free(b->plans);
	free(b->in);
	b->plans = NULL;
	b->in = NULL;
	b->n = 0;
}

/* Namespace of process q, the first of it in the tree, into b. */
static int before_add(struct mnt_before *b, pid_t q)
{
	struct mnt_plan *np = realloc(b->plans, (b->n + 1) * sizeof(*np));
	bool **ni = np ? realloc(b->in, (b->n + 1) * sizeof(*ni)) : NULL;
	int ret;

	if (np)
		b->plans = np;
	if (!ni)
		return -ENOMEM;
	b->in = ni;
	ret = plan_make(q, &b->plans[b->n]);
	ni[b->n] = ret ? NULL : plan_by_init(q, &b->plans[b->n]);
	b->n++;		/* (freed with the rest) */
	return ret ? ret : ni[b->n - 1] ? 0 : -ENOMEM;
}

/*
 * The tree's mount namespaces restore makes before pid's (the root's, then
 * the others in the order of their first processes).
 */
static int before_make(pid_t pid, const struct proc_tree *tree, struct mnt_before *b)
{
	unsigned long mine = mnt_ns_ino(pid), seen[tree->n + 1];
	size_t ns = 0;
	int ret = 0;

	*b = (struct mnt_before){ .pid = pid, .tree = tree };
	for (int k = 0; k < tree->n && !ret; k++) {
		unsigned long ino = mnt_ns_ino(tree->procs[k].pid);
		bool again = false;

		if (tree_is_zombie(&tree->procs[k]))
			continue;
		if (ino == mine)
			break;
		for (size_t j = 0; j < ns && !again; j++)
			again = seen[j] == ino;
		if (again)
			continue;
		seen[ns++] = ino;
		ret = before_add(b, tree->procs[k].pid);
	}
	return ret;
}

void mntns_refuse_member(pid_t pid, const struct proc_tree *tree, struct refusals *r)
{
	pid_t root = tree && tree->n ? tree->procs[0].pid : 0;
	struct mnt_before b = { 0 };
	struct mnt_plan p, rp;
	int ret = plan_make(pid, &p);

	if (!ret)
		ret = plan_make(root, &rp);
	else
		memset(&rp, 0, sizeof(rp));
	if (!ret)
		ret = before_make(pid, tree, &b);
	if (ret)
		refuse_add(r, "a mount namespace memdump cannot read (%s)", strerror(-ret));
	else {
		struct proc_tree none = { 0 };	/* its files: the root's check names them */

		refuse_plan(pid, &none, &p, &b, r);
		refuse_fds_elsewhere(pid, &p, tree, r);
		refuse_tmpfs_shared(&p, &rp, r);
	}
	before_free(&b);
	plan_free(&p);
	plan_free(&rp);
}

static uint32_t criu_fstype(const char *t)
{
	static const struct { const char *name; uint32_t v; } types[] = {
		{ "proc", 1 }, { "sysfs", 2 }, { "devtmpfs", 3 }, { "tmpfs", 5 }, { "devpts", 6 },
		{ "cgroup", 12 }, { "mqueue", 14 }, { "overlay", 17 }, { "cgroup2", 23 } };

	for (size_t i = 0; i < ARRAY_SIZE(types); i++)
		if (!strcmp(types[i].name, t))
			return types[i].v;
	return 0;
}

/* The superblock options but rw/ro, which the mount flags carry. */
static char *data_of(const char *super)
{
	char *copy = strdup(super), *out = calloc(1, strlen(super) + 1), *save = NULL;

	for (char *t = copy && out ? strtok_r(copy, ",", &save) : NULL; t;
	     t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "rw") || !strcmp(t, "ro"))
			continue;
		if (*out)
			strcat(out, ",");
		strcat(out, t);
	}
	free(copy);
	return out;
}

struct tmpfs_walk {
	TmpfsFileEntry **files;		/* for mnt_entry.tmpfs_files, parents first */
	size_t n;
	dev_t dev;
	uint64_t bytes;
	const char *mp;
	bool through_root;	/* read through the process's root: a mount on it hides */
};

static void tmpfs_files_free(struct tmpfs_walk *w)
{
	for (size_t i = 0; i < w->n; i++) {
		free(w->files[i]->path);
		free(w->files[i]->link);
		free(w->files[i]->data.data);
		free(w->files[i]);
	}
	free(w->files);
	w->files = NULL;
	w->n = 0;
}

/* A copy of e into w's files: its path and link copied, its data taken (w frees it). */
static int keep_file(struct tmpfs_walk *w, const TmpfsFileEntry *e)
{
	TmpfsFileEntry **v = realloc(w->files, (w->n + 1) * sizeof(*v));
	TmpfsFileEntry *f = malloc(sizeof(*f));

	if (v)
		w->files = v;
	if (!v || !f) {
		free(f);
		return -ENOMEM;
	}
	*f = *e;
	f->path = strdup(e->path);
	f->link = e->link ? strdup(e->link) : NULL;
	if (!f->path || (e->link && !f->link)) {
		free(f->path);
		free(f->link);
		free(f);
		return -ENOMEM;
	}
	w->files[w->n++] = f;
	return 0;
}

static int walk_dir(struct tmpfs_walk *w, int fd, const char *rel);

static int read_all_fd(int fd, uint8_t **out, size_t len)
{
	size_t got = 0;

	*out = malloc(len ? len : 1);
	if (!*out)
		return -ENOMEM;
	while (got < len) {
		ssize_t n = read(fd, *out + got, len - got);

		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		got += (size_t)n;
	}
	return 0;
}

/* One entry of the tmpfs: written, and a directory walked. */
/* Any extended attribute, an ACL's included (not followed through a symlink). */
static bool has_xattrs(int dirfd, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dirfd, name);
	return llistxattr(path, NULL, 0) > 0;
}

static int save_entry(struct tmpfs_walk *w, int dirfd, const char *name, const char *rel)
{
	TmpfsFileEntry e = TMPFS_FILE_ENTRY__INIT;
	char link[4096];
	uint8_t *data = NULL;
	struct stat st;
	int ret = 0, fd = -1;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return fail(-errno, "tmpfs at %s: cannot stat %s: %s", w->mp, rel, strerror(errno));
	e.path = (char *)rel;
	e.mode = st.st_mode;
	e.uid = st.st_uid;
	e.gid = st.st_gid;
	e.has_mtime_ns = true;
	e.mtime_ns = st.st_mtim.tv_sec * 1000000000ULL + st.st_mtim.tv_nsec;
	if (st.st_dev != w->dev && w->through_root)
		return fail(-EOPNOTSUPP, "tmpfs at %s: unbindable (memdump cannot clone it), with "
			    "a mount on %s that hides what is under it", w->mp, rel);
	if (st.st_dev != w->dev) {	/* another mount's root on an entry of it (hidden: */
		e.mode = S_ISDIR(st.st_mode) ? S_IFDIR | 0755 : S_IFREG | 0644; /* runc's console */
		return keep_file(w, &e);
	}
	if ((S_ISREG(st.st_mode) || S_ISSOCK(st.st_mode)) && st.st_nlink > 1)
		return fail(-EOPNOTSUPP, "tmpfs at %s: %s has %lu hard links, which restore does "
			    "not make", w->mp, rel, (unsigned long)st.st_nlink);
	/* a socket file: made as a node no socket is bound to (a stale one), which the
	 * bind of a socket of the process named by it replaces (unix/sk_unix_restore.c) */
	if (has_xattrs(dirfd, name))
		return fail(-EOPNOTSUPP, "tmpfs at %s: %s has extended attributes (or an ACL), "
			    "which restore does not make", w->mp, rel);
	if (S_ISREG(st.st_mode)) {
		w->bytes += (uint64_t)st.st_size;
		if (w->bytes > TMPFS_LIMIT)
			return fail(-EFBIG, "tmpfs at %s holds more than %llu MiB", w->mp,
				    TMPFS_LIMIT >> 20);
		fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		ret = fd < 0 ? -errno : read_all_fd(fd, &data, (size_t)st.st_size);
		if (fd >= 0)
			close(fd);
		if (ret) {
			free(data);
			return fail(ret, "tmpfs at %s: cannot read %s: %s", w->mp, rel,
				    strerror(-ret));
		}
		e.has_data = true;
		e.data.data = data;
		e.data.len = (size_t)st.st_size;
	} else if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlinkat(dirfd, name, link, sizeof(link) - 1);

		if (n < 0)
			return fail(-errno, "tmpfs at %s: cannot read link %s", w->mp, rel);
		link[n] = 0;
		e.link = link;
	} else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		e.has_rdev = true;
		e.rdev = st.st_rdev;
	}
	ret = keep_file(w, &e);
	if (ret)
		free(data);	/* else the kept entry holds it */
	if (!ret && S_ISDIR(st.st_mode)) {
		fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return fail(-errno, "tmpfs at %s: cannot open %s", w->mp, rel);
		ret = walk_dir(w, fd, rel);
	}
	return ret;
}

/* Every entry of directory fd (closed here), parents before children. */
static int walk_dir(struct tmpfs_walk *w, int fd, const char *rel)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;
	int ret = 0;

	if (!d) {
		close(fd);
		return -errno;
	}
	while (!ret && (de = readdir(d))) {
		char *sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (asprintf(&sub, "%s%s%s", rel, *rel ? "/" : "", de->d_name) < 0) {
			ret = -ENOMEM;
			break;
		}
		ret = save_entry(w, dirfd(d), de->d_name, sub);
		free(sub);
	}
	closedir(d);
	return ret;
}

struct clone_req {
	pid_t pid;
	const struct mount *m;
	const struct mounts *all;	/* the process's mounts, m among them */
	int fd;			/* out: the detached clone, or -errno */
};

/* The index in copy of the copy of mount i of all (matched by the tree), or -1. */
static int copy_of(const struct mounts *all, const struct mounts *copy, int i, size_t depth)
{
	int pi = index_of(all, all->m[i].parent), cp = -1;

	if (depth > all->n)
		return -1;
	if (pi >= 0 && (cp = copy_of(all, copy, pi, depth + 1)) < 0)
		return -1;
	for (size_t k = 0; k < copy->n; k++) {
		int kp = index_of(copy, copy->m[k].parent);

		if ((pi < 0 ? kp < 0 : kp == cp) && mount_same(&copy->m[k], &all->m[i]))
			return (int)k;
	}
	return -1;
}

/* Is mount a of ms mount b or one b is (directly or not) mounted on? */
static bool holds(const struct mounts *ms, int a, int b)
{
	for (size_t n = 0; b >= 0 && n <= ms->n; n++, b = index_of(ms, ms->m[b].parent))
		if (a == b)
			return true;
	return false;
}

/*
 * The mount of ms that hides mount c nearest the root (the shortest point):
 * on c or one c is on, at c's point or a directory above it; -1: none.
 */
static int outer_cover(const struct mounts *ms, int c)
{
	const char *at = ms->m[c].mountpoint;
	int best = -1;

	for (size_t k = 0; k < ms->n; k++) {
		const struct mount *x = &ms->m[k];
		int xp = index_of(ms, x->parent);

		if (holds(ms, (int)k, c) || xp < 0 || !holds(ms, xp, c) ||
		    (strcmp(x->mountpoint, at) && !path_below(at, x->mountpoint)))
			continue;
		if (best < 0 || strlen(x->mountpoint) < strlen(ms->m[best].mountpoint))
			best = (int)k;
	}
	return best;
}

/*
 * In a private copy of the namespace (this thread's, its root the process's):
 * what hides mount id (the copy of q->m) unmounted, outermost first, until it
 * is on top at its point. 0, or -errno.
 */
static int uncover(const struct clone_req *q, int task, int id)
{
	int ret = 0;

	for (size_t n = 0; !ret && n <= q->all->n; n++) {
		struct mounts ms;
		int c, x;

		ret = mounts_read_at(task, "mountinfo", &ms);
		if (ret)
			return ret;
		c = index_of(&ms, id);
		x = c < 0 ? -2 : outer_cover(&ms, c);
		if (x == -1) {
			mounts_free(&ms);
			return 0;
		}
		ret = x < 0 ? -ENOENT : umount2(ms.m[x].mountpoint, MNT_DETACH) ? -errno : 0;
		mounts_free(&ms);
	}
	return ret ? ret : -ELOOP;
}

/*
 * Mount q->m, hidden under another (zdtm tempfs_overmounted: a tmpfs under
 * one at the same point, or at a directory above it): in a copy of the
 * namespace of this thread's own (root: the process's; made private first, so
 * nothing done in it propagates back), what hides it unmounted, then cloned
 * alone. task: this thread's /proc directory, opened before the chroot.
 */
static int clone_hidden(const struct clone_req *q, int root, int task)
{
	struct mounts copy = { 0 };
	struct statx sx;
	int c = -1, id = 0, ret = 0, fd;

	if (fchdir(root) || chroot(".") || unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno;
	ret = mounts_read_at(task, "mountinfo", &copy);
	if (!ret)
		c = copy_of(q->all, &copy, (int)(q->m - q->all->m), 0);
	if (!ret && c < 0)
		ret = -ENOENT;
	if (!ret)
		id = copy.m[c].id;
	mounts_free(&copy);
	if (!ret)
		ret = uncover(q, task, id);
	if (ret)
		return ret;
	if (statx(AT_FDCWD, q->m->mountpoint, 0, STATX_MNT_ID, &sx) ||
	    sx.stx_mnt_id != (uint64_t)id)
		return -ESTALE;
	fd = (int)syscall(SYS_open_tree, AT_FDCWD, q->m->mountpoint, OPEN_TREE_CLONE |
			  OPEN_TREE_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/*
 * On a thread of its own (its fs information unshared, as setns wants):
 * into the process's mount namespace, where a mount can be cloned, and a
 * clone of mount m alone (OPEN_TREE_CLONE: none of the mounts on it), at its
 * point under the process's root, checked to be m (the mount on top there);
 * one hidden under another, from a copy of the namespace (clone_hidden).
 */
static void *clone_in_ns(void *arg)
{
	struct clone_req *q = arg;
	char path[64];
	struct statx sx;
	int root, ns, task, fd = -1;

	snprintf(path, sizeof(path), "/proc/%d/root", q->pid);
	root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", q->pid);
	ns = open(path, O_RDONLY | O_CLOEXEC);
	task = open("/proc/thread-self", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0 || ns < 0 || task < 0 || unshare(CLONE_FS) || setns(ns, CLONE_NEWNS))
		q->fd = -errno;
	else if ((fd = (int)syscall(SYS_open_tree, root, q->m->mountpoint[1] ?
				    q->m->mountpoint + 1 : ".", OPEN_TREE_CLONE |
				    OPEN_TREE_CLOEXEC)) < 0)
		q->fd = errno == EINVAL || !q->all ? -errno : clone_hidden(q, root, task);
	else if (statx(root, q->m->mountpoint[1] ? q->m->mountpoint + 1 : ".", 0, STATX_MNT_ID,
		       &sx) || sx.stx_mnt_id != (uint64_t)q->m->id)
		q->fd = q->all ? clone_hidden(q, root, task) : -ESTALE;
	else
		q->fd = fd;
	if (fd >= 0 && q->fd != fd)
		close(fd);
	if (root >= 0)
		close(root);
	if (ns >= 0)
		close(ns);
	if (task >= 0)
		close(task);
	return NULL;
}

/* A detached clone of mount m of the process's namespace, or -errno. */
static int clone_mount(pid_t pid, const struct mounts *all, const struct mount *m)
{
	struct clone_req q = { .pid = pid, .m = m, .all = all, .fd = -EIO };
	pthread_t t;
	int ret = pthread_create(&t, NULL, clone_in_ns, &q);

	if (ret)
		return -ret;
	pthread_join(t, NULL);
	return q.fd;
}

/* Is fd on mount m? */
static bool same_mount_id(int fd, const struct mount *m)
{
	struct statx sx;

	errno = 0;
	return !statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) && sx.stx_mnt_id == (uint64_t)m->id;
}

/*
 * The files of the tmpfs mounted at m, into w: read in a clone of it alone,
 * where no mount covers any (zdtm tempfs: a file under another mount); an
 * unbindable one, which cannot be cloned, through the process's root.
 */
static int dump_tmpfs(const struct dump_ctx *d, const struct mounts *all, const struct mount *m,
		      struct tmpfs_walk *w)
{
	char path[4200];
	struct stat st;
	int fd, tree = clone_mount(d->pid, all, m), ret;

	if (tree == -EINVAL) {	/* unbindable: read through the process's root */
		w->through_root = true;
		snprintf(path, sizeof(path), "/proc/%d/root%s", d->pid, m->mountpoint);
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	} else if (tree < 0) {
		return fail(tree, "cannot clone the tmpfs at %s in the process's mount namespace: "
			    "%s", m->mountpoint, strerror(-tree));
	} else {
		fd = openat(tree, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(tree);
	}
	if (fd < 0)
		return fail(-errno, "cannot open the tmpfs at %s: %s", m->mountpoint,
			    strerror(errno));
	if (fstat(fd, &st) || (w->through_root && !same_mount_id(fd, m))) {
		ret = errno ? -errno : -ESTALE;
		close(fd);
		return fail(ret, "the tmpfs at %s: not the mount on top there", m->mountpoint);
	}
	w->dev = st.st_dev;
	ret = walk_dir(w, fd, "");	/* closes fd */
	if (ret)
		tmpfs_files_free(w);
	return ret;
}

/* Its files into e (memdump's field 55), if the entry stays one a reader takes. */
static int add_tmpfs(const struct dump_ctx *d, const struct mounts *all, const struct mount *m,
		     MntEntry *e, struct tmpfs_walk *w)
{
	size_t len;
	int ret = dump_tmpfs(d, all, m, w);

	if (ret)
		return ret;
	e->n_tmpfs_files = w->n;
	e->tmpfs_files = w->files;
	len = protobuf_c_message_get_packed_size(&e->base);
	if (len > IMG_MAX_ENTRY)
		return fail(-EFBIG, "tmpfs at %s: its %zu files take %zu bytes, more than the %u "
			    "of one entry of mountpoints-1.img", m->mountpoint, w->n, len,
			    IMG_MAX_ENTRY);
	return 0;
}

/* A tmpfs the process mounted itself, whose files restore makes. */
static bool made_tmpfs(const struct mnt_plan *p, size_t i)
{
	const struct mount *m = &p->theirs.m[i];

	return p->how[i] == HOW_MOUNTED && !strcmp(m->fstype, "tmpfs") && made_anew(p->theirs.m, i);
}

/* The key --external mnt[POINT]:KEY gives the bind mount at m's point, or NULL. */
static const char *ext_key_of(const struct dump_ctx *d, const struct mount *m)
{
	for (int i = 0; i < d->nr_mnt_ext; i++)
		if (!strcmp(d->mnt_ext[i].key, m->mountpoint))
			return d->mnt_ext[i].val;
	return NULL;
}

/*
 * The key of m as a tree's other namespace's mount (rp: the root's): a copy
 * of the root's external mount (the same point, filesystem and root), not
 * whatever that namespace mounted at its point since (zdtm mnt_ext_collision).
 */
static const char *member_ext_key(const struct dump_ctx *d, const struct mount *m,
				  const struct mnt_plan *rp)
{
	const char *key = ext_key_of(d, m);

	for (size_t k = 0; key && k < rp->theirs.n; k++) {
		const struct mount *o = &rp->theirs.m[k];

		if (!strcmp(o->mountpoint, m->mountpoint) && o->major == m->major &&
		    o->minor == m->minor && !strcmp(o->root, m->root))
			return key;
	}
	return NULL;
}

/* rp: the tree root's namespace, for a tree's other one (or NULL) */
static int write_mount(const struct dump_ctx *d, struct image *img, const struct mnt_plan *p,
		       size_t i, bool *in, bool pid_ns, const struct mnt_plan *rp)
{
	const struct mount *m = &p->theirs.m[i];
	MntEntry e = MNT_ENTRY__INIT;
	struct tmpfs_walk w = { .mp = m->mountpoint };
	char *data = data_of(m->super), *src = NULL;
	const char *ext = p->how[i] == HOW_KEPT ? NULL : rp ? member_ext_key(d, m, rp) :
			  ext_key_of(d, m);
	int ret = 0, from = -2, rk = !ext && rp ? root_tmpfs(p, i, rp) : -1;

	e.fstype = criu_fstype(m->fstype);
	e.mnt_id = (uint32_t)m->id;
	e.root_dev = makedev(m->major, m->minor);
	e.parent_mnt_id = (uint32_t)m->parent;
	e.flags = (uint32_t)m->flags;
	e.root = m->root;
	e.mountpoint = m->mountpoint;
	e.source = m->source;
	e.options = data ? data : "";
	e.has_sb_flags = true;	/* the superblock's read-only flag (CRIU's sb_flags) */
	e.sb_flags = !strncmp(m->super, "ro", 2) && (!m->super[2] || m->super[2] == ',') ?
		     MS_RDONLY : 0;
	e.has_shared_id = m->shared != 0;
	e.shared_id = (uint32_t)m->shared;
	e.has_master_id = m->master != 0;
	e.master_id = (uint32_t)m->master;
	e.fsname = m->fstype;
	e.has_how = true;
	e.how = (uint32_t)p->how[i];
	if (p->how[i] == HOW_KEPT) {
		e.has_propagation = true;
		e.propagation = (uint32_t)kept_propagation(p, i);
	} else {
		if (ext)	/* an external mount: bound from the path the restore is given */
			e.bind_from = src = strdup(m->root);
		else if (rk >= 0) {	/* the tree root's namespace's tmpfs */
			e.has_from_root_mnt = true;
			e.from_root_mnt = (uint32_t)rp->theirs.m[rk].id;
			e.bind_from = src = strdup("/");
		} else if (!made_anew(p->theirs.m, i) &&
			   !(e.bind_from = src = bind_source(p, i, &from)) &&
			   (e.bind_from = src = hidden_source(p, i, &from))) {
			e.has_bind_mnt = true;	/* under that mount's root, by restore's fd on it */
			e.bind_mnt = (uint32_t)p->theirs.m[from].id;
		}
		if ((ext || rk >= 0) && !src)
			ret = -ENOMEM;
		e.has_bind_host = from == -1;
		e.bind_host = from == -1;
		e.ext_key = (char *)ext;
		in[i] = by_init(p, i, in, pid_ns, from);
		e.has_in_child = true;
		e.in_child = in[i];
	}
	if (!ret && !ext && rk < 0 && made_tmpfs(p, i))
		ret = add_tmpfs(d, &p->theirs, m, &e, &w);
	if (!ret)
		ret = img_write_msg(img, &e.base);
	tmpfs_files_free(&w);
	free(data);
	free(src);
	return ret;
}

int mntns_dump(struct dump_ctx *d)
{
	bool pid_ns = pidns_own(d->pid), *in = NULL;
	struct image *img = NULL;
	struct mnt_plan p, rp = { 0 };
	int ret = plan_make(d->pid, &p);

	if (!ret && d->mnt_ns_id && d->tree)	/* a tree's other namespace: beside the root's */
		ret = plan_make(d->tree->procs[0].pid, &rp);
	if (!ret && !(in = calloc(p.theirs.n + 1, sizeof(*in))))
		ret = -ENOMEM;
	if (ret) {
		free(in);
		plan_free(&p);
		plan_free(&rp);
		return fail(ret, "cannot read the mount namespace of %d: %s", d->pid, strerror(-ret));
	}
	for (int k = 0; k < d->nr_mnt_ext && !ret && !d->mnt_ns_id; k++) {
		bool found = false;

		for (size_t i = 0; i < p.theirs.n && !found; i++)
			found = p.how[i] == HOW_MOUNTED && !strcmp(p.theirs.m[i].mountpoint,
								   d->mnt_ext[k].key);
		if (!found && d->mnt_ext[k].optional)
			pr_debug("ext_mnt %s: no bind mount there, passed over", d->mnt_ext[k].key);
		else if (!found)
			ret = fail(-ENOENT, "--external mnt[%s]: the process's mount namespace "
				   "mounted nothing there", d->mnt_ext[k].key);
	}
	if (!ret)
		ret = img_create(&d->dir, IMG_MNTS, d->mnt_ns_id ? d->mnt_ns_id : 1, &img);
	for (size_t i = 0; i < p.theirs.n && !ret; i++)
		ret = write_mount(d, img, &p, i, in, pid_ns, d->mnt_ns_id ? &rp : NULL);
	if (img && ret)
		img_abort(img);
	else if (img)
		ret = img_close(img);
	plan_free(&p);
	plan_free(&rp);
	free(in);
	return ret;
}
