/*
 * Peer credentials (SO_PEERCRED, SO_PEERGROUPS, SO_PEERPIDFD) made again:
 * the kernel fixes them when a pair is made (the maker's, on both ends), at
 * listen() (the listener's, which a client copies at connect()) and at
 * connect() (the connecting process's, on the accepted end), from the pid and
 * effective ids of the process that makes the call. memdump makes every socket
 * before the process exists; the forked child, which has the dumped PID,
 * makes again those whose dumped credentials are its own, with the dumped
 * effective uid, gid and groups set for the call and its own back after, and
 * puts them on memdump's fds before anything else it does on sockets (so the
 * queues, shutdowns and options go to the new ones):
 *
 *  - a socketpair of the process, both ends unnamed;
 *  - a connection accepted from a listener of the process, the client's end
 *    unnamed, the listener's name not removed: listen() again (the listener's
 *    credentials), connect(), accept().
 *
 * In a tree, a process also makes again, before it forks its children, a
 * pair, or a connection accepted from its listener, it made alone (both
 * ends' credentials its own) whose other end a process it forks (or one
 * below) holds alone, or with the processes that one forks: that end goes on
 * memdump's fd for it, and on the copies kept for those, which they inherit.
 *
 * Which: unix/sk_unix_cred.c decides (sk_cred_ops), over a view of the tree
 * built here from the images; the dump refused every other socket with peer
 * credentials, deciding over the same view of its own (sk_unix_cred_dump.c).
 * A listener whose listen() the process made is listened to again (first),
 * an unnamed end whose peer was closed made again with its stand-in, a pair
 * the processes it forks hold too made again before the fork (reshare()).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "ctx/restore_ctx.h"
#include "net/sock.h"
#include "unix/sk_unix.h"

/* Socket ino when this process opens it, or NULL. */
static const UnixSkEntry *own(struct rst *r, uint32_t ino)
{
	for (size_t i = 0; i < r->ds.nr_files; i++) {
		const FileEntry *fe = r->ds.files[i];

		if (fe->type == FD_TYPES__UNIXSK && fe->usk && fe->usk->ino == ino &&
		    rst_desc(r, fe->id) && rst_desc(r, fe->id)->fd >= 0)
			return fe->usk;
	}
	return NULL;
}

static int fd_of(struct rst *r, const UnixSkEntry *u)
{
	return rst_desc(r, u->id)->fd;
}

/* The fd number of file id in process r, or -1. */
static int target_of(const struct rst *r, uint32_t id)
{
	for (size_t i = 0; i < r->nr_fds; i++)
		if (r->fds[i].id == id)
			return r->fds[i].target;
	return -1;
}

/* Is fd number fd of process r one of file id's? */
static bool fd_is(const struct rst *r, int fd, uint32_t id)
{
	for (size_t i = 0; i < r->nr_fds; i++)
		if (r->fds[i].target == fd)
			return r->fds[i].id == id;
	return false;
}

/* Is d forked by r, or by one r forks? */
static bool below(const struct rst *d, const struct rst *r)
{
	for (d = d->tree_parent; d; d = d->tree_parent)
		if (d == r)
			return true;
	return false;
}

/* Does another process of the tree take u's description from this one? other: one
 * r does not fork (nor one below). */
static bool shared_out(struct rst *r, const UnixSkEntry *u, bool other)
{
	struct rst *o;

	for (size_t i = 0; r->tree && (o = tree_proc(r, i)); i++)
		for (size_t k = 0; o != r && k < o->nr_shares; k++)
			if (o->shares[k].owner == r && fd_is(r, o->shares[k].owner_fd, u->id) &&
			    (!other || !below(o, r)))
				return true;
	return false;
}

/* Made again by r before the fork: the copies of u's description (opened by process
 * x, r or one r forks) kept for the processes that take it (they inherit them) become
 * copies of the new one, at. */
static int reshare(struct rst *r, struct rst *x, const UnixSkEntry *u, int at)
{
	struct rst *o;

	for (size_t i = 0; r->tree && (o = tree_proc(r, i)); i++)
		for (size_t k = 0; o != x && k < o->nr_shares; k++)
			if (o->shares[k].owner == x && fd_is(x, o->shares[k].owner_fd, u->id) &&
			    o->shares[k].src >= 0 && dup3(at, o->shares[k].src, O_CLOEXEC) < 0)
				return -errno;
	return 0;
}

