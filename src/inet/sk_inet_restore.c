/*
 * Restore of TCP, UDP, UDP-lite, ICMP (ping) and raw sockets, IPv4 and IPv6
 * (UDP-lite: its checksum coverage too; raw: its raw options and ICMP
 * filter; ping: bound to its echo id): a new socket with its
 * options, bound to its address (SO_REUSEADDR held on for the bind, then as
 * dumped), listening with its backlog, or connected (UDP); an established
 * TCP connection is rebuilt in repair mode (tcp_repair.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>

#include "common.h"
#include "kernel_uapi.h"
#include "log.h"
#include "ctx/restore_ctx.h"
#include "inet/tcp_states.h"
#include "net/sock.h"
#include "inet/sk_inet.h"

int inet_addr_of(const InetSkEntry *e, bool dst, struct sockaddr_storage *ss)
{
	const uint32_t *w = dst ? e->dst_addr : e->src_addr;
	size_t n = dst ? e->n_dst_addr : e->n_src_addr;
	uint16_t port = htons(dst ? e->dst_port : e->src_port);

	memset(ss, 0, sizeof(*ss));
	if (e->family == AF_INET) {
		struct sockaddr_in *a = (void *)ss;

		a->sin_family = AF_INET;
		a->sin_port = port;
		if (n >= 1)
			memcpy(&a->sin_addr, w, 4);
		return sizeof(*a);
	}
	struct sockaddr_in6 *a = (void *)ss;

	a->sin6_family = AF_INET6;
	a->sin6_port = port;
	if (n >= 4)
		memcpy(&a->sin6_addr, w, 16);
	return sizeof(*a);
}

int inet_fail(const InetSkEntry *e, int err, const char *what)
{
	char a[INET6_ADDRSTRLEN] = "?", b[INET6_ADDRSTRLEN] = "?";
	const char *proto = e->type == SOCK_RAW ? "raw" :
			    e->proto == IPPROTO_ICMP || e->proto == IPPROTO_ICMPV6 ? "ICMP" :
			    e->proto == IPPROTO_TCP ? "TCP" :
			    e->proto == IPPROTO_UDPLITE ? "UDP-lite" : "UDP";
	struct sockaddr_storage s, d;

	inet_addr_of(e, false, &s);
	inet_addr_of(e, true, &d);
	inet_ntop(e->family, e->family == AF_INET ? (void *)&((struct sockaddr_in *)&s)->sin_addr :
			     (void *)&((struct sockaddr_in6 *)&s)->sin6_addr, a, sizeof(a));
	inet_ntop(e->family, e->family == AF_INET ? (void *)&((struct sockaddr_in *)&d)->sin_addr :
			     (void *)&((struct sockaddr_in6 *)&d)->sin6_addr, b, sizeof(b));
	return fail(err, "%s socket %u (%s:%u -> %s:%u): %s: %s", proto, e->id, a, e->src_port,
		    b, e->dst_port, what, strerror(-err));
}

/* The options ip_opts_entry has a flag for: v6 sets the IPV6_ one of the same meaning. */
static int set_ip_flags(int fd, const IpOptsEntry *ip, bool v6)
{
	const struct { bool has; int v, v4, v6; } o[] = {
		{ ip->has_freebind, ip->freebind, IP_FREEBIND, IPV6_FREEBIND },
		{ ip->has_pktinfo, ip->pktinfo, IP_PKTINFO, IPV6_RECVPKTINFO },
		{ ip->has_recverr, ip->recverr, IP_RECVERR, IPV6_RECVERR },
		{ ip->has_transparent, ip->transparent, IP_TRANSPARENT, IPV6_TRANSPARENT },
		{ ip->has_mtu_discover, (int)ip->mtu_discover, IP_MTU_DISCOVER, IPV6_MTU_DISCOVER },
	};
	int ret = 0;

	for (size_t i = 0; i < ARRAY_SIZE(o) && !ret; i++)
		if (o[i].has)
			ret = v6 ? sk_keep_int_opt(fd, IPPROTO_IPV6, o[i].v6, o[i].v) :
				   sk_keep_int_opt(fd, IPPROTO_IP, o[i].v4, o[i].v);
	return ret;
}

