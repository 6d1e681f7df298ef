/*
 * Which UNIX sockets' peer credentials (SO_PEERCRED, SO_PEERGROUPS) a restore
 * makes again exactly, decided once for both sides over a view of the tree
 * (struct ucv) that each builds from what it has: the dump from its file sets,
 * before the target is harmed (files/sockets.c refuses every socket this does
 * not make exact), the restore from the images (sk_unix_cred_restore.c plans
 * what this returns). So the two cannot drift.
 *
 * memdump makes every socket itself (its pid and ids in their credentials);
 * the forked process, with the dumped PID, makes again (sk_cred_ops):
 *
 *  - LISTEN: a listener whose listen() it made: listen() again under the
 *    dumped ids (first: a client connected after copies them);
 *  - PAIR: a socketpair of its own, both ends unnamed, both its alone (a
 *    datagram one: named too, its ends bound after); an unnamed end whose
 *    peer was closed, with the stand-in for that peer;
 *  - ACCEPT: a connection accepted from its own listener (its name not
 *    removed), the client's end unnamed (before any connection not accepted
 *    yet is connected again: accept() takes this one);
 *  - FORK_ACCEPT, FORK_CONNECT: a connection another process of the tree
 *    (one it forks, its parent, a sibling, ...) made to its listener: that
 *    process connects with its ids once the listener is listened to again
 *    (before the fork), it accepts (fork_conn()); two connections of one
 *    process to one listener are told apart by connect order (their client
 *    ends' inodes: the connector connects them in that order); a listener
 *    closed since the accept: one with its name stands in (no listener given;
 *    not for a name a mount covers since);
 *  - TREE_PAIR, TREE_ACCEPT: the same, made before the fork, whose other end
 *    a process it forks (or one below that) holds alone, or with processes
 *    that one forks (their copies made anew too); TREE_PAIR too: a
 *    socketpair of its own whose ends only processes it forks (or below)
 *    hold too (a server's channels to its workers), their copies made anew.
 *
 * A client not accepted yet is connected by the process after its listener's
 * LISTEN: it copies that listener's credentials. Every other socket with
 * credentials would show memdump's: sk_cred_inexact() says why.
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common.h"
#include "net/sock.h"
#include "unix/sk_unix.h"

static const struct ucv_sk *own(const struct ucv_proc *x, uint32_t ino)
{
	for (size_t i = 0; i < x->nr_sks; i++)
		if (x->sks[i].u->ino == ino)
			return &x->sks[i];
	return NULL;
}

static bool same_cred(const UnixPeerCredEntry *a, const UnixPeerCredEntry *b)
{
	return a && b && a->pid == b->pid && a->uid == b->uid && a->gid == b->gid &&
	       a->n_groups == b->n_groups &&
	       (!a->n_groups || !memcmp(a->groups, b->groups, a->n_groups * sizeof(a->groups[0])));
}

/* s's credentials are process x's own, and s is x's alone. */
static bool mine(const struct ucv_proc *x, const struct ucv_sk *s)
{
	return s->u->peer_cred && s->u->peer_cred->pid == (uint32_t)x->pid && !s->shared_out;
}

/* The same, or s is shared only with processes x forks (or ones below): made again
 * before the fork, they inherit it. */
static bool mine_below(const struct ucv_proc *x, const struct ucv_sk *s)
{
	return s->u->peer_cred && s->u->peer_cred->pid == (uint32_t)x->pid && !s->shared_other;
}

static bool unnamed(const UnixSkEntry *u)
{
	return !u->name.len;
}

/* The listener of x that u was accepted from (its name), or NULL. */
static const struct ucv_sk *listener_of(const struct ucv_proc *x, const UnixSkEntry *u)
{
	for (size_t i = 0; i < x->nr_sks; i++) {
		const UnixSkEntry *l = x->sks[i].u;

		if (l->state == SK_LISTEN && l->name.len == u->name.len &&
		    !memcmp(l->name.data, u->name.data, u->name.len))
			return &x->sks[i];
	}
	return NULL;
}

/* The process of the tree that opens ino (its index), or -1. */
static int opener(const struct ucv *v, uint32_t ino)
{
	for (size_t i = 0; i < v->n; i++)
		if (own(&v->procs[i], ino))
			return (int)i;
	return -1;
}

