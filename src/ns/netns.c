/*
 * A network namespace of the target's own: its loopback and veth devices,
 * their addresses and the routes of the main tables, read over rtnetlink
 * from inside (dump.c runs the whole dump on a thread in the namespace, so
 * the sockets are looked up where they live too).
 *
 * Images, as CRIU writes them: netdev-1.img (a net_device_entry per device;
 * for a veth, the end outside in memdump's namespace in memdump's fields),
 * ifaddr-1.img, route-1.img and route6-1.img, which CRIU fills with `ip
 * addr save` / `ip route save`: iproute2's magic, then the kernel's
 * RTM_NEWADDR / RTM_NEWROUTE messages as dumped (`ip addr showdump` reads
 * them).
 *
 * Left out because they come back by themselves: lo's 127.0.0.1/8 and ::1,
 * IPv6 link-local addresses the kernel made from the MAC (checked), and the
 * kernel's routes (connected and local ones). Refused by name: other device
 * kinds, a veth whose other end is anywhere but memdump's namespace,
 * addresses and routes from router advertisements, routes of other tables
 * or through nexthop objects, policy routing rules, qdiscs, permanent
 * neighbour entries, nftables tables and legacy iptables tables. The
 * namespace's sysctls and its devices' are saved with them (netns_sysctl.c:
 * netns-1.img, and each device's entry).
 */
#include <errno.h>
#include <net/if.h>
#include <arpa/inet.h>
#include <linux/if_addr.h>
#include <linux/if_arp.h>
#include <linux/if_link.h>
#include <linux/fib_rules.h>
#include <linux/neighbour.h>
#include <linux/net_namespace.h>
#include <linux/pkt_sched.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nf_tables.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "ns/netns.h"
#include "ns/netns_sysctl.h"
#include "ctx/refusals.h"
#include "image/image.h"
#include "log.h"
#include "nsswitch.h"
#include "proc.h"
#include "rtnl.h"
#include "spawn_cmd.h"

#include "netdev.pb-c.h"

#define NS_ID		1
#define NS_MAX_LINKS	64

struct nslink {
	int index;
	char name[IF_NAMESIZE];
	unsigned char mac[6];
	bool has_mac;
	bool saved;			/* lo or a veth: its sysctls go with it */
	bool bridge;			/* a bridge: no link-local address of the kernel's */
};

#define NS_MAX_TABLES	64

struct nft_table {
	const char *family;		/* nft's name of it: ip, ip6, inet, arp, bridge, netdev */
	char name[64];
};

/* One reading of the namespace: the refusal pass (img NULL) or the dump. */
struct netns_read {
	struct rtnl nl;			/* in the target's namespace */
	int host_netns;			/* memdump's own, open */
	int host_nsid;			/* memdump's namespace as the target's numbers it, or -1 */
	struct refusals *r;
	struct img_dir *dir;		/* the dump: where the images go */
	struct image *img;		/* the image being written */
	struct nslink links[NS_MAX_LINKS];
	int nr_links;
	struct nft_table tables[NS_MAX_TABLES];	/* nftables tables, memdump's lock left out */
	int nr_tables;
	int ret;			/* the first error of a callback */
};

static const struct nslink *link_of(const struct netns_read *n, int index)
{
	for (int i = 0; i < n->nr_links; i++)
		if (n->links[i].index == index)
			return &n->links[i];
	return NULL;
}

static const char *link_name(const struct netns_read *n, int index)
{
	const struct nslink *l = link_of(n, index);

	return l ? l->name : "?";
}

static void addr_text(int family, const struct rtattr *a, int plen, char *buf, size_t len)
{
	char s[INET6_ADDRSTRLEN] = "?";

	if (a)
		inet_ntop(family, RTA_DATA(a), s, sizeof(s));
	snprintf(buf, len, "%s/%d", s, plen);
}

/* ------------------------------------------------------------------ memdump's namespace */

/* The id the target's namespace gives memdump's (RTM_GETNSID with its fd). */
static int on_nsid(const struct nlmsghdr *h, void *arg)
{
	struct rtattr *tb[NETNSA_MAX + 1];

	if (h->nlmsg_type != RTM_NEWNSID)
		return 0;
	rtnl_parse_msg(tb, NETNSA_MAX, h, sizeof(struct rtgenmsg));
	if (tb[NETNSA_NSID])
		*(int *)arg = *(int *)RTA_DATA(tb[NETNSA_NSID]);
	return 0;
}

static int host_nsid(struct netns_read *n)
{
	struct rtnl_req q;
	struct rtgenmsg *g = rtnl_req_init(&q, RTM_GETNSID, 0, sizeof(*g));
	int fd = n->host_netns;

	g->rtgen_family = AF_UNSPEC;
	n->host_nsid = -1;
	if (fd < 0)
		return 0;
	rtnl_add(&q, NETNSA_FD, &fd, sizeof(fd));
	return rtnl_ask(&n->nl, &q.h, on_nsid, &n->host_nsid);
}

/* ------------------------------------------------------------------ devices */

static void link_kind(const struct rtattr *linkinfo, char *kind, size_t len)
{
	struct rtattr *li[IFLA_INFO_MAX + 1];

	snprintf(kind, len, "%s", "no kind");
	if (!linkinfo)
		return;
	rtnl_parse(li, IFLA_INFO_MAX, RTA_DATA(linkinfo), RTA_PAYLOAD(linkinfo));
	if (li[IFLA_INFO_KIND])
		snprintf(kind, len, "%.*s", (int)RTA_PAYLOAD(li[IFLA_INFO_KIND]),
			 (const char *)RTA_DATA(li[IFLA_INFO_KIND]));
}

static uint32_t u32_of(const struct rtattr *a, uint32_t dflt)
{
	return a && RTA_PAYLOAD(a) >= 4 ? *(const uint32_t *)RTA_DATA(a) : dflt;
}

/* Newer than Debian 12's headers: the count of learned FDB entries and their limit (6.8). */
#define BR_FDB_N_LEARNED	48
#define BR_FDB_MAX_LEARNED	49

