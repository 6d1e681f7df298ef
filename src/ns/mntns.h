/*
 * mntns.c: a mount namespace of the process's own, as what it changed from
 * memdump's (mountpoints-1.img, tmpfs-MNTID.img).
 */
#ifndef MEMDUMP_MNTNS_H
#define MEMDUMP_MNTNS_H

#include <stdbool.h>
#include <sys/types.h>

struct dump_ctx;
struct refusals;

/* Is pid in another mount namespace than memdump? */
bool mntns_own(pid_t pid);
/* What of it restore cannot make, into r. */
struct proc_tree;
/* tree: a tree dump's processes (or NULL), all in pid's mount namespace */
void mntns_refuse(pid_t pid, const struct proc_tree *tree, struct refusals *r);
/* Its images, while the process is frozen. */
int mntns_dump(struct dump_ctx *d);

#endif
