/*
 * pidfds (pidfd_open, CLONE_PIDFD): a pidfd refers to a process of the dump,
 * opened again on its restored PID by the restored process itself (pidfd.c,
 * pidfd_restore.c), or to a process that had exited, given back as a pidfd
 * of a process that has exited too; pidfds of one process share it again.
 * A pidfd of a process outside the dump, of a thread, of a zombie or inside
 * a PID namespace is refused by name.
 */
#ifndef MEMDUMP_PIDFD_H
#define MEMDUMP_PIDFD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "ctx/restore_ctx.h"

struct dump_ctx;
struct fd_policy;
struct file_desc;
struct image;

bool pidfd_is(pid_t pid, int fd, const char *link, const struct stat *st);
bool pidfd_unsupported(const struct fd_policy *p, int fd, const char *link, const struct stat *st,
		       char *why, size_t len);
int pidfd_collect(struct dump_ctx *d, int fd, const char *link, struct file_desc *f);
int pidfd_write(struct image *files, const struct file_desc *f);

/* Restore (its _restore.c files) */

/* pidfd_restore.c: a pidfd of a process of the set (opened by the restored process, in
 * child.c: the fd or -errno), or of an exited one (made in memdump) */
int pidfd_check(struct rst *r, const FileEntry *fe);
int pidfd_open_desc(struct rst *r, const FileEntry *fe, struct rdesc *d);
int pidfd_open_in_child(const PidfdEntry *e);
/* pid is a process the set restores: its root, or one of the tree's */
bool pidfd_restored_here(struct rst *r, pid_t pid);
void pidfd_close_all(struct rst *r);

#endif
