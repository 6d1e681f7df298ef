/* t-sigact: every signal action the kernel keeps, restored exactly.
 *
 * Every signal but SIGKILL, SIGSTOP and SIGUSR1 (tlib's) gets an action of
 * its own through the raw rt_sigaction system call: SIG_DFL, SIG_IGN or one
 * of two handlers; flags mixing SA_SIGINFO, SA_ONSTACK, SA_RESTART,
 * SA_NODEFER, SA_RESETHAND, SA_NOCLDSTOP/SA_NOCLDWAIT, with SA_RESTORER
 * (glibc's restorer or one of this program's own) or without it; and a mask
 * unique to the signal, real-time signals in it. What the kernel reads back
 * then (all 64, signals 32 and 33 too) is the table the check compares.
 *
 * On SIGUSR1: every action read back equals the table, field by field; then
 * the actions work: SIGRTMIN+3 (SA_SIGINFO|SA_ONSTACK) runs on the
 * alternate stack with its siginfo and its mask blocked, SIGRTMIN+7 returns
 * through this program's own restorer, SIGURG (SA_RESETHAND|SA_NODEFER) is
 * not blocked in its handler and is SIG_DFL after it.
 */
#include <stdbool.h>

#include "tlib.h"

#define NSIG_K		64
#define K_SA_RESTORER	0x04000000UL

struct ksa {
	uint64_t handler, flags, restorer, mask;
};

static struct ksa table[NSIG_K + 1];
static volatile sig_atomic_t stray;
static volatile int info_signo, info_onstack, info_masked, urg_unblocked, own_ran;
static char altstack[64 << 10] __attribute__((aligned(16)));

/* Our own restorer: what a restored SA_RESTORER address must still lead to. */
void t_restorer(void);
__asm__(".text\n.globl t_restorer\nt_restorer:\n\tmov $15, %rax\n\tsyscall\n\thlt\n");

static long k_sigaction(int sig, const struct ksa *act, struct ksa *old)
{
	return syscall(SYS_rt_sigaction, sig, act, old, 8);
}

static uint64_t k_blocked(void)
{
	uint64_t set = 0;

	syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &set, 8);
	return set;
}

static uint64_t bit(int sig) { return 1ULL << (sig - 1); }

static void h_stray(int sig) { stray = sig; }
static void h_stray_info(int sig, siginfo_t *si, void *uc) { (void)si; (void)uc; stray = sig; }

static void h_info(int sig, siginfo_t *si, void *uc)
{
	char here;

	(void)uc;
	info_signo = si->si_signo == sig ? sig : -si->si_signo;
	info_onstack = &here >= altstack && &here < altstack + sizeof(altstack);
	info_masked = (k_blocked() & (bit(SIGUSR2) | bit(SIGRTMAX))) == (bit(SIGUSR2) | bit(SIGRTMAX));
}

static void h_urg(int sig) { urg_unblocked = !(k_blocked() & bit(sig)); }
static void h_own(int sig) { (void)sig; own_ran = 1; }

static bool fault_signal(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
	       sig == SIGTRAP || sig == SIGSYS || sig == SIGABRT;
}

/* The action of sig in the mix: varied, reproducible, never harmful if it came. */
static struct ksa action_of(int sig, uint64_t glibc_restorer)
{
	struct ksa a = { 0 };
	int kind = fault_signal(sig) ? 0 : sig % 4;

	a.flags = sig % 5 ? K_SA_RESTORER : 0;
	if (sig % 2)
		a.flags |= SA_SIGINFO;
	if (sig % 3 == 0)
		a.flags |= SA_ONSTACK;
	if (sig % 4 == 1)
		a.flags |= SA_RESTART;
	if (sig % 7 == 0)
		a.flags |= SA_NODEFER;
	if (sig % 11 == 0)
		a.flags |= SA_RESETHAND;
	if (sig == SIGCHLD)
		a.flags |= SA_NOCLDSTOP | SA_NOCLDWAIT;
	if (a.flags & K_SA_RESTORER)
		a.restorer = sig % 3 ? glibc_restorer : (uint64_t)t_restorer;
	if (kind >= 2 && !(a.flags & K_SA_RESTORER))
		a.flags |= K_SA_RESTORER, a.restorer = glibc_restorer;	/* a handler must return */
	a.handler = kind == 0 ? (uint64_t)SIG_DFL : kind == 1 ? (uint64_t)SIG_IGN :
		    a.flags & SA_SIGINFO ? (uint64_t)h_stray_info : (uint64_t)h_stray;
	a.mask = t_mix(sig) & ~(bit(SIGKILL) | bit(SIGSTOP));
	return a;
}

