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
 * below) holds alone: that end goes on memdump's fd for it, which it inherits.
 *
 * Not made again (the fds memdump made, with its own pid and ids): those
 * another process of a tree holds too (but the pair above), those of a
 * process with an epoll set in flight (filled before, on memdump's fds; the
 * pair above is made before that).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
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

/* Does another process of the tree take u's description from this one? */
static bool shared_out(struct rst *r, const UnixSkEntry *u)
{
	struct rst *o;

	for (size_t i = 0; r->tree && (o = tree_proc(r, i)); i++)
		for (size_t k = 0; o != r && k < o->nr_shares; k++)
			if (o->shares[k].owner == r && fd_is(r, o->shares[k].owner_fd, u->id))
				return true;
	return false;
}

/* An epoll set only in flight (SCM_RIGHTS): filled on memdump's fds before the remakes.
 * (The others are filled once the fds moved, with the sockets made again.) */
static bool epoll_in_flight(const struct rst *r)
{
	for (size_t i = 0; i < r->ds.nr_files; i++)
		if (r->ds.files[i]->type == FD_TYPES__EVENTPOLL &&
		    target_of(r, r->ds.files[i]->id) < 0)
			return true;
	return false;
}

static bool same_cred(const UnixPeerCredEntry *a, const UnixPeerCredEntry *b)
{
	return a && b && a->pid == b->pid && a->uid == b->uid && a->gid == b->gid &&
	       a->n_groups == b->n_groups &&
	       (!a->n_groups || !memcmp(a->groups, b->groups, a->n_groups * sizeof(a->groups[0])));
}

/* u's credentials are this process's own, and u is its alone. */
static bool mine(struct rst *r, const UnixSkEntry *u)
{
	return u->peer_cred && u->peer_cred->pid == (uint32_t)r->pid && !shared_out(r, u);
}

/* The ends s makes again: u, its peer p, and the listener l (NULL: a pair) of r's. */
static void late_ends(struct rst *r, struct sk_late *s, const UnixSkEntry *u,
		      const UnixSkEntry *p, const UnixSkEntry *l)
{
	s->u = u;
	s->p = p;
	s->l = l;
	s->lfd = l ? fd_of(r, l) : -1;
	if (l)
		s->tolen = sk_unix_late_addr(r, l, &s->to);
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
	late_ends(r, s, u, p, l);
	return 0;
}

static bool unnamed(const UnixSkEntry *u)
{
	return !u->name.len;
}

/* The listener of this process u was accepted from (its name), or NULL. */
static const UnixSkEntry *listener_of(struct rst *r, const UnixSkEntry *u)
{
	for (size_t i = 0; i < r->ds.nr_files; i++) {
		const UnixSkEntry *l = r->ds.files[i]->type == FD_TYPES__UNIXSK ?
				       r->ds.files[i]->usk : NULL;

		if (l && l->state == SK_LISTEN && l->name.len == u->name.len &&
		    !memcmp(l->name.data, u->name.data, u->name.len) && own(r, l->ino) == l)
			return l;
	}
	return NULL;
}

/* A connection not accepted yet from l, anywhere in the tree: the child's accept() might
 * take it. */
static bool pending_on(struct rst *r, const UnixSkEntry *l)
{
	struct rst *o = r;

	for (size_t i = 0; o; o = r->tree ? tree_proc(r, i++) : NULL) {
		for (size_t k = 0; k < o->ds.nr_files; k++) {
			const UnixSkEntry *c = o->ds.files[k]->type == FD_TYPES__UNIXSK ?
					       o->ds.files[k]->usk : NULL;

			if (c && c->has_accept_pos && c->accept_pos && c->peer == l->ino)
				return true;
		}
		if (!r->tree)
			break;
	}
	return false;
}

/* Is d forked by r, or by one r forks (so it gets r's fds as they are before its fork)? */
static bool descends(const struct rst *d, const struct rst *r)
{
	for (d = d ? d->tree_parent : NULL; d; d = d->tree_parent)
		if (d == r)
			return true;
	return false;
}

