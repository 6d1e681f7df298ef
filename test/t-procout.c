/* t-procout: /proc files of processes outside the dump (zdtm pid_file).
 *   argv[2]: the PID of a process outside the dump (the case's sleep)
 *   fd 10: /proc/OTHER/stat, read from offset 2 (position kept)
 *   fd 11: /proc/1/status
 * After SIGUSR1: fd 10 is still at offset 2 and reads "OTHER (", fd 11
 * reads "Pid:\t1", and both have the inode a new open of the path has.
 * READY <pid> <other> */
#include "tlib.h"
#include <fcntl.h>
#include <sys/stat.h>

static void open_as(const char *path, int want)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0 || dup2(fd, want) != want || close(fd))
		t_fail("open %s as fd %d: %s", path, want, strerror(errno));
}

/* fd reads, from offset 0, text that holds want; it is the file path names now */
static void check_fd(int fd, const char *path, const char *want)
{
	char buf[4096];
	struct stat a, b;
	ssize_t n;

	if (lseek(fd, 0, SEEK_SET) || (n = read(fd, buf, sizeof(buf) - 1)) <= 0)
		t_fail("read fd %d: %s", fd, strerror(errno));
	buf[n] = 0;
	if (!strstr(buf, want))
		t_fail("fd %d does not read \"%s\"", fd, want);
	if (fstat(fd, &a) || stat(path, &b))
		t_fail("stat %s: %s", path, strerror(errno));
	if (a.st_ino != b.st_ino || a.st_dev != b.st_dev)
		t_fail("fd %d is not %s (inode %lu, the path's %lu)", fd, path,
		       (unsigned long)a.st_ino, (unsigned long)b.st_ino);
}

int main(int argc, char **argv)
{
	char path[64], want[32], buf[4];
	off_t at;
	int other;

	t_init(argc, argv, SA_RESTART);
	if (argc < 3 || (other = atoi(argv[2])) <= 0)
		t_fail("usage: t-procout DIR OTHERPID");
	snprintf(path, sizeof(path), "/proc/%d/stat", other);
	open_as(path, 10);
	if (read(10, buf, 2) != 2)
		t_fail("read fd 10: %s", strerror(errno));
	open_as("/proc/1/status", 11);
	t_ready("%d", other);
	t_wait_usr1();
	t_check_common();
	if ((at = lseek(10, 0, SEEK_CUR)) != 2)
		t_fail("fd 10 at offset %lld, want 2", (long long)at);
	snprintf(want, sizeof(want), "%d (", other);
	check_fd(10, path, want);
	check_fd(11, "/proc/1/status", "\nPid:\t1\n");
	t_pass(NULL);
}
