/*
 * A network namespace's sysctls written into the new one (netns_restore.c
 * calls these on the thread that is in it): the namespace's own before its
 * devices are made (all first: its forwarding and disable_ipv6 reach default
 * and every device; then default, which the devices made after take), then
 * each device's once it is made. Only values unlike the new namespace's are
 * written; the dump's dry run (netns_sysctl.c) found that they can be.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "image/image.h"
#include "log.h"
#include "ns/netns_sysctl.h"

#define NS_ID	1

static int apply(enum sysctl_list l, const char *dev, SysctlEntry *const *v, size_t n)
{
	char bad[512];
	size_t known;
	int ret;

	sysctl_names(l, &known);
	if (n > known)
		return fail(-EINVAL, "%s: %zu values of net.%s sysctls, memdump knows %zu",
			    l == SL_CONF4 || l == SL_CONF6 ? "netdev-1.img or netns-1.img" :
			    "netns-1.img", n, l == SL_CONF4 ? "ipv4.conf" : l == SL_CONF6 ?
			    "ipv6.conf" : l == SL_UNIX ? "unix" : "ipv4", known);
	ret = sysctl_apply(l, dev, dev, v, n, bad, sizeof(bad));
	return ret ? fail(ret, "cannot restore sysctl %s: %s", bad, strerror(-ret)) : 0;
}

int netns_sysctl_restore(int dirfd)
{
	NetnsEntry *e;
	char name[32];
	int ret;

	img_name(IMG_NETNS, NS_ID, name, sizeof(name));
	if (faccessat(dirfd, name, F_OK, 0) && errno == ENOENT) {
		pr_info("net namespace: no %s (a dump older than the sysctls are saved): sysctls left "
			"as a new namespace has them\n", name);
		return 0;
	}
	ret = img_read_one(dirfd, IMG_NETNS, NS_ID, &netns_entry__descriptor, (void **)&e);
	if (ret)
		return ret;
	ret = apply(SL_CONF4, "all", e->all_conf4, e->n_all_conf4);
	if (!ret)
		ret = apply(SL_CONF6, "all", e->all_conf6, e->n_all_conf6);
	if (!ret)
		ret = apply(SL_CONF4, "default", e->def_conf4, e->n_def_conf4);
	if (!ret)
		ret = apply(SL_CONF6, "default", e->def_conf6, e->n_def_conf6);
	if (!ret)
		ret = apply(SL_UNIX, NULL, e->unix_conf, e->n_unix_conf);
	if (!ret)
		ret = apply(SL_IPV4, NULL, e->ipv4_sysctl, e->n_ipv4_sysctl);
	if (!ret)
		pr_info("net namespace: sysctls restored\n");
	img_free(&netns_entry__descriptor, e);
	return ret;
}

int netns_sysctl_restore_dev(const NetDeviceEntry *e)
{
	int ret = apply(SL_CONF4, e->name, e->conf4, e->n_conf4);

	return ret ? ret : apply(SL_CONF6, e->name, e->conf6, e->n_conf6);
}
