/* A network namespace of the target's own: lo and veth devices, addresses, routes, firewall,
 * sysctls (netns.c, netns_sysctl.c). */
#ifndef MEMDUMP_DUMP_NETNS_H
#define MEMDUMP_DUMP_NETNS_H

#include <stdbool.h>
#include <stdint.h>

#include "ctx/restore_ctx.h"

struct dump_ctx;
struct refusals;

/*
 * Run inside the namespace (host_netns: memdump's own, open): what of it
 * cannot be saved, each by name.
 */
void netns_refuse(int host_netns, struct refusals *r);
/*
 * A bridge's IFLA_BR_* attribute: 1 restore sets it (saved), 0 the kernel's
 * own state (timers, ids: not saved), -1 one memdump does not know.
 */
int netns_bridge_opt_kind(int type);
/* netdev-1.img, ifaddr-1.img, route-1.img, route6-1.img, the firewall's and netns-1.img
 * (its sysctls: netns_sysctl.c), inside, while frozen. */
int netns_dump(struct dump_ctx *d, int host_netns);

/*
 * netns_check.c: the addresses that will be local in the namespace a restore
 * makes from the images in dirfd (lo's and ifaddr-1.img's), for the dump's
 * dry run. 0 or <0 (after fail() for a corrupt image).
 */
struct netns_addrs;
int netns_addrs_load(int dirfd, struct netns_addrs **out);
/* addr: 4 bytes (AF_INET) or 16 (AF_INET6) */
bool netns_addrs_local(const struct netns_addrs *s, int family, const uint8_t *addr);
void netns_addrs_free(struct netns_addrs *s);

/* Restore (its _restore.c files) */

/* netns.c: the dumped devices, addresses and routes in the new network namespace this
 * thread is in; the veth pairs' other ends in host_netns (memdump's, open). */
int netns_restore(struct rst *r, int host_netns);
/* The firewall of a namespace netns_restore() cut off, its connections rebuilt (r: the
 * root); 0 when there is none to restore late. */
int netns_firewall_late(struct rst *r);

#endif