int netns_bridge_opt_kind(int type)
{
	switch (type) {
	case IFLA_BR_ROOT_ID: case IFLA_BR_BRIDGE_ID: case IFLA_BR_ROOT_PORT:
	case IFLA_BR_ROOT_PATH_COST: case IFLA_BR_TOPOLOGY_CHANGE:
	case IFLA_BR_TOPOLOGY_CHANGE_DETECTED: case IFLA_BR_HELLO_TIMER: case IFLA_BR_TCN_TIMER:
	case IFLA_BR_TOPOLOGY_CHANGE_TIMER: case IFLA_BR_GC_TIMER: case IFLA_BR_PAD:
	case IFLA_BR_MCAST_QUERIER_STATE: case IFLA_BR_MCAST_HASH_ELASTICITY:
	case BR_FDB_N_LEARNED:
		return 0;	/* state, or (elasticity) a fixed value the kernel ignores when set */
	case IFLA_BR_FDB_FLUSH:
		return -1;	/* an action, never dumped */
	default:
		return type > IFLA_BR_UNSPEC && type <= BR_FDB_MAX_LEARNED ? 1 : -1;
	}
}

/* The IFLA_INFO_DATA of a device's IFLA_LINKINFO, or NULL. */
static const struct rtattr *link_info_data(const struct rtattr *linkinfo)
{
	struct rtattr *li[IFLA_INFO_MAX + 1];

	if (!linkinfo)
		return NULL;
	rtnl_parse(li, IFLA_INFO_MAX, RTA_DATA(linkinfo), RTA_PAYLOAD(linkinfo));
	return li[IFLA_INFO_DATA];
}

/*
 * A bridge made again with its settable options (netns_bridge_opt_kind):
 * not one that filters VLANs (its VLAN table is not saved) or has an option
 * memdump does not know. Its ports are refused as the devices they are, so
 * it has none: its carrier is off but in a bridge that never had its MAC set
 * (made again with its MAC, a bridge has none), nor a link-local address of
 * the kernel's (addr_saved).
 */
static bool bridge_ok(struct netns_read *n, unsigned int ifi_flags, struct rtattr **tb,
		      const char *name)
{
	const struct rtattr *data = link_info_data(tb[IFLA_LINKINFO]), *a;
	size_t left = data ? RTA_PAYLOAD(data) : 0;
	bool ok = true;

	if (tb[IFLA_MASTER]) {
		refuse_add(n->r, "bridge %s enslaved to device %u", name, u32_of(tb[IFLA_MASTER], 0));
		return false;
	}
	if (ifi_flags & IFF_LOWER_UP) {
		refuse_add(n->r, "bridge %s with its carrier on and no port (it never had its MAC "
			   "set: one made again with its MAC has no carrier)", name);
		return false;
	}
	for (a = data ? RTA_DATA(data) : NULL; a && RTA_OK(a, left); a = RTA_NEXT(a, left)) {
		int type = a->rta_type & NLA_TYPE_MASK;

		if (netns_bridge_opt_kind(type) < 0) {
			refuse_add(n->r, "bridge %s with option %d (IFLA_BR_*), which memdump does "
				   "not know", name, type);
			ok = false;
		} else if (type == IFLA_BR_VLAN_FILTERING && RTA_PAYLOAD(a) >= 1 &&
			   *(const uint8_t *)RTA_DATA(a)) {
			refuse_add(n->r, "bridge %s filtering VLANs (its VLAN table is not saved)",
				   name);
			ok = false;
		}
	}
	return ok;
}

/*
 * VLAN filtering off, a new bridge's default: not sent, as a kernel built
 * without VLAN filtering refuses the option even to turn it off.
 */
static bool vlan_filtering_off(const struct rtattr *a)
{
	return (a->rta_type & NLA_TYPE_MASK) == IFLA_BR_VLAN_FILTERING && RTA_PAYLOAD(a) >= 1 &&
	       !*(const uint8_t *)RTA_DATA(a);
}

/* A bridge's settable options, as dumped, into e->bridge_opts. */
static int save_bridge_opts(NetDeviceEntry *e, struct rtattr **tb)
{
	const struct rtattr *data = link_info_data(tb[IFLA_LINKINFO]), *a;
	size_t left = data ? RTA_PAYLOAD(data) : 0, len = 0;
	uint8_t *buf = malloc(left + 1);

	if (!buf)
		return -ENOMEM;
	for (a = data ? RTA_DATA(data) : NULL; a && RTA_OK(a, left); a = RTA_NEXT(a, left))
		if (netns_bridge_opt_kind(a->rta_type & NLA_TYPE_MASK) > 0 && !vlan_filtering_off(a)) {
			memcpy(buf + len, a, RTA_ALIGN(a->rta_len));
			len += RTA_ALIGN(a->rta_len);
		}
	e->has_bridge_opts = true;
	e->bridge_opts.data = buf;
	e->bridge_opts.len = len;
	return 0;
}

static void macvlan_attrs(struct rtattr **tb, struct rtattr **mv)
{
	const struct rtattr *data = link_info_data(tb[IFLA_LINKINFO]);

	memset(mv, 0, (IFLA_MACVLAN_MAX + 1) * sizeof(*mv));
	if (data)
		rtnl_parse(mv, IFLA_MACVLAN_MAX, RTA_DATA(data), RTA_PAYLOAD(data));
}

/*
 * A macvlan whose lower device is in memdump's namespace (made there again,
 * on that device or the one --external macvlan[NAME]:DEV names, and moved
 * into the namespace); not in source mode (its MAC list is not saved).
 */
