/*
 * The receiving side of an image transfer (include/xfer.h):
 *
 *   memdump page-server -D DIR [--address A] --port P [--status-fd FD]
 *       serves one dump (dump --page-server): pages-1.img and the pagemap
 *       into DIR, synced at the dump's COMMIT; exits 0 once the dump closed
 *       the connection after it, else removes what it wrote and fails.
 *   memdump migrate-receive -D DIR [--address A] --port P [--status-fd FD]
 *       serves one migration (memdump migrate): each set into DIR/NAME, and
 *       at RESTORE the last one restored (detached); exits 0 at DONE. Lost
 *       before the restore: everything received is removed, nothing runs.
 *       After a LAZY set (migrate --lazy-pages) the restore takes
 *       --lazy-pages and a channel to this process per set left on the
 *       source (the root's MEMDUMP_LAZY_REMOTE_FD, a tree's processes'
 *       MEMDUMP_LAZY_REMOTE_TREE; mem/lazy_remote.c): its page handler's
 *       requests for bytes of that set's pages-1.img go to the source as
 *       GET naming the set, the answers back (while the restore runs too:
 *       it fetches what no lazy VMA takes); the handler logs to this stderr
 *       (MEMDUMP_LAZY_LOG_FD). Once every channel says its set is in, DONE
 *       goes to the source and this exits. A RESTORE with XFER_RESTORE_LAZY
 *       (migrate's default) restores with --lazy-pages too, but every page
 *       is here: the handler fills the memory from the sets received, the
 *       source is no longer needed once the process runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdio.h"
#include "common.h"
#include "cli/options.h"
#include "log.h"
#include "xfer.h"
#include "cli/lazy_proxy.h"
#include "cli/lazy_server.h"
#include "image/dumpset.h"
#include "mem/lazy.h"
#include "mem/pages.h"

#define MADE_MAX	4096

struct rx {
	struct xfer conn;	/* the one client: its socket, its TLS session */
	int root;		/* -D */
	int setfd;		/* the current set's directory: root or root/SET */
	int dirfd;		/* where FILE goes: setfd, or a directory of it (SUB: a tree's
				 * proc-PID) */
	char set[XFER_NAME_MAX + 1];
	char cur[2 * XFER_NAME_MAX + 2];	/* dirfd's path below root, "" for root */
	int fd;			/* the current file, or -1 */
	char *made[MADE_MAX];	/* paths below root, in the order made, to remove on failure */
	bool made_dir[MADE_MAX];
	int nr_made;
	bool migrate;		/* SET, LINK, RESTORE allowed */
	bool committed;		/* a page server: everything synced */
	bool restored;		/* migrate-receive: the process runs here now */
	bool lazy_here;		/* RESTORE_LAZY: restored with --lazy-pages, its pages all
				 * here (filled by its page handler from this set's chain) */
	bool file_pages;	/* the current file is a pages image */
	uint64_t pages_bytes;	/* of pages images received in the current set */
	bool lazy;		/* the current set's pages-1.img is fetched from the source */
	struct lazy_proxies lps;	/* lazy: the restore's page handler's requests to it,
					 * one channel per set (the root's "", a tree's proc-PID) */
	int lazy_timeout;	/* s: --lazy-timeout */
	const struct options *o;
};

static int remember(struct rx *r, const char *name, bool dir)
{
	char path[3 * XFER_NAME_MAX + 3];

	if (r->nr_made == MADE_MAX)
		return fail(-E2BIG, "too many files received");
	snprintf(path, sizeof(path), "%s%s%s", r->cur, r->cur[0] ? "/" : "", name);
	r->made[r->nr_made] = strdup(path);
	r->made_dir[r->nr_made] = dir;
	return r->made[r->nr_made++] ? 0 : -ENOMEM;
}

/* Everything received goes: no set that looks complete is left. */
static void remove_made(struct rx *r)
{
	for (int i = r->nr_made - 1; i >= 0; i--)
		unlinkat(r->root, r->made[i], r->made_dir[i] ? AT_REMOVEDIR : 0);
	fsync(r->root);
}

