/* A network namespace of the target's own: loopback only (netns.c). */
#ifndef MEMDUMP_DUMP_NETNS_H
#define MEMDUMP_DUMP_NETNS_H

#include <stdbool.h>

struct dump_ctx;
struct refusals;

/* Run inside the namespace: other interfaces, other addresses on lo. */
void netns_refuse(bool tcp_established, struct refusals *r);
/* netdev-1.img: lo's flags and MTU (inside the namespace, while frozen). */
int netns_dump(struct dump_ctx *d);

#endif
