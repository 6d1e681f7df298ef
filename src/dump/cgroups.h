/* cgroup.img: the process's cgroups and their properties (cgroups.c). */
#ifndef MEMDUMP_DUMP_CGROUPS_H
#define MEMDUMP_DUMP_CGROUPS_H

#include "image/image.h"

#define CG_SET_ID	1	/* the one set of a process: TaskCoreEntry.cg_set */

/* Written from the process's /proc/PID/cgroup text. */
int write_cgroups(struct img_dir *dir, const char *cgroup_text);

#endif