static void free_made(struct rx *r)
{
	for (int i = 0; i < r->nr_made; i++)
		free(r->made[i]);
	r->nr_made = 0;
}

/* A name of one path component, not hidden. */
static int read_name(struct rx *r, uint64_t len, char *name)
{
	int ret;

	if (!len || len > XFER_NAME_MAX)
		return fail(-EPROTO, "a name of %llu bytes", (unsigned long long)len);
	ret = xfer_read_exact(&r->conn, name, len);
	if (ret)
		return ret;
	name[len] = '\0';
	if (strlen(name) != len || strchr(name, '/') || name[0] == '.')
		return fail(-EPROTO, "a bad file name was sent");
	return 0;
}

static int close_file(struct rx *r)
{
	int ret = 0;

	if (r->fd < 0)
		return 0;
	if (fsync(r->fd))
		ret = fail(-errno, "cannot sync a received image: %s", strerror(errno));
	if (close(r->fd) && !ret)
		ret = fail(-errno, "cannot write a received image: %s", strerror(errno));
	r->fd = -1;
	return ret;
}

/* Back in the set's own directory from a directory of it (SUB), which is synced. */
static int leave_sub(struct rx *r)
{
	int ret = 0;

	if (r->dirfd == r->setfd)
		return 0;
	if (fsync(r->dirfd))
		ret = fail(-errno, "cannot sync %s/%s: %s", r->o->dir, r->cur, strerror(errno));
	close(r->dirfd);
	r->dirfd = r->setfd;
	snprintf(r->cur, sizeof(r->cur), "%s", r->set);
	return ret;
}

static int on_set(struct rx *r, uint64_t len)
{
	char name[XFER_NAME_MAX + 1];
	int ret = r->migrate ? read_name(r, len, name) : fail(-EPROTO, "SET to a page server");

	if (!ret)
		ret = close_file(r);
	if (!ret)
		ret = leave_sub(r);
	if (ret)
		return ret;
	if (mkdirat(r->root, name, 0700))
		return fail(-errno, "cannot make %s: %s", name, strerror(errno));
	if (r->setfd != r->root)
		close(r->setfd);
	r->setfd = r->dirfd = r->root;
	r->set[0] = r->cur[0] = '\0';
	ret = remember(r, name, true);
	r->dirfd = openat(r->root, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (r->dirfd < 0) {
		r->dirfd = r->root;
		return fail(-errno, "cannot open %s: %s", name, strerror(errno));
	}
	r->setfd = r->dirfd;
	snprintf(r->set, sizeof(r->set), "%s", name);
	snprintf(r->cur, sizeof(r->cur), "%s", name);
	r->pages_bytes = 0;
	r->lazy = false;
	lazy_proxies_free(&r->lps);	/* a set's LAZYs are its own */
	return ret;
}

/* Whether path (below root) is a directory this server made. */
static bool made_dir(const struct rx *r, const char *path)
{
	for (int i = 0; i < r->nr_made; i++)
		if (r->made_dir[i] && !strcmp(r->made[i], path))
			return true;
	return false;
}

/*
 * SUB: the files from here on go into a directory of the set (a tree's
 * proc-PID, made the first time it is named), or the set's own ("").
 */
static int on_sub(struct rx *r, uint64_t len)
{
	char name[XFER_NAME_MAX + 1], path[sizeof(r->cur)];
	int ret = len ? read_name(r, len, name) : 0;

	if (!ret)
		ret = close_file(r);
	if (!ret)
		ret = leave_sub(r);
	if (ret || !len)
		return ret;
	snprintf(path, sizeof(path), "%s%s%s", r->set, r->set[0] ? "/" : "", name);
	if (!made_dir(r, path)) {
		int made = mkdirat(r->setfd, name, 0700) ? -errno : 0;

		/* one there already is the dump's own (-D shared, as zdtm's): not removed */
		if (made && made != -EEXIST)
			return fail(made, "cannot make %s: %s", path, strerror(-made));
		ret = made ? 0 : remember(r, name, true);
		if (ret)
			return ret;
	}
	r->dirfd = openat(r->setfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (r->dirfd < 0) {
		r->dirfd = r->setfd;
		return fail(-errno, "cannot open %s: %s", path, strerror(errno));
	}
	snprintf(r->cur, sizeof(r->cur), "%s", path);
	return 0;
}

static int on_file(struct rx *r, uint64_t len)
{
	char name[XFER_NAME_MAX + 1];
	int ret = read_name(r, len, name);

	if (!ret)
		ret = close_file(r);
	if (ret)
		return ret;
	r->fd = openat(r->dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		       0600);
	if (r->fd < 0)
		return fail(-errno, "cannot create %s: %s", name, strerror(errno));
	pr_debug("receiving %s", name);
	r->file_pages = !strncmp(name, "pages-", 6);
	return remember(r, name, false);
}

static int on_data(struct rx *r, uint64_t len)
{
	int ret;

	if (r->fd < 0)
		return fail(-EPROTO, "data before a file");
	ret = xfer_recv_data(&r->conn, r->fd, len);
	if (!ret && r->file_pages)
		r->pages_bytes += len;
	if (ret == -EPIPE)
		return ret;
	return ret ? fail(ret, "cannot write a received image: %s", strerror(-ret)) : 0;
}

static int on_link(struct rx *r, uint64_t len)
{
	char buf[2 * XFER_NAME_MAX + 2], *target;
	int ret;

	if (!r->migrate || len >= sizeof(buf) || len < 3)
		return fail(-EPROTO, "a bad link was sent");
	ret = xfer_read_exact(&r->conn, buf, len);
	if (ret)
		return ret;
	buf[len] = '\0';
	target = buf + strlen(buf) + 1;
	if (target >= buf + len || strchr(buf, '/') || buf[0] == '.' || !buf[0])
		return fail(-EPROTO, "a bad link was sent");
	if (symlinkat(target, r->dirfd, buf))
		return fail(-errno, "cannot make the link %s: %s", buf, strerror(errno));
	return remember(r, buf, false);
}

/*
 * The process will depend on the source for its pages: a source host that
 * vanishes without a word (no FIN, no RST) must end the connection too, or
 * the page handler would wait on it forever (TCP keepalive, user timeout).
 */
static void keep_alive(int fd)
{
	int on = 1, idle = 10, intvl = 5, cnt = 3;
	unsigned int user_ms = 30000;

	if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms, sizeof(user_ms)))
		pr_warn("cannot set TCP keepalive on the connection to the source: %s",
			strerror(errno));
}

