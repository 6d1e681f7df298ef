/*
 * POSIX message queues (mqueue.c): an own IPC namespace's queues with their
 * messages into mqueues-1.img, and the checks of fds on queues.
 */
#ifndef MEMDUMP_DUMP_MQUEUE_H
#define MEMDUMP_DUMP_MQUEUE_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "ctx/restore_ctx.h"

struct img_dir;
struct refusals;

/* In the namespace (this thread): queues memdump cannot restore, refused by name. */
void mqueue_refuse(struct refusals *r);
/* In the namespace, the target frozen: every queue and its messages, left as they were. */
int mqueue_dump(struct img_dir *dir);
/* Is fd of pid on the mqueue filesystem? */
bool mqueue_is_fd(pid_t pid, int fd);
/* Why an fd on a queue (link: its /proc link, st: its stat) is not restorable, or NULL. */
const char *mqueue_unsupported(pid_t pid, const char *link, const struct stat *st);

/* Restore (its _restore.c files) */

/* mqueue.c: an IPC namespace's POSIX message queues made in the fresh one this thread is in;
 * an fd on one checked at load, opened (memdump's fd, or <0 after fail()). */
int mqueue_restore_ns(struct rst *r);
int mqueue_check(const struct rst *r, const MqueueFileEntry *m);
int mqueue_open(const MqueueFileEntry *m);

#endif
