/* t-sockipopts: IP-level options of inet sockets, checked after a restore.
 * Three UDP sockets of each family: one with every option turned on or set
 * to a value not the default (freebind, pktinfo, recverr, transparent, TOS /
 * traffic class, TTL / hop limit, path MTU discovery), one with every flag
 * turned off again after being on, and one left as created (which must stay
 * so); and a TCP listener with its TOS and TTL. Values as the zdtm tests
 * sock_ip_opts00/01 describe them, plus the common ones.
 * usage: t-sockipopts DIR
 * READY <pid> */
#include "tlib.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <sys/socket.h>

struct opt {
	int level, name, on, off;	/* on: the value set; off: turned to it after */
};

static const struct opt v4[] = {
	{ IPPROTO_IP, IP_FREEBIND, 1, 0 },	 { IPPROTO_IP, IP_PKTINFO, 1, 0 },
	{ IPPROTO_IP, IP_RECVERR, 1, 0 },	 { IPPROTO_IP, IP_TRANSPARENT, 1, 0 },
	{ IPPROTO_IP, IP_TOS, IPTOS_THROUGHPUT, 0 }, { IPPROTO_IP, IP_TTL, 32, 1 },
	{ IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO, IP_PMTUDISC_DONT },
};

static const struct opt v6[] = {
	{ IPPROTO_IPV6, IPV6_FREEBIND, 1, 0 },	  { IPPROTO_IPV6, IPV6_RECVPKTINFO, 1, 0 },
	{ IPPROTO_IPV6, IPV6_RECVERR, 1, 0 },	  { IPPROTO_IPV6, IPV6_TRANSPARENT, 1, 0 },
	{ IPPROTO_IPV6, IPV6_TCLASS, 0x20, 0 },	  { IPPROTO_IPV6, IPV6_UNICAST_HOPS, 17, 1 },
	{ IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_PROBE, IPV6_PMTUDISC_DONT },
};

#define NR_OPTS (sizeof(v4) / sizeof(v4[0]))

/* [family][on, off, untouched] */
static int sk[2][3], dflt[2][NR_OPTS], tcp;

static void must(int ok, const char *what) { if (!ok) t_fail("%s: %s", what, strerror(errno)); }

static int opt(int s, int level, int o) { int v = -1; socklen_t l = sizeof(v); getsockopt(s, level, o, &v, &l); return v; }

static void set(int s, const struct opt *o, int v)
{
	if (setsockopt(s, o->level, o->name, &v, sizeof(v)))
		t_fail("setsockopt(%d, %d, %d): %s", o->level, o->name, v, strerror(errno));
}

static void setup_family(int f)
{
	const struct opt *o = f ? v6 : v4;

	for (int k = 0; k < 3; k++) {
		sk[f][k] = socket(f ? AF_INET6 : AF_INET, SOCK_DGRAM, 0);
		must(sk[f][k] >= 0, "socket");
	}
	for (size_t i = 0; i < NR_OPTS; i++) {
		dflt[f][i] = opt(sk[f][2], o[i].level, o[i].name);
		set(sk[f][0], &o[i], o[i].on);
		set(sk[f][1], &o[i], o[i].on);
		set(sk[f][1], &o[i], o[i].off);
	}
}

static void setup(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int tos = IPTOS_LOWDELAY, ttl = 9;

	setup_family(0);
	setup_family(1);
	tcp = socket(AF_INET, SOCK_STREAM, 0);
	must(!setsockopt(tcp, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)), "IP_TOS");
	must(!setsockopt(tcp, IPPROTO_IP, IP_TTL, &ttl, sizeof(ttl)), "IP_TTL");
	must(!bind(tcp, (struct sockaddr *)&a, sizeof(a)) && !listen(tcp, 4), "listen");
}

static void check_family(int f)
{
	const struct opt *o = f ? v6 : v4;
	const char *fam = f ? "v6" : "v4";

	for (size_t i = 0; i < NR_OPTS; i++) {
		int got[3], want[3] = { o[i].on, o[i].off, dflt[f][i] };

		for (int k = 0; k < 3; k++) {
			got[k] = opt(sk[f][k], o[i].level, o[i].name);
			if (got[k] != want[k])
				t_fail("%s socket %d option (%d, %d) is %d, want %d", fam, k, o[i].level,
				       o[i].name, got[k], want[k]);
		}
	}
}

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);
	setup();
	t_ready(NULL);
	t_wait_usr1();
	t_check_common();
	check_family(0);
	check_family(1);
	if (opt(tcp, IPPROTO_IP, IP_TOS) != IPTOS_LOWDELAY || opt(tcp, IPPROTO_IP, IP_TTL) != 9 ||
	    opt(tcp, SOL_SOCKET, SO_ACCEPTCONN) != 1)
		t_fail("TCP listener: TOS %d TTL %d", opt(tcp, IPPROTO_IP, IP_TOS),
		       opt(tcp, IPPROTO_IP, IP_TTL));
	t_pass(NULL);
}
