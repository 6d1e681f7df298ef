/*
 * The target's sockets. sock_diag (NETLINK_SOCK_DIAG, through libnl) tells
 * what only the kernel knows of a socket (a UNIX socket's peer, pending
 * connections, shutdown bits); everything else is read from a pidfd_getfd
 * copy of the fd (getsockopt, getsockname, MSG_PEEK of its queue, TCP_REPAIR).
 *
 *   sock_diag.c  the table of every socket of memdump's network namespace
 *   sockets.c    which socket fds can be dumped (refusals name the others)
 *   sk_opts.c    options common to all kinds (SO_*)
 *   sk_unix.c    UNIX sockets and their queued data
 *   sk_inet.c    TCP, UDP, UDP-lite, ICMP (ping) and raw, IPv4 and IPv6; tcp_repair.c:
 *                established TCP
 *   sk_packet.c  packet sockets: bind, options, memberships, fanout, rings
 *   sk_netlink.c netlink sockets: protocol, port id, groups, destination
 */
#ifndef MEMDUMP_SOCKETS_H
#define MEMDUMP_SOCKETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <linux/packet_diag.h>

#include "sk-opts.pb-c.h"
#include "sk-packet.pb-c.h"
#include "packet-sock.pb-c.h"
#include "sk-inet.pb-c.h"
#include "sk-netlink.pb-c.h"
#include "sk-opts.pb-c.h"
#include "sk-unix.pb-c.h"
#include <sys/socket.h>
#include <sys/un.h>

struct dump_ctx;
struct dump_opts;
struct file_desc;
struct image;
struct refusals;

/* A packet socket as packet_diag shows it (sk_diag.pk). */
struct sk_packet_diag {
	int num;			/* its protocol, host order */
	struct packet_diag_info info;
	struct packet_diag_mclist *mc;
	size_t nr_mc;
	struct packet_diag_ring rx, tx;
	bool has_rx, has_tx, has_fanout;
	uint32_t fanout;		/* id | type << 16 | flags << 24 */
};

