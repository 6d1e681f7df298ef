/* A network namespace of the target's own: lo and veth devices, addresses, routes (netns.c). */
#ifndef MEMDUMP_DUMP_NETNS_H
#define MEMDUMP_DUMP_NETNS_H

#include <stdbool.h>

struct dump_ctx;
struct refusals;

/*
 * Run inside the namespace (host_netns: memdump's own, open): what of it
 * cannot be saved, each by name.
 */
void netns_refuse(bool tcp_established, int host_netns, struct refusals *r);
/* netdev-1.img, ifaddr-1.img, route-1.img, route6-1.img (inside, while frozen). */
int netns_dump(struct dump_ctx *d, int host_netns);

#endif
