/* t-itimer - interval timers whose signal is pending at the dump.
 *
 * A periodic ITIMER_REAL (50 ms) runs with SIGALRM blocked, so that at any
 * moment its signal is pending and the kernel reports 0 time left until the
 * signal is taken: the timer is re-armed only when SIGALRM is dequeued.
 * ITIMER_VIRTUAL is periodic too (its signal, SIGVTALRM, blocked the same
 * way) and ITIMER_PROF is a long one-shot.  On SIGUSR1: SIGALRM is
 * unblocked, the pending one is taken, and at least 3 more SIGALRMs must
 * arrive within 2 s (the timer still runs), the intervals must be kept and
 * ITIMER_PROF must still be armed.
 */
#include "tlib.h"
#include <sys/time.h>

static volatile sig_atomic_t alarms, ticks;

static void on_alarm(int sig) { (void)sig; alarms++; }
static void on_tick(int sig) { (void)sig; ticks++; }

static timer_t posix_timer(int sig)
{
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = sig };
	struct itimerspec its = { { 0, 50000000 }, { 0, 50000000 } };
	timer_t t;

	if (timer_create(CLOCK_MONOTONIC, &sev, &t) || timer_settime(t, 0, &its, NULL))
		t_fail("POSIX timer: %s", strerror(errno));
	return t;
}

static void arm(int which, long isec, long iusec, long vsec, long vusec)
{
	struct itimerval it = { { isec, iusec }, { vsec, vusec } };

	if (setitimer(which, &it, NULL))
		t_fail("setitimer(%d): %s", which, strerror(errno));
}

static void block(int sig, int how)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, sig);
	if (sigprocmask(how, &s, NULL))
		t_fail("sigprocmask: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	struct itimerval it;
	struct sigaction sa;

	t_init(argc, argv, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = on_tick;
	sigaction(SIGRTMIN + 2, &sa, NULL);
	block(SIGALRM, SIG_BLOCK);
	block(SIGRTMIN + 2, SIG_BLOCK);
	timer_t pt = posix_timer(SIGRTMIN + 2);
	block(SIGVTALRM, SIG_BLOCK);
	arm(ITIMER_REAL, 0, 50000, 0, 50000);
	arm(ITIMER_VIRTUAL, 0, 1000, 0, 1000);
	arm(ITIMER_PROF, 0, 0, 9000, 0);
	/* burn a little CPU so that ITIMER_VIRTUAL expires and its signal pends */
	for (volatile unsigned long i = 0; i < 50000000UL; i++)
		;
	t_sleep_ms(120);	/* SIGALRM is pending from here on */
	getitimer(ITIMER_REAL, &it);
	if (it.it_value.tv_sec || it.it_value.tv_usec)
		t_fail("ITIMER_REAL not expired before the dump (%ld us left)",
		       (long)it.it_value.tv_usec);
	t_ready("itimer");
	t_wait_usr1();

	getitimer(ITIMER_REAL, &it);
	if (it.it_interval.tv_sec != 0 || it.it_interval.tv_usec != 50000)
		t_fail("ITIMER_REAL interval %ld.%06ld, expected 0.050000",
		       (long)it.it_interval.tv_sec, (long)it.it_interval.tv_usec);
	getitimer(ITIMER_VIRTUAL, &it);
	if (it.it_interval.tv_usec != 1000)
		t_fail("ITIMER_VIRTUAL interval %ld us, expected 1000", (long)it.it_interval.tv_usec);
	getitimer(ITIMER_PROF, &it);
	if (!it.it_value.tv_sec || it.it_interval.tv_sec || it.it_interval.tv_usec)
		t_fail("ITIMER_PROF %ld s left, interval %ld.%06ld: expected a one-shot still armed",
		       (long)it.it_value.tv_sec, (long)it.it_interval.tv_sec,
		       (long)it.it_interval.tv_usec);
	struct itimerspec its;
	if (timer_gettime(pt, &its) || its.it_interval.tv_nsec != 50000000)
		t_fail("POSIX timer interval %ld ns, expected 50000000", (long)its.it_interval.tv_nsec);
	block(SIGALRM, SIG_UNBLOCK);
	block(SIGRTMIN + 2, SIG_UNBLOCK);
	for (int i = 0; i < 200 && (alarms < 4 || ticks < 4); i++)
		t_sleep_ms(10);
	if (alarms < 4)
		t_fail("%d SIGALRM in 2 s after the restore: the periodic ITIMER_REAL stopped",
		       (int)alarms);
	if (ticks < 4)
		t_fail("%d POSIX timer signals in 2 s after the restore: the periodic timer stopped",
		       (int)ticks);
	t_check_common();
	char info[32];
	snprintf(info, sizeof(info), "%d SIGALRM, %d timer", (int)alarms, (int)ticks);
	t_pass(info);
}
