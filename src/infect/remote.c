/*
 * Remote system calls: make a frozen thread of the target execute one system
 * call for us. The thread's instruction pointer is moved onto a `syscall`
 * instruction: until the parasite area is mapped, one that already exists
 * in the target (its vDSO, else any executable mapping), so nothing in the
 * target is written; then the area's trampoline, after which the thread
 * would return home through its cure frame, were we killed during the call.
 * PTRACE_SYSCALL stops on entry and exit of that call, its result is read
 * from rax, and the thread gets its own registers back at once. No
 * breakpoints are involved (hardware ones do not work in every VM).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "fault.h"
#include "infect/infect.h"
#include "infect/seize.h"
#include "infect/selfcure.h"
#include "log.h"
#include "proc.h"

/*
 * Where pat first is in [start, end) (the first 8 MiB of it), read in
 * 64 KiB pieces: every page read through /proc/PID/mem is a page-table
 * walk of the frozen target, and the signal return sits near the start of
 * libc's text (a whole 1.4 MiB libc read took 15-20 ms of the freeze).
 */
#define FIND_PIECE	(64 << 10)

static uint64_t find_bytes_in(struct infect_ctx *c, uint64_t start, uint64_t end,
			      const void *pat, size_t pat_len)
{
	uint64_t stop = start + MIN(end - start, (uint64_t)(8 << 20)), found = 0;
	uint8_t *buf = malloc(FIND_PIECE), *hit;

	if (!buf)
		return 0;
	for (uint64_t at = start; at + pat_len <= stop && !found; at += FIND_PIECE - pat_len + 1) {
		ssize_t n = pread(c->mem_fd, buf, MIN(stop - at, (uint64_t)FIND_PIECE), at);

		if (n < (ssize_t)pat_len)
			break;
		hit = memmem(buf, n, pat, pat_len);
		if (hit)
			found = at + (hit - buf);
	}
	free(buf);
	return found;
}

/* One line of /proc/PID/maps: is it executable, is it the vDSO? */
static bool exec_range(const char *line, uint64_t *start, uint64_t *end, bool *vdso)
{
	char perms[8] = "";

	if (sscanf(line, "%lx-%lx %7s", start, end, perms) != 3)
		return false;
	*vdso = strstr(line, "[vdso]") != NULL;
	return perms[2] == 'x' && !strstr(line, "[vsyscall]");
}

/* Where pat is in the first executable mapping that holds it, the vDSO first. */
static uint64_t find_in_maps(struct infect_ctx *c, char *maps, const void *pat, size_t len)
{
	uint64_t found = 0;

	for (int pass = 0; pass < 2 && !found; pass++) {
		char *copy = strdup(maps), *line, *save;

		if (!copy)
			break;
		for (line = strtok_r(copy, "\n", &save); line && !found;
		     line = strtok_r(NULL, "\n", &save)) {
			uint64_t start, end;
			bool vdso;

			if (!exec_range(line, &start, &end, &vdso))
				continue;
			if (vdso)
				c->vdso = start;
			if ((pass == 0) == vdso)
				found = find_bytes_in(c, start, end, pat, len);
		}
		free(copy);
	}
	return found;
}

static void find_syscall_insn(struct infect_ctx *c, char *maps)
{
	static const uint8_t syscall_insn[] = { 0x0f, 0x05 };

	c->syscall_insn = find_in_maps(c, maps, syscall_insn, sizeof(syscall_insn));
}

/*
 * `mov $15, %rax; syscall` (glibc's, musl's and Go's signal return), or
 * `mov $15, %eax; syscall`: where a remote syscall runs until the parasite
 * area exists (see infect_syscall).
 */
