/* t-writer: threads that write memory continuously, to check that an
 * image reflects ONE instant (all threads frozen before memory is read).
 *
 * Each of NTH threads owns NPG pages of one region and sweeps over them
 * forever: gen++, then for each page p: word[0] = gen, word[511] = gen.
 * In writing order the words of a thread's area therefore always read
 * g+1 ... g+1 g ... g (at most one boundary, values differing by one).
 * A torn image (memory copied while a thread runs) shows more boundaries
 * or bigger differences.
 *
 * usage: t-writer DIR [NTH] [thp]           (default 2 threads; thp: the
 *                                           region 2 MiB-aligned, MADV_HUGEPAGE)
 *        t-writer --check FILE NTH          (FILE = raw dump of the region)
 * READY <pid> <addr> <len> <nthreads> */
#include "tlib.h"
#include <pthread.h>
#include <stdbool.h>

#define NPG 2048                 /* 8 MB per thread */
#define AREA (NPG * T_PAGE)
#define W (T_PAGE / 8)

static volatile int stop;

/* Returns NULL if the area (words in writing order) is consistent. */
static const char *check_area(const volatile uint64_t *a, uint64_t *gen_out)
{
	static char why[160];
	uint64_t first = a[0], bounds = 0, prev = first;
	for (size_t p = 0; p < NPG; p++)
		for (int k = 0; k < 2; k++) {
			uint64_t v = a[p * W + (k ? W - 1 : 0)];
			if (v != prev) {
				if (v + 1 != prev || ++bounds > 1) {
					snprintf(why, sizeof(why),
						 "page %zu word %d: %" PRIu64 " after %" PRIu64
						 " (first %" PRIu64 ", %" PRIu64 " boundaries)",
						 p, k ? (int)W - 1 : 0, v, prev, first, bounds + 1);
					return why;
				}
				prev = v;
			}
		}
	if (first == 0) {
		snprintf(why, sizeof(why), "area never written");
		return why;
	}
	*gen_out = first;
	return NULL;
}

static void *writer(void *arg)
{
	volatile uint64_t *a = arg;
	uint64_t g = 0;
	while (!stop) {
		g++;
		for (size_t p = 0; p < NPG; p++) {
			a[p * W] = g;
			a[p * W + W - 1] = g;
		}
	}
	return NULL;
}

static int check_file(const char *f, int nth)
{
	FILE *fp = fopen(f, "r");
	static uint64_t buf[AREA / 8];
	if (!fp) {
		perror(f);
		return 2;
	}
	for (int t = 0; t < nth; t++) {
		uint64_t gen;
		if (fread(buf, 1, AREA, fp) != AREA) {
			printf("FAIL short file\n");
			return 1;
		}
		const char *why = check_area(buf, &gen);
		if (why) {
			printf("FAIL thread %d area torn: %s\n", t, why);
			return 1;
		}
		printf("thread %d area: generation %" PRIu64 "\n", t, gen);
	}
	printf("PASS\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--check"))
		return check_file(argv[2], argc > 3 ? atoi(argv[3]) : 2);
	t_init(argc, argv, SA_RESTART);
	int nth = argc > 2 ? atoi(argv[2]) : 2;
	bool thp = argc > 3 && !strcmp(argv[3], "thp");
	size_t huge = 2UL << 20;
	uint8_t *r = t_mmap(nth * AREA + (thp ? huge : 0), PROT_READ | PROT_WRITE, MAP_PRIVATE);
	pthread_t pt[16];

	if (thp) {	/* AREA is a multiple of 2 MiB: every area is huge pages */
		r = (uint8_t *)(((uintptr_t)r + huge - 1) & ~(huge - 1));
		if (madvise(r, nth * AREA, MADV_HUGEPAGE))
			t_fail("madvise(MADV_HUGEPAGE): %s", strerror(errno));
	}

	for (int t = 0; t < nth; t++)
		pthread_create(&pt[t], NULL, writer, r + t * AREA);
	/* wait until every area has completed at least one sweep */
	for (int t = 0; t < nth; t++)
		while (!((volatile uint64_t *)(r + t * AREA))[AREA / 8 - 1])
			t_sleep_ms(1);
	t_ready("%p %lu %d", (void *)r, (unsigned long)(nth * AREA), nth);
	t_wait_usr1();
	stop = 1;
	for (int t = 0; t < nth; t++)
		pthread_join(pt[t], NULL);
	t_check_common();
	for (int t = 0; t < nth; t++) {
		uint64_t gen;
		const char *why = check_area((uint64_t *)(r + t * AREA), &gen);
		if (why)
			t_fail("thread %d area inconsistent: %s", t, why);
	}
	t_pass(NULL);
}
