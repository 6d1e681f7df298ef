/* t-rawsk: ICMP (ping), raw and packet sockets, checked after a restore (issue 24).
 * usage: t-rawsk DIR MODE
 *   inet    (memdump's network namespace) a ping socket that pinged 127.0.0.1 once
 *           (its echo id chosen by the kernel) with IP_TTL 33; raw IPv4 sockets of
 *           protocol 253 (bound to 127.0.0.1, IP_NODEFRAG, TTL 40, TOS 0x10,
 *           IP_PKTINFO) and ICMP (IP_HDRINCL, an ICMP_FILTER blocking every type);
 *           raw IPv6 sockets of protocol 253 (IPV6_CHECKSUM at 4) and ICMPv6
 *           (ICMPV6_FILTER blocking every type). After the restore: the options,
 *           names, and the ping socket pings again and gets its reply with its id;
 *           the raw socket of protocol 253 receives a datagram sent to 127.0.0.1.
 *   packet  (a namespace of its own: netns-wrap) a raw socket of ETH_P_ALL on lo,
 *           TPACKET_V2, PACKET_AUXDATA, an RX ring, promiscuous membership added
 *           twice, fanout group 77 (hash) with a second socket; a datagram socket
 *           of ethertype 0x88b5 on lo with PACKET_RESERVE 8, PACKET_ORIGDEV,
 *           PACKET_IGNORE_OUTGOING, a TX ring, a unicast membership; a SOCK_PACKET
 *           socket bound to lo and one unbound. After the restore: every option,
 *           name, membership count, the fanout group, and the datagram socket
 *           receives a frame sent on lo.
 *   ringfull, queued, mapped  (netns-wrap) refused: a frame in the RX ring of a socket
 *           not read, a frame queued on a datagram packet socket, a ring mapped.
 * READY <pid> */
#include "tlib.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <poll.h>
#include <sys/socket.h>

#define ICMP_FILTER 1		/* linux/icmp.h's, which clashes with netinet's */
#define PROTO_X 253		/* raw: experimental, nobody else's traffic */
#define ETH_X 0x88b5		/* packet: local experimental ethertype */
#define FANOUT_ID 77

static void must(int ok, const char *what) { if (!ok) t_fail("%s: %s", what, strerror(errno)); }

static int opt(int s, int level, int o)
{
	int v = -12345;
	socklen_t l = sizeof(v);

	return getsockopt(s, level, o, &v, &l) ? -12345 : v;
}

static void set(int s, int level, int o, int v)
{
	if (setsockopt(s, level, o, &v, sizeof(v)))
		t_fail("setsockopt(%d, %d, %d): %s", level, o, v, strerror(errno));
}

static void want(int s, int level, int o, int v, const char *what)
{
	int got = opt(s, level, o);

	if (got != v)
		t_fail("%s is %d, want %d", what, got, v);
}

/* ---- inet: ping and raw ---- */

static int ping4, raw4, rawicmp4, raw6, rawicmp6;
static uint16_t ping_id;

static struct sockaddr_in lo4(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	return a;
}

/* An echo request with seq; the reply must come back with the socket's id. */
static void ping(int s, uint16_t seq)
{
	struct icmphdr h = { .type = ICMP_ECHO, .un.echo.sequence = htons(seq) };
	struct sockaddr_in a = lo4();
	struct sockaddr_in me;
	socklen_t l = sizeof(me);
	struct pollfd p = { .fd = s, .events = POLLIN };
	char buf[256];
	struct icmphdr *r = (struct icmphdr *)buf;
	ssize_t n;

	must(sendto(s, &h, sizeof(h), 0, (struct sockaddr *)&a, sizeof(a)) == sizeof(h), "ping send");
	must(poll(&p, 1, 10000) == 1, "no echo reply within 10 s");
	n = recv(s, buf, sizeof(buf), 0);
	must(n >= (ssize_t)sizeof(*r), "ping recv");
	must(!getsockname(s, (struct sockaddr *)&me, &l), "getsockname ping");
	if (r->type != ICMP_ECHOREPLY || ntohs(r->un.echo.sequence) != seq)
		t_fail("ping: reply type %d seq %d", r->type, ntohs(r->un.echo.sequence));
	if (r->un.echo.id != me.sin_port)
		t_fail("ping: reply id %d, socket id %d", ntohs(r->un.echo.id), ntohs(me.sin_port));
	if (ping_id && ntohs(me.sin_port) != ping_id)
		t_fail("ping: echo id %d, was %d", ntohs(me.sin_port), ping_id);
	ping_id = ntohs(me.sin_port);
}

