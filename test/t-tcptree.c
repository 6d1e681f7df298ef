/*
 * t-tcptree DIR [tree|one] [v4|v6]: a TCP connection over the loopback whose
 * two ends are both in the dump, with data queued both ways: each end wrote
 * until its send buffer was full (the peer's receive queue full, the rest
 * in its own send queue, part of it never sent), and nobody read.
 *   tree: the parent holds the listener and the connecting end, its child
 *         the accepted end (the listener's port: a listener and a
 *         connection share it in one tree)
 *   one:  one process holds the listener and both ends
 *   lostack: as tree, but nothing queued: the connecting end (the parent)
 *         sent LOSTACK_LEN bytes the child read, whose acknowledgment a
 *         table of nft rules of its own (t-lostack, left to the case to
 *         delete) dropped: the parent holds them as unacknowledged
 *         (SIOCOUTQ) when it is dumped. Restored, it must have the child's
 *         acknowledgment as soon as it runs (the restore's window probes
 *         make the child send it); then as tree.
 * READY <pid> <child or 0> <port>
 * On SIGUSR1 (the parent passes it to the child) each end reads all the
 * bytes the other wrote, in order, then a message goes each way, then the
 * parent shuts its end down: the child reads EOF and closes, the parent
 * reads EOF.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "tlib.h"
#include "tstream.h"

#define SEED_CONNECTOR	0x7c9d1
#define SEED_ACCEPTED	0x3a5e7
#define CHUNK		T_STREAM_CHUNK
#define LOSTACK_LEN	4096

static int family = AF_INET;

static void read_exact(int fd, void *p, size_t len, const char *what)
{
	while (len) {
		ssize_t n = read(fd, p, len);

		if (n <= 0)
			t_fail("%s: %s", what, n ? strerror(errno) : "EOF");
		p = (char *)p + n;
		len -= n;
	}
}

/* All len bytes of the stream of seed, in order. */
static void drain(int fd, uint64_t seed, uint64_t len, const char *who)
{
	static uint8_t buf[CHUNK], want[CHUNK];
	struct timeval tmo = { 30, 0 };
	uint64_t off = 0;

	t_must(!setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)), "SO_RCVTIMEO");
	while (off < len) {
		size_t n = len - off < CHUNK ? len - off : CHUNK;
		ssize_t r = read(fd, buf, n);

		if (r <= 0)
			t_fail("%s: %s after %" PRIu64 " of %" PRIu64 " queued bytes", who,
			       r ? strerror(errno) : "EOF", off, len);
		t_stream_pattern(want, r, seed, off);
		if (memcmp(buf, want, r))
			t_fail("%s: the bytes at %" PRIu64 " differ", who, off);
		off += r;
	}
}

static void expect_msg(int fd, const char *msg, const char *who)
{
	char buf[64] = "";

	read_exact(fd, buf, strlen(msg), who);
	if (memcmp(buf, msg, strlen(msg)))
		t_fail("%s: got \"%.*s\", want \"%s\"", who, (int)strlen(msg), buf, msg);
}

static void expect_eof(int fd, const char *who)
{
	char c;
	ssize_t n = read(fd, &c, 1);

	if (n != 0)
		t_fail("%s: %s instead of EOF", who, n < 0 ? strerror(errno) : "a byte");
}

/* The connecting end after the restore: what the accepted end queued, a message each way, EOF. */
static void check_connector(int c, uint64_t from_acc, bool one, int a, uint64_t from_conn)
{
	if (one)
		drain(a, SEED_CONNECTOR, from_conn, "accepted end");
	drain(c, SEED_ACCEPTED, from_acc, "connecting end");
	t_must(send(c, "later from the connector", 24, MSG_NOSIGNAL) == 24, "send after restore");
	if (one) {
		expect_msg(a, "later from the connector", "accepted end, later");
		t_must(send(a, "later from the acceptor", 23, MSG_NOSIGNAL) == 23, "send back");
	}
	expect_msg(c, "later from the acceptor", "connecting end, later");
	t_must(!shutdown(c, SHUT_WR), "shutdown");
	if (one) {
		expect_eof(a, "accepted end");
		close(a);
	}
	expect_eof(c, "connecting end");
}

/* The bytes the connecting end sent and holds as not yet acknowledged. */
static int unacked(int c)
{
	int outq = -1;

	t_must(!ioctl(c, SIOCOUTQ, &outq), "SIOCOUTQ");
	return outq;
}

/*
 * lostack: the accepted end's segments to the connecting end dropped (nft,
 * in the case's network namespace), then LOSTACK_LEN bytes sent, which the
 * child reads: their acknowledgment never arrives.
 */