static void set(int sig, struct ksa a)
{
	if (k_sigaction(sig, &a, NULL))
		t_fail("rt_sigaction(%d): %s", sig, strerror(errno));
}

static void setup(void)
{
	struct ksa usr1;
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
	uint64_t glibc;

	if (k_sigaction(SIGUSR1, NULL, &usr1) || !(usr1.flags & K_SA_RESTORER))
		t_fail("cannot read tlib's SIGUSR1 action");
	glibc = usr1.restorer;
	for (int sig = 1; sig <= NSIG_K; sig++)
		if (sig != SIGKILL && sig != SIGSTOP && sig != SIGUSR1)
			set(sig, action_of(sig, glibc));
	set(SIGRTMIN + 3, (struct ksa){ (uint64_t)h_info, SA_SIGINFO | SA_ONSTACK | K_SA_RESTORER,
					glibc, bit(SIGUSR2) | bit(SIGRTMAX) });
	set(SIGRTMIN + 7, (struct ksa){ (uint64_t)h_own, K_SA_RESTORER, (uint64_t)t_restorer,
					bit(SIGRTMIN + 8) });
	set(SIGURG, (struct ksa){ (uint64_t)h_urg, SA_RESETHAND | SA_NODEFER | K_SA_RESTORER,
				  glibc, bit(SIGTERM) });
	if (sigaltstack(&ss, NULL))
		t_fail("sigaltstack: %s", strerror(errno));
	for (int sig = 1; sig <= NSIG_K; sig++)
		if (k_sigaction(sig, NULL, &table[sig]))
			t_fail("rt_sigaction(%d) read: %s", sig, strerror(errno));
}

static void check_table(void)
{
	for (int sig = 1; sig <= NSIG_K; sig++) {
		struct ksa now, *was = &table[sig];

		if (k_sigaction(sig, NULL, &now))
			t_fail("rt_sigaction(%d) read after restore: %s", sig, strerror(errno));
		if (now.handler != was->handler || now.flags != was->flags ||
		    now.restorer != was->restorer || now.mask != was->mask)
			t_fail("signal %d: handler %#" PRIx64 " flags %#" PRIx64 " restorer %#" PRIx64
			       " mask %#" PRIx64 ", was %#" PRIx64 " %#" PRIx64 " %#" PRIx64
			       " %#" PRIx64, sig, now.handler, now.flags, now.restorer, now.mask,
			       was->handler, was->flags, was->restorer, was->mask);
	}
}

static void check_delivery(void)
{
	struct ksa urg;

	raise(SIGRTMIN + 3);
	if (info_signo != SIGRTMIN + 3)
		t_fail("SIGRTMIN+3: handler saw si_signo %d", info_signo);
	if (!info_onstack)
		t_fail("SIGRTMIN+3 (SA_ONSTACK) did not run on the alternate stack");
	if (!info_masked)
		t_fail("SIGRTMIN+3's mask was not blocked in its handler");
	raise(SIGRTMIN + 7);
	if (!own_ran)
		t_fail("SIGRTMIN+7 (own restorer) did not run");
	raise(SIGURG);
	if (!urg_unblocked)
		t_fail("SIGURG (SA_NODEFER) was blocked in its handler");
	if (k_sigaction(SIGURG, NULL, &urg) || urg.handler != (uint64_t)SIG_DFL)
		t_fail("SIGURG (SA_RESETHAND) is not SIG_DFL after its handler");
}

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);
	setup();
	t_ready("%d", NSIG_K);
	t_wait_usr1();
	t_check_common();
	check_table();
	check_delivery();
	t_pass(stray ? "(a stray signal came)" : "64 actions");
}
