/* t-socknl: netlink sockets, checked after a restore: a route socket
 * autobound (port id == pid) in RTNLGRP_IPV4_IFADDR (bind) and RTNLGRP_STATS
 * (36, NETLINK_ADD_MEMBERSHIP) with NETLINK_EXT_ACK; a second route socket
 * autobound after it (a negative port id); a uevent SOCK_DGRAM socket
 * autobound (its own table: port id == pid), group 1, non-blocking; a
 * generic socket bound to a port id of its choice, connected to group 2, with
 * NETLINK_CAP_ACK; an unbound route socket. After the restore: the same port
 * ids, groups, destinations and options; the route socket gets RTM_NEWADDR
 * for 127.0.0.77/8 added on lo (`ip`, then deleted), the generic socket a
 * reply from nlctrl.
 * "queued": one more route socket has a reply queued (the dump must refuse it).
 * usage: t-socknl DIR [queued]
 * READY <pid> <route port> <second route port> <generic port> [<queued fd>] */
#include "tlib.h"

#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif

static int rt, r2, ue, gn, un, qd = -1;
static uint32_t rt_port, r2_port, ue_port, gn_port;

static void must(int ok, const char *what) { if (!ok) t_fail("%s: %s", what, strerror(errno)); }

static int nlopt(int s, int o) { int v = -1; socklen_t l = sizeof(v); getsockopt(s, SOL_NETLINK, o, &v, &l); return v; }

static struct sockaddr_nl name_of(int s, bool peer)
{
	struct sockaddr_nl a = { 0 };
	socklen_t l = sizeof(a);

	must(!(peer ? getpeername : getsockname)(s, (struct sockaddr *)&a, &l), "getsockname");
	return a;
}

static int nl_socket(int type, int proto, uint32_t port, uint32_t groups)
{
	struct sockaddr_nl a = { .nl_family = AF_NETLINK, .nl_pid = port, .nl_groups = groups };
	int s = socket(AF_NETLINK, type, proto);

	must(s >= 0, "socket");
	must(!bind(s, (struct sockaddr *)&a, sizeof(a)), "bind");
	return s;
}

/* RTM_GETLINK for lo, not a dump: one reply, left queued. */
static void queue_reply(int s)
{
	struct { struct nlmsghdr h; struct ifinfomsg i; } req = {
		.h = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETLINK,
		       .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 1 },
		.i = { .ifi_family = AF_UNSPEC, .ifi_index = 1 },
	};

	must(send(s, &req, sizeof(req), 0) == sizeof(req), "RTM_GETLINK");
	for (int i = 0; i < 100; i++) {
		char c;

		if (recv(s, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0)
			return;
		t_sleep_ms(10);
	}
	t_fail("no reply queued");
}

static void setup(bool queued)
{
	int one = 1, stats = RTNLGRP_STATS;
	struct sockaddr_nl dst = { .nl_family = AF_NETLINK, .nl_groups = 1 << 1 };

	rt = nl_socket(SOCK_RAW, NETLINK_ROUTE, 0, RTMGRP_IPV4_IFADDR);
	must(!setsockopt(rt, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &stats, sizeof(stats)), "join 36");
	must(!setsockopt(rt, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one)), "NETLINK_EXT_ACK");
	r2 = nl_socket(SOCK_RAW, NETLINK_ROUTE, 0, 0);
	ue = nl_socket(SOCK_DGRAM, NETLINK_KOBJECT_UEVENT, 0, 1);
	fcntl(ue, F_SETFL, O_NONBLOCK);
	gn = nl_socket(SOCK_RAW, NETLINK_GENERIC, 0x50000000u | t_pid, 0);
	must(!setsockopt(gn, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one)), "NETLINK_CAP_ACK");
	must(!connect(gn, (struct sockaddr *)&dst, sizeof(dst)), "connect generic");
	un = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
	must(un >= 0, "socket");
	rt_port = name_of(rt, false).nl_pid;
	r2_port = name_of(r2, false).nl_pid;
	ue_port = name_of(ue, false).nl_pid;
	gn_port = name_of(gn, false).nl_pid;
	if (rt_port != (uint32_t)t_pid || ue_port != (uint32_t)t_pid || (int32_t)r2_port >= 0)
		t_fail("unexpected autobind port ids %d %d %d", (int)rt_port, (int)r2_port,
		       (int)ue_port);
	if (!queued)
		return;
	qd = nl_socket(SOCK_RAW, NETLINK_ROUTE, 0, 0);
	queue_reply(qd);
}

