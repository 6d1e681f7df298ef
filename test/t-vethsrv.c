/* t-vethsrv: serves TCP and UDP on every address of its network namespace
 * (the veth's, for the netns cases): a TCP client gets "pong <pid> <n>\n"
 * (n: connections served so far), a UDP datagram is echoed back prefixed
 * with "pong ". After SIGUSR1: PASS with the number of TCP connections (the
 * case checks the answers).
 * usage: t-vethsrv DIR PORT
 * READY <pid> <port> */
#include "tlib.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

static int listener(int type, int port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(port),
				  .sin6_addr = IN6ADDR_ANY_INIT };
	int s = socket(AF_INET6, type, 0), one = 1;

	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s, (struct sockaddr *)&a, sizeof(a)) || (type == SOCK_STREAM && listen(s, 8)))
		t_fail("listener on port %d: %s", port, strerror(errno));
	return s;
}

static void serve_tcp(int l, int *served)
{
	char msg[64];
	int c = accept(l, NULL, NULL), n;

	if (c < 0)
		return;
	n = snprintf(msg, sizeof(msg), "pong %d %d\n", (int)getpid(), ++*served);
	if (write(c, msg, n) != n)
		t_fail("write to a client: %s", strerror(errno));
	close(c);
}

static void serve_udp(int u)
{
	struct sockaddr_in6 from;
	socklen_t fl = sizeof(from);
	char buf[256] = "pong ";
	ssize_t n = recvfrom(u, buf + 5, sizeof(buf) - 5, 0, (struct sockaddr *)&from, &fl);

	if (n > 0)
		sendto(u, buf, n + 5, 0, (struct sockaddr *)&from, fl);
}

int main(int argc, char **argv)
{
	int port = argc > 2 ? atoi(argv[2]) : 0, served = 0;
	struct pollfd p[2];

	t_init(argc, argv, 0);
	p[0] = (struct pollfd){ .fd = listener(SOCK_STREAM, port), .events = POLLIN };
	p[1] = (struct pollfd){ .fd = listener(SOCK_DGRAM, port), .events = POLLIN };
	t_ready("%d", port);
	while (!t_usr1) {
		if (poll(p, 2, 100) <= 0)
			continue;
		if (p[0].revents & POLLIN)
			serve_tcp(p[0].fd, &served);
		if (p[1].revents & POLLIN)
			serve_udp(p[1].fd);
	}
	char info[32];
	snprintf(info, sizeof(info), "%d served", served);
	t_pass(info);
}
