/*
 * The local addresses of a network namespace the restore makes again, as its
 * images give them (netns.h): lo's own (127.0.0.0/8, ::1, which the kernel
 * gives lo) and every address of ifaddr-1.img, the whole prefix of one on lo
 * (IPv4: the kernel makes it local). The dump's dry run asks whether a
 * socket's address will be one: bind() takes no other (EADDRNOTAVAIL), in
 * repair mode neither, and the restore would fail after the kill.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "image/image.h"
#include "ns/netns.h"

#define NS_ID	1	/* the one network namespace of a set (ns.c) */

struct netns_addr {
	int family;
	uint8_t addr[16];
	int plen;		/* the prefix all local (IPv4 on lo), else the whole address */
};

struct netns_addrs {
	struct netns_addr *a;
	size_t n;
};

static int add(struct netns_addrs *s, int family, const void *addr, int plen)
{
	struct netns_addr *a = realloc(s->a, (s->n + 1) * sizeof(*a));

	if (!a)
		return -ENOMEM;
	s->a = a;
	a += s->n++;
	memset(a, 0, sizeof(*a));
	a->family = family;
	memcpy(a->addr, addr, family == AF_INET ? 4 : 16);
	a->plen = plen;
	return 0;
}

static const struct rtattr *attr_of(const struct nlmsghdr *h, int type)
{
	const struct rtattr *a = (const void *)((const char *)NLMSG_DATA(h) +
						NLMSG_ALIGN(sizeof(struct ifaddrmsg)));
	int len = (int)h->nlmsg_len - NLMSG_LENGTH(sizeof(struct ifaddrmsg));

	for (; RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == type)
			return a;
	return NULL;
}

/* One RTM_NEWADDR of the image: its local address (IPv4: IFA_LOCAL, IPv6: IFA_ADDRESS). */
static int add_msg(struct netns_addrs *s, const struct nlmsghdr *h)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	const struct rtattr *a = attr_of(h, ifa->ifa_family == AF_INET ? IFA_LOCAL : IFA_ADDRESS);
	const struct rtattr *label = attr_of(h, IFA_LABEL);
	bool on_lo;
	size_t alen = ifa->ifa_family == AF_INET ? 4 : 16;

	if (!a && ifa->ifa_family == AF_INET)
		a = attr_of(h, IFA_ADDRESS);
	if ((ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6) || !a ||
	    RTA_PAYLOAD(a) != alen)
		return 0;
	on_lo = label && !strncmp(RTA_DATA(label), "lo", RTA_PAYLOAD(label));
	return add(s, ifa->ifa_family, RTA_DATA(a),
		   ifa->ifa_family == AF_INET && on_lo ? ifa->ifa_prefixlen : (int)alen * 8);
}

static int read_full(int fd, void *buf, size_t len)
{
	ssize_t n = read(fd, buf, len);

	return n < 0 ? -errno : (size_t)n == len ? 0 : -EIO;
}

static int read_image(struct netns_addrs *s, int dirfd)
{
	char name[64], buf[4096] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct nlmsghdr *h = (void *)buf;
	uint32_t magic;
	int fd, ret;

	img_name(IMG_IFADDR, NS_ID, name, sizeof(name));
	if (faccessat(dirfd, name, F_OK, 0))
		return 0;
	fd = img_open_file(dirfd, name, 0);
	if (fd < 0)
		return fd;
	ret = read_full(fd, &magic, sizeof(magic));
	if (!ret && magic != IPROUTE_ADDR_MAGIC)
		ret = -EIO;
	while (!ret) {
		ssize_t n = read(fd, h, sizeof(*h));

		if (n == 0)
			break;
		if (n != sizeof(*h) || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifaddrmsg)) ||
		    NLMSG_ALIGN(h->nlmsg_len) > sizeof(buf))
			ret = -EIO;
		if (!ret)
			ret = read_full(fd, buf + sizeof(*h), NLMSG_ALIGN(h->nlmsg_len) - sizeof(*h));
		if (!ret)
			ret = add_msg(s, h);
	}
	close(fd);
	return ret == -EIO ? fail(ret, "%s is truncated or corrupt", name) : ret;
}

int netns_addrs_load(int dirfd, struct netns_addrs **out)
{
	static const struct in6_addr lo6 = IN6ADDR_LOOPBACK_INIT;
	struct netns_addrs *s = calloc(1, sizeof(*s));
	uint32_t lo4 = htonl(INADDR_LOOPBACK);
	int ret = s ? 0 : -ENOMEM;

	if (!ret)
		ret = add(s, AF_INET, &lo4, 8);
	if (!ret)
		ret = add(s, AF_INET6, &lo6, 128);
	if (!ret)
		ret = read_image(s, dirfd);
	if (ret) {
		netns_addrs_free(s);
		return ret;
	}
	*out = s;
	return 0;
}

static bool prefix_eq(const uint8_t *a, const uint8_t *b, int plen)
{
	int bytes = plen / 8, bits = plen % 8;

	if (memcmp(a, b, bytes))
		return false;
	return !bits || !((a[bytes] ^ b[bytes]) & (0xff00 >> bits));
}

bool netns_addrs_local(const struct netns_addrs *s, int family, const uint8_t *addr)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->a[i].family == family && prefix_eq(s->a[i].addr, addr, s->a[i].plen))
			return true;
	return false;
}

void netns_addrs_free(struct netns_addrs *s)
{
	if (!s)
		return;
	free(s->a);
	free(s);
}
