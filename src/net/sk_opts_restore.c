/*
 * Options common to every socket, set on a new socket from its
 * sk_opts_entry. Buffer sizes are set (SO_*BUFFORCE, half the dumped value,
 * which the kernel doubles) and then the lock bits as they were
 * (SO_BUF_LOCK): a size the process never set stays the kernel's to tune.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <linux/filter.h>

#include "log.h"
#include "ctx/restore_ctx.h"
#include "net/sock.h"

#ifndef SO_BUF_LOCK
#define SO_BUF_LOCK	72
#endif

static int set_int(int fd, int opt, int v, const char *name, char *why, size_t len)
{
	if (!setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v)))
		return 0;
	snprintf(why, len, "%s %d: %s", name, v, strerror(errno));
	return -errno;
}

static int set_bools(int fd, const SkOptsEntry *o, char *why, size_t len)
{
	const struct { int opt; bool has, v; const char *name; } b[] = {
		{ SO_REUSEPORT, o->has_so_reuseport, o->so_reuseport, "SO_REUSEPORT" },
		{ SO_PASSCRED, o->has_so_passcred, o->so_passcred, "SO_PASSCRED" },
		{ SO_PASSSEC, o->has_so_passsec, o->so_passsec, "SO_PASSSEC" },
		{ SO_KEEPALIVE, o->has_so_keepalive, o->so_keepalive, "SO_KEEPALIVE" },
		{ SO_BROADCAST, o->has_so_broadcast, o->so_broadcast, "SO_BROADCAST" },
		{ SO_DONTROUTE, o->has_so_dontroute, o->so_dontroute, "SO_DONTROUTE" },
		{ SO_OOBINLINE, o->has_so_oobinline, o->so_oobinline != 0, "SO_OOBINLINE" },
	};
	int ret = 0;

	for (size_t i = 0; i < sizeof(b) / sizeof(b[0]) && !ret; i++)
		if (b[i].has && b[i].v)
			ret = set_int(fd, b[i].opt, 1, b[i].name, why, len);
	return ret;
}

static int set_values(int fd, const SkOptsEntry *o, char *why, size_t len)
{
	int ret = 0;

	if (o->has_so_priority && o->so_priority)
		ret = set_int(fd, SO_PRIORITY, o->so_priority, "SO_PRIORITY", why, len);
	if (!ret && o->has_so_rcvlowat && o->so_rcvlowat > 1)
		ret = set_int(fd, SO_RCVLOWAT, o->so_rcvlowat, "SO_RCVLOWAT", why, len);
	if (!ret && o->has_so_mark && o->so_mark)
		ret = set_int(fd, SO_MARK, o->so_mark, "SO_MARK", why, len);
	if (!ret && o->has_so_no_check && o->so_no_check)
		ret = set_int(fd, SO_NO_CHECK, 1, "SO_NO_CHECK", why, len);
	return ret;
}

static int set_struct(int fd, int opt, const void *v, socklen_t l, const char *name, char *why,
		      size_t len)
{
	if (!setsockopt(fd, SOL_SOCKET, opt, v, l))
		return 0;
	snprintf(why, len, "%s: %s", name, strerror(errno));
	return -errno;
}

static int set_times(int fd, const SkOptsEntry *o, char *why, size_t len)
{
	struct timeval snd = { o->so_snd_tmo_sec, o->so_snd_tmo_usec };
	struct timeval rcv = { o->so_rcv_tmo_sec, o->so_rcv_tmo_usec };
	struct linger lg = { o->has_so_linger_on && o->so_linger_on, o->so_linger };
	int ret = 0;

	if (snd.tv_sec || snd.tv_usec)
		ret = set_struct(fd, SO_SNDTIMEO, &snd, sizeof(snd), "SO_SNDTIMEO", why, len);
	if (!ret && (rcv.tv_sec || rcv.tv_usec))
		ret = set_struct(fd, SO_RCVTIMEO, &rcv, sizeof(rcv), "SO_RCVTIMEO", why, len);
	if (!ret && lg.l_onoff)
		ret = set_struct(fd, SO_LINGER, &lg, sizeof(lg), "SO_LINGER", why, len);
	return ret;
}

static int set_filter(int fd, const SkOptsEntry *o, char *why, size_t len)
{
	struct sock_fprog prog = { .len = o->n_so_filter, .filter = (void *)o->so_filter };

	if (!o->n_so_filter)
		return 0;
	return set_struct(fd, SO_ATTACH_FILTER, &prog, sizeof(prog), "SO_ATTACH_FILTER", why, len);
}

static int set_buffers(int fd, const SkOptsEntry *o, char *why, size_t len)
{
	int ret = set_int(fd, SO_SNDBUFFORCE, o->so_sndbuf / 2, "SO_SNDBUFFORCE", why, len);

	if (!ret)
		ret = set_int(fd, SO_RCVBUFFORCE, o->so_rcvbuf / 2, "SO_RCVBUFFORCE", why, len);
	if (!ret)
		ret = set_int(fd, SO_BUF_LOCK, o->has_so_buf_lock ? o->so_buf_lock : 0,
			      "SO_BUF_LOCK", why, len);
	return ret;
}

/*
 * Set an int option to v unless the new socket has it already: some say
 * EBUSY to any set once in use (a packet socket's ring).
 */
int sk_keep_int_opt(int fd, int level, int opt, int v)
{
	int cur = 0;
	socklen_t l = sizeof(cur);

	if (!getsockopt(fd, level, opt, &cur, &l) && cur == v)
		return 0;
	return setsockopt(fd, level, opt, &v, sizeof(v)) ? -errno : 0;
}

int sk_opts_apply(int fd, const SkOptsEntry *o, bool reuseaddr, char *why, size_t len)
{
	int ret = set_buffers(fd, o, why, len);

	if (!ret)
		ret = set_bools(fd, o, why, len);
	if (!ret)
		ret = set_values(fd, o, why, len);
	if (!ret)
		ret = set_times(fd, o, why, len);
	if (!ret)
		ret = set_filter(fd, o, why, len);
	if (!ret && o->so_bound_dev && o->so_bound_dev[0])
		ret = set_struct(fd, SO_BINDTODEVICE, o->so_bound_dev, strlen(o->so_bound_dev) + 1,
				 "SO_BINDTODEVICE", why, len);
	if (!ret && reuseaddr)
		ret = set_int(fd, SO_REUSEADDR, o->has_reuseaddr && o->reuseaddr, "SO_REUSEADDR",
			      why, len);
	return ret;
}
