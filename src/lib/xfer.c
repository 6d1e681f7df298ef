/* Image transfer over TCP: the stream both sides speak (include/xfer.h). */
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "xfer.h"

#define PIPE_BYTES	(1 << 20)	/* the default pipe-max-size */
#define HELLO_SECS	60		/* for the answer to HELLO */

static int resolve(const char *addr, int port, bool passive, struct addrinfo **out)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = passive ? AI_PASSIVE : 0 };
	char service[16];
	int ret;

	if (port <= 0 || port > 65535)
		return fail(-EINVAL, "bad port %d", port);
	snprintf(service, sizeof(service), "%d", port);
	ret = getaddrinfo(addr, service, &hints, out);
	if (ret)
		return fail(-EHOSTUNREACH, "cannot resolve %s: %s", addr ? addr : "*",
			    gai_strerror(ret));
	return 0;
}

/* Large socket buffers: the pages come in runs of megabytes. */
static void tune(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int read_reply(struct xfer *x);

/* HELLO, answered: the peer speaks this stream (not plain TCP to a TLS server, ...). */
static int hello(struct xfer *x)
{
	uint32_t v = XFER_VERSION;
	struct timeval tv = { HELLO_SECS, 0 }, none = { 0, 0 };
	int ret = xfer_send(x, XFER_HELLO, &v, sizeof(v));

	if (!ret) {	/* a peer that never answers (an older memdump, ...) is not waited for */
		setsockopt(x->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		ret = read_reply(x);
		setsockopt(x->fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
	}
	if (ret == -EAGAIN || ret == -EWOULDBLOCK) {
		fail_clear();
		return fail(-ETIMEDOUT, "the %s did not answer in %d s: not a memdump page "
			    "server or receiver of this version?", x->peer, HELLO_SECS);
	}
	if (!x->tls && (ret == -EPIPE || ret == -ECONNRESET || ret == -EPROTO)) {
		fail_clear();
		ret = fail(ret, "the %s does not speak memdump's image stream: it closed the "
			   "connection at the start (a TLS server? --tls)", x->peer);
	}
	return ret;
}

int xfer_connect(struct xfer *x, const char *what, const char *addr, int port,
		 const struct xfer_tls *tls)
{
	struct addrinfo *ai, *a;
	int ret, err = ECONNREFUSED;

	x->fd = -1;
	x->tls = NULL;
	snprintf(x->peer, sizeof(x->peer), "%s %s:%d", what, addr, port);
	ret = resolve(addr, port, false, &ai);
	if (ret)
		return ret;
	for (a = ai; a && x->fd < 0; a = a->ai_next) {
		x->fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (x->fd < 0) {
			err = errno;
			continue;
		}
		if (connect(x->fd, a->ai_addr, a->ai_addrlen)) {
			err = errno;
			close(x->fd);
			x->fd = -1;
		}
	}
	freeaddrinfo(ai);
	if (x->fd < 0)
		return fail(-err, "cannot connect to the %s: %s", x->peer, strerror(err));
	tune(x->fd);
	ret = tls && tls->on ? xfer_tls_start(x, false, addr, tls) : 0;
	if (!ret)
		ret = hello(x);
	if (ret)
		xfer_close(x);
	return ret;
}

bool xfer_copies(const struct xfer *x)
{
	return x->tls != NULL;
}

void xfer_close(struct xfer *x)
{
	xfer_tls_end(x);
	if (x->fd >= 0)
		close(x->fd);
	x->fd = -1;
}

int xfer_lost(struct xfer *x, int err)
{
	if (x->tls && (err == -EACCES || err == -EBADMSG))
		return err;	/* the TLS layer said what (xfer_tls.c) */
	fail_clear();
	return fail(err ? err : -EPIPE, "lost the connection to the %s: %s", x->peer,
		    strerror(-(err ? err : -EPIPE)));
}

static int write_all(struct xfer *x, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = x->tls ? xfer_tls_send(x, p, len) : send(x->fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && x->tls)
			return (int)n;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= n;
	}
	return 0;
}

int xfer_send(struct xfer *x, enum xfer_cmd cmd, const void *payload, uint64_t len)
{
	struct xfer_hdr h = { XFER_MAGIC, cmd, len };
	int ret = write_all(x, &h, sizeof(h));

	if (!ret && payload)
		ret = write_all(x, payload, len);
	return ret ? xfer_lost(x, ret) : 0;
}

/* TLS: the file through a buffer (no sendfile into a session). */
static int send_copy(struct xfer *x, int fd, off_t size)
{
	size_t bsize = 1 << 20;
	char *buf = malloc(bsize);
	int ret = buf ? 0 : -ENOMEM;

	while (!ret && size > 0) {
		ssize_t n = read(fd, buf, MIN((uint64_t)size, (uint64_t)bsize));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			ret = fail(n < 0 ? -errno : -EIO, "cannot read an image: %s",
				   n < 0 ? strerror(errno) : "short read");
		else if ((ret = write_all(x, buf, (size_t)n)))
			ret = xfer_lost(x, ret);
		size -= n;
	}
	free(buf);
	return ret;
}

int xfer_send_file(struct xfer *x, int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), ret;
	struct stat st;
	off_t off = 0;

	if (fd < 0)
		return fail(-errno, "cannot open image %s: %s", name, strerror(errno));
	ret = fstat(fd, &st) ? -errno : 0;
	if (!ret)
		ret = xfer_send(x, XFER_FILE, name, strlen(name));
	if (!ret && st.st_size)
		ret = xfer_send(x, XFER_DATA, NULL, (uint64_t)st.st_size);
	if (!ret && x->tls)
		ret = send_copy(x, fd, st.st_size);
	while (!ret && !x->tls && off < st.st_size) {
		ssize_t n = sendfile(x->fd, fd, &off, (size_t)(st.st_size - off));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			ret = xfer_lost(x, n < 0 ? -errno : -EIO);
	}
	close(fd);
	return ret;
}

static int read_reply(struct xfer *x)
{
	struct xfer_hdr h;
	int ret = xfer_recv_hdr(x, &h);

	if (ret == -EPROTO)
		return fail(ret, "the %s does not speak memdump's image stream", x->peer);
	if (ret)
		return xfer_lost(x, ret);
	return xfer_reply_body(x, &h);
}

int xfer_reply_body(struct xfer *x, const struct xfer_hdr *hp)
{
	struct xfer_hdr h = *hp;
	char msg[512];
	int32_t status;
	int ret = 0;

	if (!ret && (h.cmd != XFER_REPLY || h.len < sizeof(status) ||
		     h.len >= sizeof(status) + sizeof(msg)))
		ret = -EPROTO;
	if (!ret)
		ret = xfer_read_exact(x, &status, sizeof(status));
	if (!ret)
		ret = xfer_read_exact(x, msg, h.len - sizeof(status));
	if (ret == -EPROTO)
		return fail(ret, "the %s does not speak memdump's image stream", x->peer);
	if (ret)
		return xfer_lost(x, ret);
	msg[h.len - sizeof(status)] = '\0';
	if (status)
		return fail(status > 0 ? -status : -EIO, "the %s failed: %s", x->peer, msg);
	return 0;
}

int xfer_request_with(struct xfer *x, enum xfer_cmd cmd, const void *payload, uint64_t len)
{
	int ret = xfer_send(x, cmd, payload, len);

	return ret ? ret : read_reply(x);
}

int xfer_request(struct xfer *x, enum xfer_cmd cmd)
{
	return xfer_request_with(x, cmd, NULL, 0);
}

int xfer_listen(const char *addr, int port)
{
	struct addrinfo *ai;
	int fd, one = 1, ret = resolve(addr, port, true, &ai);

	if (ret)
		return ret;
	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
	if (fd < 0) {
		ret = fail(-errno, "cannot make a socket: %s", strerror(errno));
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 1)) {
		ret = fail(-errno, "cannot listen on %s:%d: %s", addr ? addr : "*", port,
			   strerror(errno));
		close(fd);
		goto out;
	}
	ret = fd;
out:
	freeaddrinfo(ai);
	return ret;
}

