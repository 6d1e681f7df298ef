/*
 * t-tcpclose DIR closing|lastack v4|v6|v4mapped: a TCP connection over the
 * loopback closing, both of its ends in the dump: the parent holds the
 * accepted end (the server, its FIN stuck behind bytes it could not send),
 * its child the connecting end (its FIN acknowledged, its receive queue full,
 * not reading). v4mapped: the listener is IPv6 (dual stack), the child
 * connects over IPv4.
 *   closing: both wrote until full and shut down; the parent then read all
 *            the child's bytes and its FIN: the parent CLOSING, the child
 *            FIN_WAIT2 (zdtm socket-tcp-closing)
 *   lastack: the child shut down, the parent read its FIN, wrote until full
 *            and shut down: the parent LAST_ACK, the child FIN_WAIT2
 *            (zdtm socket-tcp-last-ack)
 * READY <pid> <child> <port>
 * On SIGUSR1 each end checks it is in the state it was (the parent passes
 * SIGUSR1 on to the child), and reads EOF again; the child reads every byte
 * the parent wrote, in order, then EOF, and sends its count back on a pipe;
 * the parent's FIN is acknowledged (its socket closed both ways).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "tlib.h"
#include "tstream.h"

#define SEED_SERVER	0x51c3d
#define SEED_CLIENT	0x2b7e1
#define CHUNK		T_STREAM_CHUNK

static int srv_family = AF_INET, clt_family = AF_INET;

static int tcp_state(int fd)
{
	struct tcp_info ti;
	socklen_t l = sizeof(ti);

	t_must(!getsockopt(fd, SOL_TCP, TCP_INFO, &ti, &l), "TCP_INFO");
	return ti.tcpi_state;
}

/* Waits (10 s at most) for fd to reach state. */
static void wait_state(int fd, int state, const char *who)
{
	for (int i = 0; i < 1000 && tcp_state(fd) != state; i++)
		t_sleep_ms(10);
	if (tcp_state(fd) != state)
		t_fail("%s: in TCP state %d, not %d", who, tcp_state(fd), state);
}

/* All len bytes of the stream of seed, in order, then EOF. */
static void drain(int fd, uint64_t seed, uint64_t len, const char *who)
{
	static uint8_t buf[CHUNK], want[CHUNK];
	struct timeval tmo = { 30, 0 };
	uint64_t off = 0;

	t_must(!setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)), "SO_RCVTIMEO");
	for (;;) {
		ssize_t r = read(fd, buf, CHUNK);

		if (r < 0)
			t_fail("%s: %s after %" PRIu64 " of %" PRIu64 " bytes", who, strerror(errno),
			       off, len);
		if (r == 0)
			break;
		t_stream_pattern(want, r, seed, off);
		if (memcmp(buf, want, r))
			t_fail("%s: the bytes at %" PRIu64 " differ", who, off);
		off += r;
	}
	if (off != len)
		t_fail("%s: EOF after %" PRIu64 " bytes, %" PRIu64 " were sent", who, off, len);
}

static void expect_eof(int fd, const char *who)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);

	if (n != 0)
		t_fail("%s: %s instead of EOF", who, n < 0 ? strerror(errno) : "a byte");
}

/* The connecting end: shut down (closing: after filling), then waits. */
static void __attribute__((noreturn)) child_main(int c, bool closing, int up, int down)
{
	uint64_t sent = closing ? t_stream_fill(c, SEED_CLIENT) : 0, theirs;

	t_must(!shutdown(c, SHUT_WR), "shutdown (child)");
	t_must(write(up, &sent, sizeof(sent)) == sizeof(sent), "write count");
	if (read(down, &theirs, sizeof(theirs)) != sizeof(theirs))
		t_fail("the parent's count: %s", strerror(errno));
	wait_state(c, TCP_FIN_WAIT2, "connecting end (child)");
	t_wait_usr1();
	if (tcp_state(c) != TCP_FIN_WAIT2)
		t_fail("connecting end (child): restored in TCP state %d, not FIN_WAIT2",
		       tcp_state(c));
	drain(c, SEED_SERVER, theirs, "connecting end (child)");
	t_must(write(up, &theirs, sizeof(theirs)) == sizeof(theirs), "write result");
	exit(0);
}

