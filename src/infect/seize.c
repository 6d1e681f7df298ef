/*
 * Freezing the target: check that it may be dumped, PTRACE_SEIZE and
 * PTRACE_INTERRUPT every thread until the thread list is stable, and at the
 * end let it go again (or kill it).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "dump/dump.h"
#include "infect/infect.h"
#include "log.h"
#include "proc.h"

#define PF_KTHREAD	0x00200000

static int check_not_ancestor(pid_t pid)
{
	pid_t p = getpid();

	while (p > 1) {
		if (p == pid)
			return fail(-EINVAL, p == getpid() ?
				    "process %d is memdump itself" :
				    "process %d is an ancestor of memdump", pid);
		p = proc_ppid(p);
		if (p < 0)
			break;
	}
	return 0;
}

/* Everything that makes a PID undumpable and can be told before touching it. */
int target_check(pid_t pid)
{
	struct proc_stat st;
	pid_t tracer;
	int ret;

	ret = proc_read_stat(pid, &st);
	if (ret == -ENOENT)
		return fail(ret, "no process with PID %d", pid);
	if (ret)
		return fail(ret, "cannot read /proc/%d/stat: %s", pid, strerror(-ret));
	if (st.flags & PF_KTHREAD)
		return fail(-EINVAL, "process %d (%s) is a kernel thread", pid, st.comm);
	if (st.state == 'Z' || st.state == 'X')
		return fail(-EINVAL, "process %d (%s) is a zombie", pid, st.comm);
	if (proc_tgid(pid) != pid)
		return fail(-EINVAL, "%d is a thread of process %d, not a process", pid,
			    proc_tgid(pid));
	ret = check_not_ancestor(pid);
	if (ret)
		return ret;
	tracer = proc_tracer(pid);
	if (tracer > 0) {
		char comm[32] = "?";

		proc_comm(tracer, comm, sizeof(comm));
		return fail(-EBUSY, "process %d (%s) is already traced by %d (%s)", pid, st.comm,
			    tracer, comm);
	}
	return 0;
}

struct thread *thread_of(struct dump_ctx *d, pid_t tid)
{
	for (int i = 0; i < d->nr_threads; i++)
		if (d->threads[i].tid == tid)
			return &d->threads[i];
	return NULL;
}

/* Wait for tid to report a stop; returns 0, or -ESRCH when it died. */
int wait_stop(pid_t tid, int *status)
{
	for (;;) {
		pid_t r = waitpid(tid, status, __WALL);

		if (r < 0 && errno == EINTR) {
			if (dump_interrupted)
				return -EINTR;
			continue;
		}
		if (r < 0)
			return -errno;
		if (WIFEXITED(*status) || WIFSIGNALED(*status))
			return -ESRCH;
		return 0;
	}
}

/*
 * PTRACE_INTERRUPT tid and wait for the interrupt trap. The trap is taken
 * before any pending signal is dequeued; a signal-delivery stop seen first
 * (a signal already being delivered) is let through, with its signal when
 * pass_signal, as if it had come just before the stop.
 */
int interrupt_thread(pid_t tid, bool pass_signal)
{
	int status, ret;

	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0))
		return -errno;
	for (;;) {
		ret = wait_stop(tid, &status);
		if (ret)
			return ret;
		if (!WIFSTOPPED(status))
			continue;
		if (status >> 16 == PTRACE_EVENT_STOP)
			return 0;
		pr_debug("thread %d: signal %d on the way to a stop", tid, WSTOPSIG(status));
		if (ptrace(PTRACE_CONT, tid, 0, pass_signal ? WSTOPSIG(status) : 0))
			return -errno;
	}
}

