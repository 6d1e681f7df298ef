/*
 * A network namespace's sysctls, read through /proc/sys/net (which shows the
 * namespace of the thread that opens it: dump.c's thread is in the target's).
 *
 * Saved, as CRIU saves them: net.ipv4.conf and net.ipv6.conf of all and
 * default (netns-1.img) and of each device saved (its conf4 and conf6 in
 * netdev-1.img), net.unix.max_dgram_qlen and net.ipv4.ping_group_range
 * (netns-1.img). A list of values has no names: the n-th value is the n-th
 * name of the list below, which is therefore the images' format (CRIU's
 * order; the kernel's names), and only ever grows at its end.
 *
 * The restore writes a value only where the new namespace has another one.
 * Before that, the dump's refusal pass does the same writes into a scratch
 * namespace of its own: a value that cannot be written there (read only in
 * a namespace, refused by the kernel) is refused by name, while the target
 * is untouched. Other net sysctls (net.core, the rest of net.ipv4 and
 * net.ipv6, netfilter's) are not saved (docs/trees-and-namespaces.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "fault.h"
#include "ctx/refusals.h"
#include "image/image.h"
#include "log.h"
#include "ns/netns_sysctl.h"

#define NS_ID		1
#define SYSCTL_MAX_LEN	256

/* net.ipv4.conf.X: CRIU's order */
static const struct sysctl_name conf4[] = {
	{ "accept_local", false }, { "accept_redirects", false }, { "accept_source_route", false },
	{ "arp_accept", false }, { "arp_announce", false }, { "arp_filter", false }, { "arp_ignore", false },
	{ "arp_notify", false }, { "bootp_relay", false }, { "disable_policy", false }, { "disable_xfrm", false },
	{ "force_igmp_version", false }, { "forwarding", false }, { "igmpv2_unsolicited_report_interval", false },
	{ "igmpv3_unsolicited_report_interval", false }, { "log_martians", false }, { "medium_id", false },
	{ "promote_secondaries", false }, { "proxy_arp", false }, { "proxy_arp_pvlan", false }, { "route_localnet", false },
	{ "rp_filter", false }, { "secure_redirects", false }, { "send_redirects", false }, { "shared_media", false },
	{ "src_valid_mark", false }, { "tag", false }, { "ignore_routes_with_linkdown", false },
	{ "drop_gratuitous_arp", false }, { "drop_unicast_in_l2_multicast", false },
};

/* net.ipv6.conf.X: CRIU's order */
static const struct sysctl_name conf6[] = {
	{ "accept_dad", false }, { "accept_ra", false }, { "accept_ra_defrtr", false }, { "accept_ra_from_local", false },
	{ "accept_ra_min_hop_limit", false }, { "accept_ra_mtu", false }, { "accept_ra_pinfo", false },
	{ "accept_ra_rt_info_max_plen", false }, { "accept_ra_rtr_pref", false }, { "accept_redirects", false },
	{ "accept_source_route", false }, { "autoconf", false }, { "dad_transmits", false }, { "disable_ipv6", false },
	{ "drop_unicast_in_l2_multicast", false }, { "drop_unsolicited_na", false }, { "force_mld_version", false },
	{ "force_tllao", false }, { "forwarding", false }, { "hop_limit", false }, { "ignore_routes_with_linkdown", false },
	{ "keep_addr_on_down", false }, { "max_addresses", false }, { "max_desync_factor", false },
	{ "mldv1_unsolicited_report_interval", false }, { "mldv2_unsolicited_report_interval", false },
	{ "mtu", false }, { "ndisc_notify", false }, { "optimistic_dad", false }, { "proxy_ndp", false },
	{ "regen_max_retry", false }, { "router_probe_interval", false }, { "router_solicitation_delay", false },
	{ "router_solicitation_interval", false }, { "router_solicitations", false },
	{ "stable_secret", true }, { "suppress_frag_ndisc", false }, { "temp_prefered_lft", false },
	{ "temp_valid_lft", false }, { "use_oif_addrs_only", false }, { "use_optimistic", false }, { "use_tempaddr", false },
};

static const struct sysctl_name unix_conf[] = { { "max_dgram_qlen", false } };
static const struct sysctl_name ipv4_sysctl[] = { { "ping_group_range", true } };

static const struct {
	const struct sysctl_name *names;
	size_t n;
	const char *dir;	/* under /proc/sys/net */
} lists[SL_NR] = {
	[SL_CONF4] = { conf4, ARRAY_SIZE(conf4), "ipv4/conf" },
	[SL_CONF6] = { conf6, ARRAY_SIZE(conf6), "ipv6/conf" },
	[SL_UNIX] = { unix_conf, ARRAY_SIZE(unix_conf), "unix" },
	[SL_IPV4] = { ipv4_sysctl, ARRAY_SIZE(ipv4_sysctl), "ipv4" },
};

