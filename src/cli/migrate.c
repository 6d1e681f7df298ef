/*
 * memdump migrate -t PID --to HOST:PORT [--pre-dumps N] [-D WORKDIR]
 *                 [--lazy-pages | --no-lazy-pages]
 *
 * Live migration to a `memdump migrate-receive` (pageserver.c), over one
 * connection (include/xfer.h):
 *
 *   1. Pre-dumps, the process running on (pre_dumps(): until they converge,
 *      or --pre-dumps N): the first sends every page, each next one the
 *      pages written since (the dirty tracking of incremental dumps,
 *      track.c), read after the thaw (dump/pagelate.c) into the socket as
 *      to a page server; the other images of each set (small) follow from a
 *      local working directory.
 *   2. The final dump, frozen, with the pages written since the last
 *      pre-dump; at its post-dump hook (every image written, the inventory
 *      too, the process still frozen) the rest of the set is sent and the
 *      receiver restores it: by default with --lazy-pages from the sets it
 *      holds (XFER_RESTORE_LAZY: the process runs before its memory is
 *      filled, and needs nothing of the source once it runs), with
 *      --no-lazy-pages all its memory filled first.
 *   3. Only when the receiver answers that the process runs there does the
 *      dump go on and kill the source. Any failure before (the receiver
 *      gone, its restore failing) fails the dump: the source runs on, its
 *      tracker removed, and the receiver removes what it got.
 *
 * --lazy-pages (CRIU's post-copy): the final dump writes its pages into the local
 * set (work/N/pages-1.img) instead of the connection, so the freeze sends
 * no pages; the receiver gets its size (LAZY) instead of the file and
 * restores with --lazy-pages, its page handler fetching byte ranges of it
 * (GET) over this connection. A local file rather than the page pipes:
 * the dump releases its pipes when it ends and kills the target, a file
 * outlives both and serves any range at any time. Each GET names the set
 * whose file it reads (the root's "", a tree's process's "proc-PID": one
 * source per set, each announced by its own LAZY). Once the source is
 * killed this side serves GETs until the receiver's DONE (every page is
 * in there), then removes the files.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "cli/options.h"
#include "ctx/proc_tree.h"
#include "dump/dump.h"
#include "hooks.h"
#include "log.h"
#include "xfer.h"
#include "cli/lazy_server.h"
#include "track/track.h"

/* A final set's pages-1.img kept here for the receiver's GETs. */
struct lazy_src {
	char set[XFER_NAME_MAX + 1];	/* "" the root's, "proc-PID" */
	int fd;
	uint64_t size;
};

#define LAZY_SRC_MAX	1024	/* a tree's processes (treedump.c's bound is lower) */

struct migration {
	const struct options *o;
	struct xfer x;
	char work[PATH_MAX];	/* the local sets: work/1, work/2, ... */
	bool own_work;		/* made here: removed at the end */
	int set;		/* the current set's number */
	bool lazy;		/* --lazy-pages: the final set's pages-1.img stays here */
	bool lazy_there;	/* the default: every page sent, the restore there lazy
				 * from its own images (XFER_RESTORE_LAZY) */
	struct lazy_src *srcs;	/* those files, open once the set is sent */
	int nr_srcs;
	void *buf;		/* XFER_GET_MAX: a GET's bytes */
	uint64_t served;	/* bytes of it sent */
	uint64_t frozen_served;	/* ... before the process ran there */
	bool all_in;		/* the receiver said every byte is there (DONE) */
	/* post-copy, from the switch on: GETs served by a thread of their own
	 * while the dump kills the source (start_serving()) */
	pthread_t server;
	bool serving;
	int serve_ret;
};

/* "HOST:PORT", "[V6]:PORT" */
static int parse_to(const char *to, char *host, size_t len, int *port)
{
	const char *colon = strrchr(to ? to : "", ':');
	size_t n;
	char *end;

	if (!to || !colon || colon == to)
		return fail(-EINVAL, "migrate needs --to HOST:PORT");
	n = (size_t)(colon - to);
	if (to[0] == '[' && colon[-1] == ']') {
		to++;
		n -= 2;
	}
	if (n >= len)
		return fail(-EINVAL, "bad --to %s", to);
	memcpy(host, to, n);
	host[n] = '\0';
	*port = (int)strtol(colon + 1, &end, 10);
	if (*end || *port <= 0 || *port > 65535)
		return fail(-EINVAL, "bad port in --to %s", to);
	return 0;
}

