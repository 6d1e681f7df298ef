/*
 * migrate --lazy-pages, the destination's restore (lazy.h). The final set's
 * pages-1.img stayed on the migration's source: here it is a file of its
 * size (memdump migrate-receive made it), holes where nothing was fetched.
 * Its bytes come through the socket MEMDUMP_LAZY_REMOTE_FD names (to
 * migrate-receive, which asks the source), each written into the file at
 * its place, so the file fills up and the rest of the restore reads it as
 * a local image:
 *
 *  - before anything runs (lazy_remote_plan, from lazy_plan()): every byte
 *    that no lazy VMA takes (the blob fills those VMAs from the file), each
 *    of those runs checked against its checksum;
 *  - of a tree (lazy_remote_shared, after premap_plan()): the root's runs
 *    that memdump reads itself before the fork, the memory the tree shares
 *    copy-on-write (premap_restore.c), and those a child reads from the
 *    root's set (its pages listed as the parent's), each checked;
 *  - as the process runs, by the page handler: a fault's pages first, then
 *    the lazy runs in order, each checked as it comes (lazy_handler.c's
 *    late checks), the memory filled after from the local file.
 *
 * Once every byte is in, the end (length 0) goes to migrate-receive, which
 * tells the source to stop. The socket lost before (the source or the
 * receiver gone): a fetch fails with why, and the handler kills the
 * restored processes with that line (never a page of zeros).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "fdio.h"
#include "common.h"
#include "hash64.h"
#include "log.h"
#include "ctx/restore_ctx.h"
#include "mem/lazy.h"

#define FETCH_MAX	(2ULL << 20)	/* a request (xfer.h's XFER_GET_MAX) */

struct lazy_remote {
	int sock;		/* to migrate-receive; -1 once every byte is in */
	int fd;			/* the image, opened to write */
	uint64_t pages;		/* its size in pages */
	uint8_t *have;		/* per page: in the file */
	uint64_t missing;	/* pages not in the file yet */
	uint8_t *buf;		/* FETCH_MAX */
	uint8_t *checked;	/* per run of the set: its checksum matched (checked once) */
	int timeout_ms;		/* the longest wait for an answer (MEMDUMP_LAZY_TIMEOUT) */
	pid_t pid;		/* whose set's image it is */
	char why[600];
};

int lazy_remote_fd(const struct restore_opts *o)
{
	const char *s = getenv("MEMDUMP_LAZY_REMOTE_FD");
	char *end;
	long fd;

	if (o->lazy_remote_sock)
		return o->lazy_remote_sock - 1;
	if (!s || !*s)
		return -1;
	fd = strtol(s, &end, 10);
	return *end || fd < 3 || fd > 1 << 20 ? -1 : (int)fd;
}

/* A tree's process's channel: "PID:FD" of MEMDUMP_LAZY_REMOTE_TREE ("PID:FD,PID:FD..."), or -1. */
int lazy_remote_member_fd(pid_t pid)
{
	const char *s = getenv("MEMDUMP_LAZY_REMOTE_TREE");

	while (s && *s) {
		char *end;
		long p = strtol(s, &end, 10), fd;

		if (*end != ':')
			return -1;
		fd = strtol(end + 1, &end, 10);
		if (*end && *end != ',')
			return -1;
		if (p == pid)
			return fd < 3 || fd > 1 << 20 ? -1 : (int)fd;
		s = *end ? end + 1 : end;
	}
	return -1;
}

/* MEMDUMP_LAZY_TIMEOUT (seconds, from migrate-receive), in ms. */
static int timeout_ms(void)
{
	const char *s = getenv("MEMDUMP_LAZY_TIMEOUT");
	char *end;
	long secs = s && *s ? strtol(s, &end, 10) : 0;

	if (secs < 1 || secs > 3600 || *end)
		secs = LAZY_TIMEOUT_SECS + LAZY_TIMEOUT_SLACK;
	return (int)secs * 1000;
}

const char *lazy_remote_why(const struct lazy_remote *lr)
{
	return lr->why;
}

void lazy_remote_fds(const struct lazy_remote *lr, int fds[2])
{
	fds[0] = lr ? lr->sock : -1;
	fds[1] = lr ? lr->fd : -1;
}

void lazy_remote_free(struct lazy_remote *lr)
{
	if (!lr)
		return;
	if (lr->sock >= 0)
		close(lr->sock);
	if (lr->fd >= 0)
		close(lr->fd);
	free(lr->have);
	free(lr->checked);
	free(lr->buf);
	free(lr);
}

