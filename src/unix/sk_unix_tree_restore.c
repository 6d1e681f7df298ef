/*
 * UNIX sockets between processes of a restored tree. Each socket is opened
 * by one process, the first of the tree (pstree order) that holds it: the
 * others get a copy of its description (share_pid in their fdinfo-1.img).
 * When a socket's peer, or the listener its connection was accepted from, is
 * opened by another process, whichever of the two comes first makes the
 * connection as one process's restore would (a socketpair; connect to the
 * listener and accept, so both names are the dumped ones; a datagram socket
 * bound and connected to its peer's name) and keeps the other process's end
 * in the tree (tree_sock_put) until that process takes it. A listener or a datagram
 * peer another process opens later is made ahead for it the same way.
 *
 * Queued data: each receive queue is in the set of the process opening the
 * socket, each message from its sender, which may be another process's
 * socket. Its queue is planned once every process's sockets are made, and
 * sent by that process's forked child from the sender's socket: every fd
 * memdump made is still open in each forked process until it moves its own
 * (child.c). A message whose credentials name another process of the tree
 * (its real sender) waits until that process exists.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "ctx/restore_ctx.h"
#include "net/sock.h"
#include "unix/sk_unix.h"

static bool named(const UnixSkEntry *u)
{
	return u->name.len > 0;
}

static bool same_name(const UnixSkEntry *a, const UnixSkEntry *b)
{
	return named(a) && a->name.len == b->name.len &&
	       !memcmp(a->name.data, b->name.data, a->name.len);
}

typedef bool (*usk_match)(const UnixSkEntry *e, const void *arg);

/* The first entry in the tree's sets that matches (any holder's: they are alike). */
static const UnixSkEntry *find_entry(struct rst *r, usk_match match, const void *arg)
{
	struct rst *p;

	for (size_t i = 0; (p = tree_proc(r, i)); i++)
		for (size_t k = 0; k < p->ds.nr_files; k++) {
			const FileEntry *fe = p->ds.files[k];

			if (fe->type == FD_TYPES__UNIXSK && fe->usk && match(fe->usk, arg))
				return fe->usk;
		}
	return NULL;
}

static bool has_ino(const UnixSkEntry *e, const void *ino)
{
	return e->ino == *(const uint32_t *)ino;
}

static bool listens_as(const UnixSkEntry *e, const void *u)
{
	return e->state == SK_LISTEN && same_name(e, u);
}

const UnixSkEntry *sk_tree_entry(struct rst *r, uint32_t ino)
{
	return r->tree ? find_entry(r, has_ino, &ino) : NULL;
}

int sk_tree_fd(struct rst *r, uint32_t ino)
{
	int fd = tree_sock_peek(r, ino);
	struct rst *p;

	for (size_t i = 0; fd < 0 && (p = tree_proc(r, i)); i++)
		for (size_t k = 0; fd < 0 && k < p->ds.nr_files; k++) {
			const FileEntry *fe = p->ds.files[k];
			struct rdesc *d = fe->type == FD_TYPES__UNIXSK && fe->usk &&
					  fe->usk->ino == ino ? rst_desc(p, fe->id) : NULL;

			if (d)
				fd = d->fd;
		}
	return fd;
}

/* s, made here for socket e of another process: kept in the tree until it takes it. */
static int keep_for(struct rst *r, const UnixSkEntry *e, int s)
{
	int ret = tree_sock_put(r, e->ino, s);

	close(s);
	return ret;
}

int sk_tree_listener(struct rst *r, const UnixSkEntry *u, int *lfd)
{
	const UnixSkEntry *l = named(u) ? find_entry(r, listens_as, u) : NULL;
	int fd, ret;

	if (!l)
		return 1;
	*lfd = sk_tree_fd(r, l->ino);
	if (*lfd >= 0)
		return 0;
	fd = sk_unix_listen(r, l);		/* its process comes later: made ahead for it */
	if (fd < 0)
		return fd;
	ret = keep_for(r, l, fd);
	*lfd = tree_sock_peek(r, l->ino);
	return ret;
}

static int *slot(struct rst *r, const UnixSkEntry *u)
{
	return &rst_desc(r, u->id)->fd;
}

static int tree_fail(const UnixSkEntry *u, const UnixSkEntry *p, int err, const char *what)
{
	return fail(err, "UNIX socket %u (socket:[%u]), peer socket:[%u] in another process of "
		    "the tree: %s: %s", u->id, u->ino, p->ino, what, strerror(-err));
}

/* u and p each other's peer: a socketpair, each end bound to its name (datagrams). */
static int make_pair(struct rst *r, const UnixSkEntry *u, const UnixSkEntry *p)
{
	int sv[2], ret = 0;

	if (socketpair(AF_UNIX, u->type | SOCK_CLOEXEC, 0, sv))
		return tree_fail(u, p, -errno, "cannot create a socketpair");
	*slot(r, u) = sv[0];
	if (u->type == SOCK_DGRAM)
		ret = sk_unix_bind(r, sv[0], u);
	if (!ret && u->type == SOCK_DGRAM)
		ret = sk_unix_bind(r, sv[1], p);
	if (ret) {
		close(sv[1]);
		return ret;
	}
	return keep_for(r, p, sv[1]);
}