/* One socket as sock_diag shows it. */
struct sk_diag {
	uint64_t ino;
	int family;
	int type;			/* UNIX: SOCK_STREAM, ... */
	int proto;			/* inet: IPPROTO_TCP, IPPROTO_UDP */
	int state;			/* TCP_* numbering, UNIX too */
	uint8_t shutdown;		/* RCV_SHUTDOWN 1 | SEND_SHUTDOWN 2 */
	uint32_t rqueue, wqueue;	/* UNIX listener: pending, backlog */
	uint64_t peer;			/* UNIX: the peer's ino, 0: none */
	uint32_t nr_icons;		/* UNIX listener: connections not accepted */
	uint32_t *icons;		/* their clients' inodes, oldest first (0: closed) */
	uint32_t vfs_dev, vfs_ino;	/* UNIX bound to a path: its file */
	bool has_vfs;
	char name[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int name_len;			/* 0: unnamed; name[0] == 0: abstract */
	uint8_t src[16], dst[16];	/* inet */
	uint16_t sport, dport;
	uint32_t portid, dst_portid;	/* netlink; state: 1 connected */
	uint32_t dst_group, nl_flags;	/* nl_flags: NDIAG_FLAG_* */
	uint32_t *groups;		/* netlink: the group bitmap, nr_groups words */
	size_t nr_groups;
	bool has_rmem;			/* netlink, packet: rqueue is the receive queue's memory */
	struct sk_packet_diag *pk;	/* packet */
};

struct sk_table {
	struct sk_diag *v;
	size_t n;
};

/* sock_diag.c: every UNIX, TCP, UDP, UDP-lite, raw, netlink and packet socket of memdump's
 * network namespace (raw, netlink and packet: when the kernel has their diag module) */
int sk_table_load(struct sk_table *t);
const struct sk_diag *sk_table_find(const struct sk_table *t, uint64_t ino);
void sk_table_free(struct sk_table *t);

/* The common options, read from and set on a copy of the fd (sk_opts.c). */
struct sk_opts {
	int sndbuf, rcvbuf, buf_lock;
	struct timeval sndtmo, rcvtmo;
	int reuseaddr, reuseport, passcred, passsec, keepalive, broadcast, dontroute, oobinline;
	int priority, rcvlowat, mark, peek_off, no_check;
	struct linger linger;
	char bound_dev[16];
	uint64_t *filter;		/* classic BPF, struct sock_filter[] */
	size_t filter_len;		/* instructions */
};

/* One datagram (or a run of stream bytes) queued on a socket. */
struct sk_packet {
	uint8_t *data;
	size_t len;
	uint64_t sender;		/* UNIX: the sending socket's ino */
	bool has_creds;
	struct ucred creds;
	int *fds;			/* UNIX: the files in flight with it (SCM_RIGHTS), */
	uint32_t *fd_ids;		/* memdump's copies and their ids in files.img (sk_scm.c) */
	size_t nr_fds;
};

struct sk_unix {
	uint32_t type, state, backlog;
	uint64_t ino, peer;
	char name[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int name_len;
	uint8_t shutdown;
	bool has_perms;
	uint32_t mode, uid, gid;	/* the file of a path name */
	bool deleted;			/* that file removed (or replaced) since the bind */
	char *name_dir;			/* a relative name's directory (malloc'd), or NULL */
	uint32_t accept_pos;		/* not accepted yet: its place in peer's queue (1: first) */
	bool peer_closed;		/* datagram: connected to a socket closed since */
	struct sk_packet *queue;	/* its receive queue, oldest first */
	size_t nr_queue;
};

struct tcp_stream;

struct sk_inet {
	int family, type, proto, state;
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	uint32_t backlog;
	uint8_t shutdown;
	int v6only, freebind, tos, ttl, nodelay, cork, keepcnt, keepidle, keepintvl;
	int pktinfo, recverr, mtu_discover, transparent;	/* v6: the IPV6_ options */
	int hdrincl, nodefrag, checksum;	/* raw (v6: IPV6_HDRINCL, IPV6_CHECKSUM's offset) */
	uint32_t icmp_filter[8];	/* raw ICMP: ICMP_FILTER (1 word), ICMPV6_FILTER (8) */
	size_t nr_icmp_filter;
	int send_cscov, recv_cscov;	/* UDP-lite */
	struct tcp_stream *stream;	/* tcp_repairable() states (tcp_repair.c) */
};

struct sk_netlink {
	int type, proto, state;
	uint32_t portid, dst_portid, dst_group;
	uint32_t *groups;		/* bitmap, group g is bit g - 1 */
	size_t nr_groups;		/* words */
	uint32_t opts;			/* bit n: the NETLINK_* option n is on */
};

/* A packet socket (sk_packet.c). */
struct sk_pkt {
	int type, num;			/* num: its protocol, host order */
	struct packet_diag_info info;	/* bound ifindex, version, reserve, flags (PDI_*) */
	struct packet_diag_mclist *mc;
	size_t nr_mc;
	struct packet_diag_ring rx, tx;
	bool has_rx, has_tx, has_fanout;
	uint32_t fanout;
	int qdisc_bypass, ignore_outgoing, tx_has_off, vnet_hdr_sz;	/* -1: unknown */
};

/* A socket file description of the target. */
struct sk_state {
	int family;
	uint64_t ino;
	struct sk_opts opts;
	union {
		struct sk_unix un;
		struct sk_inet in;
		struct sk_netlink nl;
		struct sk_pkt pk;
	};
};

/* A copy of a TCP socket in repair mode; leaving it resets SO_REUSEADDR: put back. */
struct sk_repaired {
	int fd;
	int reuseaddr;
};

/* What the dump knows of the target's sockets (dump_ctx.sockets). */
struct proc_tree;

struct sk_set {
	struct sk_table diag;
	uint64_t *inos;			/* every socket inode the target holds */
	size_t nr_inos;
	const struct proc_tree *tree;	/* a tree dump: its processes, or NULL */
	uint64_t *tree_inos;		/* the sockets the tree's other processes hold */
	size_t nr_tree_inos;
	bool tcp_established;		/* --tcp-established */
	bool skip_in_flight;		/* --skip-in-flight */
	struct sk_repaired *repair;	/* copies of TCP sockets put in repair mode */
	size_t nr_repair;
	bool locked;			/* the network lock is on (netlock.h) */
};

/* sockets.c */
/* Before the freeze: add every socket fd of pid that cannot be dumped to r. */
void sockets_refuse(pid_t pid, const struct dump_opts *o, struct refusals *r);
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
/* sk-queues.img and tcp-stream-INO.img */
int sockets_write_data(struct dump_ctx *d);
/* After the dump: keep (killed) or release (resumed, failed) repair mode and the lock. */
void sockets_finish(struct dump_ctx *d, bool killed);
void sk_state_free(struct sk_state *s);
void sk_set_free(struct sk_set *s);
/* "a UNIX stream socket /run/x.sock", "a TCP socket 1.2.3.4:5 -> ... LISTEN" */
void sk_describe(const struct sk_diag *s, char *buf, size_t len);

/* sk_opts.c */
int sk_opts_read(int fd, struct sk_opts *o);
void sk_opts_free(struct sk_opts *o);
void sk_opts_fill(const struct sk_opts *o, SkOptsEntry *e);

/* sk_unix.c */
/* Why this UNIX socket cannot be dumped, or NULL (set: the target's inodes). */
const char *sk_unix_unsupported(const struct sk_diag *s, const struct sk_set *set, char *buf,
				size_t len);
int sk_unix_collect(struct dump_ctx *d, int copy, const struct sk_diag *s, struct sk_state *st);
int sk_unix_write(const struct file_desc *f, struct image *files);
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
/* Frozen, every fd collected: the ids of the files in flight on every UNIX socket. */
int sk_scm_resolve(struct dump_ctx *d);
void sk_scm_free(struct sk_packet *p);
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

/* sk_inet.c */
/* s: the socket as sock_diag lists it (its receive queue), or NULL */
const char *sk_inet_unsupported(int copy, const struct sk_diag *s, const struct sk_set *set,
				char *buf, size_t len);
int sk_inet_collect(struct dump_ctx *d, int copy, const struct sk_diag *s, struct sk_state *st);
int sk_inet_write(const struct file_desc *f, struct image *files);

/* sk_netlink.c */
const char *sk_netlink_unsupported(int copy, const struct sk_diag *s, char *buf, size_t len);
int sk_netlink_collect(int copy, const struct sk_diag *s, struct sk_state *st);
int sk_netlink_write(const struct file_desc *f, struct image *files);
void sk_netlink_describe(const struct sk_diag *s, char *buf, size_t len);
/* One sock_diag does not list (unbound): from the fd. */
void sk_netlink_describe_fd(int copy, char *buf, size_t len);

/* sk_packet.c */
const char *sk_packet_unsupported(int copy, const struct sk_diag *s, const struct sk_set *set,
				  char *buf, size_t len);
int sk_packet_collect(int copy, const struct sk_diag *s, struct sk_state *st);
int sk_packet_write(const struct file_desc *f, struct image *files);
/* "a packet raw socket (protocol 0x0800) on ifindex 1" */
void sk_packet_describe(const struct sk_diag *s, char *buf, size_t len);

/* tcp_repair.c: an established connection, read in repair mode on a copy */
/* A connection state tcp_repair dumps: established, opening (SYN_SENT) or closing. */
bool tcp_repairable(int state);
int tcp_stream_collect(struct dump_ctx *d, int copy, struct sk_inet *in, int reuseaddr);
int tcp_stream_write(struct dump_ctx *d, const struct file_desc *f);
void tcp_stream_free(struct tcp_stream *t);

/* Restore (its _restore.c files) */

struct rst;

/* sk_opts.c: the common options of a new socket; <0 with what failed in why */
int sk_opts_apply(int fd, const SkOptsEntry *o, bool reuseaddr, char *why, size_t len);

/* sk_unix.c: every UNIX socket, at once; sk_queue.c: their queued data */
int sk_unix_open_all(struct rst *r);
int sk_queue_plan(struct rst *r);
/* In the child, before its fds move: the queues, shutdowns, peek offsets. */
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
int sk_unix_bind(struct rst *r, int fd, const UnixSkEntry *u);
int sk_unix_listen(struct rst *r, const UnixSkEntry *u);
/* The address to connect or send to u's name from anywhere (a relative name: made whole). */
socklen_t sk_unix_conn_addr(struct rst *r, const UnixSkEntry *u, struct sockaddr_un *a);
/* The aliases of names whose file the process had removed, once every socket that
 * connects to one is made (sk_unix_restore.c). */
void sk_unix_unlink_gone(struct rst *r);

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

/* sk_inet.c: a TCP, UDP or UDP-lite socket (memdump's fd), or <0 after fail() */
int sk_inet_open(struct rst *r, const InetSkEntry *e);
int inet_addr_of(const InetSkEntry *e, bool dst, struct sockaddr_storage *ss);
int inet_fail(const InetSkEntry *e, int err, const char *what);

/* sk_netlink.c: a netlink socket (memdump's fd), or <0 after fail() */
int sk_netlink_open(const NetlinkSkEntry *e);
/* sk_packet_restore.c: a packet socket (memdump's fd), or <0 after fail() */
int sk_packet_open(const PacketSockEntry *e);

/* tcp_repair.c: connections (established, opening, closing), released once the threads are parked */
int tcp_repair_open(struct rst *r, int fd, const InetSkEntry *e);
/* Out of repair mode, the lock still on (a tree: every process's, first) */
void tcp_unrepair_all(struct rst *r);
/* Out of repair mode, the lock off, window probes and unsent data */
void tcp_release_all(struct rst *r);
void tcp_close_all(struct rst *r);

#endif
