/*
 * Connections a UNIX stream or seqpacket listener has not accepted yet, and
 * datagrams queued from sockets the dump does not hold.
 *
 * A connect() to a listener makes a server-side socket (an embryo) that waits
 * in the listener's queue until accept(). It has no file, so no inode: the
 * client's sock_diag peer is 0, and the listener's UNIX_DIAG_ICONS lists, in
 * queue order, each embryo's client inode (0: the client closed). The dump
 * writes such a client with the listener as its peer (CRIU's layout) and its
 * place in the queue (accept_pos); restore connects the clients to the
 * listener in that order (sk_unix_embryo_restore.c). What the embryo received
 * cannot be read before accept(), so a client that sent data, or closed
 * (what it sent is unknown), is refused by name.
 *
 * A datagram whose sender the dump does not hold (closed since, or another
 * process's) is sent again by a stand-in socket: an unnamed sender looks the
 * same from any socket, to a receiver that is not connected (by its name) or
 * whose peer closed (from that closed peer's stand-in).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "net/sock.h"
#include "log.h"
#include "unix/sk_unix.h"

static bool holds(const uint64_t *inos, size_t n, uint64_t ino)
{
	for (size_t i = 0; i < n; i++)
		if (inos[i] == ino)
			return true;
	return false;
}

static bool in_process(const struct sk_set *set, uint64_t ino)
{
	return holds(set->inos, set->nr_inos, ino);
}

static bool in_tree(const struct sk_set *set, uint64_t ino)
{
	return holds(set->tree_inos, set->nr_tree_inos, ino);
}

static const char *where(const struct sk_set *set)
{
	return set->tree ? "tree" : "process";
}

/* An accepted end, in another process of the tree, of a connection to l's name. */
static bool tree_accepted(const struct sk_set *set, const struct sk_diag *l)
{
	for (size_t i = 0; i < set->nr_tree_inos; i++) {
		const struct sk_diag *s = sk_table_find(&set->diag, set->tree_inos[i]);

		if (s && s->family == AF_UNIX && s->state == SK_ESTABLISHED && s->type == l->type &&
		    s->name_len == l->name_len && !memcmp(s->name, l->name, l->name_len))
			return true;
	}
	return false;
}

static const char *icon_unsupported(const struct sk_diag *l, const struct sk_set *set,
				    uint32_t icon, char *buf, size_t len)
{
	const struct sk_diag *c = icon ? sk_table_find(&set->diag, icon) : NULL;

	if (!icon)
		return "a connection it has not accepted yet was closed by its client (what the "
		       "client sent cannot be read before accept())";
	if (!c || !in_process(set, icon)) {
		snprintf(buf, len, "a connection it has not accepted yet comes from socket:[%u] "
			 "outside the %s", icon, set->tree && c && in_tree(set, icon) ?
			 "process (another process of the tree)" : where(set));
		return buf;
	}
	if (set->tree && in_tree(set, icon)) {
		snprintf(buf, len, "the client socket:[%u] of a connection it has not accepted yet "
			 "is held by another process of the tree too", icon);
		return buf;
	}
	if (c->wqueue) {
		snprintf(buf, len, "a connection it has not accepted yet holds data its client "
			 "socket:[%u] sent, which cannot be read before accept()", icon);
		return buf;
	}
	(void)l;
	return NULL;
}

const char *sk_unix_icons_unsupported(const struct sk_diag *l, const struct sk_set *set,
				      char *buf, size_t len)
{
	if (!l->icons)
		return "it has connections not yet accepted";
	if (l->nr_icons > l->wqueue + 1) {
		snprintf(buf, len, "it has %u connections not yet accepted, more than its backlog "
			 "(%u) lets connect again", l->nr_icons, l->wqueue);
		return buf;
	}
	if (set->tree && tree_accepted(set, l))
		return "it has connections not yet accepted, and another process of the tree holds "
		       "a connection accepted from it";
	for (uint32_t i = 0; i < l->nr_icons; i++) {
		const char *why = icon_unsupported(l, set, l->icons[i], buf, len);

		if (why)
			return why;
	}
	return NULL;
}