/* The ends s makes again: u, its peer p, and the listener l (NULL: a pair) of r's. */
static void late_ends(struct rst *r, struct sk_late *s, const UnixSkEntry *u,
		      const UnixSkEntry *p, const UnixSkEntry *l)
{
	s->u = u;
	s->p = p;
	s->l = l;
	s->lfd = l ? fd_of(r, l) : -1;
	if (l && sk_unix_covered(r, l))	/* the child connects from under the mount on it */
		s->covered = !sk_unix_covered_addr(r, l, &s->to, &s->tolen, &s->todir);
	else if (l)
		s->tolen = sk_unix_late_addr(r, l, &s->to);
}

/* connect() c to l's listener: a covered name from its directory under the mount on it. */
static int late_connect(int c, const struct sk_late *l)
{
	int cwd = l->covered ? open(".", O_PATH | O_DIRECTORY | O_CLOEXEC) : -1, ret = 0;

	if (l->covered && (cwd < 0 || fchdir(l->todir)))
		ret = -errno;
	if (!ret && connect(c, (const struct sockaddr *)&l->to, l->tolen))
		ret = -errno;
	if (cwd >= 0 && fchdir(cwd))
		ret = ret ?: -errno;
	if (cwd >= 0)
		close(cwd);
	return ret;
}

static int plan(struct rst *r, int op, const UnixSkEntry *u, const UnixSkEntry *p,
		const UnixSkEntry *l)
{
	struct sk_late *s = sk_late_new(r, op, fd_of(r, u));

	if (!s)
		return -ENOMEM;
	pr_info("UNIX sockets %u and %u: made again by process %d with their peer credentials\n",
		u->ino, p->ino, r->pid);
	s->fd2 = fd_of(r, p);
	s->bind = op == SK_LATE_PAIR && sk_cred_binds_late(r, u, p);
	late_ends(r, s, u, p, l);
	if (l && l->deleted)	/* the child connects to its alias */
		sk_unix_keep_alias(r, l);
	return 0;
}

bool sk_cred_binds_late(struct rst *r, const UnixSkEntry *u, const UnixSkEntry *p)
{
	return u->type == SOCK_DGRAM && p->type == SOCK_DGRAM && (u->name.len || p->name.len) &&
	       u->peer_cred && p->peer_cred && u->peer_cred->pid == (uint32_t)r->pid &&
	       p->peer_cred->pid == (uint32_t)r->pid;
}

/* Is u (left unbound for it) an end of a pair the process makes again and binds? */
static bool bound_late(const struct rst *r, const UnixSkEntry *u)
{
	for (size_t i = 0; i < r->nr_sk_late; i++)
		if (r->sk_late[i].bind && (r->sk_late[i].u == u || r->sk_late[i].p == u))
			return true;
	return false;
}

/* Every named datagram pair end open_dgram() left unbound is bound by the child. */
static int check_bound(struct rst *r)
{
	for (size_t i = 0; i < r->ds.nr_files; i++) {
		const FileEntry *fe = r->ds.files[i];
		const UnixSkEntry *u = fe->type == FD_TYPES__UNIXSK ? fe->usk : NULL;
		const UnixSkEntry *p = u && u->peer ? own(r, u->peer) : NULL;

		if (u && own(r, u->ino) == u && p && p != u && p->peer == u->ino &&
		    sk_cred_binds_late(r, u, p) && !bound_late(r, u))
			return fail(-EIO, "UNIX socket %u: a named datagram pair end that process "
				    "%d does not make again (its image is not the dump's)", u->ino,
				    r->pid);
	}
	return 0;
}

/* The remake of u (this process's) and p (o's) planned, before the fork (TREE_PAIR, TREE_ACCEPT). */
static int plan_tree(struct rst *r, int op, const UnixSkEntry *u, struct rst *o,
		     const UnixSkEntry *p, const UnixSkEntry *l)
{
	const UnixSkEntry *acc = op == SK_LATE_TREE_PAIR || u->name.len ? u : p;
	const UnixSkEntry *cli = acc == u ? p : u;
	struct rst *ao = acc == u ? r : o, *co = acc == u ? o : r;
	struct sk_late *s = sk_late_new(r, op, rst_desc(ao, acc->id)->fd);

	if (!s)
		return -ENOMEM;
	pr_info("UNIX sockets %u and %u: made again by process %d with their peer credentials, "
		"%u for process %d\n", u->ino, p->ino, r->pid, p->ino, o->pid);
	s->fd2 = rst_desc(co, cli->id)->fd;
	s->uproc = ao;
	s->pproc = co;
	late_ends(r, s, acc, cli, l);
	return 0;
}

