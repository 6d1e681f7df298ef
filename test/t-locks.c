/* t-locks: file locks of every restorable kind.
 *   fd 10: DIR/flock-ex, flock LOCK_EX
 *   fd 11: DIR/flock-sh, flock LOCK_SH
 *   fd 12: DIR/posix, POSIX write lock on bytes 0-99, read lock from 200 to EOF
 *   fd 13: DIR/ofd, OFD write lock on bytes 10-19
 * After SIGUSR1 a forked child, another process, finds each lock held by
 * this one (POSIX locks with this PID), and the holder can still unlock.
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>

static char dir[512];

static int open_at(const char *name, int flags, int want)
{
	char p[600];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, flags | O_CREAT, 0600);
	if (fd < 0 || (want >= 0 && dup2(fd, want) != want))
		t_fail("open %s: %s", p, strerror(errno));
	if (want >= 0) {
		close(fd);
		fd = want;
	}
	return fd;
}

static void lock(int fd, int cmd, short type, off_t start, off_t len)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len };

	if (fcntl(fd, cmd, &fl))
		t_fail("fcntl lock fd %d: %s", fd, strerror(errno));
}

/* In the child: F_GETLK-style probe; returns the conflicting type, pid in *pid. */
static int probe(int fd, int cmd, short type, off_t start, off_t len, pid_t *pid)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len };

	if (fcntl(fd, cmd, &fl))
		return -1;
	*pid = fl.l_pid;
	return fl.l_type;
}

/* Runs in a forked child: exit 0 when every lock is held as set, else 10 + which. */
static int child_checks(pid_t holder)
{
	int ex = open_at("flock-ex", O_RDONLY, -1), sh = open_at("flock-sh", O_RDONLY, -1);
	int px = open_at("posix", O_RDWR, -1), ofd = open_at("ofd", O_RDWR, -1);
	pid_t pid = 0;

	if (!flock(ex, LOCK_SH | LOCK_NB) || errno != EWOULDBLOCK)
		return 11;
	if (flock(sh, LOCK_SH | LOCK_NB) || flock(sh, LOCK_UN))
		return 12;
	if (!flock(sh, LOCK_EX | LOCK_NB))
		return 13;
	if (probe(px, F_GETLK, F_RDLCK, 50, 1, &pid) != F_WRLCK || pid != holder)
		return 14;
	if (probe(px, F_GETLK, F_WRLCK, 150, 10, &pid) != F_UNLCK)
		return 15;
	if (probe(px, F_GETLK, F_RDLCK, 5000, 1, &pid) != F_UNLCK ||
	    probe(px, F_GETLK, F_WRLCK, 5000, 1, &pid) != F_RDLCK || pid != holder)
		return 16;
	if (probe(ofd, F_OFD_GETLK, F_RDLCK, 15, 1, &pid) != F_WRLCK ||
	    probe(ofd, F_OFD_GETLK, F_RDLCK, 20, 1, &pid) != F_UNLCK)
		return 17;
	return 0;
}

static int run_child(void)
{
	pid_t holder = getpid(), c = fork();
	int st;

	if (c == 0)
		_exit(child_checks(holder));
	if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st))
		t_fail("fork/wait: %s", strerror(errno));
	return WEXITSTATUS(st);
}

int main(int argc, char **argv)
{
	int rc;

	t_init(argc, argv, SA_RESTART);
	snprintf(dir, sizeof(dir), "%s", t_dir);
	if (flock(open_at("flock-ex", O_RDWR, 10), LOCK_EX) ||
	    flock(open_at("flock-sh", O_RDONLY, 11), LOCK_SH))
		t_fail("flock: %s", strerror(errno));
	open_at("posix", O_RDWR, 12);
	lock(12, F_SETLK, F_WRLCK, 0, 100);
	lock(12, F_SETLK, F_RDLCK, 200, 0);
	open_at("ofd", O_RDWR, 13);
	lock(13, F_OFD_SETLK, F_WRLCK, 10, 10);
	if ((rc = run_child()))
		t_fail("the locks do not hold before the dump (check %d)", rc);
	t_ready("");
	t_wait_usr1();
	t_check_common();
	if ((rc = run_child()))
		t_fail("a lock is not held after the restore (check %d)", rc);
	if (flock(10, LOCK_UN))
		t_fail("cannot unlock fd 10: %s", strerror(errno));
	lock(12, F_SETLK, F_UNLCK, 0, 0);
	lock(13, F_OFD_SETLK, F_UNLCK, 0, 0);
	if ((rc = run_child()) != 11)	/* flock-ex is free now: check 11 fails first */
		t_fail("after unlocking fd 10, the child's check %d failed, want 11", rc);
	t_pass(NULL);
}
