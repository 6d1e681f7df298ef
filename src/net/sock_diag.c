/*
 * The table of every UNIX, TCP, UDP, UDP-lite, raw, netlink and packet socket
 * of memdump's network namespace, by inode, from sock_diag
 * (NETLINK_SOCK_DIAG) through libnl: one dump request per family and
 * protocol (raw: every protocol; netlink: all protocols; packet: every type).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/inet_diag.h>
#include <linux/netlink_diag.h>
#include <linux/packet_diag.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <netlink/netlink.h>
#include <netlink/msg.h>

#include "common.h"
#include "net/sock.h"
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

static void unix_attr(struct loader *l, struct sk_diag *s, const struct rtattr *a)
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
		s->icons = calloc(s->nr_icons + 1, sizeof(uint32_t));
		if (s->icons)
			memcpy(s->icons, p, s->nr_icons * sizeof(uint32_t));
		else
			l->err = -ENOMEM;
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
		unix_attr(l, s, a);
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
	if (l->proto == IPPROTO_RAW) {	/* raw_diag: every raw socket, its protocol the port */
		s->type = SOCK_RAW;
		s->proto = ntohs(m->id.idiag_sport);
	}
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

static int nl_groups(struct sk_diag *s, const struct rtattr *a)
{
	size_t n = RTA_PAYLOAD(a) / sizeof(uint32_t);

	s->groups = calloc(n + 1, sizeof(uint32_t));
	if (!s->groups)
		return -ENOMEM;
	memcpy(s->groups, RTA_DATA(a), n * sizeof(uint32_t));
	s->nr_groups = n;
	return 0;
}

static void netlink_attr(struct loader *l, struct sk_diag *s, const struct rtattr *a)
{
	switch (a->rta_type) {
	case NETLINK_DIAG_GROUPS:
		if (nl_groups(s, a))
			l->err = -ENOMEM;
		break;
	case NETLINK_DIAG_MEMINFO:
		if (RTA_PAYLOAD(a) >= (SK_MEMINFO_RMEM_ALLOC + 1) * sizeof(uint32_t)) {
			s->rqueue = ((const uint32_t *)RTA_DATA(a))[SK_MEMINFO_RMEM_ALLOC];
			s->has_rmem = true;
		}
		break;
	case NETLINK_DIAG_FLAGS:
		if (RTA_PAYLOAD(a) >= sizeof(uint32_t))
			s->nl_flags = *(const uint32_t *)RTA_DATA(a);
		break;
	}
}

static void netlink_answer(struct loader *l, const struct netlink_diag_msg *m, int len)
{
	struct sk_diag *s;
	struct rtattr *a = (struct rtattr *)(m + 1);

	if (!m->ndiag_ino)
		return;
	s = new_entry(l);
	if (!s)
		return;
	s->ino = m->ndiag_ino;
	s->family = AF_NETLINK;
	s->type = m->ndiag_type;
	s->proto = m->ndiag_protocol;
	s->state = m->ndiag_state;
	s->portid = m->ndiag_portid;
	s->dst_portid = m->ndiag_dst_portid;
	s->dst_group = m->ndiag_dst_group;
	len -= sizeof(*m);
	for (; RTA_OK(a, len) && !l->err; a = RTA_NEXT(a, len))
		netlink_attr(l, s, a);
}

static void *dup_attr(struct loader *l, const struct rtattr *a, size_t min)
{
	void *p;

	if (RTA_PAYLOAD(a) < min)
		return NULL;
	p = malloc(RTA_PAYLOAD(a));
	if (!p)
		l->err = -ENOMEM;
	else
		memcpy(p, RTA_DATA(a), RTA_PAYLOAD(a));
	return p;
}

static void packet_attr(struct loader *l, struct sk_diag *s, const struct rtattr *a)
{
	struct sk_packet_diag *pk = s->pk;
	size_t len = RTA_PAYLOAD(a);

	switch (a->rta_type) {
	case PACKET_DIAG_INFO:
		memcpy(&pk->info, RTA_DATA(a), MIN(len, sizeof(pk->info)));
		break;
	case PACKET_DIAG_MCLIST:
		pk->mc = len ? dup_attr(l, a, sizeof(*pk->mc)) : NULL;
		pk->nr_mc = pk->mc ? len / sizeof(*pk->mc) : 0;
		break;
	case PACKET_DIAG_RX_RING:
	case PACKET_DIAG_TX_RING: {
		bool rx = a->rta_type == PACKET_DIAG_RX_RING;

		memcpy(rx ? &pk->rx : &pk->tx, RTA_DATA(a), MIN(len, sizeof(pk->rx)));
		*(rx ? &pk->has_rx : &pk->has_tx) = true;
		break;
	}
	case PACKET_DIAG_FANOUT:
		if (len >= sizeof(uint32_t)) {
			pk->fanout = *(const uint32_t *)RTA_DATA(a);
			pk->has_fanout = true;
		}
		break;
	case PACKET_DIAG_MEMINFO:
		if (len >= (SK_MEMINFO_RMEM_ALLOC + 1) * sizeof(uint32_t)) {
			s->rqueue = ((const uint32_t *)RTA_DATA(a))[SK_MEMINFO_RMEM_ALLOC];
			s->has_rmem = true;
		}
		break;
	}
}

