/*
 * The network lock (netlock.h): an nftables table per dumped PID, written as
 * nf_tables netlink messages on a socket of memdump's own (no nft process: a
 * worker killed while nft commits leaves nothing half done). Rules drop on the
 * input and output hooks, before conntrack: a remote peer's packets must not
 * reach a socket that is gone, nor may the socket answer them (on loopback
 * both directions pass both hooks). An IPv6 socket's connection to an IPv4
 * peer (v4-mapped) gets IPv4 rules. The expressions are those nft makes of
 * "ip saddr A tcp sport P ip daddr B tcp dport Q drop" (nft lists them so).
 * A namespace the restore makes is locked whole instead (netlock_isolate).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "netlock.h"
#include "nsswitch.h"

#ifndef NETLINK_CAP_ACK
#define NETLINK_CAP_ACK	10
#endif

#define TABLE_FMT	"memdump-lock-%d"
#define PRIORITY	(-300)

/* A batch of netlink messages being built (offsets: the buffer moves). */
struct nlbuf {
	char *p;
	size_t len, cap;
	uint32_t seq, first;		/* the next message's, the batch's first */
	int nr_acked;			/* messages that ask for an answer */
	bool nomem;
};

static void *put(struct nlbuf *b, size_t n)
{
	size_t al = NLMSG_ALIGN(n);
	void *at;

	if (b->nomem)
		return NULL;
	if (b->len + al > b->cap) {
		size_t cap = (b->cap ? b->cap * 2 : 4096) + al;
		char *p = realloc(b->p, cap);

		if (!p) {
			b->nomem = true;
			return NULL;
		}
		b->p = p;
		b->cap = cap;
	}
	at = b->p + b->len;
	memset(at, 0, al);
	b->len += al;
	return at;
}

/* A message's header and nfgenmsg; its offset, for msg_end(). */
static size_t msg_begin(struct nlbuf *b, uint16_t type, uint16_t flags, uint8_t family,
			uint16_t res_id)
{
	size_t off = b->len;
	struct nlmsghdr *h = put(b, NLMSG_HDRLEN);
	struct nfgenmsg *g = put(b, sizeof(*g));

	if (!h || !g)
		return off;
	h = (struct nlmsghdr *)(b->p + off);
	g = (struct nfgenmsg *)(b->p + off + NLMSG_HDRLEN);
	h->nlmsg_type = type;
	h->nlmsg_flags = NLM_F_REQUEST | flags;
	h->nlmsg_seq = b->seq++;
	g->nfgen_family = family;
	g->version = NFNETLINK_V0;
	g->res_id = htons(res_id);
	if (flags & NLM_F_ACK)
		b->nr_acked++;
	return off;
}

static void msg_end(struct nlbuf *b, size_t off)
{
	if (!b->nomem)
		((struct nlmsghdr *)(b->p + off))->nlmsg_len = b->len - off;
}

static size_t nft_msg(struct nlbuf *b, int type, uint16_t flags)
{
	return msg_begin(b, (NFNL_SUBSYS_NFTABLES << 8) | type, NLM_F_ACK | flags, NFPROTO_INET,
			 0);
}

static void attr(struct nlbuf *b, uint16_t type, const void *data, size_t len)
{
	size_t off = b->len;
	struct nlattr *a = put(b, NLA_HDRLEN + len);

	if (!a)
		return;
	a = (struct nlattr *)(b->p + off);
	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	if (len)	/* a nest begins empty: no data */
		memcpy((char *)a + NLA_HDRLEN, data, len);
}

static void attr_u32(struct nlbuf *b, uint16_t type, uint32_t v)
{
	uint32_t be = htonl(v);

	attr(b, type, &be, sizeof(be));
}

static void attr_str(struct nlbuf *b, uint16_t type, const char *s)
{
	attr(b, type, s, strlen(s) + 1);
}

static size_t nest_begin(struct nlbuf *b, uint16_t type)
{
	size_t off = b->len;

	attr(b, type | NLA_F_NESTED, NULL, 0);
	return off;
}

static void nest_end(struct nlbuf *b, size_t off)
{
	if (!b->nomem)
		((struct nlattr *)(b->p + off))->nla_len = b->len - off;
}