/* One file of a local set: a regular file as FILE + DATA, the parent link as LINK. */
static int send_entry(struct migration *m, int dirfd, const char *name)
{
	char buf[2 * 256 + 2];
	struct stat st;
	ssize_t n;
	size_t len = strlen(name);

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return fail(-errno, "cannot stat %s: %s", name, strerror(errno));
	if (S_ISREG(st.st_mode))
		return xfer_send_file(&m->x, dirfd, name);
	if (!S_ISLNK(st.st_mode) || len > 255)
		return 0;
	memcpy(buf, name, len + 1);
	n = readlinkat(dirfd, name, buf + len + 1, sizeof(buf) - len - 2);
	if (n <= 0)
		return fail(-errno, "cannot read the link %s: %s", name, strerror(errno));
	return xfer_send(&m->x, XFER_LINK, buf, len + 1 + (size_t)n);
}

/* One GET (hlen bytes after its header): the bytes of the pages-1.img of the set it names. */
static int serve_get(struct migration *m, uint64_t hlen)
{
	char set[XFER_NAME_MAX + 1];
	uint64_t req[2];
	int ret = lazy_read_get(&m->x, hlen, req, set);

	for (int i = 0; !ret && i < m->nr_srcs; i++)
		if (!strcmp(m->srcs[i].set, set))
			return lazy_serve_get(&m->x, req, m->srcs[i].fd, m->srcs[i].size, m->buf,
					      &m->served);
	return ret ? ret : fail(-EPROTO, "the %s asked for pages of %s, which the final set "
				"does not leave here", m->x.peer, *set ? set : "the root's set");
}

/*
 * The receiver's messages until it answers (until_reply: the REPLY to the
 * RESTORE) or says every page is in (DONE): its GETs served meanwhile (the
 * restore fetches what no lazy VMA takes before the process runs).
 */
static int serve_gets(struct migration *m, bool until_reply)
{
	struct xfer_hdr h;
	int ret;

	for (;;) {
		if (!until_reply && m->all_in)
			return 0;
		ret = xfer_recv_hdr(&m->x, &h);
		if (ret == -EPROTO)
			return fail(ret, "the %s sent something else than GET or DONE", m->x.peer);
		if (ret)
			return fail(ret, "the connection to the %s ended before every page was "
				    "fetched: %s", m->x.peer, strerror(-ret));
		if (h.cmd == XFER_REPLY && until_reply)
			return xfer_reply_body(&m->x, &h);
		if (h.cmd == XFER_DONE && !h.len)
			m->all_in = true;
		else if (h.cmd == XFER_GET)
			ret = serve_get(m, h.len);
		else
			ret = fail(-EPROTO, "the %s sent something else than GET or DONE",
				   m->x.peer);
		if (ret)
			return ret;
	}
}

/*
 * --lazy-pages, the final set: the pages-1.img of dirfd (the root's set "",
 * or a tree's process's "proc-PID") stays here, the receiver learns its size.
 */
static int send_lazy(struct migration *m, int dirfd, const char *set)
{
	struct lazy_src *l;
	struct stat st;
	uint64_t size;

	if (!m->srcs)
		m->srcs = calloc(LAZY_SRC_MAX, sizeof(*m->srcs));
	if (!m->buf)
		m->buf = malloc(XFER_GET_MAX);
	if (!m->buf || !m->srcs)
		return -ENOMEM;
	if (m->nr_srcs == LAZY_SRC_MAX)
		return fail(-E2BIG, "--lazy-pages: more than %d processes", LAZY_SRC_MAX);
	l = &m->srcs[m->nr_srcs];
	snprintf(l->set, sizeof(l->set), "%s", set);
	l->fd = openat(dirfd, "pages-1.img", O_RDONLY | O_CLOEXEC);
	if (l->fd < 0 || fstat(l->fd, &st)) {
		int ret = fail(-errno, "cannot open the final set's %s%spages-1.img: %s", set,
			       *set ? "/" : "", strerror(errno));

		if (l->fd >= 0)
			close(l->fd);
		return ret;
	}
	m->nr_srcs++;
	size = l->size = (uint64_t)st.st_size;
	pr_info("%s%spages-1.img of set %d (%llu bytes) stays here until the %s fetched it", set,
		*set ? "/" : "", m->set, (unsigned long long)size, m->x.peer);
	return xfer_send(&m->x, XFER_LAZY, &size, sizeof(size));
}

