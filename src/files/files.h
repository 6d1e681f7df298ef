/*
 * The files kind: every fd of the target, recognised and handed to its kind
 * (regular files, pipes, FIFOs, ttys, memfds here; the event-loop fds,
 * sockets, message queues in their folders), and files.img, fdinfo-1.img
 * written. The file descriptions themselves are in ctx/file_desc.h.
 */
#ifndef MEMDUMP_FILES_H
#define MEMDUMP_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "ctx/file_desc.h"
#include "ctx/restore_ctx.h"

struct dump_ctx;
struct file_set;
struct fd_policy;

/* Every fd of the target; unsupported kinds are refused by name. */
int collect_fds(struct dump_ctx *d);

/* An fd kind memdump refuses (socket, eventfd, deleted file...): what, in why. */
bool fd_unsupported(const struct fd_policy *p, int fd, const char *link, const struct stat *st,
		    char *why, size_t len);
/* The same with whether fd is an O_PATH one already known (its fdinfo read once). */
bool fd_unsupported_as(const struct fd_policy *p, int fd, const char *link, const struct stat *st,
		       bool opath, char *why, size_t len);

/* files.img, fdinfo-1.img, pipes-data.img, fifo-data.img */
int write_files(struct dump_ctx *d);

void files_free(struct file_set *fs);

/* Restore (its _restore.c files) */

/* files.c: r->descs and r->fds */
int scan_inherited(struct rst *r);
void close_inherited(struct rst *r);
int open_fds(struct rst *r);
/* The files kind's own, for the table of fd kinds (files/fd_kinds.c): checked before
 * anything starts; opened in memdump (d->fd; a pipe: every description at once). */
int reg_check(struct rst *r, const FileEntry *fe);
int reg_open(struct rst *r, const FileEntry *fe, struct rdesc *d);
/* A /proc/PID/... file of a process the set restores: its entry, or NULL. The fd's
 * owner opens it once that PID exists (child.c): the fd or -errno. */
const RegFileEntry *reg_proc_of_set(struct rst *r, const FileEntry *fe);
int reg_proc_open_in_child(struct rst *r, const RegFileEntry *re);
int pipe_open(struct rst *r, const FileEntry *fe, struct rdesc *d);
int fifo_check(struct rst *r, const FileEntry *fe);
int fifo_open(struct rst *r, const FileEntry *fe, struct rdesc *d);
int term_check(struct rst *r, const FileEntry *fe);
int term_open(struct rst *r, const FileEntry *fe, struct rdesc *d);
/*
 * The owner of each fd's SIGIO (F_SETOWN_EX, with the uid/euid that set it) and its
 * signal (F_SETSIG), in the child once its fds have their numbers and the tree's
 * processes exist. 0 or -errno with msg.
 */
int files_fown_in_child(struct rst *r, char *msg, size_t len);

#endif