/* The peer's name for messages: "client 10.1.2.3:4567". */
static void name_peer(struct xfer *x)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char host[64] = "?";
	int port = 0;

	if (!getpeername(x->fd, (struct sockaddr *)&ss, &len)) {
		if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

			inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
			port = ntohs(a->sin6_port);
		} else if (ss.ss_family == AF_INET) {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;

			inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
			port = ntohs(a->sin_port);
		}
	}
	snprintf(x->peer, sizeof(x->peer), "client %s:%d", host, port);
}

int xfer_accept(struct xfer *x, int fd, const char *addr, const struct xfer_tls *tls)
{
	int ret;

	x->fd = fd;
	x->tls = NULL;
	name_peer(x);
	tune(fd);
	ret = tls && tls->on ? xfer_tls_start(x, true, addr, tls) : 0;
	if (ret)
		xfer_close(x);
	return ret;
}

int xfer_read_exact(struct xfer *x, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = x->tls ? xfer_tls_recv(x, p, len) : read(x->fd, p, len);

		if (n < 0 && x->tls)
			return (int)n;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= n;
	}
	return 0;
}

int xfer_recv_hdr(struct xfer *x, struct xfer_hdr *h)
{
	int ret = xfer_read_exact(x, h, sizeof(*h));

	if (!ret && h->magic != XFER_MAGIC)
		ret = -EPROTO;
	return ret;
}

