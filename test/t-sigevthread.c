/* t-sigevthread: a POSIX timer with SIGEV_THREAD (glibc runs each expiry in a
 * thread its helper thread starts on signal 32, SIGCANCEL, which glibc keeps
 * out of sigfillset()), every millisecond: it fires many times while a
 * restored process is parked. On SIGUSR1: PASS once the expiries go on after
 * it (the timer, its helper thread and its signal restored).
 * READY <pid> */
#include "tlib.h"
#include <stdatomic.h>

static atomic_ulong fired;

static void expiry(union sigval v)
{
	(void)v;
	atomic_fetch_add(&fired, 1);
}

int main(int argc, char **argv)
{
	struct sigevent ev = { .sigev_notify = SIGEV_THREAD, .sigev_notify_function = expiry };
	struct itimerspec its = { .it_interval = { 0, 1000000 }, .it_value = { 0, 1000000 } };
	unsigned long at;
	timer_t id;

	t_init(argc, argv, SA_RESTART);
	if (timer_create(CLOCK_MONOTONIC, &ev, &id) || timer_settime(id, 0, &its, NULL))
		t_fail("timer_create: %s", strerror(errno));
	while (atomic_load(&fired) < 5)
		t_sleep_ms(1);
	t_ready("");
	t_wait_usr1();
	t_check_common();
	at = atomic_load(&fired);
	for (int i = 0; i < 2000 && atomic_load(&fired) < at + 20; i++)
		t_sleep_ms(1);
	if (atomic_load(&fired) < at + 20)
		t_fail("the SIGEV_THREAD timer stopped: %lu expiries, %lu after SIGUSR1",
		       atomic_load(&fired), atomic_load(&fired) - at);
	t_pass(NULL);
}