/* Expressions: each an element of NFTA_RULE_EXPRESSIONS. */
static size_t expr_begin(struct nlbuf *b, const char *name)
{
	size_t off = nest_begin(b, NFTA_LIST_ELEM);

	attr_str(b, NFTA_EXPR_NAME, name);
	return off;
}

static void expr_meta(struct nlbuf *b, uint32_t key)
{
	size_t e = expr_begin(b, "meta"), d = nest_begin(b, NFTA_EXPR_DATA);

	attr_u32(b, NFTA_META_DREG, NFT_REG_1);
	attr_u32(b, NFTA_META_KEY, key);
	nest_end(b, d);
	nest_end(b, e);
}

static void expr_payload(struct nlbuf *b, uint32_t base, uint32_t offset, uint32_t len)
{
	size_t e = expr_begin(b, "payload"), d = nest_begin(b, NFTA_EXPR_DATA);

	attr_u32(b, NFTA_PAYLOAD_DREG, NFT_REG_1);
	attr_u32(b, NFTA_PAYLOAD_BASE, base);
	attr_u32(b, NFTA_PAYLOAD_OFFSET, offset);
	attr_u32(b, NFTA_PAYLOAD_LEN, len);
	nest_end(b, d);
	nest_end(b, e);
}

/* Register 1 compared (op) with value, or the rule stops here. */
static void expr_cmp_op(struct nlbuf *b, uint32_t op, const void *value, size_t len)
{
	size_t e = expr_begin(b, "cmp"), d = nest_begin(b, NFTA_EXPR_DATA), v;

	attr_u32(b, NFTA_CMP_SREG, NFT_REG_1);
	attr_u32(b, NFTA_CMP_OP, op);
	v = nest_begin(b, NFTA_CMP_DATA);
	attr(b, NFTA_DATA_VALUE, value, len);
	nest_end(b, v);
	nest_end(b, d);
	nest_end(b, e);
}

static void expr_cmp(struct nlbuf *b, const void *value, size_t len)
{
	expr_cmp_op(b, NFT_CMP_EQ, value, len);
}

static void expr_verdict(struct nlbuf *b, uint32_t verdict)
{
	size_t e = expr_begin(b, "immediate"), d = nest_begin(b, NFTA_EXPR_DATA), v, vd;

	attr_u32(b, NFTA_IMMEDIATE_DREG, NFT_REG_VERDICT);
	v = nest_begin(b, NFTA_IMMEDIATE_DATA);
	vd = nest_begin(b, NFTA_DATA_VERDICT);
	attr_u32(b, NFTA_VERDICT_CODE, verdict);
	nest_end(b, vd);
	nest_end(b, v);
	nest_end(b, d);
	nest_end(b, e);
}

/*
 * An IPv6 socket's connection with an IPv4 peer (::ffff:a.b.c.d on both
 * ends) is IPv4 on the wire: its rules must match IPv4 packets.
 */
static bool v4_mapped(const struct netlock_conn *c)
{
	return c->family == AF_INET6 && IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)c->src) &&
	       IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)c->dst);
}

/* "ip[6] saddr FROM tcp sport FP ip[6] daddr TO tcp dport TP drop" */
static void rule_conn(struct nlbuf *b, const char *table, const char *chain,
		      const struct netlock_conn *c, bool reverse)
{
	const uint8_t *from = reverse ? c->dst : c->src, *to = reverse ? c->src : c->dst;
	uint16_t fp = htons(reverse ? c->dport : c->sport), tp = htons(reverse ? c->sport : c->dport);
	bool v4 = c->family == AF_INET || v4_mapped(c);
	uint8_t nfproto = v4 ? NFPROTO_IPV4 : NFPROTO_IPV6, l4 = IPPROTO_TCP;
	size_t alen = v4 ? 4 : 16, skip = v4_mapped(c) ? 12 : 0;
	size_t m = nft_msg(b, NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND), x;

	attr_str(b, NFTA_RULE_TABLE, table);
	attr_str(b, NFTA_RULE_CHAIN, chain);
	x = nest_begin(b, NFTA_RULE_EXPRESSIONS);
	expr_meta(b, NFT_META_NFPROTO);
	expr_cmp(b, &nfproto, 1);
	expr_payload(b, NFT_PAYLOAD_NETWORK_HEADER, v4 ? 12 : 8, alen);
	expr_cmp(b, from + skip, alen);
	expr_meta(b, NFT_META_L4PROTO);
	expr_cmp(b, &l4, 1);
	expr_payload(b, NFT_PAYLOAD_TRANSPORT_HEADER, 0, 2);
	expr_cmp(b, &fp, 2);
	expr_payload(b, NFT_PAYLOAD_NETWORK_HEADER, v4 ? 16 : 24, alen);
	expr_cmp(b, to + skip, alen);
	expr_payload(b, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2);
	expr_cmp(b, &tp, 2);
	expr_verdict(b, NF_DROP);
	nest_end(b, x);
	msg_end(b, m);
}