static bool macvlan_ok(struct netns_read *n, struct rtattr **tb, const char *name)
{
	struct rtattr *mv[IFLA_MACVLAN_MAX + 1];

	macvlan_attrs(tb, mv);
	if (!tb[IFLA_LINK_NETNSID] || (int)u32_of(tb[IFLA_LINK_NETNSID], 0) != n->host_nsid ||
	    n->host_nsid < 0)
		refuse_add(n->r, "macvlan %s whose lower device is not in memdump's network "
			   "namespace", name);
	else if (u32_of(mv[IFLA_MACVLAN_MODE], 0) == MACVLAN_MODE_SOURCE)
		refuse_add(n->r, "macvlan %s in source mode (its MAC list is not saved)", name);
	else if (tb[IFLA_MASTER])
		refuse_add(n->r, "macvlan %s enslaved to device %u", name,
			   u32_of(tb[IFLA_MASTER], 0));
	else
		return true;
	return false;
}

static int on_host_name(const struct nlmsghdr *h, void *arg)
{
	NetDeviceEntry *e = arg;
	const struct ifinfomsg *ifi = NLMSG_DATA(h);
	struct rtattr *tb[IFLA_MAX + 1];

	if (h->nlmsg_type != RTM_NEWLINK || ifi->ifi_index != (int)e->peer_ifindex)
		return 0;
	rtnl_parse_msg(tb, IFLA_MAX, h, sizeof(*ifi));
	if (tb[IFLA_IFNAME] && !e->peer_name)
		e->peer_name = strndup(RTA_DATA(tb[IFLA_IFNAME]), RTA_PAYLOAD(tb[IFLA_IFNAME]));
	return 0;
}

/* A macvlan's mode, flags, queue and its lower device's name in memdump's namespace. */
static int save_macvlan(struct netns_read *n, NetDeviceEntry *e, struct rtattr **tb)
{
	struct rtattr *mv[IFLA_MACVLAN_MAX + 1];
	struct rtnl host;
	struct rtnl_req q;
	struct ifinfomsg *ifi;
	int ret;

	macvlan_attrs(tb, mv);
	e->has_macvlan_mode = true;
	e->macvlan_mode = u32_of(mv[IFLA_MACVLAN_MODE], MACVLAN_MODE_VEPA);
	e->has_macvlan_flags = true;
	e->macvlan_flags = mv[IFLA_MACVLAN_FLAGS] && RTA_PAYLOAD(mv[IFLA_MACVLAN_FLAGS]) >= 2 ?
			   *(const uint16_t *)RTA_DATA(mv[IFLA_MACVLAN_FLAGS]) : 0;
	e->has_macvlan_bcq = mv[IFLA_MACVLAN_BC_QUEUE_LEN] != NULL;
	e->macvlan_bcq = u32_of(mv[IFLA_MACVLAN_BC_QUEUE_LEN], 0);
	e->has_peer_ifindex = true;
	e->peer_ifindex = u32_of(tb[IFLA_LINK], 0);
	ret = rtnl_open_in(&host, n->host_netns);
	if (ret)
		return ret;
	ifi = rtnl_req_init(&q, RTM_GETLINK, 0, sizeof(*ifi));
	ifi->ifi_index = (int)e->peer_ifindex;
	ret = rtnl_ask(&host, &q.h, on_host_name, e);
	rtnl_close(&host);
	if (!ret && !e->peer_name)
		ret = -ENOENT;
	return ret ? fail(ret, "cannot read the lower device (index %u) of macvlan %s in "
			  "memdump's network namespace: %s", e->peer_ifindex, e->name,
			  strerror(-ret)) : 0;
}

/*
 * What a device (of kind, link_kind()) is to memdump: lo, a veth to
 * memdump's namespace, a bridge, a macvlan, or refused.
 */
static bool link_ok(struct netns_read *n, const struct ifinfomsg *ifi, struct rtattr **tb,
		    const char *name, const char *kind)
{
	if (ifi->ifi_type == ARPHRD_LOOPBACK && !strcmp(name, "lo"))
		return true;
	if (!strcmp(kind, "bridge"))
		return bridge_ok(n, ifi->ifi_flags, tb, name);
	if (!strcmp(kind, "macvlan"))
		return macvlan_ok(n, tb, name);
	if (strcmp(kind, "veth")) {
		refuse_add(n->r, "network interface %s (%s) in its network namespace", name, kind);
		return false;
	}
	if (!tb[IFLA_LINK_NETNSID]) {
		refuse_add(n->r, "veth %s whose other end is in its network namespace too", name);
		return false;
	}
	if ((int)u32_of(tb[IFLA_LINK_NETNSID], 0) != n->host_nsid || n->host_nsid < 0) {
		refuse_add(n->r, "veth %s whose other end is in another network namespace than "
			   "memdump's", name);
		return false;
	}
	if (tb[IFLA_MASTER]) {
		refuse_add(n->r, "veth %s enslaved to device %u", name, u32_of(tb[IFLA_MASTER], 0));
		return false;
	}
	return true;
}

struct peer {
	NetDeviceEntry *e;
	int index;
	int master;			/* the outside end's bridge, or 0 */
	ProtobufCBinaryData addrs[16];
};

static int on_peer_link(const struct nlmsghdr *h, void *arg)
{
	struct peer *p = arg;
	const struct ifinfomsg *ifi = NLMSG_DATA(h);
	struct rtattr *tb[IFLA_MAX + 1];
	NetDeviceEntry *e = p->e;

	if (h->nlmsg_type != RTM_NEWLINK || ifi->ifi_index != p->index)
		return 0;
	rtnl_parse_msg(tb, IFLA_MAX, h, sizeof(*ifi));
	if (tb[IFLA_IFNAME])
		e->peer_name = strndup(RTA_DATA(tb[IFLA_IFNAME]), RTA_PAYLOAD(tb[IFLA_IFNAME]));
	if (tb[IFLA_ADDRESS] && RTA_PAYLOAD(tb[IFLA_ADDRESS]) == 6) {
		e->has_peer_address = true;
		e->peer_address.len = 6;
		e->peer_address.data = malloc(6);
		if (e->peer_address.data)
			memcpy(e->peer_address.data, RTA_DATA(tb[IFLA_ADDRESS]), 6);
	}
	e->has_peer_mtu = e->has_peer_flags = true;
	e->peer_mtu = u32_of(tb[IFLA_MTU], 1500);
	e->peer_flags = ifi->ifi_flags;
	p->master = (int)u32_of(tb[IFLA_MASTER], 0);
	return 0;
}

