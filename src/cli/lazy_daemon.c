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

/* The messages of one restore, until its handler says how it ended. */
static int follow(int conn, int sigfd)
{
	char text[LAZY_DAEMON_TEXT + 1];
	struct lazy_daemon_msg m;
	int ret;

	for (;;) {
		ret = wait_readable(conn, sigfd) ?: read_msg(conn, &m, text);
		if (ret < 0)
			return ret;
		if (ret == 1)
			return fail(-EPIPE, "the restore's page handler ended before every page was "
				    "in (killed?): the restore's log says more");
		if (m.kind == LAZY_DAEMON_HELLO)
			pr_info("lazy-pages: the restore's page handler is process %d", m.value);
		else if (m.kind == LAZY_DAEMON_DONE && !m.value) {
			pr_info("lazy-pages: %s", text);
			return 0;
		} else if (m.kind == LAZY_DAEMON_DONE)
			return fail(-EIO, "%s", text);
	}
}

static int serve(int lsk, int sigfd)
{
	int conn, ret = wait_readable(lsk, sigfd);

	if (ret)
		return ret;
	conn = accept4(lsk, NULL, NULL, SOCK_CLOEXEC);
	if (conn < 0)
		return fail(-errno, "accept: %s", strerror(errno));
	pr_info("lazy-pages: a restore connected");
	ret = lazy_daemon_send(conn, LAZY_DAEMON_GREET, 0, NULL);
	if (ret)
		fail(ret, "cannot greet the restore: %s", strerror(-ret));
	else
		ret = follow(conn, sigfd);
	close(conn);
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

int cmd_lazy_pages(const struct options *o)
{
	char path[PATH_MAX];
	int lsk, sigfd, ret;

	if (o->page_server)
		return fail(-EOPNOTSUPP, "lazy-pages --page-server is not supported: no page server "
			    "is left serving a dump's memory for a lazy restore elsewhere (memdump "
			    "migrate --lazy-pages migrates post-copy)");
	if (!o->lazy_socket && !o->dir)
		return fail(-EINVAL, "lazy-pages needs -D DIR or --lazy-socket PATH");
	if ((size_t)snprintf(path, sizeof(path), "%s", o->lazy_socket ?: "") >= sizeof(path) ||
	    (!o->lazy_socket && (size_t)snprintf(path, sizeof(path), "%s/%s", o->dir,
						 LAZY_DAEMON_SOCK) >= sizeof(path)))
		return fail(-ENAMETOOLONG, "the socket's path is too long");
	sigfd = stop_signals();
	if (sigfd < 0)
		return sigfd;
	lsk = listen_on(path);
	if (lsk < 0) {
		close(sigfd);
		return lsk;
	}
	pr_info("lazy-pages: waiting on %s", path);
	ret = o->detach ? detach(o) : 0;
	if (!ret && o->status_fd >= 0) {	/* CRIU's: a zero byte once the socket listens */
		if (write(o->status_fd, "", 1) != 1)
			pr_warn("cannot write to --status-fd %d", o->status_fd);
		close(o->status_fd);
	}
	if (!ret)
		ret = serve(lsk, sigfd);
	close(lsk);
	close(sigfd);
	unlink(path);
	return ret;
}