/* "meta mark NETLOCK_MARK accept": the restore's own segments pass. */
static void rule_mark(struct nlbuf *b, const char *table, const char *chain)
{
	uint32_t mark = NETLOCK_MARK;	/* the skb's mark: host order */
	size_t m = nft_msg(b, NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND), x;

	attr_str(b, NFTA_RULE_TABLE, table);
	attr_str(b, NFTA_RULE_CHAIN, chain);
	x = nest_begin(b, NFTA_RULE_EXPRESSIONS);
	expr_meta(b, NFT_META_MARK);
	expr_cmp(b, &mark, sizeof(mark));
	expr_verdict(b, NF_ACCEPT);
	nest_end(b, x);
	msg_end(b, m);
}

/*
 * "iifname != lo drop" (in) or "oifname != lo drop" (out): a namespace cut
 * off from everything but itself. The kernel copies the name into the
 * register with strncpy: all IFNAMSIZ bytes compare.
 */
static void rule_not_lo(struct nlbuf *b, const char *table, const char *chain, uint32_t hook)
{
	char lo[IF_NAMESIZE] = "lo";
	size_t m = nft_msg(b, NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND), x;

	attr_str(b, NFTA_RULE_TABLE, table);
	attr_str(b, NFTA_RULE_CHAIN, chain);
	x = nest_begin(b, NFTA_RULE_EXPRESSIONS);
	expr_meta(b, hook == NF_INET_LOCAL_IN ? NFT_META_IIFNAME : NFT_META_OIFNAME);
	expr_cmp_op(b, NFT_CMP_NEQ, lo, sizeof(lo));
	expr_verdict(b, NF_DROP);
	nest_end(b, x);
	msg_end(b, m);
}

/*
 * "meta l4proto tcp drop": in a namespace the restore makes, every TCP segment
 * on lo too. Both ends of a connection there are rebuilt one after the
 * other: what the first sends while the second does not exist yet (its FIN,
 * its unsent data, its ACK of the FIN replayed in its peer's name) would be
 * answered by a reset. Only the restore's own marked segments pass.
 */
static void rule_all_tcp(struct nlbuf *b, const char *table, const char *chain)
{
	uint8_t l4 = IPPROTO_TCP;
	size_t m = nft_msg(b, NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND), x;

	attr_str(b, NFTA_RULE_TABLE, table);
	attr_str(b, NFTA_RULE_CHAIN, chain);
	x = nest_begin(b, NFTA_RULE_EXPRESSIONS);
	expr_meta(b, NFT_META_L4PROTO);
	expr_cmp(b, &l4, 1);
	expr_verdict(b, NF_DROP);
	nest_end(b, x);
	msg_end(b, m);
}

