/*
 * What the kernel keeps for a process beside its memory, threads and files:
 *
 *  - checked before anything starts: cgroups the process was in and memdump
 *    is not (each must be joinable here), an oom_score_adj a child of
 *    memdump could not take (tried in a fork), another loginuid
 *    (CAP_AUDIT_CONTROL);
 *  - done by the child before the blob: session and process group, cgroups,
 *    oom_score_adj, loginuid, child-subreaper flag;
 *  - handed to the blob (restorer.h): per thread its scheduling policy,
 *    priority, nice, CPU affinity, timer slack and parent-death signal; for
 *    the process its personality, membarrier registrations, interval timers.
 */
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "common.h"
#include "log.h"
#include "proc.h"
#include "ctx/restore_ctx.h"
#include "task/task.h"

#ifndef SIGEV_THREAD_ID
#define SIGEV_THREAD_ID	4
#endif

/* A child of memdump may set adj: tried in a throwaway fork, which has memdump's floor. */
static bool oom_settable(int adj)
{
	char v[16];
	int n = snprintf(v, sizeof(v), "%d", adj), status = 0;
	pid_t c = fork();

	if (c == 0) {
		int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);

		_exit(fd >= 0 && write(fd, v, n) == n ? 0 : 1);
	}
	if (c < 0 || waitpid(c, &status, 0) != c)
		return false;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/*
 * Below the floor memdump inherited (oom_score_adj_min, not shown in /proc)
 * only CAP_SYS_RESOURCE may go: refused before anything starts.
 */
static int check_oom(const TaskCoreEntry *tc)
{
	char own[32] = "0";

	if (!tc->has_oom_score_adj)
		return 0;
	if (tc->oom_score_adj < -1000 || tc->oom_score_adj > 1000)
		return fail(-EIO, "oom_score_adj %d in the image is out of range", tc->oom_score_adj);
	read_small_at(AT_FDCWD, "/proc/self/oom_score_adj", own, sizeof(own));
	if (!oom_settable(tc->oom_score_adj))
		return fail(-EPERM, "oom_score_adj %d cannot be set here (memdump's own is %d; "
			    "going lower needs CAP_SYS_RESOURCE)", tc->oom_score_adj, atoi(own));
	return 0;
}

static uint32_t own_loginuid(void)
{
	char v[32] = "4294967295";

	read_small_at(AT_FDCWD, "/proc/self/loginuid", v, sizeof(v));
	return strtoul(v, NULL, 10);
}

void attrs_read_own(struct rst *r)
{
	char v[16] = "0";

	read_small_at(AT_FDCWD, "/proc/self/oom_score_adj", v, sizeof(v));
	r->own_oom = atoi(v);
	r->own_loginuid = own_loginuid();
}

static bool is_thread(struct rst *r, int32_t tid)
{
	for (size_t i = 0; i < r->ds.nr_cores; i++)
		if ((r->ds.pstree->n_threads ? (int32_t)r->ds.pstree->threads[i] : r->pid) == tid)
			return true;
	return false;
}

/* POSIX timers: how many, their ids, notification kinds, signals and threads. */
static int check_ptimers(struct rst *r, const TaskTimersEntry *tt)
{
	if (tt->n_posix > RST_MAX_PTIMERS)
		return fail(-E2BIG, "core-%d.img: %zu POSIX timers, more than %d", r->pid,
			    tt->n_posix, RST_MAX_PTIMERS);
	for (size_t i = 0; i < tt->n_posix; i++) {
		const PosixTimerEntry *e = tt->posix[i];
		uint32_t how = e->it_sigev_notify;

		if (e->it_id > INT32_MAX || (how != SIGEV_SIGNAL && how != SIGEV_NONE &&
					     how != (SIGEV_SIGNAL | SIGEV_THREAD_ID)))
			return fail(-EIO, "core-%d.img: POSIX timer %u is not one restore knows",
				    r->pid, e->it_id);
		if (how != SIGEV_NONE && (e->si_signo < 1 || e->si_signo > RST_NR_SIGS))
			return fail(-EIO, "core-%d.img: POSIX timer %u has signal %u", r->pid,
				    e->it_id, e->si_signo);
		if (how & SIGEV_THREAD_ID && (!e->has_notify_thread_id ||
					      !is_thread(r, e->notify_thread_id)))
			return fail(-EIO, "core-%d.img: POSIX timer %u signals no thread of the dump",
				    r->pid, e->it_id);
		for (size_t j = 0; j < i; j++)
			if (tt->posix[j]->it_id == e->it_id)
				return fail(-EIO, "core-%d.img: POSIX timer %u is listed twice",
					    r->pid, e->it_id);
	}
	return 0;
}

int attrs_check(struct rst *r)
{
	const TaskCoreEntry *tc = r->leader->tc;
	int ret = r->own_checked ? 0 : check_oom(tc);	/* memdump's floor: once a fan-out */

	if (!ret && tc->has_loginuid && tc->loginuid != own_loginuid() &&
	    !rst_capable(CAP_AUDIT_CONTROL))
		ret = fail(-EPERM, "loginuid %u differs from memdump's own (%u) and setting it "
			   "needs CAP_AUDIT_CONTROL", tc->loginuid, own_loginuid());
	if (!ret && tc->timers)
		ret = check_ptimers(r, tc->timers);
	return ret;
}

