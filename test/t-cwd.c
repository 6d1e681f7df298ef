/* t-cwd: a process whose cwd and open directories were deleted (issue 24).
 *   cwd:   DIR/cwd-gone (mode 0710), removed while the process is in it
 *   fd 10: DIR/cwd-gone too, O_RDONLY | O_DIRECTORY (the cwd's very inode)
 *   fd 11: DIR/cwd-fdonly (mode 0750), only open, removed too
 * argv[2] "renamed": the runner makes DIR/cwd-gone again before the restore (the
 * directory comes back beside it); "parentgone": the cwd is DIR/cwd-par/cwd-gone and
 * both are removed (the restore makes cwd-par again, and removes it again).
 * After SIGUSR1: the cwd reads "DIR/cwd-gone (deleted)" (or a name beside it when
 * renamed), is a directory of mode 0710 with no link left, getcwd() fails with ENOENT,
 * nothing can be made in it, fd 10 is on the cwd's inode, fd 11 reads
 * "DIR/cwd-fdonly (deleted)", mode 0750, on another inode.
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <sys/stat.h>

static char gone[600], fdonly[512], par[512];
static int renamed;

static void expect_link(const char *proc, const char *want_path)
{
	char link[600], want[600];
	ssize_t n = readlink(proc, link, sizeof(link) - 1);

	link[n < 0 ? 0 : n] = 0;
	snprintf(want, sizeof(want), "%s (deleted)", want_path);
	if (renamed && !strncmp(link, want_path, strlen(want_path)) &&
	    strstr(link, ".memdump-ghost.") && strstr(link, " (deleted)"))
		return;
	if (strcmp(link, want))
		t_fail("%s is '%s', want '%s'", proc, link, want);
}

static void expect_dir(const char *what, const struct stat *st, mode_t mode)
{
	if (!S_ISDIR(st->st_mode) || (st->st_mode & 07777) != mode)
		t_fail("%s: mode %o, want a directory of mode %o", what, st->st_mode, mode);
	if (st->st_nlink != 0)
		t_fail("%s: %lu links, want 0 (deleted)", what, (unsigned long)st->st_nlink);
}

static void check(void)
{
	struct stat cwd, a, b;
	char buf[600];

	expect_link("/proc/self/cwd", gone);
	expect_link("/proc/self/fd/10", gone);
	expect_link("/proc/self/fd/11", fdonly);
	if (stat(".", &cwd) || fstat(10, &a) || fstat(11, &b))
		t_fail("stat: %s", strerror(errno));
	expect_dir("cwd", &cwd, 0710);
	expect_dir("fd 11", &b, 0750);
	if (a.st_dev != cwd.st_dev || a.st_ino != cwd.st_ino)
		t_fail("fd 10 (inode %lu) is not the cwd (inode %lu)", (unsigned long)a.st_ino,
		       (unsigned long)cwd.st_ino);
	if (b.st_dev == cwd.st_dev && b.st_ino == cwd.st_ino)
		t_fail("fd 11 is the cwd's inode");
	errno = 0;
	if (getcwd(buf, sizeof(buf)) || errno != ENOENT)
		t_fail("getcwd: '%s' (%s), want ENOENT", errno ? "" : buf, strerror(errno));
	if (!mkdir("x", 0700) || errno != ENOENT)
		t_fail("mkdir in the deleted cwd: %s, want ENOENT", strerror(errno));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "";
	int fd;

	t_init(argc, argv, SA_RESTART);
	renamed = !strcmp(mode, "renamed");
	if (!strcmp(mode, "parentgone")) {
		snprintf(par, sizeof(par), "%s/cwd-par", t_dir);
		snprintf(gone, sizeof(gone), "%s/cwd-gone", par);
		if (mkdir(par, 0755))
			t_fail("mkdir %s: %s", par, strerror(errno));
	} else {
		snprintf(gone, sizeof(gone), "%s/cwd-gone", t_dir);
	}
	snprintf(fdonly, sizeof(fdonly), "%s/cwd-fdonly", t_dir);
	if (mkdir(gone, 0700) || chmod(gone, 0710) || mkdir(fdonly, 0700) || chmod(fdonly, 0750))
		t_fail("mkdir: %s", strerror(errno));
	fd = open(gone, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || dup2(fd, 10) != 10 || close(fd))
		t_fail("open %s: %s", gone, strerror(errno));
	fd = open(fdonly, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || dup2(fd, 11) != 11 || close(fd))
		t_fail("open %s: %s", fdonly, strerror(errno));
	if (chdir(gone) || rmdir(gone) || rmdir(fdonly) || (par[0] && rmdir(par)))
		t_fail("chdir/rmdir: %s", strerror(errno));
	if (!par[0])
		check();	/* what the restore must give back */
	t_ready(NULL);
	t_wait_usr1();
	t_check_common();
	check();
	t_pass(mode[0] ? mode : NULL);
}
