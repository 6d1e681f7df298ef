/* Describing sockets by inode with sock_diag (NETLINK_SOCK_DIAG) and libnl. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <netlink/netlink.h>
#include <netlink/msg.h>

#include "dump/sockets.h"

struct query {
	uint64_t ino;
	char *buf;
	size_t len;
	const char *proto;	/* TCP, UDP: for inet answers */
	int found;
};

static const char *tcp_state(int s)
{
	static const char *names[] = { "?", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1",
				       "FIN_WAIT2", "TIME_WAIT", "CLOSE", "CLOSE_WAIT",
				       "LAST_ACK", "LISTEN", "CLOSING" };

	return s > 0 && s < (int)(sizeof(names) / sizeof(names[0])) ? names[s] : "?";
}

static void inet_answer(struct query *q, const struct inet_diag_msg *m)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];

	inet_ntop(m->idiag_family, m->id.idiag_src, src, sizeof(src));
	inet_ntop(m->idiag_family, m->id.idiag_dst, dst, sizeof(dst));
	snprintf(q->buf, q->len, "a %s%s socket %s:%u -> %s:%u %s", q->proto,
		 m->idiag_family == AF_INET6 ? "v6" : "", src, ntohs(m->id.idiag_sport), dst,
		 ntohs(m->id.idiag_dport), q->proto[0] == 'T' ? tcp_state(m->idiag_state) : "");
}

static void unix_answer(struct query *q, const struct unix_diag_msg *m, int len)
{
	const char *type = m->udiag_type == SOCK_STREAM ? "stream" :
			   m->udiag_type == SOCK_DGRAM ? "datagram" : "seqpacket";
	struct rtattr *a = (struct rtattr *)(m + 1);
	const char *name = "(unnamed)";

	len -= sizeof(*m);
	for (; RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == UNIX_DIAG_NAME && RTA_PAYLOAD(a) > 0)
			name = *(char *)RTA_DATA(a) ? (char *)RTA_DATA(a) : "(abstract)";
	snprintf(q->buf, q->len, "a UNIX %s socket %s", type, name);
}

static int on_msg(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *h = nlmsg_hdr(msg);
	struct query *q = arg;
	int family = *(uint8_t *)nlmsg_data(h);

	if (q->found)
		return NL_OK;
	if (family == AF_UNIX) {
		const struct unix_diag_msg *m = nlmsg_data(h);

		if (m->udiag_ino == q->ino) {
			unix_answer(q, m, nlmsg_datalen(h));
			q->found = 1;
		}
	} else {
		const struct inet_diag_msg *m = nlmsg_data(h);

		if (m->idiag_inode == q->ino) {
			inet_answer(q, m);
			q->found = 1;
		}
	}
	return NL_OK;
}

static void ask(struct nl_sock *sk, struct query *q, const void *req, size_t len)
{
	if (q->found || nl_send_simple(sk, SOCK_DIAG_BY_FAMILY, NLM_F_DUMP, (void *)req, len) < 0)
		return;
	nl_recvmsgs_default(sk);
}

void socket_describe(uint64_t ino, char *buf, size_t len)
{
	struct query q = { .ino = ino, .buf = buf, .len = len };
	struct unix_diag_req ureq = { .sdiag_family = AF_UNIX, .udiag_states = ~0U,
				      .udiag_show = UDIAG_SHOW_NAME };
	static const struct { int family, proto; const char *name; } inet[] = {
		{ AF_INET, IPPROTO_TCP, "TCP" }, { AF_INET6, IPPROTO_TCP, "TCP" },
		{ AF_INET, IPPROTO_UDP, "UDP" }, { AF_INET6, IPPROTO_UDP, "UDP" },
	};
	struct nl_sock *sk = nl_socket_alloc();

	snprintf(buf, len, "a socket");
	if (!sk)
		return;
	if (nl_connect(sk, NETLINK_SOCK_DIAG) < 0) {
		nl_socket_free(sk);
		return;
	}
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, on_msg, &q);
	ask(sk, &q, &ureq, sizeof(ureq));
	for (size_t i = 0; i < sizeof(inet) / sizeof(inet[0]); i++) {
		struct inet_diag_req_v2 req = { .sdiag_family = inet[i].family,
						.sdiag_protocol = inet[i].proto,
						.idiag_states = ~0U };

		q.proto = inet[i].name;
		ask(sk, &q, &req, sizeof(req));
	}
	nl_socket_free(sk);
}