/* The images of one directory of the set (not lazy's pages-1.img), inventory.img last. */
static int send_files(struct migration *m, DIR *dp, bool lazy)
{
	struct dirent *e;
	int ret = 0;

	rewinddir(dp);
	while (!ret && (e = readdir(dp)))	/* directories: send_entry() skips them */
		if (e->d_name[0] != '.' && strcmp(e->d_name, "inventory.img") &&
		    !(lazy && !strcmp(e->d_name, "pages-1.img")))
			ret = send_entry(m, dirfd(dp), e->d_name);
	return ret ? ret : send_entry(m, dirfd(dp), "inventory.img");
}

/* A proc-PID directory of a tree's set (treedump.c) into the same one there (SUB). */
static int send_subset(struct migration *m, int dirfd, const char *name, bool lazy)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *dp = fd < 0 ? NULL : fdopendir(fd);
	int ret;

	if (!dp) {
		ret = fail(-errno, "cannot open %s/%d/%s: %s", m->work, m->set, name,
			   strerror(errno));
		if (fd >= 0)
			close(fd);
		return ret;
	}
	ret = xfer_send(&m->x, XFER_SUB, name, strlen(name));
	if (!ret && lazy)
		ret = send_lazy(m, fd, name);
	if (!ret)
		ret = send_files(m, dp, lazy);
	closedir(dp);
	return ret;
}

static bool is_dir(int dirfd, const char *name)
{
	struct stat st;

	return !fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode);
}

/* A tree's set: every other process's set first, then back in the root's (SUB ""). */
static int send_subsets(struct migration *m, DIR *dp, bool lazy)
{
	struct dirent *e;
	bool any = false;
	int ret = 0;

	while (!ret && (e = readdir(dp)))
		if (!strncmp(e->d_name, "proc-", 5) && is_dir(dirfd(dp), e->d_name)) {
			ret = send_subset(m, dirfd(dp), e->d_name, lazy);
			any = true;
		}
	return ret || !any ? ret : xfer_send(&m->x, XFER_SUB, "", 0);
}

/* Every image of the local set (pages-1.img went already), the root's inventory.img last. */
static int send_set(struct migration *m, enum xfer_cmd end)
{
	char dir[PATH_MAX + 16];
	DIR *dp;
	bool lazy = m->lazy && end == XFER_RESTORE;
	/* the default's RESTORE: lazily there, from its own sets */
	uint32_t flags = end == XFER_RESTORE && m->lazy_there ? XFER_RESTORE_LAZY : 0;
	int ret = 0;

	snprintf(dir, sizeof(dir), "%s/%d", m->work, m->set);
	dp = opendir(dir);
	if (!dp)
		return fail(-errno, "cannot open %s: %s", dir, strerror(errno));
	ret = send_subsets(m, dp, lazy);
	if (!ret && lazy)	/* after the last SUB "": the root's own */
		ret = send_lazy(m, dirfd(dp), "");
	if (!ret)
		ret = send_files(m, dp, lazy);
	closedir(dp);
	if (ret || !lazy)
		return ret ? ret : xfer_request_with(&m->x, end, flags ? &flags : NULL,
						     flags ? sizeof(flags) : 0);
	ret = xfer_send(&m->x, end, NULL, 0);
	return ret ? ret : serve_gets(m, true);
}

static void *serve_main(void *arg)
{
	struct migration *m = arg;

	m->serve_ret = serve_gets(m, false);
	return NULL;
}

