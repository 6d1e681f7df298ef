/* Syscall restart decisions for frozen threads (see restart.h). */
#include <sys/syscall.h>
#include <time.h>

#include "kernel_uapi.h"
#include "restart.h"

#define SYSCALL_INSN_LEN	2

static bool in_restartable_syscall(const struct user_regs_struct *r, long *code)
{
	if ((long)r->orig_rax < 0)
		return false;
	*code = -(long)r->rax;
	return *code == ERESTARTSYS || *code == ERESTARTNOINTR || *code == ERESTARTNOHAND ||
	       *code == ERESTART_RESTARTBLOCK;
}

static void reexecute(struct user_regs_struct *r, unsigned long nr)
{
	r->rax = nr;
	r->rip -= SYSCALL_INSN_LEN;
	r->orig_rax = -1;
}

void regs_for_resume(struct user_regs_struct *r)
{
	long code;

	if (!in_restartable_syscall(r, &code))
		return;
	/* The kernel's restart block of this thread is still valid here. */
	reexecute(r, code == ERESTART_RESTARTBLOCK ? SYS_restart_syscall : r->orig_rax);
}

/*
 * nanosleep(req, rem) and clock_nanosleep(clk, 0, req, rem) interrupted with a
 * restart block have had the remaining time written to *rem: sleep on that.
 */
static void sleep_for_remainder(struct user_regs_struct *r)
{
	if (r->orig_rax == SYS_nanosleep && r->rsi)
		r->rdi = r->rsi;
	else if (r->orig_rax == SYS_clock_nanosleep && !(r->rsi & TIMER_ABSTIME) && r->r10)
		r->rdx = r->r10;
}

void regs_for_image(struct user_regs_struct *r)
{
	long code;

	if (!in_restartable_syscall(r, &code))
		return;
	if (code == ERESTART_RESTARTBLOCK)
		sleep_for_remainder(r);
	reexecute(r, r->orig_rax);
}
