/*
 * The target's sockets: what every family shares. sock_diag (NETLINK_SOCK_DIAG,
 * through libnl) tells what only the kernel knows of a socket (a UNIX socket's
 * peer, pending connections, shutdown bits); everything else is read from a
 * pidfd_getfd copy of the fd (getsockopt, getsockname, MSG_PEEK of its queue,
 * TCP_REPAIR). The contexts embed these types: this header is a leaf.
 *
 *   net/sock_diag.c   the table of every socket of memdump's network namespace
 *   net/sk_opts.c     options common to all kinds (SO_*)
 *   net/sk_packet.c   packet sockets: bind, options, memberships, fanout, rings
 *   net/sk_netlink.c  netlink sockets: protocol, port id, groups, destination
 *   unix/             UNIX sockets, their queued data and files in flight (sk_unix.h)
 *   inet/             TCP, UDP, UDP-lite, ICMP (ping) and raw, IPv4 and IPv6; TCP
 *                     repair (sk_inet.h)
 *   files/sockets.c   which socket fds can be dumped, each handed to its family
 */
#ifndef MEMDUMP_NET_SOCK_H
#define MEMDUMP_NET_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <linux/packet_diag.h>

#include "netlock.h"
#include "sk-opts.pb-c.h"
#include "sk-packet.pb-c.h"
#include "packet-sock.pb-c.h"
#include "sk-inet.pb-c.h"
#include "sk-netlink.pb-c.h"
#include "sk-unix.pb-c.h"

/* The states sock_diag and the images give every family (TCP's numbering). */
#define SK_ESTABLISHED	1
#define SK_LISTEN	10

/* The most fds one SCM_RIGHTS message carries (the kernel's SCM_MAX_FD). */
#define SCM_MAX_FD	253

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
/* A socket state's name (TCP_ESTABLISHED ... TCP_CLOSING, the kernel's numbers), or "?" */
const char *sk_state_name(int s);

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
	uint32_t *share_pid;		/* a tree: 0, or the process of the tree holding it */
	uint32_t *share_fd;		/* (then fd_ids 0) and its fd there (sk_scm_tree.c) */
	size_t nr_fds;
};

#define SK_UNIX_MAX_GROUPS	64

struct sk_unix {
	uint32_t type, state, backlog;
	uint64_t ino, peer;
	char name[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int name_len;
	uint8_t shutdown;
	bool has_perms;
	uint32_t mode, uid, gid;	/* the file of a path name */
	bool deleted;			/* that file removed (or replaced) since the bind */
	bool covered;			/* that file under a mount made on its path since */
	char *name_dir;			/* a relative name's directory (malloc'd), or NULL */
	uint32_t accept_pos;		/* not accepted yet: its place in peer's queue (1: first) */
	bool peer_closed;		/* datagram: connected to a socket closed since */
	char ext_peer[sizeof(((struct sockaddr_un *)0)->sun_path)];	/* --ext-unix-sk: */
	int ext_peer_len;		/* the name of a peer outside the dump, or 0 */
	struct ucred cred;		/* SO_PEERCRED (pid 0: none) and SO_PEERGROUPS */
	uint32_t groups[SK_UNIX_MAX_GROUPS];
	int nr_groups;
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
	bool tcp_close;			/* --tcp-close: connections saved as closed */
	bool skip_in_flight;		/* --skip-in-flight */
	bool ext_unix_sk;		/* --ext-unix-sk: datagram peers outside reconnected by name */
	bool netns_saved;		/* the target's network namespace is its own, saved (and the
					 * dumping thread is in it): its sysctls come back */
	struct sk_repaired *repair;	/* copies of TCP sockets put in repair mode */
	size_t nr_repair;
	bool locked;			/* the network lock is on (netlock.h) */
	struct netlock lock;		/* if locked: owned by the dump (netlock.h) */
};

/* sk_opts.c */
int sk_opts_read(int fd, struct sk_opts *o);
/* An int option at any level, or -1 */
int sk_int_opt(int fd, int level, int opt);
void sk_opts_free(struct sk_opts *o);
void sk_opts_fill(const struct sk_opts *o, SkOptsEntry *e);

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

/* Restore (its _restore.c files) */

struct rst;

/* sk_opts.c: the common options of a new socket; <0 with what failed in why */
int sk_opts_apply(int fd, const SkOptsEntry *o, bool reuseaddr, char *why, size_t len);
/* set an int option unless it has that value already; -errno */
int sk_keep_int_opt(int fd, int level, int opt, int v);

/* sk_netlink.c: a netlink socket (memdump's fd), or <0 after fail() */
int sk_netlink_open(const NetlinkSkEntry *e);
/* sk_packet_restore.c: a packet socket (memdump's fd), or <0 after fail() */
int sk_packet_open(const PacketSockEntry *e);

#endif
