/*
 * One RPC message per SOCK_SEQPACKET packet: a request is sized with
 * MSG_PEEK | MSG_TRUNC first, so an oversized one is dropped whole; garbage,
 * a truncated message or one without its required fields does not unpack and
 * is refused, never half-read.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "log.h"
#include "cli/rpc.h"

const char *rpc_type_name(int type)
{
	const ProtobufCEnumValue *v =
		protobuf_c_enum_descriptor_get_value(&criu_req_type__descriptor, type);

	return v ? v->name : "unknown";
}

static ssize_t recv_intr(int sk, void *buf, size_t len, int flags)
{
	ssize_t n;

	do
		n = recv(sk, buf, len, flags);
	while (n < 0 && errno == EINTR && !dump_interrupted);
	return n;
}

/* recv() said 0: the client closed its end, or sent an empty packet (consumed here). */
static int empty_or_closed(const struct rpc_conn *c)
{
	struct pollfd p = { .fd = c->sk, .events = POLLIN };
	char b;

	recv_intr(c->sk, &b, 1, MSG_DONTWAIT);
	if (poll(&p, 1, 0) >= 0 && (p.revents & POLLHUP))
		return 1;
	return fail(-EBADMSG, "an empty request");
}

int rpc_recv(const struct rpc_conn *c, CriuReq **req)
{
	ssize_t len = recv_intr(c->sk, NULL, 0, MSG_PEEK | MSG_TRUNC);
	uint8_t *buf;

	if (len < 0)
		return fail(-errno, "cannot read a request: %s", strerror(errno));
	if (len == 0)
		return empty_or_closed(c);
	if (len > RPC_MAX_MSG) {
		recv_intr(c->sk, NULL, 0, MSG_TRUNC);
		return fail(-EMSGSIZE, "a request of %zd bytes (more than %d)", len, RPC_MAX_MSG);
	}
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	len = recv_intr(c->sk, buf, len, 0);
	if (len < 0) {
		free(buf);
		return fail(-errno, "cannot read a request: %s", strerror(errno));
	}
	*req = criu_req__unpack(NULL, len, buf);
	free(buf);
	if (!*req)
		return fail(-EBADMSG, "a malformed request (%zd bytes that are not a criu_req)", len);
	return 0;
}

/* One packet, with fd (SCM_RIGHTS) when fd >= 0. */
static ssize_t send_packet(int sk, const void *buf, size_t len, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		m.msg_control = ctl.buf;
		m.msg_controllen = sizeof(ctl.buf);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	do
		n = sendmsg(sk, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n;
}

int rpc_send(const struct rpc_conn *c, const CriuResp *resp)
{
	return rpc_send_fd(c, resp, -1);
}

int rpc_send_fd(const struct rpc_conn *c, const CriuResp *resp, int fd)
{
	size_t len = criu_resp__get_packed_size(resp);
	uint8_t *buf = malloc(len ? len : 1);
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	criu_resp__pack(resp, buf);
	n = send_packet(c->sk, buf, len, fd);
	free(buf);
	if (n < 0)
		return fail(-errno, "cannot send the %s response: %s", rpc_type_name(resp->type),
			    strerror(errno));
	return 0;
}
