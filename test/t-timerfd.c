/* t-timerfd: timerfds at fixed numbers.
 *   fd 10: CLOCK_MONOTONIC, every 100 ms, TFD_NONBLOCK, expired twice and not read
 *          (the kernel shows no remaining time): its ticks and its period stay
 *   fd 11: CLOCK_MONOTONIC, once in 30 s, TFD_CLOEXEC: relative, the time the
 *          process was dumped is not taken from it
 *   fd 12: CLOCK_MONOTONIC, once, already expired: 1 tick unread
 *   fd 13: CLOCK_REALTIME, TFD_TIMER_ABSTIME, once at READY + 2 s: the runner
 *          keeps it dumped longer, so it must fire at once after restore
 *   fd 14: CLOCK_MONOTONIC, TFD_TIMER_ABSTIME, once at READY + 60 s: same deadline
 *   fd 15: CLOCK_BOOTTIME, disarmed
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/timerfd.h>

static double dabs(double x) { return x < 0 ? -x : x; }

static double ts_s(struct timespec t) { return t.tv_sec + t.tv_nsec / 1e9; }

static struct timespec ts_of(double s)
{
	return (struct timespec){ (time_t)s, (long)((s - (time_t)s) * 1e9) };
}

static double clock_s(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return ts_s(t);
}

static void make(int want, clockid_t c, int flags, int sflags, double value, double interval)
{
	int fd = timerfd_create(c, flags);
	struct itimerspec its = { ts_of(interval), ts_of(value) };

	if (fd < 0 || (value && timerfd_settime(fd, sflags, &its, NULL)))
		exit(2);
	if (dup3(fd, want, flags & TFD_CLOEXEC ? O_CLOEXEC : 0) != want)
		exit(2);
	close(fd);
}

/* Ticks readable now (0 if none). */
static uint64_t ticks_now(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };
	uint64_t v = 0;

	if (poll(&p, 1, 0) == 1 && read(fd, &v, 8) != 8)
		t_fail("read of timerfd %d: %s", fd, strerror(errno));
	return v;
}

static void wait_tick(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };
	uint64_t v;

	if (poll(&p, 1, 2000) != 1 || read(fd, &v, 8) != 8)
		t_fail("timerfd %d did not expire within 2 s", fd);
}

static struct itimerspec get(int fd)
{
	struct itimerspec its;

	if (timerfd_gettime(fd, &its))
		t_fail("timerfd_gettime(%d): %s", fd, strerror(errno));
	return its;
}

static void check_period(void)
{
	double t1, t2;

	if (!(fcntl(10, F_GETFL) & O_NONBLOCK))
		t_fail("fd 10 lost O_NONBLOCK");
	if (dabs(ts_s(get(10).it_interval) - 0.1) > 1e-6)
		t_fail("fd 10 interval %.6f s, want 0.1", ts_s(get(10).it_interval));
	wait_tick(10);
	t1 = t_now_mono();
	wait_tick(10);
	t2 = t_now_mono();
	if (t2 - t1 < 0.07 || t2 - t1 > 0.2)
		t_fail("fd 10 expired after %.3f s, its period is 0.1 s", t2 - t1);
}

int main(int argc, char **argv)
{
	double t0, rt_deadline, mono_deadline, r;

	t_init(argc, argv, SA_RESTART);
	make(12, CLOCK_MONOTONIC, TFD_NONBLOCK, 0, 0.001, 0);
	t_sleep_ms(20);
	t0 = t_now_mono();
	make(10, CLOCK_MONOTONIC, TFD_NONBLOCK, 0, 0.1, 0.1);
	make(11, CLOCK_MONOTONIC, TFD_CLOEXEC, 0, 30, 0);
	rt_deadline = clock_s(CLOCK_REALTIME) + 2;
	make(13, CLOCK_REALTIME, TFD_NONBLOCK, TFD_TIMER_ABSTIME, rt_deadline, 0);
	mono_deadline = clock_s(CLOCK_MONOTONIC) + 60;
	make(14, CLOCK_MONOTONIC, 0, TFD_TIMER_ABSTIME, mono_deadline, 0);
	make(15, CLOCK_BOOTTIME, 0, 0, 0, 0);
	t_sleep_ms(250);
	t_ready("");
	t_wait_usr1();
	t_check_common();
	if ((r = ticks_now(10)) < 2)
		t_fail("fd 10 has %.0f unread expirations, it had at least 2", r);
	if (clock_s(CLOCK_REALTIME) < rt_deadline + 0.5)
		t_fail("checked too early: the absolute timer's deadline has not passed long ago");
	if (ticks_now(13) != 1)
		t_fail("fd 13 (absolute, deadline passed while dumped) has not fired once");
	r = ts_s(get(14).it_value);
	if (dabs(r - (mono_deadline - clock_s(CLOCK_MONOTONIC))) > 0.5)
		t_fail("fd 14 fires in %.3f s, its deadline is in %.3f s", r,
		       mono_deadline - clock_s(CLOCK_MONOTONIC));
	r = ts_s(get(11).it_value);
	if (!(fcntl(11, F_GETFD) & FD_CLOEXEC))
		t_fail("fd 11 lost FD_CLOEXEC");
	if (r > 30 || r < 30 - (t_now_mono() - t0) - 0.5)
		t_fail("fd 11 fires in %.3f s; it ran %.3f s of its 30", r, t_now_mono() - t0);
	if (ticks_now(12) != 1)
		t_fail("fd 12 lost its unread expiration");
	if (get(12).it_value.tv_sec || get(12).it_value.tv_nsec || get(15).it_value.tv_sec ||
	    get(15).it_value.tv_nsec)
		t_fail("a disarmed timer is armed");
	check_period();
	t_pass(NULL);
}
