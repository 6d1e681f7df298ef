/* t-threads: main + 4 threads. Every thread keeps known values in the
 * callee-saved registers rbx, r12-r15 and in xmm8/xmm9 inside an asm loop
 * (either sleeping via raw nanosleep syscalls or spinning in user mode),
 * plus a patterned array on its stack, a __thread variable and an alternate
 * signal stack of its own. After SIGUSR1 each thread checks its registers,
 * stack, TLS, alternate stack, rseq registration (sched_getcpu) and TID;
 * where the CPU has protection keys, every thread's PKRU (a key allocated
 * write-disabled makes it non-default: it lives at the end of the XSAVE area).
 * READY <pid> <tid1> <tid2> <tid3> <tid4> */
#include "tlib.h"
#include <pthread.h>
#include <stddef.h>

#define NTH 4
#define SEED 0x5eed0003ULL

static volatile int stop;              /* set by main once SIGUSR1 seen */
static __thread uint64_t tls_val;
static pthread_barrier_t bar;

struct th {
	pthread_t pt;
	int id;
	pid_t tid;
	char why[160];                 /* empty = ok */
};
static struct th th[NTH + 1];
static char altstacks[NTH + 1][16384];
static int has_pku;
static unsigned int pkru_want;

static unsigned int rdpkru(void)
{
	unsigned int eax, edx;

	__asm__ volatile(".byte 0x0f, 0x01, 0xee" : "=a"(eax), "=d"(edx) : "c"(0));
	return eax;
}

/* The values a thread keeps in registers, out of in[] and into out[]. */
#define LOAD_R13_TO_XMM9			\
	"mov 16(%[in]), %%r13\n\t"		\
	"mov 24(%[in]), %%r14\n\t"		\
	"mov 32(%[in]), %%r15\n\t"		\
	"movq 40(%[in]), %%xmm8\n\t"		\
	"movq 48(%[in]), %%xmm9\n\t"
#define STORE_REGS				\
	"mov %%rbx, 0(%[out])\n\t"		\
	"mov %%r12, 8(%[out])\n\t"		\
	"mov %%r13, 16(%[out])\n\t"		\
	"mov %%r14, 24(%[out])\n\t"		\
	"mov %%r15, 32(%[out])\n\t"		\
	"movq %%xmm8, 40(%[out])\n\t"		\
	"movq %%xmm9, 48(%[out])\n\t"

/* Load registers from in[], loop until *flag != 0, store them to out[].
 * spin=0: each iteration is a 5 ms nanosleep syscall (rax, rcx, r11,
 * rdi, rsi clobbered); spin=1: pure user mode, r12 counts iterations and
 * rbx += r13 every iteration. */
static void reg_loop(const uint64_t *in, uint64_t *out, volatile int *flag, int spin)
{
	static const struct timespec ts = { 0, 5000000 };

	if (!spin)
		asm volatile(
			"mov 0(%[in]), %%rbx\n\t"
			"mov 8(%[in]), %%r12\n\t"
			LOAD_R13_TO_XMM9
			"1:\n\t"
			"mov $35, %%eax\n\t"         /* SYS_nanosleep */
			"mov %[ts], %%rdi\n\t"
			"xor %%esi, %%esi\n\t"
			"syscall\n\t"
			"cmpl $0, (%[flag])\n\t"
			"je 1b\n\t"
			STORE_REGS
			:
			: [in] "r"(in), [out] "r"(out), [flag] "r"(flag), [ts] "r"(&ts)
			: "rax", "rcx", "rdi", "rsi", "r11", "rbx", "r12", "r13", "r14",
			  "r15", "xmm8", "xmm9", "memory", "cc");
	else
		asm volatile(
			"mov 0(%[in]), %%rbx\n\t"
			"xor %%r12, %%r12\n\t"
			LOAD_R13_TO_XMM9
			"1:\n\t"
			"add $1, %%r12\n\t"
			"add %%r13, %%rbx\n\t"
			"pause\n\t"
			"cmpl $0, (%[flag])\n\t"
			"je 1b\n\t"
			STORE_REGS
			:
			: [in] "r"(in), [out] "r"(out), [flag] "r"(flag)
			: "rbx", "r12", "r13", "r14", "r15", "xmm8", "xmm9", "memory", "cc");
}

/* glibc registers each thread's rseq area (2.35+); the kernel keeps its
 * cpu_id up to date, -1 once unregistered. 0 where glibc has none. */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

