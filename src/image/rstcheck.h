/*
 * What a restore on this machine will need, checked over the images: shared
 * by the restore's own checks and the dump's dry run before a killing dump
 * kills (dump/dryrun.c). One function per kind of object; each fails with a
 * sentence naming the object.
 */
#ifndef MEMDUMP_IMAGE_RSTCHECK_H
#define MEMDUMP_IMAGE_RSTCHECK_H

#include <stdbool.h>

#include "core.pb-c.h"

/*
 * The cgroup path ("/a/b") of hierarchy ctl ("cpu,cpuacct", "" for v2) can be
 * joined or made here: the hierarchy is mounted, and the path exists or its
 * deepest existing directory is writable; strict: nothing below the root exists
 * but memdump's own cgroup and those above it.
 */
int rstcheck_cgroup_path(const char *ctl, const char *path, bool strict);
/* Every limit can be set by a restore that has CAP_SYS_RESOURCE or not (capable). */
int rstcheck_rlimits(const TaskRlimitsEntry *rl, bool capable);

#endif
