/* t-shared: shared memory that must stay shared after restore.
 *   memfd: a memfd (kept open) mapped twice MAP_SHARED
 *   shm:   MAP_SHARED|MAP_ANONYMOUS, plus a second view of the same
 *          object created with mremap(old_size = 0)
 * Data must match, and a write through one view must be visible through
 * the other view (and through the memfd fd).
 * READY <pid> */
#include "tlib.h"
#include <sys/stat.h>

#define SEED 0x5eed0007ULL
#define LEN (256 * T_PAGE)

static void check_pair(uint8_t *a, uint8_t *b, const char *what)
{
	const void *bad = t_verify(a, LEN, SEED);
	if (bad)
		t_fail("%s: data differs at %p", what, bad);
	/* b maps the same object, so it shows a's pattern (filled via a) */
	if (memcmp(a, b, LEN))
		t_fail("%s: the two views differ", what);
	volatile uint64_t *pa = (uint64_t *)(a + 3 * T_PAGE), *pb = (uint64_t *)(b + 3 * T_PAGE);
	uint64_t old = *pa;
	*pa = ~old;
	int ok = *pb == ~old;
	*pa = old;
	if (!ok)
		t_fail("%s: views are no longer shared", what);
}

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);

	int mfd = memfd_create("t-shared", 0);
	if (mfd < 0 || ftruncate(mfd, LEN))
		t_fail("memfd: %s", strerror(errno));
	uint8_t *m1 = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	uint8_t *m2 = mmap(NULL, LEN, PROT_READ, MAP_SHARED, mfd, 0);
	uint8_t *s1 = t_mmap(LEN, PROT_READ | PROT_WRITE, MAP_SHARED);
	if (m1 == MAP_FAILED || m2 == MAP_FAILED)
		t_fail("mmap memfd: %s", strerror(errno));
	t_fill(m1, LEN, SEED);
	t_fill(s1, LEN, SEED);
	/* t_word depends on the address: views differ in address, so compare
	 * views with memcmp and the pattern only through the first view */
	uint8_t *s2 = mremap(s1, 0, LEN, MREMAP_MAYMOVE);
	if (s2 == MAP_FAILED)
		t_fail("mremap dup: %s", strerror(errno));

	t_ready(NULL);
	t_wait_usr1();
	t_check_common();

	check_pair(m1, m2, "memfd");
	check_pair(s1, s2, "shared anon");
	struct stat st;
	if (fstat(mfd, &st) || st.st_size != (off_t)LEN)
		t_fail("memfd fd: size %lld", (long long)st.st_size);
	static uint8_t buf[LEN];
	if (pread(mfd, buf, LEN, 0) != (ssize_t)LEN || memcmp(buf, m1, LEN))
		t_fail("memfd fd content differs from its mapping");
	char p[5];
	if (t_maps_perms(m2, p) || strcmp(p, "r--s"))
		t_fail("second memfd view perms are not r--s");
	t_pass(NULL);
}
