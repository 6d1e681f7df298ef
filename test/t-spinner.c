/* t-spinner: a busy loop that keeps its whole state in registers (a 64-bit
 * LCG value and an iteration counter in general purpose registers, a
 * double counter in an SSE register). On SIGUSR1 the LCG value must equal
 * the value computed independently by jumping the LCG n steps ahead, and
 * the double counter must equal n.
 * READY <pid> */
#include "tlib.h"

#define A 6364136223846793005ULL
#define C 1442695040888963407ULL
#define SEED 0x5eed0008ULL

/* x_n = A^n x_0 + C (A^(n-1) + ... + 1), by square-and-multiply */
static uint64_t lcg_jump(uint64_t x, uint64_t n)
{
	uint64_t acc_a = 1, acc_c = 0, a = A, c = C;
	while (n) {
		if (n & 1) {
			acc_a *= a;
			acc_c = acc_c * a + c;
		}
		c = (a + 1) * c;
		a *= a;
		n >>= 1;
	}
	return acc_a * x + acc_c;
}

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);
	uint64_t x = SEED, n = 0;
	double d = 0.0;

	t_ready(NULL);
	while (!t_usr1) {
		x = x * A + C;
		n++;
		d += 1.0;
	}
	t_check_common();
	uint64_t want = lcg_jump(SEED, n);
	if (x != want)
		t_fail("LCG register state wrong after %" PRIu64 " steps: %#" PRIx64 " != %#" PRIx64,
		       n, x, want);
	if (d != (double)n)
		t_fail("SSE counter %.0f != %" PRIu64, d, n);
	if (n < 1000)
		t_fail("loop ran only %" PRIu64 " iterations", n);
	char info[64];
	snprintf(info, sizeof(info), "iterations=%" PRIu64, n);
	t_pass(info);
}
