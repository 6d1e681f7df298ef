/*
 * POSIX message queues (mqueue.c): an own IPC namespace's queues with their
 * messages, for its ipcns-var-1.img (ipc_var_entry.mqueues), and the checks
 * of fds on queues.
 */
#ifndef MEMDUMP_DUMP_MQUEUE_H
#define MEMDUMP_DUMP_MQUEUE_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "ctx/restore_ctx.h"
#include "mqueue.pb-c.h"

struct img_dir;
struct refusals;

/* In the namespace (this thread): queues memdump cannot restore, refused by name. */
void mqueue_refuse(struct refusals *r);
/* The queues of a namespace as dumped (ipc_var_entry.mqueues). */
struct mq_set {
	MqueueEntry **q;
	size_t n;
};

/* In the namespace, the target frozen: every queue and its messages, left as they were,
 * into s (empty, or freed again on error). */
int mqueue_dump(struct mq_set *s);
void mqueue_set_free(struct mq_set *s);
/* Is fd of pid on the mqueue filesystem? */
bool mqueue_is_fd(pid_t pid, int fd);
/* Why an fd on a queue (link: its /proc link, st: its stat) is not restorable, or NULL. */
const char *mqueue_unsupported(pid_t pid, const char *link, const struct stat *st);

/* Restore (its _restore.c files) */

/* mqueue.c: an IPC namespace's POSIX message queues made in the fresh one this thread is in;
 * an fd on one checked at load, opened (memdump's fd, or <0 after fail()). */
int mqueue_restore_ns(MqueueEntry *const *q, size_t n);
int mqueue_check(const struct rst *r, const MqueueFileEntry *m);
int mqueue_open(const MqueueFileEntry *m);

#endif
