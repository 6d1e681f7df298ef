/*
 * Can a thread's seccomp filters be installed again by the restore?
 *
 * With no_new_privs, or CAP_SYS_ADMIN in its restored credentials, the
 * restorer installs them last, just before rt_sigreturn. A thread with
 * neither (a container's process under a runtime's default profile) cannot
 * install them once its credentials are back: the restorer then installs
 * them once its uids and gids are set but before its capabilities are,
 * while it still holds CAP_SYS_ADMIN, and its own system calls after that
 * point go through the filters. Those calls are known (parasite/restorer.c, restore_thread() and
 * finish_thread()): each is run through the thread's filters here, with a
 * small classic-BPF interpreter, and a filter that does not allow one of
 * them is refused by name at dump time, before the target is harmed.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "log.h"
#include "task/task.h"

#ifndef AUDIT_ARCH_X86_64
#define AUDIT_ARCH_X86_64	0xc000003e
#endif
#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT		47
#endif

/* A system call the restorer makes after installing the filters early. */
struct late_call {
	const char *name;
	int nr;
	uint64_t arg0;
	bool others;	/* made before them by the installing thread: late only for
			 * the other threads of a TSYNC install */
};

/*
 * With one filter shared by all threads (installed once with TSYNC by the
 * leader), the other threads may still be at the start of their own
 * restore: their calls from there on count too.
 */
static const struct late_call late_calls[] = {
	{ "prctl(PR_SET_NAME)", SYS_prctl, PR_SET_NAME, false },
	{ "set_tid_address", SYS_set_tid_address, 0, false },
	{ "set_robust_list", SYS_set_robust_list, 0, false },
	{ "rseq", SYS_rseq, 0, false },
	{ "setpriority", SYS_setpriority, 0, false },
	{ "sched_setscheduler", SYS_sched_setscheduler, 0, false },
	{ "sched_setaffinity", SYS_sched_setaffinity, 0, false },
	{ "prctl(PR_SET_TIMERSLACK)", SYS_prctl, PR_SET_TIMERSLACK, false },
	{ "setgroups", SYS_setgroups, 0, true },
	{ "setresgid", SYS_setresgid, 0, true },
	{ "setfsgid", SYS_setfsgid, 0, true },
	{ "setresuid", SYS_setresuid, 0, true },
	{ "setfsuid", SYS_setfsuid, 0, true },
	{ "prctl(PR_SET_SECUREBITS)", SYS_prctl, PR_SET_SECUREBITS, false },
	{ "prctl(PR_GET_SECUREBITS)", SYS_prctl, PR_GET_SECUREBITS, false },
	{ "prctl(PR_CAPBSET_DROP)", SYS_prctl, PR_CAPBSET_DROP, false },
	{ "prctl(PR_CAP_AMBIENT)", SYS_prctl, PR_CAP_AMBIENT, false },
	{ "prctl(PR_SET_PDEATHSIG)", SYS_prctl, PR_SET_PDEATHSIG, false },
	{ "prctl(PR_SET_DUMPABLE)", SYS_prctl, PR_SET_DUMPABLE, false },
	{ "capset", SYS_capset, 0, false },
	{ "rt_sigqueueinfo", SYS_rt_sigqueueinfo, 0, false },
	{ "rt_tgsigqueueinfo", SYS_rt_tgsigqueueinfo, 0, false },
	{ "sched_yield", SYS_sched_yield, 0, false },
	{ "setitimer", SYS_setitimer, 0, false },
	{ "timer_create", SYS_timer_create, 0, false },
	{ "timer_delete", SYS_timer_delete, 0, false },
	{ "timer_settime", SYS_timer_settime, 0, false },
	{ "futex", SYS_futex, 0, false },
	{ "arch_prctl", SYS_arch_prctl, 0x1002 /* ARCH_SET_FS */, false },
	{ "exit", SYS_exit, 0, false },
	{ "exit_group", SYS_exit_group, 0, false },
	{ "rt_sigreturn", SYS_rt_sigreturn, 0, false },
};

static uint32_t alu(uint16_t op, uint32_t a, uint32_t v, bool *bad)
{
	switch (op) {
	case BPF_ADD: return a + v;
	case BPF_SUB: return a - v;
	case BPF_MUL: return a * v;
	case BPF_DIV: if (!v) *bad = true; return v ? a / v : 0;
	case BPF_MOD: if (!v) *bad = true; return v ? a % v : 0;
	case BPF_OR: return a | v;
	case BPF_AND: return a & v;
	case BPF_XOR: return a ^ v;
	case BPF_LSH: return v < 32 ? a << v : 0;
	case BPF_RSH: return v < 32 ? a >> v : 0;
	case BPF_NEG: return -a;
	}
	*bad = true;
	return 0;
}

