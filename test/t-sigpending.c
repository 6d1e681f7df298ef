/* t-sigpending: blocked signals that are pending must stay pending:
 * SIGUSR2 and SIGRTMIN+1 (queued twice with values 11 and 22) pending for
 * the process, SIGWINCH pending for the main thread only.
 * After SIGUSR1 the signals are taken with sigtimedwait and checked.
 * READY <pid> */
#include "tlib.h"

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);
	sigset_t blk;
	sigemptyset(&blk);
	sigaddset(&blk, SIGUSR2);
	sigaddset(&blk, SIGRTMIN + 1);
	sigaddset(&blk, SIGWINCH);
	sigprocmask(SIG_BLOCK, &blk, NULL);

	kill(getpid(), SIGUSR2);
	union sigval v = { .sival_int = 11 };
	sigqueue(getpid(), SIGRTMIN + 1, v);
	v.sival_int = 22;
	sigqueue(getpid(), SIGRTMIN + 1, v);
	syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGWINCH);

	t_ready(NULL);
	t_wait_usr1();
	t_check_common();

	sigset_t pend;
	sigpending(&pend);
	if (!sigismember(&pend, SIGUSR2) || !sigismember(&pend, SIGRTMIN + 1) ||
	    !sigismember(&pend, SIGWINCH))
		t_fail("pending signals lost (USR2 %d RTMIN+1 %d WINCH %d)", sigismember(&pend, SIGUSR2),
		       sigismember(&pend, SIGRTMIN + 1), sigismember(&pend, SIGWINCH));
	struct timespec zero = { 0, 0 };
	siginfo_t si;
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, SIGRTMIN + 1);
	for (int want = 11; want <= 22; want += 11) {
		if (sigtimedwait(&one, &si, &zero) != SIGRTMIN + 1)
			t_fail("queued SIGRTMIN+1 #%d lost", want / 11);
		if (si.si_value.sival_int != want || si.si_code != SI_QUEUE)
			t_fail("queued SIGRTMIN+1 value %d code %d, want %d SI_QUEUE",
			       si.si_value.sival_int, si.si_code, want);
	}
	if (sigtimedwait(&one, &si, &zero) != -1)
		t_fail("SIGRTMIN+1 queued more than twice");
	t_pass(NULL);
}
