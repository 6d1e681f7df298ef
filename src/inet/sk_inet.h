/* TCP, UDP, UDP-lite, ICMP and raw sockets (sk_inet.c), TCP repair (tcp_repair.c); and their restore. */
#ifndef MEMDUMP_INET_SK_INET_H
#define MEMDUMP_INET_SK_INET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "ctx/restore_ctx.h"
#include "net/sock.h"

/* sk_inet.c */
/* "a TCP socket 1.2.3.4:5 -> 6.7.8.9:10 ESTABLISHED" */
void sk_inet_describe(const struct sk_diag *s, char *buf, size_t len);
/* s: the socket as sock_diag lists it (its receive queue), or NULL */
const char *sk_inet_unsupported(int copy, const struct sk_diag *s, const struct sk_set *set,
				char *buf, size_t len);
int sk_inet_collect(struct dump_ctx *d, int copy, const struct sk_diag *s, struct sk_state *st);
int sk_inet_write(const struct file_desc *f, struct image *files);

/* tcp_repair.c: an established connection, read in repair mode on a copy */
/* A connection state tcp_repair dumps: established, opening (SYN_SENT) or closing. */
bool tcp_repairable(int state);
struct sk_errs;
/*
 * A connection over (tcp_conn_over): its pending errors, read without taking
 * them; -EMSGSIZE: its error queue holds messages.
 */
int tcp_over_errors(int copy, struct sk_errs *e);
int tcp_stream_collect(struct dump_ctx *d, int copy, struct sk_inet *in, int reuseaddr);
int tcp_stream_write(struct dump_ctx *d, const struct file_desc *f);
void tcp_stream_free(struct tcp_stream *t);

/*
 * tcp_tuple.c: the state of the socket holding the TCP address pair
 * local-peer in the table of connections (TCP_TIME_WAIT ...; TCP_LISTEN: a
 * listener on the local port, none holds the pair), -ENOENT: none, or -errno.
 */
int tcp_tuple_state(const struct sockaddr_storage *local, const struct sockaddr_storage *peer);

/* Restore */
/* sk_inet.c: a TCP, UDP or UDP-lite socket (memdump's fd), or <0 after fail() */
int sk_inet_open(struct rst *r, const InetSkEntry *e);
int inet_addr_of(const InetSkEntry *e, bool dst, struct sockaddr_storage *ss);
int inet_fail(const InetSkEntry *e, int err, const char *what);

/* tcp_repair.c: connections (established, opening, closing, over), released once the threads are parked */
int tcp_repair_open(struct rst *r, int fd, const InetSkEntry *e);
/* Out of repair mode, the lock still on (a tree: every process's, first) */
void tcp_unrepair_all(struct rst *r);
/* Out of repair mode and the lock off, nothing sent yet (a tree: every process, first) */
int tcp_unlock_all(struct rst *r);
/* Connection i's window probe and unsent data, every lock off */
void tcp_probe_one(struct rst *r, size_t i);
/* memdump's copies closed */
void tcp_close_all(struct rst *r);

#endif