const struct sk_diag *sk_unix_pending_listener(const struct sk_set *set, const struct sk_diag *s,
					       uint32_t *pos)
{
	if (s->family != AF_UNIX || s->type == SOCK_DGRAM || s->state != SK_ESTABLISHED || s->peer)
		return NULL;
	for (size_t i = 0; i < set->diag.n; i++) {
		const struct sk_diag *l = &set->diag.v[i];

		if (l->family != AF_UNIX || l->state != SK_LISTEN || !l->icons)
			continue;
		for (uint32_t k = 0; k < l->nr_icons; k++)
			if (l->icons[k] == s->ino) {
				if (pos)
					*pos = k + 1;
				return l;
			}
	}
	return NULL;
}

const char *sk_unix_pending_unsupported(const struct sk_diag *s, const struct sk_diag *l,
					const struct sk_set *set, char *buf, size_t len)
{
	char what[256];

	if (in_process(set, l->ino) && !(set->tree && in_tree(set, s->ino)))
		return NULL;
	sk_unix_describe(l, what, sizeof(what));
	snprintf(buf, len, "its connection to %s (socket:[%lu]) is not accepted yet, and that "
		 "listener is %s", what + 2, (unsigned long)l->ino,
		 in_process(set, l->ino) ? "shared with another process of the tree" :
		 in_tree(set, l->ino) ? "another process's of the tree" : "outside the process");
	return buf;
}

const char *sk_unix_standin_refused(const struct sk_diag *rcv, socklen_t flen)
{
	if (flen > offsetof(struct sockaddr_un, sun_path))
		return "its sender has a name, which no stand-in can send from";
	if (rcv->state == SK_ESTABLISHED && rcv->peer)
		return "the receiver is connected to another socket since, so that no stand-in "
		       "can send it again";
	if (rcv->state != SK_ESTABLISHED && !rcv->name_len)
		return "the receiver has no name a stand-in could send it to";
	return NULL;
}

/*
 * A datagram socket is SK_ESTABLISHED once it connects, and once another
 * connects to it; its peer closed, sock_diag shows no peer: getpeername()
 * tells the closed peer (its name) from none (ENOTCONN). Connected to its
 * closed peer's stand-in on restore, no other socket may then connect or send
 * to it: one connected to it, or a datagram another sent, is refused (neither
 * can happen with an unnamed peer, a socketpair's twin: kept as a guard).
 */
int sk_unix_dgram_peer_closed(int copy, const struct sk_set *set, struct sk_unix *u)
{
	struct sockaddr_un a;
	socklen_t l = sizeof(a);

	if (getpeername(copy, (struct sockaddr *)&a, &l))
		return errno == ENOTCONN ? 0 :
		       fail(-errno, "UNIX socket %lu: cannot ask for its peer: %s",
			    (unsigned long)u->ino, strerror(errno));
	if (l > offsetof(struct sockaddr_un, sun_path))
		return fail(-EOPNOTSUPP, "UNIX socket %lu is connected to a socket closed since, "
			    "which had a name: memdump cannot connect it to that closed socket "
			    "again", (unsigned long)u->ino);
	for (size_t i = 0; i < set->diag.n; i++)	/* connected to it: it connected elsewhere since */
		if (set->diag.v[i].family == AF_UNIX && set->diag.v[i].peer == u->ino)
			return fail(-EOPNOTSUPP, "UNIX socket %lu is connected to a socket closed "
				    "since, and socket:[%lu] is connected to it: memdump cannot "
				    "connect both again", (unsigned long)u->ino,
				    (unsigned long)set->diag.v[i].ino);
	u->peer_closed = true;
	return 0;
}
