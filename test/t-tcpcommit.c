/*
 * t-tcpcommit DIR PORT: a TCP connection to a peer outside the dump
 * (127.0.0.1:PORT, the case's own). It sent SENT bytes the peer reads as
 * they come, and did not read the RECV bytes the peer sent: they are in its
 * receive queue when it is dumped.
 * READY <pid> <local port>
 * On SIGUSR1 it reads the peer's RECV bytes, in order, sends SENT more, shuts
 * its end down and reads EOF: the peer (test/cases-rstfail.sh) checks it got
 * all 2 * SENT bytes, in order, then EOF, and no reset.
 * Byte i of a stream: (i * 31 + seed) % 251, 'seed' 7 this way, 3 the other.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "tlib.h"

#define SENT	32768
#define RECV	32768
#define MIN_T(a, b)	((a) < (b) ? (a) : (b))

static uint8_t byte_of(size_t i, unsigned int seed)
{
	return (uint8_t)((i * 31 + seed) % 251);
}

static void send_from(int fd, size_t from, size_t len)
{
	uint8_t buf[4096];

	for (size_t off = from; off < from + len;) {
		size_t n = MIN_T(from + len - off, sizeof(buf));
		ssize_t w;

		for (size_t i = 0; i < n; i++)
			buf[i] = byte_of(off + i, 7);
		w = send(fd, buf, n, MSG_NOSIGNAL);
		if (w <= 0)
			t_fail("send at byte %zu: %s", off, w < 0 ? strerror(errno) : "0");
		off += (size_t)w;
	}
}

static void expect_stream(int fd, size_t len)
{
	uint8_t buf[4096];

	for (size_t off = 0; off < len;) {
		ssize_t r = recv(fd, buf, MIN_T(len - off, sizeof(buf)), 0);

		if (r <= 0)
			t_fail("recv at byte %zu of %zu: %s", off, len, r < 0 ? strerror(errno) : "EOF");
		for (ssize_t i = 0; i < r; i++)
			if (buf[i] != byte_of(off + (size_t)i, 3))
				t_fail("byte %zu from the peer differs", off + (size_t)i);
		off += (size_t)r;
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	char c;
	int fd;

	t_init(argc, argv, SA_RESTART);
	if (argc < 3)
		t_fail("usage: t-tcpcommit DIR PORT");
	a.sin_port = htons((uint16_t)atoi(argv[2]));
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		t_fail("connect to port %s: %s", argv[2], strerror(errno));
	send_from(fd, 0, SENT);
	/* the peer's bytes are all in the receive queue before READY */
	for (int q = 0, tries = 0; q < RECV; tries++) {
		if (tries > 1000)
			t_fail("the peer's %d bytes did not arrive (%d)", RECV, q);
		t_sleep_ms(10);
		if (ioctl(fd, SIOCINQ, &q))
			t_fail("SIOCINQ: %s", strerror(errno));
	}
	if (getsockname(fd, (struct sockaddr *)&a, &al))
		t_fail("getsockname: %s", strerror(errno));
	t_ready("%d", ntohs(a.sin_port));
	t_wait_usr1();
	t_check_common();
	expect_stream(fd, RECV);
	send_from(fd, SENT, SENT);
	if (shutdown(fd, SHUT_WR))
		t_fail("shutdown: %s", strerror(errno));
	if (recv(fd, &c, 1, 0) != 0)
		t_fail("no EOF from the peer after its %d bytes", RECV);
	t_pass(NULL);
}
