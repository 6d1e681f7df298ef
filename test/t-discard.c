/* t-discard: memory as t-pattern (64 MiB); on SIGUSR2 it discards the whole
 * region (MADV_DONTNEED) and fills it again, as a program freeing and
 * reusing memory would. A --snapshot dump that sees the discard before it
 * saved those pages must fail, not write zeros (cases-snapshot.sh).
 * READY <pid> <addr> <len> <seed> */
#include "tlib.h"

#define SEED 0x5eed0009ULL

static volatile sig_atomic_t usr2;

static void on_usr2(int sig)
{
	(void)sig;
	usr2 = 1;
}

int main(int argc, char **argv)
{
	size_t len = 64 << 20;
	struct sigaction sa = { .sa_handler = on_usr2, .sa_flags = SA_RESTART };
	uint8_t *big;
	const void *bad;

	t_init(argc, argv, SA_RESTART);
	sigaction(SIGUSR2, &sa, NULL);
	big = t_mmap(len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_POPULATE);
	t_fill(big, len, SEED);
	t_ready("%p %zu %#llx", (void *)big, len, (unsigned long long)SEED);
	while (!t_usr1) {
		if (usr2) {
			if (madvise(big, len, MADV_DONTNEED))
				t_fail("madvise: %s", strerror(errno));
			t_fill(big, len, SEED);
			usr2 = 0;
		}
		t_sleep_ms(10);
	}
	t_check_common();
	if ((bad = t_verify(big, len, SEED)))
		t_fail("region differs at %p", bad);
	t_pass(NULL);
}
