/*
 * POSIX timers (timer_create): /proc/PID/timers gives each one's id, signal
 * and value, how it notifies (a signal to the process or to a thread, or
 * nothing) and its clock; remote timer_gettime and timer_getoverrun in the
 * leader give its interval, time left and overrun.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "log.h"
#include "proc.h"
#include "task/task.h"

#ifndef SIGEV_THREAD_ID
#define SIGEV_THREAD_ID	4
#endif

/* "notify: signal/pid.123", "signal/tid.124", "none/pid.123" */
static int parse_notify(const char *v, struct posix_timer *t)
{
	char how[16] = "", whom[8] = "";
	int id;

	if (sscanf(v, "%15[a-z]/%7[a-z].%d", how, whom, &id) != 3)
		return -EINVAL;
	if (!strcmp(how, "none"))
		t->notify = SIGEV_NONE;
	else if (!strcmp(how, "signal"))
		t->notify = SIGEV_SIGNAL;
	else
		return -EINVAL;
	if (!strcmp(whom, "tid")) {
		t->notify |= SIGEV_THREAD_ID;
		t->tid = id;
	}
	return 0;
}

/* One block of /proc/PID/timers, from its "ID:" line. */
static int parse_timer(char *block, struct posix_timer *t)
{
	char *line, *save = NULL;
	int seen = 0;

	for (line = strtok_r(block, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long v;
		int n;

		if (sscanf(line, "ID: %d", &n) == 1) {
			t->id = n;
			seen |= 1;
		} else if (sscanf(line, "signal: %d/%llx", &n, &v) == 2) {
			t->signo = n;
			t->sival = v;
			seen |= 2;
		} else if (!strncmp(line, "notify: ", 8) && !parse_notify(line + 8, t)) {
			seen |= 4;
		} else if (sscanf(line, "ClockID: %d", &n) == 1) {
			t->clock = n;
			seen |= 8;
		}
	}
	return seen == 15 ? 0 : -EINVAL;
}

static int add_timer(struct dump_ctx *d, char *block)
{
	struct posix_timer *t = realloc(d->ptimers, (d->nr_ptimers + 1) * sizeof(*t));

	if (!t)
		return -ENOMEM;
	d->ptimers = t;
	t = &t[d->nr_ptimers];
	memset(t, 0, sizeof(*t));
	if (parse_timer(block, t))
		return fail(-EIO, "process %d: a POSIX timer memdump cannot read in "
			    "/proc/%d/timers", d->pid, d->pid);
	d->nr_ptimers++;
	return 0;
}

/* Interval, time left and overrun, by remote calls in the leader. */
static int read_times(struct dump_ctx *d, struct posix_timer *t)
{
	void *local;
	uint64_t remote = parasite_scratch(&d->in, &local);
	long ret;
	int err;

	memset(local, 0, sizeof(struct itimerspec));
	err = dump_syscall(d, 0, SYS_timer_gettime, &ret, t->id, (long)remote, 0, 0);
	if (!err && ret >= 0) {
		memcpy(&t->its, local, sizeof(t->its));
		err = dump_syscall(d, 0, SYS_timer_getoverrun, &ret, t->id, 0, 0, 0);
		t->overrun = ret;
	}
	if (err)
		return err;
	if (ret < 0)
		return fail((int)ret, "cannot read POSIX timer %d of process %d: %s", t->id, d->pid,
			    strerror((int)-ret));
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	const struct posix_timer *x = a, *y = b;

	return x->id - y->id;
}

int collect_posix_timers(struct dump_ctx *d)
{
	char path[64], *buf = NULL, *p, *next;
	ssize_t n;
	int ret = 0;

	snprintf(path, sizeof(path), "/proc/%d/timers", d->pid);
	n = proc_read_file(path, &buf);
	if (n < 0)
		return fail((int)n, "cannot read %s: %s", path, strerror((int)-n));
	/* a block per timer, from its "ID:" line ("ClockID:" holds "ID:" too) */
	for (p = strncmp(buf, "ID:", 3) ? NULL : buf; p && !ret; p = next) {
		next = strstr(p, "\nID:");
		if (next)
			*next++ = 0;
		ret = add_timer(d, p);
	}
	free(buf);
	if (d->nr_ptimers)	/* the kernel lists the newest first */
		qsort(d->ptimers, d->nr_ptimers, sizeof(*d->ptimers), cmp_id);
	for (int i = 0; i < d->nr_ptimers && !ret; i++)
		ret = read_times(d, &d->ptimers[i]);
	if (!ret && d->nr_ptimers)
		pr_info("process %d: %d POSIX timer(s)", d->pid, d->nr_ptimers);
	return ret;
}
