/* UNIX sockets: dump (sk_unix.c, sk_unix_embryo.c, sk_scm.c) and restore (their _restore.c, sk_unix_tree_restore.c, sk_queue_restore.c). */
#ifndef MEMDUMP_UNIX_SK_UNIX_H
#define MEMDUMP_UNIX_SK_UNIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "ctx/restore_ctx.h"
#include "net/sock.h"

/* sk_unix.c */
/* "a UNIX stream socket /run/x.sock LISTEN" */
void sk_unix_describe(const struct sk_diag *s, char *buf, size_t len);
/* Why this UNIX socket cannot be dumped, or NULL (set: the target's inodes). */
const char *sk_unix_unsupported(const struct sk_diag *s, const struct sk_set *set, char *buf,
				size_t len);
/* Why the peer credentials (SO_PEERCRED) of the socket behind copy, held by process pid,
 * cannot be made again (they name a process the restore will not have), or NULL. */
const char *sk_unix_peercred_unsupported(int copy, const struct sk_set *set, pid_t pid,
					 char *buf, size_t len);
int sk_unix_collect(struct dump_ctx *d, int copy, const struct sk_diag *s, struct sk_state *st);
int sk_unix_write(const struct file_desc *f, struct image *files);
/* The fields of f's unix_sk_entry the peer credentials are decided on (sk_unix_cred.c), as
 * sk_unix_write() writes them; cred: the storage of e->peer_cred. */
void sk_unix_entry(const struct file_desc *f, UnixSkEntry *e, UnixPeerCredEntry *cred);
/* sk_unix_cred_dump.c: the n processes of a dump (the root first, pstree order), their
 * images written: every UNIX socket whose peer credentials the restore would not give
 * back (sk_cred_inexact) refused, all in one failure. */
struct dump_ctx;
int sk_unix_cred_check(struct dump_ctx *const *ds, size_t n);
int sk_unix_write_queue(const struct file_desc *f, struct image *img);

/* sk_scm.c: files in flight (SCM_RIGHTS) in UNIX socket queues */
/* Keep n fds received with p (closed on failure). */
int sk_scm_take(struct sk_packet *p, const int *fds, size_t n);
/*
 * Stream: the offset in a peeked run of n bytes with fds (at peek offset off)
 * where the message with the fds starts, the run's bytes before it coming
 * from messages without fds; the peek offset is left at off + n.
 */
ssize_t sk_scm_stream_start(int copy, int off, ssize_t n);
/* Does the message with fds that ends a run at peek offset end go on past it? (1, 0, -errno) */
int sk_scm_stream_goes_on(int copy, int end);
/* Frozen, every fd collected: the ids of the files in flight on every UNIX socket. */
int sk_scm_resolve(struct dump_ctx *d);
void sk_scm_free(struct sk_packet *p);
/* sk_scm_tree.c: a tree dump's. Does an earlier process of the tree hold socket ino (its
 * queue is sent by that process's restore)? */
bool sk_scm_tree_copy(const struct dump_ctx *d, uint64_t ino);
/* File k in flight on ino, not d's own: another process's of the tree (1: share_pid,
 * share_fd set), or 0: none holds it; refused (naming ino) when that cannot be restored. */
int sk_scm_tree_share(const struct dump_ctx *d, uint64_t ino, struct sk_packet *p, size_t k);
/* sk_unix_embryo.c: connections not accepted yet; datagrams from senders not dumped */
/* Why listener l's connections not yet accepted cannot be dumped, or NULL. */
const char *sk_unix_icons_unsupported(const struct sk_diag *l, const struct sk_set *set,
				      char *buf, size_t len);
/* The listener whose queue holds client s's connection (its place, 1: first, in *pos), or NULL. */
const struct sk_diag *sk_unix_pending_listener(const struct sk_set *set, const struct sk_diag *s,
					       uint32_t *pos);
/* Why client s, not yet accepted by l, cannot be dumped, or NULL. */
const char *sk_unix_pending_unsupported(const struct sk_diag *s, const struct sk_diag *l,
					const struct sk_set *set, char *buf, size_t len);
/* A datagram socket ESTABLISHED without a peer: connected to one closed since, or
 * not connected (another connected to it): peer_closed; one that had a name: refused. */
