/*
 * A network namespace's sysctls (netns_sysctl.c): net.ipv4.conf and
 * net.ipv6.conf of all, default and each device, net.unix and net.ipv4's
 * ping_group_range, read and written through /proc/sys/net, which shows the
 * calling thread's namespace.
 */
#ifndef MEMDUMP_NS_NETNS_SYSCTL_H
#define MEMDUMP_NS_NETNS_SYSCTL_H

#include <stdbool.h>
#include <stddef.h>

#include "netdev.pb-c.h"

struct img_dir;
struct refusals;

/* netns-1.img: all, default, net.unix, net.ipv4 (the thread in the namespace). */
int netns_sysctl_dump(struct img_dir *dir);
/* e->conf4 and e->conf6: device e->name's; netns_sysctl_dev_free() frees them. */
int netns_sysctl_dev(NetDeviceEntry *e);
void netns_sysctl_dev_free(NetDeviceEntry *e);

/*
 * The dry run: each value of the thread's namespace (and of devs, its
 * devices saved) that differs from a new namespace's is written into a new
 * scratch one as the restore would; one that cannot be is refused by name.
 */
void netns_sysctl_refuse(const char *const *devs, int nr_devs, struct refusals *r);

/* Restore (netns_sysctl_restore.c), into the thread's namespace, a new one. */
/* netns-1.img's: all, then default, net.unix, net.ipv4 (before the devices are made). */
int netns_sysctl_restore(int dirfd);
/* A device's, once made (its MTU set: IPv6's mtu follows it). */
int netns_sysctl_restore_dev(const NetDeviceEntry *e);

/* Shared by the two files: the lists of names, one value read and written. */
enum sysctl_list { SL_CONF4, SL_CONF6, SL_UNIX, SL_IPV4, SL_NR };
struct sysctl_name {
	const char *name;
	bool str;		/* a string (CTL_STR), else an int (CTL_32) */
};
/* The names of list l, in the images' order; *n gets their number. */
const struct sysctl_name *sysctl_names(enum sysctl_list l, size_t *n);
/* /proc/sys path of name of list l (dev: all, default or a device for the confs). */
void sysctl_path(enum sysctl_list l, const char *dev, const char *name, char *buf, size_t len);
/* "net.ipv4.conf.all.forwarding" */
void sysctl_dotted(enum sysctl_list l, const char *dev, const char *name, char *buf, size_t len);
/* e gets path's value (no value: absent from the kernel, or an unset secret); 0 or -errno. */
int sysctl_read(const char *path, const struct sysctl_name *s, SysctlEntry *e);
/* e's value into path: 0 or -errno (not reported). */
int sysctl_write(const char *path, const SysctlEntry *e);
/* Same value (both absent counts as the same). */
bool sysctl_same(const SysctlEntry *a, const SysctlEntry *b);
void sysctl_entries_free(SysctlEntry **v, size_t n);
/*
 * v's values (list l) into dev's, each one unlike cmp's (dev's own, or
 * default's for a device made after it), forwarding before accept_redirects.
 * On a failure (-errno, not reported) bad gets "net.x.y = value".
 */
int sysctl_apply(enum sysctl_list l, const char *cmp, const char *dev, SysctlEntry *const *v,
		 size_t n, char *bad, size_t len);

/* "net sysctls: ipv4 all forwarding=1, ..." the values unlike the kernel's defaults. */
void netns_sysctl_show(int dirfd);

#endif
