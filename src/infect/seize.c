/*
 * Freezing the process: PTRACE_SEIZE and PTRACE_INTERRUPT every thread until
 * the thread list is stable, and at the end let it go again (or kill it).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "infect/infect.h"
#include "infect/seize.h"
#include "log.h"
#include "proc.h"
#include "restart.h"

static struct infect_thread *thread_of(struct infect_ctx *c, pid_t tid)
{
	for (int i = 0; i < c->nr_threads; i++)
		if (c->threads[i].tid == tid)
			return &c->threads[i];
	return NULL;
}

/* A thread of ours that exited is no longer traced: it needs no release. */
static void note_exit(struct infect_ctx *c, pid_t tid)
{
	struct infect_thread *t = thread_of(c, tid);

	if (t) {
		t->seized = false;
		t->exited = true;
	}
}

/*
 * Wait for tid to report a stop; returns 0, or -ESRCH when it died. Every
 * tracee is waited for, not only tid: when the process is killed, its
 * leader is reported only after all other threads have been reaped, and a
 * wait on the leader alone would never end.
 */
int wait_stop(struct infect_ctx *c, pid_t tid, int *status)
{
	for (;;) {
		pid_t r = waitpid(-1, status, __WALL);

		if (r < 0 && errno == EINTR) {
			if (c->stop && *c->stop)
				return -EINTR;
			continue;
		}
		if (r < 0)
			return errno == ECHILD ? -ESRCH : -errno;
		if (WIFEXITED(*status) || WIFSIGNALED(*status)) {
			note_exit(c, r);
			if (r == tid)
				return -ESRCH;
			continue;
		}
		if (r == tid)
			return 0;
		pr_debug("thread %d: stop %#x while waiting for %d", r, *status, tid);
	}
}

/*
 * PTRACE_INTERRUPT tid and wait for the interrupt trap. The trap is taken
 * before any pending signal is dequeued; a signal-delivery stop seen first
 * (a signal already being delivered) is let through, with its signal when
 * pass_signal, as if it had come just before the stop.
 */
