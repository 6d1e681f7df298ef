/*
 * TCP, UDP, UDP-lite, ICMP (ping) and raw sockets, IPv4 and IPv6 (UDP-lite:
 * UDP's, with its checksum coverage; raw: IP_HDRINCL, IP_NODEFRAG,
 * IPV6_CHECKSUM, the ICMP filters; ping: its echo id is its port): family,
 * addresses and ports from
 * getsockname/getpeername, the state from TCP_INFO (a listener's backlog and
 * accept queue too), IP and TCP options, shutdown bits from sock_diag.
 * Listening, bound and unbound sockets are re-created; an established
 * connection goes through TCP_REPAIR (tcp_repair.c) with --tcp-established.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "ctx/file_desc.h"
#include "net/sock.h"
#include "image/image.h"
#include "kernel_uapi.h"
#include "log.h"
#include "nsswitch.h"
#include "net/sk_err.h"
#include "inet/tcp_states.h"

#include "files.pb-c.h"
#include "inet/sk_inet.h"

/*
 * A UDP socket's queue, without touching the socket: a recv(MSG_PEEK) would
 * consume a pending error (an ICMP port unreachable) that the process has not
 * seen yet. sock_diag's receive queue counts every datagram, empty ones too;
 * a socket it does not list is asked for the size of its first datagram.
 */
static bool udp_queued(int copy, const struct sk_diag *s)
{
	int n = 0;

	if (s)
		return s->rqueue != 0;
	return ioctl(copy, SIOCINQ, &n) == 0 && n > 0;
}

static bool peer_of_unconnected(int copy, int family, struct sockaddr_storage *ss);

/*
 * Bytes of datagrams a UDP or raw socket holds and has not sent (SIOCOUTQ:
 * the memory its send queue holds). Corked ones (UDP_CORK, MSG_MORE) stay
 * until the process sends again, and a restore cannot put them back; a
 * datagram on its way out is freed within moments, so a non-zero count is
 * asked again for up to 20 ms before it counts.
 */
static int dgram_unsent(int copy)
{
	int n = 0;

	for (int i = 0; i < 10; i++) {
		if (ioctl(copy, SIOCOUTQ, &n) || n <= 0)
			return 0;
		usleep(2000);
	}
	return n;
}

static const char *unsent_why(int n, char *buf, size_t len)
{
	snprintf(buf, len, "it holds datagrams not sent yet (corked by UDP_CORK or MSG_MORE; %d "
		 "bytes of send queue), which a restore cannot put back", n);
	return buf;
}

/*
 * A socket in TCP_CLOSE that had a connection: it keeps its two names
 * (getsockname, SO_PEERNAME), and its receive queue (tcp_conn_over).
 */
static bool closed_connection(int copy)
{
	struct sockaddr_storage ss;

	return peer_of_unconnected(copy, sk_int_opt(copy, SOL_SOCKET, SO_DOMAIN), &ss);
}

static bool is_ping(int type, int proto)
{
	return type == SOCK_DGRAM && (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6);
}

/*
 * A raw or ping socket: an error pending (poll's POLLERR: sk_err, or the
 * error queue) is not restored, and reading it would take it from the
 * process. Its queue: sock_diag's (raw), or, nothing pending to take, a peek
 * at the first datagram (ping sockets are in no sock_diag table).
 */
