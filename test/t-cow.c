/* t-cow [MIB [deep]]: memory shared copy-on-write between a parent and its child.
 * The parent fills MIB MiB (default 32) of private anonymous memory, forks;
 * then the child writes pages 3, 11, 19, ... of the first quarter and the
 * parent pages 5, 13, 21, ... of the second quarter; every other page is
 * untouched since fork (one physical page in both).
 * deep: the child then forks a grandchild that writes nothing (it shares
 * every page with the child).
 * grown: once the child is set up, the parent maps a page of its own right
 * below the memory, which the kernel merges into the memory's VMA: the
 * parent's VMA is then larger than the child's.
 * READY <parent> <child> <addr> <pages> [<grandchild>]
 * On SIGUSR1 the parent checks its bytes, sends SIGUSR1 to the child, which
 * checks its own and exits 0 or 1; the parent prints PASS or FAIL. Neither
 * writes the memory before it is told: the runner compares their pagemaps. */
#include "tlib.h"
#include <stdbool.h>
#include <sys/wait.h>

#define SEED_BASE	0xc0c0ULL
#define SEED_CHILD	0xc41dULL
#define SEED_PARENT	0xfa7eULL
#define SEED_BELOW	0xbe10ULL

static char *mem;
static size_t npages;

static bool child_writes(size_t i) { return i < npages / 4 && i % 8 == 3; }
static bool parent_writes(size_t i) { return i >= npages / 4 && i < npages / 2 && i % 8 == 5; }

static void write_pages(bool (*which)(size_t), uint64_t seed)
{
	for (size_t i = 0; i < npages; i++)
		if (which(i))
			t_fill(mem + i * T_PAGE, T_PAGE, seed);
}

/* NULL, or what is wrong with this process's pages (child: its view). */
static const char *check(bool child)
{
	static char why[128];

	for (size_t i = 0; i < npages; i++) {
		uint64_t seed = child ? (child_writes(i) ? SEED_CHILD : 0) :
				(parent_writes(i) ? SEED_PARENT : 0);
		const void *bad = t_verify(mem + i * T_PAGE, T_PAGE, seed ? seed : SEED_BASE);

		if (bad) {
			snprintf(why, sizeof(why), "%s: page %zu differs at %p", child ? "child" :
				 "parent", i, bad);
			return why;
		}
	}
	return NULL;
}

/* The child's memory checked; with a grandchild, its too (it checks on SIGUSR1). */
static void __attribute__((noreturn)) check_and_exit(pid_t grandchild)
{
	int status = 0;

	if (grandchild > 0 && (kill(grandchild, SIGUSR1) ||
			       waitpid(grandchild, &status, 0) != grandchild))
		_exit(2);
	if (check(true)) {
		fprintf(stderr, "%s\n", check(true));
		_exit(1);
	}
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 3);
}

static void child_main(int ready, bool deep)
{
	pid_t g = 0;

	write_pages(child_writes, SEED_CHILD);
	if (deep) {
		g = fork();
		if (g < 0)
			_exit(2);
		if (g == 0) {
			t_wait_usr1();
			check_and_exit(0);
		}
	}
	if (write(ready, &g, sizeof(g)) != sizeof(g))
		_exit(2);
	close(ready);
	t_wait_usr1();
	check_and_exit(g);
}

/* A page of the parent's right below mem, merged into mem's VMA (checked in maps). */
static char *grow_below(void)
{
	char *below = mmap(mem - T_PAGE, T_PAGE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	char line[256], want[32];
	bool merged = false;
	FILE *f;

	if (below != mem - T_PAGE)
		t_fail("cannot map the page below the memory: %s", strerror(errno));
	t_fill(below, T_PAGE, SEED_BELOW);
	snprintf(want, sizeof(want), "%lx-%lx ", (unsigned long)below,
		 (unsigned long)(mem + npages * T_PAGE));
	f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f))
		merged = merged || !strncmp(line, want, strlen(want));
	if (f)
		fclose(f);
	if (!merged)
		t_fail("the page below the memory was not merged into its VMA");
	return below;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 2 ? strtoul(argv[2], NULL, 0) : 32;
	int p[2], status;
	pid_t child, g;
	bool deep = argc > 3 && !strcmp(argv[3], "deep");
	bool grown = argc > 3 && !strcmp(argv[3], "grown");
	char *below = NULL;
	const char *why;

	t_init(argc, argv, 0);
	npages = (mib << 20) / T_PAGE;
	mem = t_mmap(npages * T_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	t_fill(mem, npages * T_PAGE, SEED_BASE);
	if (pipe(p))
		t_fail("pipe: %s", strerror(errno));
	fflush(stdout);
	child = fork();
	if (child < 0)
		t_fail("fork: %s", strerror(errno));
	if (child == 0) {
		t_pid = getpid();
		close(p[0]);
		child_main(p[1], deep);
	}
	close(p[1]);
	if (read(p[0], &g, sizeof(g)) != sizeof(g))
		t_fail("the child did not write its pages");
	write_pages(parent_writes, SEED_PARENT);
	if (grown)
		below = grow_below();
	if (deep)
		t_ready("%d %p %zu %d", (int)child, (void *)mem, npages, (int)g);
	else
		t_ready("%d %p %zu", (int)child, (void *)mem, npages);
	t_wait_usr1();
	t_check_common();
	why = check(false);
	if (!why && below && t_verify(below, T_PAGE, SEED_BELOW))
		why = "parent: the page below the memory differs";
	if (kill(child, SIGUSR1))
		t_fail("kill child %d: %s", (int)child, strerror(errno));
	if (waitpid(child, &status, 0) != child)
		t_fail("waitpid: %s", strerror(errno));
	if (why)
		t_fail("%s", why);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		t_fail("the child's memory differs (status %#x)", status);
	t_pass(NULL);
}
