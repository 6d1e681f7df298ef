/*
 * memdump lazy-pages: CRIU's lazy-pages daemon, for programs that run
 * `criu lazy-pages` beside `criu restore --lazy-pages` (CRIU's test runner,
 * scripts written for CRIU). The protocol is in mem/lazy.h.
 *
 * memdump's restore keeps its own page handler: it is the restore's child,
 * which has the plan of every lazy range, so it serves the faults and fills
 * the rest; this daemon waits on the socket, is told which process the
 * handler is and how it ended, and exits with that. A restore that names the
 * socket and cannot reach it fails before anything runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common.h"
#include "fdio.h"
#include "log.h"
#include "cli/lazy_proxy.h"
#include "cli/lazy_server.h"
#include "cli/options.h"
#include "mem/lazy.h"

/* A socket already at path: a live daemon's (refused) or a stale one (removed). */
static int clear_stale(const char *path, const struct sockaddr_un *sun)
{
	struct stat st;
	int fd, live;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : fail(-errno, "%s: %s", path, strerror(errno));
	if (!S_ISSOCK(st.st_mode))
		return fail(-EEXIST, "%s exists and is not a socket", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(-errno, "cannot make a socket: %s", strerror(errno));
	live = !connect(fd, (const struct sockaddr *)sun, sizeof(*sun));
	close(fd);
	if (live)
		return fail(-EADDRINUSE, "a lazy-pages daemon already waits on %s", path);
	if (unlink(path))
		return fail(-errno, "cannot remove the stale socket %s: %s", path, strerror(errno));
	return 0;
}

static int listen_on(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	mode_t old;
	int fd, ret;

	if (strlen(path) >= sizeof(sun.sun_path))
		return fail(-ENAMETOOLONG, "the socket name %s is too long", path);
	strcpy(sun.sun_path, path);
	ret = clear_stale(path, &sun);
	if (ret)
		return ret;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(-errno, "cannot make a socket: %s", strerror(errno));
	old = umask(077);	/* only root's restore talks to it */
	ret = bind(fd, (struct sockaddr *)&sun, sizeof(sun)) ? -errno : 0;
	umask(old);
	if (!ret && listen(fd, 1))
		ret = -errno;
	if (ret) {
		close(fd);
		return fail(ret, "cannot listen on %s: %s", path, strerror(-ret));
	}
	return fd;
}

/* SIGTERM, SIGINT and SIGHUP as an fd: the socket is removed whatever ends the wait. */
static int stop_signals(void)
{
	sigset_t set;
	int fd;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return fail(-errno, "cannot block signals: %s", strerror(errno));
	fd = signalfd(-1, &set, SFD_CLOEXEC);
	return fd < 0 ? fail(-errno, "signalfd: %s", strerror(errno)) : fd;
}

/* Wait for fd to be readable; 0, or -EINTR if a stop signal came first. */
static int wait_readable(int fd, int sigfd)
{
	struct pollfd p[2] = { { fd, POLLIN, 0 }, { sigfd, POLLIN, 0 } };

	while (poll(p, 2, -1) < 0)
		if (errno != EINTR)
			return fail(-errno, "poll: %s", strerror(errno));
	if (p[1].revents)
		return fail(-EINTR, "stopped by a signal before the restore's memory was all in");
	return 0;
}

/* One message; 1 at the end of the stream. */
static int read_msg(int fd, struct lazy_daemon_msg *m, char *text)
{
	ssize_t n = read(fd, m, sizeof(*m));

	if (n == 0)
		return 1;
	if (n != (ssize_t)sizeof(*m) || m->magic != LAZY_DAEMON_MAGIC || m->len > LAZY_DAEMON_TEXT)
		return fail(-EPROTO, "the restore sent something that is not a lazy-pages message");
	if (m->len && fd_read_full(fd, text, m->len))
		return fail(-EPROTO, "the restore's message was cut short");
	text[m->len] = 0;
	return 0;
}

/* One message of the handler's: 1 once it said how it ended (0: every page in). */
static int handler_msg(int conn)
{
	char text[LAZY_DAEMON_TEXT + 1];
	struct lazy_daemon_msg m;
	int ret = read_msg(conn, &m, text);

	if (ret == 1)
		return fail(-EPIPE, "the restore's page handler ended before every page was in "
			    "(killed?): the restore's log says more");
	if (ret || m.kind == LAZY_DAEMON_HELLO) {
		if (!ret)
			pr_info("lazy-pages: the restore's page handler is process %d", m.value);
		return ret;
	}
	if (m.kind != LAZY_DAEMON_DONE)
		return 0;
	if (m.value)
		return fail(-EIO, "%s", text);
	pr_info("lazy-pages: %s", text);
	return 1;
}

/* The handler's page requests (lp, with a page server) and messages, until it says how it ended. */
static int follow(int conn, int sigfd, struct lazy_proxy *lp)
{
	int ret = 0;

	while (!ret) {
		struct pollfd p[3] = { { conn, POLLIN, 0 }, { sigfd, POLLIN, 0 },
				       { lp ? lp->chan : -1, POLLIN, 0 } };

		if (poll(p, 3, -1) < 0) {
			ret = errno == EINTR ? 0 : fail(-errno, "poll: %s", strerror(errno));
			continue;
		}
		if (p[1].revents)
			return fail(-EINTR, "stopped by a signal before the restore's memory was all in");
		if (p[2].revents && (lazy_proxy_request(lp) || lp->done)) {
			close(lp->chan);	/* failed (the handler was told) or all fetched */
			lp->chan = -1;
		}
		if (p[0].revents)
			ret = handler_msg(conn);
	}
	return ret < 0 ? ret : 0;
}

/* One connection of the restore's, greeted (value 1: the pages come from a page server). */
static int take(int lsk, int sigfd, bool remote)
{
	int conn, ret = wait_readable(lsk, sigfd);

	if (ret)
		return ret;
	conn = accept4(lsk, NULL, NULL, SOCK_CLOEXEC);
	if (conn < 0)
		return fail(-errno, "accept: %s", strerror(errno));
	ret = lazy_daemon_send(conn, LAZY_DAEMON_GREET, remote, NULL);
	if (ret) {
		close(conn);
		return fail(ret, "cannot greet the restore: %s", strerror(-ret));
	}
	return conn;
}

static int serve(int lsk, int sigfd, struct lazy_proxy *lp)
{
	int conn = take(lsk, sigfd, lp != NULL), ret = 0;

	if (conn < 0)
		return conn;
	pr_info("lazy-pages: a restore connected");
	if (lp) {	/* its page channel next */
		lp->chan = take(lsk, sigfd, true);
		ret = lp->chan < 0 ? lp->chan : 0;
	}
	if (!ret)
		ret = follow(conn, sigfd, lp);
	if (!ret && lp && !lp->done) {	/* its processes ended before needing the rest */
		pr_info("lazy-pages: the restored processes are done; the page server may go");
		if (xfer_send(lp->conn, XFER_DONE, NULL, 0))
			pr_warn("%s", fail_reason());
		fail_clear();
	}
	close(conn);
	return ret;
}

/* DIR/pages-1.img: a file of size bytes the restore fills from the page server; one there
 * already (the same set's, copied whole) is left as it is, and filled over. */
static int pages_file(const char *dir, uint64_t size)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd, ret = 0;
	struct stat st;

	if (dfd < 0)
		return fail(-errno, "cannot open %s: %s", dir, strerror(errno));
	fd = openat(dfd, "pages-1.img", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0 && ftruncate(fd, (off_t)size))
		ret = fail(-errno, "cannot size %s/pages-1.img: %s", dir, strerror(errno));
	else if (fd < 0 && (errno != EEXIST || fstatat(dfd, "pages-1.img", &st, AT_SYMLINK_NOFOLLOW)))
		ret = fail(-errno, "cannot make %s/pages-1.img: %s", dir, strerror(errno));
	else if (fd < 0 && (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != size))
		ret = fail(-EEXIST, "%s/pages-1.img is there and is not the page server's (%llu "
			   "bytes)", dir, (unsigned long long)size);
	if (fd >= 0)
		close(fd);
	close(dfd);
	return ret;
}