static void check_names(void)
{
	struct sockaddr_nl a;
	uint32_t groups[4] = { 0 };
	socklen_t l = sizeof(groups);
	int type = 0;

	a = name_of(rt, false);
	if (a.nl_pid != rt_port || a.nl_groups != RTMGRP_IPV4_IFADDR)
		t_fail("route socket: port %d groups %#x", (int)a.nl_pid, a.nl_groups);
	must(!getsockopt(rt, SOL_NETLINK, NETLINK_LIST_MEMBERSHIPS, groups, &l), "memberships");
	if (groups[0] != RTMGRP_IPV4_IFADDR || groups[1] != 1u << (RTNLGRP_STATS - 33))
		t_fail("route socket groups %#x %#x", groups[0], groups[1]);
	if (name_of(r2, false).nl_pid != r2_port)
		t_fail("second route socket: port %d, want %d", (int)name_of(r2, false).nl_pid,
		       (int)r2_port);
	a = name_of(ue, false);
	if (a.nl_pid != ue_port || a.nl_groups != 1)
		t_fail("uevent socket: port %d groups %#x", (int)a.nl_pid, a.nl_groups);
	l = sizeof(type);
	getsockopt(ue, SOL_SOCKET, SO_TYPE, &type, &l);
	if (type != SOCK_DGRAM || !(fcntl(ue, F_GETFL) & O_NONBLOCK))
		t_fail("uevent socket: type %d or its O_NONBLOCK lost", type);
	if (name_of(gn, false).nl_pid != gn_port || name_of(gn, true).nl_groups != 1 << 1)
		t_fail("generic socket: port or destination group differs");
	if (name_of(un, false).nl_pid != 0)
		t_fail("the unbound socket is bound");
	if (nlopt(rt, NETLINK_EXT_ACK) != 1 || nlopt(gn, NETLINK_CAP_ACK) != 1 ||
	    nlopt(rt, NETLINK_CAP_ACK) != 0)
		t_fail("netlink options differ");
}

/* A message of type want within 3 s, or fail. */
static void expect_msg(int s, int want, uint32_t portid, const char *what)
{
	char buf[8192];
	struct pollfd p = { .fd = s, .events = POLLIN };

	while (poll(&p, 1, 3000) == 1) {
		ssize_t n = recv(s, buf, sizeof(buf), 0);

		for (struct nlmsghdr *h = (void *)buf; n > 0 && NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_ERROR)
				t_fail("%s: an error %d", what, -((struct nlmsgerr *)NLMSG_DATA(h))->error);
			if (h->nlmsg_type == want && (!portid || h->nlmsg_pid == portid))
				return;
		}
	}
	t_fail("%s: no message of type %d", what, want);
}

static void check_route(void)
{
	int ret = system("ip addr add 127.0.0.77/8 dev lo");

	if (ret)
		t_fail("ip addr add: %d", ret);
	expect_msg(rt, RTM_NEWADDR, 0, "route socket");
	system("ip addr del 127.0.0.77/8 dev lo");
}

static void check_generic(void)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct { struct nlmsghdr h; struct genlmsghdr g; struct nlattr a; char name[8]; } req = {
		.h = { .nlmsg_len = sizeof(req), .nlmsg_type = GENL_ID_CTRL,
		       .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 7 },
		.g = { .cmd = CTRL_CMD_GETFAMILY, .version = 1 },
		.a = { .nla_len = NLA_HDRLEN + 7, .nla_type = CTRL_ATTR_FAMILY_NAME },
		.name = "nlctrl",
	};

	must(sendto(gn, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) ==
	     sizeof(req), "CTRL_CMD_GETFAMILY");
	expect_msg(gn, GENL_ID_CTRL, gn_port, "generic socket");
}

int main(int argc, char **argv)
{
	bool queued = argc > 2 && !strcmp(argv[2], "queued");

	t_init(argc, argv, SA_RESTART);
	setup(queued);
	if (queued)
		t_ready("%d %d %d %d", (int)rt_port, (int)r2_port, (int)gn_port, qd);
	else
		t_ready("%d %d %d", (int)rt_port, (int)r2_port, (int)gn_port);
	t_wait_usr1();
	t_check_common();
	check_names();
	check_generic();
	check_route();
	if (queued)
		expect_msg(qd, RTM_NEWLINK, 0, "the queued reply");
	t_pass(NULL);
}
