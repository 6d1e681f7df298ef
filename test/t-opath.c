/* t-opath: O_PATH fds.
 *   fd 10: DIR/op-file (a regular file holding "opath"), O_PATH
 *   fd 11: DIR/op-dir (a directory holding "inner"), O_PATH|O_DIRECTORY
 *   fd 12: DIR/op-link (a symlink to "op-file"), O_PATH|O_NOFOLLOW: the link itself
 *   fd 13: DIR/op-fifo (a FIFO), O_PATH
 *   `deleted`: fd 14: DIR/op-gone (a regular file holding "gone"), O_PATH, then removed;
 *     fd 15: DIR/op-gonelink (a symlink to "op-file"), O_PATH|O_NOFOLLOW, then removed;
 *     fd 16: DIR/op-null (a node of /dev/null's device), O_RDWR, then removed
 * After SIGUSR1: each is still O_PATH on the same inode (fstat), works with
 * *at() calls (openat, readlinkat, fstatat with AT_EMPTY_PATH), and is no
 * open file (read: EBADF); the regular files read their bytes through
 * /proc/self/fd. READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

static char dir[512];
static struct stat before[17];

static void path_of(char *p, size_t len, const char *name)
{
	snprintf(p, len, "%s/%s", dir, name);
}

static void make_file(const char *name, const char *text)
{
	char p[600];
	int fd;

	path_of(p, sizeof(p), name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) || close(fd))
		t_fail("create %s: %s", p, strerror(errno));
}

static void open_path(const char *name, int flags, int want)
{
	char p[600];
	int fd;

	path_of(p, sizeof(p), name);
	fd = open(p, O_PATH | flags);
	if (fd < 0 || dup2(fd, want) != want || close(fd) || fstat(want, &before[want]))
		t_fail("O_PATH open %s as fd %d: %s", p, want, strerror(errno));
}

/* still O_PATH, the same inode of the same type, no open file */
static void check_same(int fd, mode_t type)
{
	struct stat st, at;
	char c;
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || !(fl & O_PATH))
		t_fail("fd %d: flags %#x, not O_PATH", fd, fl);
	if (fstat(fd, &st) || fstatat(fd, "", &at, AT_EMPTY_PATH))
		t_fail("fd %d: fstat: %s", fd, strerror(errno));
	if (st.st_dev != before[fd].st_dev || st.st_ino != before[fd].st_ino ||
	    at.st_ino != st.st_ino || (st.st_mode & S_IFMT) != type)
		t_fail("fd %d: inode %lu mode %o, was %lu mode %o", fd, (unsigned long)st.st_ino,
		       st.st_mode, (unsigned long)before[fd].st_ino, before[fd].st_mode);
	if (read(fd, &c, 1) != -1 || errno != EBADF)
		t_fail("fd %d: read did not fail with EBADF", fd);
}

/* bytes read through fd's /proc/self/fd link (the O_PATH reopen idiom) */
static void check_reads(int fd, const char *want)
{
	char p[64], buf[64] = "";
	int rfd;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	rfd = open(p, O_RDONLY);
	if (rfd < 0 || read(rfd, buf, sizeof(buf) - 1) < 0)
		t_fail("fd %d: reopen and read: %s", fd, strerror(errno));
	close(rfd);
	if (strcmp(buf, want))
		t_fail("fd %d: reads \"%s\", want \"%s\"", fd, buf, want);
}

static void check_dir(void)
{
	char buf[16] = "";
	struct stat st;
	int fd = openat(11, "inner", O_RDONLY);

	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) != 5 || strcmp(buf, "inner") ||
	    fstatat(11, "inner", &st, 0))
		t_fail("openat/fstatat through fd 11: %s (read \"%s\")", strerror(errno), buf);
	close(fd);
}

static void check_link(int fd, const char *want)
{
	char buf[64] = "";
	ssize_t n = readlinkat(fd, "", buf, sizeof(buf) - 1);

	if (n < 0 || strcmp(buf, want))
		t_fail("readlinkat fd %d: %zd \"%s\" (%s)", fd, n, buf, strerror(errno));
}

int main(int argc, char **argv)
{
	bool deleted = argc > 2 && !strcmp(argv[2], "deleted");
	char p[600], q[600];

	t_init(argc, argv, SA_RESTART);
	snprintf(dir, sizeof(dir), "%s", t_dir);
	make_file("op-file", "opath");
	path_of(p, sizeof(p), "op-dir");
	if (mkdir(p, 0755))
		t_fail("mkdir %s: %s", p, strerror(errno));
	make_file("op-dir/inner", "inner");
	path_of(p, sizeof(p), "op-link");
	path_of(q, sizeof(q), "op-fifo");
	if (symlink("op-file", p) || mkfifo(q, 0600))
		t_fail("symlink/mkfifo: %s", strerror(errno));
	open_path("op-file", 0, 10);
	open_path("op-dir", O_DIRECTORY, 11);
	open_path("op-link", O_NOFOLLOW, 12);
	open_path("op-fifo", 0, 13);
	if (deleted) {
		make_file("op-gone", "gone");
		open_path("op-gone", 0, 14);
		path_of(p, sizeof(p), "op-gonelink");
		if (symlink("op-file", p))
			t_fail("symlink %s: %s", p, strerror(errno));
		open_path("op-gonelink", O_NOFOLLOW, 15);
		path_of(p, sizeof(p), "op-null");
		if (mknod(p, S_IFCHR | 0640, makedev(1, 3)) || dup2(open(p, O_RDWR), 16) != 16)
			t_fail("mknod/open %s: %s", p, strerror(errno));
		for (const char *n = "op-gone"; n; n = !strcmp(n, "op-gone") ? "op-gonelink" :
						  !strcmp(n, "op-gonelink") ? "op-null" : NULL) {
			path_of(p, sizeof(p), n);
			if (unlink(p))
				t_fail("unlink %s: %s", p, strerror(errno));
		}
	}
	t_ready("");
	t_wait_usr1();
	t_check_common();
	check_same(10, S_IFREG);
	check_reads(10, "opath");
	check_same(11, S_IFDIR);
	check_dir();
	check_same(12, S_IFLNK);
	check_link(12, "op-file");
	check_same(13, S_IFIFO);
	if (deleted) {
		struct stat st;

		if (fstat(14, &st) || st.st_nlink || (st.st_mode & S_IFMT) != S_IFREG)
			t_fail("fd 14: not a removed regular file (links %lu)", (unsigned long)st.st_nlink);
		check_reads(14, "gone");
		if (fstat(15, &st) || st.st_nlink || !S_ISLNK(st.st_mode))
			t_fail("fd 15: not a removed symlink (links %lu)", (unsigned long)st.st_nlink);
		check_link(15, "op-file");
		if (fstat(16, &st) || st.st_nlink || !S_ISCHR(st.st_mode) ||
		    st.st_rdev != makedev(1, 3) || (st.st_mode & 07777) != 0640)
			t_fail("fd 16: not a removed node of 1:3 mode 0640 (links %lu, mode %o)",
			       (unsigned long)st.st_nlink, st.st_mode);
		if (write(16, "x", 1) != 1 || read(16, p, 1) != 0)
			t_fail("fd 16 does not work as /dev/null: %s", strerror(errno));
	}
	t_pass(NULL);
}
