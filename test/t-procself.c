/* t-procself: files of its own /proc directory (zdtm memfd02 leaves
 * /proc/self/maps open, cgroup_ignore /proc/self/cgroup).
 *   fd 10: /proc/self/maps, read from offset 7 (position kept)
 *   fd 11: /proc/self/status
 * After SIGUSR1: fd 10 is still at offset 7 and reads the maps of the
 * process (its own stack among them), fd 11 reads "Pid:\t<its pid>", and
 * both are files of its own /proc directory (readlink shows /proc/PID/...).
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>

static void open_as(const char *path, int want)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0 || dup2(fd, want) != want || close(fd))
		t_fail("open %s as fd %d: %s", path, want, strerror(errno));
}

static void check_link(int fd, const char *name)
{
	char link[64], want[64], got[128];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	snprintf(want, sizeof(want), "/proc/%d/%s", (int)getpid(), name);
	n = readlink(link, got, sizeof(got) - 1);
	if (n < 0)
		t_fail("readlink %s: %s", link, strerror(errno));
	got[n] = 0;
	if (strcmp(got, want))
		t_fail("fd %d is %s, want %s", fd, got, want);
}

/* the whole file fd reads from offset 0, NUL-terminated */
static char *read_all(int fd)
{
	static char buf[1 << 16];
	size_t len = 0;
	ssize_t n;

	if (lseek(fd, 0, SEEK_SET))
		t_fail("lseek fd %d: %s", fd, strerror(errno));
	while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = 0;
	return buf;
}

int main(int argc, char **argv)
{
	char want[32], buf[8];
	off_t at;

	t_init(argc, argv, SA_RESTART);
	open_as("/proc/self/maps", 10);
	if (read(10, buf, 7) != 7)
		t_fail("read fd 10: %s", strerror(errno));
	open_as("/proc/self/status", 11);
	t_ready(NULL);
	t_wait_usr1();
	t_check_common();
	check_link(10, "maps");
	check_link(11, "status");
	if ((at = lseek(10, 0, SEEK_CUR)) != 7)
		t_fail("fd 10 at offset %lld, want 7", (long long)at);
	if (!strstr(read_all(10), "[stack]"))
		t_fail("fd 10 does not read the process's maps");
	snprintf(want, sizeof(want), "\nPid:\t%d\n", (int)getpid());
	if (!strstr(read_all(11), want))
		t_fail("fd 11 does not read the process's status (no \"%s\")", want + 1);
	t_pass(NULL);
}