static const char *raw_unsupported(int copy, const struct sk_diag *s, char *buf, size_t len)
{
	struct pollfd p = { .fd = copy, .events = POLLIN };
	int unsent = dgram_unsent(copy);
	char c;

	if (poll(&p, 1, 0) < 0)
		return "poll() fails on it";
	if (p.revents & POLLERR)
		return "an error is pending on it (sk_err or its error queue), which memdump "
		       "cannot restore";
	if (unsent)
		return unsent_why(unsent, buf, len);
	if (s)
		return s->rqueue ? "it has datagrams queued, which memdump does not dump" : NULL;
	if ((p.revents & POLLIN) && recv(copy, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0)
		return "it has datagrams queued, which memdump does not dump";
	return NULL;
}

/* The socket is of memdump's own network namespace (SIOCGSKNS), not one the dump entered. */
static bool in_home_netns(int copy)
{
	struct stat its;
	int ns = ioctl(copy, SIOCGSKNS);
	bool same;

	if (ns < 0)
		return false;
	same = !fstat(ns, &its) && its.st_ino == ns_home_inode(ns_kind_by_name("net"));
	close(ns);
	return same;
}

/* The socket is of the namespace the dumping thread is in. */
static bool in_thread_netns(int copy)
{
	struct stat its, here;
	int ns = ioctl(copy, SIOCGSKNS);
	bool same;

	if (ns < 0)
		return false;
	same = !fstat(ns, &its) && !stat("/proc/thread-self/ns/net", &here) &&
	       its.st_ino == here.st_ino;
	close(ns);
	return same;
}

/*
 * Ping sockets: the restore makes one as memdump, whose group must be in
 * net.ipv4.ping_group_range: tried here, in memdump's namespace or in the
 * target's own saved one (the dumping thread is in it), whose range the
 * restore writes back before the sockets are made (ns/netns_sysctl.c).
 */
static const char *ping_unsupported(int copy, int proto, const struct sk_set *set, char *buf,
				    size_t len)
{
	int family = sk_int_opt(copy, SOL_SOCKET, SO_DOMAIN), fd;
	bool home = in_home_netns(copy);

	if (!home && !(set->netns_saved && in_thread_netns(copy)))
		return "an ICMP socket of another network namespace than memdump's or the "
		       "process's own (whose net.ipv4.ping_group_range memdump does not restore)";
	fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, proto);
	if (fd < 0)
		return home ? "memdump cannot make an ICMP socket here to restore it "
			      "(net.ipv4.ping_group_range leaves its group out)"
			    : "memdump cannot make an ICMP socket in the process's network "
			      "namespace to restore it (its net.ipv4.ping_group_range leaves "
			      "memdump's group out)";
	close(fd);
	return raw_unsupported(copy, NULL, buf, len);
}

/*
 * The pair held by this connection's own TIME_WAIT in a network namespace
 * the dump saves (the dumping thread is in it): the namespace is made anew
 * at restore, with no TIME_WAIT entries (none is a process's), so the pair
 * is free there (zdtm socket-tcp*-closed in the ns flavour).
 */
static bool tw_left_behind(int st, int copy, const struct sk_set *set)
{
	return st == TCP_TIME_WAIT && set->netns_saved && in_thread_netns(copy);
}

/*
 * A connection over (tcp_states.h: reset, timed out, or closed both ways),
 * rebuilt established and reset. Its send queue is empty (a reset empties
 * it, a close both ways had it acknowledged) but what it had not sent yet
 * (SIOCOUTQNSD) the rebuild cannot count as such; its pending error, read
 * without taking it, is none or a reset's: ECONNRESET, or EPIPE (reset
 * after the peer's FIN). A timeout's ETIMEDOUT, a refused connect's
 * ECONNREFUSED, an ICMP error (soft or not) and the error queue cannot be
 * made again.
 */
static const char *pair_taken(int copy, const struct sk_set *set, char *buf, size_t len)
{
	struct sockaddr_storage local, peer;
	socklen_t l = sizeof(local);
	int st;

	if (getsockname(copy, (struct sockaddr *)&local, &l) ||
	    !peer_of_unconnected(copy, local.ss_family, &peer))
		return "a connection over whose names cannot be read";
	st = tcp_tuple_state(&local, &peer);
	if (st == -ENOENT || st == TCP_LISTEN || tw_left_behind(st, copy, set))
		return NULL;
	if (st < 0)
		snprintf(buf, len, "a connection over: sock_diag cannot tell whether its address "
			 "pair is free (%s)", strerror(-st));
	else
		snprintf(buf, len, "a connection over whose address pair is held (%s%s), so that a "
			 "restore could not connect it again", sk_state_name(st),
			 st == TCP_TIME_WAIT ? ": closed both ways from this end" : "");
	return buf;
}