static void find_sigreturn_insn(struct infect_ctx *c, char *maps)
{
	static const uint8_t mov_rax[] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 };
	static const uint8_t mov_eax[] = { 0xb8, 0x0f, 0, 0, 0, 0x0f, 0x05 };

	c->sigreturn_insn = find_in_maps(c, maps, mov_rax, sizeof(mov_rax));
	if (c->sigreturn_insn)
		c->sigreturn_len = sizeof(mov_rax);
	else if ((c->sigreturn_insn = find_in_maps(c, maps, mov_eax, sizeof(mov_eax))))
		c->sigreturn_len = sizeof(mov_eax);
}

/*
 * A NUL byte the target can pass as a string: the vDSO's EI_OSABI, or, in a
 * process that unmapped its vDSO, the first one in its code.
 */
static void find_nul_byte(struct infect_ctx *c, char *maps)
{
	static const uint8_t nul[] = { 0 };

	if (c->vdso)
		c->nul_byte = c->vdso + 7;	/* ELF ident: EI_OSABI = 0 */
	else
		c->nul_byte = find_in_maps(c, maps, nul, sizeof(nul));
}

/* The three looked for in one read of /proc/PID/maps (frozen: it cannot change between). */
static int remote_init(struct infect_ctx *c)
{
	char path[64], *maps;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/maps", c->pid);
	n = proc_read_file(path, &maps);
	if (n < 0)
		return fail((int)n, "cannot read %s: %s", path, strerror((int)-n));
	find_syscall_insn(c, maps);
	find_sigreturn_insn(c, maps);
	find_nul_byte(c, maps);
	free(maps);
	if (!c->syscall_insn)
		return fail(-ENOEXEC, "no syscall instruction found in process %d's code", c->pid);
	pr_debug("remote syscalls through the instruction at %#lx, signal return at %#lx",
		 c->syscall_insn, c->sigreturn_insn);
	return 0;
}

/* Where remote syscalls will run, found once (the vDSO's start with it). */
int infect_remote_init(struct infect_ctx *c)
{
	return c->syscall_insn ? 0 : remote_init(c);
}

/*
 * A thread's way home while no parasite area exists: its cure frame
 * (selfcure.c) written on its own stack, below the red zone, where the
 * kernel would put a signal frame; the bytes it covers are put back after
 * the call.
 */
struct stack_frame {
	uint64_t addr;		/* in the thread's stack, 64-byte aligned */
	size_t len;
	uint8_t *frame, *saved;
};

#define RED_ZONE	128

/* Start of the mapping that holds addr, if it is writable. */
static int writable_vma_start(struct infect_ctx *c, uint64_t addr, uint64_t *start)
{
	char path[64], *maps, *line, *save;
	int ret = -ENOENT;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/maps", c->pid);
	n = proc_read_file(path, &maps);
	if (n < 0)
		return (int)n;
	for (line = strtok_r(maps, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		uint64_t lo, hi;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && lo <= addr && addr < hi) {
			*start = lo;
			ret = perms[0] == 'r' && perms[1] == 'w' ? 0 : -EACCES;
			break;
		}
	}
	free(maps);
	return ret;
}

static int mem_io(pid_t pid, uint64_t addr, void *buf, size_t len, bool write)
{
	struct iovec local = { buf, len }, remote = { (void *)addr, len };
	ssize_t n = write ? process_vm_writev(pid, &local, 1, &remote, 1, 0)
			  : process_vm_readv(pid, &local, 1, &remote, 1, 0);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
}

static void stack_frame_free(struct stack_frame *sf)
{
	free(sf->frame);
	free(sf->saved);
	*sf = (struct stack_frame){ 0 };
}

