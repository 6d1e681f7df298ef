/* t-sockinet: TCP and UDP sockets on loopback, IPv4 and IPv6, checked after a
 * restore: listeners with SO_REUSEADDR/SO_REUSEPORT and their backlog, a
 * bound UDP socket and a connected one, UDP-lite pairs (v4 and v6: a bound
 * socket with UDPLITE_RECV_CSCOV, a connected one with UDPLITE_SEND_CSCOV,
 * which must still reach it), and (argument "est") an established
 * TCP connection to itself with data queued both ways, unread and unsent,
 * which carries new data both ways after. A connected UDP socket with
 * UDP_CORK set holds what it sends until the cork is pulled; with argument
 * "corked" it already holds a datagram at the dump, which the dump refuses
 * (the program then finds it delivered once uncorked).
 * usage: t-sockinet DIR [est|corked]
 * READY <pid> <tcp4 port> <tcp6 port> */
#include "tlib.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <stdbool.h>
#include <sys/socket.h>

#define UDPLITE_SEND_CSCOV	10
#define UDPLITE_RECV_CSCOV	11

static int l4, l6, u4, uc, uk, cli, srv;
static int ul[2], ulc[2];	/* UDP-lite: v4, v6 */
static struct sockaddr_in a4 = { .sin_family = AF_INET };
static struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
static bool est, corked;

static void must(int ok, const char *what) { if (!ok) t_fail("%s: %s", what, strerror(errno)); }

static int opt(int s, int level, int o) { int v = -1; socklen_t l = sizeof(v); getsockopt(s, level, o, &v, &l); return v; }

/* A UDP-lite socket bound to loopback (covering at least 8 bytes), and one connected to it sending 12. */
static void setup_lite(int i, int family)
{
	struct sockaddr_storage ss = { .ss_family = family };
	socklen_t l = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	int eight = 8, twelve = 12;

	if (family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else
		((struct sockaddr_in6 *)&ss)->sin6_addr = in6addr_loopback;
	ul[i] = socket(family, SOCK_DGRAM, IPPROTO_UDPLITE);
	ulc[i] = socket(family, SOCK_DGRAM, IPPROTO_UDPLITE);
	must(ul[i] >= 0 && ulc[i] >= 0, "socket udplite");
	must(!setsockopt(ul[i], IPPROTO_UDPLITE, UDPLITE_RECV_CSCOV, &eight, sizeof(eight)), "RECV_CSCOV");
	must(!setsockopt(ulc[i], IPPROTO_UDPLITE, UDPLITE_SEND_CSCOV, &twelve, sizeof(twelve)), "SEND_CSCOV");
	must(!bind(ul[i], (struct sockaddr *)&ss, l), "bind udplite");
	getsockname(ul[i], (struct sockaddr *)&ss, &l);
	must(!connect(ulc[i], (struct sockaddr *)&ss, l), "connect udplite");
}

static void check_lite(int i)
{
	char buf[16];

	if (opt(ul[i], IPPROTO_UDPLITE, UDPLITE_RECV_CSCOV) != 8 ||
	    opt(ulc[i], IPPROTO_UDPLITE, UDPLITE_SEND_CSCOV) != 12 ||
	    opt(ul[i], SOL_SOCKET, SO_PROTOCOL) != IPPROTO_UDPLITE)
		t_fail("UDP-lite %s: checksum coverage or protocol differs", i ? "v6" : "v4");
	must(send(ulc[i], "lite", 4, 0) == 4, "send on the connected UDP-lite socket");
	if (recv(ul[i], buf, sizeof(buf), 0) != 4 || memcmp(buf, "lite", 4))
		t_fail("UDP-lite %s datagram not received", i ? "v6" : "v4");
}

static void setup(void)
{
	int one = 1;
	socklen_t l;
	struct sockaddr_in u = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	a4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a6.sin6_addr = in6addr_loopback;
	l4 = socket(AF_INET, SOCK_STREAM, 0);
	must(!setsockopt(l4, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), "SO_REUSEADDR");
	must(!bind(l4, (struct sockaddr *)&a4, sizeof(a4)) && !listen(l4, 5), "listen v4");
	l = sizeof(a4);
	getsockname(l4, (struct sockaddr *)&a4, &l);
	l6 = socket(AF_INET6, SOCK_STREAM, 0);
	must(!setsockopt(l6, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)), "SO_REUSEPORT");
	must(!setsockopt(l6, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)), "IPV6_V6ONLY");
	must(!bind(l6, (struct sockaddr *)&a6, sizeof(a6)) && !listen(l6, 3), "listen v6");
	l = sizeof(a6);
	getsockname(l6, (struct sockaddr *)&a6, &l);
	u4 = socket(AF_INET, SOCK_DGRAM, 0);
	must(!bind(u4, (struct sockaddr *)&u, sizeof(u)), "bind udp");
	l = sizeof(u);
	getsockname(u4, (struct sockaddr *)&u, &l);
	uc = socket(AF_INET, SOCK_DGRAM, 0);
	must(!connect(uc, (struct sockaddr *)&u, sizeof(u)), "connect udp");
	uk = socket(AF_INET, SOCK_DGRAM, 0);
	must(!setsockopt(uk, SOL_UDP, UDP_CORK, &one, sizeof(one)), "UDP_CORK");
	must(!connect(uk, (struct sockaddr *)&u, sizeof(u)), "connect corked udp");
	if (corked)
		must(send(uk, "held", 4, 0) == 4, "send on the corked UDP socket");
	setup_lite(0, AF_INET);
	setup_lite(1, AF_INET6);
	if (!est)
		return;
	cli = socket(AF_INET, SOCK_STREAM, 0);
	must(!setsockopt(cli, SOL_TCP, TCP_NODELAY, &one, sizeof(one)), "TCP_NODELAY");
	must(!connect(cli, (struct sockaddr *)&a4, sizeof(a4)), "connect tcp");
	srv = accept(l4, NULL, NULL);
	must(srv >= 0, "accept");
	must(send(cli, "request one;", 12, 0) == 12, "send");
	must(send(srv, "reply one;", 10, 0) == 10, "send");
	fcntl(srv, F_SETFL, O_NONBLOCK);
}

