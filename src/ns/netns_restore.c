/*
 * A fresh network namespace made as the dump found it (ns.c unshares it on
 * the restoring thread, then calls netns_restore()): lo, then every veth
 * pair with its inside end here (same name, index, MAC, MTU) and its other
 * end in memdump's namespace under the dumped name (or the one --external
 * veth[IN]:OUT gives), with its MAC, MTU and addresses, or attached to the
 * bridge it was a port of (or veth[IN]:OUT@BRIDGE's); then the devices' flags (up), the addresses
 * of ifaddr-1.img and the routes of route-1.img and route6-1.img, sent as
 * they were dumped. The namespace's sysctls (netns_sysctl_restore.c) are
 * written before the devices are made, each device's once it is. Last, the IPv6 addresses made are waited for until their
 * duplicate address detection is over, so that a socket bound to one can be
 * bound again; the kernel's link-local ones only when a dumped socket is
 * bound to a link-local address: their detection takes up to 2 s after the
 * device comes up (a random delay up to a second, then one probe, the
 * kernel's defaults), and ends by itself after the restore otherwise.
 *
 * A failure leaves nothing behind: the namespace dies with the thread's
 * reference to it, and the veth pair with it.
 */
#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <arpa/inet.h>
#include <linux/if_addr.h>
#include <linux/if_bridge.h>
#include <linux/if_link.h>
#include <linux/veth.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "image/image.h"
#include "log.h"
#include "netlock.h"
#include "nsswitch.h"
#include "ctx/restore_ctx.h"
#include "rtnl.h"
#include "spawn_cmd.h"

#include "files.pb-c.h"
#include "netdev.pb-c.h"
#include "ns/netns.h"
#include "ns/netns_sysctl.h"

#define NS_ID		1
#define NS_MAX_DEVS	64
#define DAD_WAIT_MS	5000

struct netns_rst {
	struct rst *r;
	struct rtnl in;			/* the new namespace */
	struct rtnl host;		/* memdump's */
	int host_netns;
	NetDeviceEntry *devs[NS_MAX_DEVS];
	int nr_devs;
};

static int load_devices(struct netns_rst *n)
{
	struct image *img;
	void *e;
	int ret = img_open(n->r->ds.dirfd, IMG_NETDEV, NS_ID, &img);

	if (ret)
		return ret;
	while ((ret = img_read_msg(img, &net_device_entry__descriptor, &e)) == 1) {
		if (n->nr_devs == NS_MAX_DEVS) {
			img_free(&net_device_entry__descriptor, e);
			ret = fail(-E2BIG, "netdev-1.img: more than %d devices", NS_MAX_DEVS);
			break;
		}
		n->devs[n->nr_devs++] = e;
	}
	img_abort(img);
	return ret;
}

static const struct veth_ext *external_of(const struct netns_rst *n, const char *name)
{
	for (int i = 0; i < n->r->o->nr_veth_ext; i++)
		if (!strcmp(n->r->o->veth_ext[i].in, name))
			return &n->r->o->veth_ext[i];
	return NULL;
}

static const char *outside_name(const struct netns_rst *n, const NetDeviceEntry *e)
{
	const struct veth_ext *x = external_of(n, e->name);

	return x ? x->out : e->peer_name;
}

/* ifi_flags and ifi_change for the flags memdump gives back. */
static void want_flags(struct ifinfomsg *ifi, uint32_t flags)
{
	ifi->ifi_change = IFF_UP | IFF_NOARP | IFF_PROMISC | IFF_ALLMULTI;
	ifi->ifi_flags = flags & ifi->ifi_change;
}

static int set_link(struct rtnl *nl, int index, uint32_t flags, uint32_t mtu, int master,
		    const char *name)
{
	struct rtnl_req q;
	struct ifinfomsg *ifi = rtnl_req_init(&q, RTM_NEWLINK, 0, sizeof(*ifi));
	int ret;

	ifi->ifi_index = index;
	want_flags(ifi, flags);
	ret = mtu ? rtnl_add(&q, IFLA_MTU, &mtu, sizeof(mtu)) : 0;
	if (!ret && master)
		ret = rtnl_add(&q, IFLA_MASTER, &master, sizeof(master));
	if (!ret)
		ret = rtnl_talk(nl, &q.h);
	return ret ? fail(ret, "cannot set up network interface %s (flags %#x, mtu %u): %s", name,
			  flags, mtu, strerror(-ret)) : 0;
}

