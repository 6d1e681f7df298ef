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

#include <poll.h>

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
	bool hold_done;		/* one of a group: the group sends DONE once all are done */
};

/* One request from the handler (chan readable); a failure is also told to the handler. */
int lazy_proxy_request(struct lazy_proxy *p);
/* Requests until the handler says every page is in, or a failure. */
int lazy_proxy_run(struct lazy_proxy *p);

/*
 * migrate --lazy-pages of a tree: one channel per set whose pages-1.img is
 * on the source (the root's "", each process's "proc-PID"), all through the
 * one connection; DONE goes to the source once every one said it is done.
 */
#define LAZY_PROXIES_MAX	512

struct lazy_proxies {
	struct lazy_proxy *p;
	int n;
	void *buf;		/* XFER_GET_MAX bytes, shared */
	bool done_sent;
};

/* A new member for set (its chan -1): NULL, or -errno in *err. */
struct lazy_proxy *lazy_proxies_add(struct lazy_proxies *g, const char *set, int *err);
/* The one of set, or NULL. */
struct lazy_proxy *lazy_proxies_find(struct lazy_proxies *g, const char *set);
/* pf[i] (n of them, the members' chans) polled readable: their requests served; 0 or -errno. */
int lazy_proxies_serve(struct lazy_proxies *g, const struct pollfd *pf);
/* The pollfds of the members' chans (-1 those closed) into pf (g->n of them). */
void lazy_proxies_pollfds(const struct lazy_proxies *g, struct pollfd *pf);
/* Requests until every member is done (DONE sent to the source), or a failure. */
int lazy_proxies_run(struct lazy_proxies *g);
void lazy_proxies_free(struct lazy_proxies *g);

#endif
