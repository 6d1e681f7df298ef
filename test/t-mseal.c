/* t-mseal: mseal()ed mappings (VmFlags sl).
 *   whole: 4 rw pages with a pattern, sealed
 *   ro:    2 read-only pages with a pattern, sealed
 *   part:  8 rw pages, pages 3-4 sealed (the VMA split in three)
 * After restore every sealed range shows sl and refuses munmap, mprotect
 * and mremap (EPERM), the pages keep their bytes, and the unsealed parts of
 * part are not sealed (they can still be reprotected).
 * READY <pid>; exits 2 when the kernel has no mseal(). */
#include <sys/syscall.h>

#include "tlib.h"

#define SEED 0x5eed0024ULL
#ifndef __NR_mseal
#define __NR_mseal 462
#endif

static int sealed_flag(const void *p)
{
	char flags[256];

	if (t_smaps_field(p, "VmFlags:", flags, sizeof(flags)))
		t_fail("no smaps entry at %p", p);
	return strstr(flags, " sl") != NULL;
}

static void want_sealed(uint8_t *p, size_t len, const char *what)
{
	if (!sealed_flag(p))
		t_fail("%s at %p: VmFlags without sl", what, (void *)p);
	if (munmap(p, len) == 0 || errno != EPERM)
		t_fail("%s: munmap of a sealed range did not fail with EPERM", what);
	if (mprotect(p, len, PROT_READ | PROT_EXEC) == 0 || errno != EPERM)
		t_fail("%s: mprotect of a sealed range did not fail with EPERM", what);
	if (mremap(p, len, len * 2, MREMAP_MAYMOVE) != MAP_FAILED || errno != EPERM)
		t_fail("%s: mremap of a sealed range did not fail with EPERM", what);
	if (t_verify(p, len, SEED))
		t_fail("%s: its bytes differ", what);
}

static void seal(void *p, size_t len)
{
	if (syscall(__NR_mseal, p, len, 0)) {
		if (errno == ENOSYS) {
			printf("SKIP no mseal(): %s\n", strerror(errno));
			exit(2);
		}
		t_fail("mseal: %s", strerror(errno));
	}
}

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);

	uint8_t *whole = t_mmap(4 * T_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	uint8_t *ro = t_mmap(2 * T_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	uint8_t *part = t_mmap(8 * T_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE);

	t_fill(whole, 4 * T_PAGE, SEED);
	t_fill(ro, 2 * T_PAGE, SEED);
	t_fill(part, 8 * T_PAGE, SEED);
	if (mprotect(ro, 2 * T_PAGE, PROT_READ))
		t_fail("mprotect: %s", strerror(errno));
	seal(whole, 4 * T_PAGE);
	seal(ro, 2 * T_PAGE);
	seal(part + 3 * T_PAGE, 2 * T_PAGE);

	t_ready("%p %p %p", (void *)whole, (void *)ro, (void *)part);
	t_wait_usr1();
	t_check_common();

	want_sealed(whole, 4 * T_PAGE, "whole");
	want_sealed(ro, 2 * T_PAGE, "ro");
	want_sealed(part + 3 * T_PAGE, 2 * T_PAGE, "part[3-4]");
	if (sealed_flag(part) || sealed_flag(part + 5 * T_PAGE))
		t_fail("part: its unsealed pages show sl");
	if (t_verify(part, 3 * T_PAGE, SEED) || t_verify(part + 5 * T_PAGE, 3 * T_PAGE, SEED))
		t_fail("part: its unsealed bytes differ");
	if (mprotect(part, T_PAGE, PROT_READ) || mprotect(part + 7 * T_PAGE, T_PAGE, PROT_READ))
		t_fail("part: its unsealed pages cannot be reprotected: %s", strerror(errno));
	t_pass("sealed ranges sealed, bytes intact");
}
