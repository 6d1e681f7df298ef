/* t-procfile: /proc files of a child in the dump.
 *   fd 10: /proc/CHILD/stat, read from offset 3 (position kept)
 *   fd 11 and fd 12: /proc/CHILD/comm, one description (dup)
 * After SIGUSR1: fd 10 is still at offset 3 of the child's stat (its PID is
 * the same), fds 11 and 12 share their offset, and once the child is killed
 * and reaped fd 10 reads ESRCH: it was the child's file, not a path.
 * READY <pid> <child> */
#include "tlib.h"
#include <fcntl.h>
#include <sys/wait.h>

static void open_as(const char *path, int want)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0 || dup2(fd, want) != want || close(fd))
		t_fail("open %s as fd %d: %s", path, want, strerror(errno));
}

int main(int argc, char **argv)
{
	char path[64], want[32], buf[64] = "";
	pid_t child;
	off_t at;
	int st;

	t_init(argc, argv, SA_RESTART);
	child = fork();
	if (child == 0) {
		for (;;)
			pause();
	}
	if (child < 0)
		t_fail("fork: %s", strerror(errno));
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)child);
	open_as(path, 10);
	if (lseek(10, 3, SEEK_SET) != 3)
		t_fail("lseek fd 10: %s", strerror(errno));
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)child);
	open_as(path, 11);
	if (dup2(11, 12) != 12)
		t_fail("dup2: %s", strerror(errno));
	t_ready("%d", (int)child);
	t_wait_usr1();
	t_check_common();
	if ((at = lseek(10, 0, SEEK_CUR)) != 3)
		t_fail("fd 10 at offset %lld, want 3", (long long)at);
	if (lseek(10, 0, SEEK_SET) || read(10, buf, sizeof(buf) - 1) <= 0)
		t_fail("read fd 10: %s", strerror(errno));
	snprintf(want, sizeof(want), "%d (", (int)child);
	if (strncmp(buf, want, strlen(want)))
		t_fail("fd 10 reads \"%.20s\", want \"%s...\"", buf, want);
	if (read(11, buf, 2) != 2 || (at = lseek(12, 0, SEEK_CUR)) != 2)
		t_fail("fds 11 and 12 do not share their offset (fd 12 at %lld)", (long long)at);
	if (kill(child, SIGKILL) || waitpid(child, &st, 0) != child)
		t_fail("kill/wait child: %s", strerror(errno));
	if (lseek(10, 0, SEEK_SET) || read(10, buf, sizeof(buf)) != -1 || errno != ESRCH)
		t_fail("fd 10 still reads after its process is gone (not ESRCH: %s)", strerror(errno));
	t_pass(NULL);
}