/* migrate --lazy-pages: pages-1.img of this set stays on the source; a file of its size here. */
static int on_lazy(struct rx *r, uint64_t len)
{
	struct lazy_proxy *lp;
	const char *set;
	uint64_t size;
	int ret = r->migrate && len == sizeof(size) ? 0 : -EPROTO;
	int fd;

	if (!ret)
		ret = xfer_read_exact(&r->conn, &size, sizeof(size));
	if (!ret)
		ret = close_file(r);
	if (ret)
		return ret;
	set = r->dirfd == r->setfd ? "" : r->cur + strlen(r->set) + 1;	/* SUB's proc-PID */
	if (*set && (strncmp(set, "proc-", 5) || atoi(set + 5) <= 0))
		return fail(-EPROTO, "LAZY in %s: not a tree's process's set", r->cur);
	if (lazy_proxies_find(&r->lps, set))
		return fail(-EPROTO, "a second LAZY in %s", r->cur);
	lp = lazy_proxies_add(&r->lps, set, &ret);
	if (!lp)
		return ret;
	fd = openat(r->dirfd, "pages-1.img", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		    0600);
	if (fd < 0)
		return fail(-errno, "cannot create pages-1.img: %s", strerror(errno));
	if (ftruncate(fd, (off_t)size))
		ret = fail(-errno, "cannot size pages-1.img: %s", strerror(errno));
	close(fd);
	r->lazy = true;
	lp->size = size;
	lp->conn = &r->conn;
	lp->timeout = r->lazy_timeout;	/* the GETs name lp->set, whose pages-1.img it is */
	snprintf(lp->what, sizeof(lp->what), "%.160s/%.130s", r->o->dir, r->cur);
	keep_alive(r->conn.fd);
	return ret ? ret : remember(r, "pages-1.img", false);
}

