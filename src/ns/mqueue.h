/*
 * POSIX message queues (mqueue.c): an own IPC namespace's queues with their
 * messages into mqueues-1.img, and the checks of fds on queues.
 */
#ifndef MEMDUMP_DUMP_MQUEUE_H
#define MEMDUMP_DUMP_MQUEUE_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

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

#endif