static void lose_acks(int c, uint16_t lport)
{
	static const uint8_t zeros[LOSTACK_LEN];
	char cmd[512];

	snprintf(cmd, sizeof(cmd),
		 "nft add table inet t-lostack && nft add chain inet t-lostack out "
		 "'{ type filter hook output priority 0; }' && nft add rule inet t-lostack out "
		 "tcp sport %u tcp dport %u drop", lport, t_port_of(c));
	t_must(system(cmd) == 0, "nft: the table dropping the accepted end's segments");
	t_must(send(c, zeros, sizeof(zeros), MSG_NOSIGNAL) == sizeof(zeros), "send lostack");
}

static void __attribute__((noreturn)) child_main(int a, int to_parent, int from_parent,
						 bool lostack)
{
	uint64_t mine = lostack ? 0 : t_stream_fill(a, SEED_ACCEPTED), theirs;

	if (lostack) {
		static uint8_t got[LOSTACK_LEN];

		read_exact(a, got, sizeof(got), "the lostack bytes");
	}

	t_must(write(to_parent, &mine, sizeof(mine)) == sizeof(mine), "write count");
	read_exact(from_parent, &theirs, sizeof(theirs), "the parent's count");
	close(to_parent);
	close(from_parent);
	t_wait_usr1();
	drain(a, SEED_CONNECTOR, theirs, "accepted end (child)");
	expect_msg(a, "later from the connector", "accepted end (child), later");
	t_must(send(a, "later from the acceptor", 23, MSG_NOSIGNAL) == 23, "send back");
	expect_eof(a, "accepted end (child)");
	close(a);
	exit(0);
}

int main(int argc, char **argv)
{
	bool one = argc > 2 && !strcmp(argv[2], "one");
	bool lostack = argc > 2 && !strcmp(argv[2], "lostack");
	int l, c, a, up[2], down[2], one_ = 1, status;
	struct sockaddr_storage ss;
	uint64_t from_conn = 0, from_acc = 0;
	socklen_t len;
	pid_t child = 0;

	t_init(argc, argv, SA_RESTART);
	if (argc > 3 && !strcmp(argv[3], "v6"))
		family = AF_INET6;
	l = socket(family, SOCK_STREAM, 0);
	t_must(l >= 0 && !setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one_, sizeof(one_)), "socket");
	len = t_loopback(family, false, &ss, 0);
	t_must(!bind(l, (struct sockaddr *)&ss, len) && !listen(l, 8), "listen");
	c = socket(family, SOCK_STREAM, 0);
	len = t_loopback(family, false, &ss, t_port_of(l));
	t_must(c >= 0 && !connect(c, (struct sockaddr *)&ss, len), "connect");
	a = accept(l, NULL, NULL);
	t_must(a >= 0, "accept");
	t_must(!setsockopt(c, SOL_TCP, TCP_NODELAY, &one_, sizeof(one_)), "TCP_NODELAY");
	if (one) {
		from_conn = t_stream_fill(c, SEED_CONNECTOR);
		from_acc = t_stream_fill(a, SEED_ACCEPTED);
	} else {
		t_must(!pipe(up) && !pipe(down), "pipe");
		child = fork();
		t_must(child >= 0, "fork");
		if (child == 0) {
			close(l);
			close(c);
			close(up[0]);
			close(down[1]);
			child_main(a, up[1], down[0], lostack);
		}
		close(a);
		close(up[1]);
		close(down[0]);
		if (lostack)
			lose_acks(c, t_port_of(l));
		else
			from_conn = t_stream_fill(c, SEED_CONNECTOR);
		read_exact(up[0], &from_acc, sizeof(from_acc), "the child's count");
		if (lostack && unacked(c) != LOSTACK_LEN)
			t_fail("%d bytes unacknowledged, want %d: the acknowledgment was not lost",
			       unacked(c), LOSTACK_LEN);
		t_must(write(down[1], &from_conn, sizeof(from_conn)) == sizeof(from_conn), "count");
		close(up[0]);
		close(down[1]);
	}
	t_ready("%d %u", (int)child, t_port_of(l));
	t_wait_usr1();
	t_check_common();
	if (lostack && unacked(c))
		t_fail("restored with %d bytes unacknowledged that its peer had received (its "
		       "acknowledgment held back by the lock did not come)", unacked(c));
	if (child && kill(child, SIGUSR1))
		t_fail("kill child: %s", strerror(errno));
	check_connector(c, from_acc, one, a, from_conn);
	if (child && (waitpid(child, &status, 0) != child || status))
		t_fail("the child failed (status %#x)", status);
	if (t_port_of(l) != ntohs(((struct sockaddr_in *)&ss)->sin_port))
		t_fail("the listener's port changed");
	t_pass(one ? "one process" : lostack ? "lostack" : "tree");
}