/* The view of r's tree (r alone: a view of one) sk_unix_cred.c decides over. */
struct view {
	struct ucv v;
	struct rst **rst;	/* procs[i]'s */
	size_t self;		/* r's index */
};

static void view_free(struct view *w)
{
	for (size_t i = 0; w->v.procs && i < w->v.n; i++)
		free(w->v.procs[i].sks);
	free(w->v.procs);
	free(w->rst);
}

/* x's UNIX sockets, those it opens itself. */
static int view_proc(struct rst *x, struct ucv_proc *p)
{
	p->pid = x->pid;
	p->sks = calloc(x->ds.nr_files + 1, sizeof(*p->sks));
	if (!p->sks)
		return -ENOMEM;
	for (size_t i = 0; i < x->ds.nr_files; i++) {
		const FileEntry *fe = x->ds.files[i];
		const UnixSkEntry *u = fe->type == FD_TYPES__UNIXSK ? fe->usk : NULL;

		if (u && own(x, u->ino) == u)
			p->sks[p->nr_sks++] = (struct ucv_sk){ .u = u, .fd = target_of(x, u->id),
				.shared_out = shared_out(x, u, false),
				.shared_other = shared_out(x, u, true) };
	}
	return 0;
}

static int view_build(struct rst *r, struct view *w)
{
	size_t n = 1;
	int ret = 0;

	while (r->tree && tree_proc(r, n))
		n++;
	w->v.tree = r->tree != NULL;
	w->v.n = n;
	w->v.procs = calloc(n, sizeof(*w->v.procs));
	w->rst = calloc(n, sizeof(*w->rst));
	if (!w->v.procs || !w->rst)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		w->rst[i] = r->tree ? tree_proc(r, i) : r;
		if (w->rst[i] == r)
			w->self = i;
	}
	for (size_t i = 0; !ret && i < n; i++) {
		w->v.procs[i].parent = -1;
		for (size_t k = 0; k < n; k++)
			if (w->rst[i]->tree_parent == w->rst[k])
				w->v.procs[i].parent = (int)k;
		ret = view_proc(w->rst[i], &w->v.procs[i]);
	}
	return ret;
}

/* A listener listened to again by the process under the dumped ids (first). */
static int plan_listen(struct rst *r, const UnixSkEntry *l)
{
	struct sk_late *s = sk_late_new(r, SK_LATE_LISTEN, fd_of(r, l));

	if (!s)
		return -ENOMEM;
	pr_info("UNIX socket %u: listened to again by process %d with its credentials\n",
		l->ino, r->pid);
	s->u = s->p = s->l = l;
	s->lfd = fd_of(r, l);
	return 0;
}

/* u, whose peer was closed, made again with the stand-in for that peer (sk_unix_restore.c). */
static int plan_closed(struct rst *r, const UnixSkEntry *u)
{
	struct sk_late *s;
	int fd = -1;

	for (size_t i = 0; i < r->nr_sk_helpers; i++)
		if (r->sk_helpers[i].for_id == u->id)
			fd = r->sk_helpers[i].fd;
	if (fd < 0)
		return fail(-EIO, "UNIX socket %u: no stand-in for its closed peer", u->ino);
	s = sk_late_new(r, SK_LATE_PAIR, fd_of(r, u));
	if (!s)
		return -ENOMEM;
	pr_info("UNIX socket %u: made again by process %d with its peer credentials, its closed "
		"peer's stand-in too\n", u->ino, r->pid);
	s->fd2 = fd;
	s->u = u;
	return 0;
}

/* A connection made after the fork: r accepts (FORK_ACCEPT) or connects (FORK_CONNECT). */
/*
 * The stand-in for the listener a (r's, accepted) came from, closed since: made with
 * a's name (memdump keeps it until the restore ends), listened to again by r before
 * it forks under c's copy of the closed listener's ids (a LISTEN step), closed by r
 * once it accepted (fork_accept()). Its fd, or -errno.
 */
static int stand_in(struct rst *r, const UnixSkEntry *a, const UnixSkEntry *c)
{
	int fd = sk_unix_new(a), ret;
	struct sk_late *t;

	if (fd < 0)
		return fd;
	ret = sk_unix_bind(r, fd, a);
	if (!ret && listen(fd, 1))
		ret = -errno;
	if (!ret)
		ret = sk_unix_keep_standin(r, fd);
	if (ret) {
		close(fd);
		return ret;
	}
	sk_unix_keep_alias(r, a);	/* a removed name: its peer connects to the alias */
	t = sk_late_new(r, SK_LATE_LISTEN, fd);
	if (!t)
		return -ENOMEM;
	t->u = a;
	t->p = t->l = c;
	t->lfd = fd;
	return fd;
}