static void setup_inet(void)
{
	struct sockaddr_in a = lo4();
	struct icmp6_filter f6;
	uint32_t f4 = ~0u;

	ping4 = socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP);
	must(ping4 >= 0, "ping socket (net.ipv4.ping_group_range)");
	set(ping4, IPPROTO_IP, IP_TTL, 33);
	ping(ping4, 1);
	raw4 = socket(AF_INET, SOCK_RAW, PROTO_X);
	must(raw4 >= 0, "raw socket");
	must(!bind(raw4, (struct sockaddr *)&a, sizeof(a)), "bind raw");
	set(raw4, IPPROTO_IP, IP_NODEFRAG, 1);
	set(raw4, IPPROTO_IP, IP_TTL, 40);
	set(raw4, IPPROTO_IP, IP_TOS, 0x10);
	set(raw4, IPPROTO_IP, IP_PKTINFO, 1);
	rawicmp4 = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
	must(rawicmp4 >= 0, "raw ICMP socket");
	set(rawicmp4, IPPROTO_IP, IP_HDRINCL, 1);
	must(!setsockopt(rawicmp4, SOL_RAW, ICMP_FILTER, &f4, sizeof(f4)), "ICMP_FILTER");
	raw6 = socket(AF_INET6, SOCK_RAW, PROTO_X);
	must(raw6 >= 0, "raw v6 socket");
	set(raw6, IPPROTO_IPV6, IPV6_CHECKSUM, 4);
	rawicmp6 = socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6);
	must(rawicmp6 >= 0, "raw ICMPv6 socket");
	ICMP6_FILTER_SETBLOCKALL(&f6);
	must(!setsockopt(rawicmp6, IPPROTO_ICMPV6, ICMP6_FILTER, &f6, sizeof(f6)), "ICMP6_FILTER");
}

static void check_raw_receives(void)
{
	int tx = socket(AF_INET, SOCK_RAW, PROTO_X);
	struct sockaddr_in a = lo4();
	struct pollfd p = { .fd = raw4, .events = POLLIN };
	char buf[256];
	ssize_t n;
	int ihl;

	must(tx >= 0, "raw sender");
	must(sendto(tx, "rawsk-hello", 11, 0, (struct sockaddr *)&a, sizeof(a)) == 11, "raw send");
	must(poll(&p, 1, 10000) == 1, "the raw socket received nothing within 10 s");
	n = recv(raw4, buf, sizeof(buf), 0);
	must(n > 0, "raw recv");
	ihl = (buf[0] & 0xf) * 4;
	if (n != ihl + 11 || memcmp(buf + ihl, "rawsk-hello", 11))
		t_fail("raw socket received %zd bytes, not the datagram", n);
	close(tx);
}

