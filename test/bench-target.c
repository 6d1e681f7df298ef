/*
 * bench-target: the process the dump and restore benchmarks use.
 *
 *   bench-target MiB [DONEFILE]
 *
 * Maps MiB of anonymous memory (2 MiB aligned and MADV_HUGEPAGE, transparent
 * huge pages, when BENCH_THP is set), fills every page with a pattern unique to it,
 * prints "READY <pid>" and sleeps. On SIGUSR1 it reads all of that memory
 * once, checks it, and writes "done <CLOCK_REALTIME ns> ok|bad" to DONEFILE
 * (written to a temporary name and renamed, so readers see it whole).
 *
 * Its main loop is a heartbeat, every 2 ms: on SIGUSR2 it prints "GAP <us>",
 * the longest time between two beats since the last report, which is how
 * long the process itself saw it was stopped (a dump's freeze).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t usr1, usr2;

static void on_usr1(int sig)
{
	(void)sig;
	usr1 = 1;
}

static void on_usr2(int sig)
{
	(void)sig;
	usr2 = 1;
}

static uint64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* One beat: the longest gap so far, reported and reset on SIGUSR2. */
static void beat(uint64_t *last, uint64_t *longest)
{
	uint64_t t = mono_us();

	if (t - *last > *longest)
		*longest = t - *last;
	*last = t;
	if (usr2) {
		usr2 = 0;
		printf("GAP %llu\n", (unsigned long long)*longest);
		fflush(stdout);
		*longest = 0;
	}
}

static inline uint64_t pattern(size_t i)
{
	return (i + 1) * 0x9e3779b97f4a7c15ULL;
}

static void fill(uint64_t *mem, size_t words)
{
	for (size_t i = 0; i < words; i++)
		mem[i] = pattern(i);
}

static int check(const uint64_t *mem, size_t words)
{
	for (size_t i = 0; i < words; i++)
		if (mem[i] != pattern(i))
			return -1;
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int report(const char *path, uint64_t ns, int ok)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	fprintf(f, "done %llu %s\n", (unsigned long long)ns, ok ? "ok" : "bad");
	if (fclose(f))
		return -1;
	return rename(tmp, path);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* len bytes of anonymous memory; with thp, 2 MiB aligned and in huge pages */
static uint64_t *map_memory(size_t len, int thp)
{
	const size_t huge = 2u << 20;
	size_t extra = thp ? huge : 0;
	char *p = mmap(NULL, len + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("bench-target: mmap");
		return NULL;
	}
	if (thp) {
		p = (char *)(((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1));
		if (madvise(p, len, MADV_HUGEPAGE)) {
			perror("bench-target: madvise(MADV_HUGEPAGE)");
			return NULL;
		}
	}
	return (uint64_t *)p;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 0) : 0;
	const char *done = argc > 2 ? argv[2] : NULL;
	size_t words = (mib << 20) / sizeof(uint64_t);
	const char *thp = getenv("BENCH_THP");
	uint64_t *mem;

	if (!mib) {
		fprintf(stderr, "usage: bench-target MiB [DONEFILE]\n");
		return 2;
	}
	mem = map_memory(mib << 20, thp && *thp);
	if (!mem)
		return 2;
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	fill(mem, words);
	printf("READY %d\n", getpid());
	fflush(stdout);
	uint64_t last = mono_us(), longest = 0;

	for (;;) {
		while (!usr1) {
			sleep_ms(2);
			beat(&last, &longest);
		}
		usr1 = 0;
		int ok = check(mem, words) == 0;

		if (done && report(done, now_ns(), ok))
			perror("bench-target: cannot write the done file");
	}
}