static int add_thread(struct dump_ctx *d, pid_t tid)
{
	struct thread *t;

	t = realloc(d->threads, (d->nr_threads + 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	d->threads = t;
	t = &d->threads[d->nr_threads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	return 0;
}

static int seize_thread(struct dump_ctx *d, pid_t tid)
{
	struct thread *t;
	int ret = add_thread(d, tid);

	if (ret)
		return ret;
	t = &d->threads[d->nr_threads - 1];
	if (ptrace(PTRACE_SEIZE, tid, 0, PTRACE_O_TRACESYSGOOD)) {
		ret = -errno;
		d->nr_threads--;
		if (ret == -ESRCH)	/* it exited meanwhile */
			return 0;
		if (ret == -EPERM && proc_tracer(tid) > 0)
			return fail(-EBUSY, "process %d is already traced by %d", d->pid,
				    proc_tracer(tid));
		return fail(ret, "cannot seize thread %d of process %d: %s", tid, d->pid,
			    strerror(-ret));
	}
	t->seized = true;
	ret = interrupt_thread(tid, true);
	if (ret == -ESRCH) {		/* exited while we stopped it */
		d->nr_threads--;
		return 0;
	}
	if (ret)
		return fail(ret, "cannot stop thread %d: %s", tid, strerror(-ret));
	pr_debug("thread %d frozen", tid);
	return 0;
}

/* One pass over /proc/PID/task; returns how many new threads were seized. */
static int seize_pass(struct dump_ctx *d)
{
	pid_t *tids;
	int n, added = 0, ret = 0;

	n = proc_tasks(d->pid, &tids);
	if (n < 0)
		return n == -ENOENT ? fail(-ESRCH, "process %d exited", d->pid) : n;
	/* The leader goes first so that threads[0] is it. */
	for (int i = 0; i < n && !ret; i++) {
		if (thread_of(d, tids[i]))
			continue;
		int before = d->nr_threads;

		ret = seize_thread(d, tids[i]);
		added += d->nr_threads > before;
	}
	free(tids);
	return ret ? ret : added;
}

int seize_all(struct dump_ctx *d)
{
	int ret;

	ret = seize_thread(d, d->pid);
	if (ret)
		return ret;
	if (d->nr_threads == 0 || d->threads[0].tid != d->pid)
		return fail(-ESRCH, "process %d exited", d->pid);
	/* New threads can appear until every existing one is stopped. */
	do {
		ret = seize_pass(d);
	} while (ret > 0);
	if (ret < 0)
		return ret;
	/* Threads that exited after being seized are gone from /proc: drop them. */
	for (int i = d->nr_threads - 1; i > 0; i--) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/task/%d", d->pid, d->threads[i].tid);
		if (access(path, F_OK)) {
			memmove(&d->threads[i], &d->threads[i + 1],
				(d->nr_threads - i - 1) * sizeof(d->threads[0]));
			d->nr_threads--;
		}
	}
	pr_info("process %d frozen: %d thread(s)", d->pid, d->nr_threads);
	return 0;
}

/*
 * The killed process's PID is free once its parent has reaped it. Waiting
 * for that (PID 1 of some systems reaps orphans seconds late) lets a
 * restore follow the dump at once; past 5 s the holder is named instead.
 */
static void wait_pid_free(pid_t pid)
{
	char path[32], comm[32] = "?";
	struct proc_stat st;

	snprintf(path, sizeof(path), "/proc/%d", pid);
	for (int i = 0; i < 500; i++) {
		if (access(path, F_OK))
			return;
		usleep(10000);
	}
	if (proc_read_stat(pid, &st))
		return;
	proc_comm(st.ppid, comm, sizeof(comm));
	pr_warn("killed process %d is still a zombie: its parent %d (%s) has not reaped it, "
		"so its PID is not free yet", pid, st.ppid, comm);
}

/* Reap every seized thread after SIGKILL; a tracer must, or the leader
 * is never reported and the process lingers as a zombie. */
static void kill_all(struct dump_ctx *d)
{
	kill(d->pid, SIGKILL);
	for (int i = d->nr_threads - 1; i >= 0; i--) {
		struct thread *t = &d->threads[i];
		int status;

		if (!t->seized)
			continue;
		while (waitpid(t->tid, &status, __WALL) >= 0 || errno == EINTR) {
			if (WIFEXITED(status) || WIFSIGNALED(status))
				break;
		}
		t->seized = false;
	}
	wait_pid_free(d->pid);
}

static bool process_alive(pid_t pid)
{
	struct proc_stat st;

	return proc_read_stat(pid, &st) == 0 && st.state != 'Z' && st.state != 'X';
}

/*
 * Let the target go: put back registers we changed and detach every thread
 * (each resumes from its stop as if nothing happened), or kill the process.
 */
void release_all(struct dump_ctx *d, bool kill_target)
{
	bool alive;

	if (kill_target) {
		kill_all(d);
		return;
	}
	alive = process_alive(d->pid);
	for (int i = 0; i < d->nr_threads; i++) {
		struct thread *t = &d->threads[i];

		if (!t->seized)
			continue;
		if (t->regs_dirty) {
			int err = put_thread_regs(t);

			if (err && err != -ESRCH && alive)
				pr_warn("thread %d: cannot restore its registers", t->tid);
		}
		if (ptrace(PTRACE_DETACH, t->tid, 0, 0) && errno != ESRCH && alive)
			pr_warn("cannot detach thread %d: %s", t->tid, strerror(errno));
		t->seized = false;
	}
}