static int set_ip_opts(int fd, const InetSkEntry *e)
{
	const IpOptsEntry *ip = e->ip_opts;
	bool v6 = e->family == AF_INET6;
	int ret = 0;

	if (v6 && e->has_v6only)
		ret = sk_keep_int_opt(fd, IPPROTO_IPV6, IPV6_V6ONLY, e->v6only);
	if (!ret && ip)
		ret = set_ip_flags(fd, ip, v6);
	if (!ret && ip && ip->has_tos)
		ret = v6 ? sk_keep_int_opt(fd, IPPROTO_IPV6, IPV6_TCLASS, ip->tos) :
			   sk_keep_int_opt(fd, IPPROTO_IP, IP_TOS, ip->tos);
	if (!ret && ip && ip->has_ttl)
		ret = v6 ? sk_keep_int_opt(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, ip->ttl) :
			   sk_keep_int_opt(fd, IPPROTO_IP, IP_TTL, ip->ttl);
	return ret;
}

/* UDP_CORK (UDP and UDP-lite), and UDP-lite's checksum coverage. */
static int set_udp_opts(int fd, const InetSkEntry *e)
{
	int ret = 0;

	if (e->has_udp_cork && e->udp_cork)
		ret = sk_keep_int_opt(fd, SOL_UDP, UDP_CORK, 1);
	if (ret || e->proto != IPPROTO_UDPLITE)
		return ret;
	if (e->has_udplite_send_cscov)
		ret = sk_keep_int_opt(fd, SOL_UDPLITE, UDPLITE_SEND_CSCOV, e->udplite_send_cscov);
	if (!ret && e->has_udplite_recv_cscov)
		ret = sk_keep_int_opt(fd, SOL_UDPLITE, UDPLITE_RECV_CSCOV, e->udplite_recv_cscov);
	return ret;
}

/* A raw socket's options; its ICMP filter (ICMP_FILTER, v6: ICMPV6_FILTER, both 1). */
static int set_raw_opts(int fd, const InetSkEntry *e)
{
	const IpOptsRawEntry *raw = e->ip_opts ? e->ip_opts->raw : NULL;
	bool v6 = e->family == AF_INET6;
	int ret = 0;

	if (!raw || e->type != SOCK_RAW)
		return 0;
	if (raw->has_hdrincl)
		ret = v6 ? sk_keep_int_opt(fd, IPPROTO_IPV6, IPV6_HDRINCL, raw->hdrincl) :
			   sk_keep_int_opt(fd, IPPROTO_IP, IP_HDRINCL, raw->hdrincl);
	if (!ret && raw->has_nodefrag && !v6)
		ret = sk_keep_int_opt(fd, IPPROTO_IP, IP_NODEFRAG, raw->nodefrag);
	if (!ret && raw->has_checksum_offset && v6)
		ret = sk_keep_int_opt(fd, IPPROTO_IPV6, IPV6_CHECKSUM, raw->checksum_offset);
	if (!ret && raw->n_icmpv_filter &&
	    setsockopt(fd, v6 ? IPPROTO_ICMPV6 : SOL_RAW, 1, raw->icmpv_filter,
		       raw->n_icmpv_filter * sizeof(uint32_t)))
		ret = -errno;
	return ret;
}

static int set_tcp_opts(int fd, const InetSkEntry *e)
{
	const TcpOptsEntry *t = e->tcp_opts;
	int ret = 0;

	if (!t || e->proto != IPPROTO_TCP)
		return 0;
	if (t->has_nodelay)
		ret = sk_keep_int_opt(fd, SOL_TCP, TCP_NODELAY, t->nodelay);
	if (!ret && t->has_cork)
		ret = sk_keep_int_opt(fd, SOL_TCP, TCP_CORK, t->cork);
	if (!ret && t->has_keepcnt && t->keepcnt)
		ret = sk_keep_int_opt(fd, SOL_TCP, TCP_KEEPCNT, t->keepcnt);
	if (!ret && t->has_keepidle && t->keepidle)
		ret = sk_keep_int_opt(fd, SOL_TCP, TCP_KEEPIDLE, t->keepidle);
	if (!ret && t->has_keepintvl && t->keepintvl)
		ret = sk_keep_int_opt(fd, SOL_TCP, TCP_KEEPINTVL, t->keepintvl);
	return ret;
}