/*
 * Post-copy: the process runs there and faults on the pages left here. The
 * dump still has the source to kill (freeing its memory: ~0.3 s for 4 GiB
 * here) and its set to finish: a thread serves the GETs meanwhile, so the
 * process there does not wait for that (joined in serve_pages()). From here
 * on the connection is the thread's.
 */
static int start_serving(struct migration *m)
{
	if (pthread_create(&m->server, NULL, serve_main, m))
		return fail(-EAGAIN, "cannot start the thread that serves the pages");
	m->serving = true;
	return 0;
}

/* The final dump's post-dump hook: the set to the receiver, which restores it. */
static int post_dump(void *arg, enum hook_point p, pid_t pid)
{
	struct migration *m = arg;
	uint64_t t = now_us();
	int ret;

	if (p != HOOK_POST_DUMP)
		return 0;
	ret = send_set(m, XFER_RESTORE);
	if (!ret)
		pr_info("process %d runs at the %s after %.3f s", pid, m->x.peer,
			(now_us() - t) / 1e6);
	m->frozen_served = m->served;	/* the restore's, and its handler's once it ran */
	if (!ret && m->lazy)
		ret = start_serving(m);
	return ret;
}

/* One dump of the migration: a pre-dump, or the final one; *pages: the pages it sent. */
static int one_dump(struct migration *m, bool final, uint64_t *pages)
{
	const struct options *o = m->o;
	struct hooks h = { .fire = post_dump, .arg = m };
	char dir[PATH_MAX + 16], name[16], prev[32];
	struct dump_opts d = {
		.pid = o->pid, .dir = dir, .progress = o->progress,
		/* the pre-dumps' pages sent after the thaw (pagelate.c) */
		.mode = final || o->mode_set ? o->mode : MODE_READ,
		.trace = o->trace, .ghost_limit = o->ghost_limit, .no_snapshot = true,
		.tcp_established = final && o->tcp_established, .pre_dump = !final,
		.xfer = final && m->lazy ? NULL : &m->x, .hooks = final ? &h : NULL,
		.quiet = true, .pages_written = pages,
	};
	int ret;

	m->set++;
	snprintf(name, sizeof(name), "%d", m->set);
	snprintf(dir, sizeof(dir), "%s/%d", m->work, m->set);
	snprintf(prev, sizeof(prev), "../%d", m->set - 1);
	d.prev_dir = m->set > 1 ? prev : NULL;
	*pages = 0;
	ret = xfer_send(&m->x, XFER_SET, name, strlen(name));
	if (!ret)
		ret = dump_run(&d);
	if (!ret && !final)
		ret = send_set(m, XFER_COMMIT);
	return ret;
}

/*
 * --lazy-pages, after the switch: the source is gone, its final pages are
 * in work/N/pages-1.img; serve them until the receiver says every page is
 * in (DONE), then remove them. A failure here is the destination's loss:
 * its page handler kills what it restored.
 */
static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f);

/*
 * After the switch: the final set's pages served from their open files. A
 * working directory of memdump's own goes first, so that a memdump killed
 * meanwhile leaves no copy of the process's memory in /tmp.
 */
static int serve_pages(struct migration *m)
{
	char path[PATH_MAX + XFER_NAME_MAX + 32];
	int ret;

	if (m->own_work && !nftw(m->work, rm_one, 16, FTW_DEPTH | FTW_PHYS))
		m->own_work = false;
	pthread_join(m->server, NULL);	/* serving since the switch (start_serving()) */
	m->serving = false;
	ret = m->serve_ret;

	for (int i = 0; !ret && i < m->nr_srcs; i++) {
		snprintf(path, sizeof(path), "%s/%d/%s%spages-1.img", m->work, m->set,
			 m->srcs[i].set, *m->srcs[i].set ? "/" : "");
		unlink(path);
	}
	if (!ret)
		pr_info("served %llu bytes of pages-1.img to the %s (%llu after the switch)",
			(unsigned long long)m->served, m->x.peer,
			(unsigned long long)(m->served - m->frozen_served));
	return ret;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(path);
}

