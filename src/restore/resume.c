/*
 * Restore, step 5: when every thread is parked before its final
 * rt_sigreturn, memdump attaches with ptrace, lets them go, stops each right
 * after its rt_sigreturn, injects one munmap of the restorer area into the
 * leader (every signal blocked meanwhile) and detaches: nothing of the
 * restorer remains in the process.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/futex.h>

/* sys/user.h has its own PAGE_SIZE */
#undef PAGE_SIZE
#undef PAGE_MASK
#undef PAGE_SHIFT

#include "common.h"
#include "log.h"
#include "proc.h"
#include "restore/restore.h"
#include "vma_status.h"
#include "restore/pipeline.h"

#ifndef PTRACE_GET_SYSCALL_INFO
#define PTRACE_GET_SYSCALL_INFO	0x420e
#define PTRACE_SYSCALL_INFO_ENTRY	1
#define PTRACE_SYSCALL_INFO_EXIT	2
#endif
#ifndef PTRACE_GETSIGMASK
#define PTRACE_GETSIGMASK	0x420a
#define PTRACE_SETSIGMASK	0x420b
#endif

struct ptrace_syscall_info_min {
	uint8_t op;
	uint8_t pad[3];
	uint32_t arch;
	uint64_t instruction_pointer;
	uint64_t stack_pointer;
	union {
		struct { uint64_t nr; uint64_t args[6]; } entry;
		struct { int64_t rval; uint8_t is_error; } exit;
	};
};

/*
 * Is process group pgid in session sid orphaned: does no member have a
 * parent in another group of the session? Its SIGTSTP, SIGTTIN and SIGTTOU
 * stop nothing then (the kernel drops them).
 */
static bool pgrp_orphaned(pid_t pgid, pid_t sid)
{
	DIR *dir = opendir("/proc");
	struct dirent *e;
	bool orphaned = true;

	if (!dir)
		return true;
	while (orphaned && (e = readdir(dir))) {
		struct proc_stat st, pst;
		pid_t pid = atoi(e->d_name);

		if (pid <= 0 || proc_read_stat(pid, &st) || st.pgid != pgid)
			continue;
		if (st.ppid > 0 && !proc_read_stat(st.ppid, &pst) && pst.pgid != pgid &&
		    pst.sid == sid)
			orphaned = false;
	}
	closedir(dir);
	return orphaned;
}

/*
 * The signal a process dumped stopped stops with again: the one it stopped
 * with (a parent's wait reports it), when that one is sure to stop it (its
 * default action, not blocked, its group not orphaned); SIGSTOP otherwise,
 * which always does.
 */
static int restored_stop_signal(pid_t pid, const TaskCoreEntry *tc)
{
	int sig = tc->has_stop_signo ? (int)tc->stop_signo : SIGSTOP;
	struct proc_stat st;

	if (sig == SIGSTOP)
		return SIGSTOP;
	if (sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU)
		goto fallback;
	if (tc->n_sigactions >= (size_t)sig && tc->sigactions[sig - 1]->sigaction != 0)
		goto fallback;	/* not SIG_DFL */
	if (tc->blk_sigset & (1ULL << (sig - 1)))
		goto fallback;
	if (proc_read_stat(pid, &st) || pgrp_orphaned(st.pgid, st.sid))
		goto fallback;
	return sig;
fallback:
	pr_warn("process %d stopped with signal %d, which would not stop it now: stopped with "
		"SIGSTOP", pid, sig);
	return SIGSTOP;
}