static int set_options(int fd, const InetSkEntry *e)
{
	char why[160];
	int one = 1, ret = sk_opts_apply(fd, e->opts, false, why, sizeof(why));

	if (ret)
		return inet_fail(e, ret, why);
	ret = set_ip_opts(fd, e);
	if (!ret)
		ret = set_tcp_opts(fd, e);
	if (!ret)
		ret = set_udp_opts(fd, e);
	if (!ret)
		ret = set_raw_opts(fd, e);
	if (ret)
		return inet_fail(e, ret, "cannot set its IP, TCP, UDP or raw options");
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		return inet_fail(e, -errno, "SO_REUSEADDR");
	return 0;
}

/*
 * Bound with IP_FREEBIND: a socket may have been bound to an address that is
 * not (or no longer) the host's, with IP_FREEBIND turned off since (zdtm
 * sk-freebind-false). Its recorded value is put back once it is bound.
 */
static int set_freebind(int fd, const InetSkEntry *e, int v)
{
	return e->family == AF_INET6 ? setsockopt(fd, IPPROTO_IPV6, IPV6_FREEBIND, &v, sizeof(v)) :
				       setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &v, sizeof(v));
}

static int bind_to(int fd, const InetSkEntry *e)
{
	struct sockaddr_storage ss;
	socklen_t l = inet_addr_of(e, false, &ss);
	int ret = 0;
	bool keep = e->ip_opts && e->ip_opts->has_freebind && e->ip_opts->freebind;

	if (!keep && set_freebind(fd, e, 1))
		return inet_fail(e, -errno, "cannot set IP_FREEBIND to bind");
	if (bind(fd, (struct sockaddr *)&ss, l))
		ret = inet_fail(e, -errno, "cannot bind");
	if (!keep && set_freebind(fd, e, 0) && !ret)
		ret = inet_fail(e, -errno, "cannot turn IP_FREEBIND off again");
	return ret;
}

/*
 * A raw socket's port is its protocol: it is bound only to an address. A
 * ping socket's port is its echo id (chosen at its first send, or bound).
 */
static bool needs_bind(const InetSkEntry *e)
{
	static const uint32_t any[4];

	if (e->type != SOCK_RAW)
		return e->src_port != 0;
	return e->n_src_addr && memcmp(e->src_addr, any, e->n_src_addr * 4);
}

static bool reuseport_of(const InetSkEntry *e)
{
	return e->opts && e->opts->has_so_reuseport && e->opts->so_reuseport;
}

/*
 * Another socket of the dump is bound to the same port with SO_REUSEPORT
 * while e has it off: e joined that port's group and turned the option off
 * since (zdtm socket-tcp-reuseport). It joins again, the option on for its
 * bind and listen only.
 */
static bool rejoins_reuseport(const struct rst *r, const InetSkEntry *e)
{
	if (!e->src_port || reuseport_of(e))
		return false;
	for (size_t i = 0; i < r->ds.nr_files; i++) {
		const FileEntry *fe = r->ds.files[i];
		const InetSkEntry *o = fe->type == FD_TYPES__INETSK ? fe->isk : NULL;

		if (o && o != e && o->family == e->family && o->proto == e->proto &&
		    o->src_port == e->src_port && reuseport_of(o))
			return true;
	}
	return false;
}

static int set_reuseport(int fd, const InetSkEntry *e, int v)
{
	return setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &v, sizeof(v)) ?
	       inet_fail(e, -errno, "cannot set SO_REUSEPORT around its bind") : 0;
}