/* Does x hold socket ino in its table or in flight (a description memdump made for it)? */
static bool holds(struct rst *x, uint32_t ino)
{
	for (size_t i = 0; i < x->ds.nr_files; i++) {
		const FileEntry *fe = x->ds.files[i];

		if (fe->type == FD_TYPES__UNIXSK && fe->usk && fe->usk->ino == ino &&
		    (target_of(x, fe->id) >= 0 ||
		     (rst_desc(x, fe->id) && rst_desc(x, fe->id)->fd >= 0)))
			return true;
	}
	return false;
}

/* Socket ino in x's table and nowhere else in the tree (no other table, no message). */
static bool alone_in(struct rst *x, uint32_t ino)
{
	const UnixSkEntry *s = own(x, ino);
	struct rst *o;

	if (!s || target_of(x, s->id) < 0 || shared_out(x, s))
		return false;
	for (size_t i = 0; (o = tree_proc(x, i)); i++)
		if (o != x && holds(o, ino))
			return false;
	return true;
}

/* The process of the tree, forked by r or below, that alone holds socket ino, or NULL. */
static struct rst *holder_below(struct rst *r, uint32_t ino)
{
	struct rst *o;

	for (size_t i = 0; r->tree && (o = tree_proc(r, i)); i++)
		if (o != r && own(o, ino))
			return descends(o, r) && alone_in(o, ino) ? o : NULL;
	return NULL;
}

/* The remake of u (this process's) and p (o's) planned, before the fork (TREE_PAIR, TREE_ACCEPT). */
static int plan_tree(struct rst *r, int op, const UnixSkEntry *u, struct rst *o,
		     const UnixSkEntry *p, const UnixSkEntry *l)
{
	const UnixSkEntry *acc = op == SK_LATE_TREE_PAIR || !unnamed(u) ? u : p;
	const UnixSkEntry *cli = acc == u ? p : u;
	struct rst *ao = acc == u ? r : o, *co = acc == u ? o : r;
	struct sk_late *s = sk_late_new(r, op, rst_desc(ao, acc->id)->fd);

	if (!s)
		return -ENOMEM;
	pr_info("UNIX sockets %u and %u: made again by process %d with their peer credentials, "
		"%u for process %d\n", u->ino, p->ino, r->pid, p->ino, o->pid);
	s->fd2 = rst_desc(co, cli->id)->fd;
	late_ends(r, s, acc, cli, l);
	return 0;
}

/*
 * u, this process's end of a pair or connection whose other end p a process
 * it forks (or one below) holds alone, both ends' credentials this process's
 * (it made the pair, or listened, connected and accepted, before it forked):
 * made again by it under the dumped ids before it forks (SK_LATE_TREE_PAIR,
 * SK_LATE_TREE_ACCEPT), p put on memdump's fd the other process inherits.
 */
static int plan_tree_pair(struct rst *r, const UnixSkEntry *u)
{
	struct rst *o = holder_below(r, u->peer);
	const UnixSkEntry *p = o ? own(o, u->peer) : NULL, *l;

	if (!p || p->peer != u->ino || u->accept_pos || p->accept_pos || !u->peer_cred ||
	    !p->peer_cred || u->peer_cred->pid != (uint32_t)r->pid ||
	    p->peer_cred->pid != (uint32_t)r->pid || !alone_in(r, u->ino))
		return 0;
	if (unnamed(u) && unnamed(p))
		return same_cred(u->peer_cred, p->peer_cred) ?
		       plan_tree(r, SK_LATE_TREE_PAIR, u, o, p, NULL) : 0;
	if (u->type == SOCK_DGRAM || unnamed(u) == unnamed(p))
		return 0;
	l = listener_of(r, unnamed(u) ? p : u);	/* the accepted end's name is its listener's */
	if (!l || l->deleted || !mine(r, l) || !alone_in(r, l->ino) ||
	    !same_cred(l->peer_cred, unnamed(u) ? u->peer_cred : p->peer_cred) || pending_on(r, l))
		return 0;
	return plan_tree(r, SK_LATE_TREE_ACCEPT, u, o, p, l);
}

