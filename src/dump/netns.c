/*
 * A network namespace of the target's own, as far as memdump takes one: the
 * loopback device alone, with its default addresses (an `unshare --net`
 * sandbox, a container without interfaces). The dump runs inside the
 * namespace (dump.c enters it first), so the sockets are looked up where
 * they live; anything else in it is refused by name.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "dump/dump.h"
#include "dump/netns.h"
#include "dump/refuse.h"
#include "image/image.h"
#include "log.h"

#include "netdev.pb-c.h"

/* Only 127.0.0.1/8 and ::1/128 on lo: what a new namespace's lo gets when up. */
static bool default_lo_addr(const struct ifaddrs *a)
{
	if (a->ifa_addr->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)a->ifa_addr;
		const struct sockaddr_in *m = (const void *)a->ifa_netmask;

		return s->sin_addr.s_addr == htonl(INADDR_LOOPBACK) && m &&
		       m->sin_addr.s_addr == htonl(0xff000000);
	}
	if (a->ifa_addr->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)a->ifa_addr;

		return IN6_IS_ADDR_LOOPBACK(&s->sin6_addr);
	}
	return true;	/* AF_PACKET: the link itself */
}

void netns_refuse(bool tcp_established, struct refusals *r)
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	struct ifaddrs *addrs = NULL, *a;

	if (tcp_established)
		refuse_add(r, "--tcp-established in a network namespace of its own (not yet)");
	for (i = ifs; i && i->if_index; i++)
		if (strcmp(i->if_name, "lo"))
			refuse_add(r, "network interface %s in its network namespace", i->if_name);
	if (ifs)
		if_freenameindex(ifs);
	if (getifaddrs(&addrs))
		return;
	for (a = addrs; a; a = a->ifa_next) {
		char buf[INET6_ADDRSTRLEN] = "?";

		if (!a->ifa_addr || strcmp(a->ifa_name, "lo") || default_lo_addr(a))
			continue;
		inet_ntop(a->ifa_addr->sa_family, a->ifa_addr->sa_family == AF_INET ?
			  (const void *)&((const struct sockaddr_in *)a->ifa_addr)->sin_addr :
			  (const void *)&((const struct sockaddr_in6 *)a->ifa_addr)->sin6_addr,
			  buf, sizeof(buf));
		refuse_add(r, "address %s on lo in its network namespace", buf);
	}
	freeifaddrs(addrs);
}

int netns_dump(struct dump_ctx *d)
{
	NetDeviceEntry e = NET_DEVICE_ENTRY__INIT;
	struct ifreq ifr = { .ifr_name = "lo" };
	struct image *img;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret = 0;

	if (s < 0)
		return fail(-errno, "cannot open a socket in the target's network namespace: %s",
			    strerror(errno));
	e.type = ND_TYPE__LOOPBACK;
	e.name = "lo";
	e.ifindex = if_nametoindex("lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		ret = -errno;
	e.flags = (uint16_t)ifr.ifr_flags;
	if (!ret && ioctl(s, SIOCGIFMTU, &ifr) < 0)
		ret = -errno;
	e.mtu = ifr.ifr_mtu;
	close(s);
	if (ret)
		return fail(ret, "cannot read lo in the target's network namespace: %s",
			    strerror(-ret));
	ret = img_create(&d->dir, IMG_NETDEV, 1, &img);
	if (ret)
		return ret;
	ret = img_write_msg(img, &e.base);
	if (ret) {
		img_abort(img);
		return ret;
	}
	return img_close(img);
}