/* Listening, bound, unbound, or a connected UDP socket. */
static int open_plain(struct rst *r, int fd, const InetSkEntry *e)
{
	struct sockaddr_storage ss;
	socklen_t l;
	bool rejoin = rejoins_reuseport(r, e);
	int ret = rejoin ? set_reuseport(fd, e, 1) : 0;

	if (!ret && needs_bind(e))
		ret = bind_to(fd, e);
	if (!ret && e->state == TCP_LISTEN && listen(fd, e->backlog))
		ret = inet_fail(e, -errno, "cannot listen");
	if (!ret && rejoin)
		ret = set_reuseport(fd, e, 0);
	if (!ret && e->proto != IPPROTO_TCP && e->state == TCP_ESTABLISHED) {
		l = inet_addr_of(e, true, &ss);
		if (connect(fd, (struct sockaddr *)&ss, l))
			ret = inet_fail(e, -errno, "cannot connect");
	}
	return ret;
}

static int finish(int fd, const InetSkEntry *e)
{
	int reuse = e->opts->has_reuseaddr && e->opts->reuseaddr;
	static const int how[] = { -1, SHUT_RD, SHUT_WR, SHUT_RDWR };

	/*
	 * A connection over keeps its port forced reusable (repair mode) until
	 * the release puts SO_REUSEADDR back (tcp_repair_restore.c): a listener
	 * on that port may come after it.
	 */
	if (!tcp_conn_over(e->state, e->dst_port) &&
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof(reuse)))
		return inet_fail(e, -errno, "SO_REUSEADDR");
	/*
	 * A datagram socket shut down while unconnected (or disconnected by the
	 * shutdown) is not connected again: shutdown() sets the flags all the
	 * same and says ENOTCONN, as it did for the process.
	 */
	if (e->has_shutdown && e->shutdown > 0 && e->shutdown < 4 && e->state != TCP_LISTEN &&
	    !tcp_conn_over(e->state, e->dst_port) &&	/* reset: shut down both ways */
	    shutdown(fd, how[e->shutdown]) && !(errno == ENOTCONN && e->type != SOCK_STREAM))
		return inet_fail(e, -errno, "cannot shut down");
	if (fcntl(fd, F_SETFL, e->flags & O_NONBLOCK))
		return inet_fail(e, -errno, "cannot set its file flags");
	return 0;
}

/*
 * restore --tcp-close, or a set dumped with it (CRIU's): a connection, and one
 * closed before the dump, comes back closed.
 */
static bool comes_back_closed(const struct rst *r, const InetSkEntry *e)
{
	bool closing = r->o->tcp_close || (r->ds.inv->has_tcp_close && r->ds.inv->tcp_close);

	return closing && e->proto == IPPROTO_TCP &&
	       (tcp_state_repairable(e->state) || (e->state == TCP_CLOSE && e->dst_port));
}

/*
 * A socket never connected and shut down both ways: reads see the end, writes
 * EPIPE, poll HUP.
 */
static int open_closed(int fd, const InetSkEntry *e)
{
	if (shutdown(fd, SHUT_RDWR) && errno != ENOTCONN)
		return inet_fail(e, -errno, "cannot shut down");
	if (fcntl(fd, F_SETFL, e->flags & O_NONBLOCK))
		return inet_fail(e, -errno, "cannot set its file flags");
	return 0;
}

int sk_inet_open(struct rst *r, const InetSkEntry *e)
{
	int fd = socket(e->family, e->type | SOCK_CLOEXEC, e->proto), ret;

	if (fd < 0)
		return inet_fail(e, -errno, "cannot create");
	ret = set_options(fd, e);
	if (!ret && comes_back_closed(r, e)) {
		/* restore --tcp-close of a set dumped with --tcp-established: its lock goes too */
		r->lock_kept |= r->o->tcp_close;
		ret = open_closed(fd, e);
		if (ret)
			close(fd);
		return ret ? ret : fd;
	}
	if (!ret && e->proto == IPPROTO_TCP &&
	    (tcp_state_repairable(e->state) || tcp_conn_over(e->state, e->dst_port)))
		ret = tcp_repair_open(r, fd, e);
	else if (!ret)
		ret = open_plain(r, fd, e);
	if (!ret)
		ret = finish(fd, e);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}
