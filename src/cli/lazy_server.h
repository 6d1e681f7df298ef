/*
 * The pages of a set on disk, served to a lazy restore on another host
 * (CRIU's lazy dump): `memdump dump --lazy-pages --port P` once its set is
 * on disk, `memdump page-server --lazy-pages -D DIR --port P` for a set
 * already there. One client, a `memdump lazy-pages --page-server`:
 *
 *   client HELLO, server REPLY; server LAZY (the size of pages-1.img);
 *   client GET (offset, length) ..., each answered with DATA; client DONE.
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
/* One GET read after its header: len bytes of fd (size bytes) at off, as DATA. */
int lazy_serve_get(struct xfer *x, int fd, uint64_t size, void *buf, uint64_t *served);

/* pageserver.c: listen on o's --address:--port, say so on --status-fd, take one client. */
int page_server_accept(const struct options *o, struct xfer *x);
/* pageserver.c: CRIU's --status-fd, a zero byte once listening (then closed). */
void tell_status(const struct options *o);

#endif