static void expect_tcp(int s, const char *want, const char *what)
{
	char buf[128];
	size_t got = 0, n = strlen(want);

	while (got < n) {
		ssize_t r = recv(s, buf + got, n - got, 0);

		if (r <= 0)
			t_fail("%s: read %zd after %zu bytes: %s", what, r, got, r ? strerror(errno) : "EOF");
		got += r;
	}
	if (memcmp(buf, want, n))
		t_fail("%s: got '%.*s', want '%s'", what, (int)n, buf, want);
}

static void check_listen(int l, struct sockaddr *a, socklen_t al, int family)
{
	int c = socket(family, SOCK_STREAM, 0), s;

	must(!connect(c, a, al), "connect to a restored listener");
	s = accept(l, NULL, NULL);
	must(s >= 0, "accept on a restored listener");
	close(c);
	close(s);
}

/* The corked socket holds "held" (corked mode) then "cork", and sends them as one once uncorked. */
static void check_cork(void)
{
	char buf[16];
	const char *want = corked ? "heldcork" : "cork";
	int zero = 0;
	ssize_t n;

	if (opt(uk, SOL_UDP, UDP_CORK) != 1)
		t_fail("UDP_CORK lost");
	must(send(uk, "cork", 4, 0) == 4, "send on the corked UDP socket");
	if (recv(u4, buf, sizeof(buf), MSG_DONTWAIT) >= 0)
		t_fail("a corked datagram was sent before the cork was pulled");
	must(!setsockopt(uk, SOL_UDP, UDP_CORK, &zero, sizeof(zero)), "pull UDP_CORK");
	n = recv(u4, buf, sizeof(buf), 0);
	if (n != (ssize_t)strlen(want) || memcmp(buf, want, n))
		t_fail("uncorked datagram: got %zd bytes '%.*s', want '%s'", n, (int)(n > 0 ? n : 0),
		       buf, want);
}

static void check(void)
{
	struct sockaddr_in n4;
	struct sockaddr_in6 n6;
	socklen_t l = sizeof(n4);
	char buf[16];

	getsockname(l4, (struct sockaddr *)&n4, &l);
	if (n4.sin_port != a4.sin_port)
		t_fail("v4 listener port %u, want %u", ntohs(n4.sin_port), ntohs(a4.sin_port));
	l = sizeof(n6);
	getsockname(l6, (struct sockaddr *)&n6, &l);
	if (n6.sin6_port != a6.sin6_port || memcmp(&n6.sin6_addr, &in6addr_loopback, 16))
		t_fail("v6 listener address differs");
	if (opt(l4, SOL_SOCKET, SO_REUSEADDR) != 1 || opt(l6, SOL_SOCKET, SO_REUSEPORT) != 1 ||
	    opt(l6, IPPROTO_IPV6, IPV6_V6ONLY) != 1 || opt(l6, SOL_SOCKET, SO_REUSEADDR) != 0)
		t_fail("listener options differ");
	if (opt(l4, SOL_SOCKET, SO_ACCEPTCONN) != 1 || opt(l6, SOL_SOCKET, SO_ACCEPTCONN) != 1)
		t_fail("a listener does not listen");
	check_listen(l4, (struct sockaddr *)&a4, sizeof(a4), AF_INET);
	check_listen(l6, (struct sockaddr *)&a6, sizeof(a6), AF_INET6);
	must(send(uc, "udp", 3, 0) == 3, "send on the connected UDP socket");
	if (recv(u4, buf, sizeof(buf), 0) != 3 || memcmp(buf, "udp", 3))
		t_fail("UDP datagram not received by the bound socket");
	check_cork();
	check_lite(0);
	check_lite(1);
	if (!est)
		return;
	expect_tcp(srv, "request one;", "server side, queued at dump");
	fcntl(srv, F_SETFL, 0);
	expect_tcp(cli, "reply one;", "client side, queued at dump");
	must(send(cli, "request two", 11, 0) == 11, "send after restore");
	expect_tcp(srv, "request two", "server side after restore");
	must(send(srv, "reply two", 9, 0) == 9, "reply after restore");
	expect_tcp(cli, "reply two", "client side after restore");
	if (opt(cli, SOL_TCP, TCP_NODELAY) != 1)
		t_fail("TCP_NODELAY lost");
}

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);
	est = argc > 2 && !strcmp(argv[2], "est");
	corked = argc > 2 && !strcmp(argv[2], "corked");
	setup();
	t_ready("%u %u", ntohs(a4.sin_port), ntohs(a6.sin6_port));
	t_wait_usr1();
	t_check_common();
	check();
	t_pass(NULL);
}