static int plan_fork(struct rst *r, int op, const UnixSkEntry *u, struct rst *o,
		     const UnixSkEntry *p, const UnixSkEntry *l)
{
	int lfd = op == SK_LATE_FORK_ACCEPT && !l ? stand_in(r, u, p) : -1;
	const UnixSkEntry *to = l ? l : p;	/* FORK_CONNECT to a stand-in: the name its peer has */
	struct sk_late *s;

	if (op == SK_LATE_FORK_ACCEPT && !l && lfd < 0)
		return lfd;
	s = sk_late_new(r, op, fd_of(r, u));
	if (!s)
		return -ENOMEM;
	pr_info("UNIX socket %u: %s again by process %d with its peer credentials (its peer %u "
		"process %d's%s)\n", u->ino, op == SK_LATE_FORK_ACCEPT ? "accepted" : "connected",
		r->pid, p->ino, o->pid, l ? "" : ", through a listener standing in for its closed one");
	s->u = u;
	s->p = p;
	s->l = l;
	if (op == SK_LATE_FORK_ACCEPT) {
		s->lfd = l ? rst_desc(r, l->id)->fd : lfd;
		s->standin = !l;
	} else {
		if (sk_unix_covered(r, to))	/* from under the mount on it */
			s->covered = !sk_unix_covered_addr(r, to, &s->to, &s->tolen, &s->todir);
		else
			s->tolen = sk_unix_late_addr(r, to, &s->to);
		s->lproc = o;
	}
	return 0;
}

/* Its FORK_CONNECTs in the order of their client ends' inodes (the connect order its
 * listener's process takes them in: fork_accept()), where they are in its steps. */
static void connect_order(struct rst *r)
{
	for (size_t i = 0; i < r->nr_sk_late; i++)
		for (size_t k = i + 1; r->sk_late[i].op == SK_LATE_FORK_CONNECT &&
		     k < r->nr_sk_late; k++)
			if (r->sk_late[k].op == SK_LATE_FORK_CONNECT &&
			    r->sk_late[k].u->ino < r->sk_late[i].u->ino) {
				struct sk_late t = r->sk_late[i];

				r->sk_late[i] = r->sk_late[k];
				r->sk_late[k] = t;
			}
}

static int plan_op(void *arg, const struct ucv_op *o)
{
	struct view *w = arg;
	struct rst *r = w->rst[o->proc];

	if (o->op == SK_LATE_FORK_ACCEPT || o->op == SK_LATE_FORK_CONNECT)
		return plan_fork(r, o->op, o->u, w->rst[o->p_proc], o->p, o->l);

	if (o->op == SK_LATE_LISTEN)
		return plan_listen(r, o->l);
	if (o->op == SK_LATE_PAIR && !o->p)
		return plan_closed(r, o->u);
	if (o->op == SK_LATE_PAIR || o->op == SK_LATE_ACCEPT)
		return plan(r, o->op, o->u, o->p, o->l);
	return plan_tree(r, o->op, o->u, w->rst[o->p_proc], o->p, o->l);
}

int sk_cred_plan(struct rst *r)
{
	struct view w = { 0 };
	int ret = view_build(r, &w);

	if (!ret)
		ret = sk_cred_ops(&w.v, w.self, plan_op, &w);
	view_free(&w);
	if (!ret)
		connect_order(r);
	return ret ?: check_bound(r);
}

/* The child's effective ids and groups, to go back to. */
struct ids {
	uid_t euid;
	gid_t egid;
	int n;
	gid_t *groups;
};

static int ids_save(struct ids *s)
{
	s->euid = geteuid();
	s->egid = getegid();
	s->n = getgroups(0, NULL);
	s->groups = s->n >= 0 ? calloc((size_t)s->n + 1, sizeof(gid_t)) : NULL;
	if (!s->groups)
		return s->n < 0 ? -errno : -ENOMEM;
	s->n = getgroups(s->n, s->groups);
	return s->n < 0 ? -errno : 0;
}

