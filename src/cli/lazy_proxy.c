/* A lazy restore's page requests to a source host (lazy_proxy.h). */
#include <errno.h>
#include <stdio.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "fdio.h"
#include "common.h"
#include "log.h"
#include "cli/lazy_proxy.h"
#include "mem/lazy.h"

/* The failure, as the handler's answer: it kills what it restored with this line. */
static int chan_fail(struct lazy_proxy *p, int err)
{
	const char *why = fail_reason();
	struct lazy_remote_reply a = { err, (uint32_t)strnlen(why, 400), 0 };

	if (!fd_write_full(p->chan, &a, sizeof(a)))
		fd_write_full(p->chan, why, a.msg_len);
	return err;
}

/* A source alive but silent (stopped) must not hold the restored process forever. */
static void bound_wait(struct lazy_proxy *p, int secs)
{
	struct timeval tv = { secs, 0 };

	if (setsockopt(p->conn->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		pr_warn("cannot bound the wait for the source: %s", strerror(errno));
}

static int silent_source(struct lazy_proxy *p, const uint64_t req[2])
{
	fail_clear();
	return fail(-ETIMEDOUT, "the %s did not answer in %d s for bytes %#llx-%#llx of "
		    "%s/pages-1.img (stopped?)", p->conn->peer, p->timeout, (unsigned long long)req[0],
		    (unsigned long long)(req[0] + req[1]), p->what);
}

/* A GET: { offset, length } and the set's name (xfer.h). */
static int send_get(struct lazy_proxy *p, const uint64_t req[2])
{
	char get[2 * sizeof(uint64_t) + XFER_NAME_MAX];
	size_t n = strnlen(p->set, XFER_NAME_MAX);

	memcpy(get, req, 2 * sizeof(uint64_t));
	memcpy(get + 2 * sizeof(uint64_t), p->set, n);
	return xfer_send(p->conn, XFER_GET, get, 2 * sizeof(uint64_t) + n);
}

/* One GET through: len bytes at off of pages-1.img, from the source. */
static int fetch_one(struct lazy_proxy *p, const uint64_t req[2])
{
	struct lazy_remote_reply a = { 0, 0, req[1] };
	struct xfer_hdr h;
	int ret = send_get(p, req);

	bound_wait(p, p->timeout);
	if (!ret) {
		ret = xfer_recv_hdr(p->conn, &h);
		if (!ret && (h.cmd != XFER_DATA || h.len != req[1]))
			ret = fail(-EPROTO, "the %s answered a GET with something else",
				   p->conn->peer);
		else if (!ret)
			ret = xfer_read_exact(p->conn, p->buf, req[1]);
		if (ret == -EAGAIN || ret == -EWOULDBLOCK)
			ret = silent_source(p, req);
		else if (ret && ret != -EPROTO)
			ret = xfer_lost(p->conn, ret);
	}
	bound_wait(p, 0);
	if (ret)
		return chan_fail(p, ret);
	ret = fd_write_full(p->chan, &a, sizeof(a));
	if (!ret)
		ret = fd_write_full(p->chan, p->buf, req[1]);
	return ret ? fail(ret, "lost the page handler: %s", strerror(-ret)) : 0;
}

int lazy_proxy_request(struct lazy_proxy *p)
{
	uint64_t req[2];
	int ret = fd_read_full(p->chan, req, sizeof(req));

	if (ret)
		return fail(ret, "the page handler ended before every page of %s was fetched",
			    p->what);
	if (!req[1]) {
		p->done = true;
		pr_info("every page of %s is here", p->what);
		if (!p->hold_done && xfer_send(p->conn, XFER_DONE, NULL, 0)) {	/* the source may not wait */
			pr_warn("%s", fail_reason());
			fail_clear();
		}
		return 0;
	}
	if (req[1] > XFER_GET_MAX || req[0] > p->size || req[1] > p->size - req[0])
		return chan_fail(p, fail(-EPROTO, "the page handler asked for bytes out of "
					 "pages-1.img"));
	return fetch_one(p, req);
}

/*
 * Until the page handler says every page is in: its requests through. A
 * failure closes the channel: the handler then kills what it restored,
 * saying so in its log.
 */
int lazy_proxy_run(struct lazy_proxy *p)
{
	int ret = 0;

	while (!ret && !p->done && p->chan >= 0) {
		struct pollfd pf = { p->chan, POLLIN, 0 };

		if (poll(&pf, 1, -1) > 0)
			ret = lazy_proxy_request(p);
	}
	return ret;
}

struct lazy_proxy *lazy_proxies_add(struct lazy_proxies *g, const char *set, int *err)
{
	struct lazy_proxy *p;

	*err = 0;
	if (g->n == LAZY_PROXIES_MAX) {
		*err = fail(-E2BIG, "--lazy-pages: more than %d sets fetched from the source",
			    LAZY_PROXIES_MAX);
		return NULL;
	}
	if (!g->buf)
		g->buf = malloc(XFER_GET_MAX);
	p = g->buf ? realloc(g->p, (size_t)(g->n + 1) * sizeof(*p)) : NULL;
	if (!p) {
		*err = -ENOMEM;
		return NULL;
	}
	g->p = p;
	p = &g->p[g->n++];
	memset(p, 0, sizeof(*p));
	p->chan = -1;
	p->buf = g->buf;
	p->hold_done = true;
	snprintf(p->set, sizeof(p->set), "%s", set);
	return p;
}

struct lazy_proxy *lazy_proxies_find(struct lazy_proxies *g, const char *set)
{
	for (int i = 0; i < g->n; i++)
		if (!strcmp(g->p[i].set, set))
			return &g->p[i];
	return NULL;
}

void lazy_proxies_pollfds(const struct lazy_proxies *g, struct pollfd *pf)
{
	for (int i = 0; i < g->n; i++)
		pf[i] = (struct pollfd){ g->p[i].done ? -1 : g->p[i].chan, POLLIN, 0 };
}

/* Every member done: DONE to the source, once (it may not wait for it). */
static void all_done(struct lazy_proxies *g)
{
	for (int i = 0; i < g->n; i++)
		if (!g->p[i].done)
			return;
	if (g->done_sent || !g->n)
		return;
	g->done_sent = true;
	if (xfer_send(g->p[0].conn, XFER_DONE, NULL, 0)) {
		pr_warn("%s", fail_reason());
		fail_clear();
	}
}

int lazy_proxies_serve(struct lazy_proxies *g, const struct pollfd *pf)
{
	int ret = 0;

	for (int i = 0; i < g->n && !ret; i++) {
		struct lazy_proxy *p = &g->p[i];

		if (!pf[i].revents || p->chan < 0 || p->done)
			continue;
		ret = lazy_proxy_request(p);
		if (ret || p->done) {	/* failed (the handler was told) or all fetched */
			close(p->chan);
			p->chan = -1;
		}
	}
	if (!ret)
		all_done(g);
	return ret;
}

int lazy_proxies_run(struct lazy_proxies *g)
{
	struct pollfd *pf = calloc((size_t)g->n + 1, sizeof(*pf));
	int ret = pf ? 0 : -ENOMEM;

	all_done(g);
	while (!ret && !g->done_sent) {
		lazy_proxies_pollfds(g, pf);
		for (int i = 0; i < g->n; i++)
			if (pf[i].fd < 0 && !g->p[i].done)	/* closed before its end */
				ret = fail(-EPIPE, "the page handler's channel for %s closed before "
					   "every page was fetched", g->p[i].what);
		if (!ret && poll(pf, (nfds_t)g->n, -1) > 0)
			ret = lazy_proxies_serve(g, pf);
	}
	free(pf);
	return ret;
}

void lazy_proxies_free(struct lazy_proxies *g)
{
	for (int i = 0; i < g->n; i++)
		if (g->p[i].chan >= 0)
			close(g->p[i].chan);
	free(g->p);
	free(g->buf);
	memset(g, 0, sizeof(*g));
}
