/*
 * Restore of timerfds. Each is created with the other files, but armed
 * only once every thread is parked, right before they resume: the time the
 * restore takes is not taken from the timer.
 *
 * A relative timer gets its remaining time back (the process did not run
 * while it was dumped, as CRIU does). A TFD_TIMER_ABSTIME timer keeps its
 * deadline on its clock (dump_ns + remaining): one that passed while the
 * process was dumped has expired once, at once, with the periods that
 * elapsed counted in its ticks, and its next expiry stays on its period.
 * Ticks not read at the dump are added back (TFD_IOC_SET_TICKS).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "ctx/restore_ctx.h"
#include "evloop/evloop.h"

#define NS 1000000000ULL

#ifndef TFD_IOC_SET_TICKS
#define TFD_IOC_SET_TICKS	_IOW('T', 0, uint64_t)	/* linux/timerfd.h clashes with fcntl.h */
#endif

int timerfd_open(struct rst *r, const TimerfdEntry *t)
{
	int flags = TFD_CLOEXEC | (t->flags & O_NONBLOCK ? TFD_NONBLOCK : 0);
	int fd = timerfd_create(t->clockid, flags);
	struct rtimer *n;

	if (fd < 0)
		return fail(-errno, "cannot create timerfd %u (clock %u): %s", t->id, t->clockid,
			    strerror(errno));
	n = realloc(r->timers, (r->nr_timers + 1) * sizeof(*n));
	if (n) {
		r->timers = n;
		n[r->nr_timers].t = t;
		n[r->nr_timers].fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	}
	if (!n || n[r->nr_timers].fd < 0) {
		close(fd);
		return fail(-ENOMEM, "cannot keep timerfd %u for arming", t->id);
	}
	r->nr_timers++;
	return fd;
}

static struct timespec ts_of(uint64_t ns)
{
	return (struct timespec){ .tv_sec = ns / NS, .tv_nsec = ns % NS };
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts = { 0 };

	clock_gettime(c, &ts);
	return ts.tv_sec * NS + ts.tv_nsec;
}

/* ticks more expirations; those the timer already has (it may fire at once) stay. */
static int add_ticks(int fd, uint64_t ticks)
{
	int fl = fcntl(fd, F_GETFL);
	uint64_t got = 0;

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	if (read(fd, &got, sizeof(got)) != sizeof(got))
		got = 0;
	fcntl(fd, F_SETFL, fl);
	ticks += got;
	return ioctl(fd, TFD_IOC_SET_TICKS, &ticks) ? -errno : 0;
}

/* An absolute timer's next deadline; the expirations missed are added to *ticks. */
static uint64_t abs_deadline(const TimerfdEntry *t, uint64_t value, uint64_t interval,
			     uint64_t *ticks)
{
	uint64_t now = clock_ns(t->clockid);
	uint64_t deadline = (t->has_dump_ns ? t->dump_ns : now) + value;
	uint64_t missed;

	if (deadline > now)
		return deadline;
	missed = interval ? (now - deadline) / interval + 1 : 1;
	*ticks += missed;
	pr_info("timerfd %u expired while dumped: %" PRIu64 " expiration(s)\n", t->id, missed);
	return interval ? deadline + missed * interval : 0;
}

/*
 * A periodic timer that expired and was not read since shows no remaining
 * time: the kernel restarts it only when it is read. It goes on one period
 * from now.
 */
static uint64_t restart_value(const TimerfdEntry *t, uint64_t interval)
{
	return interval + (t->settime_flags & TFD_TIMER_ABSTIME ? clock_ns(t->clockid) : 0);
}

static int arm(const struct rtimer *rt)
{
	const TimerfdEntry *t = rt->t;
	uint64_t value = t->vsec * NS + t->vnsec, interval = t->isec * NS + t->insec;
	uint64_t ticks = t->ticks;
	struct itimerspec its = { .it_interval = ts_of(interval) };
	int ret = 0;

	if (value && (t->settime_flags & TFD_TIMER_ABSTIME))
		value = abs_deadline(t, value, interval, &ticks);
	else if (!value && interval && ticks)
		value = restart_value(t, interval);
	its.it_value = ts_of(value);
	if (value && timerfd_settime(rt->fd, t->settime_flags, &its, NULL))
		return fail(-errno, "cannot arm timerfd %u: %s", t->id, strerror(errno));
	if (ticks)
		ret = add_ticks(rt->fd, ticks);
	if (ret)
		return fail(ret, "cannot give timerfd %u its %" PRIu64 " unread expirations: %s",
			    t->id, ticks, strerror(-ret));
	return 0;
}

int timerfd_arm_all(struct rst *r)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < r->nr_timers; i++)
		ret = arm(&r->timers[i]);
	timerfd_close_all(r);
	return ret;
}

void timerfd_close_all(struct rst *r)
{
	for (size_t i = 0; i < r->nr_timers; i++)
		close(r->timers[i].fd);
	free(r->timers);
	r->timers = NULL;
	r->nr_timers = 0;
}
