/*
 * One TCP segment from the peer of a restored connection (tcp_peer.h), built
 * whole (IP header included) on a raw socket of the restore's network
 * namespace: IPv4, IPv6, or IPv4 for an IPv6 socket whose two ends are
 * v4-mapped. No TCP options: the kernel takes a segment without a timestamp.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "netlock.h"
#include "inet/tcp_peer.h"

struct addr {
	int family;		/* as on the wire */
	uint8_t ip[16];
	uint16_t port;		/* network order */
};

static void addr_of(const struct sockaddr_storage *ss, struct addr *a)
{
	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)ss;

		a->family = AF_INET;
		memcpy(a->ip, &s->sin_addr, 4);
		a->port = s->sin_port;
		return;
	}
	const struct sockaddr_in6 *s6 = (const void *)ss;

	a->port = s6->sin6_port;
	if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		a->family = AF_INET;
		memcpy(a->ip, &s6->sin6_addr.s6_addr[12], 4);
	} else {
		a->family = AF_INET6;
		memcpy(a->ip, &s6->sin6_addr, 16);
	}
}

static uint32_t sum16(uint32_t sum, const void *p, size_t len)
{
	const uint8_t *b = p;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)b[i] << 8 | b[i + 1];
	if (len & 1)
		sum += (uint32_t)b[len - 1] << 8;
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

/* The TCP checksum over the pseudo-header (both addresses, protocol, length) and th. */
static uint16_t tcp_csum(int family, const uint8_t *src, const uint8_t *dst,
			 const struct tcphdr *th)
{
	size_t alen = family == AF_INET ? 4 : 16;
	uint32_t sum = sum16(0, src, alen);

	sum = sum16(sum, dst, alen);
	sum += IPPROTO_TCP + sizeof(*th);
	return fold(sum16(sum, th, sizeof(*th)));
}

static void fill_tcp(struct tcphdr *th, const struct tcp_peer_seg *s, const struct addr *from,
		     const struct addr *to)
{
	memset(th, 0, sizeof(*th));
	th->source = from->port;
	th->dest = to->port;
	th->seq = htonl(s->seq);
	th->ack_seq = htonl(s->ack);
	th->doff = sizeof(*th) / 4;
	th->ack = 1;
	th->fin = s->fin && !s->rst;
	th->rst = s->rst;
	th->window = htons(s->win);
	th->check = tcp_csum(from->family, from->ip, to->ip, th);
}

static int send_raw(int family, const void *pkt, size_t len, const struct addr *to)
{
	struct sockaddr_storage ss;
	int mark = NETLOCK_MARK, one = 1, ret = 0;
	int fd = socket(family, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);

	if (fd < 0)
		return -errno;
	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET) {
		struct sockaddr_in *a = (void *)&ss;

		a->sin_family = AF_INET;
		memcpy(&a->sin_addr, to->ip, 4);
	} else {
		struct sockaddr_in6 *a = (void *)&ss;

		a->sin6_family = AF_INET6;
		memcpy(&a->sin6_addr, to->ip, 16);
	}
	if (setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) ||
	    (family == AF_INET && setsockopt(fd, IPPROTO_IP, IP_HDRINCL, &one, sizeof(one))))
		ret = -errno;
	else if (sendto(fd, pkt, len, 0, (struct sockaddr *)&ss, sizeof(ss)) != (ssize_t)len)
		ret = -errno;
	close(fd);
	return ret;
}

int tcp_peer_send(const struct tcp_peer_seg *s)
{
	struct addr from, to;
	uint8_t pkt[sizeof(struct ip6_hdr) + sizeof(struct tcphdr)];

	addr_of(s->peer, &from);
	addr_of(s->local, &to);
	if (from.family != to.family)
		return -EAFNOSUPPORT;
	memset(pkt, 0, sizeof(pkt));
	if (from.family == AF_INET) {
		struct iphdr *ip = (void *)pkt;

		ip->version = 4;
		ip->ihl = sizeof(*ip) / 4;
		ip->tot_len = htons(sizeof(*ip) + sizeof(struct tcphdr));
		ip->frag_off = htons(IP_DF);
		ip->ttl = 64;
		ip->protocol = IPPROTO_TCP;
		memcpy(&ip->saddr, from.ip, 4);
		memcpy(&ip->daddr, to.ip, 4);
		fill_tcp((void *)(ip + 1), s, &from, &to);
		return send_raw(AF_INET, pkt, sizeof(*ip) + sizeof(struct tcphdr), &to);
	}
	struct ip6_hdr *ip6 = (void *)pkt;

	ip6->ip6_flow = htonl(6u << 28);
	ip6->ip6_plen = htons(sizeof(struct tcphdr));
	ip6->ip6_nxt = IPPROTO_TCP;
	ip6->ip6_hlim = 64;
	memcpy(&ip6->ip6_src, from.ip, 16);
	memcpy(&ip6->ip6_dst, to.ip, 16);
	fill_tcp((void *)(ip6 + 1), s, &from, &to);
	return send_raw(AF_INET6, pkt, sizeof(pkt), &to);
}
