/* h-echosrv: a TCP echo server for the engine cases, run inside a container:
 * an IPv4 listener (0.0.0.0:PORT4) and an IPv6 one ([::]:PORT6, IPv4 peers
 * too, v4-mapped); every byte a client sends comes back. Prints LISTENING
 * once both listen; runs until killed.
 * usage: h-echosrv PORT4 PORT6 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAXFD 64

static int listen_on(int family, int port)
{
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(port),
				   .sin6_addr = IN6ADDR_ANY_INIT };
	int s = socket(family, SOCK_STREAM, 0), one = 1, zero = 0;

	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		return -1;
	if (family == AF_INET6 && setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)))
		return -1;
	if (family == AF_INET ? bind(s, (struct sockaddr *)&a4, sizeof(a4)) :
				bind(s, (struct sockaddr *)&a6, sizeof(a6)))
		return -1;
	return listen(s, 8) ? -1 : s;
}

/* one client's bytes back to it; false once it is gone */
static int echo(int fd)
{
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof(buf));

	for (ssize_t off = 0; n > 0 && off < n;) {
		ssize_t w = write(fd, buf + off, n - off);

		if (w <= 0)
			return 0;
		off += w;
	}
	return n > 0 || (n < 0 && errno == EINTR);
}

int main(int argc, char **argv)
{
	struct pollfd p[MAXFD];
	int n = 2;

	if (argc != 3)
		return fprintf(stderr, "usage: h-echosrv PORT4 PORT6\n"), 2;
	p[0] = (struct pollfd){ .fd = listen_on(AF_INET, atoi(argv[1])), .events = POLLIN };
	p[1] = (struct pollfd){ .fd = listen_on(AF_INET6, atoi(argv[2])), .events = POLLIN };
	if (p[0].fd < 0 || p[1].fd < 0)
		return perror("h-echosrv: listen"), 1;
	printf("LISTENING\n");
	fflush(stdout);
	for (;;) {
		if (poll(p, n, -1) < 0 && errno != EINTR)
			return perror("h-echosrv: poll"), 1;
		for (int i = 2; i < n; i++)
			if (p[i].revents && !echo(p[i].fd)) {
				close(p[i].fd);
				p[i--] = p[--n];
			}
		for (int i = 0; i < 2; i++) {
			int c;

			if (!(p[i].revents & POLLIN) || (c = accept(p[i].fd, NULL, NULL)) < 0)
				continue;
			if (n == MAXFD)
				close(c);
			else
				p[n++] = (struct pollfd){ .fd = c, .events = POLLIN };
		}
	}
}
