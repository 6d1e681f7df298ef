/*
 * mntns.c: a mount namespace of the process's own, as what it changed from
 * memdump's (mountpoints-1.img, a tmpfs's files in its mount's entry).
 */
#ifndef MEMDUMP_MNTNS_H
#define MEMDUMP_MNTNS_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "ctx/restore_ctx.h"

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
/* Is pid's fd on a mount of root's mount namespace, not of its own? */
bool mntns_fd_of_root(pid_t pid, int fd, pid_t root);
/* A file pid maps (path, stat) that its root does not show there and root's does */
bool mntns_path_of_root(pid_t pid, const char *path, const struct stat *st, pid_t root);
/* A process of tree in another mount namespace than the tree's root: what of
 * it restore cannot make (mntns.c builds it from memdump's, as the root's). */
void mntns_refuse_member(pid_t pid, const struct proc_tree *tree, struct refusals *r);

/* Restore (its _restore.c files) */

/*
 * mntns.c: the mount namespace, made from memdump's copy: checked at load,
 * entered (built) before anything is opened, left after the fork; its PID
 * namespace's proc mounted by the restored init (child.c).
 */
int mntns_load(struct rst *r);
int mntns_restore_enter(struct rst *r);
/* Is dev a filesystem the restore mounted anew (a tmpfs, a devpts)? */
bool mntns_new_dev(const struct rst *r, dev_t dev);
void mntns_restore_leave(struct rst *r);
int mntns_mount_in_child(struct rst *r, char *why, size_t len);
void mntns_free(struct rst *r);
/*
 * A tree's process m in another mount namespace than the root's: built from
 * memdump's (mountpoints-N.img of its namespace's first process) while the
 * tree loads, or shared with an earlier process in it; memdump's thread
 * goes into it (enter) while it checks and opens m's files, back after
 * (leave); the process itself enters it once forked (mntns_mount_in_child).
 */
struct mnt_back {
	int ns, cwd;
};
int mntns_member_load(struct rst *root, struct rst *m);
/* Member r's file name of the tree root's namespace (root_mntns), opened or
 * stat'ed there: -errno. */
/*
 * Is path name of r's root on a mount the restored init makes (its PID
 * namespace's proc, or one on it)? Then memdump cannot open it before the
 * fork: the process opens it itself.
 */
bool mntns_by_init(struct rst *r, const char *name);
int mntns_root_open(struct rst *r, const char *name, int flags);
int mntns_root_stat(struct rst *r, const char *name, struct stat *st);
int mntns_member_enter(const struct rst *m, struct mnt_back *b);
void mntns_member_leave(struct mnt_back *b);

#endif