static void fill_sched(struct rst_thread *t, const ThreadCoreEntry *th)
{
	if (th->has_sched_policy) {
		t->has_sched = 1;
		t->sched.policy = th->sched_policy;
		t->sched.prio = th->sched_prio;
		t->sched.nice = th->sched_nice;
	}
	t->sched.nr_affinity = MIN(th->n_cpu_affinity, (size_t)RST_AFFINITY_WORDS);
	for (size_t k = 0; k < t->sched.nr_affinity; k++)
		t->sched.affinity[k] = th->cpu_affinity[k];
	t->sched.timer_slack = th->has_timer_slack_ns ? th->timer_slack_ns : 0;
	t->pdeath_sig = th->has_pdeath_sig ? th->pdeath_sig : 0;
}

static void fill_itimer(struct rst_args *a, int w, const ItimerEntry *e)
{
	a->itimers[w].isec = e->isec;
	a->itimers[w].iusec = e->iusec;
	a->itimers[w].vsec = e->vsec;
	a->itimers[w].vusec = e->vusec;
}

static int cmp_ptimer(const void *a, const void *b)
{
	const struct rst_ptimer *x = a, *y = b;

	return x->id - y->id;
}

/* POSIX timers for the leader to create, sorted by id. */
static void fill_ptimers(struct rst_args *a, const TaskTimersEntry *tt, const PstreeEntry *pe)
{
	for (size_t i = 0; i < tt->n_posix && i < RST_MAX_PTIMERS; i++) {
		const PosixTimerEntry *e = tt->posix[i];
		struct rst_ptimer *p = &a->ptimers[a->nr_ptimers++];

		p->id = e->it_id;
		p->clock = (int)e->clock_id;
		p->signo = e->si_signo;
		p->notify = e->it_sigev_notify;
		p->tid = e->has_notify_thread_id ? rst_ns_tid(pe, e->notify_thread_id) : 0;
		p->sival = e->sival_ptr;
		p->its.isec = e->isec;
		p->its.insec = e->insec;
		p->its.vsec = e->vsec;
		p->its.vnsec = e->vnsec;
	}
	qsort(a->ptimers, a->nr_ptimers, sizeof(a->ptimers[0]), cmp_ptimer);
}

void attrs_fill(struct rst *r)
{
	const TaskCoreEntry *tc = r->leader->tc;
	struct rst_thread *rt = (struct rst_thread *)(r->area + r->a->threads_off);
	struct rst_args *a = r->a;

	for (size_t i = 0; i < r->ds.nr_cores; i++)
		fill_sched(&rt[i], r->ds.cores[i]->thread_core);
	a->personality = tc->personality;
	a->membarrier_mask = tc->has_membarrier_registration_mask ?
			     tc->membarrier_registration_mask : 0;
	if (tc->timers && tc->timers->real && tc->timers->virt && tc->timers->prof) {
		a->has_itimers = 1;
		fill_itimer(a, 0, tc->timers->real);
		fill_itimer(a, 1, tc->timers->virt);
		fill_itimer(a, 2, tc->timers->prof);
	}
	if (tc->timers)
		fill_ptimers(a, tc->timers, r->ds.pstree);
}

static int write_own(const char *path, const char *text, char *why, size_t len)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0 || write(fd, text, strlen(text)) < 0)
		ret = -errno;
	if (fd >= 0)
		close(fd);
	if (ret)
		snprintf(why, len, "cannot write '%s' to %s: %s", text, path, strerror(-ret));
	return ret;
}

/*
 * The session and group of a process restored alone or of a tree's root (the
 * others': treefork.c): a leader of its own session or group
 * gets a new one; another group of memdump's session is joined. One that is
 * gone, or in another session, cannot be entered: said, and memdump's kept.
 */
void attrs_apply_groups(struct rst *r)
{
	const PstreeEntry *pe = r->ds.pstree;
	pid_t pid = getpid();	/* in a PID namespace: as the process sees itself */
	pid_t sid = pe->has_ns_sid ? (pid_t)pe->ns_sid : (pid_t)pe->sid;
	pid_t pgid = pe->has_ns_pgid ? (pid_t)pe->ns_pgid : (pid_t)pe->pgid;

	if (pe->has_ns_sid && !sid)
		;		/* its session is outside its PID namespace: memdump's */
	else if (sid == pid)
		setsid();
	else if (sid != getsid(0))
		pr_warn("process %d was in session %u, which restore cannot enter: it is in %d\n",
			pid, sid, getsid(0));
	if (pgid == getpgid(0) || !pgid)
		return;
	if (setpgid(0, pgid == pid ? 0 : pgid))
		pr_warn("process %d cannot join its process group %u (%m): it is in %d\n", pid,
			pgid, getpgid(0));
}

int attrs_apply_in_child(struct rst *r, char *why, size_t len)
{
	const TaskCoreEntry *tc = r->leader->tc;
	char v[32];
	int ret = 0;

	if (!r->tree)	/* a tree's processes took theirs before forking (treefork.c) */
		attrs_apply_groups(r);
	/* what it inherited from memdump is not written again: its root may
	 * have no /proc (a mount namespace without one, zdtm's clean_mntns) */
	if (!ret && tc->has_oom_score_adj && tc->oom_score_adj != r->own_oom) {
		snprintf(v, sizeof(v), "%d", tc->oom_score_adj);
		ret = write_own("/proc/self/oom_score_adj", v, why, len);
	}
	if (!ret && tc->has_loginuid && tc->loginuid != r->own_loginuid) {
		snprintf(v, sizeof(v), "%u", tc->loginuid);
		ret = write_own("/proc/self/loginuid", v, why, len);
	}
	if (!ret && tc->has_child_subreaper && prctl(PR_SET_CHILD_SUBREAPER, tc->child_subreaper)) {
		ret = -errno;
		snprintf(why, len, "cannot set the child-subreaper flag: %s", strerror(errno));
	}
	return ret;
}
