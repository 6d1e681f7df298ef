/*
 * TCP, UDP and UDP-lite sockets, IPv4 and IPv6 (UDP-lite: UDP's, with its
 * checksum coverage): family, addresses and ports from
 * getsockname/getpeername, the state from TCP_INFO (a listener's backlog and
 * accept queue too), IP and TCP options, shutdown bits from sock_diag.
 * Listening, bound and unbound sockets are re-created; an established
 * connection goes through TCP_REPAIR (tcp_repair.c) with --tcp-established.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "ctx/file_desc.h"
#include "net/sockets.h"
#include "image/image.h"
#include "kernel_uapi.h"
#include "log.h"

#include "files.pb-c.h"

static int opt_int(int fd, int level, int opt)
{
	int v = 0;
	socklen_t l = sizeof(v);

	return getsockopt(fd, level, opt, &v, &l) ? -1 : v;
}

static const char *state_name(int s)
{
	static const char *names[] = { "?", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1",
				       "FIN_WAIT2", "TIME_WAIT", "CLOSE", "CLOSE_WAIT",
				       "LAST_ACK", "LISTEN", "CLOSING" };

	return s > 0 && s < (int)ARRAY_SIZE(names) ? names[s] : "?";
}

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
 * A socket in TCP_CLOSE that had a connection: it keeps its two names
 * (getsockname, SO_PEERNAME) but not its port, which a restore would bind
 * again (in TIME_WAIT, or taken since: the restore fails).
 */
static bool closed_connection(int copy)
{
	struct sockaddr_storage ss;

	return peer_of_unconnected(copy, opt_int(copy, SOL_SOCKET, SO_DOMAIN), &ss);
}

const char *sk_inet_unsupported(int copy, const struct sk_diag *s, const struct sk_set *set,
				char *buf, size_t len)
{
	int type = opt_int(copy, SOL_SOCKET, SO_TYPE), proto = opt_int(copy, SOL_SOCKET, SO_PROTOCOL);
	struct tcp_info ti;
	socklen_t l = sizeof(ti);

	if (type == SOCK_DGRAM && (proto == IPPROTO_UDP || proto == IPPROTO_UDPLITE)) {
		if (!udp_queued(copy, s))
			return NULL;
		return "it has datagrams queued, whose senders a restore could not be";
	}
	if (type != SOCK_STREAM || proto != IPPROTO_TCP)
		return "memdump dumps TCP, UDP and UDP-lite sockets only";
	memset(&ti, 0, sizeof(ti));
	if (getsockopt(copy, SOL_TCP, TCP_INFO, &ti, &l))
		return "its TCP_INFO cannot be read";
	switch (ti.tcpi_state) {
	case TCP_CLOSE:
		if (!closed_connection(copy))
			return NULL;
		return "a connection closed since (its names are kept, its port is not), "
		       "which memdump cannot restore";
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
	if (tcp_repairable(ti.tcpi_state) && !set->tcp_established) {
		snprintf(buf, len, "a connection in state %s, dumped only with --tcp-established",
			 state_name(ti.tcpi_state));
		return buf;
	}
	if (tcp_repairable(ti.tcpi_state))
		return NULL;
	snprintf(buf, len, "a connection in state %s, which memdump cannot dump",
		 state_name(ti.tcpi_state));
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

static void read_ip_opts(int copy, struct sk_inet *in)
{
	bool v6 = in->family == AF_INET6;

	in->v6only = v6 ? opt_int(copy, IPPROTO_IPV6, IPV6_V6ONLY) : 0;
	in->freebind = v6 ? opt_int(copy, IPPROTO_IPV6, IPV6_FREEBIND) :
			    opt_int(copy, IPPROTO_IP, IP_FREEBIND);
	in->pktinfo = v6 ? opt_int(copy, IPPROTO_IPV6, IPV6_RECVPKTINFO) :
			   opt_int(copy, IPPROTO_IP, IP_PKTINFO);
	in->recverr = v6 ? opt_int(copy, IPPROTO_IPV6, IPV6_RECVERR) :
			   opt_int(copy, IPPROTO_IP, IP_RECVERR);
	in->mtu_discover = v6 ? opt_int(copy, IPPROTO_IPV6, IPV6_MTU_DISCOVER) :
				opt_int(copy, IPPROTO_IP, IP_MTU_DISCOVER);
	in->transparent = v6 ? opt_int(copy, IPPROTO_IPV6, IPV6_TRANSPARENT) :
			       opt_int(copy, IPPROTO_IP, IP_TRANSPARENT);
	in->tos = v6 ? opt_int(copy, IPPROTO_IPV6, IPV6_TCLASS) : opt_int(copy, IPPROTO_IP, IP_TOS);
	in->ttl = v6 ? opt_int(copy, IPPROTO_IPV6, IPV6_UNICAST_HOPS) :
		       opt_int(copy, IPPROTO_IP, IP_TTL);
	if (in->proto == IPPROTO_UDPLITE) {
		in->send_cscov = opt_int(copy, SOL_UDPLITE, UDPLITE_SEND_CSCOV);
		in->recv_cscov = opt_int(copy, SOL_UDPLITE, UDPLITE_RECV_CSCOV);
	}
	if (in->proto != IPPROTO_TCP)
		return;
	in->nodelay = opt_int(copy, SOL_TCP, TCP_NODELAY);
	in->cork = opt_int(copy, SOL_TCP, TCP_CORK);
	in->keepcnt = opt_int(copy, SOL_TCP, TCP_KEEPCNT);
	in->keepidle = opt_int(copy, SOL_TCP, TCP_KEEPIDLE);
	in->keepintvl = opt_int(copy, SOL_TCP, TCP_KEEPINTVL);
}

int sk_inet_collect(struct dump_ctx *d, int copy, const struct sk_diag *s, struct sk_state *st)
{
	struct sk_inet *in = &st->in;
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	struct tcp_info ti;

	in->family = st->family;
	in->type = opt_int(copy, SOL_SOCKET, SO_TYPE);
	in->proto = opt_int(copy, SOL_SOCKET, SO_PROTOCOL);
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
	in->shutdown = s ? s->shutdown : 0;
	read_ip_opts(copy, in);
	if (in->proto == IPPROTO_TCP && tcp_repairable(in->state))
		return tcp_stream_collect(d, copy, in, st->opts.reuseaddr);
	return 0;
}

static void fill_addr(uint32_t *words, size_t *n, int family, const uint8_t *addr)
{
	*n = family == AF_INET ? 1 : 4;
	memcpy(words, addr, *n * 4);
}

int sk_inet_write(const struct file_desc *f, struct image *files)
{
	const struct sk_inet *in = &f->sk->in;
	FileEntry fe = FILE_ENTRY__INIT;
	InetSkEntry e = INET_SK_ENTRY__INIT;
	FownEntry fown = FOWN_ENTRY__INIT;
	SkOptsEntry opts = SK_OPTS_ENTRY__INIT;
	IpOptsEntry ip = IP_OPTS_ENTRY__INIT;
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
	e.ip_opts = &ip;
	e.has_shutdown = true;
	e.shutdown = in->shutdown;
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
