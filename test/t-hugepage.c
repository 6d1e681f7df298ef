/* t-hugepage: an 8 MB, 2 MB-aligned anonymous region with
 * MADV_HUGEPAGE (transparent huge pages), fully written; with the argument
 * `hugetlb` (after DIR) also a MAP_HUGETLB region (memdump refuses it:
 * err-hugetlb), or exits 2 if the system has no free hugetlb page.
 * After restore the data must match and the VMA must still carry the
 * MADV_HUGEPAGE flag ("hg" in VmFlags).
 * READY <pid> <addr> <len> <seed> <hugetlb-addr-or-0> */
#include "tlib.h"

#define SEED 0x5eed0006ULL
#define HP (2UL << 20)
#define LEN (4 * HP)

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--gen"))
		return t_gen(argc, argv);
	t_init(argc, argv, SA_RESTART);

	uint8_t *raw = t_mmap(LEN + HP, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	uint8_t *r = (uint8_t *)(((uintptr_t)raw + HP - 1) & ~(HP - 1));
	if (madvise(r, LEN, MADV_HUGEPAGE))
		t_fail("madvise(MADV_HUGEPAGE): %s", strerror(errno));
	t_fill(r, LEN, SEED);

	uint8_t *h = NULL;

	if (argc > 2 && !strcmp(argv[2], "hugetlb")) {
		h = mmap(NULL, HP, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
		if (h == MAP_FAILED) {
			fprintf(stderr, "no hugetlb page: %s\n", strerror(errno));
			return 2;
		}
		t_fill(h, HP, SEED + 1);
	}

	char thp[128] = "";
	t_smaps_field(r, "AnonHugePages:", thp, sizeof(thp));
	t_ready("%p %lu %#llx %p", (void *)r, LEN, (unsigned long long)SEED, (void *)h);
	fprintf(stderr, "AnonHugePages before dump:%s\n", thp);
	t_wait_usr1();
	t_check_common();

	const void *bad = t_verify(r, LEN, SEED);
	if (bad)
		t_fail("THP region differs at %p", bad);
	if (h && (bad = t_verify(h, HP, SEED + 1)))
		t_fail("hugetlb region differs at %p", bad);
	char fl[256];
	if (t_smaps_field(r, "VmFlags:", fl, sizeof(fl)))
		t_fail("THP region not found in smaps");
	if (!strstr(fl, " hg"))
		t_fail("THP region lost MADV_HUGEPAGE (VmFlags:%s)", fl);
	t_smaps_field(r, "AnonHugePages:", thp, sizeof(thp));
	char info[160];
	snprintf(info, sizeof(info), "AnonHugePages:%s hugetlb=%s", thp, h ? "yes" : "no");
	t_pass(info);
}
