/*
 * demo-target: the process `make demo` dumps and restores.
 *
 *   demo-target [MiB]      (default 64)
 *
 * Fills MiB of anonymous memory with a pattern, starts two worker threads
 * that each re-check their half of it, and every 0.5 s checks the whole of
 * it and prints "tick N, checksum OK ...". A wrong byte prints
 * "tick N, checksum BAD ..." and exits 1.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define NR_WORKERS	2

static uint64_t *mem;
static size_t nr_words;
static atomic_ulong passes[NR_WORKERS];
static atomic_long bad_word = -1;

static inline uint64_t pattern(size_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ULL;

	return x ^ (x >> 29);
}

static void fill(void)
{
	for (size_t i = 0; i < nr_words; i++)
		mem[i] = pattern(i);
}

/* Index of the first wrong word in [from, to), or -1. */
static long first_bad(size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (mem[i] != pattern(i))
			return i;
	return -1;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

static void *worker(void *arg)
{
	long id = (long)arg;
	size_t half = nr_words / NR_WORKERS;

	for (;;) {
		long bad = first_bad(id * half, (id + 1) * half);

		if (bad >= 0)
			atomic_store(&bad_word, bad);
		atomic_fetch_add(&passes[id], 1);
		sleep_ms(100);
	}
	return NULL;
}

static int start_workers(void)
{
	pthread_t t;

	for (long i = 0; i < NR_WORKERS; i++) {
		if (pthread_create(&t, NULL, worker, (void *)i)) {
			fprintf(stderr, "demo-target: cannot start thread\n");
			return -1;
		}
		pthread_detach(t);
	}
	return 0;
}

static int tick(unsigned long n)
{
	long bad = first_bad(0, nr_words);

	if (bad < 0)
		bad = atomic_load(&bad_word);
	if (bad >= 0) {
		printf("tick %lu, checksum BAD at byte %#lx\n", n, bad * 8);
		return -1;
	}
	printf("tick %lu, checksum OK (pid %d, %zu MiB, worker passes %lu/%lu)\n", n, getpid(),
	       nr_words * 8 >> 20, atomic_load(&passes[0]), atomic_load(&passes[1]));
	return 0;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 0) : 64;

	setvbuf(stdout, NULL, _IOLBF, 0);
	nr_words = (mib << 20) / sizeof(*mem);
	mem = mmap(NULL, mib << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!mib || mem == MAP_FAILED) {
		fprintf(stderr, "demo-target: cannot map %zu MiB\n", mib);
		return 2;
	}
	fill();
	printf("demo-target %d: %zu MiB filled, %d threads checking it\n", getpid(), mib,
	       NR_WORKERS);
	if (start_workers())
		return 2;
	for (unsigned long n = 1;; n++) {
		if (tick(n))
			return 1;
		sleep_ms(500);
	}
}
