/* t-noreserve: a 64 GiB MAP_NORESERVE reservation (as the JVM, V8 and ASan's
 * shadow make) with a few pages touched, and a region with MADV_DONTFORK,
 * MADV_WIPEONFORK and MADV_DONTDUMP. After restore the reservation still has
 * VmFlags "nr", the madvise flags are still there, the content is the same.
 * With "onfault" as second argument it also holds an mlock2(MLOCK_ONFAULT)
 * region, which must still show VmFlags lo lf.
 * READY <pid> <addr> <len> */
#include "tlib.h"

#define SEED 0x5eed0077ULL
#define LEN (64UL << 30)
#define STRIDE (1UL << 32)	/* one touched page every 4 GiB -> 16 pages */
#define MADV_LEN (16 * T_PAGE)

static void expect_flags(const void *p, const char *const *flags, int n)
{
	char v[256], all[260], f[8];

	if (t_smaps_field(p, "VmFlags:", v, sizeof(v)))
		t_fail("region %p not in smaps", p);
	snprintf(all, sizeof(all), " %s ", v);
	for (int i = 0; i < n; i++) {
		snprintf(f, sizeof(f), " %s ", flags[i]);
		if (!strstr(all, f))
			t_fail("region %p lost VmFlags %s: %s", p, flags[i], v);
	}
}

int main(int argc, char **argv)
{
	static const char *const nr[] = { "nr" };
	static const char *const madv[] = { "dc", "wf", "dd" };
	static const char *const onfault[] = { "lo", "lf" };
	uint8_t *l = NULL;

	if (argc > 1 && !strcmp(argv[1], "--gen"))
		return t_gen(argc, argv);
	t_init(argc, argv, SA_RESTART);

	uint8_t *r = t_mmap(LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE);
	for (size_t off = 0; off < LEN; off += STRIDE)
		t_fill(r + off, T_PAGE, SEED);
	uint8_t *m = t_mmap(MADV_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	t_fill(m, MADV_LEN, SEED + 1);
	if (madvise(m, MADV_LEN / 2, MADV_DONTFORK) || madvise(m, MADV_LEN / 2, MADV_DONTDUMP) ||
	    madvise(m, MADV_LEN / 2, MADV_WIPEONFORK))
		t_fail("madvise: %s", strerror(errno));
	if (argc > 2 && !strcmp(argv[2], "onfault")) {
		l = t_mmap(4 * T_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE);
		if (syscall(SYS_mlock2, l, 4 * T_PAGE, 1 /* MLOCK_ONFAULT */))
			t_fail("mlock2: %s", strerror(errno));
	}
	expect_flags(r, nr, 1);
	expect_flags(m, madv, 3);

	t_ready("%p %lu", (void *)r, LEN);
	t_wait_usr1();
	t_check_common();

	expect_flags(r, nr, 1);
	expect_flags(m, madv, 3);
	if (l)
		expect_flags(l, onfault, 2);
	for (size_t off = 0; off < LEN; off += STRIDE)
		if (t_verify(r + off, T_PAGE, SEED))
			t_fail("touched page at %p differs", (void *)(r + off));
	if (t_verify(m, MADV_LEN, SEED + 1))
		t_fail("the madvise region differs");
	t_pass(NULL);
}