/* --page-server: connected to the lazy dump's page server, told the size of its pages-1.img. */
static int page_server(const struct options *o, struct xfer *x, struct lazy_proxy *lp)
{
	struct xfer_hdr h;
	int ret = xfer_connect(x, "page server", o->address ? o->address : "localhost", o->port,
			       &o->tls);

	if (ret)
		return ret;
	ret = xfer_recv_hdr(x, &h);
	if (!ret && (h.cmd != XFER_LAZY || h.len != sizeof(lp->size)))
		ret = fail(-EPROTO, "the %s serves no lazy dump's pages (page-server --lazy-pages, "
			   "dump --lazy-pages)", x->peer);
	if (!ret)
		ret = xfer_read_exact(x, &lp->size, sizeof(lp->size));
	lp->conn = x;
	lp->chan = -1;
	lp->timeout = o->lazy_timeout ? o->lazy_timeout : LAZY_TIMEOUT_SECS;
	snprintf(lp->what, sizeof(lp->what), "%s", o->dir);
	lp->buf = malloc(XFER_GET_MAX);
	if (!ret && !lp->buf)
		ret = -ENOMEM;
	if (!ret)
		ret = pages_file(o->dir, lp->size);
	if (!ret)
		pr_info("lazy-pages: pages-1.img (%llu bytes) comes from the %s",
			(unsigned long long)lp->size, x->peer);
	return ret;
}

