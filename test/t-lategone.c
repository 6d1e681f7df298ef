/*
 * t-lategone DIR: memory that changes its mappings while a pre-dump reads it
 * after the thaw (dump/pagelate.c).
 *
 * One 64 MiB private region R filled with seed S1, in eight 8 MiB parts.
 * SIGUSR2 (once), while the pre-dump is held half way through its pages
 * (the parts below 32 MiB read, the others not):
 *   part 0 rewritten with seed S2 (read already: the next dump takes it),
 *   part 6 unmapped, its first half mapped again and filled with seed S3
 *   (a new mapping), its second half left unmapped (read as zeros),
 *   part 7 made PROT_NONE (read through /proc/PID/mem: the next dump
 *   finds it unwritten and takes it from the pre-dump, which must hold it),
 * then "STEP 1". SIGUSR1: part 7 made writable again and every part checked
 * (part 6's second half still unmapped): PASS.
 * READY <pid> <addr>
 */
#include <stdbool.h>
#include <sys/mman.h>

#include "tlib.h"

#define PART	(8UL << 20)
#define PARTS	8
#define S1	0x1a7e0001ULL
#define S2	0x1a7e0002ULL
#define S3	0x1a7e0003ULL

static volatile sig_atomic_t usr2;
static void on_usr2(int sig) { (void)sig; usr2 = 1; }

static uint8_t *part(uint8_t *r, int i)
{
	return r + i * PART;
}

static void step(uint8_t *r)
{
	t_fill(part(r, 0), PART, S2);
	if (munmap(part(r, 6), PART))
		t_fail("munmap: %s", strerror(errno));
	if (mmap(part(r, 6), PART / 2, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) != part(r, 6))
		t_fail("mmap again: %s", strerror(errno));
	t_fill(part(r, 6), PART / 2, S3);
	if (mprotect(part(r, 7), PART, PROT_NONE))
		t_fail("mprotect: %s", strerror(errno));
	printf("STEP 1\n");
	fflush(stdout);
}

static void check_parts(uint8_t *r, bool stepped)
{
	unsigned char vec;

	if (stepped && mprotect(part(r, 7), PART, PROT_READ | PROT_WRITE))
		t_fail("mprotect back: %s", strerror(errno));
	for (int i = 0; i < PARTS; i++) {
		if (stepped && i == 6) {
			if (t_verify(part(r, 6), PART / 2, S3))
				t_fail("the part mapped again differs");
			if (mincore(part(r, 6) + PART / 2, T_PAGE, &vec) == 0 || errno != ENOMEM)
				t_fail("the unmapped half of part 6 is mapped");
			continue;
		}
		if (t_verify(part(r, i), PART, stepped && i == 0 ? S2 : S1))
			t_fail("part %d differs", i);
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_usr2 };
	bool stepped = false;
	uint8_t *r;

	t_init(argc, argv, SA_RESTART);
	sigaction(SIGUSR2, &sa, NULL);
	r = t_mmap(PARTS * PART, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
	t_fill(r, PARTS * PART, S1);
	t_ready("%p", (void *)r);
	while (!t_usr1) {
		if (usr2 && !stepped) {
			step(r);
			stepped = true;
		}
		t_sleep_ms(10);
	}
	t_check_common();
	check_parts(r, stepped);
	t_pass(NULL);
}
