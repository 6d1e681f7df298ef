/* t-tcpreset: a TCP connection over (TCP_CLOSE, its peer still named) with
 * bytes left in its receive queue, at fd 10; its listener stays at fd 11.
 *   argv[2] mode:
 *     rst    the accepted end, reset by its peer (ECONNRESET pending)
 *     epipe  the accepted end, reset after the peer's FIN (CLOSE_WAIT: EPIPE pending)
 *     taken  as rst, the error taken (SO_ERROR) before READY
 *     clt    the connecting end (an ephemeral port), reset by the accepted one
 *     fin    the accepted end, closed both ways (the peer first: no TIME_WAIT here)
 *     tw     the connecting end, closed both ways first (its pair in TIME_WAIT)
 *   argv[3] family: v4 (127.0.0.1), v6 (::1)
 * READY <pid> <fd>. On SIGUSR1: its names as before, then a fixed sequence of
 * calls (poll, SIOCINQ, SIOCOUTQ, TCP_INFO state, recv, [epipe: SO_ERROR], recv, send,
 * SO_ERROR, recv),
 * printed as "SEQ ..." for the case to compare with a run never dumped; PASS
 * when the first recv gave the bytes left. */
#include "tlib.h"
#include <stdbool.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>

#define VICTIM	10
#define LISTENER 11

static int family = AF_INET;

static void at(int fd, int want)
{
	if (fd < 0 || dup2(fd, want) != want)
		t_fail("cannot put fd %d at %d: %s", fd, want, strerror(errno));
	close(fd);
}

static socklen_t loopback(struct sockaddr_storage *ss, uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *a = (void *)ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		return sizeof(*a);
	}
	struct sockaddr_in6 *a6 = (void *)ss;

	a6->sin6_family = AF_INET6;
	a6->sin6_port = htons(port);
	a6->sin6_addr = in6addr_loopback;
	return sizeof(*a6);
}

static int state_of(int fd)
{
	struct tcp_info ti;
	socklen_t l = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	return getsockopt(fd, SOL_TCP, TCP_INFO, &ti, &l) ? -1 : ti.tcpi_state;
}

static void wait_state(int fd, int st)
{
	for (int i = 0; i < 500 && state_of(fd) != st; i++)
		t_sleep_ms(10);
	if (state_of(fd) != st)
		t_fail("fd %d in TCP state %d, not %d", fd, state_of(fd), st);
}

static void send_all(int fd, const char *s)
{
	if (send(fd, s, strlen(s), MSG_NOSIGNAL) != (ssize_t)strlen(s))
		t_fail("send: %s", strerror(errno));
}

static void reset_close(int fd)
{
	struct linger lg = { 1, 0 };

	if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) || close(fd))
		t_fail("cannot close with a reset: %s", strerror(errno));
}

/* The pair: *l the listener, *c the connecting end, *a the accepted one. */
static void connect_pair(int *l, int *c, int *a)
{
	struct sockaddr_storage ss;
	socklen_t len = loopback(&ss, 0);

	*l = socket(family, SOCK_STREAM, 0);
	if (*l < 0 || bind(*l, (struct sockaddr *)&ss, len) || listen(*l, 4) ||
	    getsockname(*l, (struct sockaddr *)&ss, &len))
		t_fail("listener: %s", strerror(errno));
	*c = socket(family, SOCK_STREAM, 0);
	if (*c < 0 || connect(*c, (struct sockaddr *)&ss, len))
		t_fail("connect: %s", strerror(errno));
	*a = accept(*l, NULL, NULL);
	if (*a < 0)
		t_fail("accept: %s", strerror(errno));
}

/* c shut down first, then a: c's pair in TIME_WAIT, c at VICTIM */
static const char *closed_first(int a, int c)
{
	send_all(a, "abc");
	t_sleep_ms(50);
	shutdown(c, SHUT_WR);
	wait_state(a, TCP_CLOSE_WAIT);
	shutdown(a, SHUT_WR);
	wait_state(c, TCP_CLOSE);
	close(a);
	at(c, VICTIM);
	return "abc";
}