static const char *over_unsupported(int copy, const struct sk_set *set, char *buf, size_t len)
{
	struct sk_errs e;
	int out = 0, ret;

	if (!set->tcp_established)
		return "a connection over (reset, timed out or closed both ways) that still names "
		       "its peer, dumped only with --tcp-established";
	if (ioctl(copy, SIOCOUTQNSD, &out) || out)
		return "a connection over with data it never sent, which memdump cannot restore";
	ret = tcp_over_errors(copy, &e);
	if (ret == -EMSGSIZE)
		return "a connection over with messages in its error queue, which memdump cannot "
		       "restore";
	if (ret) {
		snprintf(buf, len, "a connection over with an error pending, which memdump cannot "
			 "read without taking it from the process (BPF: %s)", strerror(-ret));
		return buf;
	}
	if (e.soft) {
		snprintf(buf, len, "a connection over with a soft error pending (%s), which "
			 "memdump cannot restore", strerror(e.soft));
		return buf;
	}
	if (e.err && e.err != ECONNRESET && e.err != EPIPE) {
		snprintf(buf, len, "a connection over with the error \"%s\" pending, which memdump "
			 "cannot restore (a reset's only: ECONNRESET, EPIPE)", strerror(e.err));
		return buf;
	}
	return pair_taken(copy, set, buf, len);
}

const char *sk_inet_unsupported(int copy, const struct sk_diag *s, const struct sk_set *set,
				char *buf, size_t len)
{
	int type = sk_int_opt(copy, SOL_SOCKET, SO_TYPE), proto = sk_int_opt(copy, SOL_SOCKET, SO_PROTOCOL);
	struct tcp_info ti;
	socklen_t l = sizeof(ti);

	if (type == SOCK_DGRAM && (proto == IPPROTO_UDP || proto == IPPROTO_UDPLITE)) {
		int unsent = dgram_unsent(copy);

		if (unsent)
			return unsent_why(unsent, buf, len);
		if (!udp_queued(copy, s))
			return NULL;
		return "it has datagrams queued, whose senders a restore could not be";
	}
	if (is_ping(type, proto))
		return ping_unsupported(copy, proto, set, buf, len);
	if (type == SOCK_RAW)
		return raw_unsupported(copy, s, buf, len);
	if (type != SOCK_STREAM || proto != IPPROTO_TCP)
		return "memdump dumps TCP, UDP, UDP-lite, ICMP and raw sockets only";
	memset(&ti, 0, sizeof(ti));
	if (getsockopt(copy, SOL_TCP, TCP_INFO, &ti, &l))
		return "its TCP_INFO cannot be read";
	switch (ti.tcpi_state) {
	case TCP_CLOSE:
		if (set->tcp_close || !closed_connection(copy))
			return NULL;
		return over_unsupported(copy, set, buf, len);
	case TCP_LISTEN:
		if (!ti.tcpi_unacked)
			return NULL;
		if (set->skip_in_flight) {	/* their clients see them reset */
			pr_info("a listener's %u connection(s) not yet accepted are dropped "
				"(--skip-in-flight)\n", ti.tcpi_unacked);
			return NULL;
		}
		snprintf(buf, len, "%u connection(s) not yet accepted (--skip-in-flight drops them)",
			 ti.tcpi_unacked);
		return buf;
	}
	if (tcp_repairable(ti.tcpi_state) && !set->tcp_established && !set->tcp_close) {
		snprintf(buf, len, "a connection in state %s, dumped only with --tcp-established",
			 sk_state_name(ti.tcpi_state));
		return buf;
	}
	if (tcp_repairable(ti.tcpi_state))
		return NULL;
	snprintf(buf, len, "a connection in state %s, which memdump cannot dump",
		 sk_state_name(ti.tcpi_state));
	return buf;
}

static uint16_t inet_port_of(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? ((const struct sockaddr_in *)ss)->sin_port :
	       ss->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)ss)->sin6_port : 0;
}

/* SO_PEERNAME (the kernel wants the exact size): a peer getpeername does not tell. */
static bool peer_of_unconnected(int copy, int family, struct sockaddr_storage *ss)
{
	socklen_t l = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);

	memset(ss, 0, sizeof(*ss));
	return !getsockopt(copy, SOL_SOCKET, SO_PEERNAME, ss, &l) && inet_port_of(ss);
}

