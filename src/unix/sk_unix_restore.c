/*
 * Restore of UNIX sockets, all at once when the first one is opened:
 *
 *  1. listeners: bound to their name (a stale socket file left by the dumped
 *     process is removed first), file mode and owner, listen(backlog);
 *  2. connected stream and seqpacket pairs: a socketpair, or, when one end
 *     was accepted from a listener of the process (its name is the
 *     listener's), connect() to that listener and accept(), so both names
 *     are the dumped ones; an end whose peer was closed gets a peer that is
 *     closed after the refill (EOF after the data, as before);
 *  3. datagram sockets: mutual unnamed pairs as socketpairs, the others
 *     bound, then connected to their peer's name;
 *  4. options and file flags.
 *
 * In a tree, a socket another process made for this one is taken first, and
 * one whose peer another process opens is connected by sk_unix_tree.c.
 *
 * The queued data is sent again, each message from its sender, by the
 * forked child before the fds move (sk_child_finish()): it has the dumped
 * PID, so credentials a receiver sees (SO_PASSCRED) are the process's own;
 * other credentials are passed as SCM_CREDENTIALS. Shutdown bits and peek
 * offsets follow, once the data is in.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/mount.h>
#include <linux/sockios.h>

#ifndef SIOCUNIXFILE
#define SIOCUNIXFILE (SIOCPROTOPRIVATE + 0)	/* linux/un.h: an O_PATH fd on the file of its name */
#endif

#include "image/image.h"
#include "common.h"
#include "log.h"
#include "ctx/restore_ctx.h"

#include "sk-packet.pb-c.h"
#include "net/sock.h"
#include "unix/sk_unix.h"

/* The fd of file id (opened, or -1). */
static int *fd_slot(struct rst *r, uint32_t id)
{
	struct rdesc *d = rst_desc(r, id);

	return d ? &d->fd : NULL;
}

/* Socket ino when this process opens it (not a copy of another process's), or NULL. */
static const UnixSkEntry *by_ino(struct rst *r, uint32_t ino)
{
	for (size_t i = 0; i < r->ds.nr_files; i++) {
		const FileEntry *fe = r->ds.files[i];

		if (fe->type == FD_TYPES__UNIXSK && fe->usk && fe->usk->ino == ino &&
		    fd_slot(r, fe->id))
			return fe->usk;
	}
	return NULL;
}

/* u's peer when another process of the tree opens it, or NULL. */
static const UnixSkEntry *remote_peer(struct rst *r, const UnixSkEntry *u)
{
	return r->tree && u->peer && !by_ino(r, u->peer) ? sk_tree_entry(r, u->peer) : NULL;
}

static socklen_t addr_of(const UnixSkEntry *u, struct sockaddr_un *a)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (u->name.len)	/* unnamed: no data pointer */
		memcpy(a->sun_path, u->name.data, MIN(u->name.len, sizeof(a->sun_path)));
	return offsetof(struct sockaddr_un, sun_path) + MIN(u->name.len, sizeof(a->sun_path));
}

static bool named(const UnixSkEntry *u)
{
	return u->name.len > 0;
}

static bool same_name(const UnixSkEntry *a, const UnixSkEntry *b)
{
	return a->name.len && a->name.len == b->name.len &&
	       !memcmp(a->name.data, b->name.data, a->name.len);
}

static const char *name_text(const UnixSkEntry *u, char *buf, size_t len)
{
	if (!named(u))
		snprintf(buf, len, "(unnamed)");
	else if (u->name.data[0])
		snprintf(buf, len, "%.*s", (int)u->name.len, (const char *)u->name.data);
	else
		snprintf(buf, len, "@%.*s", (int)u->name.len - 1, (const char *)u->name.data + 1);
	return buf;
}

static int sk_fail(const UnixSkEntry *u, int err, const char *what)
{
	char n[120];

	return fail(err, "UNIX socket %u (%s): %s: %s", u->id, name_text(u, n, sizeof(n)), what,
		    strerror(-err));
}

/*
 * A name whose file was removed since the bind: bound again, at once linked
 * under an alias in the same directory (a socket file's inode is what connect()
 * finds), and removed again, whatever was at the path put back; the sockets
 * that connect to it use the alias (sk_unix_conn_addr()), which goes once all
 * are made (sk_unix_unlink_gone()). So another file or socket may take the
 * name meanwhile, as it had in the dumped process.
 */
struct sk_gone {
	uint32_t ino;
	bool listens;
	bool kept;		/* the child connects to it: it goes once the process is parked */
	const UnixSkEntry *u;
	char *alias;
	char *path, *made;	/* its name's file; the first directory made for it, or NULL */
};