const struct sysctl_name *sysctl_names(enum sysctl_list l, size_t *n)
{
	*n = lists[l].n;
	return lists[l].names;
}

void sysctl_path(enum sysctl_list l, const char *dev, const char *name, char *buf, size_t len)
{
	if (l == SL_CONF4 || l == SL_CONF6)
		snprintf(buf, len, "/proc/sys/net/%s/%s/%s", lists[l].dir, dev, name);
	else
		snprintf(buf, len, "/proc/sys/net/%s/%s", lists[l].dir, name);
}

void sysctl_dotted(enum sysctl_list l, const char *dev, const char *name, char *buf, size_t len)
{
	char path[128];

	sysctl_path(l, dev, name, path, sizeof(path));
	snprintf(buf, len, "%s", path + strlen("/proc/sys/"));
	for (char *p = buf; *p; p++)
		if (*p == '/')
			*p = '.';
}

/* ------------------------------------------------------------------ one value */

static int read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

int sysctl_read(const char *path, const struct sysctl_name *s, SysctlEntry *e)
{
	char text[SYSCTL_MAX_LEN], *end;
	long v;
	int ret = read_text(path, text, sizeof(text));

	sysctl_entry__init(e);
	e->type = s->str ? SYSCTL_TYPE__CTL_STR : SYSCTL_TYPE__CTL_32;
	if (ret == -ENOENT || (ret == -EIO && s->str))
		return 0;	/* not in this kernel; stable_secret unset */
	if (ret)
		return ret;
	if (s->str) {
		e->sarg = strdup(text);
		return e->sarg ? 0 : -ENOMEM;
	}
	errno = 0;
	v = strtol(text, &end, 10);
	if (errno || end == text || *end || v < INT32_MIN || v > INT32_MAX)
		return -EIO;
	e->has_iarg = true;
	e->iarg = (int32_t)v;
	return 0;
}

int sysctl_write(const char *path, const SysctlEntry *e)
{
	char text[SYSCTL_MAX_LEN];
	int fd, len, ret = 0;

	if (e->type == SYSCTL_TYPE__CTL_STR)
		len = snprintf(text, sizeof(text), "%s", e->sarg ? e->sarg : "");
	else
		len = snprintf(text, sizeof(text), "%d", e->iarg);
	if (len < 0 || (size_t)len >= sizeof(text))
		return -E2BIG;
	if (fault_wanted("netns-sysctl-write") && fault_fails())
		return -EACCES;	/* as a value read only in a namespace (tests) */
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, text, (size_t)len) != len)
		ret = errno ? -errno : -EIO;
	close(fd);
	return ret;
}

static bool has_value(const SysctlEntry *e)
{
	return e->type == SYSCTL_TYPE__CTL_STR ? e->sarg != NULL : e->has_iarg;
}

bool sysctl_same(const SysctlEntry *a, const SysctlEntry *b)
{
	if (has_value(a) != has_value(b) || a->type != b->type)
		return false;
	if (!has_value(a))
		return true;
	return a->type == SYSCTL_TYPE__CTL_STR ? !strcmp(a->sarg, b->sarg) : a->iarg == b->iarg;
}

void sysctl_entries_free(SysctlEntry **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		if (v[i])
			free(v[i]->sarg);
		free(v[i]);
	}
	free(v);
}

/* ------------------------------------------------------------------ a list */

/* The values of list l of dev (all, default, a device; unused for net.unix and net.ipv4). */
static int read_list(enum sysctl_list l, const char *dev, SysctlEntry ***out, size_t *n)
{
	SysctlEntry **v = calloc(lists[l].n, sizeof(*v));
	int ret = v ? 0 : -ENOMEM;
	char path[128];

	for (size_t i = 0; !ret && i < lists[l].n; i++) {
		v[i] = malloc(sizeof(*v[i]));
		if (!v[i]) {
			ret = -ENOMEM;
			break;
		}
		sysctl_path(l, dev, lists[l].names[i].name, path, sizeof(path));
		ret = sysctl_read(path, &lists[l].names[i], v[i]);
		if (ret)
			ret = fail(ret, "cannot read %s of the network namespace: %s", path,
				   strerror(-ret));
	}
	if (ret) {
		sysctl_entries_free(v, lists[l].n);
		return ret;
	}
	*out = v;
	*n = lists[l].n;
	return 0;
}

/* Writing forwarding resets accept_redirects (IPv4): it goes last. */
static bool written_last(enum sysctl_list l, size_t i)
{
	return l == SL_CONF4 && !strcmp(conf4[i].name, "accept_redirects");
}