/* One base chain per direction: what the peer sends, and what the socket might still send. */
static void chain(struct nlbuf *b, const char *table, const char *name, uint32_t hook,
		  const struct netlock *lk)
{
	size_t m = nft_msg(b, NFT_MSG_NEWCHAIN, NLM_F_CREATE), h;

	attr_str(b, NFTA_CHAIN_TABLE, table);
	attr_str(b, NFTA_CHAIN_NAME, name);
	h = nest_begin(b, NFTA_CHAIN_HOOK);
	attr_u32(b, NFTA_HOOK_HOOKNUM, hook);
	attr_u32(b, NFTA_HOOK_PRIORITY, (uint32_t)PRIORITY);
	nest_end(b, h);
	attr_u32(b, NFTA_CHAIN_POLICY, NF_ACCEPT);
	attr_str(b, NFTA_CHAIN_TYPE, "filter");
	msg_end(b, m);
	rule_mark(b, table, name);
	if (lk->isolate) {
		rule_not_lo(b, table, name, hook);
		rule_all_tcp(b, table, name);
	}
	for (size_t i = 0; i < lk->n; i++) {
		rule_conn(b, table, name, &lk->conns[i], false);
		rule_conn(b, table, name, &lk->conns[i], true);
	}
}

static void table_del(struct nlbuf *b, const char *table)
{
	size_t m = nft_msg(b, NFT_MSG_DELTABLE, 0);

	attr_str(b, NFTA_TABLE_NAME, table);
	msg_end(b, m);
}

/* The table with its two chains; owned by the sending socket or not. */
static void table_add(struct nlbuf *b, const char *table, bool owned, const struct netlock *lk)
{
	size_t m = nft_msg(b, NFT_MSG_NEWTABLE, NLM_F_CREATE | NLM_F_EXCL);

	attr_str(b, NFTA_TABLE_NAME, table);
	attr_u32(b, NFTA_TABLE_FLAGS, owned ? NFT_TABLE_F_OWNER : 0);
	msg_end(b, m);
	chain(b, table, "in", NF_INET_LOCAL_IN, lk);
	chain(b, table, "out", NF_INET_LOCAL_OUT, lk);
}

static void batch_begin(struct nlbuf *b, uint32_t seq)
{
	b->seq = b->first = seq;
	msg_end(b, msg_begin(b, NFNL_MSG_BATCH_BEGIN, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES));
}

static void batch_end(struct nlbuf *b)
{
	msg_end(b, msg_begin(b, NFNL_MSG_BATCH_END, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES));
}

/*
 * The kernel's answers to a batch: one per message (0 or its error); an
 * error for the batch itself ends them. The first error, or 0.
 */
static int read_answers(int sk, const struct nlbuf *b)
{
	char buf[16384] __attribute__((aligned(NLMSG_ALIGNTO)));
	int left = b->nr_acked, err = 0;

	while (left > 0) {
		ssize_t n = recv(sk, buf, sizeof(buf), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			const struct nlmsgerr *e = NLMSG_DATA(h);

			if (h->nlmsg_type != NLMSG_ERROR || h->nlmsg_seq < b->first ||
			    h->nlmsg_seq >= b->seq)
				continue;
			if (e->error && !err)
				err = e->error;
			if (h->nlmsg_seq == b->first || h->nlmsg_seq == b->seq - 1)
				return err ? err : -EIO;	/* the batch as a whole */
			left--;
		}
	}
	return err;
}

static int send_batch(int sk, struct nlbuf *b)
{
	struct sockaddr_nl to = { .nl_family = AF_NETLINK };
	ssize_t n;

	if (b->nomem)
		return -ENOMEM;
	do
		n = sendto(sk, b->p, b->len, 0, (struct sockaddr *)&to, sizeof(to));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return read_answers(sk, b);
}

