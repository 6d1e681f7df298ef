/* t-sleeper: one nanosleep(SECS) (continued with the remaining time if
 * interrupted by a signal) that must complete on time: never early, and
 * reported lateness is judged by the runner.
 * usage: t-sleeper DIR [SECS]   (default 6)
 * READY <pid> <deadline-realtime-ms>
 * after waking and SIGUSR1: PASS late_ms=<n>   or FAIL woke early */
#include "tlib.h"

static long long rt_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	t_init(argc, argv, 0);
	int secs = argc > 2 ? atoi(argv[2]) : 6;
	double start = t_now_mono();
	long long deadline = rt_ms() + secs * 1000LL;
	struct timespec req = { secs, 0 }, rem;

	t_ready("%lld", deadline);
	while (nanosleep(&req, &rem)) {
		if (errno != EINTR)
			t_fail("nanosleep: %s", strerror(errno));
		if (rem.tv_sec > secs || rem.tv_nsec >= 1000000000L || rem.tv_sec < 0)
			t_fail("nanosleep returned bogus remaining time %ld.%09ld",
			       (long)rem.tv_sec, rem.tv_nsec);
		req = rem;
	}
	double slept = t_now_mono() - start;
	long long late = rt_ms() - deadline;
	t_wait_usr1();
	t_check_common();
	if (slept < secs - 0.002)
		t_fail("woke early: slept %.3f s of %d s", slept, secs);
	char info[64];
	snprintf(info, sizeof(info), "late_ms=%lld", late < 0 ? 0 : late);
	t_pass(info);
}
