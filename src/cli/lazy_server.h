/*
 * The pages of a set on disk, served to a lazy restore on another host
 * (CRIU's lazy dump): `memdump dump --lazy-pages --port P` once its set is
 * on disk, `memdump page-server --lazy-pages -D DIR --port P` for a set
 * already there. One client, a `memdump lazy-pages --page-server`:
 *
 *   client HELLO, server REPLY; server LAZY (the size of pages-1.img);
 *   client GET (offset, length, set "") ..., each answered with DATA; client DONE.
 *
 * pages-1.img stays in DIR: a server lost before DONE leaves a set that a
 * plain restore still takes, so the dumped process is never only in memory.
 */
#ifndef MEMDUMP_CLI_LAZY_SERVER_H
#define MEMDUMP_CLI_LAZY_SERVER_H

#include <stdint.h>

#include "xfer.h"

struct options;

/* Serve DIR/pages-1.img to one lazy-pages daemon (o: --address, --port, --status-fd, TLS). */
int lazy_serve(const struct options *o, const char *dir);
/* A GET's body after its header (hlen bytes): req { offset, length } and the set it
 * names into set (XFER_NAME_MAX + 1 bytes): "" the root's, "proc-PID" a tree's process's. */
int lazy_read_get(struct xfer *x, uint64_t hlen, uint64_t req[2], char *set);
/* One GET read: req[1] bytes of fd (size bytes) at req[0], as DATA. */
int lazy_serve_get(struct xfer *x, const uint64_t req[2], int fd, uint64_t size, void *buf,
		   uint64_t *served);

/* pageserver.c: listen on o's --address:--port, say so on --status-fd, take one client. */
int page_server_accept(const struct options *o, struct xfer *x);
/* pageserver.c: CRIU's --status-fd, a zero byte once listening (then closed), and
 * o->ready's status-ready hook; <0 after fail() when that hook fails. */
int tell_status(const struct options *o);

struct restore_opts;
/* lazy_daemon.c: the lazy-pages daemon at path joined by a restore --lazy-pages before
 * anything runs (and its page channel when it fetches from a lazy dump's page server):
 * r->lazy_daemon, r->lazy_remote_sock (fd + 1). lazy_daemon_leave closes them. */
int lazy_daemon_join(const char *path, struct restore_opts *r);
void lazy_daemon_leave(struct restore_opts *r);

#endif