static int lost(struct lazy_remote *lr, int err)
{
	snprintf(lr->why, sizeof(lr->why), "lost the migration's source of pages-1.img "
		 "(memdump migrate-receive gone: %s)", strerror(-err));
	return err;
}

/* Every byte in: the end to migrate-receive (the source may go now). */
static void all_in(struct lazy_remote *lr)
{
	uint64_t end[2] = { 0, 0 };

	if (fd_write_full(lr->sock, end, sizeof(end)))
		pr_warn("lazy-pages: cannot tell migrate-receive that every page is in");
	close(lr->sock);
	lr->sock = -1;
	pr_info("lazy-pages: every page of pages-1.img of process %d is here from the "
		"migration's source", lr->pid);
}

/*
 * A read of the answer to req that failed: every read waits at most the bounded
 * wait (SO_RCVTIMEO, remote_open), so a migrate-receive stopped before or in the
 * middle of an answer ends the fetch (a stop mid-answer used to block for ever).
 */
static int answer_failed(struct lazy_remote *lr, int ret, const uint64_t req[2])
{
	if (ret != -EAGAIN && ret != -EWOULDBLOCK)
		return lost(lr, ret);
	snprintf(lr->why, sizeof(lr->why), "no answer in %d s for bytes %#llx-%#llx of "
		 "pages-1.img from the migration's source (memdump migrate-receive stopped?)",
		 lr->timeout_ms / 1000, (unsigned long long)req[0],
		 (unsigned long long)(req[0] + req[1]));
	return -ETIMEDOUT;
}

/* Pages [pg, pg + n) from the source into the file. */
static int fetch_pages(struct lazy_remote *lr, uint64_t pg, uint64_t n)
{
	uint64_t req[2] = { pg * PAGE_SIZE, n * PAGE_SIZE };
	struct lazy_remote_reply a;
	int ret;

	if (lr->sock < 0)
		return lost(lr, -EPIPE);
	ret = fd_write_full(lr->sock, req, sizeof(req));
	if (ret)
		return lost(lr, ret);
	ret = fd_read_full(lr->sock, &a, sizeof(a));
	if (ret)
		return answer_failed(lr, ret, req);
	if (a.status < 0) {
		char msg[512];
		uint32_t m = a.msg_len < sizeof(msg) ? a.msg_len : sizeof(msg) - 1;

		if (fd_read_full(lr->sock, msg, m))
			m = 0;
		msg[m] = '\0';
		snprintf(lr->why, sizeof(lr->why), "lost the migration's source of pages-1.img: %s",
			 msg);
		return a.status;
	}
	if (a.len != req[1])
		return lost(lr, -EPROTO);
	ret = fd_read_full(lr->sock, lr->buf, a.len);
	if (ret)
		return answer_failed(lr, ret, req);
	if (pwrite(lr->fd, lr->buf, a.len, (off_t)req[0]) != (ssize_t)a.len) {
		snprintf(lr->why, sizeof(lr->why), "cannot write pages-1.img: %s", strerror(errno));
		return -EIO;
	}
	memset(lr->have + pg, 1, n);
	lr->missing -= n;
	if (!lr->missing)
		all_in(lr);
	return 0;
}

int lazy_remote_fetch(struct lazy_remote *lr, uint64_t off, uint64_t len)
{
	uint64_t pg = off / PAGE_SIZE, end = (off + len + PAGE_SIZE - 1) / PAGE_SIZE;

	if (end > lr->pages) {
		snprintf(lr->why, sizeof(lr->why), "bytes past the end of pages-1.img wanted");
		return -EINVAL;
	}
	while (pg < end) {
		uint64_t n = 0;
		int ret;

		if (lr->have[pg]) {
			pg++;
			continue;
		}
		while (pg + n < end && !lr->have[pg + n] && n < FETCH_MAX / PAGE_SIZE)
			n++;
		ret = fetch_pages(lr, pg, n);
		if (ret)
			return ret;
		pg += n;
	}
	return 0;
}