/* The file of u's path name: its name, relative ones in their directory (CRIU's name_dir). */
static int name_path(const UnixSkEntry *u, char *buf, size_t len)
{
	int n;

	if (u->name.data[0] == '/' || !u->name_dir)
		n = snprintf(buf, len, "%.*s", (int)u->name.len, (const char *)u->name.data);
	else
		n = snprintf(buf, len, "%s/%.*s", u->name_dir, (int)u->name.len,
			     (const char *)u->name.data);
	return n > 0 && (size_t)n < len ? 0 : sk_fail(u, -ENAMETOOLONG, "its path is too long");
}

static socklen_t path_addr(const char *path, struct sockaddr_un *a)
{
	size_t n = strlen(path);

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	memcpy(a->sun_path, path, n);
	return offsetof(struct sockaddr_un, sun_path) + n + 1;
}

/* u's alias: its own (a datagram socket), or its listener's (an accepted one); the
 * latest bound (a listener standing in for a closed one is bound after the accept). */
static const struct sk_gone *gone_of(struct rst *r, const UnixSkEntry *u)
{
	struct rst *p = r;

	for (size_t i = 0; p; p = r->tree ? tree_proc(r, i++) : NULL) {
		for (size_t k = p->nr_sk_gone; k-- > 0;) {
			const struct sk_gone *g = &p->sk_gone[k];

			if (g->ino == u->ino || (g->listens && u->state != SK_LISTEN &&
						 same_name(g->u, u)))
				return g;
		}
		if (!r->tree)
			break;
	}
	return NULL;
}

/* A path under the root built for the process, as it sees it there (memdump's path less the stage). */
static const char *in_root(const struct rst *r, const char *path)
{
	size_t n = r->mnt_stage ? strlen(r->mnt_stage) : 0;

	return n && !strncmp(path, r->mnt_stage, n) && path[n] == '/' ? path + n : path;
}

/*
 * u's name to connect or send to, by memdump (at) or by the forked child
 * (!at), which, with a root of its own, is in that root by then.
 */
static socklen_t conn_addr(struct rst *r, const UnixSkEntry *u, struct sockaddr_un *a, bool at)
{
	const struct sk_gone *g = u->deleted ? gone_of(r, u) : NULL;
	char path[PATH_MAX], buf[PATH_MAX];
	const char *p;

	if (g)
		return path_addr(at ? g->alias : in_root(r, g->alias), a);
	if (!named(u) || !u->name.data[0] || (!u->name_dir && u->name.data[0] != '/') ||
	    (u->name.data[0] == '/' && !(at && r->mnt_stage)) || name_path(u, path, sizeof(path)))
		return addr_of(u, a);
	p = at ? rst_path(r, path, buf, sizeof(buf)) : path;	/* under the root built for it */
	if (strlen(p) >= sizeof(a->sun_path)) {	/* no other socket's: connect() fails */
		pr_warn("UNIX socket %u: %s is too long a name to connect to\n", u->ino, p);
		memset(a, 0, sizeof(*a));
		a->sun_family = AF_UNIX;
		return offsetof(struct sockaddr_un, sun_path);
	}
	return path_addr(p, a);
}

socklen_t sk_unix_conn_addr(struct rst *r, const UnixSkEntry *u, struct sockaddr_un *a)
{
	return conn_addr(r, u, a, true);
}

socklen_t sk_unix_late_addr(struct rst *r, const UnixSkEntry *u, struct sockaddr_un *a)
{
	return conn_addr(r, u, a, false);
}

static struct sk_gone *new_gone(struct rst *r)
{
	struct sk_gone *g = realloc(r->sk_gone, (r->nr_sk_gone + 1) * sizeof(*g));

	if (!g)
		return NULL;
	r->sk_gone = g;
	g = &g[r->nr_sk_gone++];
	memset(g, 0, sizeof(*g));
	return g;
}

/* The directories of path that are missing, made; the first one made in *made. */
static int make_dirs(const UnixSkEntry *u, const char *path, char **made)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", path);
	for (char *s = strchr(dir + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = 0;
		if (mkdir(dir, 0700) == 0) {
			if (!*made && !(*made = strdup(dir)))
				return -ENOMEM;
		} else if (errno != EEXIST) {
			return sk_fail(u, -errno, "cannot make the directory of its removed file");
		}
		*s = '/';
	}
	return 0;
}

/* The directories made for path removed again, deepest first, up to made. */
static void remove_dirs(const char *path, const char *made)
{
	char dir[PATH_MAX], *s;

	snprintf(dir, sizeof(dir), "%s", path);
	while ((s = strrchr(dir, '/')) && s > dir && strlen(dir) > strlen(made)) {
		*s = 0;
		if (rmdir(dir))
			break;
	}
}

