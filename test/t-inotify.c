/* t-inotify: inotify instances with watches at known wds.
 *   fd 10 (IN_NONBLOCK): DIR/w IN_CREATE|IN_DELETE (wd 1), DIR/w/f IN_MODIFY
 *         (wd 2), DIR/x watched then removed (wd 3 gone), DIR/y
 *         IN_ATTRIB|IN_ONESHOT (wd 4)
 *   fd 11 (blocking, close-on-exec): DIR/w IN_CLOSE_WRITE (wd 1)
 * After SIGUSR1: nothing queued, then each watch fires with its wd, the
 * one-shot once, and the next watch added gets wd 5 as it would have.
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>

static char dir_w[512], file_f[512], dir_x[512], file_y[512], dir_z[512];

static void at(int fd, int want)
{
	if (fd < 0 || dup3(fd, want, fcntl(fd, F_GETFD) & FD_CLOEXEC ? O_CLOEXEC : 0) != want)
		t_fail("dup3 %d: %s", want, strerror(errno));
	close(fd);
}

static void watch(int fd, const char *path, uint32_t mask, int want)
{
	int wd = inotify_add_watch(fd, path, mask);

	if (wd != want)
		t_fail("inotify_add_watch %s gave %d, want %d (%s)", path, wd, want, strerror(errno));
}

/* The next event on fd within 2 s: its wd and mask, name into name[]. */
static void next_event(int fd, int wd, uint32_t mask, const char *name)
{
	static char buf[4096] __attribute__((aligned(8)));
	static ssize_t len, off;
	struct inotify_event *ev;

	if (off >= len) {
		struct pollfd p = { fd, POLLIN, 0 };

		if (poll(&p, 1, 2000) != 1)
			t_fail("fd %d: no event (want wd %d mask %#x)", fd, wd, mask);
		len = read(fd, buf, sizeof(buf));
		off = 0;
		if (len <= 0)
			t_fail("read fd %d: %s", fd, strerror(errno));
	}
	ev = (struct inotify_event *)(buf + off);
	off += sizeof(*ev) + ev->len;
	if (ev->wd != wd || (ev->mask & ~IN_ISDIR) != mask || strcmp(ev->len ? ev->name : "", name))
		t_fail("fd %d: event wd %d mask %#x '%s', want wd %d mask %#x '%s'", fd, ev->wd,
		       ev->mask, ev->len ? ev->name : "", wd, mask, name);
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);

	if (fd < 0 || write(fd, "x", 1) != 1)
		t_fail("write %s: %s", path, strerror(errno));
	close(fd);
}

int main(int argc, char **argv)
{
	char buf[4096];

	t_init(argc, argv, SA_RESTART);
	snprintf(dir_w, sizeof(dir_w), "%s/w", t_dir);
	snprintf(file_f, sizeof(file_f), "%s/w/f", t_dir);
	snprintf(dir_x, sizeof(dir_x), "%s/x", t_dir);
	snprintf(file_y, sizeof(file_y), "%s/y", t_dir);
	snprintf(dir_z, sizeof(dir_z), "%s/z", t_dir);
	if (mkdir(dir_w, 0700) || mkdir(dir_x, 0700) || mkdir(dir_z, 0700))
		t_fail("mkdir: %s", strerror(errno));
	touch(file_f);
	touch(file_y);

	at(inotify_init1(IN_NONBLOCK), 10);
	watch(10, dir_w, IN_CREATE | IN_DELETE, 1);
	watch(10, file_f, IN_MODIFY, 2);
	watch(10, dir_x, IN_CREATE, 3);
	if (inotify_rm_watch(10, 3))
		t_fail("inotify_rm_watch: %s", strerror(errno));
	watch(10, file_y, IN_ATTRIB | IN_ONESHOT, 4);
	while (read(10, buf, sizeof(buf)) > 0)	/* the IN_IGNORED of wd 3 */
		;
	at(inotify_init1(IN_CLOEXEC), 11);
	watch(11, dir_w, IN_CLOSE_WRITE, 1);

	t_ready("");
	t_wait_usr1();
	t_check_common();

	if (!(fcntl(10, F_GETFL) & O_NONBLOCK) || (fcntl(11, F_GETFL) & O_NONBLOCK))
		t_fail("O_NONBLOCK of fds 10/11 changed");
	if (!(fcntl(11, F_GETFD) & FD_CLOEXEC) || (fcntl(10, F_GETFD) & FD_CLOEXEC))
		t_fail("FD_CLOEXEC of fds 10/11 changed");
	if (read(10, buf, sizeof(buf)) != -1 || errno != EAGAIN)
		t_fail("fd 10 has events queued after the restore");
	touch(file_f);			/* IN_MODIFY wd 2; fd 11: IN_CLOSE_WRITE "f" */
	next_event(10, 2, IN_MODIFY, "");
	next_event(11, 1, IN_CLOSE_WRITE, "f");
	char n[600];
	snprintf(n, sizeof(n), "%s/new", dir_w);
	touch(n);			/* IN_CREATE wd 1 "new" */
	next_event(10, 1, IN_CREATE, "new");
	unlink(n);
	next_event(10, 1, IN_DELETE, "new");
	chmod(file_y, 0644);		/* one-shot: IN_ATTRIB then IN_IGNORED */
	next_event(10, 4, IN_ATTRIB, "");
	next_event(10, 4, IN_IGNORED, "");
	chmod(file_y, 0600);
	if (read(10, buf, sizeof(buf)) != -1 || errno != EAGAIN)
		t_fail("the one-shot watch fired twice");
	snprintf(n, sizeof(n), "%s/x/new", t_dir);
	touch(n);
	if (read(10, buf, sizeof(buf)) != -1 || errno != EAGAIN)
		t_fail("the removed watch (wd 3) is back");
	watch(10, dir_z, IN_CREATE, 5);
	t_pass(NULL);
}
