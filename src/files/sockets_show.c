/*
 * memdump show: what a socket of the dump is, in the PATH column: UNIX
 * type, name, state, peer inode, shutdown; TCP/UDP/UDP-lite addresses and
 * state (raw, ICMP too); netlink protocol, port id, groups and destination;
 * packet type, protocol, device, version, fanout group, rings, memberships.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "files/sockets_show.h"
#include "net/sock.h"

static const char *type_name(uint32_t t)
{
	return t == SOCK_STREAM ? "stream" : t == SOCK_DGRAM ? "dgram" :
	       t == SOCK_SEQPACKET ? "seqpacket" : "?";
}

static void unix_text(const UnixSkEntry *u, char *buf, size_t len)
{
	char name[120] = "(unnamed)";

	if (u->name.len && u->name.data[0])
		snprintf(name, sizeof(name), "%.*s", (int)u->name.len, (const char *)u->name.data);
	else if (u->name.len)
		snprintf(name, sizeof(name), "@%.*s", (int)u->name.len - 1,
			 (const char *)u->name.data + 1);
	snprintf(buf, len, "unix %s %s %s peer %u%s%s", type_name(u->type), name,
		 sk_state_name(u->state), u->peer, u->has_shutdown && u->shutdown ? " shutdown " : "",
		 !u->has_shutdown || !u->shutdown ? "" : u->shutdown == 1 ? "rd" :
		 u->shutdown == 2 ? "wr" : "rdwr");
}

static void addr_text(uint32_t family, const uint32_t *w, size_t n, char *buf, size_t len)
{
	if ((family == AF_INET && n >= 1) || (family == AF_INET6 && n >= 4))
		inet_ntop(family, w, buf, len);
	else
		snprintf(buf, len, "?");
}

/* " tos 8 ttl 32 pmtudisc 1 freebind pktinfo": the IP-level options (v6: tclass, hops) */
static void ip_opts_text(const IpOptsEntry *ip, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	if (!ip)
		return;
#define ADD(...) (off < len ? off += snprintf(buf + off, len - off, __VA_ARGS__) : 0)
	if (ip->has_tos)
		ADD(" tos %u", ip->tos);
	if (ip->has_ttl)
		ADD(" ttl %u", ip->ttl);
	if (ip->has_mtu_discover)
		ADD(" pmtudisc %u", ip->mtu_discover);
	if (ip->has_freebind && ip->freebind)
		ADD(" freebind");
	if (ip->has_pktinfo && ip->pktinfo)
		ADD(" pktinfo");
	if (ip->has_recverr && ip->recverr)
		ADD(" recverr");
	if (ip->has_transparent && ip->transparent)
		ADD(" transparent");
#undef ADD
}

static void inet_text(const InetSkEntry *e, char *buf, size_t len)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN], opts[160];

	addr_text(e->family, e->src_addr, e->n_src_addr, src, sizeof(src));
	addr_text(e->family, e->dst_addr, e->n_dst_addr, dst, sizeof(dst));
	ip_opts_text(e->ip_opts, opts, sizeof(opts));
	snprintf(buf, len, "%s%s %s:%u -> %s:%u %s%s", e->type == SOCK_RAW ? "raw" :
		 e->proto == IPPROTO_ICMP || e->proto == IPPROTO_ICMPV6 ? "icmp" :
		 e->proto == IPPROTO_TCP ? "tcp" : e->proto == IPPROTO_UDPLITE ? "udplite" : "udp",
		 e->family == AF_INET6 ? "6" : "", src, e->src_port, dst, e->dst_port,
		 sk_state_name(e->state), opts);
}

/* "netlink 0 port 1234 groups 5,36 -> 0/0" (groups as numbers, then the destination) */
static void netlink_text(const NetlinkSkEntry *e, char *buf, size_t len)
{
	size_t off = snprintf(buf, len, "netlink %u port %d groups ", e->protocol, (int)e->portid);
	const char *sep = "";

	for (size_t w = 0; w < e->n_groups; w++)
		for (int b = 0; b < 32; b++)
			if ((e->groups[w] & (1u << b)) && off < len) {
				off += snprintf(buf + off, len - off, "%s%zu", sep, w * 32 + b + 1);
				sep = ",";
			}
	if (!*sep && off < len)
		off += snprintf(buf + off, len - off, "-");
	if (e->state == 1 && off < len)
		snprintf(buf + off, len - off, " -> %d/%u", (int)e->dst_portid, e->dst_group);
}

static void show_packet(const PacketSockEntry *e, char *buf, size_t len)
{
	const char *type = e->type == SOCK_RAW ? "raw" : e->type == SOCK_DGRAM ? "dgram" :
			   e->type == SOCK_PACKET ? "spkt" : "?";
	size_t off = snprintf(buf, len, "packet %s proto 0x%04x ifindex %u v%u", type,
			      ntohs(e->protocol), e->ifindex, e->version + 1);

#define ADD(...) (off < len ? off += snprintf(buf + off, len - off, __VA_ARGS__) : 0)
	if (e->has_fanout && e->fanout != 0xffffffff)
		ADD(" fanout %u mode %u", e->fanout & 0xffff, (e->fanout >> 16) & 0xff);
	if (e->rx_ring)
		ADD(" rx-ring %ux%u", e->rx_ring->block_nr, e->rx_ring->block_size);
	if (e->tx_ring)
		ADD(" tx-ring %ux%u", e->tx_ring->block_nr, e->tx_ring->block_size);
	if (e->n_mclist)
		ADD(" memberships %zu", e->n_mclist);
#undef ADD
}

bool show_socket(const FileEntry *fe, char *buf, size_t len, uint32_t *flags)
{
	if (fe->type == FD_TYPES__UNIXSK && fe->usk) {
		unix_text(fe->usk, buf, len);
		*flags = fe->usk->flags;
	} else if (fe->type == FD_TYPES__INETSK && fe->isk) {
		inet_text(fe->isk, buf, len);
		*flags = fe->isk->flags;
	} else if (fe->type == FD_TYPES__PACKETSK && fe->psk) {
		show_packet(fe->psk, buf, len);
		*flags = fe->psk->flags;
	} else if (fe->type == FD_TYPES__NETLINKSK && fe->nlsk) {
		netlink_text(fe->nlsk, buf, len);
		*flags = fe->nlsk->flags;
	} else {
		return false;
	}
	return true;
}
