/*
 * A lazy restore's pages from a source host: the page handler's requests
 * (mem/lazy.h's channel: { offset, length }, length 0 the end) turned into
 * GETs over an image transfer connection (xfer.h) and the answers passed
 * back. migrate-receive (pageserver.c) and the lazy-pages daemon fetching
 * from a lazy dump's page server (lazy_daemon.c) both run one.
 */
#ifndef MEMDUMP_CLI_LAZY_PROXY_H
#define MEMDUMP_CLI_LAZY_PROXY_H

#include <stdbool.h>
#include <stdint.h>

#include "xfer.h"

struct lazy_proxy {
	struct xfer *conn;	/* to the source of pages-1.img */
	int chan;		/* this end of the page handler's channel, -1 */
	uint64_t size;		/* of pages-1.img */
	char set[XFER_NAME_MAX + 1];	/* the GETs name it: "" the root's set, "proc-PID" */
	int timeout;		/* s: a source silent longer fails the request */
	char what[300];		/* the set's directory ("DIR/SET"), in messages */
	void *buf;		/* XFER_GET_MAX bytes */
	bool done;		/* the handler said every page is in; DONE sent */
};

/* One request from the handler (chan readable); a failure is also told to the handler. */
int lazy_proxy_request(struct lazy_proxy *p);
/* Requests until the handler says every page is in, or a failure. */
int lazy_proxy_run(struct lazy_proxy *p);

#endif
