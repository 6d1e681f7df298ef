/*
 * t-lazytree DIR [MB [split]]: a tree that goes on while it is migrated.
 *
 * P fills MB MiB (default 16) of private memory with a pattern, then forks
 * A and B: the pattern is shared copy-on-write by the three. A writes pages
 * 3, 11, 19, ... of the first quarter with a seed of its own (copies of its
 * own), P pages 5, 13, 21, ... of the second quarter; B starts a second
 * thread T. Each of P, A, B and T beats every 20 ms: beat k rewrites page
 * k % 64 of its own ring with the pattern of (its id, k) and appends "k NS"
 * to DIR/beat-ID (ID p, a, b, t; NS the inode of its PID namespace: the host
 * it runs on in the tests). Each writes the checksum of the shared region as
 * it sees it to DIR/sum-ID once set up.
 * An inaccessible page on each side of the region, mapped before the forks,
 * keeps it one VMA of the same bounds in the three. With "split", P then makes
 * the region's last page read-only: its VMA is split in two, and A's and B's
 * are no longer one of P's, nor a part of one.
 * READY <P> <A> <B>
 *
 * SIGUSR1 to P: P checks its memory and ring, passes SIGUSR1 to A and B;
 * each checks its pid, parent, memory and ring (B stops T first and checks
 * its ring too), prints "ok ID SUM beats=K" (SUM the checksum now) and exits
 * 0; P reaps them and prints "ok p SUM ..." and PASS.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "tlib.h"

#define RING		64
#define SEED_BASE	0x1a2ee5eedULL
#define SEED_A		0xa0a0aULL
#define SEED_P		0xf0f0fULL

static uint8_t *mem;
static size_t npages;

struct beater {
	char id;
	uint8_t *ring;
	uint64_t k;
	int fd;
	volatile int stop;
};

static uint64_t ring_seed(char id, uint64_t k)
{
	return ((uint64_t)(unsigned char)id << 48) ^ 0x7ee0000000ULL ^ k;
}

static bool a_writes(size_t i) { return i < npages / 4 && i % 8 == 3; }
static bool p_writes(size_t i) { return i >= npages / 4 && i < npages / 2 && i % 8 == 5; }

static void write_pages(bool (*which)(size_t), uint64_t seed)
{
	for (size_t i = 0; i < npages; i++)
		if (which(i))
			t_fill(mem + i * T_PAGE, T_PAGE, seed);
}

/* FNV-1a over the shared region, 8 bytes at a time. */
static uint64_t mem_sum(void)
{
	const uint64_t *w = (const uint64_t *)mem;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < npages * T_PAGE / 8; i++)
		h = (h ^ w[i]) * 0x100000001b3ULL;
	return h;
}

static void check_mem(char id)
{
	for (size_t i = 0; i < npages; i++) {
		uint64_t seed = id == 'a' && a_writes(i) ? SEED_A :
				id == 'p' && p_writes(i) ? SEED_P : SEED_BASE;

		if (t_verify(mem + i * T_PAGE, T_PAGE, seed))
			t_fail("%c: shared page %zu differs", id, i);
	}
}

/* The start of the mapping that holds addr, from /proc/self/maps (0: none). */
static uintptr_t vma_start(const void *addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi;
	char line[512];
	uintptr_t at = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo <= (uintptr_t)addr &&
		    (uintptr_t)addr < hi)
			at = lo;
	if (f)
		fclose(f);
	return at;
}

static void beater_init(struct beater *b, char id)
{
	char path[4096];

	b->id = id;
	b->k = 0;
	b->stop = 0;
	b->ring = t_mmap(RING * T_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
	snprintf(path, sizeof(path), "%s/beat-%c", t_dir, id);
	b->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (b->fd < 0)
		t_fail("cannot open %s", path);
}

static void beat(struct beater *b)
{
	struct stat st;
	char line[64];
	uint64_t k = ++b->k;
	int n;

	t_fill(b->ring + (k % RING) * T_PAGE, T_PAGE, ring_seed(b->id, k));
	if (stat("/proc/self/ns/pid", &st))
		st.st_ino = 0;
	n = snprintf(line, sizeof(line), "%" PRIu64 " %lu\n", k, (unsigned long)st.st_ino);
	if (write(b->fd, line, (size_t)n) != n)
		t_fail("%c: cannot write the beat file", b->id);
}

/* Every ring page holds the last beat that wrote it. */
static void check_ring(const struct beater *b)
{
	for (uint64_t i = 0; i < RING; i++) {
		const uint8_t *p = b->ring + i * T_PAGE;
		uint64_t last = b->k - (b->k + RING - i) % RING;

		if (b->k < i || !last) {	/* never written */
			for (size_t j = 0; j < T_PAGE; j++)
				if (p[j])
					t_fail("%c: ring page %" PRIu64 " written", b->id, i);
			continue;
		}
		if (t_verify(p, T_PAGE, ring_seed(b->id, last)))
			t_fail("%c: ring page %" PRIu64 " is not beat %" PRIu64 "'s", b->id, i, last);
	}
}

static void write_sum(char id)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/sum-%c", t_dir, id);
	f = fopen(path, "w");
	if (!f || fprintf(f, "%016" PRIx64 "\n", mem_sum()) < 0 || fclose(f))
		t_fail("%c: cannot write %s", id, path);
}