static int stack_frame_build(struct infect_ctx *c, struct infect_thread *t, struct stack_frame *sf)
{
	uint64_t lo = 0;
	size_t room;
	int err = selfcure_frame_len(t->tid, &room);

	if (err)
		return err;
	room = (room + 63) & ~63UL;
	sf->addr = (t->regs.rsp - RED_ZONE - room) & ~63UL;
	/*
	 * Read once per thread: the remote calls before the area (and the last
	 * of the cure) map nothing at its stack, and a stack only grows down.
	 */
	err = t->stack_lo ? 0 : writable_vma_start(c, t->regs.rsp, &lo);
	if (!err && !t->stack_lo)
		t->stack_lo = lo;	/* only a writable one is kept */
	lo = t->stack_lo;
	if (!err && (sf->addr < lo || sf->addr > t->regs.rsp))
		err = -ENOSPC;
	sf->frame = err ? NULL : calloc(1, room);
	sf->saved = err ? NULL : malloc(room);
	if (!err && (!sf->frame || !sf->saved))
		err = -ENOMEM;
	if (!err)
		err = selfcure_frame(t, sf->frame, sf->addr, room, &sf->len);
	if (!err)
		err = mem_io(c->pid, sf->addr, sf->saved, sf->len, false);
	if (!err)
		err = mem_io(c->pid, sf->addr, sf->frame, sf->len, true);
	if (err)
		stack_frame_free(sf);
	return err;
}

/* Its bytes back on the stack: the thread has its own registers again. */
static void stack_frame_remove(struct infect_ctx *c, struct stack_frame *sf)
{
	if (sf->saved && mem_io(c->pid, sf->addr, sf->saved, sf->len, true))
		pr_debug("cannot put back the stack under the frame at %#lx", sf->addr);
	stack_frame_free(sf);
}

/* Resume t with PTRACE_SYSCALL until its next syscall stop. */
static int step_to_syscall_stop(struct infect_ctx *c, struct infect_thread *t)
{
	int status, ret;

	for (;;) {
		if (ptrace(PTRACE_SYSCALL, t->tid, 0, 0))
			return -errno;
		ret = wait_stop(c, t->tid, &status);
		if (ret)
			return ret;
		if (WIFSTOPPED(status) && WSTOPSIG(status) == (SIGTRAP | 0x80))
			return 0;
		/*
		 * SIGSTOP cannot be blocked: one queued (sent again to a stopped
		 * process, or on its way at the seize) is dequeued as soon as the
		 * thread runs for us. Suppressed here, sent again at the release.
		 */
		if (WIFSTOPPED(status) && status >> 16 == 0 && WSTOPSIG(status) == SIGSTOP) {
			pr_debug("thread %d: SIGSTOP taken during a remote syscall", t->tid);
			t->sigstops_taken++;
			continue;
		}
		/* Signals are blocked while we run code in the thread; a fault is ours. */
		if (WIFSTOPPED(status) && status >> 16 == 0 && WSTOPSIG(status) != SIGTRAP) {
			pr_warn("thread %d: signal %d during a remote syscall", t->tid,
				WSTOPSIG(status));
			return -EFAULT;
		}
	}
}

/* The fault points remote-set-NR, remote-entry-NR and remote-exit-NR (fault.h). */
static void remote_fault_point(const char *step, long nr)
{
	char point[48];

	if (!getenv("MEMDUMP_FAULT"))
		return;
	snprintf(point, sizeof(point), "remote-%s-%ld", step, nr);
	fault_point(point);
}

static int block_all_signals(struct infect_thread *t)
{
	uint64_t all = ~0ULL;

	if (ptrace(PTRACE_SETSIGMASK, t->tid, sizeof(all), &all))
		return -errno;
	return 0;
}

/*
 * Stopped at the entry of the rt_sigreturn its registers led to: make it
 * our syscall instead, and have it come back to the signal return, not
 * after it, were we to die now or at its exit.
 */
static int redirect_entry(struct infect_ctx *c, struct infect_thread *t, long nr)
{
	struct user_regs_struct r;

	if (ptrace(PTRACE_GETREGS, t->tid, 0, &r))
		return -errno;
	if ((long)r.orig_rax != SYS_rt_sigreturn || r.rip != c->sigreturn_insn + c->sigreturn_len)
		return -EFAULT;
	r.orig_rax = nr;
	r.rip = c->sigreturn_insn;
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r))
		return -errno;
	return 0;
}