/* Is process d forked by r, or by one r forks? */
static bool descends(const struct ucv *v, size_t d, size_t r)
{
	for (int p = v->procs[d].parent; p >= 0; p = v->procs[p].parent)
		if ((size_t)p == r)
			return true;
	return false;
}

/* Socket ino in x's table, opened by no other process, and shared with no other
 * (below: with none but processes x forks, or ones below: made again before x forks
 * them, they inherit the new one). */
static bool held_by(const struct ucv *v, size_t x, uint32_t ino, bool below)
{
	const struct ucv_sk *s = own(&v->procs[x], ino);

	if (!s || s->fd < 0 || (below ? s->shared_other : s->shared_out))
		return false;
	for (size_t i = 0; i < v->n; i++)
		if (i != x && own(&v->procs[i], ino))
			return false;
	return true;
}

/* Socket ino in x's table and nowhere else in the tree. */
static bool alone_in(const struct ucv *v, size_t x, uint32_t ino)
{
	return held_by(v, x, ino, false);
}

/* The process other than r that alone holds ino (its index), or -1. */
static int holder_other(const struct ucv *v, size_t r, uint32_t ino)
{
	for (size_t i = 0; v->tree && i < v->n; i++)
		if (i != r && own(&v->procs[i], ino))
			return alone_in(v, i, ino) ? (int)i : -1;
	return -1;
}

/* The process forked by r or below that holds ino, alone or with the ones it forks
 * (its index), or -1. */
static int holder_below(const struct ucv *v, size_t r, uint32_t ino)
{
	for (size_t i = 0; v->tree && i < v->n; i++)
		if (i != r && own(&v->procs[i], ino))
			return descends(v, i, r) && held_by(v, i, ino, true) ? (int)i : -1;
	return -1;
}

static int op(ucv_fn fn, void *arg, int kind, size_t r, const UnixSkEntry *u, size_t po,
	      const UnixSkEntry *p, const UnixSkEntry *l)
{
	struct ucv_op o = { .op = kind, .proc = r, .u = u, .p = p, .l = l, .p_proc = po };

	return fn(arg, &o);
}

/* u, r's end of a pair or connection whose other end a process below r holds alone. */
static int tree_pair(const struct ucv *v, size_t r, const struct ucv_sk *s, ucv_fn fn, void *arg)
{
	const struct ucv_proc *x = &v->procs[r];
	const UnixSkEntry *u = s->u, *p;
	const struct ucv_sk *ls;
	int o = holder_below(v, r, u->peer);

	p = o >= 0 ? own(&v->procs[o], u->peer)->u : NULL;
	if (!p || p->peer != u->ino || u->accept_pos || p->accept_pos || !u->peer_cred ||
	    !p->peer_cred || u->peer_cred->pid != (uint32_t)x->pid ||
	    p->peer_cred->pid != (uint32_t)x->pid || !alone_in(v, r, u->ino))
		return 0;
	if (unnamed(u) && unnamed(p))
		return same_cred(u->peer_cred, p->peer_cred) ?
		       op(fn, arg, SK_LATE_TREE_PAIR, r, u, (size_t)o, p, NULL) : 0;
	if (u->type == SOCK_DGRAM || unnamed(u) == unnamed(p))
		return 0;
	ls = listener_of(x, unnamed(u) ? p : u);	/* the accepted end's name is its listener's */
	if (!ls || ls->u->deleted || !mine(x, ls) || !alone_in(v, r, ls->u->ino) ||
	    !same_cred(ls->u->peer_cred, unnamed(u) ? u->peer_cred : p->peer_cred))
		return 0;
	return op(fn, arg, SK_LATE_TREE_ACCEPT, r, u, (size_t)o, p, ls->u);
}

/* Does nothing else take connections from listener l of process q once it is
 * listened to again but the other processes' (a accepted from it)? No client
 * not accepted yet, no connection q made to it itself (its accept() would take
 * another's). q tells the others apart by pid, then by connect order. */
