/*
 * Options every socket kind has (SOL_SOCKET), read with getsockopt on a
 * copy of the target's fd, in CRIU's sk_opts_entry. Buffer sizes are kept
 * only when the process set them (SO_BUF_LOCK shows it): an unlocked size is
 * the kernel's to tune.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/filter.h>

#include "net/sock.h"

#include "sk-opts.pb-c.h"

#ifndef SO_BUF_LOCK
#define SO_BUF_LOCK	72
#endif

static int get_int(int fd, int opt, int *v)
{
	socklen_t l = sizeof(*v);

	*v = 0;
	return getsockopt(fd, SOL_SOCKET, opt, v, &l) ? -errno : 0;
}

/* An int option at any level, or -1 if the socket has none. */
int sk_int_opt(int fd, int level, int opt)
{
	int v = 0;
	socklen_t l = sizeof(v);

	return getsockopt(fd, level, opt, &v, &l) ? -1 : v;
}

/* SO_GET_FILTER: the classic BPF program attached, if any. */
static int read_filter(int fd, struct sk_opts *o)
{
	socklen_t n = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_GET_FILTER, NULL, &n))
		return -errno;
	if (!n)
		return 0;
	o->filter = calloc(n, sizeof(struct sock_filter));
	if (!o->filter)
		return -ENOMEM;
	if (getsockopt(fd, SOL_SOCKET, SO_GET_FILTER, o->filter, &n))
		return -errno;
	o->filter_len = n;
	return 0;
}

int sk_opts_read(int fd, struct sk_opts *o)
{
	static const struct { int opt; size_t off; } ints[] = {
		{ SO_SNDBUF, offsetof(struct sk_opts, sndbuf) },
		{ SO_RCVBUF, offsetof(struct sk_opts, rcvbuf) },
		{ SO_REUSEADDR, offsetof(struct sk_opts, reuseaddr) },
		{ SO_REUSEPORT, offsetof(struct sk_opts, reuseport) },
		{ SO_PASSCRED, offsetof(struct sk_opts, passcred) },
		{ SO_PASSSEC, offsetof(struct sk_opts, passsec) },
		{ SO_KEEPALIVE, offsetof(struct sk_opts, keepalive) },
		{ SO_BROADCAST, offsetof(struct sk_opts, broadcast) },
		{ SO_DONTROUTE, offsetof(struct sk_opts, dontroute) },
		{ SO_OOBINLINE, offsetof(struct sk_opts, oobinline) },
		{ SO_PRIORITY, offsetof(struct sk_opts, priority) },
		{ SO_RCVLOWAT, offsetof(struct sk_opts, rcvlowat) },
		{ SO_MARK, offsetof(struct sk_opts, mark) },
		{ SO_PEEK_OFF, offsetof(struct sk_opts, peek_off) },
		{ SO_NO_CHECK, offsetof(struct sk_opts, no_check) },
		{ SO_BUF_LOCK, offsetof(struct sk_opts, buf_lock) },
	};
	socklen_t l;
	int ret = 0;

	memset(o, 0, sizeof(*o));
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]) && !ret; i++) {
		ret = get_int(fd, ints[i].opt, (int *)((char *)o + ints[i].off));
		if (ret == -EOPNOTSUPP || ret == -ENOPROTOOPT)
			ret = 0;	/* SO_PEEK_OFF on TCP, ... */
	}
	if (ret)
		return ret;
	l = sizeof(o->sndtmo);
	if (getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO_OLD, &o->sndtmo, &l))
		return -errno;
	l = sizeof(o->rcvtmo);
	if (getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO_OLD, &o->rcvtmo, &l))
		return -errno;
	l = sizeof(o->linger);
	if (getsockopt(fd, SOL_SOCKET, SO_LINGER, &o->linger, &l))
		return -errno;
	l = sizeof(o->bound_dev);
	if (getsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, o->bound_dev, &l))
		o->bound_dev[0] = 0;
	return read_filter(fd, o);
}

void sk_opts_free(struct sk_opts *o)
{
	free(o->filter);
	o->filter = NULL;
}

void sk_opts_fill(const struct sk_opts *o, SkOptsEntry *e)
{
	e->so_sndbuf = o->sndbuf;
	e->so_rcvbuf = o->rcvbuf;
	e->so_snd_tmo_sec = o->sndtmo.tv_sec;
	e->so_snd_tmo_usec = o->sndtmo.tv_usec;
	e->so_rcv_tmo_sec = o->rcvtmo.tv_sec;
	e->so_rcv_tmo_usec = o->rcvtmo.tv_usec;
#define BOOL(f, v) (e->has_##f = true, e->f = (v) != 0)
#define U32(f, v) (e->has_##f = true, e->f = (v))
	BOOL(reuseaddr, o->reuseaddr);
	BOOL(so_reuseport, o->reuseport);
	BOOL(so_passcred, o->passcred);
	BOOL(so_passsec, o->passsec);
	BOOL(so_keepalive, o->keepalive);
	BOOL(so_broadcast, o->broadcast);
	BOOL(so_dontroute, o->dontroute);
	BOOL(so_no_check, o->no_check);
	U32(so_oobinline, o->oobinline);
	U32(so_priority, o->priority);
	U32(so_rcvlowat, o->rcvlowat);
	U32(so_mark, o->mark);
	U32(so_buf_lock, o->buf_lock);
	U32(so_linger, o->linger.l_linger);
	BOOL(so_linger_on, o->linger.l_onoff);
	e->has_so_peek_off = true;
	e->so_peek_off = o->peek_off;
#undef BOOL
#undef U32
	if (o->bound_dev[0])
		e->so_bound_dev = (char *)o->bound_dev;
	e->n_so_filter = o->filter_len;
	e->so_filter = o->filter;
}