int sysctl_apply(enum sysctl_list l, const char *cmp, const char *dev, SysctlEntry *const *v,
		 size_t n, char *bad, size_t len)
{
	size_t nr = n < lists[l].n ? n : lists[l].n;

	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < nr; i++) {
			const struct sysctl_name *s = &lists[l].names[i];
			SysctlEntry now;
			char path[128];
			int ret;

			if (written_last(l, i) != (pass == 1) || !has_value(v[i]))
				continue;
			sysctl_path(l, cmp, s->name, path, sizeof(path));
			ret = sysctl_read(path, s, &now);
			if (!ret && sysctl_same(&now, v[i])) {
				free(now.sarg);
				continue;
			}
			free(now.sarg);
			sysctl_path(l, dev, s->name, path, sizeof(path));
			if (!ret)
				ret = sysctl_write(path, v[i]);
			if (ret) {
				char name[128];

				sysctl_dotted(l, dev, s->name, name, sizeof(name));
				if (v[i]->type == SYSCTL_TYPE__CTL_STR)
					snprintf(bad, len, "%s = \"%s\"", name, v[i]->sarg);
				else
					snprintf(bad, len, "%s = %d", name, v[i]->iarg);
				return ret;
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ dump */

static void free_netns(NetnsEntry *e)
{
	sysctl_entries_free(e->def_conf4, e->n_def_conf4);
	sysctl_entries_free(e->all_conf4, e->n_all_conf4);
	sysctl_entries_free(e->def_conf6, e->n_def_conf6);
	sysctl_entries_free(e->all_conf6, e->n_all_conf6);
	sysctl_entries_free(e->unix_conf, e->n_unix_conf);
	sysctl_entries_free(e->ipv4_sysctl, e->n_ipv4_sysctl);
}

static int read_netns(NetnsEntry *e)
{
	int ret = read_list(SL_CONF4, "all", &e->all_conf4, &e->n_all_conf4);

	if (!ret)
		ret = read_list(SL_CONF4, "default", &e->def_conf4, &e->n_def_conf4);
	if (!ret)
		ret = read_list(SL_CONF6, "all", &e->all_conf6, &e->n_all_conf6);
	if (!ret)
		ret = read_list(SL_CONF6, "default", &e->def_conf6, &e->n_def_conf6);
	if (!ret)
		ret = read_list(SL_UNIX, NULL, &e->unix_conf, &e->n_unix_conf);
	if (!ret)
		ret = read_list(SL_IPV4, NULL, &e->ipv4_sysctl, &e->n_ipv4_sysctl);
	return ret;
}

int netns_sysctl_dump(struct img_dir *dir)
{
	NetnsEntry e = NETNS_ENTRY__INIT;
	struct image *img;
	int ret = read_netns(&e);

	if (!ret)
		ret = img_create(dir, IMG_NETNS, NS_ID, &img);
	if (!ret) {
		ret = img_write_msg(img, &e.base);
		if (ret)
			img_abort(img);
		else
			ret = img_close(img);
	}
	free_netns(&e);
	return ret;
}

int netns_sysctl_dev(NetDeviceEntry *e)
{
	int ret = read_list(SL_CONF4, e->name, &e->conf4, &e->n_conf4);

	if (!ret)
		ret = read_list(SL_CONF6, e->name, &e->conf6, &e->n_conf6);
	return ret;
}

void netns_sysctl_dev_free(NetDeviceEntry *e)
{
	sysctl_entries_free(e->conf4, e->n_conf4);
	sysctl_entries_free(e->conf6, e->n_conf6);
	e->conf4 = e->conf6 = NULL;
	e->n_conf4 = e->n_conf6 = 0;
}

/* ------------------------------------------------------------------ the dry run */

struct dry_dev {
	const char *name;
	SysctlEntry **c4, **c6;
	size_t n4, n6;
};

/* A list written into the scratch namespace, refused by name if it fails. */
static void try_list(enum sysctl_list l, const char *cmp, const char *dev, SysctlEntry *const *v,
		     size_t n, struct refusals *r)
{
	char bad[512];
	int ret = sysctl_apply(l, cmp, dev, v, n, bad, sizeof(bad));

	if (ret)
		refuse_add(r, "sysctl %s of its network namespace (a new one does not take it: %s)",
			   bad, strerror(-ret));
}

/*
 * In a scratch namespace (this thread's for a while): the namespace's own
 * lists as the restore writes them, then each device's, compared with
 * default (what a device made after it has) and written into lo, the one
 * device there (lo's into lo).
 */
static void try_all(const NetnsEntry *e, const struct dry_dev *d, int nr, struct refusals *r)
{
	try_list(SL_CONF4, "all", "all", e->all_conf4, e->n_all_conf4, r);
	try_list(SL_CONF6, "all", "all", e->all_conf6, e->n_all_conf6, r);
	try_list(SL_CONF4, "default", "default", e->def_conf4, e->n_def_conf4, r);
	try_list(SL_CONF6, "default", "default", e->def_conf6, e->n_def_conf6, r);
	try_list(SL_UNIX, NULL, NULL, e->unix_conf, e->n_unix_conf, r);
	try_list(SL_IPV4, NULL, NULL, e->ipv4_sysctl, e->n_ipv4_sysctl, r);
	for (int i = 0; i < nr; i++) {
		const char *cmp = strcmp(d[i].name, "lo") ? "default" : "lo";

		try_list(SL_CONF4, cmp, "lo", d[i].c4, d[i].n4, r);
		try_list(SL_CONF6, cmp, "lo", d[i].c6, d[i].n6, r);
	}
}

static int in_scratch(const NetnsEntry *e, const struct dry_dev *d, int nr, struct refusals *r)
{
	int back = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	int ret = 0;

	if (back < 0)
		return -errno;
	if (unshare(CLONE_NEWNET))
		ret = -errno;
	else
		try_all(e, d, nr, r);
	if (!ret && setns(back, CLONE_NEWNET))
		ret = fail(-errno, "cannot go back into the target's network namespace: %s",
			   strerror(errno));
	close(back);
	return ret;
}

void netns_sysctl_refuse(const char *const *devs, int nr_devs, struct refusals *r)
{
	NetnsEntry e = NETNS_ENTRY__INIT;
	struct dry_dev *d = calloc((size_t)nr_devs + 1, sizeof(*d));
	int ret = d ? read_netns(&e) : -ENOMEM;

	for (int i = 0; !ret && i < nr_devs; i++) {
		d[i].name = devs[i];
		ret = read_list(SL_CONF4, devs[i], &d[i].c4, &d[i].n4);
		if (!ret)
			ret = read_list(SL_CONF6, devs[i], &d[i].c6, &d[i].n6);
	}
	if (!ret)
		ret = in_scratch(&e, d, nr_devs, r);
	if (ret) {
		refuse_add(r, "the sysctls of its network namespace (cannot check them: %s)",
			   fail_reason()[0] ? fail_reason() : strerror(-ret));
		fail_clear();
	}
	for (int i = 0; d && i < nr_devs; i++) {
		sysctl_entries_free(d[i].c4, d[i].n4);
		sysctl_entries_free(d[i].c6, d[i].n6);
	}
	free(d);
	free_netns(&e);
}

/* ------------------------------------------------------------------ show */

static size_t nr_values(SysctlEntry *const *v, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += has_value(v[i]);
	return k;
}

static void show_value(const SysctlEntry *e)
{
	if (e->type == SYSCTL_TYPE__CTL_STR)
		printf("\"%s\"", e->sarg ? e->sarg : "");
	else if (e->has_iarg)
		printf("%d", e->iarg);
	else
		printf("(none)");
}

/* The names whose all and default values differ: "ipv4 forwarding all 1 default 0". */
static void show_differing(enum sysctl_list l, SysctlEntry *const *all, size_t na,
			   SysctlEntry *const *def, size_t nd)
{
	for (size_t i = 0; i < na && i < nd && i < lists[l].n; i++) {
		if (sysctl_same(all[i], def[i]))
			continue;
		printf("; %s %s all ", l == SL_CONF4 ? "ipv4" : "ipv6", lists[l].names[i].name);
		show_value(all[i]);
		printf(" default ");
		show_value(def[i]);
	}
}

void netns_sysctl_show(int dirfd)
{
	NetnsEntry *e;

	if (img_read_one(dirfd, IMG_NETNS, NS_ID, &netns_entry__descriptor, (void **)&e)) {
		printf("net sysctls: (none saved: no netns-1.img)\n");
		return;
	}
	printf("net sysctls: %zu ipv4 and %zu ipv6 of all and default",
	       nr_values(e->all_conf4, e->n_all_conf4) + nr_values(e->def_conf4, e->n_def_conf4),
	       nr_values(e->all_conf6, e->n_all_conf6) + nr_values(e->def_conf6, e->n_def_conf6));
	for (size_t i = 0; i < e->n_unix_conf && i < ARRAY_SIZE(unix_conf); i++) {
		printf("; unix %s ", unix_conf[i].name);
		show_value(e->unix_conf[i]);
	}
	for (size_t i = 0; i < e->n_ipv4_sysctl && i < ARRAY_SIZE(ipv4_sysctl); i++) {
		printf("; ipv4 %s ", ipv4_sysctl[i].name);
		show_value(e->ipv4_sysctl[i]);
	}
	show_differing(SL_CONF4, e->all_conf4, e->n_all_conf4, e->def_conf4, e->n_def_conf4);
	show_differing(SL_CONF6, e->all_conf6, e->n_all_conf6, e->def_conf6, e->n_def_conf6);
	printf("\n");
	img_free(&netns_entry__descriptor, e);
}
