/* cgroup.img: the process's cgroups and their properties (cgroups.c). */
#ifndef MEMDUMP_DUMP_CGROUPS_H
#define MEMDUMP_DUMP_CGROUPS_H

#include "ctx/dump_ctx.h"

#define CG_SET_ID	1	/* the one set of a process: TaskCoreEntry.cg_set */

/*
 * Written from the process's /proc/PID/cgroup text and each thread's (a
 * thread in other cgroups gets a set of its own: d->threads[i].cg_set).
 */
int write_cgroups(struct dump_ctx *d, const char *cgroup_text);

#endif
