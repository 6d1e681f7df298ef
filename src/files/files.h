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

struct dump_ctx;
struct file_set;
struct fd_policy;

/* Every fd of the target; unsupported kinds are refused by name. */
int collect_fds(struct dump_ctx *d);

/* An fd kind memdump refuses (socket, eventfd, deleted file...): what, in why. */
bool fd_unsupported(const struct fd_policy *p, int fd, const char *link, const struct stat *st,
		    char *why, size_t len);

/* files.img, fdinfo-1.img, pipes-data.img, fifo-data.img */
int write_files(struct dump_ctx *d);

void files_free(struct file_set *fs);

#endif
