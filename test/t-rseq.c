/* t-rseq: the main thread spends nearly all its time inside an rseq critical
 * section (glibc's registered rseq area, a section of ~20 ms of arithmetic),
 * counting the sections it finished and those the kernel aborted. A section
 * finished while its rseq_cs had been cleared under it (no abort, no
 * protection: what running code in the thread at a stop inside the section,
 * then putting it back, does) is counted as broken. On SIGUSR1: PASS when no
 * section was broken and at least one ran to its end after the signal.
 * READY <pid> */
#include "tlib.h"
#include <stdbool.h>
#include <sys/rseq.h>

static uint64_t broken, done, aborted;

/* One section; 1: finished with rseq_cs intact, 0: aborted, -1: finished unprotected. */
static int section(volatile struct rseq *rs)
{
	uint64_t seen = 0, loops = 20000000;

	__asm__ __volatile__ goto(
		".pushsection __rseq_cs, \"aw\"\n\t"
		".balign 32\n\t"
		"3:\n\t"
		".long 0, 0\n\t"			/* version, flags */
		".quad 1f, (2f - 1f), 4f\n\t"		/* start, length, abort */
		".popsection\n\t"
		"leaq 3b(%%rip), %%rax\n\t"
		"movq %%rax, %[cs]\n\t"
		"1:\n\t"
		"5:\n\t"
		"decq %[loops]\n\t"
		"jnz 5b\n\t"
		"movq %[cs], %%rax\n\t"
		"movq %%rax, %[seen]\n\t"
		"2:\n\t"
		".pushsection __rseq_failure, \"ax\"\n\t"
		".byte 0x0f, 0xb9, 0x3d\n\t"
		".long %c[sig]\n\t"
		"4:\n\t"
		"jmp %l[abort]\n\t"
		".popsection\n\t"
		:
		: [cs] "m" (rs->rseq_cs), [loops] "m" (loops), [seen] "m" (seen),
		  [sig] "i" (RSEQ_SIG)
		: "memory", "cc", "rax"
		: abort);
	rs->rseq_cs = 0;
	return seen ? 1 : -1;
abort:
	return 0;
}

int main(int argc, char **argv)
{
	volatile struct rseq *rs;
	uint64_t after = 0;

	t_init(argc, argv, SA_RESTART);
	if (!__rseq_size)
		t_fail("glibc registered no rseq area (glibc.pthread.rseq=0?)");
	rs = (volatile struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
	t_ready("");
	for (;;) {
		int r = section(rs);

		done += r == 1;
		aborted += r == 0;
		broken += r < 0;
		if (t_usr1 && r == 1 && ++after > 2)
			break;
	}
	t_check_common();
	if (broken)
		t_fail("%" PRIu64 " rseq sections ran to their end unprotected (%" PRIu64
		       " done, %" PRIu64 " aborted)", broken, done, aborted);
	printf("# %" PRIu64 " done, %" PRIu64 " aborted\n", done, aborted);
	t_pass(NULL);
}