static void check_inet(void)
{
	struct sockaddr_in a;
	socklen_t l = sizeof(a);
	struct icmp6_filter f6, z6;
	uint32_t f4 = 0;

	want(ping4, IPPROTO_IP, IP_TTL, 33, "ping IP_TTL");
	want(raw4, IPPROTO_IP, IP_NODEFRAG, 1, "raw IP_NODEFRAG");
	want(raw4, IPPROTO_IP, IP_TTL, 40, "raw IP_TTL");
	want(raw4, IPPROTO_IP, IP_TOS, 0x10, "raw IP_TOS");
	want(raw4, IPPROTO_IP, IP_PKTINFO, 1, "raw IP_PKTINFO");
	want(raw4, IPPROTO_IP, IP_HDRINCL, 0, "raw IP_HDRINCL");
	want(raw4, SOL_SOCKET, SO_PROTOCOL, PROTO_X, "raw protocol");
	must(!getsockname(raw4, (struct sockaddr *)&a, &l), "getsockname raw");
	if (a.sin_addr.s_addr != htonl(INADDR_LOOPBACK))
		t_fail("raw socket bound to %s", inet_ntoa(a.sin_addr));
	want(rawicmp4, IPPROTO_IP, IP_HDRINCL, 1, "raw ICMP IP_HDRINCL");
	l = sizeof(f4);
	must(!getsockopt(rawicmp4, SOL_RAW, ICMP_FILTER, &f4, &l), "get ICMP_FILTER");
	if (f4 != ~0u)
		t_fail("ICMP_FILTER is %#x", f4);
	want(raw6, IPPROTO_IPV6, IPV6_CHECKSUM, 4, "raw v6 IPV6_CHECKSUM");
	want(raw6, SOL_SOCKET, SO_PROTOCOL, PROTO_X, "raw v6 protocol");
	l = sizeof(f6);
	ICMP6_FILTER_SETBLOCKALL(&z6);
	must(!getsockopt(rawicmp6, IPPROTO_ICMPV6, ICMP6_FILTER, &f6, &l), "get ICMP6_FILTER");
	if (memcmp(&f6, &z6, sizeof(f6)))
		t_fail("ICMP6_FILTER changed");
	ping(ping4, 2);
	check_raw_receives();
}

/* ---- packet ---- */

static int praw, pfan, pdgram, spkt, spkt_unbound;
static int lo_index, promisc_before;

struct mreq_max {
	int mr_ifindex;
	unsigned short mr_type, mr_alen;
	unsigned char mr_address[32];
};

static int membership(int s, int add, int type, int alen)
{
	struct mreq_max m = { .mr_ifindex = lo_index, .mr_type = type, .mr_alen = alen };

	return setsockopt(s, SOL_PACKET, add ? PACKET_ADD_MEMBERSHIP : PACKET_DROP_MEMBERSHIP, &m,
			  sizeof(m));
}

/* lo's promiscuity counter (one per promiscuous membership entry, whatever its count) */
static int lo_promisc(void)
{
	FILE *f = popen("ip -d link show lo", "r");
	char line[512], *p;
	int n = -1;

	must(f != NULL, "ip -d link show lo");
	while (fgets(line, sizeof(line), f))
		if ((p = strstr(line, "promiscuity ")))
			n = atoi(p + 12);
	pclose(f);
	if (n < 0)
		t_fail("ip -d link show lo: no promiscuity");
	return n;
}

static int packet_on_lo(int type, int proto)
{
	struct sockaddr_ll a = { .sll_family = AF_PACKET, .sll_protocol = htons(proto),
				 .sll_ifindex = lo_index };
	int s = socket(AF_PACKET, type, htons(proto));

	must(s >= 0, "packet socket");
	must(!bind(s, (struct sockaddr *)&a, sizeof(a)), "bind packet");
	return s;
}

static void ring(int s, int opt_name)
{
	struct tpacket_req r = { .tp_block_size = 4096, .tp_block_nr = 2, .tp_frame_size = 2048,
				 .tp_frame_nr = 4 };

	must(!setsockopt(s, SOL_PACKET, opt_name, &r, sizeof(r)), "ring");
}

static void spkt_bind(int s)
{
	struct sockaddr a = { .sa_family = AF_PACKET };

	strcpy(a.sa_data, "lo");
	must(!bind(s, &a, sizeof(a)), "bind SOCK_PACKET");
}