/* The name of the bridge the outside end is a port of. */
static int on_peer_master(const struct nlmsghdr *h, void *arg)
{
	struct peer *p = arg;
	const struct ifinfomsg *ifi = NLMSG_DATA(h);
	struct rtattr *tb[IFLA_MAX + 1];

	if (h->nlmsg_type != RTM_NEWLINK || ifi->ifi_index != p->master)
		return 0;
	rtnl_parse_msg(tb, IFLA_MAX, h, sizeof(*ifi));
	if (tb[IFLA_IFNAME])
		p->e->peer_master = strndup(RTA_DATA(tb[IFLA_IFNAME]), RTA_PAYLOAD(tb[IFLA_IFNAME]));
	return p->e->peer_master ? 0 : -ENOMEM;
}

/* The outside end's own addresses, but the link-local one the kernel makes. */
static int on_peer_addr(const struct nlmsghdr *h, void *arg)
{
	struct peer *p = arg;
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	struct rtattr *tb[IFA_MAX + 1];
	NetDeviceEntry *e = p->e;
	ProtobufCBinaryData *b;

	if (h->nlmsg_type != RTM_NEWADDR || (int)ifa->ifa_index != p->index)
		return 0;
	rtnl_parse_msg(tb, IFA_MAX, h, sizeof(*ifa));
	if (tb[IFA_PROTO] && *(uint8_t *)RTA_DATA(tb[IFA_PROTO]) == IFAPROT_KERNEL_LL)
		return 0;
	if (e->n_peer_ifaddr == sizeof(p->addrs) / sizeof(p->addrs[0]))
		return fail(-E2BIG, "more than %zu addresses on %s, the other end of veth %s",
			    e->n_peer_ifaddr, e->peer_name, e->name);
	b = &p->addrs[e->n_peer_ifaddr++];
	b->len = h->nlmsg_len;
	b->data = malloc(h->nlmsg_len);
	if (!b->data)
		return -ENOMEM;
	memcpy(b->data, h, h->nlmsg_len);
	return 0;
}

/* The outside end of a veth, in memdump's namespace: name, MAC, MTU, flags, bridge, addresses. */
static int read_peer(struct netns_read *n, NetDeviceEntry *e, struct peer *p)
{
	struct rtnl host;
	struct rtnl_req q;
	struct ifinfomsg *ifi;
	struct ifaddrmsg *ifa;
	int ret = rtnl_open_in(&host, n->host_netns);

	if (ret)
		return ret;
	p->e = e;
	p->index = (int)e->peer_ifindex;
	e->peer_ifaddr = p->addrs;
	ifi = rtnl_req_init(&q, RTM_GETLINK, 0, sizeof(*ifi));
	ifi->ifi_index = p->index;
	ret = rtnl_ask(&host, &q.h, on_peer_link, p);
	if (!ret && !e->peer_name)
		ret = -ENOENT;
	if (ret)
		ret = fail(ret, "cannot read the other end (index %u) of veth %s in memdump's "
			   "network namespace: %s", e->peer_ifindex, e->name, strerror(-ret));
	ifi = rtnl_req_init(&q, RTM_GETLINK, 0, sizeof(*ifi));
	ifi->ifi_index = p->master;
	if (!ret && p->master)
		ret = rtnl_ask(&host, &q.h, on_peer_master, p);
	ifa = rtnl_req_init(&q, RTM_GETADDR, 0, sizeof(*ifa));
	ifa->ifa_family = AF_UNSPEC;
	if (!ret)
		ret = rtnl_dump(&host, &q.h, on_peer_addr, p);
	rtnl_close(&host);
	return ret;
}

static void free_entry(NetDeviceEntry *e, struct peer *p)
{
	free(e->name);
	free(e->address.data);
	free(e->peer_name);
	free(e->peer_master);
	free(e->peer_address.data);
	free(e->bridge_opts.data);
	netns_sysctl_dev_free(e);
	for (size_t i = 0; i < e->n_peer_ifaddr; i++)
		free(p->addrs[i].data);
}

static int write_device(struct netns_read *n, const struct ifinfomsg *ifi, struct rtattr **tb,
			const char *name, const char *kind)
{
	NetDeviceEntry e = NET_DEVICE_ENTRY__INIT;
	struct peer p = { .e = NULL };
	int ret = 0;

	e.type = ifi->ifi_type == ARPHRD_LOOPBACK ? ND_TYPE__LOOPBACK :
		 !strcmp(kind, "bridge") ? ND_TYPE__BRIDGE :
		 !strcmp(kind, "macvlan") ? ND_TYPE__MACVLAN : ND_TYPE__VETH;
	e.ifindex = ifi->ifi_index;
	e.mtu = u32_of(tb[IFLA_MTU], 0);
	e.flags = ifi->ifi_flags;
	e.name = strdup(name);
	if (tb[IFLA_ADDRESS] && RTA_PAYLOAD(tb[IFLA_ADDRESS]) == 6) {
		e.has_address = true;
		e.address.len = 6;
		e.address.data = malloc(6);
		if (e.address.data)
			memcpy(e.address.data, RTA_DATA(tb[IFLA_ADDRESS]), 6);
	}
	if (!e.name || (e.has_address && !e.address.data))
		ret = -ENOMEM;
	if (!ret)
		ret = netns_sysctl_dev(&e);
	if (!ret && e.type == ND_TYPE__BRIDGE)
		ret = save_bridge_opts(&e, tb);
	if (!ret && e.type == ND_TYPE__MACVLAN)
		ret = save_macvlan(n, &e, tb);
	if (!ret && e.type == ND_TYPE__VETH) {
		e.has_peer_ifindex = e.has_peer_nsid = true;
		e.peer_ifindex = u32_of(tb[IFLA_LINK], 0);
		e.peer_nsid = (uint32_t)n->host_nsid;
		ret = read_peer(n, &e, &p);
	}
	if (!ret)
		ret = img_write_msg(n->img, &e.base);
	if (!ret)
		pr_info("net namespace: %s (index %u, mtu %u)%s%s\n", name, e.ifindex, e.mtu,
			e.peer_name ? ", other end " : "", e.peer_name ? e.peer_name : "");
	free_entry(&e, &p);
	return ret;
}

