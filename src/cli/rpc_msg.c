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

int rpc_send(const struct rpc_conn *c, const CriuResp *resp)
{
	size_t len = criu_resp__get_packed_size(resp);
	uint8_t *buf = malloc(len ? len : 1);
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	criu_resp__pack(resp, buf);
	do
		n = send(c->sk, buf, len, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	free(buf);
	if (n < 0)
		return fail(-errno, "cannot send the %s response: %s", rpc_type_name(resp->type),
			    strerror(errno));
	return 0;
}