/* Run tid until it has returned from rt_sigreturn; leave it stopped there. */
static int run_to_sigreturn(pid_t tid)
{
	bool in_sigreturn = false;
	int status;

	for (;;) {
		struct ptrace_syscall_info_min info;
		int sig = 0;

		if (waitpid(tid, &status, __WALL) != tid)
			return -errno;
		if (WIFEXITED(status) || WIFSIGNALED(status))
			return -ECHILD;
		if (WSTOPSIG(status) == (SIGTRAP | 0x80)) {
			memset(&info, 0, sizeof(info));
			if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, sizeof(info), &info) <= 0)
				return -errno;
			if (info.op == PTRACE_SYSCALL_INFO_ENTRY)
				in_sigreturn = info.entry.nr == SYS_rt_sigreturn;
			else if (info.op == PTRACE_SYSCALL_INFO_EXIT && in_sigreturn)
				return 0;
		} else if (status >> 16) {
			/* PTRACE_EVENT_STOP and friends */
		} else if (WSTOPSIG(status) != SIGTRAP) {
			sig = WSTOPSIG(status);
		}
		if (ptrace(PTRACE_SYSCALL, tid, 0, sig))
			return -errno;
	}
}

/*
 * In tid, stopped after its rt_sigreturn: one syscall (nr, a0, a1) injected,
 * its result. Every signal stays blocked meanwhile: a pending signal the
 * restored mask lets through is delivered after the detach, not into the
 * injected syscall.
 */
static long inject_syscall(struct rst *r, pid_t tid, long nr, unsigned long a0, unsigned long a1)
{
	uint64_t mask, all = ~0ULL;
	struct user_regs_struct saved, regs;
	int status;
	long ret = 0;

	if (ptrace(PTRACE_GETSIGMASK, tid, sizeof(mask), &mask) ||
	    ptrace(PTRACE_SETSIGMASK, tid, sizeof(all), &all))
		return -errno;
	if (ptrace(PTRACE_GETREGS, tid, 0, &saved))
		return -errno;
	regs = saved;
	regs.rax = nr;
	regs.orig_rax = -1;
	regs.rdi = a0;
	regs.rsi = a1;
	regs.rip = r->a->syscall_insn;
	if (ptrace(PTRACE_SETREGS, tid, 0, &regs))
		return -errno;
	for (int stops = 0; stops < 2; stops++) {
		if (ptrace(PTRACE_SYSCALL, tid, 0, 0) || waitpid(tid, &status, __WALL) != tid)
			return -errno;
		if (!WIFSTOPPED(status) || WSTOPSIG(status) != (SIGTRAP | 0x80))
			return -EIO;
	}
	if (ptrace(PTRACE_GETREGS, tid, 0, &regs))
		return -errno;
	if ((long)regs.rax < 0)
		ret = (long)regs.rax;
	if (ptrace(PTRACE_SETREGS, tid, 0, &saved) ||
	    ptrace(PTRACE_SETSIGMASK, tid, sizeof(mask), &mask))
		return -errno;
	return ret;
}

/*
 * Nothing of the restorer left: its lifeline fd (abort.c) closed, its area
 * unmapped. An fd table several processes share (share.c) has one lifeline:
 * its first process closes it (once closed, the number may be the process's).
 */
static int inject_cleanup(struct rst *r, pid_t tid)
{
	long ret = 0;

	if (r->a->lifeline_fd >= 0 && !r->fdt_owner)
		ret = inject_syscall(r, tid, SYS_close, r->a->lifeline_fd, 0);
	if (!ret)
		ret = inject_syscall(r, tid, SYS_munmap, r->a->area_start, r->a->area_size);
	return (int)ret;
}

/* Thread i's TID here: a copy's (--copies, fanout.c) are not those it has in its namespace. */
static pid_t host_tid(const struct rst *r, const struct rst_thread *rt, size_t i)
{
	return r->fan_tids ? r->fan_tids[i] : (pid_t)rt[i].tid;
}

/*
 * After a SIGKILL: its threads memdump traces (resume_seize) exit to memdump,
 * and their leader is not reaped until they are: each is waited for here,
 * before anyone waits for the leader (a wait that never ended otherwise).
 */
void resume_reap_traced(struct rst *r)
{
	const struct rst_thread *rt;

	if (!r->a || !r->area || r->untraced)
		return;
	rt = (const struct rst_thread *)(r->area + r->a->threads_off);
	for (size_t i = 1; i < r->a->nr_threads; i++)
		while (waitpid(host_tid(r, rt, i), NULL, __WALL) < 0 && errno == EINTR)
			;
}