/* -d: the caller returns once the socket listens (no race with the restore started next). */
static int detach(const struct options *o)
{
	pid_t pid = fork();
	FILE *f;

	if (pid < 0)
		return fail(-errno, "cannot fork: %s", strerror(errno));
	if (pid == 0) {
		setsid();
		return 0;
	}
	if (o->pidfile && (f = fopen(o->pidfile, "we"))) {
		fprintf(f, "%d\n", pid);
		fclose(f);
	}
	_exit(0);
}

/* The socket's path: --lazy-socket, else DIR/lazy-pages.socket. */
static int socket_path(const struct options *o, char *path, size_t len)
{
	int n = o->lazy_socket ? snprintf(path, len, "%s", o->lazy_socket) :
		snprintf(path, len, "%s/%s", o->dir, LAZY_DAEMON_SOCK);

	return (size_t)n >= len ? fail(-ENAMETOOLONG, "the socket's path is too long") : 0;
}

int cmd_lazy_pages(const struct options *o)
{
	struct xfer x = { .fd = -1 };
	struct lazy_proxy lp = { .chan = -1 };
	int lsk = -1, sigfd = -1, ret;
	char path[PATH_MAX];

	if (!o->dir)
		return fail(-EINVAL, "lazy-pages needs -D DIR");
	if (o->page_server && !o->port)
		return fail(-EINVAL, "lazy-pages --page-server needs --port P (and --address A)");
	signal(SIGPIPE, SIG_IGN);
	ret = socket_path(o, path, sizeof(path));
	if (!ret && o->page_server)
		ret = page_server(o, &x, &lp);
	if (!ret && (sigfd = stop_signals()) < 0)
		ret = sigfd;
	if (!ret && (lsk = listen_on(path)) < 0)
		ret = lsk;
	if (!ret) {
		pr_info("lazy-pages: waiting on %s", path);
		ret = o->detach ? detach(o) : 0;
	}
	if (!ret) {
		ret = tell_status(o);	/* CRIU's: a zero byte once the socket listens */
		if (!ret)
			ret = serve(lsk, sigfd, o->page_server ? &lp : NULL);
	}
	if (lsk >= 0) {
		close(lsk);
		unlink(path);
	}
	if (sigfd >= 0)
		close(sigfd);
	if (lp.chan >= 0)
		close(lp.chan);
	xfer_close(&x);
	free(lp.buf);
	return ret;
}

int lazy_daemon_join(const char *path, struct restore_opts *r)
{
	bool remote = false;
	int fd = lazy_daemon_connect(path, &remote);

	if (fd < 0)
		return fd;
	r->lazy_daemon = fd + 1;
	if (!remote)
		return 0;
	fd = lazy_daemon_connect(path, &remote);	/* the page channel */
	if (fd < 0)
		return fd;
	r->lazy_remote_sock = fd + 1;
	pr_info("lazy-pages: pages-1.img comes from the daemon's page server");
	return 0;
}

void lazy_daemon_leave(struct restore_opts *r)
{
	if (r->lazy_daemon)
		close(r->lazy_daemon - 1);	/* the page handler holds its own */
	if (r->lazy_remote_sock)
		close(r->lazy_remote_sock - 1);
	r->lazy_daemon = r->lazy_remote_sock = 0;
}
