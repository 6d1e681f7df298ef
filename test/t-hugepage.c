/* t-hugepage: an 8 MB, 2 MB-aligned anonymous region with
 * MADV_HUGEPAGE (transparent huge pages), fully written; after DIR:
 *   hugetlb:        also a private MAP_HUGETLB region of one 2 MiB page
 *   hugetlb-noreserve: instead two pages MAP_NORESERVE, the first written
 *                   (the second never touched: it takes no huge page)
 *   hugetlb-shared: also a shared MAP_HUGETLB region of two 2 MiB pages and a
 *                   child (fork) sharing it; on SIGUSR1 the parent writes a
 *                   word there that the child answers in it (shared after the
 *                   restore), each checking its mapping is hugetlb of 2 MiB
 *                   pages (smaps KernelPageSize, VmFlags ht)
 * Exits 2 if the system has no free hugetlb page.
 * After restore the data must match and the VMA must still carry the
 * MADV_HUGEPAGE flag ("hg" in VmFlags).
 * READY <pid> <addr> <len> <seed> <hugetlb-addr-or-0> [<child>] */
#include "tlib.h"
#include <stdbool.h>
#include <sys/wait.h>

#define SEED 0x5eed0006ULL
#define HP (2UL << 20)
#define LEN (4 * HP)
#define SHLEN (2 * HP)

/* NULL if addr is MAP_HUGETLB memory of 2 MiB pages, else what is wrong. */
static const char *not_hugetlb(const void *addr)
{
	char kps[64] = "", fl[256] = "";

	if (t_smaps_field(addr, "KernelPageSize:", kps, sizeof(kps)) ||
	    t_smaps_field(addr, "VmFlags:", fl, sizeof(fl)))
		return "not in smaps";
	if (!strstr(fl, " ht"))
		return "no VmFlags ht";
	if (strtoul(kps, NULL, 10) != 2048)
		return "KernelPageSize not 2048 kB";
	return NULL;
}

/* The child: answers the parent's word (slot 0) in slot 1: 1 ok, 2 not hugetlb. */
static void __attribute__((noreturn)) child_loop(volatile uint64_t *w)
{
	for (;;) {
		if (w[0] == 0xfeedULL) {
			w[1] = not_hugetlb((const void *)w) ? 2 : 1;
			w[0] = 0;
		}
		usleep(10000);
	}
}

/* The parent's side of the exchange, once restored. */
static void exchange(volatile uint64_t *w, pid_t child)
{
	w[1] = 0;
	w[0] = 0xfeedULL;
	for (int i = 0; i < 1000 && !w[1]; i++)
		usleep(10000);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	if (w[1] != 1)
		t_fail(w[1] ? "the child's mapping is not hugetlb of 2 MiB pages" :
		       "the child did not answer through the shared hugetlb memory");
}

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
	bool shared = argc > 2 && !strcmp(argv[2], "hugetlb-shared");
	bool nores = argc > 2 && !strcmp(argv[2], "hugetlb-noreserve");
	size_t hlen = shared || nores ? SHLEN : HP;
	pid_t child = 0;

	if (argc > 2 && (shared || nores || !strcmp(argv[2], "hugetlb"))) {
		h = mmap(NULL, hlen, PROT_READ | PROT_WRITE,
			 (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS | MAP_HUGETLB |
			 (nores ? MAP_NORESERVE : 0), -1, 0);
		if (h == MAP_FAILED) {
			fprintf(stderr, "no hugetlb page: %s\n", strerror(errno));
			return 2;
		}
		t_fill(h, nores ? HP : hlen, SEED + 1);
	}
	if (shared) {
		child = fork();
		if (child < 0)
			t_fail("fork: %s", strerror(errno));
		if (!child)
			child_loop((volatile uint64_t *)(h + HP));
	}

	char thp[128] = "";
	t_smaps_field(r, "AnonHugePages:", thp, sizeof(thp));
	if (shared)
		t_ready("%p %lu %#llx %p %d", (void *)r, LEN, (unsigned long long)SEED, (void *)h,
			(int)child);
	else
		t_ready("%p %lu %#llx %p", (void *)r, LEN, (unsigned long long)SEED, (void *)h);
	fprintf(stderr, "AnonHugePages before dump:%s\n", thp);
	t_wait_usr1();
	t_check_common();

	const void *bad = t_verify(r, LEN, SEED);
	if (bad)
		t_fail("THP region differs at %p", bad);
	if (h && (bad = t_verify(h, shared || nores ? HP : hlen, SEED + 1)))
		t_fail("hugetlb region differs at %p", bad);
	if (h && not_hugetlb(h))
		t_fail("hugetlb region: %s", not_hugetlb(h));
	if (shared)
		exchange((volatile uint64_t *)(h + HP), child);
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
