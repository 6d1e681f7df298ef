/*
 * Process attributes the kernel keeps beside memory and threads: from /proc
 * (oom_score_adj, loginuid, cgroup membership) and from inside the leader by
 * its parasite (interval timers, child-subreaper flag, membarrier
 * registrations: task_attrs_from). Every value is one that was read: a
 * failure fails the dump.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "task/task.h"
#include "log.h"
#include "parasite_abi.h"
#include "nsswitch.h"

static int read_proc_text(pid_t pid, const char *name, char *buf, size_t len)
{
	char path[64], *text = NULL;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	n = proc_read_file(path, &text);
	if (n < 0)
		return fail((int)n, "cannot read %s: %s", path, strerror((int)-n));
	if ((size_t)n >= len) {
		free(text);
		return fail(-E2BIG, "%s is longer than %zu bytes", path, len - 1);
	}
	memcpy(buf, text, n + 1);
	free(text);
	return 0;
}

/*
 * A cgroup namespace of its own: /proc/PID/cgroup read from inside it gives
 * each path below the namespace's root, which restore makes the root again.
 * A process moved out from under its root (a path with "/..") is refused.
 */
static int get_cgroup_ns(struct dump_ctx *d, struct task_attrs *a)
{
	const struct ns_kind k = { "cgroup", CLONE_NEWCGROUP };
	int back, ret;

	a->cgroup_ns[0] = 0;
	if (!ns_is_own(d->pid, &k))
		return 0;
	ret = ns_enter_pid(d->pid, &k, &back);
	if (ret)
		return ret;
	ret = read_proc_text(d->pid, "cgroup", a->cgroup_ns, sizeof(a->cgroup_ns));
	ns_return(back, &k);
	if (!ret && strstr(a->cgroup_ns, ":/.."))
		ret = fail(-EOPNOTSUPP, "process %d is in a cgroup outside its cgroup namespace's "
			   "root: not supported", d->pid);
	return ret;
}

static int read_proc_long(pid_t pid, const char *name, long long *v)
{
	char buf[32], *end;
	int ret = read_proc_text(pid, name, buf, sizeof(buf));

	if (ret)
		return ret;
	*v = strtoll(buf, &end, 10);
	if (end == buf)
		return fail(-EIO, "cannot parse /proc/%d/%s: '%s'", pid, name, buf);
	return 0;
}

/*
 * A periodic ITIMER_REAL whose SIGALRM is pending (blocked, or not yet taken)
 * reads 0 time left: the kernel arms it again only when the signal is
 * dequeued. Restored as read, setitimer() with 0 would disarm it for good;
 * the pending signal itself is restored with the others. Armed for one
 * interval instead, the timer runs on (the kernel does not arm it a second
 * time when the restored signal is taken: it is queued already).
 */
static void itimer_pending_rearm(struct itimerval *it)
{
	if (it->it_value.tv_sec || it->it_value.tv_usec)
		return;
	it->it_value = it->it_interval;
}

static int get_itimers(struct dump_ctx *d, struct task_attrs *a, const struct parasite_state *st)
{
	static const char *const names[3] = { "ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF" };

	for (int w = 0; w < 3; w++) {
		const struct parasite_itimer *pt = &st->itimer[w];
		struct itimerval it = { { pt->isec, pt->iusec }, { pt->vsec, pt->vusec } };

		if (st->itimer_ret[w] < 0)
			return fail((int)st->itimer_ret[w], "cannot read the %s of process %d: %s",
				    names[w], d->pid, strerror((int)-st->itimer_ret[w]));
		itimer_pending_rearm(&it);
		a->itimer[w].isec = it.it_interval.tv_sec;
		a->itimer[w].iusec = it.it_interval.tv_usec;
		a->itimer[w].vsec = it.it_value.tv_sec;
		a->itimer[w].vusec = it.it_value.tv_usec;
	}
	return 0;
}

/* What the leader's blob read (collect_leader_inside): timers, subreaper, membarrier. */
int task_attrs_from(struct dump_ctx *d, struct task_attrs *a, const struct parasite_state *st)
{
	int ret = get_itimers(d, a, st);

	if (ret)
		return ret;
	if (st->subreaper_ret < 0)
		return fail((int)st->subreaper_ret, "cannot read the child-subreaper flag of "
			    "process %d: %s", d->pid, strerror((int)-st->subreaper_ret));
	a->child_subreaper = st->subreaper != 0;
	if (st->membarrier < 0)
		return fail((int)st->membarrier, "cannot read the membarrier registrations of "
			    "process %d: %s", d->pid, strerror((int)-st->membarrier));
	a->membarrier_mask = st->membarrier;
	return 0;
}

int collect_task_attrs(struct dump_ctx *d, struct task_attrs *a)
{
	long long v;
	int ret;

	ret = read_proc_long(d->pid, "oom_score_adj", &v);
	if (ret)
		return ret;
	a->oom_score_adj = v;
	ret = read_proc_long(d->pid, "loginuid", &v);
	if (ret)
		return ret;
	a->loginuid = v;
	ret = read_proc_text(d->pid, "cgroup", a->cgroup, sizeof(a->cgroup));
	if (!ret)
		ret = get_cgroup_ns(d, a);
	return ret;
}
