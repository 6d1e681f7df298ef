/* t-guard: guard pages (MADV_GUARD_INSTALL) in a filled anonymous region.
 *   region: 16 pages with a pattern; pages 4-5 and 15 are guard pages
 * After restore the guard pages must still fault (SIGSEGV, caught), the
 * other pages keep their bytes, and a guard page stays a guard after
 * MADV_DONTNEED (guards survive zapping, plain PROT_NONE-less pages do not).
 * READY <pid> <region-addr> <len> <seed>; exits 2 when the kernel has no guards. */
#include <setjmp.h>

#include "tlib.h"

#define SEED 0x5eed0009ULL
#define LEN (16 * T_PAGE)
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

static sigjmp_buf jb;

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

/* 1 when reading p faults */
static int faults(volatile uint8_t *p)
{
	struct sigaction sa = { .sa_handler = on_segv }, old;
	int hit = 0;

	sigaction(SIGSEGV, &sa, &old);
	if (sigsetjmp(jb, 1))
		hit = 1;
	else
		(void)*p;
	sigaction(SIGSEGV, &old, NULL);
	return hit;
}

static void want_guard(uint8_t *p, int guard, const char *what)
{
	if (faults(p) != guard)
		t_fail("%s at %p %s", what, (void *)p, guard ? "does not fault: not a guard page"
							: "faults: it is no guard page");
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--gen"))
		return t_gen(argc, argv);
	t_init(argc, argv, SA_RESTART);

	uint8_t *region = t_mmap(LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE);

	t_fill(region, LEN, SEED);
	if (madvise(region + 4 * T_PAGE, 2 * T_PAGE, MADV_GUARD_INSTALL)) {
		printf("SKIP no MADV_GUARD_INSTALL: %s\n", strerror(errno));
		return 2;
	}
	if (madvise(region + 15 * T_PAGE, T_PAGE, MADV_GUARD_INSTALL))
		t_fail("MADV_GUARD_INSTALL: %s", strerror(errno));
	want_guard(region + 4 * T_PAGE, 1, "region[4]");

	t_ready("%p %lu %#llx", (void *)region, LEN, (unsigned long long)SEED);
	t_wait_usr1();
	t_check_common();

	for (int i = 0; i < 16; i++) {
		int guard = i == 4 || i == 5 || i == 15;
		const void *bad;

		want_guard(region + i * T_PAGE, guard, "region page");
		if (!guard && (bad = t_verify(region + i * T_PAGE, T_PAGE, SEED)))
			t_fail("region differs at %p", bad);
	}
	madvise(region, LEN, MADV_DONTNEED);
	want_guard(region + 5 * T_PAGE, 1, "region[5] after MADV_DONTNEED");
	want_guard(region + 6 * T_PAGE, 0, "region[6] after MADV_DONTNEED");
	t_pass("guards fault, data intact");
}