/*
 * A pre-copied set (a pre-dump's) verified as it arrives (at the COMMIT after
 * its inventory.img, which the source waits on before its next dump), while
 * the source still runs: a damaged one fails the migration before the freeze. The
 * restore of the final set then leaves those sets' runs to the page
 * handler's late check (docs/pageserver.md: what is checked when).
 */
static int verify_precopied(struct rx *r)
{
	int ret;

	if (faccessat(r->setfd, "inventory.img", F_OK, AT_SYMLINK_NOFOLLOW))
		return 0;	/* the dump's COMMIT of its pages: the set's images come next */
	ret = dumpset_verify_predump(r->setfd);
	if (ret < 0) {
		fail_context("set %s received: ", r->set);
		return ret;
	}
	if (!ret)
		pr_info("set %s verified as it arrived (a pre-dump's)", r->set);
	return 0;
}

static int on_commit(struct rx *r)
{
	int ret = close_file(r);

	if (!ret)
		ret = leave_sub(r);
	if (!ret && (fsync(r->setfd) || fsync(r->root)))
		ret = fail(-errno, "cannot sync %s: %s", r->o->dir, strerror(errno));
	if (!ret && r->migrate)
		pr_info("set %s: %llu bytes of pages received", r->set,
			(unsigned long long)r->pages_bytes);
	if (!ret && r->migrate)
		ret = verify_precopied(r);
	if (xfer_reply(&r->conn, ret ? -ret : 0, ret ? fail_reason() : "") && !ret)
		ret = -EPIPE;
	r->committed = !ret;
	return ret;
}

/*
 * The restore's ends of the page channels, kept open and named: the root's
 * set's in MEMDUMP_LAZY_REMOTE_FD, a tree's processes' in
 * MEMDUMP_LAZY_REMOTE_TREE ("PID:FD,PID:FD...", mem/lazy_remote.c).
 */
static void lazy_channels_env(const struct rx *r, const int *chans)
{
	size_t cap = (size_t)r->lps.n * 24 + 1, at = 0;
	char *tree = calloc(cap, 1), fd[16];

	for (int i = 0; i < r->lps.n; i++) {
		const char *set = r->lps.p[i].set;

		fcntl(chans[i], F_SETFD, 0);
		if (!*set) {
			snprintf(fd, sizeof(fd), "%d", chans[i]);
			setenv("MEMDUMP_LAZY_REMOTE_FD", fd, 1);
		} else if (tree) {
			at += (size_t)snprintf(tree + at, cap - at, "%s%d:%d", at ? "," : "",
					       atoi(set + 5), chans[i]);
		}
	}
	if (tree && at)
		setenv("MEMDUMP_LAZY_REMOTE_TREE", tree, 1);
	free(tree);
}

/* The restore's child side: its stderr the pipe, the lazy channels kept open and named. */
static void __attribute__((noreturn)) exec_restore(struct rx *r, int err, const int *chans)
{
	char path[PATH_MAX], verb[8], fd[16];
	int chan = chans ? chans[0] : -1;
	bool lazy = chan >= 0 || r->lazy_here;
	const char *argv[] = { "memdump", "restore", "-D", path, "-d", "-v", verb,
			       lazy ? "--lazy-pages" : NULL, NULL };

	snprintf(path, sizeof(path), "%s/%s", r->o->dir, r->set);
	snprintf(verb, sizeof(verb), "%d", r->o->verbosity);
	if (lazy) {	/* the handler logs here (not to the pipe: it outlives this) */
		int log = fcntl(STDERR_FILENO, F_DUPFD, 3);

		snprintf(fd, sizeof(fd), "%d", log);
		setenv("MEMDUMP_LAZY_LOG_FD", fd, 1);
	}
	dup2(err, STDERR_FILENO);
	if (chan >= 0) {	/* pages from the source through these channels */
		lazy_channels_env(r, chans);
		snprintf(fd, sizeof(fd), "%d", r->lazy_timeout + LAZY_TIMEOUT_SLACK);
		setenv("MEMDUMP_LAZY_TIMEOUT", fd, 1);
	}
	/* the sets were verified as they arrived: their runs are checked again as the
	 * handler serves them, not whole before the process runs (lazy_restore.c) */
	if (r->lazy_here)
		setenv("MEMDUMP_LAZY_CHECK", "late", 1);
	execv("/proc/self/exe", (char **)argv);
	_exit(127);
}

