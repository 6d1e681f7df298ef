/*
 * A seeded byte stream over a socket, for the TCP test programs (t-tcptree,
 * t-tcpclose): t_must, loopback addresses and ports (t_loopback, t_port_of),
 * the stream's bytes (t_stream_pattern) and a writer that fills the socket
 * until it takes no more (t_stream_fill).
 */
#ifndef TSTREAM_H
#define TSTREAM_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "tlib.h"

#define T_STREAM_CHUNK	(64 << 10)

static inline void t_must(bool ok, const char *what)
{
	if (!ok)
		t_fail("%s: %s", what, strerror(errno));
}

/* The loopback address of family at port in ss (IPv6: :: with any6, for v4-mapped peers); its length. */
static inline socklen_t t_loopback(int family, bool any6, struct sockaddr_storage *ss,
				   uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (void *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_addr = any6 ? in6addr_any : in6addr_loopback;
		a->sin6_port = htons(port);
		return sizeof(*a);
	}
	struct sockaddr_in *a = (void *)ss;

	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a->sin_port = htons(port);
	return sizeof(*a);
}

/* The local port of socket fd. */
static inline uint16_t t_port_of(int fd)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);

	t_must(!getsockname(fd, (struct sockaddr *)&ss, &l), "getsockname");
	return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
						((struct sockaddr_in *)&ss)->sin_port);
}

/* Bytes off .. off+len of the stream of seed. */
static inline void t_stream_pattern(uint8_t *buf, size_t len, uint64_t seed, uint64_t off)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = t_byte(seed, off + i);
}

/* Writes the stream of seed until the socket takes no more; its length. */
static inline uint64_t t_stream_fill(int fd, uint64_t seed)
{
	static uint8_t buf[T_STREAM_CHUNK];
	uint64_t off = 0;
	int fl = fcntl(fd, F_GETFL);

	t_must(fl >= 0 && !fcntl(fd, F_SETFL, fl | O_NONBLOCK), "O_NONBLOCK");
	for (;;) {
		ssize_t n;

		t_stream_pattern(buf, sizeof(buf), seed, off);
		n = send(fd, buf, sizeof(buf), MSG_NOSIGNAL);
		if (n < 0 && errno == EAGAIN) {
			struct pollfd p = { fd, POLLOUT, 0 };

			if (poll(&p, 1, 200) == 0)	/* full: the peer's queue too */
				break;
			continue;
		}
		t_must(n > 0, "send while filling");
		off += n;
	}
	t_must(!fcntl(fd, F_SETFL, fl), "clear O_NONBLOCK");
	return off;
}

#endif