static void send_frame(const char *payload)
{
	struct sockaddr_ll a = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_X),
				 .sll_ifindex = lo_index, .sll_halen = 6 };
	int s = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_X));
	size_t n = strlen(payload);

	must(s >= 0, "sender");
	memset(a.sll_addr, 0, 6);
	must(sendto(s, payload, n, 0, (struct sockaddr *)&a, sizeof(a)) == (ssize_t)n, "send frame");
	close(s);
}

static void setup_packet(void)
{
	lo_index = if_nametoindex("lo");
	must(lo_index > 0, "lo");
	praw = packet_on_lo(SOCK_RAW, ETH_P_ALL);
	set(praw, SOL_PACKET, PACKET_VERSION, TPACKET_V2);
	set(praw, SOL_PACKET, PACKET_AUXDATA, 1);
	ring(praw, PACKET_RX_RING);
	must(!membership(praw, 1, PACKET_MR_PROMISC, 0), "promisc membership");
	must(!membership(praw, 1, PACKET_MR_PROMISC, 0), "promisc membership again");
	set(praw, SOL_PACKET, PACKET_FANOUT, FANOUT_ID | PACKET_FANOUT_HASH << 16);
	pfan = packet_on_lo(SOCK_RAW, ETH_P_ALL);
	set(pfan, SOL_PACKET, PACKET_FANOUT, FANOUT_ID | PACKET_FANOUT_HASH << 16);
	pdgram = packet_on_lo(SOCK_DGRAM, ETH_X);
	set(pdgram, SOL_PACKET, PACKET_RESERVE, 8);
	set(pdgram, SOL_PACKET, PACKET_ORIGDEV, 1);
	set(pdgram, SOL_PACKET, PACKET_IGNORE_OUTGOING, 1);
	ring(pdgram, PACKET_TX_RING);
	must(!membership(pdgram, 1, PACKET_MR_UNICAST, 6), "unicast membership");
	spkt = socket(AF_PACKET, SOCK_PACKET, htons(ETH_P_ALL));
	must(spkt >= 0, "SOCK_PACKET socket");
	spkt_bind(spkt);
	spkt_unbound = socket(AF_PACKET, SOCK_PACKET, htons(ETH_P_ALL));
	must(spkt_unbound >= 0, "SOCK_PACKET socket");
	promisc_before = lo_promisc();	/* the unicast membership makes lo promiscuous too */
}

static void check_name(int s, int type, int proto, const char *what)
{
	struct sockaddr_ll a;
	socklen_t l = sizeof(a);

	memset(&a, 0, sizeof(a));
	must(!getsockname(s, (struct sockaddr *)&a, &l), "getsockname packet");
	if (a.sll_ifindex != lo_index || a.sll_protocol != htons(proto))
		t_fail("%s: bound to ifindex %d protocol %#x", what, a.sll_ifindex,
		       ntohs(a.sll_protocol));
	want(s, SOL_SOCKET, SO_TYPE, type, what);
}

static void check_spkt(int s, const char *dev)
{
	struct sockaddr a;
	socklen_t l = sizeof(a);

	memset(&a, 0, sizeof(a));
	must(!getsockname(s, &a, &l), "getsockname SOCK_PACKET");
	if (strcmp(a.sa_data, dev))
		t_fail("SOCK_PACKET bound to '%s', want '%s'", a.sa_data, dev);
}

