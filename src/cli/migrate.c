/*
 * memdump migrate -t PID --to HOST:PORT [--pre-dumps N] [-D WORKDIR]
 *
 * Live migration to a `memdump migrate-receive` (pageserver.c), over one
 * connection (include/xfer.h):
 *
 *   1. N pre-dumps (default 2), the process running on: the first sends
 *      every page, each next one the pages written since (the dirty
 *      tracking of incremental dumps, track.c), spliced into the socket as
 *      a page server's; the other images of each set (small) follow from a
 *      local working directory.
 *   2. The final dump, frozen, with the pages written since the last
 *      pre-dump; at its post-dump hook (every image written, the inventory
 *      too, the process still frozen) the rest of the set is sent and the
 *      receiver restores it.
 *   3. Only when the receiver answers that the process runs there does the
 *      dump go on and kill the source. Any failure before (the receiver
 *      gone, its restore failing) fails the dump: the source runs on, its
 *      tracker removed, and the receiver removes what it got.
 *
 * Lazy post-copy (restore --lazy-pages) would take the final dump's pages
 * from the same connection at the receiver instead: the stream has room for
 * it (another SET, and pages fetched on demand); not done here.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "cli/options.h"
#include "dump/dump.h"
#include "hooks.h"
#include "log.h"
#include "xfer.h"
#include "mem/track.h"

struct migration {
	const struct options *o;
	struct xfer x;
	char work[PATH_MAX];	/* the local sets: work/1, work/2, ... */
	bool own_work;		/* made here: removed at the end */
	int set;		/* the current set's number */
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

/* Every image of the local set (pages-1.img went already), inventory.img last. */
static int send_set(struct migration *m, enum xfer_cmd end)
{
	char dir[PATH_MAX + 16];
	struct dirent *e;
	DIR *dp;
	int ret = 0;

	snprintf(dir, sizeof(dir), "%s/%d", m->work, m->set);
	dp = opendir(dir);
	if (!dp)
		return fail(-errno, "cannot open %s: %s", dir, strerror(errno));
	while (!ret && (e = readdir(dp)))
		if (e->d_name[0] != '.' && strcmp(e->d_name, "inventory.img"))
			ret = send_entry(m, dirfd(dp), e->d_name);
	if (!ret)
		ret = send_entry(m, dirfd(dp), "inventory.img");
	closedir(dp);
	return ret ? ret : xfer_request(&m->x, end);
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
	return ret;
}

static int one_dump(struct migration *m, bool final)
{
	const struct options *o = m->o;
	struct hooks h = { .fire = post_dump, .arg = m };
	char dir[PATH_MAX + 16], name[16], prev[32];
	struct dump_opts d = {
		.pid = o->pid, .dir = dir, .mode = o->mode, .progress = o->progress,
		.trace = o->trace, .ghost_limit = o->ghost_limit, .no_snapshot = true,
		.tcp_established = final && o->tcp_established, .pre_dump = !final,
		.xfer = &m->x, .hooks = final ? &h : NULL, .quiet = true,
	};
	int ret;

	m->set++;
	snprintf(name, sizeof(name), "%d", m->set);
	snprintf(dir, sizeof(dir), "%s/%d", m->work, m->set);
	snprintf(prev, sizeof(prev), "../%d", m->set - 1);
	d.prev_dir = m->set > 1 ? prev : NULL;
	ret = xfer_send(&m->x, XFER_SET, name, strlen(name));
	if (!ret)
		ret = dump_run(&d);
	if (!ret && !final)
		ret = send_set(m, XFER_COMMIT);
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

/* A failed migration leaves the source as it was: no tracker either. */
static void untrack(pid_t pid, int err)
{
	char why[1024];

	snprintf(why, sizeof(why), "%s", fail_reason());
	if (track_stop_run(pid))
		pr_debug("no tracker to remove in %d", pid);
	fail_clear();
	fail(err, "%s", why);
}

int cmd_migrate(const struct options *o)
{
	struct migration m = { .o = o, .x = { .fd = -1 } };
	char host[256];
	int port = 0, ret, pre = o->pre_dumps >= 0 ? o->pre_dumps : 2;

	if (!o->pid)
		return fail(-EINVAL, "migrate needs -t PID and --to HOST:PORT");
	ret = parse_to(o->to, host, sizeof(host), &port);
	if (!ret)
		ret = make_work(&m);
	if (!ret)
		ret = xfer_connect(&m.x, "receiver", host, port, &o->tls);
	for (int i = 0; i < pre && !ret; i++)
		ret = one_dump(&m, false);
	if (!ret)
		ret = one_dump(&m, true);
	if (ret && m.set)
		untrack(o->pid, ret);
	if (!ret && xfer_send(&m.x, XFER_DONE, NULL, 0)) {	/* it runs there, this one is gone */
		pr_warn("%s", fail_reason());
		fail_clear();
	}
	xfer_close(&m.x);
	if (m.own_work)
		nftw(m.work, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	if (!ret)
		printf("process %d migrated to %s:%d\n", o->pid, host, port);
	return ret;
}