int xfer_reply(struct xfer *x, int status, const char *msg)
{
	size_t len = strnlen(msg, 500);
	struct xfer_hdr h = { XFER_MAGIC, XFER_REPLY, sizeof(int32_t) + len };
	int32_t st = status;
	int ret = write_all(x, &h, sizeof(h));

	if (!ret)
		ret = write_all(x, &st, sizeof(st));
	if (!ret)
		ret = write_all(x, msg, len);
	return ret;
}

/* Through a buffer, where a file takes no splice. */
static int copy_data(struct xfer *x, int fd_out, uint64_t len)
{
	size_t size = 1 << 20;
	char *buf = malloc(size);
	int ret = buf ? 0 : -ENOMEM;

	while (!ret && len) {
		size_t n = MIN(len, (uint64_t)size);

		ret = xfer_read_exact(x, buf, n);
		if (!ret && write(fd_out, buf, n) != (ssize_t)n)
			ret = -EIO;
		len -= n;
	}
	free(buf);
	return ret;
}

/* Bytes in the pipe (in) to fd_out. */
static int drain_pipe(int in, int fd_out, size_t bytes)
{
	while (bytes) {
		ssize_t n = splice(in, NULL, fd_out, NULL, bytes, SPLICE_F_MOVE);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		bytes -= n;
	}
	return 0;
}

int xfer_recv_data(struct xfer *x, int fd_out, uint64_t len)
{
	int p[2], ret = 0;

	if (x->tls || pipe2(p, O_CLOEXEC))
		return copy_data(x, fd_out, len);
	fcntl(p[1], F_SETPIPE_SZ, PIPE_BYTES);
	while (!ret && len) {
		ssize_t n = splice(x->fd, NULL, p[1], NULL, MIN(len, (uint64_t)PIPE_BYTES),
				   SPLICE_F_MOVE | SPLICE_F_MORE);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EPIPE;
			break;
		}
		ret = drain_pipe(p[0], fd_out, (size_t)n);
		len -= n;
	}
	close(p[0]);
	close(p[1]);
	return ret;
}