static int on_link(const struct nlmsghdr *h, void *arg)
{
	struct netns_read *n = arg;
	const struct ifinfomsg *ifi = NLMSG_DATA(h);
	struct rtattr *tb[IFLA_MAX + 1];
	struct nslink *l;
	char name[IF_NAMESIZE] = "?", kind[32];

	if (h->nlmsg_type != RTM_NEWLINK)
		return 0;
	rtnl_parse_msg(tb, IFLA_MAX, h, sizeof(*ifi));
	if (tb[IFLA_IFNAME])
		snprintf(name, sizeof(name), "%.*s", (int)RTA_PAYLOAD(tb[IFLA_IFNAME]),
			 (const char *)RTA_DATA(tb[IFLA_IFNAME]));
	if (n->nr_links == NS_MAX_LINKS) {
		refuse_add(n->r, "more than %d network interfaces in its network namespace",
			   NS_MAX_LINKS);
		return 0;
	}
	l = &n->links[n->nr_links++];
	*l = (struct nslink){ .index = ifi->ifi_index };
	snprintf(l->name, sizeof(l->name), "%s", name);
	if (tb[IFLA_ADDRESS] && RTA_PAYLOAD(tb[IFLA_ADDRESS]) == 6) {
		memcpy(l->mac, RTA_DATA(tb[IFLA_ADDRESS]), 6);
		l->has_mac = true;
	}
	link_kind(tb[IFLA_LINKINFO], kind, sizeof(kind));
	if (!link_ok(n, ifi, tb, name, kind))
		return 0;
	l->saved = true;
	l->bridge = !strcmp(kind, "bridge");
	if (!n->img)
		return 0;
	return write_device(n, ifi, tb, name, kind);
}

static int read_links(struct netns_read *n)
{
	struct rtnl_req q;
	struct ifinfomsg *ifi = rtnl_req_init(&q, RTM_GETLINK, 0, sizeof(*ifi));

	ifi->ifi_family = AF_UNSPEC;
	n->nr_links = 0;
	return rtnl_dump(&n->nl, &q.h, on_link, n);
}

/* ------------------------------------------------------------------ addresses and routes */

/* iproute2's `ip addr save` / `ip route save` start their output so. */
static int write_magic(struct image *img, uint32_t magic)
{
	return img_write_raw(img, &magic, sizeof(magic));
}

static int write_nlmsg(struct image *img, const struct nlmsghdr *h)
{
	static const char zeros[NLMSG_ALIGNTO];
	size_t pad = NLMSG_ALIGN(h->nlmsg_len) - h->nlmsg_len;
	int ret = img_write_raw(img, h, h->nlmsg_len);

	return !ret && pad ? img_write_raw(img, zeros, pad) : ret;
}

/* fe80::/64 with the interface identifier EUI-64 makes of mac. */
static bool is_eui64_ll(const struct ifaddrmsg *ifa, const struct rtattr *a,
			const struct nslink *l)
{
	struct in6_addr want = { .s6_addr = { 0xfe, 0x80 } };

	if (!a || !l || !l->has_mac || ifa->ifa_prefixlen != 64 || RTA_PAYLOAD(a) != 16)
		return false;
	want.s6_addr[8] = l->mac[0] ^ 2;
	want.s6_addr[9] = l->mac[1];
	want.s6_addr[10] = l->mac[2];
	want.s6_addr[11] = 0xff;
	want.s6_addr[12] = 0xfe;
	want.s6_addr[13] = l->mac[3];
	want.s6_addr[14] = l->mac[4];
	want.s6_addr[15] = l->mac[5];
	return !memcmp(RTA_DATA(a), &want, 16);
}

static bool default_lo_addr(const struct ifaddrmsg *ifa, const struct rtattr *a)
{
	static const struct in6_addr lo6 = IN6ADDR_LOOPBACK_INIT;
	uint32_t lo4 = htonl(INADDR_LOOPBACK);

	if (!a)
		return false;
	if (ifa->ifa_family == AF_INET)
		return ifa->ifa_prefixlen == 8 && !memcmp(RTA_DATA(a), &lo4, 4);
	return ifa->ifa_prefixlen == 128 && !memcmp(RTA_DATA(a), &lo6, 16);
}

/* Saved (true), left to the kernel, or refused. */
static bool addr_saved(struct netns_read *n, const struct nlmsghdr *h)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	const struct nslink *l = link_of(n, (int)ifa->ifa_index);
	struct rtattr *tb[IFA_MAX + 1];
	uint8_t proto;
	uint32_t flags;
	char a[64];

	rtnl_parse_msg(tb, IFA_MAX, h, sizeof(*ifa));
	proto = tb[IFA_PROTO] ? *(uint8_t *)RTA_DATA(tb[IFA_PROTO]) : IFAPROT_UNSPEC;
	flags = u32_of(tb[IFA_FLAGS], ifa->ifa_flags);
	addr_text(ifa->ifa_family, tb[IFA_ADDRESS], ifa->ifa_prefixlen, a, sizeof(a));
	if (l && !strcmp(l->name, "lo") && default_lo_addr(ifa, tb[IFA_ADDRESS]))
		return false;
	if (ifa->ifa_family == AF_INET6 && proto == IFAPROT_KERNEL_LL) {
		if (l && l->bridge)
			refuse_add(n->r, "IPv6 link-local address %s on bridge %s (the kernel's, "
				   "made while it had a carrier)", a, l->name);
		else if (is_eui64_ll(ifa, tb[IFA_ADDRESS], l))
			return false;
		else
			refuse_add(n->r, "IPv6 link-local address %s on %s, not the one its MAC "
				   "gives", a, link_name(n, (int)ifa->ifa_index));
	} else if (proto == IFAPROT_KERNEL_RA || (ifa->ifa_family == AF_INET6 &&
						  (flags & IFA_F_TEMPORARY))) {
		refuse_add(n->r, "address %s on %s, made from router advertisements", a,
			   link_name(n, (int)ifa->ifa_index));
	} else if (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6) {
		refuse_add(n->r, "address of family %d on %s", ifa->ifa_family,
			   link_name(n, (int)ifa->ifa_index));
	} else {
		return true;
	}
	return false;
}

