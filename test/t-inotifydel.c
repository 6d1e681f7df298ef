/* t-inotifydel: an inotify watch on a file deleted while open (zdtm inotify00).
 *   fd 10: DIR/ify-dir/f, O_RDWR, then deleted
 *   fd 11: inotify (non-blocking): wd A on DIR/ify-dir (IN_CREATE | IN_DELETE),
 *          wd B on f (IN_MODIFY | IN_CLOSE_WRITE | IN_DELETE_SELF); the events
 *          of the unlink read before READY
 * After SIGUSR1: no event is queued; a write to fd 10 and its close give
 * IN_MODIFY, IN_CLOSE_WRITE, then IN_DELETE_SELF and IN_IGNORED on wd B (the
 * watch is on the inode fd 10 held, gone with it), and a file made in
 * DIR/ify-dir IN_CREATE on wd A with its name (removed again: IN_DELETE).
 * READY <pid> <wdA> <wdB> */
#include "tlib.h"
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>

static int wda, wdb;

/* Every queued event, one "wd:mask:name" word each, into out. */
static void events(char *out, size_t len)
{
	char buf[4096] __attribute__((aligned(8)));
	size_t at = 0;
	ssize_t n;

	out[0] = 0;
	while ((n = read(11, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n; ) {
			struct inotify_event *e = (struct inotify_event *)p;

			at += snprintf(out + at, at < len ? len - at : 0, "%d:%x:%s ", e->wd,
				       e->mask, e->len ? e->name : "");
			p += sizeof(*e) + e->len;
		}
	}
	if (n < 0 && errno != EAGAIN)
		t_fail("read inotify: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	char dir[600], file[640], got[2048], want[256];
	int fd;

	t_init(argc, argv, SA_RESTART);
	snprintf(dir, sizeof(dir), "%s/ify-dir", t_dir);
	snprintf(file, sizeof(file), "%s/f", dir);
	if (mkdir(dir, 0755))
		t_fail("mkdir %s: %s", dir, strerror(errno));
	fd = open(file, O_RDWR | O_CREAT | O_EXCL, 0644);
	if (fd < 0 || dup2(fd, 10) != 10 || close(fd))
		t_fail("open %s: %s", file, strerror(errno));
	fd = inotify_init1(IN_NONBLOCK);
	if (fd < 0 || dup2(fd, 11) != 11 || close(fd))
		t_fail("inotify_init1: %s", strerror(errno));
	wda = inotify_add_watch(11, dir, IN_CREATE | IN_DELETE);
	wdb = inotify_add_watch(11, file, IN_MODIFY | IN_CLOSE_WRITE | IN_DELETE_SELF);
	if (wda < 0 || wdb < 0)
		t_fail("inotify_add_watch: %s", strerror(errno));
	if (unlink(file))
		t_fail("unlink %s: %s", file, strerror(errno));
	events(got, sizeof(got));
	snprintf(want, sizeof(want), "%d:%x:f ", wda, IN_DELETE);
	if (strcmp(got, want))
		t_fail("events of the unlink: \"%s\", want \"%s\"", got, want);
	t_ready("%d %d", wda, wdb);
	t_wait_usr1();
	t_check_common();
	events(got, sizeof(got));
	if (got[0])
		t_fail("events queued after the restore: \"%s\"", got);
	if (write(10, "x", 1) != 1 || close(10))
		t_fail("write/close fd 10: %s", strerror(errno));
	snprintf(want, sizeof(want), "%d:%x: %d:%x: %d:%x: %d:%x: ", wdb, IN_MODIFY, wdb,
		 IN_CLOSE_WRITE, wdb, IN_DELETE_SELF, wdb, IN_IGNORED);
	/*
	 * IN_DELETE_SELF comes when the file's last dentry reference goes: a
	 * process reading the link /proc/PID/fd/10 right then holds it a moment
	 * longer (it does so to the process that was never dumped alike).
	 */
	got[0] = 0;
	for (int i = 0; i < 300 && strlen(got) < strlen(want); i++) {
		size_t at = strlen(got);

		if (i)
			usleep(100000);
		events(got + at, sizeof(got) - at);
	}
	if (strcmp(got, want))
		t_fail("events of the deleted file: \"%s\", want \"%s\"", got, want);
	snprintf(file, sizeof(file), "%s/g", dir);
	fd = open(file, O_RDONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0 || close(fd))
		t_fail("create %s: %s", file, strerror(errno));
	events(got, sizeof(got));
	snprintf(want, sizeof(want), "%d:%x:g ", wda, IN_CREATE);
	if (strcmp(got, want))
		t_fail("events of the directory: \"%s\", want \"%s\"", got, want);
	if (unlink(file))	/* as it was: the same images restore again */
		t_fail("unlink %s: %s", file, strerror(errno));
	events(got, sizeof(got));
	snprintf(want, sizeof(want), "%d:%x:g ", wda, IN_DELETE);
	if (strcmp(got, want))
		t_fail("events of the unlink of g: \"%s\", want \"%s\"", got, want);
	t_pass(NULL);
}
