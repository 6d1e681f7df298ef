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
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "fault.h"
#include "infect/infect.h"
#include "infect/seize.h"
#include "log.h"
#include "proc.h"

static uint64_t find_bytes_in(struct infect_ctx *c, uint64_t start, uint64_t end,
			      const void *pat, size_t pat_len)
{
	size_t len = MIN(end - start, (uint64_t)(8 << 20));
	uint8_t *buf = malloc(len), *hit;
	uint64_t found = 0;
	ssize_t n;

	if (!buf)
		return 0;
	n = pread(c->mem_fd, buf, len, start);
	hit = n > 0 ? memmem(buf, n, pat, pat_len) : NULL;
	if (hit)
		found = start + (hit - buf);
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

static int find_syscall_insn(struct infect_ctx *c)
{
	static const uint8_t syscall_insn[] = { 0x0f, 0x05 };
	char path[64], *maps;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/maps", c->pid);
	n = proc_read_file(path, &maps);
	if (n < 0)
		return fail((int)n, "cannot read %s: %s", path, strerror((int)-n));
	c->syscall_insn = find_in_maps(c, maps, syscall_insn, sizeof(syscall_insn));
	free(maps);
	return 0;
}

static int remote_init(struct infect_ctx *c)
{
	int ret = find_syscall_insn(c);

	if (ret)
		return ret;
	if (!c->syscall_insn)
		return fail(-ENOEXEC, "no syscall instruction found in process %d's code", c->pid);
	pr_debug("remote syscalls through the instruction at %#lx", c->syscall_insn);
	return 0;
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

static int block_all_signals(struct infect_thread *t)
{
	uint64_t all = ~0ULL;

	if (ptrace(PTRACE_SETSIGMASK, t->tid, sizeof(all), &all))
		return -errno;
	return 0;
}

int infect_syscall(struct infect_ctx *c, int thread, long nr, long *ret,
		   long a1, long a2, long a3, long a4, long a5, long a6)
{
	struct infect_thread *t = &c->threads[thread];
	struct user_regs_struct r = t->regs;
	int err;

	if (!c->syscall_insn) {
		err = remote_init(c);
		if (err)
			return err;
	}
	if (!t->regs_dirty) {
		err = block_all_signals(t);
		if (err)
			return err;
		t->regs_dirty = true;
	}
	r.rip = c->syscall_insn;
	if (c->tramp && t->cure_sp) {		/* home through its frame if we die */
		r.rip = c->tramp;
		r.r12 = t->cure_sp;
	}
	r.rax = nr;
	r.orig_rax = -1;	/* no restart handling of the frozen call */
	r.rdi = a1;
	r.rsi = a2;
	r.rdx = a3;
	r.r10 = a4;
	r.r8 = a5;
	r.r9 = a6;
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r))
		return -errno;
	t->regs_dirty = true;
	err = step_to_syscall_stop(c, t);		/* entry */
	if (!err && c->tramp)
		fault_point("in-remote-syscall");
	if (!err)
		err = step_to_syscall_stop(c, t);	/* exit */
	if (err)
		return fail(err, "thread %d: remote syscall %ld failed: %s", t->tid, nr,
			    err == -ESRCH ? "the process died" : strerror(-err));
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &r))
		return -errno;
	*ret = r.rax;
	pr_debug("thread %d: remote syscall %ld = %ld", t->tid, nr, *ret);
	/*
	 * Back to its own registers and signal mask at once: were memdump
	 * killed now, the kernel would detach the thread and it would run on
	 * from its own state, not from our syscall instruction.
	 */
	err = put_thread_regs(t);
	if (err)
		return fail(err, "thread %d: cannot put back its registers: %s", t->tid,
			    strerror(-err));
	return 0;
}
