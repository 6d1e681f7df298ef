/* t-ptimers: POSIX timers of every notification kind, ids with a gap.
 *   id 0: CLOCK_MONOTONIC, SIGEV_SIGNAL SIGRTMIN+1 value 0x1111, in 100 s every 50 s
 *   id 1: created and deleted (a gap)
 *   id 2: CLOCK_REALTIME, SIGEV_NONE, in 200 s
 *   id 3: CLOCK_MONOTONIC, SIGEV_THREAD_ID to a second thread, SIGRTMIN+2
 *         value 0x3333, every 50 ms
 *   id 4: CLOCK_BOOTTIME, SIGEV_SIGNAL SIGRTMIN+3, disarmed
 * After SIGUSR1: each id exists with its clock's times (time left below what
 * it was), id 1 does not, the periodic timer still signals its thread with
 * its value, and the next timer created gets id 5.
 * READY <pid> */
#include "tlib.h"
#include <pthread.h>

static timer_t ids[5];
static volatile int ticks, wrong;
static volatile pid_t ticker_tid;

static void on_tick(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (syscall(SYS_gettid) != ticker_tid || si->si_value.sival_ptr != (void *)0x3333 ||
	    si->si_code != SI_TIMER)
		wrong++;
	ticks++;
}

static void *ticker(void *arg)
{
	(void)arg;
	ticker_tid = syscall(SYS_gettid);
	for (;;)
		pause();
	return NULL;
}

static timer_t make(clockid_t clock, int notify, int sig, long val, pid_t tid, int want)
{
	struct sigevent sev;
	timer_t t = 0;		/* the kernel writes an int */

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = notify;
	sev.sigev_signo = sig;
	sev.sigev_value.sival_ptr = (void *)val;
	sev._sigev_un._tid = tid;
	if (syscall(SYS_timer_create, clock, &sev, &t))
		t_fail("timer_create: %s", strerror(errno));
	if ((intptr_t)t != want)
		t_fail("timer_create gave id %ld, want %d", (long)(intptr_t)t, want);
	return t;
}

static void arm(timer_t t, long vsec, long vnsec, long isec, long insec)
{
	struct itimerspec its = { { isec, insec }, { vsec, vnsec } };

	if (syscall(SYS_timer_settime, t, 0, &its, NULL))
		t_fail("timer_settime: %s", strerror(errno));
}

static void expect(int i, double max_left, double min_left, long isec, long insec)
{
	struct itimerspec its;
	double left;

	if (syscall(SYS_timer_gettime, ids[i], &its))
		t_fail("timer %d is gone: %s", i, strerror(errno));
	left = its.it_value.tv_sec + its.it_value.tv_nsec / 1e9;
	if (left > max_left || left < min_left || its.it_interval.tv_sec != isec ||
	    its.it_interval.tv_nsec != insec)
		t_fail("timer %d: %.3f s left every %ld.%09ld s, want %.3f-%.3f s every %ld.%09ld s",
		       i, left, (long)its.it_interval.tv_sec, its.it_interval.tv_nsec, min_left,
		       max_left, isec, insec);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_sigaction = on_tick, .sa_flags = SA_SIGINFO | SA_RESTART };
	pthread_t th;
	sigset_t rt;

	t_init(argc, argv, SA_RESTART);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGRTMIN + 2, &sa, NULL);
	sigemptyset(&rt);
	sigaddset(&rt, SIGRTMIN + 2);
	pthread_create(&th, NULL, ticker, NULL);
	while (!ticker_tid)
		t_sleep_ms(1);
	pthread_sigmask(SIG_BLOCK, &rt, NULL);	/* only the ticker takes it */

	ids[0] = make(CLOCK_MONOTONIC, SIGEV_SIGNAL, SIGRTMIN + 1, 0x1111, 0, 0);
	ids[1] = make(CLOCK_MONOTONIC, SIGEV_SIGNAL, SIGALRM, 0, 0, 1);
	ids[2] = make(CLOCK_REALTIME, SIGEV_NONE, 0, 0, 0, 2);
	if (syscall(SYS_timer_delete, ids[1]))
		t_fail("timer_delete: %s", strerror(errno));
	ids[3] = make(CLOCK_MONOTONIC, SIGEV_SIGNAL | SIGEV_THREAD_ID, SIGRTMIN + 2, 0x3333,
		      ticker_tid, 3);
	ids[4] = make(CLOCK_BOOTTIME, SIGEV_SIGNAL, SIGRTMIN + 3, 0, 0, 4);
	arm(ids[0], 100, 0, 50, 0);
	arm(ids[2], 200, 0, 0, 0);
	arm(ids[3], 0, 50000000, 0, 50000000);
	while (ticks < 3)
		t_sleep_ms(10);
	t_ready("");
	t_wait_usr1();
	t_check_common();

	expect(0, 100, 60, 50, 0);
	expect(2, 200, 160, 0, 0);
	expect(3, 0.051, 0, 0, 50000000);
	expect(4, 0, 0, 0, 0);
	struct itimerspec its;
	if (!syscall(SYS_timer_gettime, ids[1], &its) || errno != EINVAL)
		t_fail("timer 1 exists after the restore");
	int before = ticks;
	t_sleep_ms(300);
	if (ticks < before + 3)
		t_fail("the thread timer ticked %d times in 300 ms", ticks - before);
	if (wrong)
		t_fail("%d ticks came to the wrong thread or with the wrong value", wrong);
	make(CLOCK_MONOTONIC, SIGEV_NONE, 0, 0, 0, 5);
	t_pass(NULL);
}