static void packet_answer(struct loader *l, const struct packet_diag_msg *m, int len)
{
	struct sk_diag *s;
	struct rtattr *a = (struct rtattr *)(m + 1);

	if (!m->pdiag_ino)
		return;
	s = new_entry(l);
	if (!s)
		return;
	s->ino = m->pdiag_ino;
	s->family = AF_PACKET;
	s->type = m->pdiag_type;
	s->pk = calloc(1, sizeof(*s->pk));
	if (!s->pk) {
		l->err = -ENOMEM;
		return;
	}
	s->pk->num = m->pdiag_num;
	s->proto = m->pdiag_num;
	len -= sizeof(*m);
	for (; RTA_OK(a, len) && !l->err; a = RTA_NEXT(a, len))
		packet_attr(l, s, a);
}

static int on_msg(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *h = nlmsg_hdr(msg);
	struct loader *l = arg;

	if (*(uint8_t *)nlmsg_data(h) == AF_UNIX)
		unix_answer(l, nlmsg_data(h), nlmsg_datalen(h));
	else if (*(uint8_t *)nlmsg_data(h) == AF_NETLINK)
		netlink_answer(l, nlmsg_data(h), nlmsg_datalen(h));
	else if (*(uint8_t *)nlmsg_data(h) == AF_PACKET)
		packet_answer(l, nlmsg_data(h), nlmsg_datalen(h));
	else
		inet_answer(l, nlmsg_data(h), nlmsg_datalen(h));
	return l->err ? NL_STOP : NL_OK;
}

/* One dump request: 0, -ENOMEM, or libnl's error (< 0, nl_geterror names it) in *nlerr. */
static int ask_raw(struct nl_sock *sk, struct loader *l, const void *req, size_t len, int *nlerr)
{
	int ret = nl_send_simple(sk, SOCK_DIAG_BY_FAMILY, NLM_F_DUMP, (void *)req, len);

	if (ret >= 0)
		ret = nl_recvmsgs_default(sk);
	*nlerr = ret < 0 ? ret : 0;
	if (l->err)
		return l->err;
	return ret < 0 ? -EIO : 0;
}

static int ask(struct nl_sock *sk, struct loader *l, const void *req, size_t len)
{
	int nlerr, ret = ask_raw(sk, l, req, len, &nlerr);

	return ret == -EIO ? fail(-EIO, "sock_diag: %s", nl_geterror(nlerr)) : ret;
}

/*
 * UDP-lite, raw, netlink and packet sockets need modules a kernel may lack
 * (udp_diag, raw_diag, netlink_diag, packet_diag): without them their sockets
 * are not in the table, and a netlink or packet socket is refused as not in
 * sock_diag.
 */
static int ask_optional(struct nl_sock *sk, struct loader *l, const void *req, size_t len,
			const char *what)
{
	int nlerr, ret = ask_raw(sk, l, req, len, &nlerr);

	if (ret != -EIO)
		return ret;
	pr_debug("sock_diag has no %s sockets: %s\n", what, nl_geterror(nlerr));
	return 0;
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
		{ AF_INET, IPPROTO_UDPLITE }, { AF_INET6, IPPROTO_UDPLITE },
		{ AF_INET, IPPROTO_RAW }, { AF_INET6, IPPROTO_RAW },
	};
	struct netlink_diag_req nreq = {
		.sdiag_family = AF_NETLINK, .sdiag_protocol = NDIAG_PROTO_ALL,
		.ndiag_show = NDIAG_SHOW_GROUPS | NDIAG_SHOW_MEMINFO | NDIAG_SHOW_FLAGS,
	};
	struct packet_diag_req preq = {
		.sdiag_family = AF_PACKET,
		.pdiag_show = PACKET_SHOW_INFO | PACKET_SHOW_MCLIST | PACKET_SHOW_RING_CFG |
			      PACKET_SHOW_FANOUT | PACKET_SHOW_MEMINFO,
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
		bool opt = inet[i].proto == IPPROTO_UDPLITE || inet[i].proto == IPPROTO_RAW;
		struct inet_diag_req_v2 req = { .sdiag_family = inet[i].family,
						.sdiag_protocol = inet[i].proto,
						.idiag_states = ~0U,
						.idiag_ext = 1 << (INET_DIAG_SHUTDOWN - 1) };

		l.proto = inet[i].proto;
		ret = opt ? ask_optional(sk, &l, &req, sizeof(req), "UDP-lite or raw") :
			    ask(sk, &l, &req, sizeof(req));
	}
	if (!ret)
		ret = ask_optional(sk, &l, &nreq, sizeof(nreq), "netlink");
	if (!ret)
		ret = ask_optional(sk, &l, &preq, sizeof(preq), "packet");
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
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].groups);
		free(t->v[i].icons);
		if (t->v[i].pk)
			free(t->v[i].pk->mc);
		free(t->v[i].pk);
	}
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

const char *sk_state_name(int s)
{
	static const char *names[] = { "?", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1",
				       "FIN_WAIT2", "TIME_WAIT", "CLOSE", "CLOSE_WAIT",
				       "LAST_ACK", "LISTEN", "CLOSING" };

	return s > 0 && s < (int)(sizeof(names) / sizeof(names[0])) ? names[s] : "?";
}
