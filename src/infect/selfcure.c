/*
 * A thread's way home if the dumper dies: an rt_sigframe in the parasite's
 * area that holds the thread's own state as it was frozen, for the
 * trampoline and the parasite to rt_sigreturn through (see parasite_abi.h).
 *
 * The registers are those a restored thread would get: rt_sigreturn drops
 * the kernel's restart block, so a sleep interrupted with one restarts on
 * what was left of it (lib/restart.c). The FPU state is the thread's XSAVE
 * image; the alternate signal stack is left as it is (SIGFRAME_SS_KEEP).
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

#include "common.h"
#include "infect/selfcure.h"
#include "restart.h"
#include "sigframe.h"

static void frame_regs(struct frame_sigcontext *mc, const struct user_regs_struct *r)
{
	mc->r8 = r->r8; mc->r9 = r->r9; mc->r10 = r->r10; mc->r11 = r->r11;
	mc->r12 = r->r12; mc->r13 = r->r13; mc->r14 = r->r14; mc->r15 = r->r15;
	mc->di = r->rdi; mc->si = r->rsi; mc->bp = r->rbp; mc->bx = r->rbx;
	mc->dx = r->rdx; mc->ax = r->rax; mc->cx = r->rcx; mc->sp = r->rsp;
	mc->ip = r->rip; mc->flags = r->eflags;
	mc->cs = (unsigned short)r->cs;
	mc->ss = (unsigned short)r->ss;
}

/* The thread's XSAVE image at fp (room bytes), made a valid frame FPU state. */
static int frame_fpu(pid_t tid, uint8_t *fp, size_t room, size_t *len)
{
	struct iovec iov = { fp, (room - 4) & ~7UL };	/* whole u64s, says ptrace */

	if (ptrace(PTRACE_GETREGSET, tid, NT_X86_XSTATE, &iov))
		return -errno;
	if (iov.iov_len < FP_XSTATE_MIN)
		return -EINVAL;
	sigframe_xstate_magic(fp, (unsigned int)iov.iov_len, sigframe_xgetbv0());
	*len = iov.iov_len + 4;
	return 0;
}

int selfcure_frame_len(pid_t tid, size_t *len)
{
	size_t max = 64 << 10;
	void *probe = malloc(max);	/* only its size is used */
	struct iovec iov = { probe, max };
	int err = 0;

	if (!probe)
		return -ENOMEM;
	if (ptrace(PTRACE_GETREGSET, tid, NT_X86_XSTATE, &iov))
		err = -errno;
	free(probe);
	*len = SELFCURE_FP_OFF + iov.iov_len + 4;
	return err;
}

int selfcure_frame(const struct infect_thread *t, uint8_t *local, uint64_t remote, size_t room,
		   size_t *len)
{
	struct rt_sigframe *f = (struct rt_sigframe *)local;
	size_t fp_len = 0;
	struct user_regs_struct r = t->regs;
	int err;

	if (remote % 64 || room < SELFCURE_FP_OFF + FP_XSTATE_MIN + 4)
		return -EINVAL;
	memset(f, 0, sizeof(*f));
	err = frame_fpu(t->tid, local + SELFCURE_FP_OFF, room - SELFCURE_FP_OFF, &fp_len);
	if (err)
		return err;
	regs_for_image(&r);
	frame_regs(&f->uc.mc, &r);
	f->uc.uc_flags = UC_FP_XSTATE | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS;
	f->uc.ss_flags = SIGFRAME_SS_KEEP;
	f->uc.sigmask = t->sigmask;
	f->uc.mc.fpstate = remote + SELFCURE_FP_OFF;
	*len = SELFCURE_FP_OFF + fp_len;
	return 0;
}