/* The address and port of a sockaddr into 16 bytes (v4: the first 4). */
static void split_addr(const struct sockaddr_storage *ss, uint8_t *addr, uint16_t *port)
{
	memset(addr, 0, 16);
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;

		memcpy(addr, &a->sin_addr, 4);
		*port = ntohs(a->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;

		memcpy(addr, &a->sin6_addr, 16);
		*port = ntohs(a->sin6_port);
	}
}

/* A raw socket's own options; the ICMP filter of a raw ICMP socket (all words). */
static void read_raw_opts(int copy, struct sk_inet *in)
{
	bool v6 = in->family == AF_INET6;
	socklen_t l = v6 ? 8 * sizeof(uint32_t) : sizeof(uint32_t);

	in->hdrincl = v6 ? sk_int_opt(copy, IPPROTO_IPV6, IPV6_HDRINCL) :
			   sk_int_opt(copy, IPPROTO_IP, IP_HDRINCL);
	in->nodefrag = v6 ? -1 : sk_int_opt(copy, IPPROTO_IP, IP_NODEFRAG);
	in->checksum = v6 ? sk_int_opt(copy, IPPROTO_IPV6, IPV6_CHECKSUM) : -1;
	if (in->proto != (v6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP))
		return;
	if (!getsockopt(copy, v6 ? IPPROTO_ICMPV6 : SOL_RAW, 1 /* ICMP_FILTER, ICMPV6_FILTER */,
			in->icmp_filter, &l))
		in->nr_icmp_filter = l / sizeof(uint32_t);
}

static void read_ip_opts(int copy, struct sk_inet *in)
{
	bool v6 = in->family == AF_INET6;

	in->v6only = v6 ? sk_int_opt(copy, IPPROTO_IPV6, IPV6_V6ONLY) : 0;
	in->freebind = v6 ? sk_int_opt(copy, IPPROTO_IPV6, IPV6_FREEBIND) :
			    sk_int_opt(copy, IPPROTO_IP, IP_FREEBIND);
	in->pktinfo = v6 ? sk_int_opt(copy, IPPROTO_IPV6, IPV6_RECVPKTINFO) :
			   sk_int_opt(copy, IPPROTO_IP, IP_PKTINFO);
	in->recverr = v6 ? sk_int_opt(copy, IPPROTO_IPV6, IPV6_RECVERR) :
			   sk_int_opt(copy, IPPROTO_IP, IP_RECVERR);
	in->mtu_discover = v6 ? sk_int_opt(copy, IPPROTO_IPV6, IPV6_MTU_DISCOVER) :
				sk_int_opt(copy, IPPROTO_IP, IP_MTU_DISCOVER);
	in->transparent = v6 ? sk_int_opt(copy, IPPROTO_IPV6, IPV6_TRANSPARENT) :
			       sk_int_opt(copy, IPPROTO_IP, IP_TRANSPARENT);
	in->tos = v6 ? sk_int_opt(copy, IPPROTO_IPV6, IPV6_TCLASS) : sk_int_opt(copy, IPPROTO_IP, IP_TOS);
	in->ttl = v6 ? sk_int_opt(copy, IPPROTO_IPV6, IPV6_UNICAST_HOPS) :
		       sk_int_opt(copy, IPPROTO_IP, IP_TTL);
	if (in->type == SOCK_RAW)
		read_raw_opts(copy, in);
	if (in->proto == IPPROTO_UDP || in->proto == IPPROTO_UDPLITE)
		in->cork = sk_int_opt(copy, SOL_UDP, UDP_CORK);
	if (in->proto == IPPROTO_UDPLITE) {
		in->send_cscov = sk_int_opt(copy, SOL_UDPLITE, UDPLITE_SEND_CSCOV);
		in->recv_cscov = sk_int_opt(copy, SOL_UDPLITE, UDPLITE_RECV_CSCOV);
	}
	if (in->proto != IPPROTO_TCP)
		return;
	in->nodelay = sk_int_opt(copy, SOL_TCP, TCP_NODELAY);
	in->cork = sk_int_opt(copy, SOL_TCP, TCP_CORK);
	in->keepcnt = sk_int_opt(copy, SOL_TCP, TCP_KEEPCNT);
	in->keepidle = sk_int_opt(copy, SOL_TCP, TCP_KEEPIDLE);
	in->keepintvl = sk_int_opt(copy, SOL_TCP, TCP_KEEPINTVL);
}