int sk_unix_dgram_peer_closed(int copy, const struct sk_set *set, struct sk_unix *u);
/* Why no stand-in can send again to rcv a datagram from a socket not dumped (its address
 * flen bytes long), or NULL. */
const char *sk_unix_standin_refused(const struct sk_diag *rcv, socklen_t flen);

/* Restore */
/* sk_unix.c: every UNIX socket, at once; sk_queue.c: their queued data */
int sk_unix_open_all(struct rst *r);
int sk_queue_plan(struct rst *r);
/* sk-queues.img opened (1), or the set has none (0); <0 */
struct image;
int sk_queues_open(struct rst *r, struct image **img);
/* One more step for the child (SK_LATE_*) on memdump's fd, zeroed; NULL: no memory */
struct sk_late *sk_late_new(struct rst *r, int op, int fd);
/* In the child, before its fds move: the sockets made again with their peer credentials
 * (sk_child_remake), then, once the epoll sets in flight are filled with them, the
 * queues, shutdowns, peek offsets (sk_child_finish). */
int sk_child_remake(struct rst *r, char *msg, size_t len);
int sk_child_finish(struct rst *r, char *msg, size_t len);
void sk_queue_free(struct rst *r);
void sk_helpers_close(struct rst *r);
/*
 * sk_scm_restore.c: files in flight (SCM_RIGHTS). Their descriptions added to
 * r->descs (open_fds(), after the fds' own); the control data of message e
 * with memdump's fds of them, appended to m's (ctl: len bytes).
 */
int sk_scm_descs(struct rst *r);
struct msghdr;
int sk_scm_control(struct rst *r, const SkPacketEntry *e, struct msghdr *m, char *ctl,
		   size_t len);
/* sk_unix.c, for sk_unix_tree.c: a socket of u's type; bound to u's name; listening */
int sk_unix_new(const UnixSkEntry *u);
/* A listener standing in for a closed one (sk_unix_cred_restore.c): memdump's fd closed with
 * the stand-ins for closed peers (sk_helpers_close). */
int sk_unix_keep_standin(struct rst *r, int fd);
int sk_unix_bind(struct rst *r, int fd, const UnixSkEntry *u);
int sk_unix_listen(struct rst *r, const UnixSkEntry *u);
/* The address to connect or send to u's name from anywhere (a relative name: made whole). */
socklen_t sk_unix_conn_addr(struct rst *r, const UnixSkEntry *u, struct sockaddr_un *a);
/* The same for the forked child (SK_LATE_*): in the root built for it, when its own. */
socklen_t sk_unix_late_addr(struct rst *r, const UnixSkEntry *u, struct sockaddr_un *a);
/* Is u's name's file covered by a mount made since the bind (name_covered), in r's root of its own? */
bool sk_unix_covered(const struct rst *r, const UnixSkEntry *u);
/*
 * For the forked child, a covered name: *dir, an O_PATH fd on its directory
 * through a clone of that directory's mount alone, and a, its last part.
 */
int sk_unix_covered_addr(struct rst *r, const UnixSkEntry *u, struct sockaddr_un *a,
			 socklen_t *l, int *dir);
/* In the forked child, in its root: a pair end it made again bound to u's name. */
int sk_unix_bind_late(int fd, const UnixSkEntry *u);
/* The aliases of names whose file the process had removed, once every socket that
 * connects to one is made (sk_unix_restore.c). */
void sk_unix_unlink_gone(struct rst *r);
/* Listener l's alias kept until the process is parked: its child connects to it (an
 * accepted connection made again); sk_unix_unlink_gone() leaves r's aliases then, and
 * sk_unix_unlink_all() removes them, called once the process is parked (and at the end). */
void sk_unix_keep_alias(struct rst *r, const UnixSkEntry *l);
void sk_unix_unlink_all(struct rst *r);
/* Does r keep an alias? (the deleted files' sweeper ends once the process is parked then) */
bool sk_unix_aliases_kept(const struct rst *r);

/*
 * sk_unix_embryo_restore.c: a client whose connection its listener had not
 * accepted: made (bound) with the others, connected by the child in the
 * listener's queue order (planned first); a stand-in socket for the sender of
 * a datagram the dump did not hold (its fd, or <0).
 */