static int on_found(const struct nlmsghdr *h, void *arg)
{
	if (h->nlmsg_type == RTM_NEWLINK)
		*(int *)arg = ((const struct ifinfomsg *)NLMSG_DATA(h))->ifi_index;
	return 0;
}

static int index_of(struct rtnl *nl, const char *name, int *index)
{
	struct rtnl_req q;
	struct ifinfomsg *ifi = rtnl_req_init(&q, RTM_GETLINK, 0, sizeof(*ifi));
	int ret = rtnl_add(&q, IFLA_IFNAME, name, strlen(name) + 1);

	*index = 0;
	if (!ret)
		ret = rtnl_ask(nl, &q.h, on_found, index);
	if (!ret && !*index)
		ret = -ENODEV;
	return ret;
}

/* The inside end of e's pair, its other end made in memdump's namespace. */
static int add_peer_attrs(struct netns_rst *n, struct rtnl_req *q, const NetDeviceEntry *e,
			  const char *out)
{
	struct ifinfomsg *ifi;
	int ret = 0;

	if (!rtnl_reserve(q, sizeof(*ifi)))
		return -ENOSPC;
	ret = rtnl_add(q, IFLA_IFNAME, out, strlen(out) + 1);
	if (!ret)
		ret = rtnl_add(q, IFLA_NET_NS_FD, &n->host_netns, sizeof(n->host_netns));
	if (!ret && e->has_peer_mtu)
		ret = rtnl_add(q, IFLA_MTU, &e->peer_mtu, sizeof(e->peer_mtu));
	if (!ret && e->has_peer_address && e->peer_address.len == 6)
		ret = rtnl_add(q, IFLA_ADDRESS, e->peer_address.data, 6);
	return ret;
}

/*
 * A request making device e of kind: its index, name, MTU and MAC, and
 * IFLA_LINKINFO open with IFLA_INFO_KIND (*info, for rtnl_nest_end); 0 or -ENOSPC.
 */
static int new_link(struct rtnl_req *q, const NetDeviceEntry *e, const char *kind,
		    struct rtattr **info)
{
	struct ifinfomsg *ifi = rtnl_req_init(q, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL,
					      sizeof(*ifi));
	int ret;

	ifi->ifi_index = (int)e->ifindex;
	ret = rtnl_add(q, IFLA_IFNAME, e->name, strlen(e->name) + 1);
	ret = ret ?: rtnl_add(q, IFLA_MTU, &e->mtu, sizeof(e->mtu));
	if (!ret && e->has_address && e->address.len == 6)
		ret = rtnl_add(q, IFLA_ADDRESS, e->address.data, 6);
	*info = ret ? NULL : rtnl_nest(q, IFLA_LINKINFO);
	return *info ? rtnl_add(q, IFLA_INFO_KIND, kind, strlen(kind) + 1) : -ENOSPC;
}

static int create_veth(struct netns_rst *n, const NetDeviceEntry *e, const char *out)
{
	struct rtnl_req q;
	struct rtattr *info, *data, *peer;
	int ret = new_link(&q, e, "veth", &info);

	data = ret ? NULL : rtnl_nest(&q, IFLA_INFO_DATA);
	peer = data ? rtnl_nest(&q, VETH_INFO_PEER) : NULL;
	ret = peer ? add_peer_attrs(n, &q, e, out) : -ENOSPC;
	if (ret)
		return fail(ret, "veth %s: request too large", e->name);
	rtnl_nest_end(&q, peer);
	rtnl_nest_end(&q, data);
	rtnl_nest_end(&q, info);
	ret = rtnl_talk(&n->in, &q.h);
	if (ret == -EEXIST)
		return fail(ret, "cannot create veth %s (index %u) with its other end %s: a device %s "
			    "exists in memdump's network namespace", e->name, e->ifindex, out, out);
	return ret ? fail(ret, "cannot create veth %s (index %u) with its other end %s: %s",
			  e->name, e->ifindex, out, strerror(-ret)) : 0;
}

