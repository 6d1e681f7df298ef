/*
 * How each thread is scheduled: policy (SCHED_RESET_ON_FORK included), real-
 * time priority and nice value and CPU affinity, read from outside by TID;
 * timer slack, which only the thread itself can ask (a remote prctl).
 * SCHED_DEADLINE is refused before the seize (refuse.c).
 */
#include <errno.h>
#include <linux/sched.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "log.h"
#include "task/task.h"

static int get_policy(pid_t tid, struct thread_sched *s)
{
	struct sched_param p;
	int policy = sched_getscheduler(tid);

	if (policy < 0 || sched_getparam(tid, &p))
		return fail(-errno, "thread %d: cannot read its scheduling policy: %s", tid,
			    strerror(errno));
	if ((policy & ~SCHED_RESET_ON_FORK) == SCHED_DEADLINE)	/* since refuse_check() */
		return fail(-EOPNOTSUPP, "thread %d runs SCHED_DEADLINE", tid);
	s->policy = policy;
	s->prio = p.sched_priority;
	errno = 0;
	s->nice = getpriority(PRIO_PROCESS, tid);
	if (errno)
		return fail(-errno, "thread %d: cannot read its nice value: %s", tid,
			    strerror(errno));
	return 0;
}

static int get_affinity(pid_t tid, struct thread_sched *s)
{
	long n = syscall(SYS_sched_getaffinity, tid, sizeof(s->affinity), s->affinity);

	if (n < 0)
		return fail(-errno, "thread %d: cannot read its CPU affinity: %s", tid,
			    strerror(errno));
	s->nr_affinity = n / sizeof(uint64_t);
	return 0;
}

int thread_timer_slack(struct dump_ctx *d, int i, long ret)
{
	if (ret < 0)
		return fail((int)ret, "thread %d: cannot read its timer slack: %s",
			    d->threads[i].tid, strerror((int)-ret));
	d->threads[i].sched.timer_slack_ns = ret;
	return 0;
}

int collect_thread_sched(struct dump_ctx *d, int i)
{
	struct thread *t = &d->threads[i];
	int ret = get_policy(t->tid, &t->sched);

	if (!ret)
		ret = get_affinity(t->tid, &t->sched);
	return ret;	/* the timer slack: each thread's own, with its state (threads.c) */
}