bool sk_unix_is_pending(struct rst *r, const UnixSkEntry *u);
int sk_unix_pending_open(struct rst *r, const UnixSkEntry *u);
int sk_unix_pending_plan(struct rst *r);
int sk_unix_standin(struct rst *r, const UnixSkEntry *rcv);
/*
 * sk_unix_cred.c: whose peer credentials the restore makes again, decided over a
 * view of the tree the dump (files/sockets.c) and the restore
 * (sk_unix_cred_restore.c) each build, so that they cannot drift.
 */
struct ucv_sk {
	const UnixSkEntry *u;
	int fd;			/* its fd in the process's table, -1: only in flight */
	bool shared_out;	/* a later process of the tree takes this description */
	bool shared_other;	/* one that the process does not fork (nor one below it) */
};
struct ucv_proc {
	pid_t pid;
	int parent;		/* the process (index) that forks it, -1: none of the view */
	struct ucv_sk *sks;	/* the UNIX sockets it opens (not another's copies) */
	size_t nr_sks;
};
struct ucv {
	struct ucv_proc *procs;	/* the root first, pstree order */
	size_t n;
	bool tree;
};
/* One remake (SK_LATE_*) by process proc: u (its), p (p_proc's), listener l. */
struct ucv_op {
	int op;
	size_t proc, p_proc;
	const UnixSkEntry *u, *p, *l;
};
typedef int (*ucv_fn)(void *arg, const struct ucv_op *op);
/* Every remake process r makes, in order, to fn. */
int sk_cred_ops(const struct ucv *v, size_t r, ucv_fn fn, void *arg);
/* Why socket s of process r comes back with other peer credentials than dumped, or NULL. */
const char *sk_cred_inexact(const struct ucv *v, size_t r, const struct ucv_sk *s, char *buf,
			    size_t len);
/*
 * sk_unix_cred_restore.c: the pairs and accepted connections whose peer
 * credentials are the process's own, made again by the forked child with them
 * (SK_LATE_PAIR, SK_LATE_ACCEPT), planned before every other step; one made.
 */
int sk_cred_plan(struct rst *r);
/* A datagram pair of r's with a name, both ends' credentials r's: the child binds its ends
 * once it made the pair again (SK_LATE_PAIR); sk_cred_plan() fails if it would not. */
bool sk_cred_binds_late(struct rst *r, const UnixSkEntry *u, const UnixSkEntry *p);
int sk_cred_remake(const struct sk_late *l);
/* FORK_ACCEPT, FORK_CONNECT: a connection a process of the tree made to another's
 * listener, made again in r (the connector, or the listener's process). */
int sk_cred_remake_fork(struct rst *r, const struct sk_late *l);
/* The process that makes socket ino again after the fork (FORK_*), or NULL: the data
 * its peer had queued is sent by it, on the new socket. */
struct rst *sk_cred_fork_holder(struct rst *r, uint32_t ino);
/* In the forked process of a tree, before it forks its children: its SK_LATE_TREE_PAIR and _ACCEPT made. */
int sk_cred_remake_tree(struct rst *r, char *msg, size_t len);
/* A datagram socket another connected to (ESTABLISHED, no peer): one connects to it and goes. */
int sk_unix_dgram_touch(struct rst *r, const UnixSkEntry *u);

/*
 * sk_unix_tree.c: UNIX sockets whose peer or listener another process of the
 * tree opens. u's connection to p (another process's), u's end for this one,
 * p's kept for its process; the entry and memdump's fd of socket ino anywhere
 * in the tree; the queues of every process planned once all are made; in the
 * forked child, a sender's credentials' process of the tree waited for.
 */
int sk_tree_connect(struct rst *r, const UnixSkEntry *u, const UnixSkEntry *p);
const UnixSkEntry *sk_tree_entry(struct rst *r, uint32_t ino);
int sk_tree_fd(struct rst *r, uint32_t ino);
/* the tree's listener with u's name in *lfd (made ahead if need be): 0; 1 none; <0 */
int sk_tree_listener(struct rst *r, const UnixSkEntry *u, int *lfd);
int sk_tree_plan_queues(struct rst *root);
void sk_tree_wait_pid(struct rst *r, pid_t pid);
/* Process pid of the tree (r itself or another; memdump's number, the images') as the
 * forked process r sees it: the same, or its number in the tree's PID namespace
 * (0: not a process of the tree). */
pid_t sk_tree_seen_pid(struct rst *r, pid_t pid);

#endif