/* acc (u or p) was accepted from the tree's listener lfd; the other end connected to it. */
static int accept_across(struct rst *r, const UnixSkEntry *u, const UnixSkEntry *p,
			 const UnixSkEntry *acc, int lfd)
{
	const UnixSkEntry *cli = acc == u ? p : u;
	struct sockaddr_un a;
	socklen_t l = sk_unix_conn_addr(r, acc, &a);
	int c = sk_unix_new(cli), s, ret;

	if (c < 0)
		return c;
	ret = named(cli) ? sk_unix_bind(r, c, cli) : 0;
	if (!ret && connect(c, (struct sockaddr *)&a, l))
		ret = tree_fail(u, p, -errno, "cannot connect to its listener");
	s = ret ? -1 : accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (!ret && s < 0)
		ret = tree_fail(u, p, -errno, "cannot accept from its listener");
	if (ret) {
		close(c);
		return ret;
	}
	*slot(r, u) = acc == u ? s : c;
	return keep_for(r, p, acc == u ? c : s);
}

/* u connected to p's name (p not connected back): u bound; p made ahead if need be. */
static int dgram_to(struct rst *r, const UnixSkEntry *u, const UnixSkEntry *p)
{
	int fd = sk_unix_new(u), ret;

	if (fd < 0)
		return fd;
	*slot(r, u) = fd;
	ret = sk_unix_bind(r, fd, u);
	if (ret || sk_tree_fd(r, p->ino) >= 0)
		return ret;	/* connect_dgram() connects it once its peer is bound */
	if (!named(p))
		return tree_fail(u, p, -EINVAL, "its peer has no name to connect to");
	fd = sk_unix_new(p);
	if (fd < 0)
		return fd;
	ret = sk_unix_bind(r, fd, p);
	if (ret) {
		close(fd);
		return ret;
	}
	return keep_for(r, p, fd);
}

/* acc was accepted from a listener closed since: one with its name stands in, then goes. */
static int accept_from_closed(struct rst *r, const UnixSkEntry *u, const UnixSkEntry *p,
			      const UnixSkEntry *acc)
{
	int lfd = sk_unix_new(acc), ret;

	if (lfd < 0)
		return lfd;
	ret = sk_unix_bind(r, lfd, acc);
	if (!ret && listen(lfd, 1))
		ret = tree_fail(u, p, -errno, "cannot listen in place of its closed listener");
	if (!ret)
		ret = accept_across(r, u, p, acc, lfd);
	close(lfd);
	return ret;
}

int sk_tree_connect(struct rst *r, const UnixSkEntry *u, const UnixSkEntry *p)
{
	const UnixSkEntry *acc = u;
	int lfd = -1, ret;

	if (u->type == SOCK_DGRAM)
		return p->peer == u->ino ? make_pair(r, u, p) : dgram_to(r, u, p);
	ret = sk_tree_listener(r, u, &lfd);
	if (ret == 1) {
		acc = p;
		ret = sk_tree_listener(r, p, &lfd);
	}
	if (ret < 0)
		return ret;
	if (!ret)
		return accept_across(r, u, p, acc, lfd);
	if (named(u) && named(p))
		return tree_fail(u, p, -ENOENT, "no listening socket of the tree has its name");
	if (named(u) || named(p))
		return accept_from_closed(r, u, p, named(u) ? u : p);
	return make_pair(r, u, p);
}

int sk_tree_plan_queues(struct rst *root)
{
	struct rst *p;
	int ret = 0;

	for (size_t i = 0; !ret && (p = tree_proc(root, i)); i++) {
		ret = sk_cred_plan(p);	/* every process's first: senders after fork remakes */
		if (ret)
			fail_context("process %d: ", p->pid);
	}
	for (size_t i = 0; !ret && (p = tree_proc(root, i)); i++) {
		ret = sk_queue_plan(p);
		if (ret)
			fail_context("process %d: ", p->pid);
	}
	return ret;
}

/* Process x's PID in its own PID namespace (the tree's), or 0: not known. */
static pid_t ns_pid(const struct rst *x)
{
	const PstreeEntry *pe = x->ds.pstree;

	return pe && pe->n_ns_threads ? (pid_t)pe->ns_threads[0] : 0;
}

pid_t sk_tree_seen_pid(struct rst *r, pid_t pid)
{
	struct rst *p;

	if (getpid() == r->pid)
		return pid;	/* memdump's PID namespace: the dumped numbers */
	if (pid == r->pid)
		return ns_pid(r);
	for (size_t i = 0; r->tree && (p = tree_proc(r, i)); i++)
		if (p->pid == pid)
			return ns_pid(p);
	return 0;
}

void sk_tree_wait_pid(struct rst *r, pid_t pid)
{
	struct rst *p;
	bool ours = false;

	for (size_t i = 0; r->tree && !ours && (p = tree_proc(r, i)); i++)
		ours = p->pid == pid;
	pid = ours ? sk_tree_seen_pid(r, pid) : 0;	/* in a PID namespace: its number there */
	for (int i = 0; pid > 0 && i < 10000 && kill(pid, 0) && errno == ESRCH; i++)
		usleep(1000);	/* forked by its parent meanwhile (tree_fork_children) */
}