static int on_addr(const struct nlmsghdr *h, void *arg)
{
	struct netns_read *n = arg;

	if (h->nlmsg_type != RTM_NEWADDR || !addr_saved(n, h) || !n->img)
		return 0;
	return write_nlmsg(n->img, h);
}

static int read_addrs(struct netns_read *n)
{
	struct rtnl_req q;
	struct ifaddrmsg *ifa = rtnl_req_init(&q, RTM_GETADDR, 0, sizeof(*ifa));

	ifa->ifa_family = AF_UNSPEC;
	return rtnl_dump(&n->nl, &q.h, on_addr, n);
}

static bool route_saved(struct netns_read *n, const struct nlmsghdr *h)
{
	const struct rtmsg *rt = NLMSG_DATA(h);
	struct rtattr *tb[RTA_MAX + 1];
	uint32_t table;
	char dst[64];

	rtnl_parse_msg(tb, RTA_MAX, h, sizeof(*rt));
	table = u32_of(tb[RTA_TABLE], rt->rtm_table);
	if (rt->rtm_flags & RTM_F_CLONED)
		return false;
	if (rt->rtm_protocol == RTPROT_KERNEL && (table == RT_TABLE_MAIN || table == RT_TABLE_LOCAL))
		return false;	/* made with the addresses and devices */
	addr_text(rt->rtm_family, tb[RTA_DST], rt->rtm_dst_len, dst, sizeof(dst));
	if (!tb[RTA_DST])
		snprintf(dst, sizeof(dst), "default");
	if (table != RT_TABLE_MAIN)
		refuse_add(n->r, "route %s in routing table %u (only the main table is saved)", dst,
			   table);
	else if (rt->rtm_protocol == RTPROT_RA)
		refuse_add(n->r, "route %s from router advertisements", dst);
	else if (tb[RTA_NH_ID])
		refuse_add(n->r, "route %s through nexthop object %u", dst, u32_of(tb[RTA_NH_ID], 0));
	else
		return true;
	return false;
}

static int on_route(const struct nlmsghdr *h, void *arg)
{
	struct netns_read *n = arg;

	if (h->nlmsg_type != RTM_NEWROUTE || !route_saved(n, h) || !n->img)
		return 0;
	return write_nlmsg(n->img, h);
}

static int read_routes(struct netns_read *n, int family)
{
	struct rtnl_req q;
	struct rtmsg *rt = rtnl_req_init(&q, RTM_GETROUTE, 0, sizeof(*rt));

	rt->rtm_family = family;
	return rtnl_dump(&n->nl, &q.h, on_route, n);
}

/* ------------------------------------------------------------------ refused without saving */

/* The kernel's own rules (local, main, default) are all there is. */
static int on_rule(const struct nlmsghdr *h, void *arg)
{
	struct netns_read *n = arg;
	const struct fib_rule_hdr *fr = NLMSG_DATA(h);
	struct rtattr *tb[FRA_MAX + 1];

	if (h->nlmsg_type != RTM_NEWRULE)
		return 0;
	rtnl_parse_msg(tb, FRA_MAX, h, sizeof(*fr));
	if (tb[FRA_PROTOCOL] && *(uint8_t *)RTA_DATA(tb[FRA_PROTOCOL]) == RTPROT_KERNEL)
		return 0;
	refuse_add(n->r, "IPv%d policy routing rule %u (table %u)", fr->family == AF_INET ? 4 : 6,
		   u32_of(tb[FRA_PRIORITY], 0), u32_of(tb[FRA_TABLE], fr->table));
	return 0;
}

static int check_rules(struct netns_read *n, int family)
{
	struct rtnl_req q;
	struct fib_rule_hdr *fr = rtnl_req_init(&q, RTM_GETRULE, 0, sizeof(*fr));

	fr->family = family;
	return rtnl_dump(&n->nl, &q.h, on_rule, n);
}

/* Permanent neighbour entries were added by hand (the others are a cache). */
static int on_neigh(const struct nlmsghdr *h, void *arg)
{
	struct netns_read *n = arg;
	const struct ndmsg *nd = NLMSG_DATA(h);
	struct rtattr *tb[NDA_MAX + 1];
	char a[64];

	if (h->nlmsg_type != RTM_NEWNEIGH || !(nd->ndm_state & NUD_PERMANENT) ||
	    (nd->ndm_family != AF_INET && nd->ndm_family != AF_INET6))
		return 0;
	rtnl_parse_msg(tb, NDA_MAX, h, sizeof(*nd));
	addr_text(nd->ndm_family, tb[NDA_DST], nd->ndm_family == AF_INET ? 32 : 128, a, sizeof(a));
	refuse_add(n->r, "permanent neighbour entry %s on %s (not saved)", a,
		   link_name(n, nd->ndm_ifindex));
	return 0;
}

static int check_neighbours(struct netns_read *n)
{
	struct rtnl_req q;
	struct ndmsg *nd = rtnl_req_init(&q, RTM_GETNEIGH, 0, sizeof(*nd));

	nd->ndm_family = AF_UNSPEC;
	return rtnl_dump(&n->nl, &q.h, on_neigh, n);
}