/* msg into q with type and creation flags; the IFA_LABEL of an address dropped if drop_label. */
static int copy_msg(struct rtnl_req *q, const void *msg, size_t len, int type, bool drop_label)
{
	const struct nlmsghdr *h = msg;
	const size_t head = NLMSG_LENGTH(sizeof(struct ifaddrmsg));
	const struct rtattr *a = (const void *)((const char *)msg + NLMSG_ALIGN(head));
	size_t left = len - NLMSG_ALIGN(head);

	if (len < head || len > sizeof(*q) || h->nlmsg_len != len)
		return -EIO;
	memcpy(q, msg, drop_label ? NLMSG_ALIGN(head) : len);
	q->h.nlmsg_len = drop_label ? NLMSG_ALIGN(head) : len;
	q->h.nlmsg_type = type;
	q->h.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	for (; drop_label && RTA_OK(a, left); a = RTA_NEXT(a, left))
		if (a->rta_type != IFA_LABEL && rtnl_add(q, a->rta_type, RTA_DATA(a), RTA_PAYLOAD(a)))
			return -EIO;
	return 0;
}

/*
 * One address or route as dumped (into device index if not 0). One that is
 * there already was made by the kernel with the device or the address: the same.
 */
static int add_msg(struct rtnl *nl, const void *msg, size_t len, int type, int index,
		   bool drop_label)
{
	struct rtnl_req q;
	int ret = copy_msg(&q, msg, len, type, drop_label);

	if (ret)
		return ret;
	if (index)
		((struct ifaddrmsg *)NLMSG_DATA(&q.h))->ifa_index = index;
	ret = rtnl_talk(nl, &q.h);
	return ret == -EEXIST ? 0 : ret;
}

/* The other end: found by name, into its bridge or given its addresses, then up. */
static int setup_outside(struct netns_rst *n, const NetDeviceEntry *e, const char *out)
{
	const struct veth_ext *x = external_of(n, e->name);
	const char *bridge = x && x->bridge ? x->bridge : e->peer_master;
	int index, master = 0, ret = index_of(&n->host, out, &index);

	if (ret)
		return fail(ret, "veth %s: its other end %s is not in memdump's network namespace",
			    e->name, out);
	if (bridge && (ret = index_of(&n->host, bridge, &master)))
		return fail(ret, "veth %s: no bridge %s in memdump's network namespace to attach %s "
			    "to", e->name, bridge, out);
	for (size_t i = 0; !ret && !master && i < e->n_peer_ifaddr; i++) {
		/* renamed (--external): its IPv4 addresses' label is the old name */
		ret = add_msg(&n->host, e->peer_ifaddr[i].data, e->peer_ifaddr[i].len,
			      RTM_NEWADDR, index, strcmp(out, e->peer_name ? e->peer_name : ""));
		if (ret)
			return fail(ret, "cannot give %s (the other end of veth %s) its address: %s",
				    out, e->name, strerror(-ret));
	}
	return set_link(&n->host, index, e->has_peer_flags ? e->peer_flags : IFF_UP, 0, master,
			out);
}

/*
 * The dumped options as sent: the boolean options (IFLA_BR_MULTI_BOOLOPT)
 * only those on, as a new bridge has every one off and a kernel without VLAN
 * filtering refuses to touch some even to turn them off.
 */
static int add_bridge_opts(struct rtnl_req *q, const NetDeviceEntry *e)
{
	const struct rtattr *a = (const void *)e->bridge_opts.data;
	size_t left = e->bridge_opts.len;
	int ret = 0;

	for (; !ret && RTA_OK(a, left); a = RTA_NEXT(a, left)) {
		int type = a->rta_type & NLA_TYPE_MASK;
		struct br_boolopt_multi bo;

		if (type != IFLA_BR_MULTI_BOOLOPT || RTA_PAYLOAD(a) != sizeof(bo)) {
			ret = rtnl_add(q, type, RTA_DATA(a), RTA_PAYLOAD(a));
			continue;
		}
		memcpy(&bo, RTA_DATA(a), sizeof(bo));
		bo.optmask = bo.optval;
		ret = bo.optval ? rtnl_add(q, type, &bo, sizeof(bo)) : 0;
	}
	return ret;
}

