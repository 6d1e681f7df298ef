/*
 * The table of every UNIX, TCP and UDP socket of memdump's network namespace,
 * by inode, from sock_diag (NETLINK_SOCK_DIAG) through libnl: one dump
 * request per family and protocol.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <netlink/netlink.h>
#include <netlink/msg.h>

#include "common.h"
#include "dump/sockets.h"
#include "log.h"

struct loader {
	struct sk_table *t;
	int proto;		/* inet answers */
	int err;
};

static struct sk_diag *new_entry(struct loader *l)
{
	struct sk_diag *v = realloc(l->t->v, (l->t->n + 1) * sizeof(*v));

	if (!v) {
		l->err = -ENOMEM;
		return NULL;
	}
	l->t->v = v;
	v = &v[l->t->n++];
	memset(v, 0, sizeof(*v));
	return v;
}

static void unix_attr(struct sk_diag *s, const struct rtattr *a)
{
	const void *p = RTA_DATA(a);
	size_t len = RTA_PAYLOAD(a);

	switch (a->rta_type) {
	case UNIX_DIAG_NAME:
		s->name_len = MIN(len, sizeof(s->name));
		memcpy(s->name, p, s->name_len);
		if (s->name_len && s->name[0])	/* a path: without its NUL, if bound with one */
			s->name_len = strnlen(s->name, s->name_len);
		break;
	case UNIX_DIAG_VFS: {
		const struct unix_diag_vfs *v = p;

		s->vfs_ino = v->udiag_vfs_ino;
		s->vfs_dev = v->udiag_vfs_dev;
		s->has_vfs = true;
		break;
	}
	case UNIX_DIAG_PEER:
		s->peer = *(const uint32_t *)p;
		break;
	case UNIX_DIAG_ICONS:
		s->nr_icons = len / sizeof(uint32_t);
		break;
	case UNIX_DIAG_RQLEN: {
		const struct unix_diag_rqlen *q = p;

		s->rqueue = q->udiag_rqueue;
		s->wqueue = q->udiag_wqueue;
		break;
	}
	case UNIX_DIAG_SHUTDOWN:
		s->shutdown = *(const uint8_t *)p;
		break;
	}
}

static void unix_answer(struct loader *l, const struct unix_diag_msg *m, int len)
{
	struct sk_diag *s = new_entry(l);
	struct rtattr *a = (struct rtattr *)(m + 1);

	if (!s)
		return;
	s->ino = m->udiag_ino;
	s->family = AF_UNIX;
	s->type = m->udiag_type;
	s->state = m->udiag_state;
	len -= sizeof(*m);
	for (; RTA_OK(a, len); a = RTA_NEXT(a, len))
		unix_attr(s, a);
}

static void inet_answer(struct loader *l, const struct inet_diag_msg *m, int len)
{
	struct sk_diag *s;
	struct rtattr *a = (struct rtattr *)(m + 1);

	if (!m->idiag_inode)
		return;		/* TIME_WAIT and request sockets: no fd */
	s = new_entry(l);
	if (!s)
		return;
	s->ino = m->idiag_inode;
	s->family = m->idiag_family;
	s->proto = l->proto;
	s->type = l->proto == IPPROTO_TCP ? SOCK_STREAM : SOCK_DGRAM;
	s->state = m->idiag_state;
	s->rqueue = m->idiag_rqueue;
	s->wqueue = m->idiag_wqueue;
	memcpy(s->src, m->id.idiag_src, 16);
	memcpy(s->dst, m->id.idiag_dst, 16);
	s->sport = ntohs(m->id.idiag_sport);
	s->dport = ntohs(m->id.idiag_dport);
	len -= sizeof(*m);
	for (; RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == INET_DIAG_SHUTDOWN)
			s->shutdown = *(const uint8_t *)RTA_DATA(a);
}

static int on_msg(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *h = nlmsg_hdr(msg);
	struct loader *l = arg;

	if (*(uint8_t *)nlmsg_data(h) == AF_UNIX)
		unix_answer(l, nlmsg_data(h), nlmsg_datalen(h));
	else
		inet_answer(l, nlmsg_data(h), nlmsg_datalen(h));
	return l->err ? NL_STOP : NL_OK;
}

static int ask(struct nl_sock *sk, struct loader *l, const void *req, size_t len)
{
	int ret = nl_send_simple(sk, SOCK_DIAG_BY_FAMILY, NLM_F_DUMP, (void *)req, len);

	if (ret >= 0)
		ret = nl_recvmsgs_default(sk);
	if (l->err)
		return l->err;
	return ret < 0 ? fail(-EIO, "sock_diag: %s", nl_geterror(ret)) : 0;
}

int sk_table_load(struct sk_table *t)
{
	struct loader l = { .t = t };
	struct unix_diag_req ureq = {
		.sdiag_family = AF_UNIX, .udiag_states = ~0U,
		.udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_VFS | UDIAG_SHOW_PEER |
			      UDIAG_SHOW_ICONS | UDIAG_SHOW_RQLEN,
	};
	static const struct { int family, proto; } inet[] = {
		{ AF_INET, IPPROTO_TCP }, { AF_INET6, IPPROTO_TCP },
		{ AF_INET, IPPROTO_UDP }, { AF_INET6, IPPROTO_UDP },
	};
	struct nl_sock *sk = nl_socket_alloc();
	int ret;

	memset(t, 0, sizeof(*t));
	if (!sk)
		return -ENOMEM;
	ret = nl_connect(sk, NETLINK_SOCK_DIAG);
	if (ret < 0) {
		nl_socket_free(sk);
		return fail(-EIO, "cannot open sock_diag: %s", nl_geterror(ret));
	}
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, on_msg, &l);
	ret = ask(sk, &l, &ureq, sizeof(ureq));
	for (size_t i = 0; !ret && i < ARRAY_SIZE(inet); i++) {
		struct inet_diag_req_v2 req = { .sdiag_family = inet[i].family,
						.sdiag_protocol = inet[i].proto,
						.idiag_states = ~0U,
						.idiag_ext = 1 << (INET_DIAG_SHUTDOWN - 1) };

		l.proto = inet[i].proto;
		ret = ask(sk, &l, &req, sizeof(req));
	}
	nl_socket_free(sk);
	if (ret)
		sk_table_free(t);
	return ret;
}

const struct sk_diag *sk_table_find(const struct sk_table *t, uint64_t ino)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].ino == ino)
			return &t->v[i];
	return NULL;
}

void sk_table_free(struct sk_table *t)
{
	free(t->v);
	t->v = NULL;
	t->n = 0;
}
