/* rtnetlink, raw (rtnl.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "nsswitch.h"
#include "rtnl.h"

int rtnl_open(struct rtnl *n)
{
	int ret = nl_open_proto(n, NETLINK_ROUTE);

	return ret ? fail(ret, "cannot open an rtnetlink socket: %s", strerror(-ret)) : 0;
}

int nl_open_proto(struct rtnl *n, int proto)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int one = 1;

	n->seq = 1;
	n->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, proto);
	if (n->fd < 0)
		return -errno;
	/* an error's ack without a copy of the whole request */
	setsockopt(n->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	if (bind(n->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int ret = -errno;

		close(n->fd);
		n->fd = -1;
		return ret;
	}
	return 0;
}

void rtnl_close(struct rtnl *n)
{
	if (n->fd >= 0)
		close(n->fd);
	n->fd = -1;
}

static int send_req(struct rtnl *n, struct nlmsghdr *h)
{
	h->nlmsg_seq = n->seq++;
	h->nlmsg_pid = 0;
	if (send(n->fd, h, h->nlmsg_len, 0) != (ssize_t)h->nlmsg_len)
		return fail(-errno, "cannot send an rtnetlink request: %s", strerror(errno));
	return 0;
}

/*
 * Every message answering seq, to cb, until NLMSG_DONE (dump) or the ack.
 * Returns 0, cb's non-zero value, or the kernel's -errno.
 */
static int receive_one(const struct nlmsghdr *h, size_t got, uint32_t seq, rtnl_cb cb,
		       void *arg, bool *done)
{
	for (; NLMSG_OK(h, got); h = NLMSG_NEXT(h, got)) {
		int ret;

		if (h->nlmsg_seq != seq)
			continue;
		*done = true;
		if (h->nlmsg_type == NLMSG_DONE)
			return 0;
		if (h->nlmsg_type == NLMSG_ERROR)
			return ((const struct nlmsgerr *)NLMSG_DATA(h))->error;
		ret = cb ? cb(h, arg) : 0;
		if (ret)
			return ret;
		*done = false;
	}
	return 0;
}

/*
 * Every message answering seq, to cb, until NLMSG_DONE (dump) or the ack.
 * Returns 0, cb's non-zero value, or the kernel's -errno.
 */
static int receive(struct rtnl *n, uint32_t seq, rtnl_cb cb, void *arg)
{
	const size_t len = 1 << 16;	/* more than the kernel puts in one dump skb */
	char *buf = malloc(len);
	bool done = false;
	int ret = buf ? 0 : -ENOMEM;

	while (!ret && !done) {
		ssize_t got = recv(n->fd, buf, len, 0);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			ret = fail(-errno, "cannot read rtnetlink: %s", strerror(errno));
		else
			ret = receive_one((const struct nlmsghdr *)buf, got, seq, cb, arg, &done);
	}
	free(buf);
	return ret;
}

int rtnl_dump(struct rtnl *n, struct nlmsghdr *req, rtnl_cb cb, void *arg)
{
	int ret;

	req->nlmsg_flags |= NLM_F_REQUEST | NLM_F_DUMP;
	ret = send_req(n, req);
	if (!ret)
		ret = receive(n, req->nlmsg_seq, cb, arg);
	/* what a callback that stopped left unread is skipped by the next receive (seq) */
	return ret;
}

int rtnl_talk(struct rtnl *n, const struct nlmsghdr *req)
{
	return rtnl_ask(n, req, NULL, NULL);
}

int rtnl_ask(struct rtnl *n, const struct nlmsghdr *req, rtnl_cb cb, void *arg)
{
	struct rtnl_req copy;
	int ret;

	if (req->nlmsg_len > sizeof(copy))
		return -EMSGSIZE;
	memcpy(&copy, req, req->nlmsg_len);
	copy.h.nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	ret = send_req(n, &copy.h);
	return ret ? ret : receive(n, copy.h.nlmsg_seq, cb, arg);
}

void *rtnl_req_init(struct rtnl_req *r, int type, int flags, size_t len)
{
	memset(r, 0, NLMSG_SPACE(len));
	r->h.nlmsg_len = NLMSG_LENGTH(len);
	r->h.nlmsg_type = type;
	r->h.nlmsg_flags = flags;
	return NLMSG_DATA(&r->h);
}

int rtnl_add(struct rtnl_req *r, int type, const void *data, size_t len)
{
	size_t at = NLMSG_ALIGN(r->h.nlmsg_len);
	struct rtattr *a = (struct rtattr *)((char *)&r->h + at);

	if (at + RTA_SPACE(len) > sizeof(*r))
		return -ENOSPC;
	a->rta_type = type;
	a->rta_len = RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(a), data, len);
	r->h.nlmsg_len = at + RTA_SPACE(len);
	return 0;
}

struct rtattr *rtnl_nest(struct rtnl_req *r, int type)
{
	struct rtattr *a = (struct rtattr *)((char *)&r->h + NLMSG_ALIGN(r->h.nlmsg_len));

	if (rtnl_add(r, type, NULL, 0))
		return NULL;
	return a;
}

void *rtnl_reserve(struct rtnl_req *r, size_t len)
{
	size_t at = NLMSG_ALIGN(r->h.nlmsg_len);
	char *p = (char *)&r->h + at;

	if (at + NLMSG_ALIGN(len) > sizeof(*r))
		return NULL;
	memset(p, 0, NLMSG_ALIGN(len));
	r->h.nlmsg_len = at + NLMSG_ALIGN(len);
	return p;
}

int rtnl_open_in(struct rtnl *n, int netns)
{
	const struct ns_kind *k = ns_kind_by_name("net");
	int back, ret = ns_enter_fd(netns, k, &back);

	if (ret)
		return ret;
	ret = rtnl_open(n);
	ns_return(back, k);
	return ret;
}

void rtnl_nest_end(struct rtnl_req *r, struct rtattr *nest)
{
	nest->rta_len = (unsigned short)((char *)&r->h + r->h.nlmsg_len - (char *)nest);
}

void rtnl_parse(struct rtattr **tb, int max, const struct rtattr *rta, size_t len)
{
	memset(tb, 0, (max + 1) * sizeof(*tb));
	for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
		int t = rta->rta_type & NLA_TYPE_MASK;

		if (t <= max && !tb[t])
			tb[t] = (struct rtattr *)rta;
	}
}

void rtnl_parse_msg(struct rtattr **tb, int max, const struct nlmsghdr *h, size_t hlen)
{
	const struct rtattr *a = (const void *)((const char *)NLMSG_DATA(h) + NLMSG_ALIGN(hlen));
	ssize_t len = (ssize_t)h->nlmsg_len - (ssize_t)NLMSG_LENGTH(NLMSG_ALIGN(hlen));

	rtnl_parse(tb, max, a, len > 0 ? (size_t)len : 0);
}