/* u, one end of an established pair or connection of this process: its remake planned. */
static int plan_one(struct rst *r, const UnixSkEntry *u)
{
	const UnixSkEntry *p = own(r, u->peer), *l;

	if (!p && r->tree)
		return plan_tree_pair(r, u);
	if (!p || p->peer != u->ino || !mine(r, u) || !mine(r, p) || u->accept_pos ||
	    p->accept_pos)
		return 0;
	if (unnamed(u) && unnamed(p))	/* a socketpair: each pair once */
		return u->ino < p->ino && same_cred(u->peer_cred, p->peer_cred) ?
		       plan(r, SK_LATE_PAIR, u, p, NULL) : 0;
	if (u->type == SOCK_DGRAM || unnamed(u) || !unnamed(p))
		return 0;
	l = listener_of(r, u);		/* u accepted from l, p its client */
	if (!l || l->deleted || !mine(r, l) || !same_cred(l->peer_cred, p->peer_cred) ||
	    pending_on(r, l))	/* a removed name: its alias is gone when the child runs */
		return 0;
	return plan(r, SK_LATE_ACCEPT, u, p, l);
}

int sk_cred_plan(struct rst *r)
{
	bool epoll = epoll_in_flight(r);	/* only the pairs made before the fork then */
	int ret = 0;

	for (size_t i = 0; !ret && i < r->ds.nr_files; i++) {
		const FileEntry *fe = r->ds.files[i];
		const UnixSkEntry *u = fe->type == FD_TYPES__UNIXSK ? fe->usk : NULL;

		if (!u || u->state != SK_ESTABLISHED || own(r, u->ino) != u)
			continue;
		if (!epoll)
			ret = plan_one(r, u);
		else if (r->tree && !own(r, u->peer))
			ret = plan_tree_pair(r, u);
	}
	return ret;
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

/* A socket made on memdump's fd number, with u's options and file flags. */
static int put(int fd, int at, const UnixSkEntry *u)
{
	char why[160];
	int ret = dup3(fd, at, O_CLOEXEC) < 0 ? -errno : 0;

	close(fd);
	if (!ret)
		ret = sk_opts_apply(at, u->opts, true, why, sizeof(why));
	if (!ret && fcntl(at, F_SETFL, u->flags & O_NONBLOCK))
		ret = -errno;
	return ret;
}

static int remake_pair(const struct sk_late *l)
{
	struct ids s = { 0 };
	int sv[2], ret = ids_enter(l->u->peer_cred, &s);

	if (!ret && socketpair(AF_UNIX, (int)l->u->type | SOCK_CLOEXEC, 0, sv))
		ret = -errno;
	ret = ids_leave(&s) ?: ret;
	if (ret)
		return ret;
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
	if (!ret && connect(c, (const struct sockaddr *)&l->to, l->tolen))
		ret = -errno;
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

int sk_cred_remake(const struct sk_late *l)
{
	return l->op == SK_LATE_PAIR ? remake_pair(l) : remake_accepted(l);
}

int sk_cred_remake_tree(struct rst *r, char *msg, size_t len)
{
	for (size_t i = 0; i < r->nr_sk_late; i++) {
		const struct sk_late *l = &r->sk_late[i];
		int ret = l->op == SK_LATE_TREE_PAIR ? remake_pair(l) :
			  l->op == SK_LATE_TREE_ACCEPT ? remake_accepted(l) : 0;

		if (ret) {
			snprintf(msg, len, "UNIX sockets %u and %u: cannot make the %s again with "
				 "its peer credentials: %s", l->u->ino, l->p->ino,
				 l->op == SK_LATE_TREE_PAIR ? "pair" : "connection", strerror(-ret));
			return ret;
		}
	}
	return 0;
}