/* A bridge with its index, name, MAC, MTU and dumped options. */
static int create_bridge(struct netns_rst *n, const NetDeviceEntry *e)
{
	struct rtnl_req q;
	struct rtattr *info, *data;
	int ret = new_link(&q, e, "bridge", &info);

	data = ret ? NULL : rtnl_nest(&q, IFLA_INFO_DATA);
	ret = data ? add_bridge_opts(&q, e) : -ENOSPC;
	if (ret)
		return fail(ret, "bridge %s: request too large", e->name);
	rtnl_nest_end(&q, data);
	rtnl_nest_end(&q, info);
	ret = rtnl_talk(&n->in, &q.h);
	return ret ? fail(ret, "cannot create bridge %s (index %u): %s", e->name, e->ifindex,
			  strerror(-ret)) : 0;
}

struct bridge_seen {
	const NetDeviceEntry *e;
	int differs;		/* the first option not as dumped, 0: none; -1: no options */
};

/* The dumped option a (IFLA_BR_*) as the made bridge has it in data? */
static bool same_opt(const struct rtattr *a, const struct rtattr *data)
{
	size_t left = RTA_PAYLOAD(data);

	for (const struct rtattr *b = RTA_DATA(data); RTA_OK(b, left); b = RTA_NEXT(b, left))
		if ((b->rta_type & NLA_TYPE_MASK) == (a->rta_type & NLA_TYPE_MASK))
			return RTA_PAYLOAD(a) == RTA_PAYLOAD(b) &&
			       !memcmp(RTA_DATA(a), RTA_DATA(b), RTA_PAYLOAD(a));
	return false;
}

static int on_bridge(const struct nlmsghdr *h, void *arg)
{
	struct bridge_seen *s = arg;
	const struct ifinfomsg *ifi = NLMSG_DATA(h);
	struct rtattr *tb[IFLA_MAX + 1], *li[IFLA_INFO_MAX + 1];
	const struct rtattr *a;
	size_t left = s->e->bridge_opts.len;

	if (h->nlmsg_type != RTM_NEWLINK)
		return 0;
	rtnl_parse(tb, IFLA_MAX, IFLA_RTA(ifi), IFLA_PAYLOAD(h));
	s->differs = -1;
	if (!tb[IFLA_LINKINFO])
		return 0;
	rtnl_parse(li, IFLA_INFO_MAX, RTA_DATA(tb[IFLA_LINKINFO]), RTA_PAYLOAD(tb[IFLA_LINKINFO]));
	if (!li[IFLA_INFO_DATA])
		return 0;
	s->differs = 0;
	for (a = (const void *)s->e->bridge_opts.data; RTA_OK(a, left); a = RTA_NEXT(a, left))
		if (!same_opt(a, li[IFLA_INFO_DATA])) {
			s->differs = a->rta_type & NLA_TYPE_MASK;
			break;
		}
	return 0;
}

/* Every dumped option of the bridge as the kernel now has it: else the restore fails. */
static int check_bridge(struct netns_rst *n, const NetDeviceEntry *e)
{
	struct rtnl_req q;
	struct ifinfomsg *ifi = rtnl_req_init(&q, RTM_GETLINK, 0, sizeof(*ifi));
	struct bridge_seen s = { .e = e, .differs = -1 };
	int ret;

	ifi->ifi_index = (int)e->ifindex;
	ret = rtnl_ask(&n->in, &q.h, on_bridge, &s);
	if (ret)
		return fail(ret, "cannot read bridge %s back: %s", e->name, strerror(-ret));
	if (s.differs)
		return fail(-EIO, "bridge %s: its option %d (IFLA_BR_*) is not as dumped once made",
			    e->name, s.differs);
	return 0;
}

