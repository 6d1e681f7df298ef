/* t-rmdiropen: files open in directories that were removed too (zdtm rmdir_open).
 *   fd 10: DIR/rmo-par/rmo-sub (mode 0750), O_RDONLY | O_DIRECTORY; rmo-sub and
 *          rmo-par removed
 *   fd 11: DIR/rmo-gone/deep/x (mode 0640, "ghostdata"), O_RDWR at offset 5;
 *          x unlinked, deep and rmo-gone removed
 * After SIGUSR1: fd 10 is a directory of mode 0750 with no link left, shown
 * as "DIR/rmo-par/rmo-sub (deleted)"; fd 11 a file of mode 0640 with no link
 * left, shown as "DIR/rmo-gone/deep/x (deleted)", at offset 5, reading
 * "ghostdata"; DIR/rmo-par and DIR/rmo-gone are not there (the directories a
 * restore made for them are gone again).
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <sys/stat.h>

static char par[512], sub[540], gonedir[512], deep[540], file[560];

static void expect_fd(int fd, const char *path, mode_t mode)
{
	char link[64], got[700], want[600];
	struct stat st;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	snprintf(want, sizeof(want), "%s (deleted)", path);
	n = readlink(link, got, sizeof(got) - 1);
	if (n < 0)
		t_fail("readlink %s: %s", link, strerror(errno));
	got[n] = 0;
	if (strcmp(got, want))
		t_fail("fd %d is \"%s\", want \"%s\"", fd, got, want);
	if (fstat(fd, &st))
		t_fail("fstat fd %d: %s", fd, strerror(errno));
	if (st.st_mode != mode || st.st_nlink != 0)
		t_fail("fd %d: mode %o, %lu links, want %o and none", fd, (unsigned)st.st_mode,
		       (unsigned long)st.st_nlink, (unsigned)mode);
}

static void check(void)
{
	char buf[16] = "";
	off_t at;

	expect_fd(10, sub, S_IFDIR | 0750);
	expect_fd(11, file, S_IFREG | 0640);
	if ((at = lseek(11, 0, SEEK_CUR)) != 5)
		t_fail("fd 11 at offset %lld, want 5", (long long)at);
	if (pread(11, buf, sizeof(buf) - 1, 0) != 9 || strcmp(buf, "ghostdata"))
		t_fail("fd 11 reads \"%s\", want \"ghostdata\"", buf);
	if (!access(par, F_OK) || !access(gonedir, F_OK))
		t_fail("%s or %s is there again", par, gonedir);
}

int main(int argc, char **argv)
{
	int fd;

	t_init(argc, argv, SA_RESTART);
	snprintf(par, sizeof(par), "%s/rmo-par", t_dir);
	snprintf(sub, sizeof(sub), "%s/rmo-sub", par);
	snprintf(gonedir, sizeof(gonedir), "%s/rmo-gone", t_dir);
	snprintf(deep, sizeof(deep), "%s/deep", gonedir);
	snprintf(file, sizeof(file), "%s/x", deep);
	if (mkdir(par, 0755) || mkdir(sub, 0700) || chmod(sub, 0750) || mkdir(gonedir, 0700) ||
	    mkdir(deep, 0700))
		t_fail("mkdir: %s", strerror(errno));
	fd = open(sub, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || dup2(fd, 10) != 10 || close(fd))
		t_fail("open %s: %s", sub, strerror(errno));
	fd = open(file, O_RDWR | O_CREAT | O_EXCL, 0640);
	if (fd < 0 || dup2(fd, 11) != 11 || close(fd) || fchmod(11, 0640))
		t_fail("open %s: %s", file, strerror(errno));
	if (write(11, "ghostdata", 9) != 9 || lseek(11, 5, SEEK_SET) != 5)
		t_fail("write %s: %s", file, strerror(errno));
	if (rmdir(sub) || rmdir(par) || unlink(file) || rmdir(deep) || rmdir(gonedir))
		t_fail("rmdir/unlink: %s", strerror(errno));
	check();	/* what the restore must give back */
	t_ready(NULL);
	t_wait_usr1();
	t_check_common();
	check();
	t_pass(NULL);
}
