/* t-signalfd: signalfds at fixed numbers, with signals pending at the dump.
 *   blocked: SIGUSR2, SIGHUP, SIGRTMIN+2
 *   fd 10: signalfd {SIGUSR2, SIGRTMIN+2}, SFD_NONBLOCK; pending for it: SIGUSR2 and
 *          SIGRTMIN+2 queued with value 42
 *   fd 11: signalfd {SIGHUP}, SFD_CLOEXEC: must still receive one sent after restore
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/signalfd.h>

static void make(int want, const int *sigs, int flags)
{
	sigset_t m;
	int fd;

	sigemptyset(&m);
	for (; *sigs; sigs++)
		sigaddset(&m, *sigs);
	fd = signalfd(-1, &m, flags);
	if (fd < 0 || dup3(fd, want, flags & SFD_CLOEXEC ? O_CLOEXEC : 0) != want)
		exit(2);
	close(fd);
}

static int rd(int fd, struct signalfd_siginfo *si)
{
	ssize_t n = read(fd, si, sizeof(*si));

	if (n == (ssize_t)sizeof(*si))
		return 1;
	if (n < 0 && errno == EAGAIN)
		return 0;
	t_fail("read of signalfd %d: %s", fd, strerror(errno));
}

int main(int argc, char **argv)
{
	int s10[] = { SIGUSR2, SIGRTMIN + 2, 0 }, s11[] = { SIGHUP, 0 };
	struct signalfd_siginfo si;
	struct pollfd p = { 11, POLLIN, 0 };
	int got_usr2 = 0, got_rt = 0;
	sigset_t m;

	t_init(argc, argv, SA_RESTART);
	sigemptyset(&m);
	sigaddset(&m, SIGUSR2);
	sigaddset(&m, SIGHUP);
	sigaddset(&m, SIGRTMIN + 2);
	sigprocmask(SIG_BLOCK, &m, NULL);
	make(10, s10, SFD_NONBLOCK);
	make(11, s11, SFD_CLOEXEC);
	kill(getpid(), SIGUSR2);
	sigqueue(getpid(), SIGRTMIN + 2, (union sigval){ .sival_int = 42 });
	t_ready("");
	t_wait_usr1();
	t_check_common();
	if (!(fcntl(10, F_GETFL) & O_NONBLOCK) || (fcntl(11, F_GETFL) & O_NONBLOCK))
		t_fail("O_NONBLOCK of fd 10/11 is not as set");
	if (!(fcntl(11, F_GETFD) & FD_CLOEXEC) || (fcntl(10, F_GETFD) & FD_CLOEXEC))
		t_fail("FD_CLOEXEC of fd 10/11 is not as set");
	while (rd(10, &si)) {
		if (si.ssi_signo == SIGUSR2)
			got_usr2++;
		else if ((int)si.ssi_signo == SIGRTMIN + 2 && si.ssi_int == 42)
			got_rt++;
		else
			t_fail("fd 10 read signal %u (value %d)", si.ssi_signo, si.ssi_int);
	}
	if (got_usr2 != 1 || got_rt != 1)
		t_fail("fd 10 read SIGUSR2 %d time(s), SIGRTMIN+2 with value 42 %d time(s)",
		       got_usr2, got_rt);
	if (poll(&p, 1, 0) != 0)
		t_fail("fd 11 is readable with no SIGHUP pending");
	kill(getpid(), SIGHUP);
	if (poll(&p, 1, 2000) != 1 || read(11, &si, sizeof(si)) != sizeof(si) ||
	    si.ssi_signo != SIGHUP)
		t_fail("fd 11 does not receive SIGHUP");
	t_pass(NULL);
}