/*
 * A macvlan: made in memdump's namespace on its lower device (the dumped
 * one, or --external macvlan[NAME]:DEV's) straight into this namespace
 * (IFLA_NET_NS_FD), with its index, name, MAC, MTU, mode, flags and queue.
 */
static int create_macvlan(struct netns_rst *n, const NetDeviceEntry *e)
{
	const struct veth_ext *x = external_of(n, e->name);
	const char *lower = x && x->macvlan ? x->out : e->peer_name;
	struct rtnl_req q;
	struct rtattr *info, *data;
	int link = 0, self, ret;
	uint16_t flags = (uint16_t)e->macvlan_flags;

	if (!lower || !*lower || !e->has_macvlan_mode)
		return fail(-EIO, "netdev-1.img: macvlan %s without its lower device or mode",
			    e->name);
	ret = index_of(&n->host, lower, &link);
	if (ret)
		return fail(ret, "macvlan %s: no device %s in memdump's network namespace to "
			    "make it on", e->name, lower);
	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return fail(-errno, "cannot open the network namespace being made: %m");
	ret = new_link(&q, e, "macvlan", &info);
	data = ret ? NULL : rtnl_nest(&q, IFLA_INFO_DATA);
	ret = data ? rtnl_add(&q, IFLA_MACVLAN_MODE, &e->macvlan_mode, 4) : -ENOSPC;
	ret = ret ?: rtnl_add(&q, IFLA_MACVLAN_FLAGS, &flags, sizeof(flags));
	if (!ret && e->has_macvlan_bcq)
		ret = rtnl_add(&q, IFLA_MACVLAN_BC_QUEUE_LEN, &e->macvlan_bcq, 4);
	if (ret) {
		close(self);
		return fail(ret, "macvlan %s: request too large", e->name);
	}
	rtnl_nest_end(&q, data);
	rtnl_nest_end(&q, info);
	ret = rtnl_add(&q, IFLA_LINK, &link, sizeof(link));
	ret = ret ?: rtnl_add(&q, IFLA_NET_NS_FD, &self, sizeof(self));
	ret = ret ?: rtnl_talk(&n->host, &q.h);
	close(self);
	return ret ? fail(ret, "cannot create macvlan %s (index %u) on %s: %s", e->name,
			  e->ifindex, lower, strerror(-ret)) : 0;
}

static int make_device(struct netns_rst *n, const NetDeviceEntry *e)
{
	const char *out = outside_name(n, e);
	int ret;

	if (e->type == ND_TYPE__LOOPBACK && !strcmp(e->name, "lo"))
		return set_link(&n->in, (int)e->ifindex, e->flags, e->mtu, 0, "lo");
	if (e->type == ND_TYPE__BRIDGE) {
		ret = create_bridge(n, e);
		ret = ret ? ret : check_bridge(n, e);
		ret = ret ? ret : set_link(&n->in, (int)e->ifindex, e->flags, 0, 0, e->name);
		if (!ret)
			pr_info("net namespace: bridge %s (index %u)\n", e->name, e->ifindex);
		return ret;
	}
	if (e->type == ND_TYPE__MACVLAN) {
		ret = create_macvlan(n, e);
		ret = ret ? ret : set_link(&n->in, (int)e->ifindex, e->flags, 0, 0, e->name);
		if (!ret)
			pr_info("net namespace: macvlan %s (index %u)\n", e->name, e->ifindex);
		return ret;
	}
	if (e->type != ND_TYPE__VETH)
		return fail(-EOPNOTSUPP, "netdev-1.img: device %s of type %d (memdump makes lo, "
			    "veth, bridge and macvlan devices only)", e->name, e->type);
	if (!out || !*out)
		return fail(-EIO, "netdev-1.img: veth %s without its other end's name", e->name);
	ret = create_veth(n, e, out);
	if (!ret)
		ret = setup_outside(n, e, out);
	if (!ret)
		ret = set_link(&n->in, (int)e->ifindex, e->flags, 0, 0, e->name);
	if (!ret)
		pr_info("net namespace: veth %s (index %u), other end %s\n", e->name, e->ifindex,
			out);
	return ret;
}