static int alias_for(struct rst *r, const UnixSkEntry *u, const char *path, struct sk_gone *g,
		     const struct stat *sk)
{
	char alias[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int n = snprintf(alias, sizeof(alias), "%.*s.md%x-%zx", slash ? (int)(slash - path + 1) : 0,
			 path, (unsigned)getpid(), r->nr_sk_gone);
	struct sockaddr_un a;

	if (n < 0 || (size_t)n >= sizeof(a.sun_path))
		return sk_fail(u, -ENAMETOOLONG, "its directory's path is too long for a socket name");
	n = ghost_sweep_tell(r, alias, sk->st_dev, sk->st_ino);	/* gone with a killed restore */
	if (n)
		return n;
	if (link(path, alias))
		return sk_fail(u, -errno, "cannot link its removed name elsewhere for its peers");
	g->alias = strdup(alias);
	return g->alias ? 0 : -ENOMEM;
}

/* bind() with the dumped name itself (getsockname() shows it): a relative one in its directory. */
static int bind_name(struct rst *r, int fd, const UnixSkEntry *u);
static int set_perms(const UnixSkEntry *u, const char *path);

/*
 * A removed name's path borrowed for bind_at(arg): the file now at it moved
 * aside meanwhile, or its missing directories made (the first in *made, for
 * the caller to remove); the name bound there removed after, what was at the
 * path put back. Both binds of a removed name (memdump's, the child's) do this.
 */
static int on_borrowed_path(const UnixSkEntry *u, const char *path, char **made,
			    int (*bind_at)(void *), void *arg)
{
	char parked[PATH_MAX + 32];
	struct stat st;
	bool park = !lstat(path, &st);
	int ret = 0;

	snprintf(parked, sizeof(parked), "%s.memdump-%d", path, (int)getpid());
	if (park && rename(path, parked))
		return sk_fail(u, -errno, "cannot move aside the file now at its path");
	if (!park)
		ret = make_dirs(u, path, made);
	if (!ret)
		ret = bind_at(arg);
	if (unlink(path) && errno != ENOENT && !ret)
		ret = sk_fail(u, -errno, "cannot remove its name again");
	if (park && rename(parked, path) && !ret)
		ret = sk_fail(u, -errno, "cannot put back the file that was at its path");
	return ret;
}

/* What bind_gone() binds at the borrowed path. */
struct gone_bind {
	struct rst *r;
	int fd;
	const UnixSkEntry *u;
	const char *path;
	struct sk_gone *g;
};

/* Bound, the sweeper told, its permissions set, linked under an alias for its peers. */
static int gone_bind_at(void *arg)
{
	struct gone_bind *b = arg;
	struct stat sk;
	int ret = bind_name(b->r, b->fd, b->u);

	if (!ret && lstat(b->path, &sk))
		ret = sk_fail(b->u, -errno, "cannot find the file its bind made");
	if (!ret)	/* the sweeper removes the name too should the restore be killed */
		ret = ghost_sweep_tell(b->r, b->path, sk.st_dev, sk.st_ino);
	if (!ret)
		ret = set_perms(b->u, b->path);
	return ret ?: alias_for(b->r, b->u, b->path, b->g, &sk);
}

/* A removed name: bound, linked under an alias, removed, what was at the path put back. */
static int bind_gone(struct rst *r, int fd, const UnixSkEntry *u, const char *path)
{
	char *made = NULL;
	struct sk_gone *g = new_gone(r);
	struct gone_bind b = { .r = r, .fd = fd, .u = u, .path = path, .g = g };
	int ret;

	if (!g)
		return -ENOMEM;
	*g = (struct sk_gone){ .ino = u->ino, .listens = u->state == SK_LISTEN, .u = u };
	ret = on_borrowed_path(u, path, &made, gone_bind_at, &b);
	g->made = made;		/* removed with the alias */
	g->path = strdup(path);
	return ret ?: g->path ? 0 : -ENOMEM;
}

/* A path name's file: a stale socket file of the dumped process goes. */
static int free_path(const UnixSkEntry *u, const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return 0;
	if (!S_ISSOCK(st.st_mode))
		return sk_fail(u, -EEXIST, "its path is taken by a file that is not a socket");
	return unlink(path) ? sk_fail(u, -errno, "cannot remove the stale socket file") : 0;
}

static int set_perms(const UnixSkEntry *u, const char *path)
{
	if (!u->file_perms)
		return 0;
	if (chmod(path, u->file_perms->mode) ||
	    chown(path, u->file_perms->uid, u->file_perms->gid))
		return sk_fail(u, -errno, "cannot set its file's mode and owner");
	return 0;
}

#define ABSTRACT_WAIT_MS	3000

/*
 * An abstract name still bound by the dumped socket, which only a queue in
 * flight (SCM_RIGHTS) held when the original died: it goes when the kernel's
 * collector of in-flight sockets runs, which closing a UNIX socket schedules.
 * Kicked and waited for, a while; EADDRINUSE stays for a name held by others.
 */
static int bind_abstract(int fd, const struct sockaddr_un *a, socklen_t l)
{
	for (int waited = 0;; waited += 10) {
		int pair[2];

		if (!bind(fd, (const struct sockaddr *)a, l))
			return 0;
		if (errno != EADDRINUSE || waited >= ABSTRACT_WAIT_MS)
			return -errno;
		if (!socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair)) {
			close(pair[0]);
			close(pair[1]);
		}
		usleep(10000);
	}
}

