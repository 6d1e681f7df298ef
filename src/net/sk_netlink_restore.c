/*
 * Restore of a netlink socket: a new socket of its protocol and type with
 * its options, bound to the dumped port id (the kernel's autobind choice too:
 * the restored process has the same PID, and a negative autobind id is free
 * again), every group joined with NETLINK_ADD_MEMBERSHIP (groups above 32
 * too), connected to its destination; the port id and the destination are
 * checked with getsockname/getpeername.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/netlink.h>

#include "common.h"
#include "log.h"
#include "ctx/restore_ctx.h"
#include "net/sock.h"

static int nl_fail(const NetlinkSkEntry *e, int err, const char *what)
{
	return fail(err, "netlink socket %u (protocol %u, port %d): %s: %s", e->id, e->protocol,
		    (int)e->portid, what, strerror(-err));
}

static int set_nl_options(int fd, const NetlinkSkEntry *e)
{
	for (int opt = 1; opt < 32; opt++) {
		int on = 1;

		if (!(e->nl_opts & (1u << opt)))
			continue;
		if (setsockopt(fd, SOL_NETLINK, opt, &on, sizeof(on)))
			return -errno;
	}
	return 0;
}

static int bind_portid(int fd, const NetlinkSkEntry *e)
{
	struct sockaddr_nl a = { .nl_family = AF_NETLINK, .nl_pid = e->portid };
	socklen_t l = sizeof(a);

	if (bind(fd, (struct sockaddr *)&a, sizeof(a)))
		return nl_fail(e, -errno, "cannot bind to its port id");
	if (getsockname(fd, (struct sockaddr *)&a, &l))
		return nl_fail(e, -errno, "getsockname");
	if (a.nl_pid != e->portid)
		return nl_fail(e, -EADDRINUSE, "bound to another port id");
	return 0;
}

static int join_groups(int fd, const NetlinkSkEntry *e)
{
	for (size_t w = 0; w < e->n_groups; w++)
		for (int b = 0; b < 32; b++) {
			unsigned int group = w * 32 + b + 1;
			char what[48];

			if (!(e->groups[w] & (1u << b)))
				continue;
			if (!setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group,
					sizeof(group)))
				continue;
			snprintf(what, sizeof(what), "cannot join group %u", group);
			return nl_fail(e, -errno, what);
		}
	return 0;
}

static int connect_dst(int fd, const NetlinkSkEntry *e)
{
	struct sockaddr_nl a = { .nl_family = AF_NETLINK, .nl_pid = e->dst_portid,
				 .nl_groups = e->dst_group ? 1u << (e->dst_group - 1) : 0 };
	socklen_t l = sizeof(a);

	if (e->dst_group > 32)
		return nl_fail(e, -EINVAL, "its destination group is above 32");
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)))
		return nl_fail(e, -errno, "cannot connect");
	memset(&a, 0, sizeof(a));
	if (getpeername(fd, (struct sockaddr *)&a, &l))
		return nl_fail(e, -errno, "getpeername");
	if (a.nl_pid != e->dst_portid || a.nl_groups != (e->dst_group ? 1u << (e->dst_group - 1) : 0))
		return nl_fail(e, -EINVAL, "connected to another destination");
	return 0;
}

static int build(int fd, const NetlinkSkEntry *e)
{
	char why[160];
	int ret = sk_opts_apply(fd, e->opts, true, why, sizeof(why));

	if (ret)
		return nl_fail(e, ret, why);
	ret = set_nl_options(fd, e);
	if (ret)
		return nl_fail(e, ret, "cannot set its netlink options");
	if (e->portid && (ret = bind_portid(fd, e)))
		return ret;
	ret = join_groups(fd, e);
	if (!ret && e->state == 1)	/* NETLINK_CONNECTED */
		ret = connect_dst(fd, e);
	if (!ret && fcntl(fd, F_SETFL, e->flags & O_NONBLOCK))
		ret = nl_fail(e, -errno, "cannot set its file flags");
	return ret;
}

int sk_netlink_open(const NetlinkSkEntry *e)
{
	int type = e->has_type ? (int)e->type : SOCK_RAW;
	int fd = socket(AF_NETLINK, type | SOCK_CLOEXEC, e->protocol), ret;

	if (fd < 0)
		return nl_fail(e, -errno, "cannot create");
	ret = build(fd, e);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}
