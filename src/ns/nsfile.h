/*
 * Open namespace files (open("/proc/self/ns/net")): an fd whose link is
 * "NAME:[INODE]", no path. One of a namespace the process is in itself is
 * dumped as CRIU's ns_file_entry (type NS) and opened again by the restored
 * process itself, once it is in its restored namespaces and root (child.c):
 * /proc/self/ns/NAME, or its pidfd's namespace ioctl where its root has no
 * /proc of its own. One of any other namespace is refused by name, and so is
 * one description held by two processes of a tree (treedump.c).
 */
#ifndef MEMDUMP_NSFILE_H
#define MEMDUMP_NSFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "files.pb-c.h"

struct dump_ctx;
struct fd_policy;
struct file_desc;
struct image;
struct rdesc;
struct rst;

/* dump (nsfile.c) */
bool nsfile_is(pid_t pid, int fd, const char *link, const struct stat *st);
bool nsfile_unsupported(const struct fd_policy *p, int fd, const char *link,
			const struct stat *st, char *why, size_t len);
int nsfile_collect(struct dump_ctx *d, int fd, const char *link, struct file_desc *f);
int nsfile_write(struct image *files, const struct file_desc *f);

/* restore (nsfile_restore.c) */
int nsfile_check(struct rst *r, const FileEntry *fe);
/* nothing in memdump: the restored process opens it (nsfile_open_in_child) */
int nsfile_open_desc(struct rst *r, const FileEntry *fe, struct rdesc *d);
/* In the restored process: the fd, or -errno. */
int nsfile_open_in_child(const struct rst *r, const NsFileEntry *e);
/* "net", ... of a CLONE_NEW* flag, or NULL */
const char *nsfile_name(uint32_t cflag);

#endif