/*
 * A root of its own (r->mnt_stage): the restoring thread, whose fs information
 * is its own since it unshared its mount namespace, takes the built root as
 * its root for a bind, so the socket's name is the dumped one as the process
 * sees it; *back: memdump's root, to go back to (leave_root()).
 */
static int enter_root(struct rst *r, const UnixSkEntry *u, int *back)
{
	*back = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*back < 0)
		return fail(-errno, "cannot open memdump's root: %s", strerror(errno));
	if (chroot(r->mnt_stage)) {
		int err = -errno;

		close(*back);
		*back = -1;
		return sk_fail(u, err, "cannot enter the root built for its process");
	}
	return 0;
}

static int leave_root(int back)
{
	int ret = fchdir(back) || chroot(".") ? -errno : 0;

	close(back);
	return ret ? fail(ret, "cannot go back to memdump's root: %s", strerror(-ret)) : 0;
}

/* bind(), memdump in the directory of a relative name (reported) */
static int bind_in(int fd, const UnixSkEntry *u)
{
	struct sockaddr_un a;
	socklen_t l = addr_of(u, &a);
	bool rel = u->name.data[0] && u->name.data[0] != '/' && u->name_dir;
	int err;

	if (rel && chdir(u->name_dir))
		return sk_fail(u, -errno, "cannot enter the directory of its relative name");
	err = !u->name.data[0] ? bind_abstract(fd, &a, l) :
		  bind(fd, (struct sockaddr *)&a, l) ? -errno : 0;
	return err ? sk_fail(u, err, "cannot bind") : 0;
}

/* Back to the directory fd back (whose: for the message), closed; ret, or the failure. */
static int go_back(int back, const char *whose, int ret)
{
	if (back < 0)
		return ret;
	if (fchdir(back))
		ret = ret ?: fail(-errno, "cannot go back to %s directory: %s", whose, strerror(errno));
	close(back);
	return ret;
}

/*
 * bind() with the dumped name itself (getsockname() shows it): a relative one
 * in its directory, a path under the root built for a process with a root of
 * its own, as it sees it.
 */