static bool only_forks(const struct ucv *v, size_t q, const UnixSkEntry *a,
		       const UnixSkEntry *l)
{
	const struct ucv_proc *x = &v->procs[q];

	for (size_t i = 0; i < v->n; i++)
		for (size_t k = 0; k < v->procs[i].nr_sks; k++) {
			const UnixSkEntry *o = v->procs[i].sks[k].u;

			if (o->peer == l->ino && o->has_accept_pos && o->accept_pos)
				return false;
		}
	for (size_t k = 0; k < x->nr_sks; k++) {
		const UnixSkEntry *b = x->sks[k].u;

		if (b == a || b->state != SK_ESTABLISHED || listener_of(x, b) != own(x, l->ino))
			continue;
		if (own(x, b->peer))
			return false;
	}
	return true;
}

/* a (x's), accepted from a listener x has closed since, its client end c: a listener
 * with its name stands in, listened to by x under c's copy of the closed one's ids
 * (x's pid), for that connection only (no other end of x's has the name). */
static bool stand_in(const struct ucv_proc *x, const UnixSkEntry *a, const UnixSkEntry *c)
{
	if (!c->peer_cred || c->peer_cred->pid != (uint32_t)x->pid || a->name_covered)
		return false;	/* covered: the tree's first accept connects by name */
	for (size_t k = 0; k < x->nr_sks; k++) {
		const UnixSkEntry *b = x->sks[k].u;

		if (b != a && b->name.len == a->name.len &&
		    !memcmp(b->name.data, a->name.data, a->name.len))
			return false;
	}
	return true;
}

/*
 * a (process q's), accepted from q's listener (or one it closed since: NULL, a
 * stand-in), whose client end another
 * process of the tree connected and holds alone (*co, *c), the listener *l:
 * q listens again before it forks, that process connects with its ids once
 * q did, q accepts (FORK_ACCEPT, FORK_CONNECT).
 */
static bool fork_conn(const struct ucv *v, size_t q, const struct ucv_sk *as, size_t *co,
		      const UnixSkEntry **c, const UnixSkEntry **l)
{
	const struct ucv_proc *x = &v->procs[q];
	const UnixSkEntry *a = as->u;
	const struct ucv_sk *ls;
	int o;

	if (!v->tree || unnamed(a) || a->type == SOCK_DGRAM || a->accept_pos || !a->peer_cred ||
	    !alone_in(v, q, a->ino))
		return false;
	o = holder_other(v, q, a->peer);
	ls = listener_of(x, a);
	if (o < 0 || (ls && (ls->u->deleted || !mine(x, ls) || !alone_in(v, q, ls->u->ino))))
		return false;
	*c = own(&v->procs[o], a->peer)->u;
	*l = ls ? ls->u : NULL;
	*co = (size_t)o;
	if ((*c)->peer != a->ino || !unnamed(*c) || (*c)->accept_pos || (*c)->type != a->type ||
	    a->peer_cred->pid != (uint32_t)v->procs[o].pid)
		return false;
	return ls ? same_cred((*c)->peer_cred, ls->u->peer_cred) && only_forks(v, q, a, ls->u) :
		    stand_in(x, a, *c);
}

/* s (process r's, its peer another's): an end of a connection another process made. */
static int fork_end(const struct ucv *v, size_t r, const struct ucv_sk *s, ucv_fn fn, void *arg,
		    bool *hit)
{
	const UnixSkEntry *c, *l;
	size_t co;
	int q;

	if (!unnamed(s->u) && fork_conn(v, r, s, &co, &c, &l)) {
		*hit = true;
		return op(fn, arg, SK_LATE_FORK_ACCEPT, r, s->u, co, c, l);
	}
	q = unnamed(s->u) && s->u->peer ? opener(v, s->u->peer) : -1;
	if (q < 0 || q == (int)r ||
	    !fork_conn(v, (size_t)q, own(&v->procs[q], s->u->peer), &co, &c, &l) || co != r ||
	    c != s->u)
		return 0;
	*hit = true;
	return op(fn, arg, SK_LATE_FORK_CONNECT, r, s->u, (size_t)q,
		  own(&v->procs[q], s->u->peer)->u, l);
}

/* A stream end whose peer was closed, a datagram one whose pair twin was: a stand-in
 * plays the peer (sk_unix_restore.c), made with it. */