/* The groups set, unless they are already (a user namespace may deny setgroups()). */
static int set_groups(int n, const gid_t *g, const struct ids *now)
{
	if (n == now->n && !memcmp(g, now->groups, (size_t)n * sizeof(*g)))
		return 0;
	return setgroups((size_t)n, g) ? -errno : 0;
}

/* The dumped effective ids of c set, the child's saved in *s. */
static int ids_enter(const UnixPeerCredEntry *c, struct ids *s)
{
	gid_t g[SK_UNIX_MAX_GROUPS];
	int ret = ids_save(s);

	for (size_t i = 0; i < c->n_groups && i < SK_UNIX_MAX_GROUPS; i++)
		g[i] = c->groups[i];
	if (!ret && c->n_groups > SK_UNIX_MAX_GROUPS)
		ret = -E2BIG;
	if (!ret)
		ret = set_groups((int)c->n_groups, g, s);
	if (!ret && setresgid(-1, c->gid, -1))
		ret = -errno;
	if (!ret && setresuid(-1, c->uid, -1))
		ret = -errno;
	return ret;
}

static int ids_leave(struct ids *s)
{
	int ret = 0;

	if (setresuid(-1, s->euid, -1) || setresgid(-1, s->egid, -1))
		ret = -errno;
	if (!ret && s->groups)
		ret = setgroups((size_t)s->n, s->groups) ? -errno : 0;
	free(s->groups);
	s->groups = NULL;
	return ret;
}

/* A socket made on memdump's fd number, with u's options and file flags (u NULL: a
 * stand-in's, none). */
static int put(int fd, int at, const UnixSkEntry *u)
{
	char why[160];
	int ret = dup3(fd, at, O_CLOEXEC) < 0 ? -errno : 0;

	close(fd);
	if (!ret && !u)
		return 0;
	if (!ret)
		ret = sk_opts_apply(at, u->opts, true, why, sizeof(why));
	if (!ret && fcntl(at, F_SETFL, u->flags & O_NONBLOCK))
		ret = -errno;
	return ret;
}

static int remake_pair(const struct sk_late *l)
{
	struct ids s = { 0 };
	int sv[2] = { -1, -1 }, ret = ids_enter(l->u->peer_cred, &s);

	if (!ret && socketpair(AF_UNIX, (int)l->u->type | SOCK_CLOEXEC, 0, sv))
		ret = -errno;
	ret = ids_leave(&s) ?: ret;
	if (!ret && l->bind)	/* the names after: bind() leaves the credentials */
		ret = sk_unix_bind_late(sv[0], l->u) ?: sk_unix_bind_late(sv[1], l->p);
	if (ret) {
		if (sv[0] >= 0) {
			close(sv[0]);
			close(sv[1]);
		}
		return ret;
	}
	ret = put(sv[0], l->fd, l->u);
	return put(sv[1], l->fd2, l->p) ?: ret;
}

