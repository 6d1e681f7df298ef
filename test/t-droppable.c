/* t-droppable: MAP_DROPPABLE memory (VmFlags dp) beside MADV_WIPEONFORK memory.
 *   drop: 4 MAP_DROPPABLE pages with a pattern
 *   wipe: 4 private pages with a pattern, MADV_WIPEONFORK
 * The kernel may drop droppable pages at any time; the restore maps them
 * MAP_DROPPABLE again, empty (as if dropped). After restore: drop shows dp
 * and reads zeros, is writable and wiped in a child; wipe keeps its bytes
 * and shows wf. Must only be checked after a restore.
 * READY <pid>; exits 2 when the kernel has no MAP_DROPPABLE. */
#include <sys/wait.h>

#include "tlib.h"

#define SEED 0x5eed0025ULL
#define LEN (4 * T_PAGE)
#ifndef MAP_DROPPABLE
#define MAP_DROPPABLE 0x08
#endif

static int has_flag(const void *p, const char *f)
{
	char flags[256];

	if (t_smaps_field(p, "VmFlags:", flags, sizeof(flags)))
		t_fail("no smaps entry at %p", p);
	return strstr(flags, f) != NULL;
}

static int zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);

	uint8_t *drop = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_DROPPABLE | MAP_ANONYMOUS, -1, 0);
	uint8_t *wipe = t_mmap(LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	pid_t child;
	int st;

	if (drop == MAP_FAILED) {
		printf("SKIP no MAP_DROPPABLE: %s\n", strerror(errno));
		return 2;
	}
	t_fill(drop, LEN, SEED);
	t_fill(wipe, LEN, SEED);
	if (madvise(wipe, LEN, MADV_WIPEONFORK))
		t_fail("MADV_WIPEONFORK: %s", strerror(errno));

	t_ready("%p %p", (void *)drop, (void *)wipe);
	t_wait_usr1();
	t_check_common();

	if (!has_flag(drop, " dp"))
		t_fail("drop: VmFlags without dp");
	if (!zero(drop, LEN))
		t_fail("drop: its pages were not restored empty");
	if (!has_flag(wipe, " wf") || has_flag(wipe, " dp"))
		t_fail("wipe: VmFlags lost wf or gained dp");
	if (t_verify(wipe, LEN, SEED))
		t_fail("wipe: its bytes differ");
	t_fill(drop, LEN, SEED);
	child = fork();
	if (child == 0)
		_exit(zero(drop, LEN) && zero(wipe, LEN) ? 0 : 1);
	if (child < 0 || waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st))
		t_fail("a child did not see both regions wiped");
	t_pass("droppable restored empty and droppable, wipe-on-fork intact");
}
