/*
 * The target's own UTS and IPC namespaces (ns.c): their host name, System V
 * objects with their content, and IPC sysctls, saved while the target is
 * frozen into CRIU's utsns-1.img and ipcns-{var,shm,sem,msg}-1.img.
 */
#ifndef MEMDUMP_DUMP_NS_H
#define MEMDUMP_DUMP_NS_H

#include <stdint.h>
#include <sys/types.h>

#include "inventory.pb-c.h"

struct dump_ctx;
struct refusals;

/* CLONE_NEWUTS | CLONE_NEWIPC: which of them pid has of its own. */
uint32_t ns_own_mask(pid_t pid);
/* What cannot be saved: a namespace shared with a process outside the dump,
 * System V objects memdump cannot recreate exactly. */
void ns_refuse(pid_t pid, struct refusals *r);
/* The images, while frozen. */
int ns_dump(struct dump_ctx *d);
/* The namespace ids of the ids and inventory images: 1 for a saved one. */
void ns_fill_ids(uint32_t own, TaskKobjIdsEntry *ids);

#endif