/* An nf_tables socket in pid's network namespace (where its connections are). */
static int open_socket(pid_t pid)
{
	const struct ns_kind *k = ns_kind_by_name("net");
	int back, ret = ns_enter_pid(pid, k, &back), one = 1, sk;

	if (ret)
		return ret;
	sk = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
	ret = sk < 0 ? -errno : 0;
	ns_return(back, k);
	if (ret)
		return ret;
	setsockopt(sk, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	return sk;
}

static void table_name(char *buf, size_t len, pid_t pid)
{
	snprintf(buf, len, TABLE_FMT, pid);
}

static void netlock_close(struct netlock *lk)
{
	if (lk->sk >= 0)
		close(lk->sk);
	free(lk->conns);
	lk->conns = NULL;
	lk->n = 0;
	lk->sk = -1;
}

int netlock_add(struct netlock *lk, pid_t pid, const struct netlock_conn *conns, size_t n)
{
	struct nlbuf b = { 0 };
	char table[64];
	int ret;

	*lk = (struct netlock){ .sk = -1, .pid = pid, .seq = 1 };
	lk->conns = malloc((n ? n : 1) * sizeof(*conns));
	if (!lk->conns)
		return -ENOMEM;
	memcpy(lk->conns, conns, n * sizeof(*conns));
	lk->n = n;
	table_name(table, sizeof(table), pid);
	ret = lk->sk = open_socket(pid);
	if (ret >= 0) {
		batch_begin(&b, lk->seq);
		table_add(&b, table, true, lk);
		batch_end(&b);
		lk->seq = b.seq;
		ret = send_batch(lk->sk, &b);
	}
	free(b.p);
	if (ret < 0)
		netlock_close(lk);
	if (ret < 0)
		return fail(ret, "cannot lock the network of %zu TCP connection(s) with nftables "
			    "(table inet %s): %s", n, table, strerror(-ret));
	pr_info("network locked for %zu connection(s): table inet %s, owned by the dump\n", n,
		table);
	return 0;
}

/*
 * One transaction on the dump's socket, which is closed after: the owned
 * table deleted, and with plain made again without the owner (so that it
 * outlives memdump). Closing the socket takes the owned table anyway.
 */
static int replace_owned(struct netlock *lk, bool plain, char *table, size_t len)
{
	struct nlbuf b = { 0 };
	int ret;

	table_name(table, len, lk->pid);
	batch_begin(&b, lk->seq);
	table_del(&b, table);
	if (plain)
		table_add(&b, table, false, lk);
	batch_end(&b);
	lk->seq = b.seq;
	ret = send_batch(lk->sk, &b);
	free(b.p);
	netlock_close(lk);
	return ret;
}

int netlock_release(struct netlock *lk)
{
	char table[64];
	int ret;

	if (lk->sk < 0)
		return 0;
	ret = replace_owned(lk, false, table, sizeof(table));
	if (ret < 0)
		pr_warn("cannot delete table inet %s (%s): it goes with the dump's socket\n", table,
			strerror(-ret));
	else
		pr_info("network unlocked: table inet %s removed\n", table);
	return 0;
}

int netlock_keep(struct netlock *lk)
{
	char table[64];
	int ret;

	if (lk->sk < 0)
		return 0;
	ret = replace_owned(lk, true, table, sizeof(table));
	if (ret < 0)
		return fail(ret, "cannot keep the network lock of process %d for the restore "
			    "(table inet %s): %s", lk->pid, table, strerror(-ret));
	pr_info("network lock kept for the restore: table inet %s\n", table);
	return 0;
}

int netlock_isolate(pid_t pid)
{
	struct netlock lk = { .pid = pid, .isolate = true };
	struct nlbuf b = { 0 };
	char table[64];
	int sk = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER), one = 1;
	int ret = sk < 0 ? -errno : 0;

	table_name(table, sizeof(table), pid);
	if (!ret) {
		setsockopt(sk, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
		batch_begin(&b, 1);
		table_add(&b, table, false, &lk);
		batch_end(&b);
		ret = send_batch(sk, &b);
		close(sk);
	}
	free(b.p);
	if (ret < 0)
		return fail(ret, "cannot lock the new network namespace until its TCP connections "
			    "are restored (table inet %s): %s", table, strerror(-ret));
	pr_info("network namespace cut off, TCP on lo too, until its connections are restored: "
		"table inet %s\n", table);
	return 0;
}

int netlock_remove(pid_t pid)
{
	struct nlbuf b = { 0 };
	char table[64];
	int sk = open_socket(pid), ret = sk;

	table_name(table, sizeof(table), pid);
	if (sk >= 0) {
		batch_begin(&b, 1);
		table_del(&b, table);
		batch_end(&b);
		ret = send_batch(sk, &b);
		close(sk);
	}
	free(b.p);
	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return fail(ret, "cannot take the network lock of process %d off (table inet %s): "
			    "%s", pid, table, strerror(-ret));
	pr_info("network unlocked: table inet %s removed\n", table);
	return 1;
}