static void *thread_beats(void *arg)
{
	struct beater *b = arg;

	while (!b->stop) {
		beat(b);
		t_sleep_ms(20);
	}
	return NULL;
}

static void __attribute__((noreturn)) child(char id, pid_t parent, int ready)
{
	struct beater b, t;
	pthread_t th;

	t_pid = getpid();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(3);
	if (id == 'a')
		write_pages(a_writes, SEED_A);
	write_sum(id);
	beater_init(&b, id);
	if (id == 'b') {
		beater_init(&t, 't');
		if (pthread_create(&th, NULL, thread_beats, &t))
			t_fail("b: cannot start its thread");
	}
	if (write(ready, &id, 1) != 1)
		_exit(4);
	close(ready);
	while (!t_usr1) {
		beat(&b);
		t_sleep_ms(20);
	}
	if (id == 'b') {
		t.stop = 1;
		pthread_join(th, NULL);
		check_ring(&t);
	}
	t_check_common();
	if (getppid() != parent)
		t_fail("%c: parent is %d, not %d", id, (int)getppid(), (int)parent);
	check_mem(id);
	check_ring(&b);
	printf("ok %c %016" PRIx64 " beats=%" PRIu64 "\n", id, mem_sum(), b.k);
	fflush(stdout);
	_exit(0);
}

static pid_t start_child(char id)
{
	int ready[2];
	pid_t pid, parent = getpid();
	char c;

	if (pipe(ready))
		t_fail("pipe: %s", strerror(errno));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		t_fail("fork: %s", strerror(errno));
	if (pid == 0) {
		close(ready[0]);
		child(id, parent, ready[1]);
	}
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1)
		t_fail("child %c did not start", id);
	close(ready[0]);
	return pid;
}

static void reap(pid_t pid, char id)
{
	int st;

	kill(pid, SIGUSR1);
	if (waitpid(pid, &st, 0) != pid)
		t_fail("waitpid %c (%d): %s", id, (int)pid, strerror(errno));
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		t_fail("%c (%d) ended with status %#x", id, (int)pid, st);
}

int main(int argc, char **argv)
{
	size_t len = (argc > 2 ? strtoul(argv[2], NULL, 0) : 16) << 20;
	struct beater b;
	pid_t a, bb;

	t_init(argc, argv, 0);
	npages = len / T_PAGE;
	mem = t_mmap(len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
	t_fill(mem, len, SEED_BASE);
	/* a page already there is another VMA as well */
	mmap(mem - T_PAGE, T_PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	mmap(mem + len, T_PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	a = start_child('a');
	bb = start_child('b');
	if (argc > 3 && !strcmp(argv[3], "split") &&
	    (mprotect(mem + len - T_PAGE, T_PAGE, PROT_READ) || vma_start(mem + len - T_PAGE) !=
	     (uintptr_t)(mem + len - T_PAGE)))
		t_fail("p: cannot split its VMA of the shared region");
	write_pages(p_writes, SEED_P);
	write_sum('p');
	beater_init(&b, 'p');
	t_ready("%d %d", (int)a, (int)bb);
	while (!t_usr1) {
		beat(&b);
		t_sleep_ms(20);
	}
	t_check_common();
	check_mem('p');
	check_ring(&b);
	reap(a, 'a');
	reap(bb, 'b');
	printf("ok p %016" PRIx64 " beats=%" PRIu64 "\n", mem_sum(), b.k);
	t_pass(NULL);
}
