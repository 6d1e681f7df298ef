/*
 * Netlink sockets, any protocol: sock_diag (netlink_diag) gives the port id,
 * the destination, the groups, the receive queue's memory and whether a dump
 * is running; the SOL_NETLINK options are read from the copy of the fd. A
 * socket with messages queued, or with a netlink dump in progress (its state
 * is the kernel's), is refused. CRIU's netlink_sk_entry.
 *
 * Only protocols whose kernel side keeps nothing per port id beyond the
 * socket are dumped: route, uevent, generic (but what a family keeps for a
 * port id, see docs/restore.md), sock_diag, xfrm, usersock. Netfilter (queue and log
 * bindings), audit (the daemon's port id), the connector and the others keep
 * state memdump cannot see, which the target's death releases: refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <linux/netlink.h>
#include <linux/sockios.h>
#include <unistd.h>
#include <linux/netlink_diag.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "ctx/file_desc.h"
#include "net/sock.h"
#include "image/image.h"
#include "log.h"

#include "files.pb-c.h"

/* The SOL_NETLINK options kept, as bits of netlink_sk_entry.nl_opts. */
static const int nl_options[] = {
	NETLINK_PKTINFO, NETLINK_BROADCAST_ERROR, NETLINK_NO_ENOBUFS, NETLINK_LISTEN_ALL_NSID,
	NETLINK_CAP_ACK, NETLINK_EXT_ACK, NETLINK_GET_STRICT_CHK,
};

static const char *proto_name(int p)
{
	static const char *names[] = {
		[NETLINK_ROUTE] = "route", [NETLINK_USERSOCK] = "usersock",
		[NETLINK_FIREWALL] = "firewall", [NETLINK_SOCK_DIAG] = "sock_diag",
		[NETLINK_NFLOG] = "nflog", [NETLINK_XFRM] = "xfrm", [NETLINK_SELINUX] = "selinux",
		[NETLINK_ISCSI] = "iscsi", [NETLINK_AUDIT] = "audit",
		[NETLINK_FIB_LOOKUP] = "fib_lookup", [NETLINK_CONNECTOR] = "connector",
		[NETLINK_NETFILTER] = "netfilter", [NETLINK_IP6_FW] = "ip6_fw",
		[NETLINK_DNRTMSG] = "dnrtmsg", [NETLINK_KOBJECT_UEVENT] = "uevent",
		[NETLINK_GENERIC] = "generic", [NETLINK_SCSITRANSPORT] = "scsitransport",
		[NETLINK_ECRYPTFS] = "ecryptfs", [NETLINK_RDMA] = "rdma", [NETLINK_CRYPTO] = "crypto",
		[NETLINK_SMC] = "smc",
	};

	return p >= 0 && p < (int)ARRAY_SIZE(names) && names[p] ? names[p] : "other";
}

/* "a netlink route socket (protocol 0) port 1234 -> 0 group 0" */
void sk_netlink_describe(const struct sk_diag *s, char *buf, size_t len)
{
	snprintf(buf, len, "a netlink %s socket (protocol %d) port %d%s", proto_name(s->proto),
		 s->proto, (int)s->portid, s->state == 1 ? " connected" : "");
}

static bool protocol_dumped(int proto)
{
	return proto == NETLINK_ROUTE || proto == NETLINK_KOBJECT_UEVENT ||
	       proto == NETLINK_GENERIC || proto == NETLINK_SOCK_DIAG || proto == NETLINK_XFRM ||
	       proto == NETLINK_USERSOCK;
}

/* 1: the socket is of memdump's network namespace, 0: of another, <0: unknown. */
static int own_netns(int copy)
{
	struct stat mine, its;
	int ns = ioctl(copy, SIOCGSKNS);

	if (ns < 0)
		return -errno;
	if (fstat(ns, &its) || stat("/proc/self/ns/net", &mine)) {
		close(ns);
		return -errno;
	}
	close(ns);
	return its.st_ino == mine.st_ino && its.st_dev == mine.st_dev;
}

static uint32_t bound_portid(int copy)
{
	struct sockaddr_nl a = { 0 };
	socklen_t l = sizeof(a);

	return getsockname(copy, (struct sockaddr *)&a, &l) ? ~0u : a.nl_pid;
}

void sk_netlink_describe_fd(int copy, char *buf, size_t len)
{
	struct sk_diag s = { .family = AF_NETLINK, .portid = bound_portid(copy) };
	socklen_t l = sizeof(s.proto);

	getsockopt(copy, SOL_SOCKET, SO_PROTOCOL, &s.proto, &l);
	sk_netlink_describe(&s, buf, len);
}