static int bind_name(struct rst *r, int fd, const UnixSkEntry *u)
{
	bool rel = u->name.data[0] && u->name.data[0] != '/' && u->name_dir;
	bool staged = r->mnt_stage && u->name.data[0];
	int back, root = -1, ret = 0;

	if (staged && u->name.data[0] != '/' && !u->name_dir)	/* memdump's cwd is not in it */
		return sk_fail(u, -EINVAL, "a relative name whose directory the image lacks, "
			       "in a root of its own");
	back = rel || staged ? open(".", O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	if ((rel || staged) && back < 0)
		ret = fail(-errno, "cannot open memdump's directory: %s", strerror(errno));
	if (!ret && staged)
		ret = enter_root(r, u, &root);
	if (!ret)
		ret = bind_in(fd, u);
	if (root >= 0)
		ret = leave_root(root) ?: ret;
	return go_back(back, "memdump's", ret);
}

/*
 * A name covered by a mount, in a root of its own (the dump checked there
 * what restore does; without one, the name is bound as it was before).
 */
static bool covered(const struct rst *r, const UnixSkEntry *u)
{
	return u->has_name_covered && u->name_covered && !u->deleted && r->mnt_stage;
}

bool sk_unix_covered(const struct rst *r, const UnixSkEntry *u)
{
	return covered(r, u);
}

/*
 * A name whose file a mount made on its path covers (zdtm overmount_sock):
 * *clone, a clone of its directory's mount alone under the root built for
 * it (none of the mounts on it: as memdump found the file at dump), and
 * path, the name's file through that clone.
 */
static int covered_dir(struct rst *r, const UnixSkEntry *u, char *path, size_t len, int *clone)
{
	bool abs = u->name.data[0] == '/';
	char buf[PATH_MAX];
	const char *at = rst_path(r, abs ? "/" : u->name_dir, buf, sizeof(buf));
	int n;

	if (!abs && !u->name_dir)
		return sk_fail(u, -EINVAL, "a covered relative name whose directory the image lacks");
	*clone = (int)syscall(SYS_open_tree, AT_FDCWD, at, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (*clone < 0)
		return sk_fail(u, -errno, "cannot clone the mount of its name's directory, which "
			       "a mount covers");
	n = snprintf(path, len, "/proc/self/fd/%d/%.*s", *clone, (int)u->name.len - abs,
		     (const char *)u->name.data + abs);
	return n > 0 && (size_t)n < len ? 0 : sk_fail(u, -ENAMETOOLONG, "its path is too long");
}

int sk_unix_covered_addr(struct rst *r, const UnixSkEntry *u, struct sockaddr_un *a,
			 socklen_t *l, int *dir)
{
	char path[PATH_MAX], *last;
	int clone = -1, ret = covered_dir(r, u, path, sizeof(path), &clone);

	last = ret ? NULL : strrchr(path, '/');
	if (last) {
		*last = 0;
		*dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (*dir < 0)
			ret = sk_fail(u, -errno, "cannot open the directory of its covered name");
		else
			*l = path_addr(last + 1, a);
	}
	if (clone >= 0)
		close(clone);	/* the clone lives on under *dir */
	return ret;
}

/*
 * bind() of a covered name in clone (covered_dir()): a relative name from
 * the clone as the directory, an absolute one with the clone as the root,
 * so getsockname() shows the dumped name.
 */
static int bind_covered(int fd, const UnixSkEntry *u, int clone)
{
	struct sockaddr_un a;
	socklen_t l = addr_of(u, &a);
	bool abs = u->name.data[0] == '/';
	int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int root = abs ? open("/", O_PATH | O_DIRECTORY | O_CLOEXEC) : -1, ret = 0;

	if (cwd < 0 || (abs && root < 0))
		ret = fail(-errno, "cannot open memdump's directory: %s", strerror(errno));
	else if (fchdir(clone) || (abs && chroot(".")))
		ret = sk_fail(u, -errno, "cannot enter the clone of its directory's mount");
	else if (bind(fd, (struct sockaddr *)&a, l))
		ret = sk_fail(u, -errno, "cannot bind");
	if (root >= 0)
		ret = leave_root(root) ?: ret;
	return go_back(cwd, "memdump's", ret);
}

static int sk_unix_bind_covered(struct rst *r, int fd, const UnixSkEntry *u)
{
	char path[PATH_MAX];
	int clone = -1, ret = covered_dir(r, u, path, sizeof(path), &clone);

	if (!ret)
		ret = free_path(u, path) ?: bind_covered(fd, u, clone) ?: set_perms(u, path);
	if (clone >= 0)
		close(clone);
	return ret;
}

int sk_unix_bind(struct rst *r, int fd, const UnixSkEntry *u)
{
	char name[PATH_MAX], buf[PATH_MAX];
	const char *path;
	int ret;

	if (!named(u))
		return 0;
	if (!u->name.data[0])
		return bind_name(r, fd, u);	/* abstract */
	if (covered(r, u))
		return sk_unix_bind_covered(r, fd, u);
	ret = name_path(u, name, sizeof(name));
	path = rst_path(r, name, buf, sizeof(buf));	/* its file as memdump finds it */
	if (!ret && u->deleted)
		return bind_gone(r, fd, u, path);
	if (!ret)
		ret = free_path(u, path);
	if (!ret)
		ret = bind_name(r, fd, u);
	return ret ? ret : set_perms(u, path);
}

/*
 * The forked child, in its own root by then, binds a pair end it made again
 * (sk_unix_cred_restore.c) to its dumped name: a removed one is bound and
 * removed again, whatever is at its path moved aside meanwhile and the
 * directories missing made for the while. Nobody connects to such a name: a
 * pair end's peer is its twin. bind() leaves the peer credentials as they are.
 */
/* What bind_late_gone() binds at the borrowed path. */
struct late_bind {
	int fd;
	const UnixSkEntry *u;
	const char *path;
};

static int late_bind_at(void *arg)
{
	struct late_bind *b = arg;

	return bind_in(b->fd, b->u) ?: set_perms(b->u, b->path);
}

static int bind_late_gone(int fd, const UnixSkEntry *u, const char *path)
{
	struct late_bind b = { .fd = fd, .u = u, .path = path };
	char *made = NULL;
	int ret = on_borrowed_path(u, path, &made, late_bind_at, &b);

	if (made)
		remove_dirs(path, made);
	free(made);
	return ret;
}

int sk_unix_bind_late(int fd, const UnixSkEntry *u)
{
	char path[PATH_MAX];
	int back, ret;

	if (!named(u))
		return 0;
	if (!u->name.data[0])
		return bind_in(fd, u);	/* abstract */
	ret = name_path(u, path, sizeof(path));
	back = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (!ret && back < 0)
		ret = fail(-errno, "cannot open the directory: %s", strerror(errno));
	if (!ret && u->deleted)
		ret = bind_late_gone(fd, u, path);
	else if (!ret)
		ret = free_path(u, path) ?: bind_in(fd, u) ?: set_perms(u, path);
	return go_back(back, "its", ret);
}

void sk_unix_keep_alias(struct rst *r, const UnixSkEntry *l)
{
	for (size_t i = 0; i < r->nr_sk_gone; i++)
		if (r->sk_gone[i].ino == l->ino)
			r->sk_gone[i].kept = true;
}

bool sk_unix_aliases_kept(const struct rst *r)
{
	for (size_t i = 0; i < r->nr_sk_gone; i++)
		if (r->sk_gone[i].kept)
			return true;
	return false;
}

void sk_unix_unlink_all(struct rst *r)
{
	for (size_t i = 0; i < r->nr_sk_gone; i++) {
		struct sk_gone *g = &r->sk_gone[i];

		if (g->alias && unlink(g->alias) && errno != ENOENT)
			pr_warn("cannot remove %s: %s\n", g->alias, strerror(errno));
	}
	for (size_t i = r->nr_sk_gone; i-- > 0;) {	/* every alias gone: their directories */
		struct sk_gone *g = &r->sk_gone[i];

		if (g->made && g->path)
			remove_dirs(g->path, g->made);
		free(g->alias);
		free(g->path);
		free(g->made);
	}
	free(r->sk_gone);
	r->sk_gone = NULL;
	r->nr_sk_gone = 0;
}

void sk_unix_unlink_gone(struct rst *r)
{
	if (!sk_unix_aliases_kept(r))	/* else all together, the process parked (its directories too) */
		sk_unix_unlink_all(r);
}

int sk_unix_new(const UnixSkEntry *u)
{
	int fd = socket(AF_UNIX, u->type | SOCK_CLOEXEC, 0);

	return fd < 0 ? sk_fail(u, -errno, "cannot create") : fd;
}

int sk_unix_listen(struct rst *r, const UnixSkEntry *u)
{
	int fd = sk_unix_new(u), ret;

	if (fd < 0)
		return fd;
	ret = sk_unix_bind(r, fd, u);
	if (!ret && listen(fd, u->backlog))
		ret = sk_fail(u, -errno, "cannot listen");
	if (ret)
		close(fd);
	return ret ? ret : fd;
}

/* Made already for this process by another of the tree (its peer's or a connection's). */
static bool take_from_tree(struct rst *r, const UnixSkEntry *u)
{
	int fd = r->tree ? tree_sock_get(r, u->ino) : -1;

	if (fd >= 0)
		*fd_slot(r, u->id) = fd;
	return fd >= 0;
}

static int open_listener(struct rst *r, const UnixSkEntry *u)
{
	int fd;

	if (take_from_tree(r, u))
		return 0;	/* made ahead by a process with a connection to it */
	fd = sk_unix_listen(r, u);
	if (fd < 0)
		return fd;
	*fd_slot(r, u->id) = fd;
	return 0;
}

/* The listener of the process with u's name, opened already (pass 1). */
static int listener_fd(struct rst *r, const UnixSkEntry *u)
{
	for (size_t i = 0; i < r->ds.nr_files; i++) {
		const FileEntry *fe = r->ds.files[i];

		if (fe->type == FD_TYPES__UNIXSK && fe->usk && fe->usk->state == SK_LISTEN &&
		    same_name(fe->usk, u) && fd_slot(r, fe->id))
			return *fd_slot(r, fe->id);
	}
	return -1;
}

/* The stand-in for u's closed peer: it sends u's data, then is closed. */
static int keep_helper(struct rst *r, const UnixSkEntry *u, int fd)
{
	struct sk_helper *h = realloc(r->sk_helpers, (r->nr_sk_helpers + 1) * sizeof(*h));

	if (!h) {
		close(fd);
		return -ENOMEM;
	}
	r->sk_helpers = h;
	h[r->nr_sk_helpers++] = (struct sk_helper){ .for_id = u->id, .fd = fd };
	return 0;
}

/* fd becomes peer p's, or the stand-in for u's closed peer. */
static int give_peer(struct rst *r, const UnixSkEntry *u, const UnixSkEntry *p, int fd)
{
	int *slot = p ? fd_slot(r, p->id) : NULL;

	if (slot) {
		*slot = fd;
		return 0;
	}
	return keep_helper(r, u, fd);
}

/* acc was accepted from the listener lfd; its peer p (NULL: closed) connected to it. */
/*
 * The name to connect to acc's listener lfd by: its name, or, covered by a
 * mount (name_covered), its file through memdump's fd *pfd on it.
 */
static socklen_t listener_addr(struct rst *r, const UnixSkEntry *acc, int lfd,
			       struct sockaddr_un *a, int *pfd)
{
	char path[64];

	*pfd = covered(r, acc) ? ioctl(lfd, SIOCUNIXFILE) : -1;
	if (*pfd < 0)
		return sk_unix_conn_addr(r, acc, a);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", *pfd);
	return path_addr(path, a);
}

static int accept_pair(struct rst *r, const UnixSkEntry *acc, const UnixSkEntry *p, int lfd)
{
	struct sockaddr_un a;
	int pfd, c = sk_unix_new(acc), s, ret;
	socklen_t l = listener_addr(r, acc, lfd, &a, &pfd);

	if (c < 0) {
		if (pfd >= 0)
			close(pfd);
		return c;
	}
	ret = p ? sk_unix_bind(r, c, p) : 0;
	if (!ret && connect(c, (struct sockaddr *)&a, l))
		ret = sk_fail(acc, -errno, "cannot connect to its listener");
	if (pfd >= 0)
		close(pfd);
	if (ret) {
		close(c);
		return ret;
	}
	s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (s < 0) {
		close(c);
		return sk_fail(acc, -errno, "cannot accept from its listener");
	}
	*fd_slot(r, acc->id) = s;
	return give_peer(r, acc, p, c);
}

static int open_pair(struct rst *r, const UnixSkEntry *u, const UnixSkEntry *p)
{
	int sv[2];

	if (socketpair(AF_UNIX, u->type | SOCK_CLOEXEC, 0, sv))
		return sk_fail(u, -errno, "cannot create a socketpair");
	*fd_slot(r, u->id) = sv[0];
	return give_peer(r, u, p, sv[1]);
}

/*
 * acc was accepted from a listener the process has closed since: a listener
 * with its name stands in (bound as acc's name is: a removed name through its
 * alias) for the accept, then is closed again. The name's file is left as
 * the closed listener left it.
 */
static int accept_from_gone(struct rst *r, const UnixSkEntry *u, const UnixSkEntry *p,
			    const UnixSkEntry *acc)
{
	int lfd = sk_unix_new(acc), ret;

	if (lfd < 0)
		return lfd;
	ret = sk_unix_bind(r, lfd, acc);
	if (!ret && listen(lfd, 1))
		ret = sk_fail(acc, -errno, "cannot listen in place of its closed listener");
	if (!ret)
		ret = acc == u ? accept_pair(r, u, p, lfd) : accept_pair(r, p, u, lfd);
	close(lfd);
	return ret;
}

static int open_connected_stream(struct rst *r, const UnixSkEntry *u)
{
	const UnixSkEntry *p = u->peer ? by_ino(r, u->peer) : NULL;
	const UnixSkEntry *acc = named(u) ? u : p && named(p) ? p : NULL;
	int lfd = acc ? listener_fd(r, acc) : -1, ret;

	if (!acc)
		return open_pair(r, u, p);
	if (lfd < 0 && r->tree && (ret = sk_tree_listener(r, acc, &lfd)) < 0)
		return ret;	/* another process's listener */
	if (lfd < 0 && p && named(u) && named(p))
		return sk_fail(u, -ENOENT, "no listening socket of the process has its name");
	if (lfd < 0)
		return accept_from_gone(r, u, p, acc);
	return acc == u ? accept_pair(r, u, p, lfd) : accept_pair(r, p, u, lfd);
}

static int open_dgram(struct rst *r, const UnixSkEntry *u)
{
	const UnixSkEntry *p = u->peer ? by_ino(r, u->peer) : NULL;
	int fd, ret;

	if (p && p != u && p->peer == u->ino) {	/* a pair: each end names the other */
		ret = open_pair(r, u, p);

		if (!ret && sk_cred_binds_late(r, u, p))
			return 0;	/* made again and bound by the child */
		if (!ret)
			ret = sk_unix_bind(r, *fd_slot(r, u->id), u);
		return ret ? ret : sk_unix_bind(r, *fd_slot(r, p->id), p);
	}
	if (u->peer_closed) {	/* a twin, closed after sending what it sent */
		ret = open_pair(r, u, NULL);

		return ret ? ret : sk_unix_bind(r, *fd_slot(r, u->id), u);
	}
	fd = sk_unix_new(u);
	if (fd < 0)
		return fd;
	*fd_slot(r, u->id) = fd;
	ret = sk_unix_bind(r, fd, u);
	if (!ret && u->state == SK_ESTABLISHED && !u->peer)
		ret = sk_unix_dgram_touch(r, u);	/* SK_ESTABLISHED as another connected to it */
	return ret;
}

static int open_one(struct rst *r, const UnixSkEntry *u)
{
	const UnixSkEntry *p = remote_peer(r, u);
	int fd;

	if (take_from_tree(r, u))
		return 0;
	if (sk_unix_is_pending(r, u))
		return sk_unix_pending_open(r, u);	/* connected by the child, in order */
	if (p)
		return sk_tree_connect(r, u, p);	/* its peer is another process's */
	if (u->type == SOCK_DGRAM)
		return open_dgram(r, u);
	if (u->state == SK_ESTABLISHED)
		return open_connected_stream(r, u);
	fd = sk_unix_new(u);
	if (fd < 0)
		return fd;
	*fd_slot(r, u->id) = fd;
	return sk_unix_bind(r, fd, u);
}

/*
 * dump --ext-unix-sk: a peer outside the dump, connected to by its name again
 * (whatever socket has that name now: the same one after a killing dump, the
 * outside process running on).
 */
static int connect_ext(struct rst *r, const UnixSkEntry *u)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t n = u->ext_peer_name.len;

	if (!n || n > sizeof(a.sun_path) || (u->ext_peer_name.data[0] != '/' &&
					     u->ext_peer_name.data[0] != 0))
		return sk_fail(u, -EIO, "its image is corrupt: a bad name of its peer outside");
	memcpy(a.sun_path, u->ext_peer_name.data, n);
	if (r->mnt_stage && a.sun_path[0] == '/') {	/* a path under the root built for it */
		char buf[PATH_MAX];
		const char *at = rst_path(r, a.sun_path, buf, sizeof(buf));

		if (strlen(at) >= sizeof(a.sun_path))
			return sk_fail(u, -ENAMETOOLONG, "its peer outside's path under its root");
		memset(a.sun_path, 0, sizeof(a.sun_path));
		n = strlen(at) + 1;
		memcpy(a.sun_path, at, n);
	}
	if (connect(*fd_slot(r, u->id), (struct sockaddr *)&a,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)))
		return sk_fail(u, -errno, "cannot connect to its peer outside the dump");
	pr_info("UNIX socket %u: connected to %s%.*s outside the dump again\n", u->ino,
		a.sun_path[0] ? "" : "@", (int)(a.sun_path[0] ? n : n - 1),
		a.sun_path[0] ? a.sun_path : a.sun_path + 1);
	return 0;
}

