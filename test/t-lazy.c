/* t-lazy: targets for restore --lazy-pages (cases-lazy.sh). Every region is
 * filled with the address-derived pattern; SIGUSR1 (sent right after the
 * restore, while the memory is still being filled) makes it act at once and
 * check every byte.
 * usage: t-lazy DIR MODE [MB]
 *   threads  MB in the main thread, 8 MiB more per each of 4 threads; each
 *            thread checks its own region (concurrent faults)
 *   tree     threads, and a forked child with 2 threads and a region of its
 *            own: the child gets SIGUSR1 too and exits 0 when all is exact,
 *            the region it shares copy-on-write with its parent too
 *   fork     on SIGUSR1 forks at once; the child checks the whole region
 *            (pages its parent never touched come from the FORK event's
 *            uffd) while the parent rewrites its first MiB; both exact; a
 *            MADV_WIPEONFORK region reads zeros in the child only
 *   madv     on SIGUSR1 at once: 1 MiB made read-only, 1 MiB PROT_NONE for
 *            a while (both exact), madvise(DONTNEED) of 1 MiB (reads zeros),
 *            munmap of 2 MiB then a new mapping there (zeros), mremap of
 *            4 MiB to a new address (its bytes move with it), the rest exact
 * READY <pid> */
#include "tlib.h"
#include <pthread.h>
#include <sys/wait.h>

#define SEED 0x1a290001ULL
#define TMB (8UL << 20)
#define MIB (1UL << 20)

static volatile int go;
static volatile int bad_threads;

struct thr {
	uint8_t *mem;
	uint64_t seed;
	volatile int done;
};

static void *thread_main(void *arg)
{
	struct thr *t = arg;

	while (!go)
		t_sleep_ms(1);
	if (t_verify(t->mem, TMB, t->seed))
		__sync_fetch_and_add(&bad_threads, 1);
	t->done = 1;
	return NULL;
}

static void start_threads(struct thr *t, int n, uint64_t seed)
{
	for (int i = 0; i < n; i++) {
		pthread_t th;

		t[i].mem = t_mmap(TMB, PROT_READ | PROT_WRITE, MAP_PRIVATE);
		t[i].seed = seed + (uint64_t)i;
		t_fill(t[i].mem, TMB, t[i].seed);
		if (pthread_create(&th, NULL, thread_main, &t[i]))
			exit(2);
		pthread_detach(th);
	}
}

static int threads_done(struct thr *t, int n)
{
	for (int i = 0; i < n; i++)
		while (!t[i].done)
			t_sleep_ms(1);
	return bad_threads;
}

/* The pattern of orig over len bytes at p (a region moved there from orig). */
static const void *verify_moved(const uint8_t *p, size_t len, uint64_t seed, uintptr_t orig)
{
	const uint64_t *w = (const uint64_t *)p;

	for (size_t i = 0; i < len / 8; i++)
		if (w[i] != t_word(seed, orig + i * 8))
			return &w[i];
	return NULL;
}

static const void *verify_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return p + i;
	return NULL;
}

static void child_usr1(int sig)
{
	(void)sig;
	go = 1;
}

/* The child also checks the parent's region it shares copy-on-write since the fork. */
static void tree_child(const uint8_t *big, size_t len)
{
	struct thr t[2];
	uint8_t *mem = t_mmap(TMB, PROT_READ | PROT_WRITE, MAP_PRIVATE);

	signal(SIGUSR1, child_usr1);
	t_fill(mem, TMB, SEED + 100);
	start_threads(t, 2, SEED + 200);
	while (!go)
		t_sleep_ms(1);
	_exit(t_verify(mem, TMB, SEED + 100) || threads_done(t, 2) ? 1 :
	      t_verify(big, len, SEED) ? 2 : 0);
}

static uint8_t *wipe;	/* fork: 2 MiB of MADV_WIPEONFORK */