/* listen() again with the listener's credentials, connect() with the connector's, accept(). */
static int remake_accepted(const struct sk_late *l)
{
	struct ids s = { 0 };
	int c = -1, a, ret = ids_enter(l->l->peer_cred, &s);

	if (!ret && listen(l->lfd, (int)l->l->backlog))
		ret = -errno;
	ret = ids_leave(&s) ?: ret;
	if (!ret)
		ret = ids_enter(l->u->peer_cred, &s);
	if (!ret && (c = socket(AF_UNIX, (int)l->p->type | SOCK_CLOEXEC, 0)) < 0)
		ret = -errno;
	if (!ret)
		ret = late_connect(c, l);
	ret = ids_leave(&s) ?: ret;
	a = ret ? -1 : accept4(l->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (!ret && a < 0)
		ret = -errno;
	if (ret) {
		if (c >= 0)
			close(c);
		return ret;
	}
	ret = put(a, l->fd, l->u);
	return put(c, l->fd2, l->p) ?: ret;
}

/* listen() again under the dumped ids: the credentials a client copies at connect(). */
static int relisten(const struct sk_late *l)
{
	struct ids s = { 0 };
	int ret = ids_enter(l->l->peer_cred, &s);

	if (!ret && listen(l->lfd, (int)l->l->backlog))
		ret = -errno;
	return ids_leave(&s) ?: ret;
}

/* The client end of a connection this process made to another's listener: connect()
 * with its ids, once that process listened to it again (before it forked). */
static int fork_connect(struct rst *r, const struct sk_late *l)
{
	struct ids s = { 0 };
	int c = -1, ret;

	tree_wait_listened(r, l->lproc);
	ret = ids_enter(l->p->peer_cred, &s);

	if (!ret && (c = socket(AF_UNIX, (int)l->u->type | SOCK_CLOEXEC, 0)) < 0)
		ret = -errno;
	if (!ret)
		ret = late_connect(c, l);
	ret = ids_leave(&s) ?: ret;
	if (ret) {
		if (c >= 0)
			close(c);
		return ret;
	}
	return put(c, l->fd, l->u);
}

/* The accepted end still to make for a connection of process pid (as this process sees
 * it: in a PID namespace, its number there) to listener lfd: of
 * its connections to it, the one whose client end's inode is the lowest (the connector
 * connects them in that order: connect_order()), or NULL. */
static struct sk_late *next_of(struct rst *r, int lfd, pid_t pid)
{
	struct sk_late *n = NULL;

	for (size_t i = 0; i < r->nr_sk_late; i++) {
		struct sk_late *t = &r->sk_late[i];

		if (t->op == SK_LATE_FORK_ACCEPT && t->lfd == lfd && !t->made &&
		    sk_tree_seen_pid(r, (pid_t)t->u->peer_cred->pid) == pid &&
		    (!n || t->p->ino < n->p->ino))
			n = t;
	}
	return n;
}

/* Its accepted end, whichever process's connection accept() takes: put on the fd of
 * the one whose credentials name that process, the first of its (connect order). */
static int fork_accept(struct rst *r, const struct sk_late *l)
{
	struct sk_late *t;
	struct pollfd pf = { .fd = l->lfd, .events = POLLIN };
	struct ucred c;
	socklen_t cl = sizeof(c);
	int a;

	while ((a = accept4(l->lfd, NULL, NULL, SOCK_CLOEXEC)) < 0 &&
	       (errno == EAGAIN || errno == EINTR))
		if (poll(&pf, 1, -1) < 0 && errno != EINTR)
			return -errno;
	if (a < 0)
		return -errno;
	if (getsockopt(a, SOL_SOCKET, SO_PEERCRED, &c, &cl)) {
		close(a);
		return -errno;
	}
	t = next_of(r, l->lfd, c.pid);
	if (!t) {
		close(a);
		return -ESRCH;	/* not a connection it waits for */
	}
	t->made = true;
	if (t->standin)
		close(t->lfd);	/* as the closed listener it stands in for */
	return put(a, t->fd, t->u);
}

int sk_cred_remake_fork(struct rst *r, const struct sk_late *l)
{
	return l->op == SK_LATE_FORK_ACCEPT ? fork_accept(r, l) : fork_connect(r, l);
}

/* A process of the tree whose remakes include socket ino's after the fork, or NULL. */
struct rst *sk_cred_fork_holder(struct rst *r, uint32_t ino)
{
	struct rst *o;

	for (size_t i = 0; r->tree && (o = tree_proc(r, i)); i++)
		for (size_t k = 0; k < o->nr_sk_late; k++)
			if ((o->sk_late[k].op == SK_LATE_FORK_ACCEPT ||
			     o->sk_late[k].op == SK_LATE_FORK_CONNECT) && o->sk_late[k].u->ino == ino)
				return o;
	return NULL;
}

int sk_cred_remake(const struct sk_late *l)
{
	if (l->op == SK_LATE_LISTEN)
		return relisten(l);
	return l->op == SK_LATE_PAIR ? remake_pair(l) : remake_accepted(l);
}

int sk_cred_remake_tree(struct rst *r, char *msg, size_t len)
{
	for (size_t i = 0; i < r->nr_sk_late; i++) {
		const struct sk_late *l = &r->sk_late[i];
		int ret = l->op == SK_LATE_TREE_PAIR ? remake_pair(l) :
			  l->op == SK_LATE_TREE_ACCEPT ? remake_accepted(l) :
			  l->op == SK_LATE_LISTEN ? relisten(l) : 0;	/* before children connect */

		if (!ret && (l->op == SK_LATE_TREE_PAIR || l->op == SK_LATE_TREE_ACCEPT))
			ret = reshare(r, l->uproc, l->u, l->fd) ?:	/* shared with ones it forks */
			      reshare(r, l->pproc, l->p, l->fd2);

		if (ret) {
			snprintf(msg, len, "UNIX sockets %u and %u: cannot make the %s again with "
				 "its peer credentials: %s", l->u->ino, l->p->ino,
				 l->op == SK_LATE_TREE_PAIR ? "pair" : "connection", strerror(-ret));
			return ret;
		}
	}
	return 0;
}