/* n bytes more of the restore's stderr into msg, keeping its tail. */
static void keep_tail(char *msg, size_t len, ssize_t *got, const char *buf, ssize_t n)
{
	for (ssize_t i = 0; i < n; i++) {
		if ((size_t)*got == len - 1) {
			memmove(msg, msg + len / 2, len - 1 - len / 2);
			*got = (ssize_t)(len - 1 - len / 2);
		}
		msg[(*got)++] = buf[i];
	}
}

/*
 * The restore's stderr until it exits (not to its end: with --lazy-pages
 * its page handler holds it on), the last line in msg.
 */
static void read_restore_err(struct rx *r, int fd, pid_t pid, char *msg, size_t len)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	bool exited = pidfd < 0;	/* no pidfd: read to the end */
	char buf[4096];
	ssize_t got = 0, n;
	struct pollfd p[LAZY_PROXIES_MAX + 2];

	for (;;) {
		bool chan = false;

		p[0] = (struct pollfd){ fd, POLLIN, 0 };
		p[1] = (struct pollfd){ pidfd, POLLIN, 0 };
		lazy_proxies_pollfds(&r->lps, p + 2);
		if (!exited && poll(p, (nfds_t)r->lps.n + 2, -1) < 0 && errno == EINTR)
			continue;
		for (int i = 0; !exited && i < r->lps.n; i++)
			chan = chan || p[2 + i].revents;
		/* a failure: the restore fails, its own line says why */
		if (chan && lazy_proxies_serve(&r->lps, p + 2))
			fail_clear();
		if (chan && !p[0].revents && !p[1].revents)
			continue;
		if (!exited && p[1].revents && !p[0].revents) {
			exited = true;
			fcntl(fd, F_SETFL, O_NONBLOCK);
		}
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		keep_tail(msg, len, &got, buf, n);
	}
	if (pidfd >= 0)
		close(pidfd);
	msg[got] = '\0';
}

/* A socket pair per lazy set: this end its proxy's chan, the restore's in *theirs. */
static int open_channels(struct rx *r, int **theirs)
{
	int ch[2];

	*theirs = calloc((size_t)r->lps.n + 1, sizeof(int));
	if (!*theirs)
		return -ENOMEM;
	for (int i = 0; i < r->lps.n; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ch)) {
			int err = fail(-errno, "cannot make a page channel: %s", strerror(errno));

			while (i--) {
				close((*theirs)[i]);
				close(r->lps.p[i].chan);
				r->lps.p[i].chan = -1;
			}
			free(*theirs);
			*theirs = NULL;
			return err;
		}
		r->lps.p[i].chan = ch[0];
		(*theirs)[i] = ch[1];
	}
	return 0;
}