static bool peer_gone(const UnixSkEntry *u)
{
	return u->type == SOCK_DGRAM ? u->has_peer_closed && u->peer_closed : !u->peer;
}

/* Is a socket of the tree other than their twins connected to u or p by name? (a named
 * datagram pair end is bound only when the child made it again: too late for those) */
static bool named_peers(const struct ucv *v, const UnixSkEntry *u, const UnixSkEntry *p)
{
	for (size_t i = 0; i < v->n; i++)
		for (size_t k = 0; k < v->procs[i].nr_sks; k++) {
			const UnixSkEntry *o = v->procs[i].sks[k].u;

			if (o != u && o != p && (o->peer == u->ino || o->peer == p->ino))
				return true;
		}
	return false;
}

/* s, one end of an established pair or connection of process r. */
static int one(const struct ucv *v, size_t r, const struct ucv_sk *s, ucv_fn fn, void *arg)
{
	const struct ucv_proc *x = &v->procs[r];
	const struct ucv_sk *ps = own(x, s->u->peer), *ls;
	const UnixSkEntry *u = s->u, *p = ps ? ps->u : NULL;

	if (!p && peer_gone(u) && mine(x, s) && unnamed(u) && !u->accept_pos)
		return op(fn, arg, SK_LATE_PAIR, r, u, r, NULL, NULL);	/* with a stand-in */
	if (!p && v->tree) {
		bool hit = false;
		int ret = fork_end(v, r, s, fn, arg, &hit);

		return hit ? ret : tree_pair(v, r, s, fn, arg);
	}
	if (p && v->tree && p->peer == u->ino && (s->shared_out || ps->shared_out) &&
	    mine_below(x, s) && mine_below(x, ps) && unnamed(u) && unnamed(p) &&
	    !u->accept_pos && !p->accept_pos)	/* a pair its children hold too: nginx */
		return u->ino < p->ino && same_cred(u->peer_cred, p->peer_cred) ?
		       op(fn, arg, SK_LATE_TREE_PAIR, r, u, r, p, NULL) : 0;
	if (!p || p->peer != u->ino || !mine(x, s) || !mine(x, ps) || u->accept_pos ||
	    p->accept_pos)
		return 0;
	if (u->type == SOCK_DGRAM && (!unnamed(u) || !unnamed(p)))	/* names bound after */
		return u->ino < p->ino && same_cred(u->peer_cred, p->peer_cred) &&
		       !named_peers(v, u, p) ? op(fn, arg, SK_LATE_PAIR, r, u, r, p, NULL) : 0;
	if (unnamed(u) && unnamed(p))	/* a socketpair: each pair once */
		return u->ino < p->ino && same_cred(u->peer_cred, p->peer_cred) ?
		       op(fn, arg, SK_LATE_PAIR, r, u, r, p, NULL) : 0;
	if (unnamed(u) || !unnamed(p))
		return 0;
	ls = listener_of(x, u);		/* u accepted from l, p its client */
	if (!ls || !mine(x, ls) || !same_cred(ls->u->peer_cred, p->peer_cred))
		return 0;	/* a removed name: its alias kept until the process is parked */
	return op(fn, arg, SK_LATE_ACCEPT, r, u, r, p, ls->u);
}

/* A listener whose listen() r made: listened to again under its ids. */
static bool relisten(const struct ucv_proc *x, const UnixSkEntry *u)
{
	return u->state == SK_LISTEN && u->peer_cred && u->peer_cred->pid == (uint32_t)x->pid;
}

int sk_cred_ops(const struct ucv *v, size_t r, ucv_fn fn, void *arg)
{
	const struct ucv_proc *x = &v->procs[r];
	int ret = 0;

	for (size_t i = 0; !ret && i < x->nr_sks; i++)	/* first: clients copy them after */
		if (relisten(x, x->sks[i].u))
			ret = op(fn, arg, SK_LATE_LISTEN, r, x->sks[i].u, r, x->sks[i].u,
				 x->sks[i].u);
	for (size_t i = 0; !ret && i < x->nr_sks; i++) {
		const struct ucv_sk *s = &x->sks[i];

		if (s->u->state != SK_ESTABLISHED)
			continue;
		ret = one(v, r, s, fn, arg);
	}
	return ret;
}

