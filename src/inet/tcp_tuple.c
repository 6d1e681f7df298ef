/*
 * Who holds a TCP address pair in the kernel's table of connections, asked
 * of sock_diag for that one pair (inet_diag's exact lookup, in the calling
 * thread's network namespace): a connection over is rebuilt by a connect()
 * to its peer from its own address, which fails while the pair is taken,
 * by the TIME_WAIT of a connection closed both ways from this end, or by
 * another socket since.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>

#include "inet/sk_inet.h"

static void fill_end(const struct sockaddr_storage *ss, __be16 *port, __be32 *addr)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;

		*port = a->sin_port;
		memcpy(addr, &a->sin_addr, 4);
	} else {
		const struct sockaddr_in6 *a = (const void *)ss;

		*port = a->sin6_port;
		memcpy(addr, &a->sin6_addr, 16);
	}
}

static int ask(int nl, const struct sockaddr_storage *local, const struct sockaddr_storage *peer)
{
	struct {
		struct nlmsghdr h;
		struct inet_diag_req_v2 r;
	} q;
	struct sockaddr_nl k = { .nl_family = AF_NETLINK };

	memset(&q, 0, sizeof(q));
	q.h.nlmsg_len = sizeof(q);
	q.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	q.h.nlmsg_flags = NLM_F_REQUEST;
	q.r.sdiag_family = local->ss_family;
	q.r.sdiag_protocol = IPPROTO_TCP;
	q.r.idiag_states = ~0u;
	q.r.id.idiag_cookie[0] = q.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	fill_end(local, &q.r.id.idiag_sport, q.r.id.idiag_src);
	fill_end(peer, &q.r.id.idiag_dport, q.r.id.idiag_dst);
	return sendto(nl, &q, sizeof(q), 0, (struct sockaddr *)&k, sizeof(k)) < 0 ? -errno : 0;
}

static int answer(int nl)
{
	union {
		struct nlmsghdr h;
		char buf[8192];
	} a;
	ssize_t n = recv(nl, &a, sizeof(a), 0);
	const struct inet_diag_msg *m = NLMSG_DATA(&a.h);
	const struct nlmsgerr *e = NLMSG_DATA(&a.h);

	if (n < 0)
		return -errno;
	if (n < (ssize_t)sizeof(a.h) || !NLMSG_OK(&a.h, (size_t)n))
		return -EIO;
	if (a.h.nlmsg_type == NLMSG_ERROR)
		return e->error ? e->error : -ENOENT;
	if (a.h.nlmsg_type != SOCK_DIAG_BY_FAMILY || a.h.nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
		return -EIO;
	return m->idiag_state;
}

int tcp_tuple_state(const struct sockaddr_storage *local, const struct sockaddr_storage *peer)
{
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG), ret;

	if (nl < 0)
		return -errno;
	ret = ask(nl, local, peer);
	if (!ret)
		ret = answer(nl);
	close(nl);
	return ret;
}