static void release(struct rst *r, unsigned int go)
{
	__atomic_store_n(&r->a->go, go, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &r->a->go, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/*
 * Trace the parked threads. No PTRACE_O_EXITKILL: memdump killed before the
 * commit point leaves them parked, and they exit themselves (their
 * lifeline); after it they run on.
 */
void resume_seize(struct rst *r)
{
	const struct rst_thread *rt = (const struct rst_thread *)(r->area + r->a->threads_off);
	size_t n = r->a->nr_threads, seized = 0;
	long opts = PTRACE_O_TRACESYSGOOD;
	int ret = 0, status;

	/* the filters (or strict mode) the threads enter must not stop the syscalls
	 * injected afterwards */
	if (r->a->nr_filters)
		opts |= PTRACE_O_SUSPEND_SECCOMP;
	for (size_t i = 0; i < n; i++)
		if (rt[i].seccomp_strict)
			opts |= PTRACE_O_SUSPEND_SECCOMP;
	for (; seized < n; seized++) {
		pid_t tid = host_tid(r, rt, seized);

		if (ptrace(PTRACE_SEIZE, tid, 0, opts) ||
		    ptrace(PTRACE_INTERRUPT, tid, 0, 0) || waitpid(tid, &status, __WALL) != tid) {
			ret = -errno;
			break;
		}
	}
	if (!ret)
		return;
	/* no ptrace: the threads run, the restorer area stays mapped */
	pr_warn("cannot trace the restored threads (%s): the restorer area stays mapped at "
		"%#lx\n", strerror(-ret), r->a->area_start);
	for (size_t i = 0; i < seized; i++)
		ptrace(PTRACE_DETACH, host_tid(r, rt, i), 0, 0);
	r->untraced = true;
}

void resume_go(struct rst *r)
{
	release(r, 1);
}

/* Let the released threads run into their dumped contexts, the restorer gone. */
int resume_finish(struct rst *r)
{
	const struct rst_thread *rt = (const struct rst_thread *)(r->area + r->a->threads_off);
	size_t n = r->a->nr_threads;
	int ret = 0, status;

	if (r->untraced)
		return 0;
	for (size_t i = 0; i < n && !ret; i++) {
		if (ptrace(PTRACE_SYSCALL, host_tid(r, rt, i), 0, 0))
			ret = -errno;
	}
	for (size_t i = 0; i < n && !ret; i++)
		ret = run_to_sigreturn(host_tid(r, rt, i));
	if (!ret)
		ret = inject_cleanup(r, host_tid(r, rt, 0));
	if (ret) {
		kill(r->pid, SIGKILL);
		resume_reap_traced(r);
		if (!rst_not_child(r))
			waitpid(r->pid, &status, __WALL);
		return r->a->err ? rst_area_error(r)
				 : fail(ret, "the restored threads did not resume: %s", strerror(-ret));
	}
	/*
	 * A process dumped stopped is left group-stopped, as it was; so is any
	 * with MEMDUMP_RESTORE_STOP=1, to attach a debugger. The stop signal is
	 * delivered on detach, before any instruction of the process runs.
	 */
	int stop = r->leader->tc && r->leader->tc->task_state == TASK_STOPPED ?
		   restored_stop_signal(r->pid, r->leader->tc) : 0;

	if (!stop && getenv("MEMDUMP_RESTORE_STOP"))
		stop = SIGSTOP;
	for (size_t i = 0; i < n; i++)
		ptrace(PTRACE_DETACH, host_tid(r, rt, i), 0, i == 0 ? stop : 0);
	return 0;
}

/*
 * One process: traced, let go (the commit point) and its connections live
 * (golive.c), run into its contexts. A lock left on is reported after it runs.
 */
int resume_threads(struct rst *r)
{
	struct rst *one[1] = { r };
	int net;

	resume_seize(r);
	net = rst_commit_live(one, 1);
	return resume_finish(r) ?: net;
}
