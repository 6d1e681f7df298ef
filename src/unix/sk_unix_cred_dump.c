/*
 * The dump's side of the peer credentials' check: the view sk_unix_cred.c
 * decides over, built from the dump's file sets as the images have them (a
 * socket is a process's own unless all its fds take an earlier process's
 * description, share_pid; it is shared out when a later process's fd takes
 * it), and every UNIX socket whose credentials the restore would not make
 * again refused by name, in one failure, before the target is harmed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"
#include "log.h"
#include "ctx/dump_ctx.h"
#include "ctx/file_desc.h"
#include "ctx/refusals.h"
#include "net/sock.h"
#include "unix/sk_unix.h"

/* The sockets' entries, kept while the view is. */
struct cred_ent {
	UnixSkEntry e;
	UnixPeerCredEntry c;
};

struct dview {
	struct ucv v;
	struct cred_ent **ents;		/* per process */
};

static void dview_free(struct dview *w)
{
	for (size_t i = 0; w->v.procs && i < w->v.n; i++) {
		free(w->v.procs[i].sks);
		free(w->ents[i]);
	}
	free(w->v.procs);
	free(w->ents);
}

/* d's fd of its own description id (-1: none), and whether some fd takes another's copy. */
static int own_fd(const struct dump_ctx *d, int id, bool *copied)
{
	*copied = false;
	for (int i = 0; i < d->files.nr_fds; i++) {
		const struct fd_entry *e = &d->files.fds[i];

		if (e->id == id && !e->share_pid)
			return e->fd;
		if (e->id == id)
			*copied = true;
	}
	return -1;
}

/* Is e forked by d, or by one d forks? */
static bool below(const struct dump_ctx *e, const struct dump_ctx *d)
{
	for (e = e->tree_parent; e; e = e->tree_parent)
		if (e == d)
			return true;
	return false;
}

/* Does a later process of the view take d's description id (one of its fds)? other:
 * only one that d does not fork (nor one below). */
static bool taken(struct dump_ctx *const *ds, size_t n, const struct dump_ctx *d, int id,
		  bool other)
{
	for (size_t k = 0; k < n; k++)
		for (int i = 0; ds[k] != d && i < ds[k]->files.nr_fds; i++) {
			const struct fd_entry *e = &ds[k]->files.fds[i];

			for (int j = 0; e->share_pid == d->pid && j < d->files.nr_fds; j++)
				if (d->files.fds[j].fd == e->share_fd && d->files.fds[j].id == id &&
				    (!other || !below(ds[k], d)))
					return true;
		}
	return false;
}

static int dview_proc(struct dview *w, struct dump_ctx *const *ds, size_t n, size_t k)
{
	const struct dump_ctx *d = ds[k];
	struct ucv_proc *p = &w->v.procs[k];
	int nd = d->files.nr_descs;

	p->pid = d->pid;
	p->parent = -1;
	for (size_t i = 0; i < n; i++)
		if (d->tree_parent == ds[i])
			p->parent = (int)i;
	p->sks = calloc(nd + 1, sizeof(*p->sks));
	w->ents[k] = calloc(nd + 1, sizeof(*w->ents[k]));
	if (!p->sks || !w->ents[k])
		return -ENOMEM;
	for (int i = 0; i < nd && !d->kobj.files_shared; i++) {	/* its parent's table */
		const struct file_desc *f = &d->files.descs[i];
		struct cred_ent *c = &w->ents[k][p->nr_sks];
		bool copied;
		int fd;

		if (f->kind != FK_SOCKET || !f->sk || f->sk->family != AF_UNIX)
			continue;
		fd = own_fd(d, f->id, &copied);
		if (fd < 0 && copied)
			continue;	/* an earlier process's description */
		unix_sk_entry__init(&c->e);
		unix_peer_cred_entry__init(&c->c);
		sk_unix_entry(f, &c->e, &c->c);
		p->sks[p->nr_sks++] = (struct ucv_sk){ .u = &c->e, .fd = fd,
			.shared_out = taken(ds, n, d, f->id, false),
			.shared_other = taken(ds, n, d, f->id, true) };
	}
	return 0;
}

static const char *type_name(uint32_t type)
{
	return type == SOCK_STREAM ? "stream" : type == SOCK_DGRAM ? "datagram" : "seqpacket";
}

static void refuse_inexact(const struct ucv *v, size_t k, struct refusals *r)
{
	const struct ucv_proc *p = &v->procs[k];

	for (size_t i = 0; i < p->nr_sks; i++) {
		const struct ucv_sk *s = &p->sks[i];
		const UnixSkEntry *u = s->u;
		char why[400], fd[32];

		if (!sk_cred_inexact(v, k, s, why, sizeof(why)))
			continue;
		snprintf(fd, sizeof(fd), s->fd >= 0 ? "fd %d" : "a socket in flight", s->fd);
		refuse_add(r, "process %d: %s (socket:[%u]: a UNIX %s socket whose peer credentials "
			   "(pid %u, uid %u) memdump cannot make again: %s)", (int)p->pid, fd,
			   u->ino, type_name(u->type), u->peer_cred->pid, u->peer_cred->uid, why);
	}
}

int sk_unix_cred_check(struct dump_ctx *const *ds, size_t n)
{
	struct dview w = { .v = { .n = n, .tree = n > 1 } };
	struct refusals *r = calloc(1, sizeof(*r));
	int ret = 0;

	w.v.procs = calloc(n, sizeof(*w.v.procs));
	w.ents = calloc(n, sizeof(*w.ents));
	if (!r || !w.v.procs || !w.ents)
		ret = -ENOMEM;
	for (size_t k = 0; !ret && k < n; k++)
		ret = dview_proc(&w, ds, n, k);
	for (size_t k = 0; !ret && k < n; k++)
		refuse_inexact(&w.v, k, r);
	if (!ret && r->n)
		ret = fail(-EOPNOTSUPP, "the %s holds UNIX sockets whose peer credentials "
			   "(SO_PEERCRED) a restore would not give back: %s", n > 1 ? "tree" :
			   "process", r->text);
	dview_free(&w);
	free(r);
	return ret;
}