/* Run `memdump restore -D DIR/SET -d` and take the last line it printed on stderr. */
static int run_restore(struct rx *r, char *msg, size_t len)
{
	int p[2], ret, status, *theirs = NULL;
	size_t got;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	ret = r->lazy ? open_channels(r, &theirs) : 0;
	if (ret) {
		close(p[0]);
		close(p[1]);
		return ret;
	}
	pid = fork();
	if (pid == 0)
		exec_restore(r, p[1], theirs);
	close(p[1]);
	for (int i = 0; theirs && i < r->lps.n; i++)
		close(theirs[i]);
	free(theirs);
	msg[0] = '\0';
	if (pid > 0)
		read_restore_err(r, p[0], pid, msg, len);
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		status = -1;
	got = strlen(msg);
	if (got && msg[got - 1] == '\n')
		msg[--got] = '\0';
	if (strrchr(msg, '\n'))
		memmove(msg, strrchr(msg, '\n') + 1, strlen(strrchr(msg, '\n')));
	fprintf(stderr, "%s%s", msg, got ? "\n" : "");
	close(p[0]);
	if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;	/* with --lazy-pages, the channels to its page handler stay */
	for (int i = 0; i < r->lps.n; i++) {
		if (r->lps.p[i].chan >= 0)
			close(r->lps.p[i].chan);
		r->lps.p[i].chan = -1;
	}
	if (pid < 0 || status == -1)
		return -ECHILD;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

static int on_restore(struct rx *r, uint64_t len)
{
	uint32_t flags = 0;
	char msg[1024];
	int ret = r->migrate ? 0 : fail(-EPROTO, "RESTORE to a page server");

	if (!ret && len && len != sizeof(flags))
		ret = -EPROTO;
	if (!ret && len)
		ret = xfer_read_exact(&r->conn, &flags, sizeof(flags));
	if (!ret && (flags & ~XFER_RESTORE_LAZY))
		ret = fail(-EPROTO, "RESTORE with unknown flags %#x", flags);
	r->lazy_here = flags & XFER_RESTORE_LAZY;
	if (!ret && r->lazy_here && r->lazy)
		ret = fail(-EPROTO, "RESTORE_LAZY of a set left on the source (LAZY)");
	if (!ret)
		ret = close_file(r);

	if (!ret)
		ret = leave_sub(r);
	if (!ret && (fsync(r->setfd) || fsync(r->root)))
		ret = fail(-errno, "cannot sync %s: %s", r->o->dir, strerror(errno));
	if (!ret)
		pr_info("set %s: %llu bytes of pages received before the restore%s", r->set,
			(unsigned long long)r->pages_bytes,
			r->lazy ? ", pages-1.img left on the source" : "");
	if (!ret && r->lazy)
		pr_info("set %s: pages-1.img (%llu bytes) is fetched from the source as the "
			"process runs%s", r->set, (unsigned long long)r->lps.p[r->lps.n - 1].size,
			r->lps.n > 1 ? ", and a tree's processes' too" : "");
	if (!ret && r->lazy_here)
		pr_info("set %s: restored with --lazy-pages, its memory filled from the sets here "
			"as it runs", r->set);
	if (!ret) {
		ret = run_restore(r, msg, sizeof(msg));
		if (ret)
			ret = fail(ret, "restore of %s/%s failed: %s", r->o->dir, r->set, msg);
	}
	r->restored = !ret;
	if (xfer_reply(&r->conn, ret ? -ret : 0, ret ? fail_reason() : "") && !ret)
		pr_warn("the process is restored, but its source did not hear it");
	return ret;
}

static int on_hello(struct rx *r, uint64_t len)
{
	uint32_t v;
	int ret = len == sizeof(v) ? xfer_read_exact(&r->conn, &v, sizeof(v)) : -EPROTO;

	if (!ret && v != XFER_VERSION) {
		ret = fail(-EPROTO, "protocol version %u (this memdump speaks %u)", v, XFER_VERSION);
		xfer_reply(&r->conn, -ret, fail_reason());
		return ret;
	}
	if (!ret)
		ret = xfer_reply(&r->conn, 0, "");
	return ret;
}

/* One message; 1 at DONE. */
static int serve_one(struct rx *r, const struct xfer_hdr *h)
{
	switch (h->cmd) {
	case XFER_HELLO:	return on_hello(r, h->len);
	case XFER_SET:		return on_set(r, h->len);
	case XFER_SUB:		return on_sub(r, h->len);
	case XFER_FILE:		return on_file(r, h->len);
	case XFER_DATA:		return on_data(r, h->len);
	case XFER_LINK:		return on_link(r, h->len);
	case XFER_COMMIT:	return h->len ? -EPROTO : on_commit(r);
	case XFER_RESTORE:	return on_restore(r, h->len);
	case XFER_SYNC:		return h->len ? -EPROTO : xfer_reply(&r->conn, 0, "");
	case XFER_LAZY:		return on_lazy(r, h->len);
	case XFER_DONE:		return 1;
	}
	return fail(-EPROTO, "unknown message %u", h->cmd);
}

static int serve(struct rx *r)
{
	struct xfer_hdr h;
	int ret;

	for (;;) {
		ret = xfer_recv_hdr(&r->conn, &h);
		if (ret == -EPIPE && r->committed && !r->migrate)
			return 0;	/* the dump closed after its COMMIT: done */
		if (!ret)
			ret = serve_one(r, &h);
		if (!ret && r->restored && r->lazy)
			return lazy_proxies_run(&r->lps);	/* it runs here: its pages from the source */
		if (ret == 1)
			return close_file(r);
		if (ret == -EPIPE || ret == -ECONNRESET)
			return fail(ret, "the connection ended before the images were complete");
		if (ret == -EPROTO)
			return fail(ret, "not memdump's image stream from the %s%s", r->conn.peer,
				    r->conn.tls ? "" : " (a TLS client? --tls)");
		if (ret)
			return ret;
	}
}

/* CRIU's --status-fd: a byte once listening. */
int tell_status(const struct options *o)
{
	int ret = hook_fire(o->ready, HOOK_STATUS_READY, getpid());

	if (o->status_fd < 0)
		return ret;
	if (write(o->status_fd, "", 1) != 1)
		pr_warn("cannot write to --status-fd %d", o->status_fd);
	close(o->status_fd);
	return ret;
}

/* The name a client's certificate must carry (--tls): the address listened on, as
 * CRIU's; none for a wildcard one (0.0.0.0, ::), which names no host. */
static const char *client_name(const char *addr)
{
	if (!addr || !strcmp(addr, "0.0.0.0") || !strcmp(addr, "::"))
		return NULL;
	return addr;
}

int page_server_accept(const struct options *o, struct xfer *x)
{
	int lfd = xfer_listen(o->address, o->port), fd;

	if (lfd < 0)
		return lfd;
	pr_info("listening on %s:%d", o->address ? o->address : "*", o->port);
	fd = tell_status(o);
	if (fd < 0) {
		close(lfd);
		return fd;
	}
	do
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	close(lfd);
	if (fd < 0)
		return fail(-errno, "cannot accept a connection: %s", strerror(errno));
	return xfer_accept(x, fd, client_name(o->address), &o->tls);
}

static int receive(const struct options *o, bool migrate)
{
	struct rx r = { .fd = -1, .migrate = migrate, .o = o, .conn = { .fd = -1 },
			.lazy_timeout = o->lazy_timeout ? o->lazy_timeout : LAZY_TIMEOUT_SECS };
	int ret;

	if (!o->dir || !o->port)
		return fail(-EINVAL, "%s needs -D DIR and --port P",
			    migrate ? "migrate-receive" : "page-server");
	if (mkdir(o->dir, 0700) && errno != EEXIST)
		return fail(-errno, "cannot create directory %s: %s", o->dir, strerror(errno));
	r.root = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r.root < 0)
		return fail(-errno, "cannot open directory %s: %s", o->dir, strerror(errno));
	if (!faccessat(r.root, "inventory.img", F_OK, 0)) {
		close(r.root);
		return fail(-EEXIST, "directory %s already holds a dump", o->dir);
	}
	r.setfd = r.dirfd = r.root;
	ret = page_server_accept(o, &r.conn);
	if (!ret)
		ret = serve(&r);
	if (r.fd >= 0)
		close(r.fd);
	if (ret && !r.restored)
		remove_made(&r);
	if (r.dirfd != r.setfd)
		close(r.dirfd);
	if (r.setfd != r.root)
		close(r.setfd);
	lazy_proxies_free(&r.lps);
	xfer_close(&r.conn);
	close(r.root);
	free_made(&r);
	return ret;
}

int cmd_page_server(const struct options *o)
{
	signal(SIGPIPE, SIG_IGN);
	if (o->lazy_pages)	/* CRIU's page-server --lazy-pages: a set's pages to a lazy restore */
		return o->dir && o->port ? lazy_serve(o, o->dir) :
		       fail(-EINVAL, "page-server --lazy-pages needs -D DIR and --port P");
	return receive(o, false);
}

int cmd_migrate_receive(const struct options *o)
{
	signal(SIGPIPE, SIG_IGN);
	return receive(o, true);
}