/* A datagram socket connected to a peer that is not its socketpair twin. */
static int connect_dgram(struct rst *r, const UnixSkEntry *u)
{
	const UnixSkEntry *p = u->peer ? by_ino(r, u->peer) : NULL;
	struct sockaddr_un a;
	socklen_t l;

	if (!p)
		p = remote_peer(r, u);
	/* not a socketpair's end; one connected to its own name is connected here */
	if (u->type != SOCK_DGRAM || !u->peer || (p && p != u && p->peer == u->ino))
		return 0;
	if (!p && u->has_ext_peer_name)
		return connect_ext(r, u);
	if (!p || !named(p))
		return sk_fail(u, -EINVAL, "its peer has no name to connect to");
	l = sk_unix_conn_addr(r, p, &a);
	if (connect(*fd_slot(r, u->id), (struct sockaddr *)&a, l))
		return sk_fail(u, -errno, "cannot connect to its peer");
	return 0;
}

static int set_flags(struct rst *r, const UnixSkEntry *u)
{
	char why[160];
	int fd = *fd_slot(r, u->id), ret = sk_opts_apply(fd, u->opts, true, why, sizeof(why));

	if (ret)
		return sk_fail(u, ret, why);
	if (fcntl(fd, F_SETFL, u->flags & O_NONBLOCK))
		return sk_fail(u, -errno, "cannot set its file flags");
	return 0;
}