static int rseq_cpu_id(void)
{
	if (!&__rseq_size || !__rseq_size)
		return 0;
	return *(volatile int32_t *)((char *)__builtin_thread_pointer() + __rseq_offset + 4);
}

/* Returns 0 or fills t->why. */
static void run_and_check(struct th *t, volatile int *flag)
{
	uint64_t in[7], out[7], stk[1024];
	int spin = t->id == 1;

	for (int i = 0; i < 7; i++)
		in[i] = t_mix(SEED + t->id * 100 + i);
	t_fill(stk, sizeof(stk), SEED + t->id);
	tls_val = t_mix(SEED ^ t->id);
	stack_t ss = { .ss_sp = altstacks[t->id], .ss_size = sizeof(altstacks[0]) }, cur;
	if (sigaltstack(&ss, NULL))
		t_fail("sigaltstack");

	if (t->id)
		pthread_barrier_wait(&bar);
	reg_loop(in, out, flag, spin);

	static const char *rn[7] = { "rbx", "r12", "r13", "r14", "r15", "xmm8", "xmm9" };
	for (int i = 0; i < 7; i++) {
		uint64_t want = in[i];
		if (spin && i == 0)
			want = in[0] + out[8 / 8] * in[2];     /* rbx = rbx0 + n*r13 */
		if (spin && i == 1)
			continue;                              /* iteration counter */
		if (out[i] != want) {
			snprintf(t->why, sizeof(t->why), "thread %d: %s = %#" PRIx64 ", want %#" PRIx64,
				 t->id, rn[i], out[i], want);
			return;
		}
	}
	if (sigaltstack(NULL, &cur) || cur.ss_sp != ss.ss_sp || cur.ss_size != ss.ss_size ||
	    cur.ss_flags != 0)
		snprintf(t->why, sizeof(t->why), "thread %d: alternate stack %p+%zu flags %d, want %p+%zu",
			 t->id, cur.ss_sp, cur.ss_size, cur.ss_flags, ss.ss_sp, ss.ss_size);
	else if (rseq_cpu_id() < 0)
		snprintf(t->why, sizeof(t->why), "thread %d: rseq cpu_id %d: not registered", t->id,
			 rseq_cpu_id());
	else if (t_verify(stk, sizeof(stk), SEED + t->id))
		snprintf(t->why, sizeof(t->why), "thread %d: stack array differs", t->id);
	else if (tls_val != t_mix(SEED ^ t->id))
		snprintf(t->why, sizeof(t->why), "thread %d: TLS value differs", t->id);
	else if ((pid_t)syscall(SYS_gettid) != t->tid)
		snprintf(t->why, sizeof(t->why), "thread %d: tid %ld != %d", t->id,
			 (long)syscall(SYS_gettid), (int)t->tid);
	else if (has_pku && rdpkru() != pkru_want)
		snprintf(t->why, sizeof(t->why), "thread %d: PKRU %#x, want %#x", t->id, rdpkru(),
			 pkru_want);
}

static void *worker(void *arg)
{
	struct th *t = arg;
	t->tid = (pid_t)syscall(SYS_gettid);
	run_and_check(t, &stop);
	return NULL;
}

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);
	pthread_barrier_init(&bar, NULL, NTH + 1);
	th[0].id = 0;
	th[0].tid = t_pid;
	if (pkey_alloc(0, PKEY_DISABLE_WRITE) >= 0) {	/* threads inherit the PKRU */
		has_pku = 1;
		pkru_want = rdpkru();
	}
	for (int i = 1; i <= NTH; i++) {
		th[i].id = i;
		if (pthread_create(&th[i].pt, NULL, worker, &th[i]))
			t_fail("pthread_create");
	}
	pthread_barrier_wait(&bar);
	t_ready("%d %d %d %d", (int)th[1].tid, (int)th[2].tid, (int)th[3].tid, (int)th[4].tid);

	/* main thread: same register loop, ends on SIGUSR1 */
	run_and_check(&th[0], (volatile int *)&t_usr1);
	stop = 1;
	for (int i = 1; i <= NTH; i++)
		pthread_join(th[i].pt, NULL);
	t_check_common();
	for (int i = 0; i <= NTH; i++)
		if (th[i].why[0])
			t_fail("%s", th[i].why);
	t_pass(NULL);
}