/* The sockets some process's remakes cover. */
struct covered {
	const uint32_t *inos;
	uint32_t ino;
	bool hit;
};

static int covers(void *arg, const struct ucv_op *o)
{
	struct covered *c = arg;

	if (o->u->ino == c->ino || (o->p && o->p->ino == c->ino))
		c->hit = true;
	return 0;
}

static bool made_again(const struct ucv *v, uint32_t ino)
{
	struct covered c = { .ino = ino };

	for (size_t i = 0; i < v->n && !c.hit; i++)
		sk_cred_ops(v, i, covers, &c);
	return c.hit;
}


/* Why s (of process r, made again by nobody) keeps memdump's credentials. */
static const char *shape(const struct ucv *v, size_t r, const struct ucv_sk *s, char *buf,
			 size_t len)
{
	const struct ucv_proc *x = &v->procs[r];
	const UnixSkEntry *u = s->u;
	int q = u->peer ? opener(v, u->peer) : -1;
	uint32_t pid = u->peer_cred->pid;

	if (u->state == SK_LISTEN)
		snprintf(buf, len, "a listener whose listen() process %u made, not process %d that "
			 "opens it", pid, (int)x->pid);
	else if (u->has_accept_pos && u->accept_pos)
		snprintf(buf, len, "a connection not accepted yet whose credentials are not its "
			 "listener's");
	else if (s->shared_other)
		snprintf(buf, len, "a socket held by two processes of the tree (one description), "
			 "one not forked by the other (nor below it)");
	else if (s->shared_out)
		snprintf(buf, len, "a socket held by two processes of the tree (one description)");
	else if (q < 0)
		snprintf(buf, len, "its peer is closed or not dumped");
	else if (own(&v->procs[q], u->peer)->shared_out)
		snprintf(buf, len, "its peer (socket:[%u]) is held by two processes of the tree "
			 "(one description)", u->peer);
	else if (q != (int)r && pid != (uint32_t)x->pid && u->type != SOCK_DGRAM &&
		 !unnamed(u) && unnamed(own(&v->procs[q], u->peer)->u))
		snprintf(buf, len, "the accepted end of a connection process %u made to a listener "
			 "of process %d after a fork", pid, (int)x->pid);
	else if (q != (int)r && pid != (uint32_t)x->pid && u->type != SOCK_DGRAM && unnamed(u) &&
		 !unnamed(own(&v->procs[q], u->peer)->u))
		snprintf(buf, len, "the client end of a connection process %d made to a listener "
			 "of process %u after a fork", (int)x->pid, pid);
	else if (q != (int)r && pid != (uint32_t)x->pid)
		snprintf(buf, len, "a pair or connection process %u made, whose ends processes %d "
			 "and %d hold", pid, (int)x->pid, (int)v->procs[q].pid);
	else if (q != (int)r)
		snprintf(buf, len, "a pair or connection whose other end process %d holds, not one "
			 "that process %d forked (or one below it) holds alone", (int)v->procs[q].pid,
			 (int)x->pid);
	else if (pid != (uint32_t)x->pid)
		snprintf(buf, len, "a pair or connection made by process %u, not by process %d that "
			 "holds both ends", pid, (int)x->pid);
	else
		snprintf(buf, len, "a named stream pair end, a named datagram pair end another "
			 "socket is connected to, a named end whose peer was closed, or a "
			 "connection whose listener was closed, whose name was removed or whose "
			 "listen() credentials differ from its client's");
	return buf;
}

const char *sk_cred_inexact(const struct ucv *v, size_t r, const struct ucv_sk *s, char *buf,
			    size_t len)
{
	const UnixSkEntry *u = s->u;
	const struct ucv_sk *l;

	if (!u->peer_cred || made_again(v, u->ino))
		return NULL;
	l = u->has_accept_pos && u->accept_pos ? own(&v->procs[r], u->peer) : NULL;
	if (l && relisten(&v->procs[r], l->u) && same_cred(l->u->peer_cred, u->peer_cred))
		return NULL;	/* connected after its listener's LISTEN: its credentials */
	return shape(v, r, s, buf, len);
}