typedef int (*usk_step)(struct rst *r, const UnixSkEntry *u);

/* step on every UNIX socket that some fd uses and that is (open) or is not yet opened. */
static int each(struct rst *r, usk_step step, bool open, bool listeners)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < r->ds.nr_files; i++) {
		const FileEntry *fe = r->ds.files[i];
		int *slot = fe->type == FD_TYPES__UNIXSK && fe->usk ? fd_slot(r, fe->id) : NULL;

		if (!slot || (open != (*slot >= 0)) ||
		    (listeners != (fe->usk->state == SK_LISTEN) && !open))
			continue;
		ret = step(r, fe->usk);
	}
	return ret;
}

int sk_unix_open_all(struct rst *r)
{
	int ret = each(r, open_listener, false, true);

	if (!ret)
		ret = each(r, open_one, false, false);
	if (!ret)
		ret = each(r, connect_dgram, true, false);
	if (!ret)
		ret = each(r, set_flags, true, false);
	if (!ret && !r->tree)
		ret = sk_queue_plan(r);	/* a tree's: once every process's sockets are made */
	return ret;
}

int sk_unix_keep_standin(struct rst *r, int fd)
{
	struct sk_helper *h = realloc(r->sk_helpers, (r->nr_sk_helpers + 1) * sizeof(*h));

	if (!h)
		return -ENOMEM;
	r->sk_helpers = h;
	h[r->nr_sk_helpers++] = (struct sk_helper){ .for_id = 0, .fd = fd };	/* no socket's */
	return 0;
}

void sk_helpers_close(struct rst *r)
{
	for (size_t i = 0; i < r->nr_sk_helpers; i++)
		close(r->sk_helpers[i].fd);
	free(r->sk_helpers);
	r->sk_helpers = NULL;
	r->nr_sk_helpers = 0;
}