/* The kernel's default qdiscs have no handle; any the user added has one. */
static int on_qdisc(const struct nlmsghdr *h, void *arg)
{
	struct netns_read *n = arg;
	const struct tcmsg *tc = NLMSG_DATA(h);
	struct rtattr *tb[TCA_MAX + 1];

	if (h->nlmsg_type != RTM_NEWQDISC || !tc->tcm_handle)
		return 0;
	rtnl_parse_msg(tb, TCA_MAX, h, sizeof(*tc));
	refuse_add(n->r, "traffic control qdisc %s on %s (not saved)",
		   tb[TCA_KIND] ? (const char *)RTA_DATA(tb[TCA_KIND]) : "?",
		   link_name(n, tc->tcm_ifindex));
	return 0;
}

static int check_qdiscs(struct netns_read *n)
{
	struct rtnl_req q;
	struct tcmsg *tc = rtnl_req_init(&q, RTM_GETQDISC, 0, sizeof(*tc));

	tc->tcm_family = AF_UNSPEC;
	return rtnl_dump(&n->nl, &q.h, on_qdisc, n);
}

static const char *nft_family(uint8_t f)
{
	switch (f) {
	case NFPROTO_IPV4: return "ip";
	case NFPROTO_IPV6: return "ip6";
	case NFPROTO_INET: return "inet";
	case NFPROTO_ARP: return "arp";
	case NFPROTO_BRIDGE: return "bridge";
	case NFPROTO_NETDEV: return "netdev";
	}
	return NULL;
}

/* Each table but memdump's own lock (netlock.c), which the restore makes itself. */
static int on_nft_table(const struct nlmsghdr *h, void *arg)
{
	struct netns_read *n = arg;
	const struct nfgenmsg *g = NLMSG_DATA(h);
	struct rtattr *tb[NFTA_TABLE_MAX + 1];
	const char *name, *family = nft_family(g->nfgen_family);
	struct nft_table *t;

	if (NFNL_MSG_TYPE(h->nlmsg_type) != NFT_MSG_NEWTABLE)
		return 0;
	rtnl_parse_msg(tb, NFTA_TABLE_MAX, h, sizeof(struct nfgenmsg));
	name = tb[NFTA_TABLE_NAME] ? (const char *)RTA_DATA(tb[NFTA_TABLE_NAME]) : "?";
	if (!strncmp(name, "memdump-lock-", 13))
		return 0;
	if (tb[NFTA_TABLE_FLAGS] &&
	    (ntohl(*(uint32_t *)RTA_DATA(tb[NFTA_TABLE_FLAGS])) & NFT_TABLE_F_OWNER)) {
		refuse_add(n->r, "nftables table %s in its network namespace, owned by a process's "
			   "netlink socket (made again it would go with nft's)", name);
		return 0;
	}
	if (!family || strlen(name) >= sizeof(t->name) || n->nr_tables == NS_MAX_TABLES) {
		refuse_add(n->r, "nftables table %s in its network namespace (not saved: family %u, "
			   "or more than %d tables)", name, g->nfgen_family, NS_MAX_TABLES);
		return 0;
	}
	if (!spawn_found("nft"))
		refuse_add(n->r, "nftables table %s %s in its network namespace (nft, which saves "
			   "it, is not installed)", family, name);
	t = &n->tables[n->nr_tables++];
	t->family = family;
	snprintf(t->name, sizeof(t->name), "%s", name);
	return 0;
}

static int list_nftables(struct netns_read *n)
{
	struct rtnl nf;
	struct rtnl_req q;
	struct nfgenmsg *g;

	n->nr_tables = 0;
	if (nl_open_proto(&nf, NETLINK_NETFILTER))
		return 0;	/* no nfnetlink: no tables */
	g = rtnl_req_init(&q, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETTABLE, 0, sizeof(*g));
	g->nfgen_family = AF_UNSPEC;
	g->version = NFNETLINK_V0;
	rtnl_dump(&nf, &q.h, on_nft_table, n);
	rtnl_close(&nf);
	return 0;
}

/*
 * x_tables (legacy iptables) tables are made in a namespace on first use:
 * IPv4 and IPv6 ones are saved by iptables-legacy-save, with their counters;
 * arptables are not.
 */
static const struct xt_family {
	const char *names, *save, *restore;
	enum img_type img;
} xt_families[] = {
	{ "ip_tables_names", "iptables-legacy-save", "iptables-legacy-restore", IMG_IPTABLES },
	{ "ip6_tables_names", "ip6tables-legacy-save", "ip6tables-legacy-restore", IMG_IP6TABLES },
	{ "arp_tables_names", NULL, NULL, 0 },
};

/* The first table of family x in the thread's namespace, into buf ("" for none). */
static void xt_first_table(const struct xt_family *x, char *buf, size_t len)
{
	char path[64], *text = NULL;

	snprintf(path, sizeof(path), "/proc/thread-self/net/%s", x->names);
	buf[0] = 0;
	if (proc_read_file(path, &text) > 0)
		snprintf(buf, len, "%.*s", (int)strcspn(text, "\n"), text);
	free(text);
}

static void check_iptables(struct netns_read *n)
{
	for (size_t i = 0; i < ARRAY_SIZE(xt_families); i++) {
		const struct xt_family *x = &xt_families[i];
		char table[64];

		xt_first_table(x, table, sizeof(table));
		if (!table[0])
			continue;
		if (!x->save)
			refuse_add(n->r, "legacy arptables table %s in its network namespace (not "
				   "saved)", table);
		else if (!spawn_found(x->save))
			refuse_add(n->r, "legacy iptables table %s (%s) in its network namespace (%s, "
				   "which saves it, is not installed)", table, x->names, x->save);
	}
}

/* The image being written closed, or dropped after ret, an error. */
static int image_done(struct netns_read *n, int ret)
{
	if (ret)
		img_abort(n->img);
	else
		ret = img_close(n->img);
	n->img = NULL;
	return ret;
}

