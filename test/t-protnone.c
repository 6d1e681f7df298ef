/* t-protnone: mappings with unusual protections.
 *   none_data: written with a pattern, then mprotect(PROT_NONE): the data
 *              must be preserved although the process cannot read it
 *   guard:     PROT_NONE, never touched
 *   ro:        written, then PROT_READ
 *   mixed:     one VMA split into rw- / r-- / --- / rw- parts
 * READY <pid> <none_data-addr> <len> <seed>  (for read-mem checks) */
#include "tlib.h"

#define SEED 0x5eed0005ULL
#define LEN (16 * T_PAGE)

static void want_perms(void *a, const char *w, const char *what)
{
	char p[5];
	if (t_maps_perms(a, p))
		t_fail("%s at %p missing from /proc/self/maps", what, a);
	if (strcmp(p, w))
		t_fail("%s at %p has perms %s, want %s", what, a, p, w);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--gen"))
		return t_gen(argc, argv);
	t_init(argc, argv, SA_RESTART);

	/* reserve one area with gaps so VMAs do not merge */
	uint8_t *area = t_mmap(10 * LEN, PROT_NONE, MAP_PRIVATE);
	uint8_t *none_data = area, *guard = area + 2 * LEN, *ro = area + 4 * LEN;
	uint8_t *mixed = area + 6 * LEN;   /* 4 * LEN long */
	munmap(area + LEN, LEN);
	munmap(area + 3 * LEN, LEN);
	munmap(area + 5 * LEN, LEN);

	mprotect(none_data, LEN, PROT_READ | PROT_WRITE);
	t_fill(none_data, LEN, SEED);
	mprotect(none_data, LEN, PROT_NONE);

	mprotect(ro, LEN, PROT_READ | PROT_WRITE);
	t_fill(ro, LEN, SEED + 1);
	mprotect(ro, LEN, PROT_READ);

	mprotect(mixed, 4 * LEN, PROT_READ | PROT_WRITE);
	t_fill(mixed, 4 * LEN, SEED + 2);
	mprotect(mixed + LEN, LEN, PROT_READ);
	mprotect(mixed + 2 * LEN, LEN, PROT_NONE);

	t_ready("%p %lu %#llx", (void *)none_data, LEN, (unsigned long long)SEED);
	t_wait_usr1();
	t_check_common();

	want_perms(none_data, "---p", "none_data");
	want_perms(guard, "---p", "guard");
	want_perms(ro, "r--p", "ro");
	want_perms(mixed, "rw-p", "mixed[0]");
	want_perms(mixed + LEN, "r--p", "mixed[1]");
	want_perms(mixed + 2 * LEN, "---p", "mixed[2]");
	want_perms(mixed + 3 * LEN, "rw-p", "mixed[3]");
	char p[5];
	if (!t_maps_perms(area + LEN, p))
		t_fail("unmapped gap at %p is mapped", (void *)(area + LEN));

	if (t_verify(ro, LEN, SEED + 1))
		t_fail("read-only region differs");
	if (t_verify(mixed, LEN, SEED + 2) || t_verify(mixed + LEN, LEN, SEED + 2) ||
	    t_verify(mixed + 3 * LEN, LEN, SEED + 2))
		t_fail("mixed region differs");
	mprotect(none_data, LEN, PROT_READ);
	if (t_verify(none_data, LEN, SEED))
		t_fail("PROT_NONE region lost its data");
	mprotect(mixed + 2 * LEN, LEN, PROT_READ);
	if (t_verify(mixed + 2 * LEN, LEN, SEED + 2))
		t_fail("PROT_NONE part of mixed region lost its data");
	mprotect(guard, LEN, PROT_READ);
	for (size_t i = 0; i < LEN; i++)
		if (guard[i])
			t_fail("guard region not zero");
	t_pass(NULL);
}