static void check_packet(void)
{
	int fan = FANOUT_ID | PACKET_FANOUT_HASH << 16;
	struct pollfd p = { .fd = pdgram, .events = POLLIN };
	struct sockaddr_ll from;
	socklen_t l = sizeof(from);
	char buf[64];
	ssize_t n;

	check_name(praw, SOCK_RAW, ETH_P_ALL, "raw packet socket");
	check_name(pfan, SOCK_RAW, ETH_P_ALL, "second fanout socket");
	check_name(pdgram, SOCK_DGRAM, ETH_X, "datagram packet socket");
	want(praw, SOL_PACKET, PACKET_VERSION, TPACKET_V2, "PACKET_VERSION");
	want(praw, SOL_PACKET, PACKET_AUXDATA, 1, "PACKET_AUXDATA");
	want(praw, SOL_PACKET, PACKET_FANOUT, fan, "PACKET_FANOUT");
	want(pfan, SOL_PACKET, PACKET_FANOUT, fan, "second PACKET_FANOUT");
	want(pdgram, SOL_PACKET, PACKET_FANOUT, 0, "no PACKET_FANOUT");
	want(pdgram, SOL_PACKET, PACKET_RESERVE, 8, "PACKET_RESERVE");
	want(pdgram, SOL_PACKET, PACKET_ORIGDEV, 1, "PACKET_ORIGDEV");
	want(pdgram, SOL_PACKET, PACKET_IGNORE_OUTGOING, 1, "PACKET_IGNORE_OUTGOING");
	want(pdgram, SOL_PACKET, PACKET_VERSION, TPACKET_V1, "default PACKET_VERSION");
	/* a ring is there: the version cannot change */
	if (!setsockopt(praw, SOL_PACKET, PACKET_VERSION, &(int){ TPACKET_V1 }, sizeof(int)))
		t_fail("the RX ring is gone (PACKET_VERSION could change)");
	if (!setsockopt(pdgram, SOL_PACKET, PACKET_RESERVE, &(int){ 4 }, sizeof(int)))
		t_fail("the TX ring is gone (PACKET_RESERVE could change)");
	check_spkt(spkt, "lo");
	check_spkt(spkt_unbound, "");
	send_frame("packet-hello");
	must(poll(&p, 1, 10000) == 1, "the datagram packet socket received nothing within 10 s");
	n = recvfrom(pdgram, buf, sizeof(buf), 0, (struct sockaddr *)&from, &l);
	if (n != 12 || memcmp(buf, "packet-hello", 12) || from.sll_protocol != htons(ETH_X))
		t_fail("datagram packet socket received %zd bytes, not the frame", n);
	/* memberships: the promiscuous one added twice: lo stays promiscuous after one drop */
	if (lo_promisc() != promisc_before)
		t_fail("lo's promiscuity is %d, was %d", lo_promisc(), promisc_before);
	must(!membership(praw, 0, PACKET_MR_PROMISC, 0), "drop promisc membership");
	if (lo_promisc() != promisc_before)
		t_fail("lo's promiscuity fell after one drop: the membership was added once");
	must(!membership(praw, 0, PACKET_MR_PROMISC, 0), "drop promisc membership");
	if (lo_promisc() != promisc_before - 1)
		t_fail("lo's promiscuity is %d after two drops, want %d", lo_promisc(),
		       promisc_before - 1);
	must(!membership(pdgram, 0, PACKET_MR_UNICAST, 6), "unicast membership lost");
}

/* ---- refused ---- */

static void setup_refused(const char *mode)
{
	lo_index = if_nametoindex("lo");
	must(lo_index > 0, "lo");
	if (!strcmp(mode, "ringfull")) {
		praw = packet_on_lo(SOCK_DGRAM, ETH_X);
		ring(praw, PACKET_RX_RING);
	} else if (!strcmp(mode, "queued")) {
		praw = packet_on_lo(SOCK_DGRAM, ETH_X);
	} else if (!strcmp(mode, "mapped")) {
		praw = packet_on_lo(SOCK_DGRAM, ETH_X);
		ring(praw, PACKET_RX_RING);
		must(mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, praw, 0) != MAP_FAILED,
		     "mmap ring");
		return;
	} else {
		t_fail("unknown mode %s", mode);
	}
	send_frame("pending");
	t_sleep_ms(100);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "inet";

	t_init(argc, argv, SA_RESTART);
	if (!strcmp(mode, "inet"))
		setup_inet();
	else if (!strcmp(mode, "packet"))
		setup_packet();
	else
		setup_refused(mode);
	t_ready("%s", mode);
	t_wait_usr1();
	t_check_common();
	if (!strcmp(mode, "inet"))
		check_inet();
	else if (!strcmp(mode, "packet"))
		check_packet();
	t_pass(mode);
}