static int write_raw_image(struct netns_read *n, enum img_type t, const char *buf, size_t len)
{
	int ret = img_create(n->dir, t, NS_ID, &n->img);

	return ret ? ret : image_done(n, img_write_raw(n->img, buf, len));
}

/* One program's output (run in the target's namespace, this thread's) into an image. */
static int save_output(struct netns_read *n, enum img_type t, char *const argv[])
{
	char err[256] = "", *out = NULL;
	size_t len = 0;
	int ret = spawn_capture(argv, -1, &out, &len, err, sizeof(err));

	if (ret)
		ret = fail(ret, "cannot save the network namespace's firewall with %s: %s", argv[0],
			   err[0] ? err : strerror(-ret));
	else
		ret = write_raw_image(n, t, out, len);
	free(out);
	return ret;
}

/* nftables-1.img: every table, as `nft list table` prints it, which `nft -f` takes again. */
static int save_nftables(struct netns_read *n)
{
	char *text = NULL;
	size_t len = 0;
	int ret = 0;

	if (!n->nr_tables)
		return 0;
	for (int i = 0; !ret && i < n->nr_tables; i++) {
		char *argv[] = { "nft", "list", "table", (char *)n->tables[i].family,
				 n->tables[i].name, NULL };
		char err[256] = "", *out = NULL;
		size_t l = 0;
		char *p;

		ret = spawn_capture(argv, -1, &out, &l, err, sizeof(err));
		if (ret) {
			ret = fail(ret, "cannot save nftables table %s %s: %s", n->tables[i].family,
				   n->tables[i].name, err[0] ? err : strerror(-ret));
		} else if (!(p = realloc(text, len + l + 1))) {
			ret = -ENOMEM;
		} else {
			text = p;
			memcpy(text + len, out, l);
			len += l;
		}
		free(out);
	}
	if (!ret)
		ret = write_raw_image(n, IMG_NFTABLES, text, len);
	free(text);
	return ret;
}

static int save_iptables(struct netns_read *n)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < ARRAY_SIZE(xt_families); i++) {
		const struct xt_family *x = &xt_families[i];
		char table[64];
		char *argv[] = { (char *)x->save, "-c", NULL };

		xt_first_table(x, table, sizeof(table));
		if (table[0] && x->save)
			ret = save_output(n, x->img, argv);
	}
	return ret;
}

/* ------------------------------------------------------------------ the two passes */

static int open_read(struct netns_read *n, int host_netns, struct refusals *r)
{
	int ret = rtnl_open(&n->nl);

	n->host_netns = host_netns;
	n->r = r;
	if (!ret)
		ret = host_nsid(n);
	if (ret)
		rtnl_close(&n->nl);
	return ret;
}

/* The sysctls of the namespace and of its devices saved, tried in a scratch namespace. */
static void refuse_sysctls(struct netns_read *n)
{
	const char *devs[NS_MAX_LINKS];
	int nr = 0;

	for (int i = 0; i < n->nr_links; i++)
		if (n->links[i].saved)
			devs[nr++] = n->links[i].name;
	netns_sysctl_refuse(devs, nr, n->r);
}

void netns_refuse(int host_netns, struct refusals *r)
{
	struct netns_read *n = calloc(1, sizeof(*n));
	int ret;

	if (!n || open_read(n, host_netns, r)) {
		refuse_add(r, "its network namespace (unreadable: %s)", fail_reason());
		fail_clear();
		free(n);
		return;
	}
	ret = read_links(n);
	if (!ret)
		ret = read_addrs(n);
	if (!ret)
		ret = read_routes(n, AF_INET);
	if (!ret)
		ret = read_routes(n, AF_INET6);
	if (!ret)
		ret = check_rules(n, AF_INET);
	if (!ret)
		ret = check_rules(n, AF_INET6);
	if (!ret)
		ret = check_qdiscs(n);
	if (!ret)
		ret = check_neighbours(n);
	if (ret)
		refuse_add(r, "its network namespace (unreadable: %s)", strerror(-ret));
	list_nftables(n);
	check_iptables(n);
	if (!ret)
		refuse_sysctls(n);
	rtnl_close(&n->nl);
	free(n);
}

static int write_image(struct netns_read *n, enum img_type t, uint32_t magic,
		       int (*read)(struct netns_read *, int), int family)
{
	int ret = img_create(n->dir, t, NS_ID, &n->img);

	if (ret)
		return ret;
	ret = magic ? write_magic(n->img, magic) : 0;
	if (!ret)
		ret = read(n, family);
	return image_done(n, ret);
}

static int links_of(struct netns_read *n, int family)
{
	(void)family;
	return read_links(n);
}

static int addrs_of(struct netns_read *n, int family)
{
	(void)family;
	return read_addrs(n);
}

int netns_dump(struct dump_ctx *d, int host_netns)
{
	struct refusals *r = calloc(1, sizeof(*r));
	struct netns_read *n = calloc(1, sizeof(*n));
	int ret = r && n ? open_read(n, host_netns, r) : -ENOMEM;

	if (!ret) {
		n->dir = &d->dir;
		ret = write_image(n, IMG_NETDEV, 0, links_of, 0);
		if (!ret)
			ret = write_image(n, IMG_IFADDR, IPROUTE_ADDR_MAGIC, addrs_of, 0);
		if (!ret)
			ret = write_image(n, IMG_ROUTE, IPROUTE_ROUTE_MAGIC, read_routes, AF_INET);
		if (!ret)
			ret = write_image(n, IMG_ROUTE6, IPROUTE_ROUTE_MAGIC, read_routes, AF_INET6);
		if (!ret)
			ret = list_nftables(n) ?: save_nftables(n) ?: save_iptables(n);
		if (!ret)
			ret = netns_sysctl_dump(n->dir);
		rtnl_close(&n->nl);
	}
	/* what the refusal pass let through must still be all there is, the target frozen */
	if (!ret && r->n)
		ret = fail(-EOPNOTSUPP, "its network namespace changed since it was checked: %s",
			   r->text);
	free(n);
	free(r);
	return ret;
}