/* Every read of sock waits at most ms (SO_RCVTIMEO): then EAGAIN. */
static int set_read_bound(int sock, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	return setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

static int remote_open(struct rst *r, int sock)
{
	struct lazy_remote *lr = calloc(1, sizeof(*lr));
	char path[64];
	struct stat st;

	if (!lr)
		return -ENOMEM;
	lr->sock = sock;
	lr->pid = r->pid;
	lr->timeout_ms = timeout_ms();
	r->lazy_remote = lr;
	if (set_read_bound(sock, lr->timeout_ms))
		return fail(-errno, "cannot bound the wait for migrate-receive: %s", strerror(errno));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", r->ds.pages_fd);
	lr->fd = open(path, O_WRONLY | O_CLOEXEC);
	if (lr->fd < 0 || fstat(lr->fd, &st))
		return fail(-errno, "cannot open pages-1.img to fill it from the source: %s",
			    strerror(errno));
	lr->pages = (uint64_t)st.st_size / PAGE_SIZE;
	lr->missing = lr->pages;
	lr->have = calloc(lr->pages + 1, 1);
	lr->buf = malloc(FETCH_MAX);
	lr->checked = calloc(r->ds.nr_runs + 1, 1);
	if (!lr->have || !lr->buf || !lr->checked)
		return -ENOMEM;
	if (!lr->missing)	/* an empty image (a process that wrote nothing since): all in */
		all_in(lr);
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* The bytes of the lazy runs of the image, as sorted { off, end } pairs; n of them. */
static uint64_t (*lazy_ranges(struct rst *r, size_t *n))[2]
{
	const struct rst_vma *rv = (const struct rst_vma *)(r->area + r->a->vmas_off);
	uint64_t (*l)[2] = calloc(r->ds.nr_runs + 1, sizeof(*l));

	*n = 0;
	for (size_t i = 0; l && i < r->a->nr_vmas; i++)
		for (size_t k = rv[i].first_run; rv[i].lazy && k < rv[i].first_run + rv[i].nr_runs;
		     k++) {
			const struct dump_run *run = &r->ds.runs[k];

			if (run->present && run->fd == r->ds.pages_fd) {
				l[*n][0] = run->off;
				l[*n][1] = run->off + (run->end - run->start);
				(*n)++;
			}
		}
	if (l && *n)
		qsort(l, *n, sizeof(*l), cmp_range);
	return l;
}

/* Everything of the image between the lazy runs: the blob reads it before the process runs. */
static int fetch_eager(struct rst *r)
{
	struct lazy_remote *lr = r->lazy_remote;
	uint64_t at = 0, size = lr->pages * PAGE_SIZE;
	size_t n;
	uint64_t (*l)[2] = lazy_ranges(r, &n);
	int ret = l ? 0 : -ENOMEM;

	for (size_t i = 0; !ret && i <= n; i++) {
		uint64_t to = i < n ? l[i][0] : size;

		if (to > at)
			ret = lazy_remote_fetch(lr, at, to - at);
		if (i < n && l[i][1] > at)
			at = l[i][1];
	}
	free(l);
	if (ret)
		return fail(ret, "%s", lr->why);
	return 0;
}

/*
 * A run the blob fills, as fetched, against its checksum; once: each piece of
 * it a child reads as its parent's asks again (a 64 MiB run was hashed once per
 * piece, which took a minute under ASan and load).
 */
static int check_run(struct rst *r, const struct dump_run *run)
{
	uint64_t len = run->end - run->start, done = 0;
	uint8_t *buf = r->lazy_remote->buf;
	size_t k = (size_t)(run - r->ds.runs);
	struct hash64 h;

	if (r->lazy_remote->checked[k])
		return 0;
	h64_init(&h);
	while (done < len) {
		size_t n = len - done < FETCH_MAX ? len - done : FETCH_MAX;

		if (pread(r->ds.pages_fd, buf, n, (off_t)(run->off + done)) != (ssize_t)n)
			return fail(-EIO, "cannot read pages-1.img: %s", strerror(errno));
		h64_update(&h, buf, n);
		done += n;
	}
	if (h64_final(&h) != run->sum)
		return fail(-EIO, "image pages-1.img is corrupt: the pages of the run at %#llx "
			    "(%llu pages) from the migration's source do not match their checksum",
			    (unsigned long long)run->start, (unsigned long long)(len / PAGE_SIZE));
	r->lazy_remote->checked[k] = 1;
	return 0;
}

static int check_eager(struct rst *r)
{
	const struct rst_vma *rv = (const struct rst_vma *)(r->area + r->a->vmas_off);
	int ret = 0;

	for (size_t i = 0; !ret && i < r->a->nr_vmas; i++)
		for (size_t k = rv[i].first_run;
		     !ret && !rv[i].lazy && k < rv[i].first_run + rv[i].nr_runs; k++) {
			const struct dump_run *run = &r->ds.runs[k];

			if (run->present && run->has_sum && run->fd == r->ds.pages_fd)
				ret = check_run(r, run);
		}
	return ret;
}

/* The owner's run holding the owner's pages at addr (a child's piece of it), or NULL. */
static const struct dump_run *owner_run(const struct rst *owner, uint64_t addr)
{
	size_t i = dumpset_run_after(&owner->ds, addr);

	if (i < owner->ds.nr_runs && owner->ds.runs[i].start <= addr &&
	    addr < owner->ds.runs[i].end)
		return &owner->ds.runs[i];
	return NULL;
}

/* A run of the owner's pages-1.img, whole, fetched and checked against its checksum. */
static int fetch_run(struct rst *owner, const struct dump_run *run)
{
	struct lazy_remote *lr = owner->lazy_remote;
	int ret = lazy_remote_fetch(lr, run->off, run->end - run->start);

	if (ret)
		return fail(ret, "%s", lr->why);
	return run->has_sum ? check_run(owner, run) : 0;
}

/* The process of the tree whose pages-1.img fd is (m itself, or one above it), or NULL. */
static struct rst *pages_owner(struct rst *m, int fd)
{
	for (struct rst *p = m; p; p = p->tree_parent)
		if (p->ds.pages_fd == fd)
			return p;
	return NULL;
}

/* The premapped VMA of m that holds run, or -1. */
static long premap_vma(const struct rst *m, const struct dump_run *run)
{
	for (size_t j = 0; m->premap && j < m->ds.mm->n_vmas; j++)
		if (m->premap[j] && run->start >= m->ds.mm->vmas[j]->start &&
		    run->end <= m->ds.mm->vmas[j]->end)
			return (long)j;
	return -1;
}

/*
 * Is run, of owner's pages-1.img, read before anything runs? m's own in a
 * premapped VMA (memdump fills it before the fork); a child's piece of an
 * ancestor's pages unless its VMA is inherited (those pages are the
 * ancestor's slot's).
 */
static bool read_early(const struct rst *owner, const struct rst *m, const struct dump_run *run)
{
	long j = premap_vma(m, run);

	if (m == owner)
		return j >= 0;
	return j < 0 || !m->inherited[j];
}

/* The remote pages in m's runs that are read before anything runs, fetched and checked. */
static int fetch_shared(struct rst *m, uint64_t *got)
{
	for (size_t k = 0; k < m->ds.nr_runs; k++) {
		const struct dump_run *run = &m->ds.runs[k], *q = run;
		struct rst *owner = run->present ? pages_owner(m, run->fd) : NULL;
		uint64_t before;
		int ret;

		if (!owner || !owner->lazy_remote || !read_early(owner, m, run))
			continue;	/* local, the page handler's, or inherited */
		if (m != owner && !(q = owner_run(owner, run->start)))
			return fail(-EIO, "pages at %#llx of process %d are listed as its parent's, "
				    "which does not hold them", (unsigned long long)run->start, m->pid);
		before = owner->lazy_remote->missing;
		ret = fetch_run(owner, q);
		if (ret)
			return ret;
		*got += before - owner->lazy_remote->missing;
	}
	return 0;
}

int lazy_remote_shared(struct rst *root, struct rst *m)
{
	uint64_t got = 0;
	int ret;

	(void)root;
	ret = fetch_shared(m, &got);
	if (!ret && got)
		pr_info("lazy-pages: %llu pages of pages-1.img process %d reads before anything runs "
			"(shared copy-on-write) fetched and checked", (unsigned long long)got, m->pid);
	return ret;
}

int lazy_remote_plan(struct rst *r)
{
	/* a tree's process (it has a parent in the tree): its own channel */
	int sock = r->tree_parent ? lazy_remote_member_fd(r->pid) : lazy_remote_fd(r->o), ret;

	if (sock < 0 || !r->ds.pages_remote || r->ds.pages_fd < 0)
		return 0;
	if (fcntl(sock, F_SETFD, FD_CLOEXEC))
		return fail(-errno, "MEMDUMP_LAZY_REMOTE_FD %d: %s", sock, strerror(errno));
	if (!r->tree_parent)
		unsetenv("MEMDUMP_LAZY_REMOTE_FD");	/* this process's own, once */
	ret = remote_open(r, sock);
	if (!ret)
		ret = fetch_eager(r);
	if (!ret)
		ret = check_eager(r);
	if (!ret)
		pr_info("lazy-pages: %llu of %llu pages of pages-1.img of process %d to come from "
			"the migration's source", (unsigned long long)r->lazy_remote->missing,
			(unsigned long long)r->lazy_remote->pages, r->pid);
	return ret;
}
