/* The target's socket fds: which can be dumped, each handed to its family (sockets.c). */
#ifndef MEMDUMP_FILES_SOCKETS_H
#define MEMDUMP_FILES_SOCKETS_H

#include <stdbool.h>
#include <sys/types.h>

#include "net/sock.h"

/* sockets.c */
/* Before the freeze: add every socket fd of pid that cannot be dumped to r. */
void sockets_refuse(pid_t pid, const struct dump_opts *o, struct refusals *r);
struct proc_tree;
/* The tree's index of the sockets its live processes hold (t->sk), read once it is frozen. */
int sk_tree_index(struct proc_tree *t);
/* Frozen: the table and the target's socket inodes. */
int sockets_prepare(struct dump_ctx *d, const struct dump_opts *o);
/* Fill f (kind FK_SOCKET) from the target's fd; fails naming what is not supported. */
int sockets_collect(struct dump_ctx *d, int fd, struct file_desc *f);
/* Its entry in files.img, and the FD_TYPES__* of that entry. */
int sockets_write(const struct file_desc *f, struct image *files);
int sockets_fd_type(const struct file_desc *f);
/*
 * A killing dump, before its inventory: the datagram and netlink sockets
 * found empty are still empty (what arrived since would die with the target).
 */
int sockets_check_queues(struct dump_ctx *d);
/*
 * The n processes of a dump (the root first), their images written: a UNIX
 * socket whose peer credentials the restore would not give back refused by
 * name, all in one failure (unix/sk_unix_cred.c decides, as the restore does).
 */
int sockets_check_peercred(struct dump_ctx *const *ds, size_t n);
/* sk-queues.img and tcp-stream-INO.img */
int sockets_write_data(struct dump_ctx *d);
/*
 * Resumed or failed: the network lock off, no window probe yet (that is
 * sockets_finish()'s). A tree's processes are all unlocked first: a
 * connection between two of them is in both locks, and a probe sent while
 * the other's is on is lost (the end that sent it learns nothing of what its
 * peer received until its retransmission timer, backed off while locked).
 */
void sockets_unlock(struct dump_ctx *d);
/*
 * After the dump: keep the lock for the restore once the target is killed
 * (SIGKILL sent, before it is reaped), or release it (resumed, failed).
 */
int sockets_finish(struct dump_ctx *d, bool killed);
void sk_state_free(struct sk_state *s);
void sk_set_free(struct sk_set *s);
/* "a UNIX stream socket /run/x.sock", "a TCP socket 1.2.3.4:5 -> ... LISTEN" */
void sk_describe(const struct sk_diag *s, char *buf, size_t len);

#endif
