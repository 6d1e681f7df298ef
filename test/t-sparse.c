/* t-sparse: a 1 GB anonymous reservation with only a few scattered pages
 * touched. Untouched pages must stay zero and must not be materialized
 * (RSS of the region stays small after restore).
 * READY <pid> <addr> <len> <seed> <touched-page-stride> */
#include "tlib.h"

#define SEED 0x5eed0002ULL
#define LEN (1UL << 30)
#define STRIDE (1UL << 24)   /* one touched page every 16 MB -> 64 pages */

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--gen"))
		return t_gen(argc, argv);
	t_init(argc, argv, SA_RESTART);

	uint8_t *r = t_mmap(LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE);
	for (size_t off = 0; off < LEN; off += STRIDE)
		t_fill(r + off + T_PAGE, T_PAGE, SEED);   /* 2nd page of each 16 MB */

	t_ready("%p %lu %#llx %lu", (void *)r, LEN, (unsigned long long)SEED, STRIDE);
	t_wait_usr1();
	t_check_common();

	char rss[128];
	if (t_smaps_field(r, "Rss:", rss, sizeof(rss)))
		t_fail("region %p not in smaps", (void *)r);
	long rss_kb = atol(rss);
	/* 64 touched pages = 256 kB; allow THP/readahead slack */
	if (rss_kb > 32 * 1024)
		t_fail("region RSS is %ld kB, untouched pages were materialized", rss_kb);

	for (size_t off = 0; off < LEN; off += STRIDE) {
		const void *bad = t_verify(r + off + T_PAGE, T_PAGE, SEED);
		if (bad)
			t_fail("touched page differs at %p", bad);
		/* sample untouched pages: first, third and last of each 16 MB */
		static const size_t probe[] = { 0, 2 * T_PAGE, STRIDE - T_PAGE };
		for (unsigned i = 0; i < 3; i++) {
			const uint64_t *w = (const void *)(r + off + probe[i]);
			for (size_t k = 0; k < T_PAGE / 8; k++)
				if (w[k])
					t_fail("untouched page %p is not zero", (void *)w);
		}
	}
	t_pass(NULL);
}