static const char *set_up(const char *mode)
{
	int l, c, a, e;
	socklen_t el = sizeof(e);

	connect_pair(&l, &c, &a);
	at(l, LISTENER);
	if (!strcmp(mode, "clt")) {
		send_all(a, "xyz");
		wait_state(c, TCP_ESTABLISHED);
		t_sleep_ms(50);
		reset_close(a);
		at(c, VICTIM);
		wait_state(VICTIM, TCP_CLOSE);
		return "xyz";
	}
	if (!strcmp(mode, "tw"))
		return closed_first(a, c);
	send_all(c, "abc");
	t_sleep_ms(50);
	if (!strcmp(mode, "epipe") || !strcmp(mode, "fin")) {
		shutdown(c, SHUT_WR);
		wait_state(a, TCP_CLOSE_WAIT);
	}
	if (!strcmp(mode, "fin")) {
		shutdown(a, SHUT_WR);
		wait_state(a, TCP_CLOSE);
		close(c);	/* in TIME_WAIT */
	} else {
		reset_close(c);
		wait_state(a, TCP_CLOSE);
	}
	at(a, VICTIM);
	if (!strcmp(mode, "taken") && getsockopt(VICTIM, SOL_SOCKET, SO_ERROR, &e, &el))
		t_fail("SO_ERROR: %s", strerror(errno));
	return "abc";
}

static void names(int fd, struct sockaddr_storage *me, struct sockaddr_storage *peer)
{
	socklen_t l = sizeof(*me), pl = family == AF_INET ? sizeof(struct sockaddr_in) :
							     sizeof(struct sockaddr_in6);

	memset(me, 0, sizeof(*me));
	memset(peer, 0, sizeof(*peer));
	if (getsockname(fd, (struct sockaddr *)me, &l) ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERNAME, peer, &pl))
		t_fail("names of fd %d: %s", fd, strerror(errno));
}

static int rd(int fd, char *buf, size_t len, char *seq, size_t sl)
{
	ssize_t n = recv(fd, buf, len, MSG_DONTWAIT);
	size_t at = strlen(seq);

	snprintf(seq + at, sl - at, " r%zd", n < 0 ? -errno : n);
	return (int)n;
}

/* err_first: SO_ERROR right after the first recv (it tells EPIPE from none) */
static void sequence(int fd, bool err_first, char *seq, size_t sl, char *first, size_t fl)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT | POLLRDHUP };
	int inq = -1, outq = -1, e = -1;
	socklen_t el = sizeof(e);
	char buf[64];
	ssize_t n;

	poll(&p, 1, 0);
	ioctl(fd, SIOCINQ, &inq);
	ioctl(fd, SIOCOUTQ, &outq);
	snprintf(seq, sl, "p%x q%d o%d s%d", p.revents, inq, outq, state_of(fd));
	n = rd(fd, first, fl - 1, seq, sl);
	first[n > 0 ? n : 0] = 0;
	if (err_first) {
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el);
		snprintf(seq + strlen(seq), sl - strlen(seq), " e%d", e);
	}
	rd(fd, buf, sizeof(buf), seq, sl);
	n = send(fd, "z", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	snprintf(seq + strlen(seq), sl - strlen(seq), " w%zd", n < 0 ? -errno : n);
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el);
	snprintf(seq + strlen(seq), sl - strlen(seq), " e%d", e);
	rd(fd, buf, sizeof(buf), seq, sl);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "rst", *want;
	struct sockaddr_storage me, peer, me2, peer2;
	char seq[256], first[64];

	t_init(argc, argv, SA_RESTART);
	if (argc > 3 && !strcmp(argv[3], "v6"))
		family = AF_INET6;
	want = set_up(mode);
	names(VICTIM, &me, &peer);
	t_ready("%d", VICTIM);
	t_wait_usr1();
	t_check_common();
	names(VICTIM, &me2, &peer2);
	if (memcmp(&me, &me2, sizeof(me)) || memcmp(&peer, &peer2, sizeof(peer)))
		t_fail("its names changed");
	sequence(VICTIM, !strcmp(mode, "epipe"), seq, sizeof(seq), first, sizeof(first));
	printf("SEQ %s\n", seq);
	if (strcmp(first, want))
		t_fail("read \"%s\", want \"%s\" (%s)", first, want, seq);
	t_pass(seq);
}
