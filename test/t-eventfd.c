/* t-eventfd: eventfds at fixed numbers.
 *   fd 10: counter 5, EFD_SEMAPHORE|EFD_NONBLOCK
 *   fd 11: counter 0x100000003 (above 32 bits), blocking, EFD_CLOEXEC
 *   fd 12: counter 0, EFD_NONBLOCK
 * After SIGUSR1: the flags, the counters as read, the semaphore reading 1 at a time.
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <sys/eventfd.h>

static void at(int fd, int want)
{
	if (fd < 0 || dup3(fd, want, fcntl(fd, F_GETFD) & FD_CLOEXEC ? O_CLOEXEC : 0) != want)
		exit(2);
	close(fd);
}

static void check_flags(int fd, int nonblock, int cloexec)
{
	int fl = fcntl(fd, F_GETFL), fdf = fcntl(fd, F_GETFD);

	if (fl < 0)
		t_fail("fd %d is not open", fd);
	if (!!(fl & O_NONBLOCK) != nonblock)
		t_fail("fd %d: O_NONBLOCK is %d, want %d", fd, !!(fl & O_NONBLOCK), nonblock);
	if (!!(fdf & FD_CLOEXEC) != cloexec)
		t_fail("fd %d: FD_CLOEXEC is %d, want %d", fd, !!(fdf & FD_CLOEXEC), cloexec);
}

static uint64_t rd(int fd)
{
	uint64_t v = 0;

	if (read(fd, &v, 8) != 8)
		t_fail("read of eventfd %d: %s", fd, strerror(errno));
	return v;
}

int main(int argc, char **argv)
{
	uint64_t big = 0x100000003ULL, v;

	t_init(argc, argv, SA_RESTART);
	at(eventfd(5, EFD_SEMAPHORE | EFD_NONBLOCK), 10);
	at(eventfd(0, EFD_CLOEXEC), 11);
	if (write(11, &big, 8) != 8)
		exit(2);
	at(eventfd(0, EFD_NONBLOCK), 12);
	t_ready("");
	t_wait_usr1();
	t_check_common();
	check_flags(10, 1, 0);
	check_flags(11, 0, 1);
	check_flags(12, 1, 0);
	for (int i = 0; i < 5; i++)
		if ((v = rd(10)) != 1)
			t_fail("semaphore read %d gave %" PRIu64 ", want 1", i, v);
	if (read(10, &v, 8) != -1 || errno != EAGAIN)
		t_fail("the semaphore is not empty after 5 reads");
	if ((v = rd(11)) != big)
		t_fail("fd 11 counter %#" PRIx64 ", want %#" PRIx64, v, big);
	if (read(12, &v, 8) != -1 || errno != EAGAIN)
		t_fail("fd 12 is not empty");
	v = 7;
	if (write(12, &v, 8) != 8 || rd(12) != 7)
		t_fail("fd 12 does not count any more");
	t_pass(NULL);
}
