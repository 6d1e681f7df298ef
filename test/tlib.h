/* tlib.h - tiny helpers shared by the memdump test target programs.
 *
 * Protocol of every test program:
 *   argv[1]  = a scratch directory the program may create files in
 *   stdout   : "READY <pid> [extra fields]\n" once the state is set up,
 *              later exactly one of "PASS [info]" / "FAIL <reason>".
 *   SIGUSR1  : the handler only sets a flag; the main loop notices it,
 *              verifies the whole state and exits 0 (PASS) / 1 (FAIL).
 */
#ifndef TLIB_H
#define TLIB_H

#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define T_PAGE 4096UL

static volatile sig_atomic_t t_usr1;
static pid_t t_pid;
static const char *t_dir = "/tmp";

static void t_usr1_handler(int sig) { (void)sig; t_usr1 = 1; }

/* Install the SIGUSR1 flag handler; sa_flags e.g. SA_RESTART or 0. */
static inline void t_init(int argc, char **argv, int sa_flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = t_usr1_handler;
	sa.sa_flags = sa_flags;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL)) {
		perror("sigaction");
		exit(2);
	}
	if (argc > 1)
		t_dir = argv[1];
	t_pid = getpid();
}

static inline void t_ready(const char *fmt, ...)
{
	printf("READY %d", (int)t_pid);
	if (fmt && *fmt) {
		va_list ap;
		putchar(' ');
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	}
	putchar('\n');
	fflush(stdout);
}

static inline void t_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Sleep in small steps until SIGUSR1 arrived. */
static inline void t_wait_usr1(void)
{
	while (!t_usr1)
		t_sleep_ms(10);
}

static inline void __attribute__((noreturn, format(printf, 1, 2)))
t_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("FAIL ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	exit(1);
}

static inline void __attribute__((noreturn)) t_pass(const char *info)
{
	printf("PASS%s%s\n", info ? " " : "", info ? info : "");
	fflush(stdout);
	exit(0);
}

/* Checks that hold for every program: same pid, same tid for main. */
static inline void t_check_common(void)
{
	if (getpid() != t_pid)
		t_fail("pid changed: %d != %d", (int)getpid(), (int)t_pid);
	if ((pid_t)syscall(SYS_gettid) != t_pid)
		t_fail("main tid changed: %ld != %d", (long)syscall(SYS_gettid), (int)t_pid);
}

static inline uint64_t t_mix(uint64_t x)
{
	/* splitmix64 finalizer */
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Pattern word for the 8-byte aligned address a: depends on address and
 * seed only, so any sub-range can be regenerated independently. */
static inline uint64_t t_word(uint64_t seed, uintptr_t a)
{
	return t_mix(seed ^ (a * 0x100000001b3ULL));
}

static inline void t_fill(void *p, size_t len, uint64_t seed)
{
	uint64_t *w = p;
	for (size_t i = 0; i < len / 8; i++)
		w[i] = t_word(seed, (uintptr_t)&w[i]);
}

/* Returns NULL if ok, else the address of the first bad word. */
static inline const void *t_verify(const void *p, size_t len, uint64_t seed)
{
	const uint64_t *w = p;
	for (size_t i = 0; i < len / 8; i++)
		if (w[i] != t_word(seed, (uintptr_t)&w[i]))
			return &w[i];
	return NULL;
}

/* Expected byte at address a (any alignment). */
static inline uint8_t t_byte(uint64_t seed, uintptr_t a)
{
	uint64_t w = t_word(seed, a & ~(uintptr_t)7);
	return (uint8_t)(w >> (8 * (a & 7)));   /* little endian */
}

/* "--gen ADDR LEN SEED": write the pattern bytes to stdout (used by the
 * runner to compare `memdump read-mem` output). */
static inline int t_gen(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s --gen ADDR LEN SEED\n", argv[0]);
		return 2;
	}
	uintptr_t a = strtoull(argv[2], NULL, 0);
	size_t len = strtoull(argv[3], NULL, 0);
	uint64_t seed = strtoull(argv[4], NULL, 0);
	static uint8_t buf[65536];
	while (len) {
		size_t n = len < sizeof(buf) ? len : sizeof(buf);
		for (size_t i = 0; i < n; i++)
			buf[i] = t_byte(seed, a + i);
		if (fwrite(buf, 1, n, stdout) != n)
			return 1;
		a += n;
		len -= n;
	}
	return fflush(stdout) ? 1 : 0;
}

static inline void *t_mmap(size_t len, int prot, int flags)
{
	void *p = mmap(NULL, len, prot, flags | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	return p;
}

static inline double t_now_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Find the line of /proc/self/maps that starts at addr; copies the 4-char
 * permission string into perms. Returns 0 if found. */
static inline int t_maps_perms(const void *addr, char perms[5])
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int ret = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;
		char p[5];
		if (sscanf(line, "%lx-%lx %4s", &s, &e, p) == 3 && s == (uintptr_t)addr) {
			memcpy(perms, p, 5);
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* Value of field `key` (e.g. "Rss:" or "VmFlags:") of the smaps entry that
 * contains addr; copies the rest of the line into out. Returns 0 if found. */
static inline int t_smaps_field(const void *addr, const char *key, char *out, size_t outlen)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[1024];
	int in = 0, ret = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;
		if (sscanf(line, "%lx-%lx ", &s, &e) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			in = (uintptr_t)addr >= s && (uintptr_t)addr < e;
			continue;
		}
		if (in && !strncmp(line, key, strlen(key))) {
			const char *v = line + strlen(key);
			size_t n = strcspn(v, "\n");
			if (n >= outlen)
				n = outlen - 1;
			memcpy(out, v, n);
			out[n] = 0;
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

#endif
