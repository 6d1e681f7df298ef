/*
 * Restore of connections a listener had not accepted yet (sk_unix_embryo.c):
 * each client is made (bound to its name if it had one) with the other
 * sockets, and connected to its listener by the forked child, with the
 * dumped PID (what the accepted end's SO_PEERCRED shows), in the order the
 * listener's queue had them, before anything else the child does on
 * sockets: every connection accepted from that listener is made by then, so
 * accept() returns these, in that order. The stand-in that sends again a
 * datagram from a sender the dump did not hold is made here too.
 */
#include <errno.h>
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

/* The listener entry with ino: this process's, or (a tree) another's. */
static const UnixSkEntry *listener_of(struct rst *r, uint32_t ino)
{
	for (size_t i = 0; i < r->ds.nr_files; i++) {
		const FileEntry *fe = r->ds.files[i];

		if (fe->type == FD_TYPES__UNIXSK && fe->usk && fe->usk->ino == ino)
			return fe->usk->state == SK_LISTEN ? fe->usk : NULL;
	}
	if (r->tree) {
		const UnixSkEntry *l = sk_tree_entry(r, ino);

		return l && l->state == SK_LISTEN ? l : NULL;
	}
	return NULL;
}

bool sk_unix_is_pending(struct rst *r, const UnixSkEntry *u)
{
	return u->type != SOCK_DGRAM && u->state == SK_ESTABLISHED && u->peer &&
	       listener_of(r, u->peer);
}

int sk_unix_pending_open(struct rst *r, const UnixSkEntry *u)
{
	int fd = sk_unix_new(u), ret;

	if (fd < 0)
		return fd;
	rst_desc(r, u->id)->fd = fd;
	ret = sk_unix_bind(r, fd, u);
	return ret;
}

/* The clients of this process to connect, in the order of their listeners' queues. */
static int cmp_pos(const void *a, const void *b)
{
	const UnixSkEntry *x = *(const UnixSkEntry *const *)a, *y = *(const UnixSkEntry *const *)b;

	if (x->accept_pos != y->accept_pos)
		return x->accept_pos < y->accept_pos ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int plan_one(struct rst *r, const UnixSkEntry *u)
{
	const UnixSkEntry *ls = listener_of(r, u->peer);
	struct rdesc *d = rst_desc(r, u->id);
	struct sk_late *l = sk_late_new(r, SK_LATE_CONNECT, d->fd);

	if (!l)
		return -ENOMEM;
	l->tolen = sk_unix_late_addr(r, ls, &l->to);
	return 0;
}

int sk_unix_pending_plan(struct rst *r)
{
	const UnixSkEntry **v = calloc(r->ds.nr_files + 1, sizeof(*v));
	size_t n = 0;
	int ret = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < r->ds.nr_files; i++) {
		const FileEntry *fe = r->ds.files[i];
		struct rdesc *d = fe->type == FD_TYPES__UNIXSK && fe->usk ? rst_desc(r, fe->id) : NULL;

		if (d && d->fd >= 0 && sk_unix_is_pending(r, fe->usk))
			v[n++] = fe->usk;
	}
	qsort(v, n, sizeof(*v), cmp_pos);
	for (size_t i = 0; i < n && !ret; i++)
		ret = plan_one(r, v[i]);
	free(v);
	return ret;
}

int sk_unix_standin(struct rst *r, const UnixSkEntry *rcv)
{
	struct sk_helper *h = realloc(r->sk_helpers, (r->nr_sk_helpers + 1) * sizeof(*h));
	int fd;

	if (!h)
		return -ENOMEM;
	r->sk_helpers = h;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(-errno, "UNIX socket %u: cannot make a stand-in for the sender of its "
			    "queued datagram: %s", rcv->id, strerror(errno));
	h[r->nr_sk_helpers++] = (struct sk_helper){ .for_id = rcv->id, .fd = fd };
	return fd;
}

int sk_unix_dgram_touch(struct rst *r, const UnixSkEntry *u)
{
	struct sockaddr_un a;
	socklen_t l;
	int fd, ret = 0;

	if (!u->name.len)
		return 0;	/* none could connect to it: not reached */
	l = sk_unix_conn_addr(r, u, &a);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, l))
		ret = fail(-errno, "UNIX socket %u: cannot connect to it as another had: %s", u->id,
			   strerror(errno));
	if (fd >= 0)
		close(fd);
	return ret;
}