static bool jump_taken(uint16_t op, uint32_t a, uint32_t v, bool *bad)
{
	switch (op) {
	case BPF_JEQ: return a == v;
	case BPF_JGT: return a > v;
	case BPF_JGE: return a >= v;
	case BPF_JSET: return a & v;
	}
	*bad = true;
	return false;
}

/*
 * The filter's verdict for data (SECCOMP_RET_*), or SECCOMP_RET_KILL_PROCESS
 * for a program this interpreter does not follow (the kernel checked it when
 * it was installed: that should not happen).
 */
static uint32_t bpf_run(const struct sock_filter *f, size_t n, const struct seccomp_data *data)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = { 0 };
	bool bad = false;

	for (size_t pc = 0; pc < n && !bad; pc++) {
		const struct sock_filter *i = &f[pc];
		uint32_t src = BPF_SRC(i->code) == BPF_X ? x : i->k;

		switch (BPF_CLASS(i->code)) {
		case BPF_LD:
			if (BPF_MODE(i->code) == BPF_ABS && i->k <= sizeof(*data) - 4 && !(i->k & 3))
				memcpy(&a, (const char *)data + i->k, 4);
			else if (BPF_MODE(i->code) == BPF_IMM)
				a = i->k;
			else if (BPF_MODE(i->code) == BPF_MEM && i->k < BPF_MEMWORDS)
				a = mem[i->k];
			else if (BPF_MODE(i->code) == BPF_LEN)
				a = sizeof(*data);
			else
				bad = true;
			break;
		case BPF_LDX:
			if (BPF_MODE(i->code) == BPF_IMM)
				x = i->k;
			else if (BPF_MODE(i->code) == BPF_MEM && i->k < BPF_MEMWORDS)
				x = mem[i->k];
			else if (BPF_MODE(i->code) == BPF_LEN)
				x = sizeof(*data);
			else
				bad = true;
			break;
		case BPF_ST:
		case BPF_STX:
			if (i->k >= BPF_MEMWORDS)
				bad = true;
			else
				mem[i->k] = BPF_CLASS(i->code) == BPF_ST ? a : x;
			break;
		case BPF_ALU:
			a = alu(BPF_OP(i->code), a, src, &bad);
			break;
		case BPF_JMP:
			if (BPF_OP(i->code) == BPF_JA)
				pc += i->k;
			else
				pc += jump_taken(BPF_OP(i->code), a, src, &bad) ? i->jt : i->jf;
			break;
		case BPF_RET:
			return BPF_RVAL(i->code) == BPF_A ? a : i->k;
		case BPF_MISC:
			if (BPF_MISCOP(i->code) == BPF_TAX)
				x = a;
			else
				a = x;
			break;
		}
	}
	return SECCOMP_RET_KILL_PROCESS;
}

static bool allowed(uint32_t ret)
{
	uint32_t action = ret & SECCOMP_RET_ACTION_FULL;

	return action == SECCOMP_RET_ALLOW || action == SECCOMP_RET_LOG;
}

/*
 * The first of late_calls that one of the thread's filters does not allow, or
 * NULL. A process of one thread installs no filter for another (TSYNC).
 */
static const struct late_call *first_denied(const struct dump_ctx *d, int top)
{
	for (size_t c = 0; c < ARRAY_SIZE(late_calls); c++) {
		if (late_calls[c].others && d->nr_threads == 1)
			continue;
		struct seccomp_data data = {
			.nr = late_calls[c].nr,
			.arch = AUDIT_ARCH_X86_64,
			.args = { late_calls[c].arg0 },
		};

		for (int i = top; i >= 0; i = d->filters[i].prev) {
			const struct seccomp_prog *p = &d->filters[i];

			if (!allowed(bpf_run(p->insns, p->len / sizeof(struct sock_filter), &data)))
				return &late_calls[c];
		}
	}
	return NULL;
}

int seccomp_check_early(const struct dump_ctx *d, const struct thread *t)
{
	const struct late_call *c = first_denied(d, t->seccomp.top);

	if (!c)
		return 0;
	return fail(-EOPNOTSUPP, "thread %d has seccomp filters, neither no_new_privs nor "
		    "CAP_SYS_ADMIN, and a filter that does not allow %s, which the restore makes "
		    "after installing them; memdump cannot restore it", t->tid, c->name);
}