/* The accepted end, its close as the mode wants it; the bytes it queued. */
static uint64_t server_close(int a, bool closing, int up, int down)
{
	uint64_t from_child, mine;
	int want = closing ? TCP_CLOSING : TCP_LAST_ACK;

	if (read(up, &from_child, sizeof(from_child)) != sizeof(from_child))
		t_fail("the child's count: %s", strerror(errno));
	if (closing) {
		mine = t_stream_fill(a, SEED_SERVER);
		t_must(!shutdown(a, SHUT_WR), "shutdown (parent)");
		drain(a, SEED_CLIENT, from_child, "accepted end (parent)");
	} else {
		drain(a, SEED_CLIENT, from_child, "accepted end (parent)");
		mine = t_stream_fill(a, SEED_SERVER);
		t_must(!shutdown(a, SHUT_WR), "shutdown (parent)");
	}
	t_must(write(down, &mine, sizeof(mine)) == sizeof(mine), "count");
	wait_state(a, want, "accepted end (parent)");
	return mine;
}

int main(int argc, char **argv)
{
	bool closing = argc > 2 && !strcmp(argv[2], "closing");
	const char *fam = argc > 3 ? argv[3] : "v4";
	int l, c, a, up[2], down[2], one = 1, status;
	struct sockaddr_storage ss;
	uint64_t mine, got;
	socklen_t len;
	pid_t child;

	t_init(argc, argv, SA_RESTART);
	if (!strcmp(fam, "v6"))
		srv_family = clt_family = AF_INET6;
	else if (!strcmp(fam, "v4mapped"))
		srv_family = AF_INET6;
	l = socket(srv_family, SOCK_STREAM, 0);
	t_must(l >= 0 && !setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), "socket");
	len = t_loopback(srv_family, clt_family == AF_INET, &ss, 0);
	t_must(!bind(l, (struct sockaddr *)&ss, len) && !listen(l, 8), "listen");
	c = socket(clt_family, SOCK_STREAM, 0);
	len = t_loopback(clt_family, clt_family == AF_INET, &ss, t_port_of(l));
	t_must(c >= 0 && !connect(c, (struct sockaddr *)&ss, len), "connect");
	a = accept(l, NULL, NULL);
	t_must(a >= 0, "accept");
	t_must(!pipe(up) && !pipe(down), "pipe");
	child = fork();
	t_must(child >= 0, "fork");
	if (child == 0) {
		close(l);
		close(a);
		close(up[0]);
		close(down[1]);
		child_main(c, closing, up[1], down[0]);
	}
	close(c);
	close(up[1]);
	close(down[0]);
	mine = server_close(a, closing, up[0], down[1]);
	t_ready("%d %u", (int)child, t_port_of(l));
	t_wait_usr1();
	t_check_common();
	if (tcp_state(a) != (closing ? TCP_CLOSING : TCP_LAST_ACK))
		t_fail("accepted end (parent): restored in TCP state %d", tcp_state(a));
	if (closing)
		expect_eof(a, "accepted end (parent)");
	if (kill(child, SIGUSR1))
		t_fail("kill child: %s", strerror(errno));
	if (read(up[0], &got, sizeof(got)) != sizeof(got) || got != mine)
		t_fail("the child did not read the %" PRIu64 " bytes the parent sent", mine);
	if (waitpid(child, &status, 0) != child || status)
		t_fail("the child failed (status %#x)", status);
	wait_state(a, TCP_CLOSE, "accepted end (parent), its FIN acknowledged");
	t_pass(closing ? "closing" : "lastack");
}
