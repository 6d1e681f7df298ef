/* t-incr: memory for incremental dumps.
 * usage: t-incr DIR MB STRIDE [uffd|uffd-late|keep]
 * A private anonymous region of MB MiB filled with a pattern (seed SEED),
 * and a 64 MiB reservation with one page touched. Each SIGUSR2 is a step g
 * (1, 2, ...): the pages p of the region with p % STRIDE == g - 1 are
 * rewritten with seed SEED + g, one more page of the reservation is written,
 * and at step 1 the pages with p % STRIDE == STRIDE - 1 are dropped
 * (MADV_DONTNEED: zeros from then on); then "STEP g" is printed.
 * SIGUSR1 checks every byte against what the steps made.
 * "uffd": the program also holds a userfaultfd of its own (uffd-late: from
 * step 1 on); "keep": no page
 * is dropped (for scripts/bench-incremental); "grow": each step also maps a
 * new 1 MiB region and fills it with seed SEED + 200 + g; "uffd-wp-away": the
 * region is registered (write-protect mode, nothing protected) with a
 * userfaultfd that a detached grandchild holds, the program's own fd closed.
 * READY <pid> <addr> <len> <stride> */
#include "tlib.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <stdbool.h>
#include <linux/userfaultfd.h>

#define SEED	0x1acc0001ULL
#define SPARSE	(64UL << 20)

static volatile sig_atomic_t t_usr2;
static void on_usr2(int sig) { (void)sig; t_usr2 = 1; }

#define GROW_MAX	64
#define GROW_LEN	(1UL << 20)

static uint8_t *big, *sparse, *grown[GROW_MAX];
static size_t len, stride;
static int steps;
static bool keep, uffd_late, grow;

/* The seed page p holds after the steps so far; 0: zeros. */
static uint64_t page_seed(size_t p)
{
	if (!keep && steps >= 1 && p % stride == stride - 1 && (size_t)steps < stride)
		return 0;
	if (p % stride < (size_t)steps)
		return SEED + p % stride + 1;
	return SEED;
}

static void step(void)
{
	size_t pages = len / T_PAGE;

	steps++;
	for (size_t p = steps - 1; p < pages; p += stride)
		t_fill(big + p * T_PAGE, T_PAGE, SEED + steps);
	if (steps == 1 && !keep)
		for (size_t p = stride - 1; p < pages; p += stride)
			madvise(big + p * T_PAGE, T_PAGE, MADV_DONTNEED);
	t_fill(sparse + steps * (1UL << 20), T_PAGE, SEED + 100 + steps);
	if (grow && steps <= GROW_MAX) {
		grown[steps - 1] = t_mmap(GROW_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE);
		t_fill(grown[steps - 1], GROW_LEN, SEED + 200 + steps);
	}
	if (uffd_late && steps == 1 && syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY) < 0)
		t_fail("userfaultfd: %s", strerror(errno));
	printf("STEP %d\n", steps);
	fflush(stdout);
}

static void check(void)
{
	static const uint8_t zero[T_PAGE];
	const void *bad;

	for (size_t p = 0; p < len / T_PAGE; p++) {
		uint64_t s = page_seed(p);
		const uint8_t *a = big + p * T_PAGE;

		if (s ? (bad = t_verify(a, T_PAGE, s)) != NULL : memcmp(a, zero, T_PAGE) != 0)
			t_fail("page %zu differs (want seed %#llx)", p, (unsigned long long)s);
	}
	if ((bad = t_verify(sparse, T_PAGE, SEED + 100)))
		t_fail("the first sparse page differs");
	for (int g = 1; g <= steps; g++)
		if ((bad = t_verify(sparse + g * (1UL << 20), T_PAGE, SEED + 100 + g)))
			t_fail("sparse page of step %d differs", g);
	for (int g = 1; grow && g <= steps && g <= GROW_MAX; g++)
		if ((bad = t_verify(grown[g - 1], GROW_LEN, SEED + 200 + g)))
			t_fail("the region mapped at step %d differs", g);
	for (size_t off = T_PAGE; off < SPARSE; off += T_PAGE)
		if (off % (1UL << 20) && memcmp(sparse + off, zero, 8))
			t_fail("untouched sparse page at %#zx is not zero", off);
}

/*
 * The region registered with a userfaultfd that only a grandchild holds:
 * the grandchild lives until this process is gone (its pipe closes).
 */
static void give_uffd_away(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .range = { (uintptr_t)big, len },
				       .mode = UFFDIO_REGISTER_MODE_WP };
	int uffd = syscall(SYS_userfaultfd, O_CLOEXEC), p[2];
	pid_t child;
	char c;

	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) || ioctl(uffd, UFFDIO_REGISTER, &reg) ||
	    pipe(p))
		t_fail("userfaultfd registration: %s", strerror(errno));
	child = fork();
	if (child == 0) {
		if (fork() == 0) {
			close(p[1]);
			while (read(p[0], &c, 1) < 0 && errno == EINTR)
				;
			_exit(0);
		}
		_exit(0);
	}
	if (child < 0 || waitpid(child, NULL, 0) != child)
		t_fail("fork: %s", strerror(errno));
	close(p[0]);
	close(uffd);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_usr2 };

	if (argc > 1 && !strcmp(argv[1], "--gen"))
		return t_gen(argc, argv);
	t_init(argc, argv, SA_RESTART);
	if (argc < 4)
		t_fail("usage: t-incr DIR MB STRIDE [uffd]");
	len = strtoull(argv[2], NULL, 0) << 20;
	stride = strtoull(argv[3], NULL, 0);
	if (stride < 2)
		t_fail("STRIDE must be 2 or more");
	if (argc > 4 && !strcmp(argv[4], "uffd") &&
	    syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY) < 0)
		t_fail("userfaultfd: %s", strerror(errno));
	keep = argc > 4 && !strcmp(argv[4], "keep");
	uffd_late = argc > 4 && !strcmp(argv[4], "uffd-late");
	sigaction(SIGUSR2, &sa, NULL);
	big = t_mmap(len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_POPULATE);
	sparse = t_mmap(SPARSE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE);
	t_fill(big, len, SEED);
	t_fill(sparse, T_PAGE, SEED + 100);
	grow = argc > 4 && !strcmp(argv[4], "grow");
	if (argc > 4 && !strcmp(argv[4], "uffd-wp-away"))
		give_uffd_away();
	t_ready("%p %zu %zu", (void *)big, len, stride);
	while (!t_usr1) {
		if (t_usr2) {
			t_usr2 = 0;
			step();
		}
		t_sleep_ms(5);
	}
	check();
	t_pass(NULL);
}
