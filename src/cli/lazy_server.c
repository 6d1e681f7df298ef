/* A set's pages served to a lazy restore elsewhere (lazy_server.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "cli/lazy_server.h"
#include "cli/options.h"

int lazy_read_get(struct xfer *x, uint64_t hlen, uint64_t req[2], char *set)
{
	uint64_t n = hlen - 2 * sizeof(uint64_t);
	int ret;

	if (hlen < 2 * sizeof(uint64_t) || n > XFER_NAME_MAX)
		return fail(-EPROTO, "the %s sent a GET of %llu bytes", x->peer,
			    (unsigned long long)hlen);
	ret = xfer_read_exact(x, req, 2 * sizeof(uint64_t));
	if (!ret)
		ret = xfer_read_exact(x, set, n);
	if (ret)
		return xfer_lost(x, ret);
	set[n] = '\0';
	if (strlen(set) != n || strchr(set, '/') || (n && strncmp(set, "proc-", 5)))
		return fail(-EPROTO, "the %s sent a GET naming no set of this dump", x->peer);
	return 0;
}

int lazy_serve_get(struct xfer *x, const uint64_t req[2], int fd, uint64_t size, void *buf,
		   uint64_t *served)
{
	size_t got = 0;

	if (!req[1] || req[1] > XFER_GET_MAX || req[0] > size || req[1] > size - req[0])
		return fail(-EPROTO, "the %s asked for bytes %llu+%llu of a pages-1.img of %llu",
			    x->peer, (unsigned long long)req[0], (unsigned long long)req[1],
			    (unsigned long long)size);
	while (got < req[1]) {
		ssize_t n = pread(fd, (char *)buf + got, req[1] - got, (off_t)(req[0] + got));

		if (n <= 0)
			return fail(n ? -errno : -EIO, "cannot read pages-1.img: %s",
				    n ? strerror(errno) : "it is shorter than it was");
		got += (size_t)n;
	}
	*served += req[1];
	return xfer_send(x, XFER_DATA, buf, req[1]);
}

/* The client's HELLO, answered. */
static int hello(struct xfer *x)
{
	struct xfer_hdr h;
	uint32_t v;
	int ret = xfer_recv_hdr(x, &h);

	if (!ret && (h.cmd != XFER_HELLO || h.len != sizeof(v)))
		ret = -EPROTO;
	if (!ret)
		ret = xfer_read_exact(x, &v, sizeof(v));
	if (!ret && v != XFER_VERSION) {
		ret = fail(-EPROTO, "protocol version %u (this memdump speaks %u)", v, XFER_VERSION);
		xfer_reply(x, -ret, fail_reason());
		return ret;
	}
	if (ret)
		return fail(ret, "not memdump's image stream from the %s", x->peer);
	return xfer_reply(x, 0, "");
}

/* GETs until DONE. */
static int serve_gets(struct xfer *x, int fd, uint64_t size, void *buf, uint64_t *served)
{
	char set[XFER_NAME_MAX + 1];
	struct xfer_hdr h;
	uint64_t req[2];
	int ret;

	for (;;) {
		ret = xfer_recv_hdr(x, &h);
		if (ret)
			return fail(ret, "the %s went before every page was fetched (%llu of %llu "
				    "bytes): the set is still whole on disk", x->peer,
				    (unsigned long long)*served, (unsigned long long)size);
		if (h.cmd == XFER_DONE && !h.len)
			return 0;
		if (h.cmd != XFER_GET)
			return fail(-EPROTO, "the %s sent something else than GET or DONE", x->peer);
		ret = lazy_read_get(x, h.len, req, set);
		if (!ret && *set)	/* a lazy dump's set is one process's */
			ret = fail(-EPROTO, "the %s asked for the pages of %s: only the dump's own "
				   "pages-1.img is served here", x->peer, set);
		if (!ret)
			ret = lazy_serve_get(x, req, fd, size, buf, served);
		if (ret)
			return ret;
	}
}

int lazy_serve(const struct options *o, const char *dir)
{
	struct xfer x = { .fd = -1 };
	uint64_t size, served = 0;
	void *buf = malloc(XFER_GET_MAX);
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd = -1, ret = 0;
	struct stat st;

	if (!buf)
		ret = -ENOMEM;
	else if (dirfd < 0)
		ret = fail(-errno, "cannot open %s: %s", dir, strerror(errno));
	else if ((fd = openat(dirfd, "pages-1.img", O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
		 fstat(fd, &st))
		ret = fail(-errno, "cannot open %s/pages-1.img: %s", dir, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		ret = fail(-EINVAL, "%s/pages-1.img is not a regular file", dir);
	size = ret ? 0 : (uint64_t)st.st_size;
	if (!ret)
		ret = page_server_accept(o, &x);
	if (!ret)
		ret = hello(&x);
	if (!ret) {
		pr_info("serving %s/pages-1.img (%llu bytes) to the %s", dir,
			(unsigned long long)size, x.peer);
		ret = xfer_send(&x, XFER_LAZY, &size, sizeof(size));
	}
	if (!ret)
		ret = serve_gets(&x, fd, size, buf, &served);
	if (!ret)
		pr_info("the lazy restore is done: %llu of %llu bytes served", (unsigned long long)served,
			(unsigned long long)size);
	xfer_close(&x);
	if (fd >= 0)
		close(fd);
	if (dirfd >= 0)
		close(dirfd);
	free(buf);
	return ret;
}