const char *sk_netlink_unsupported(int copy, const struct sk_diag *s, char *buf, size_t len)
{
	int proto = -1, own = own_netns(copy);
	socklen_t l = sizeof(proto);

	getsockopt(copy, SOL_SOCKET, SO_PROTOCOL, &proto, &l);
	if (!protocol_dumped(proto)) {
		return "the kernel keeps state for its port id that memdump cannot see (it dumps "
		       "netlink route, uevent, generic, sock_diag, xfrm and usersock sockets)";
	}
	if (own < 0)
		return "its network namespace cannot be read (SIOCGSKNS)";
	if (!own)
		return "it belongs to another network namespace";
	if (!s)		/* sock_diag lists bound sockets only: an unbound one has no state */
		return bound_portid(copy) == 0 ? NULL : "it is not in sock_diag (netlink_diag)";
	if (s->nl_flags & NDIAG_FLAG_CB_RUNNING)
		return "a netlink dump is in progress on it (the kernel holds its state)";
	if (!s->has_rmem)
		return "sock_diag does not show its receive queue";
	if (s->rqueue) {
		snprintf(buf, len, "%u bytes of messages queued, which memdump does not dump",
			 s->rqueue);
		return buf;
	}
	if (s->state == 1 && s->dst_group > 32) {
		snprintf(buf, len, "connected to group %u, which connect() cannot name",
			 s->dst_group);
		return buf;
	}
	return NULL;
}

static int read_options(int copy, struct sk_netlink *nl)
{
	for (size_t i = 0; i < ARRAY_SIZE(nl_options); i++) {
		int v = 0;
		socklen_t l = sizeof(v);

		if (getsockopt(copy, SOL_NETLINK, nl_options[i], &v, &l)) {
			if (errno == ENOPROTOOPT)
				continue;	/* an option this kernel has not */
			return fail(-errno, "cannot read netlink option %d: %s", nl_options[i],
				    strerror(errno));
		}
		if (v)
			nl->opts |= 1u << nl_options[i];
	}
	return 0;
}

static int copy_groups(const struct sk_diag *s, struct sk_netlink *nl)
{
	size_t n = s->nr_groups;

	while (n && !s->groups[n - 1])
		n--;		/* no trailing empty words */
	if (!n)
		return 0;
	nl->groups = calloc(n, sizeof(uint32_t));
	if (!nl->groups)
		return -ENOMEM;
	memcpy(nl->groups, s->groups, n * sizeof(uint32_t));
	nl->nr_groups = n;
	return 0;
}

int sk_netlink_collect(int copy, const struct sk_diag *s, struct sk_state *st)
{
	struct sk_netlink *nl = &st->nl;
	socklen_t l = sizeof(int);

	if (getsockopt(copy, SOL_SOCKET, SO_TYPE, &nl->type, &l))
		return fail(-errno, "cannot read a netlink socket's type: %s", strerror(errno));
	l = sizeof(int);
	if (getsockopt(copy, SOL_SOCKET, SO_PROTOCOL, &nl->proto, &l))
		return fail(-errno, "cannot read a netlink socket's protocol: %s", strerror(errno));
	if (s) {
		nl->state = s->state;
		nl->portid = s->portid;
		nl->dst_portid = s->dst_portid;
		nl->dst_group = s->dst_group;
		if (copy_groups(s, nl))
			return -ENOMEM;
	}
	return read_options(copy, nl);
}

int sk_netlink_write(const struct file_desc *f, struct image *files)
{
	const struct sk_netlink *nl = &f->sk->nl;
	FileEntry fe = FILE_ENTRY__INIT;
	NetlinkSkEntry e = NETLINK_SK_ENTRY__INIT;
	FownEntry fown = FOWN_ENTRY__INIT;
	SkOptsEntry opts = SK_OPTS_ENTRY__INIT;

	sk_opts_fill(&f->sk->opts, &opts);
	e.id = f->id;
	e.ino = f->sk->ino;
	e.protocol = nl->proto;
	e.state = nl->state;
	e.flags = f->flags;
	e.portid = nl->portid;
	e.n_groups = nl->nr_groups;
	e.groups = nl->groups;
	e.dst_portid = nl->dst_portid;
	e.dst_group = nl->dst_group;
	fd_owner_fill(&fown, &f->fown);
	e.fown = &fown;
	e.opts = &opts;
	e.has_nl_opts = true;
	e.nl_opts = nl->opts;
	e.has_type = true;
	e.type = nl->type;
	fe.type = FD_TYPES__NETLINKSK;
	fe.id = f->id;
	fe.nlsk = &e;
	return img_write_msg(files, &fe.base);
}