/*
 * A ping socket's shutdown bits (no sock_diag lists it; nor a raw socket
 * without raw_diag): poll shows a shut
 * down reading side (POLLRDHUP) and both (POLLHUP); a shut down writing side
 * alone changes nothing a datagram socket does.
 */
static uint8_t poll_shutdown(int copy)
{
	struct pollfd p = { .fd = copy, .events = POLLIN | POLLRDHUP };

	if (poll(&p, 1, 0) <= 0)
		return 0;
	return p.revents & POLLHUP ? 3 : p.revents & POLLRDHUP ? 1 : 0;
}

int sk_inet_collect(struct dump_ctx *d, int copy, const struct sk_diag *s, struct sk_state *st)
{
	struct sk_inet *in = &st->in;
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	struct tcp_info ti;

	in->family = st->family;
	in->type = sk_int_opt(copy, SOL_SOCKET, SO_TYPE);
	in->proto = sk_int_opt(copy, SOL_SOCKET, SO_PROTOCOL);
	if (!getsockname(copy, (struct sockaddr *)&ss, &l))
		split_addr(&ss, in->src, &in->sport);
	l = sizeof(ss);
	in->state = TCP_CLOSE;
	if (!getpeername(copy, (struct sockaddr *)&ss, &l)) {
		split_addr(&ss, in->dst, &in->dport);
		in->state = TCP_ESTABLISHED;
	} else if (in->proto == IPPROTO_TCP && peer_of_unconnected(copy, in->family, &ss)) {
		split_addr(&ss, in->dst, &in->dport);	/* SYN_SENT: getpeername says ENOTCONN */
	}
	l = sizeof(ti);
	memset(&ti, 0, sizeof(ti));
	if (in->proto == IPPROTO_TCP && !getsockopt(copy, SOL_TCP, TCP_INFO, &ti, &l)) {
		in->state = ti.tcpi_state;
		if (in->state == TCP_LISTEN)
			in->backlog = ti.tcpi_sacked;
	}
	in->shutdown = s ? s->shutdown :
		       is_ping(in->type, in->proto) || in->type == SOCK_RAW ? poll_shutdown(copy) : 0;
	read_ip_opts(copy, in);
	/* --tcp-close: a connection's names only; the restore brings it back closed */
	if (in->proto == IPPROTO_TCP && !d->sockets.tcp_close &&
	    (tcp_repairable(in->state) || tcp_conn_over(in->state, in->dport)))
		return tcp_stream_collect(d, copy, in, st->opts.reuseaddr);
	return 0;
}

static void fill_addr(uint32_t *words, size_t *n, int family, const uint8_t *addr)
{
	*n = family == AF_INET ? 1 : 4;
	memcpy(words, addr, *n * 4);
}

static void fill_raw(const struct sk_inet *in, IpOptsRawEntry *raw)
{
	raw->has_hdrincl = in->hdrincl >= 0;
	raw->hdrincl = in->hdrincl > 0;
	raw->has_nodefrag = in->nodefrag >= 0;
	raw->nodefrag = in->nodefrag > 0;
	if (in->family == AF_INET6) {
		raw->has_checksum = raw->has_checksum_offset = true;
		raw->checksum = in->checksum >= 0;
		raw->checksum_offset = in->checksum;
	}
	raw->n_icmpv_filter = in->nr_icmp_filter;
	raw->icmpv_filter = (uint32_t *)in->icmp_filter;
}