/* ------------------------------------------------------------------ addresses and routes */

static int read_at(int fd, void *buf, size_t len, off_t *pos)
{
	ssize_t got = pread(fd, buf, len, *pos);

	if (got != (ssize_t)len)
		return got < 0 ? -errno : -EIO;
	*pos += len;
	return 0;
}

/* Every message of an `ip addr save` / `ip route save` image, sent as type. */
static int replay(struct netns_rst *n, enum img_type t, uint32_t magic, int type)
{
	struct rtnl_req q;
	struct stat st;
	char name[64];
	off_t pos = 0;
	uint32_t m = 0;
	int fd, ret;

	img_name(t, NS_ID, name, sizeof(name));
	if (faccessat(n->r->ds.dirfd, name, F_OK, 0))
		return 0;	/* a dump of lo alone by an older memdump */
	fd = img_open_file(n->r->ds.dirfd, name, 0);
	if (fd < 0)
		return fd;
	ret = fstat(fd, &st) ? -errno : read_at(fd, &m, sizeof(m), &pos);
	if (!ret && m != magic)
		ret = fail(-EIO, "%s: magic %#x, not iproute2's %#x", name, m, magic);
	while (!ret && pos < st.st_size) {
		ret = read_at(fd, &q.h, sizeof(q.h), &pos);
		if (!ret && (q.h.nlmsg_len < NLMSG_LENGTH(sizeof(struct ifaddrmsg)) ||
			     q.h.nlmsg_len > sizeof(q)))
			ret = -EIO;
		if (!ret)
			ret = read_at(fd, q.body, NLMSG_ALIGN(q.h.nlmsg_len) - sizeof(q.h), &pos);
		if (ret == -EIO)
			ret = fail(ret, "%s is truncated or corrupt at byte %lld", name,
				   (long long)pos);
		if (!ret && (ret = add_msg(&n->in, &q, q.h.nlmsg_len, type, 0, false)))
			ret = fail(ret, "%s: cannot add %s %lld: %s", name,
				   type == RTM_NEWADDR ? "the address at byte" : "the route at byte",
				   (long long)pos, strerror(-ret));
	}
	close(fd);
	return ret;
}

struct dad {
	bool kernel_ll;			/* the kernel's link-local addresses too */
	int tentative;
	char failed[80];
};

static int on_dad(const struct nlmsghdr *h, void *arg)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	struct rtattr *tb[IFA_MAX + 1];
	struct dad *d = arg;
	uint32_t flags;

	if (h->nlmsg_type != RTM_NEWADDR || ifa->ifa_family != AF_INET6)
		return 0;
	rtnl_parse_msg(tb, IFA_MAX, h, sizeof(*ifa));
	flags = tb[IFA_FLAGS] ? *(uint32_t *)RTA_DATA(tb[IFA_FLAGS]) : ifa->ifa_flags;
	if (!d->kernel_ll && tb[IFA_PROTO] &&
	    *(uint8_t *)RTA_DATA(tb[IFA_PROTO]) == IFAPROT_KERNEL_LL)
		return 0;
	if ((flags & IFA_F_DADFAILED) && tb[IFA_ADDRESS])
		inet_ntop(AF_INET6, RTA_DATA(tb[IFA_ADDRESS]), d->failed, sizeof(d->failed));
	else if (flags & IFA_F_TENTATIVE)
		d->tentative++;
	return 0;
}

/* Whether a dumped socket is bound to an IPv6 link-local address (fe80::/10). */
static bool binds_link_local(const struct netns_rst *n)
{
	for (size_t i = 0; i < n->r->ds.nr_files; i++) {
		const InetSkEntry *sk = n->r->ds.files[i]->isk;

		if (sk && sk->family == AF_INET6 && sk->n_src_addr == 4 &&
		    (ntohl(sk->src_addr[0]) & 0xffc00000) == 0xfe800000)
			return true;
	}
	return false;
}