static int make_work(struct migration *m)
{
	if (m->o->dir) {
		snprintf(m->work, sizeof(m->work), "%s", m->o->dir);
		if (mkdir(m->work, 0700) && errno != EEXIST)
			return fail(-errno, "cannot create %s: %s", m->work, strerror(errno));
		return 0;
	}
	snprintf(m->work, sizeof(m->work), "/tmp/memdump-migrate-XXXXXX");
	if (!mkdtemp(m->work))
		return fail(-errno, "cannot make a working directory: %s", strerror(errno));
	m->own_work = true;
	return 0;
}

/* A failed migration leaves the source as it was: no tracker either (a tree's: in each). */
static void untrack(pid_t pid, int err)
{
	struct proc_tree t = { 0 };
	char why[1024];

	snprintf(why, sizeof(why), "%s", fail_reason());
	if (track_stop_run(pid))
		pr_debug("no tracker to remove in %d", pid);
	if (!tree_collect(pid, &t))
		for (int i = 0; i < t.n; i++)
			if (t.procs[i].pid != pid && track_stop_run(t.procs[i].pid))
				pr_debug("no tracker to remove in %d", t.procs[i].pid);
	tree_free(&t);
	fail_clear();
	fail(err, "%s", why);
}

/*
 * The pre-dumps: --pre-dumps N, or until they converge. The first sends every
 * page, each next one those written while the one before was sent; the
 * final freeze writes those the last one leaves. So pre-dumps go on while
 * each sends less than half of what the one before did, until one sends less
 * than PRE_DUMP_ENOUGH (the final freeze then writes about that much or
 * less), at most PRE_DUMPS_MAX: a process that writes faster than its pages
 * go is migrated after those, its last dirty pages in the freeze.
 */
#define PRE_DUMPS_MAX		8
#define PRE_DUMP_ENOUGH		((16UL << 20) / PAGE_SIZE)

static int pre_dumps(struct migration *m)
{
	uint64_t pages, before = UINT64_MAX;
	int n = m->o->pre_dumps, ret = 0;

	for (int i = 0; !ret && i < (n >= 0 ? n : PRE_DUMPS_MAX); i++) {
		ret = one_dump(m, false, &pages);
		if (ret || n >= 0 || !i)
			continue;	/* the first's pages say nothing of what is written */
		if (pages < PRE_DUMP_ENOUGH || pages > before / 2)
			break;
		before = pages;
	}
	return ret;
}

int cmd_migrate(const struct options *o)
{
	/* post-copy: from the source with --lazy-pages (CRIU's), else from the images
	 * there unless --no-lazy-pages */
	struct migration m = { .o = o, .x = { .fd = -1 }, .lazy = o->lazy_pages,
			       .lazy_there = !o->lazy_pages && !o->no_lazy_pages };
	char host[256];
	uint64_t pages;
	int port = 0, ret;

	if (!o->pid)
		return fail(-EINVAL, "migrate needs -t PID and --to HOST:PORT");
	if (o->lazy_pages && o->no_lazy_pages)
		return fail(-EINVAL, "migrate: --lazy-pages or --no-lazy-pages, not both");
	ret = parse_to(o->to, host, sizeof(host), &port);
	if (!ret)
		ret = make_work(&m);
	if (!ret)
		ret = xfer_connect(&m.x, "receiver", host, port, &o->tls);
	if (!ret)
		ret = pre_dumps(&m);
	if (!ret)
		ret = one_dump(&m, true, &pages);
	if (m.serving) {	/* past the switch: it runs there, the source is killed */
		int r = serve_pages(&m);	/* its pages, until every one is there */

		ret = ret ?: r;
	} else if (ret && m.set) {
		untrack(o->pid, ret);
	} else if (!ret && xfer_send(&m.x, XFER_DONE, NULL, 0)) {	/* it runs there, this one is gone */
		pr_warn("%s", fail_reason());
		fail_clear();
	}
	xfer_close(&m.x);
	for (int i = 0; i < m.nr_srcs; i++)
		close(m.srcs[i].fd);
	free(m.srcs);
	free(m.buf);
	if (m.own_work)
		nftw(m.work, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	if (!ret)
		printf("process %d migrated to %s:%d\n", o->pid, host, port);
	return ret;
}