int interrupt_thread(struct infect_ctx *c, pid_t tid, bool pass_signal)
{
	int status, ret;

	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0))
		return -errno;
	for (;;) {
		ret = wait_stop(c, tid, &status);
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

static int add_thread(struct infect_ctx *c, pid_t tid)
{
	struct infect_thread *t;

	t = realloc(c->threads, (c->nr_threads + 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	c->threads = t;
	t = &c->threads[c->nr_threads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	return 0;
}

/*
 * A thread under seccomp filters would have them judge our remote syscalls
 * and the parasite's too: a filter that kills on memfd_create or vmsplice
 * would kill the process. PTRACE_O_SUSPEND_SECCOMP (CAP_SYS_ADMIN) turns
 * them off while we trace it; without it we say what is at stake.
 */
static int seize_once(struct infect_ctx *c, pid_t tid)
{
	char mode[16] = "";

	if (!c->seccomp_unsuspended && !proc_status_field(tid, "Seccomp", mode, sizeof(mode)) &&
	    strcmp(mode, "0")) {
		if (!ptrace(PTRACE_SEIZE, tid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_SUSPEND_SECCOMP))
			return 0;
		if (errno != EPERM || proc_tracer(tid) > 0 || !strcmp(mode, "1"))
			return -1;	/* strict mode: a remote syscall would kill it */
		pr_warn("process %d has seccomp filters and memdump cannot suspend them (no "
			"CAP_SYS_ADMIN): they judge the dump's own system calls too", c->pid);
		c->seccomp_unsuspended = true;
	}
	return ptrace(PTRACE_SEIZE, tid, 0, PTRACE_O_TRACESYSGOOD);
}

/* 0, or 1 for a thread infect_preseize() took (stopped already), or -1 with errno. */
static int seize(struct infect_ctx *c, pid_t tid)
{
	if (!seize_once(c, tid))
		return 0;
	if (errno == EPERM && proc_tracer(tid) == getpid())
		return 1;
	return -1;
}

int infect_preseize(pid_t pid, struct preseized *ps)
{
	struct infect_ctx c = { .pid = pid };
	pid_t *tids, *all;
	int n = proc_tasks(pid, &tids), ret = 0;

	if (n < 0)
		return n == -ENOENT ? -ESRCH : n;
	all = realloc(ps->tids, (ps->n + n) * sizeof(*all));
	if (!all) {
		free(tids);
		return -ENOMEM;
	}
	ps->tids = all;
	for (int i = 0; i < n && !ret; i++) {
		if (seize(&c, tids[i]) < 0 || ptrace(PTRACE_INTERRUPT, tids[i], 0, 0))
			ret = errno == ESRCH ? 0 : -errno;
		else
			ps->tids[ps->n++] = tids[i];
		if (ret)
			fail(ret, "cannot seize thread %d of process %d in its frozen cgroup: %s",
			     tids[i], pid, strerror(-ret));
	}
	free(tids);
	return ret;
}

/*
 * The stops come in any order once the cgroup is thawed: each is taken here
 * (a signal on its way first is let through, as interrupt_thread() does),
 * so that infect_prepare() finds every thread stopped.
 */
int infect_preseize_wait(struct preseized *ps)
{
	int left = ps->n;

	while (left > 0) {
		int status;
		pid_t r = waitpid(-1, &status, __WALL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return fail(-errno, "waiting for the threads of the frozen cgroup: %s",
				    strerror(errno));
		for (int i = 0; i < ps->n; i++) {
			if (ps->tids[i] != r)
				continue;
			if (WIFSTOPPED(status) && status >> 16 != PTRACE_EVENT_STOP) {
				ptrace(PTRACE_CONT, r, 0, WSTOPSIG(status));
				break;
			}
			ps->tids[i] = -r;	/* stopped, or gone */
			left--;
		}
	}
	return 0;
}

void infect_preseized_free(struct preseized *ps)
{
	free(ps->tids);
	*ps = (struct preseized){ 0 };
}

static int seize_thread(struct infect_ctx *c, pid_t tid)
{
	struct infect_thread *t;
	int ret = add_thread(c, tid);

	if (ret)
		return ret;
	t = &c->threads[c->nr_threads - 1];
	ret = seize(c, tid);
	if (ret == 1) {		/* infect_preseize_wait() saw it stop */
		t->seized = true;
		pr_debug("thread %d frozen (under its cgroup's freeze)", tid);
		return 0;
	}
	if (ret) {
		ret = -errno;
		c->nr_threads--;
		if (ret == -ESRCH)	/* it exited meanwhile */
			return 0;
		if (ret == -EPERM && proc_tracer(tid) > 0)
			return fail(-EBUSY, "process %d is already traced by %d", c->pid,
				    proc_tracer(tid));
		return fail(ret, "cannot seize thread %d of process %d: %s", tid, c->pid,
			    strerror(-ret));
	}
	t->seized = true;
	ret = interrupt_thread(c, tid, true);
	if (ret == -ESRCH) {		/* exited while we stopped it */
		c->nr_threads--;
		return 0;
	}
	if (ret)
		return fail(ret, "cannot stop thread %d: %s", tid, strerror(-ret));
	pr_debug("thread %d frozen", tid);
	return 0;
}

/* One pass over /proc/PID/task; returns how many new threads were seized. */
static int seize_pass(struct infect_ctx *c)
{
	pid_t *tids;
	int n, added = 0, ret = 0;

	n = proc_tasks(c->pid, &tids);
	if (n < 0)
		return n == -ENOENT ? fail(-ESRCH, "process %d exited", c->pid) : n;
	/* The leader goes first so that threads[0] is it. */
	for (int i = 0; i < n && !ret; i++) {
		if (thread_of(c, tids[i]))
			continue;
		int before = c->nr_threads;

		ret = seize_thread(c, tids[i]);
		added += c->nr_threads > before;
	}
	free(tids);
	return ret ? ret : added;
}

static int seize_all(struct infect_ctx *c)
{
	int ret;

	ret = seize_thread(c, c->pid);
	if (ret)
		return ret;
	if (c->nr_threads == 0 || c->threads[0].tid != c->pid)
		return fail(-ESRCH, "process %d exited", c->pid);
	/* New threads can appear until every existing one is stopped. */
	do {
		ret = seize_pass(c);
	} while (ret > 0);
	if (ret < 0)
		return ret;
	/* Threads that exited after being seized are gone from /proc: drop them. */
	for (int i = c->nr_threads - 1; i > 0; i--) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/task/%d", c->pid, c->threads[i].tid);
		if (c->threads[i].exited || access(path, F_OK)) {
			memmove(&c->threads[i], &c->threads[i + 1],
				(c->nr_threads - i - 1) * sizeof(c->threads[0]));
			c->nr_threads--;
		}
	}
	pr_info("process %d frozen: %d thread(s)", c->pid, c->nr_threads);
	return 0;
}

static bool process_alive(pid_t pid);

/*
 * Until pid is a zombie or gone, for up to 3 s. A caller told the process
 * is dead (runc destroys the container next) must not find it running: the
 * init of a PID namespace, for one, lingers until its namespace is empty.
 */
static void wait_dead(pid_t pid)
{
	struct timespec step = { 0, 1000000 };

	for (int ms = 0; process_alive(pid); ms++) {
		if (ms == 3000) {
			pr_warn("process %d still runs 3 s after SIGKILL", pid);
			return;
		}
		nanosleep(&step, NULL);
	}
}

/* Reap every seized thread after SIGKILL; a tracer must, or the leader
 * is never reported and the process lingers as a zombie. */
static void kill_all(struct infect_ctx *c)
{
	kill(c->pid, SIGKILL);
	for (int i = c->nr_threads - 1; i >= 0; i--) {
		struct infect_thread *t = &c->threads[i];
		int status;

		if (!t->seized)
			continue;
		while (waitpid(t->tid, &status, __WALL) >= 0 || errno == EINTR) {
			if (WIFEXITED(status) || WIFSIGNALED(status))
				break;
		}
		t->seized = false;
	}
	wait_dead(c->pid);
}

static bool process_alive(pid_t pid)
{
	struct proc_stat st;

	return proc_read_stat(pid, &st) == 0 && st.state != 'Z' && st.state != 'X';
}

bool infect_alive(const struct infect_ctx *c)
{
	return process_alive(c->pid);
}

/* Put back the registers and signal mask the thread had at the freeze. */
int put_thread_regs(struct infect_thread *t)
{
	struct user_regs_struct r = t->regs;

	regs_for_resume(&r);
	/* the mask first: until its registers are its own, they lead it home
	 * through a frame that holds its mask too */
	if (ptrace(PTRACE_SETSIGMASK, t->tid, sizeof(t->sigmask), &t->sigmask))
		return -errno;
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r))
		return -errno;
	t->regs_dirty = false;
	return 0;
}

/*
 * The SIGSTOPs the threads dequeued while running remote syscalls, queued
 * again where they were (a thread dequeues its own before the process's):
 * a stopped process keeps one pending, a running one stops on it.
 */
static void requeue_sigstops(struct infect_ctx *c)
{
	bool shared = c->sigstop_shared;

	for (int i = 0; i < c->nr_threads; i++) {
		struct infect_thread *t = &c->threads[i];

		for (int n = t->seized ? t->sigstops_taken : 0; n > 0; n--) {
			if (shared && !t->sigstop_private) {
				kill(c->pid, SIGSTOP);
				shared = false;
			} else {
				syscall(SYS_tgkill, c->pid, t->tid, SIGSTOP);
				t->sigstop_private = false;
			}
		}
		t->sigstops_taken = 0;
	}
}

static void detach_all(struct infect_ctx *c)
{
	bool alive = process_alive(c->pid);

	requeue_sigstops(c);

	for (int i = 0; i < c->nr_threads; i++) {
		struct infect_thread *t = &c->threads[i];

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

/*
 * Let the process go: put back registers we changed and detach every thread
 * (each resumes from its stop as if nothing happened), or kill the process.
 * The parasite must have been cured first, unless the process is killed.
 */
void infect_doom(struct infect_ctx *c)
{
	kill(c->pid, SIGKILL);
	if (c->trace)
		c->trace->area = 0;	/* a parasite still in dies with it */
}

void infect_release(struct infect_ctx *c, bool kill_process)
{
	if (kill_process) {
		kill_all(c);
		infect_forget(c);	/* a killing dump's parasite, never cured (dump.c) */
	} else {
		detach_all(c);
	}
	free(c->threads);
	c->threads = NULL;
	c->nr_threads = 0;
	if (c->pidfd >= 0)
		close(c->pidfd);
	if (c->mem_fd >= 0)
		close(c->mem_fd);
	c->pidfd = c->mem_fd = -1;
}

/* What a thread's cure puts back: read before any remote execution. */
#ifndef PTRACE_GET_RSEQ_CONFIGURATION
#define PTRACE_GET_RSEQ_CONFIGURATION	0x420f	/* Linux 5.13 */
#endif

static void save_rseq(struct infect_thread *t)
{
	struct { uint64_t ptr; uint32_t len, sig, flags, pad; } rc;	/* ptrace_rseq_configuration */

	if (ptrace(PTRACE_GET_RSEQ_CONFIGURATION, t->tid, sizeof(rc), &rc) == sizeof(rc))
		t->rseq = (struct infect_rseq){ rc.ptr, rc.len, rc.sig };
}

/* 8 bytes of the stopped thread tid's memory at addr, or -errno. */
static int peek_u64(pid_t tid, uint64_t addr, uint64_t *v)
{
	errno = 0;
	*v = (uint64_t)ptrace(PTRACE_PEEKDATA, tid, (void *)addr, NULL);
	return errno ? -errno : 0;
}

/*
 * A thread stopped inside an rseq critical section (its area's rseq_cs
 * names a section holding its IP): the kernel aborts the section the next
 * time the thread returns to user space after a preemption or a signal, but
 * any code memdump runs in the thread (a remote syscall, the parasite)
 * returns to user space outside the section, where the kernel only clears
 * rseq_cs, and the cure would then put the thread back inside an
 * unprotected section (zdtm transition/rseq01). Done here first, as the
 * kernel would: the IP at the abort handler; rseq_cs is left for the
 * kernel to clear when the thread next returns to user space, now outside
 * the section (memory memdump writes through ptrace may be write-protected
 * by the snapshot by now). A section with flags (the deprecated NO_RESTART
 * ones) is left to the kernel.
 */
static int rseq_abort_inside(struct infect_thread *t)
{
	uint64_t cs, start, len, abort_ip, vflags;

	if (!t->rseq.len || peek_u64(t->tid, t->rseq.ptr + 8, &cs) || !cs)
		return 0;	/* (rseq_cs: 8 bytes into struct rseq) */
	if (peek_u64(t->tid, cs, &vflags) || peek_u64(t->tid, cs + 8, &start) ||
	    peek_u64(t->tid, cs + 16, &len) || peek_u64(t->tid, cs + 24, &abort_ip))
		return 0;	/* a bad pointer: the kernel's to find */
	if (vflags || t->regs.rip < start || t->regs.rip - start >= len)
		return 0;
	pr_debug("thread %d: stopped in the rseq section at %#llx, moved to its abort handler "
		 "%#" PRIx64 "\n", t->tid, (unsigned long long)t->regs.rip, abort_ip);
	t->regs.rip = abort_ip;
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &t->regs))
		return fail(-errno, "thread %d: cannot move it to its rseq abort handler: %s",
			    t->tid, strerror(errno));
	return 0;
}

/* Is SIGSTOP in the pending set KEY (SigPnd, ShdPnd) of a status text? */
static bool sigstop_in(const char *status, const char *key)
{
	char v[32] = "0";

	status_text_field(status, key, v, sizeof(v));
	return strtoull(v, NULL, 16) & (1ULL << (SIGSTOP - 1));
}

/*
 * SIGSTOP queued for thread tid alone (SigPnd), and, when shared is given,
 * for the whole process (ShdPnd, the same in every thread's status): one
 * read of /proc/TID/status for both.
 */
static bool sigstop_queued(pid_t tid, bool *shared)
{
	char path[64], *status = NULL;
	bool own;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	if (proc_read_file(path, &status) < 0)
		return false;
	own = sigstop_in(status, "SigPnd");
	if (shared)
		*shared = sigstop_in(status, "ShdPnd");
	free(status);
	return own;
}

/*
 * The signal of the group-stop the thread is in, from its stop's siginfo
 * (a seized thread in group-stop traps with it; a running one with SIGTRAP).
 */
static int group_stop_signal(pid_t tid)
{
	siginfo_t si;

	if (ptrace(PTRACE_GETSIGINFO, tid, 0, &si) || si.si_code >> 8 != PTRACE_EVENT_STOP)
		return 0;
	return si.si_signo == SIGTRAP ? 0 : si.si_signo;
}

/* shared: where to say whether SIGSTOP is queued for the process too (the first thread's). */
static int save_thread(struct infect_thread *t, bool *shared)
{
	t->stop_sig = group_stop_signal(t->tid);
	t->sigstop_private = sigstop_queued(t->tid, shared);
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &t->regs))
		return fail(-errno, "thread %d: cannot read registers: %s", t->tid, strerror(errno));
	if (ptrace(PTRACE_GETSIGMASK, t->tid, sizeof(t->sigmask), &t->sigmask))
		return fail(-errno, "thread %d: cannot read signal mask: %s", t->tid,
			    strerror(errno));
	save_rseq(t);
	return rseq_abort_inside(t);
}

static int open_process(struct infect_ctx *c)
{
	char path[64];

	c->pidfd = syscall(SYS_pidfd_open, c->pid, 0);
	if (c->pidfd < 0)
		return fail(-errno, "cannot open process %d: %s", c->pid, strerror(errno));
	snprintf(path, sizeof(path), "/proc/%d/mem", c->pid);
	c->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (c->mem_fd < 0)
		return fail(-errno, "cannot open %s: %s", path, strerror(errno));
	return 0;
}

/*
 * Take hold of process pid: every thread seized and stopped, with what its
 * cure needs saved. On failure, what was done is undone by infect_release().
 */
int infect_prepare(struct infect_ctx *c, pid_t pid, const volatile sig_atomic_t *stop)
{
	int ret;

	memset(c, 0, sizeof(*c));
	c->pid = pid;
	c->pidfd = c->mem_fd = -1;
	c->stop = stop;
	ret = open_process(c);
	if (!ret)
		ret = seize_all(c);
	for (int i = 0; i < c->nr_threads && !ret; i++)
		ret = save_thread(&c->threads[i], i ? NULL : &c->sigstop_shared);
	return ret;
}