static int wait_dad(struct netns_rst *n)
{
	bool kernel_ll = binds_link_local(n);

	struct timespec tick = { 0, 20 * 1000 * 1000 };

	for (int waited = 0;; waited += 20) {
		struct rtnl_req q;
		struct ifaddrmsg *ifa = rtnl_req_init(&q, RTM_GETADDR, 0, sizeof(*ifa));
		struct dad d = { kernel_ll, 0, "" };
		int ret;

		ifa->ifa_family = AF_INET6;
		ret = rtnl_dump(&n->in, &q.h, on_dad, &d);
		if (ret)
			return fail(ret, "cannot list the restored addresses: %s", strerror(-ret));
		if (d.failed[0])
			return fail(-EADDRINUSE, "IPv6 address %s failed duplicate address detection "
				    "in the restored network namespace", d.failed);
		if (!d.tentative)
			return 0;
		if (waited >= DAD_WAIT_MS)
			return fail(-ETIMEDOUT, "%d IPv6 address(es) still tentative after %d ms",
				    d.tentative, waited);
		nanosleep(&tick, NULL);
	}
}

/* ------------------------------------------------------------------ the whole namespace */

static int check_externals(const struct netns_rst *n)
{
	for (int i = 0; i < n->r->o->nr_veth_ext; i++) {
		const char *in = n->r->o->veth_ext[i].in;
		bool found = false;

		bool mv = n->r->o->veth_ext[i].macvlan;

		for (int j = 0; j < n->nr_devs; j++)
			found |= n->devs[j]->type == (mv ? ND_TYPE__MACVLAN : ND_TYPE__VETH) &&
				 !strcmp(n->devs[j]->name, in);
		if (!found)
			return fail(-ENOENT, "--external %s[%s]: the dump has no %s %s",
				    mv ? "macvlan" : "veth", in, mv ? "macvlan" : "veth", in);
	}
	return 0;
}

/*
 * empty_ns CLONE_NEWNET (runc sends it for docker, whose hook puts the
 * container's interface into the namespace): lo as dumped, and none of the
 * dumped devices, addresses or routes, which would clash with the runtime's.
 */
static int restore_lo_only(struct netns_rst *n)
{
	int ret = rtnl_open(&n->in);

	for (int i = 0; !ret && i < n->nr_devs; i++)
		if (n->devs[i]->type == ND_TYPE__LOOPBACK && !strcmp(n->devs[i]->name, "lo"))
			ret = make_device(n, n->devs[i]);
	if (!ret)
		pr_info("net namespace: lo only (empty_ns): the runtime sets up the rest\n");
	return ret;
}

/* Whether dir holds a tcp-stream image (a connection rebuilt in repair mode); sub: its proc-PID too. */
static bool has_tcp_stream(int dirfd, bool sub)
{
	DIR *d = fdopendir(dup(dirfd));
	struct dirent *e;
	bool found = false;

	while (d && !found && (e = readdir(d))) {
		if (!strncmp(e->d_name, "tcp-stream-", 11))
			found = true;
		else if (sub && !strncmp(e->d_name, "proc-", 5)) {
			int fd = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			found = fd >= 0 && has_tcp_stream(fd, false);
			if (fd >= 0)
				close(fd);
		}
	}
	if (d)
		closedir(d);
	return found;
}

/*
 * Before any device is up: connections to be rebuilt here keep their peers
 * outside retransmitting (no reset from a namespace without their sockets
 * yet), and those with both ends here hear nothing of each other while one
 * end is rebuilt before the other, until the release after the restore's
 * commit point takes the lock off (golive.c).
 */
static int isolate(struct netns_rst *n)
{
	int ret;

	if (!has_tcp_stream(n->r->ds.dirfd, true))
		return 0;
	ret = netlock_isolate(n->r->pid);
	if (!ret)
		n->r->net_isolated = true;
	return ret;
}

/*
 * The firewall: nftables tables (`nft -f`) and legacy iptables tables with
 * their counters (`ip[6]tables-legacy-restore -c`), each image given to the
 * program on its standard input, run in this thread's namespace, the new one.
 */