int sk_inet_write(const struct file_desc *f, struct image *files)
{
	const struct sk_inet *in = &f->sk->in;
	FileEntry fe = FILE_ENTRY__INIT;
	InetSkEntry e = INET_SK_ENTRY__INIT;
	FownEntry fown = FOWN_ENTRY__INIT;
	SkOptsEntry opts = SK_OPTS_ENTRY__INIT;
	IpOptsEntry ip = IP_OPTS_ENTRY__INIT;
	IpOptsRawEntry raw = IP_OPTS_RAW_ENTRY__INIT;
	TcpOptsEntry tcp = TCP_OPTS_ENTRY__INIT;
	uint32_t src[4], dst[4];

	sk_opts_fill(&f->sk->opts, &opts);
	e.id = f->id;
	e.ino = f->sk->ino;
	e.family = in->family;
	e.type = in->type;
	e.proto = in->proto;
	e.state = in->state;
	e.src_port = in->sport;
	e.dst_port = in->dport;
	e.flags = f->flags;
	e.backlog = in->backlog;
	fill_addr(src, &e.n_src_addr, in->family, in->src);
	fill_addr(dst, &e.n_dst_addr, in->family, in->dst);
	e.src_addr = src;
	e.dst_addr = dst;
	fd_owner_fill(&fown, &f->fown);
	e.fown = &fown;
	e.opts = &opts;
	e.has_v6only = true;
	e.v6only = in->v6only > 0;
	ip.has_freebind = true;
	ip.freebind = in->freebind > 0;
	ip.has_tos = in->tos >= 0;
	ip.tos = in->tos;
	ip.has_ttl = in->ttl >= 0;
	ip.ttl = in->ttl;
	ip.has_pktinfo = in->pktinfo >= 0;
	ip.pktinfo = in->pktinfo > 0;
	ip.has_recverr = in->recverr >= 0;
	ip.recverr = in->recverr > 0;
	ip.has_mtu_discover = in->mtu_discover >= 0;
	ip.mtu_discover = in->mtu_discover;
	ip.has_transparent = in->transparent >= 0;
	ip.transparent = in->transparent > 0;
	if (in->type == SOCK_RAW)
		fill_raw(in, &raw);
	ip.raw = in->type == SOCK_RAW ? &raw : NULL;
	e.ip_opts = &ip;
	e.has_shutdown = true;
	e.shutdown = in->shutdown;
	if ((in->proto == IPPROTO_UDP || in->proto == IPPROTO_UDPLITE) && in->cork > 0)
		e.has_udp_cork = e.udp_cork = true;
	if (in->proto == IPPROTO_UDPLITE) {
		e.has_udplite_send_cscov = e.has_udplite_recv_cscov = true;
		e.udplite_send_cscov = in->send_cscov;
		e.udplite_recv_cscov = in->recv_cscov;
	}
	if (in->proto == IPPROTO_TCP) {
		tcp.has_nodelay = tcp.has_cork = true;
		tcp.nodelay = in->nodelay > 0;
		tcp.cork = in->cork > 0;
		tcp.has_keepcnt = tcp.has_keepidle = tcp.has_keepintvl = true;
		tcp.keepcnt = in->keepcnt;
		tcp.keepidle = in->keepidle;
		tcp.keepintvl = in->keepintvl;
		e.tcp_opts = &tcp;
	}
	fe.type = FD_TYPES__INETSK;
	fe.id = f->id;
	fe.isk = &e;
	return img_write_msg(files, &fe.base);
}

/* "a TCP socket 1.2.3.4:5 -> 6.7.8.9:10 ESTABLISHED", "an IPv4 raw socket (protocol 1) ..." */
void sk_inet_describe(const struct sk_diag *s, char *buf, size_t len)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	const char *proto = s->proto == IPPROTO_TCP ? "TCP" :
			    s->proto == IPPROTO_UDPLITE ? "UDP-lite" : "UDP";

	inet_ntop(s->family, s->src, src, sizeof(src));
	inet_ntop(s->family, s->dst, dst, sizeof(dst));
	if (s->type == SOCK_RAW) {
		snprintf(buf, len, "an IPv%c raw socket (protocol %d) %s -> %s",
			 s->family == AF_INET6 ? '6' : '4', s->proto, src, dst);
		return;
	}
	snprintf(buf, len, "a %s%s socket %s:%u -> %s:%u%s%s", proto,
		 s->family == AF_INET6 ? "v6" : "", src, s->sport, dst, s->dport,
		 s->proto == IPPROTO_TCP ? " " : "", s->proto == IPPROTO_TCP ? sk_state_name(s->state) : "");
}