/* Where the call runs, so that a thread we leave at any moment goes home. */
static void place_call(struct infect_ctx *c, struct infect_thread *t,
		       const struct stack_frame *sf, struct user_regs_struct *r)
{
	r->rip = c->syscall_insn;
	if (c->tramp && t->cure_sp) {		/* home through its frame if we die */
		r->rip = c->tramp;
		r->r12 = t->cure_sp;
	} else if (sf->frame) {			/* home through the frame on its stack */
		r->rip = c->sigreturn_insn;
		r->rsp = sf->addr + 8;
	}
}

/* Run it: registers set, entry, exit; *r: the registers at the exit. */
static int run_call(struct infect_ctx *c, struct infect_thread *t, const struct stack_frame *sf,
		    long nr, struct user_regs_struct *r)
{
	int err;

	if (ptrace(PTRACE_SETREGS, t->tid, 0, r))
		return -errno;
	t->regs_dirty = true;
	/* blocked once its registers lead home: the frame has its own mask */
	err = block_all_signals(t);
	if (!err)
		remote_fault_point("set", nr);
	if (!err)
		err = step_to_syscall_stop(c, t);	/* entry */
	if (!err && sf->frame && !(c->tramp && t->cure_sp))
		err = redirect_entry(c, t, nr);
	if (!err && c->tramp)
		fault_point("in-remote-syscall");
	if (!err)
		remote_fault_point("entry", nr);
	if (!err)
		err = step_to_syscall_stop(c, t);	/* exit */
	if (!err)
		remote_fault_point("exit", nr);
	if (!err && ptrace(PTRACE_GETREGS, t->tid, 0, r))
		err = -errno;
	return err;
}

/*
 * Until the parasite area exists, the call runs on a signal return of the
 * process's own code with the thread's cure frame on its stack: set at the
 * `mov $15, %rax`, it enters rt_sigreturn, which we turn into our syscall
 * at its entry stop, the thread's instruction pointer moved back onto the
 * mov. Left at any moment (memdump killed) it executes at most our syscall
 * and returns home through the frame. Without such code, or room on the
 * stack, the call runs on a bare `syscall` instruction, as the area's
 * first calls always did.
 */
int infect_syscall(struct infect_ctx *c, int thread, long nr, long *ret,
		   long a1, long a2, long a3, long a4, long a5, long a6)
{
	struct infect_thread *t = &c->threads[thread];
	struct user_regs_struct r = t->regs;
	struct stack_frame sf = { 0 };
	int err, put;

	if (thread == 0) {
		err = parasite_pause(c);	/* the leader may be running the blob */
		if (err)
			return err;
	}
	err = infect_remote_init(c);
	if (err)
		return err;
	if (!(c->tramp && t->cure_sp) && c->sigreturn_insn) {
		err = stack_frame_build(c, t, &sf);
		if (err)
			pr_debug("thread %d: no frame on its stack (%s): a bare syscall", t->tid,
				 strerror(-err));
	}
	place_call(c, t, &sf, &r);
	r.rax = nr;
	r.orig_rax = -1;	/* no restart handling of the frozen call */
	r.rdi = a1;
	r.rsi = a2;
	r.rdx = a3;
	r.r10 = a4;
	r.r8 = a5;
	r.r9 = a6;
	err = run_call(c, t, &sf, nr, &r);
	/*
	 * Back to its own registers and signal mask at once: were memdump
	 * killed now, the kernel would detach the thread and it would run on
	 * from its own state, not from our syscall instruction.
	 */
	put = err == -ESRCH ? 0 : put_thread_regs(t);
	if (!put)
		stack_frame_remove(c, &sf);
	stack_frame_free(&sf);
	if (err)
		return fail(err, "thread %d: remote syscall %ld failed: %s", t->tid, nr,
			    err == -ESRCH ? "the process died" : strerror(-err));
	if (put)
		return fail(put, "thread %d: cannot put back its registers: %s", t->tid,
			    strerror(-put));
	*ret = r.rax;
	pr_debug("thread %d: remote syscall %ld = %ld", t->tid, nr, *ret);
	return 0;
}