static int restore_firewall(struct rst *r)
{
	static const struct { enum img_type t; char *argv[4]; } progs[] = {
		{ IMG_NFTABLES, { "nft", "-f", "-", NULL } },
		{ IMG_IPTABLES, { "iptables-legacy-restore", "-c", NULL } },
		{ IMG_IP6TABLES, { "ip6tables-legacy-restore", "-c", NULL } },
	};
	int ret = 0;

	for (size_t i = 0; !ret && i < ARRAY_SIZE(progs); i++) {
		char name[64], err[256] = "";
		int fd;

		img_name(progs[i].t, NS_ID, name, sizeof(name));
		if (faccessat(r->ds.dirfd, name, F_OK, 0))
			continue;
		fd = img_open_file(r->ds.dirfd, name, 0);
		if (fd < 0)
			return fd;
		ret = spawn_capture(progs[i].argv, fd, NULL, NULL, err, sizeof(err));
		close(fd);
		if (ret)
			ret = fail(ret, "cannot restore the network namespace's firewall (%s) with %s: %s",
				   name, progs[i].argv[0], err[0] ? err : strerror(-ret));
		else
			pr_info("net namespace: firewall of %s restored\n", name);
	}
	return ret;
}

static int restore_all(struct netns_rst *n)
{
	int ret = load_devices(n);

	if (!ret && n->r->o->empty_net)
		return n->r->o->nr_veth_ext ? fail(-EINVAL, "--external veth[%s]: the network "
						   "namespace is restored empty (empty_ns)",
						   n->r->o->veth_ext[0].in)
					    : restore_lo_only(n);
	if (!ret)
		ret = check_externals(n);
	if (!ret)
		ret = isolate(n);
	if (!ret && !n->r->net_isolated)	/* else netns_firewall_late() */
		ret = restore_firewall(n->r);
	if (!ret)
		ret = rtnl_open(&n->in);
	if (!ret)
		ret = rtnl_open_in(&n->host, n->host_netns);
	if (!ret)
		ret = netns_sysctl_restore(n->r->ds.dirfd);
	for (int i = 0; !ret && i < n->nr_devs; i++)
		ret = make_device(n, n->devs[i]) ?: netns_sysctl_restore_dev(n->devs[i]);
	if (!ret)
		ret = replay(n, IMG_IFADDR, IPROUTE_ADDR_MAGIC, RTM_NEWADDR);
	if (!ret)
		ret = replay(n, IMG_ROUTE, IPROUTE_ROUTE_MAGIC, RTM_NEWROUTE);
	if (!ret)
		ret = replay(n, IMG_ROUTE6, IPROUTE_ROUTE_MAGIC, RTM_NEWROUTE);
	if (!ret)
		ret = wait_dad(n);
	return ret;
}

/*
 * The firewall of a namespace cut off (isolate): after its connections are
 * rebuilt, before the lock comes off. The segments the rebuild sends in a
 * peer's name (a FIN received: tcp_peer_restore.c) carry the lock's mark,
 * which the lock's table accepts, but a rule of the process's (zdtm
 * socket-tcp-closed-last-ack: INPUT to its port dropped) would drop them
 * still: no base chain's accept binds another's. Nothing else passes before
 * the release (the lock drops all but lo, and all TCP; the processes are
 * parked), and the rules' counters do not count the rebuild.
 */
int netns_firewall_late(struct rst *r)
{
	const struct ns_kind *k = ns_kind_by_name("net");
	int back, ret;

	if (!r->net_isolated)
		return 0;
	ret = ns_enter_pid(r->pid, k, &back);
	if (ret)
		return fail(ret, "cannot enter the network namespace of process %d to restore "
			    "its firewall", r->pid);
	ret = restore_firewall(r);
	ns_return(back, k);
	return ret;
}

int netns_restore(struct rst *r, int host_netns)
{
	struct netns_rst *n = calloc(1, sizeof(*n));
	int ret;

	if (!n)
		return -ENOMEM;
	n->r = r;
	n->host_netns = host_netns;
	n->in.fd = n->host.fd = -1;
	ret = restore_all(n);
	rtnl_close(&n->in);
	rtnl_close(&n->host);
	for (int i = 0; i < n->nr_devs; i++)
		img_free(&net_device_entry__descriptor, n->devs[i]);
	free(n);
	return ret;
}