static void mode_fork(uint8_t *big, size_t len)
{
	pid_t c = fork();
	int st;

	if (c < 0)
		t_fail("fork: %m");
	if (c == 0)
		_exit(t_verify(big, len, SEED) ? 1 : verify_zero(wipe, 2 * MIB) ? 2 : 0);
	if (t_verify(wipe, 2 * MIB, SEED + 50))
		t_fail("the parent's MADV_WIPEONFORK region differs");
	memset(big, 0x5a, MIB);	/* the parent's writes: not the child's */
	for (size_t i = 0; i < MIB; i++)
		if (big[i] != 0x5a)
			t_fail("parent's write lost at %zu", i);
	if (t_verify(big + MIB, len - MIB, SEED))
		t_fail("parent's region differs after fork");
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st))
		t_fail("forked child's region differs (status %#x)", st);
}

static void mode_madv(uint8_t *big, size_t len)
{
	uint8_t *moved;
	const void *bad;

	if (len < 32 * MIB)
		t_fail("madv wants 32 MiB or more");
	/* protections changed under pages still to come: filled all the same */
	if (mprotect(big + 12 * MIB, MIB, PROT_READ) || mprotect(big + 14 * MIB, MIB, PROT_NONE))
		t_fail("mprotect: %m");
	t_sleep_ms(1000);	/* the handler passes over them meanwhile */
	if (mprotect(big + 14 * MIB, MIB, PROT_READ | PROT_WRITE))
		t_fail("mprotect back: %m");
	if (madvise(big + MIB, MIB, MADV_DONTNEED))
		t_fail("madvise: %m");
	if (munmap(big + 4 * MIB, 2 * MIB))
		t_fail("munmap: %m");
	if (mmap(big + 4 * MIB, 2 * MIB, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != big + 4 * MIB)
		t_fail("mmap: %m");
	moved = mremap(big + 8 * MIB, 4 * MIB, 4 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED,
		       big + len + 64 * MIB);
	if (moved == MAP_FAILED)
		t_fail("mremap: %m");
	if ((bad = verify_zero(big + MIB, MIB)))
		t_fail("DONTNEED range not zero at %p", bad);
	if ((bad = verify_zero(big + 4 * MIB, 2 * MIB)))
		t_fail("remapped range not zero at %p", bad);
	if ((bad = verify_moved(moved, 4 * MIB, SEED, (uintptr_t)(big + 8 * MIB))))
		t_fail("mremapped range differs at %p", bad);
	if (t_verify(big, MIB, SEED) || t_verify(big + 2 * MIB, 2 * MIB, SEED) ||
	    t_verify(big + 6 * MIB, 2 * MIB, SEED) || t_verify(big + 12 * MIB, len - 12 * MIB, SEED))
		t_fail("the rest of the region differs");
}

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);
	const char *mode = argc > 2 ? argv[2] : "threads";
	size_t len = (argc > 3 ? strtoull(argv[3], NULL, 0) : 64) << 20;
	uint8_t *big = t_mmap(len, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	struct thr t[4];
	int nthr = 0, st;
	pid_t child = 0;

	t_fill(big, len, SEED);
	if (!strcmp(mode, "threads") || !strcmp(mode, "tree")) {
		nthr = 4;
		start_threads(t, nthr, SEED + 10);
	}
	if (!strcmp(mode, "fork")) {
		/* above the big region: the handler's address-order fill reaches it last */
		wipe = mmap(big + len + 256 * MIB, 2 * MIB, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (wipe != big + len + 256 * MIB)
			t_fail("mmap above the region: %m");
		t_fill(wipe, 2 * MIB, SEED + 50);
		if (madvise(wipe, 2 * MIB, MADV_WIPEONFORK))
			t_fail("madvise(MADV_WIPEONFORK): %m");
	}
	if (!strcmp(mode, "tree")) {
		child = fork();
		if (child == 0)
			tree_child(big, len);
	}
	t_ready("%s", mode);
	t_wait_usr1();
	go = 1;
	t_check_common();
	if (child)
		kill(child, SIGUSR1);
	if (!strcmp(mode, "fork"))
		mode_fork(big, len);
	else if (!strcmp(mode, "madv"))
		mode_madv(big, len);
	else if (t_verify(big, len, SEED))
		t_fail("main region differs");
	if (nthr && threads_done(t, nthr))
		t_fail("%d threads found their region differs", bad_threads);
	if (child && (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st)))
		t_fail("the tree's child failed (status %#x)", st);
	t_pass(mode);
}
