/*
 * t-heartbeat DIR [MB [WRITE_MB]]: a process that goes on while it is migrated.
 *
 * MB MiB (default 32) of pattern memory that never changes (WRITE_MB MiB of
 * it a second rewritten with the same bytes, in turn, at each beat: pages
 * written at that rate, their content the same; default 0), and a ring of
 * 256 pages: every 20 ms beat k rewrites page k % 256 with the pattern of
 * seed k and appends "k NS" to DIR/beat (NS: the inode of its PID
 * namespace, which tells the host it runs on in the tests). READY prints
 * the pattern's address and size.
 *
 * DIR/gap holds the longest time between two beats so far, in microseconds
 * (20000 and a little when nothing held the process up): what a freeze cost
 * it, as it saw it, across a migration too (the file is rewritten at each
 * new longest gap).
 *
 * SIGUSR1: same pid, the pattern intact, and every ring page holds the
 * last beat that wrote it (the memory of one instant, beats going on from
 * there): PASS beats=K.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "tlib.h"

#define RING		256

static uint64_t ring_seed(uint64_t k)
{
	return 0x4ea27bea00000000ULL ^ k;
}

static void beat(uint8_t *ring, uint64_t k, int fd)
{
	struct stat st;
	char line[64];
	int n;

	t_fill(ring + (k % RING) * T_PAGE, T_PAGE, ring_seed(k));
	if (stat("/proc/self/ns/pid", &st))
		st.st_ino = 0;
	n = snprintf(line, sizeof(line), "%" PRIu64 " %lu\n", k, (unsigned long)st.st_ino);
	if (write(fd, line, (size_t)n) != n)
		t_fail("cannot write the beat file");
}

static void check_ring(const uint8_t *ring, uint64_t k)
{
	for (uint64_t i = 0; i < RING; i++) {
		const uint8_t *p = ring + i * T_PAGE;
		uint64_t back = (k + RING - i) % RING;

		if (k < i || (k - back) == 0) {	/* never written */
			for (size_t j = 0; j < T_PAGE; j++)
				if (p[j])
					t_fail("ring page %" PRIu64 " written, beat %" PRIu64, i, k);
			continue;
		}
		if (t_verify(p, T_PAGE, ring_seed(k - back)))
			t_fail("ring page %" PRIu64 " is not beat %" PRIu64 "'s (last beat %" PRIu64 ")",
			       i, k - back, k);
	}
}

/* The longest gap between beats so far into gap_fd, when this one is longer. */
static void note_gap(int gap_fd)
{
	static uint64_t last, longest;
	uint64_t now = (uint64_t)(t_now_mono() * 1e6), gap = last ? now - last : 0;
	char line[32];
	int n;

	last = now;
	if (gap <= longest)
		return;
	longest = gap;
	n = snprintf(line, sizeof(line), "%" PRIu64 "\n", gap);
	if (pwrite(gap_fd, line, (size_t)n, 0) != n || ftruncate(gap_fd, n))
		t_fail("cannot write the gap file");
}

int main(int argc, char **argv)
{
	size_t len = (argc > 2 ? strtoul(argv[2], NULL, 0) : 32) << 20;
	/* bytes rewritten each beat (20 ms), whole pages */
	size_t rewrite = ((argc > 3 ? strtoul(argv[3], NULL, 0) : 0) << 20) / 50 & ~(T_PAGE - 1);
	size_t at = 0;
	uint8_t *mem, *ring;
	char path[4096];
	uint64_t k = 0;
	int fd, gap_fd;

	t_init(argc, argv, 0);
	mem = t_mmap(len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
	ring = t_mmap(RING * T_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
	t_fill(mem, len, 0x4ea27beaULL);
	snprintf(path, sizeof(path), "%s/beat", t_dir);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		t_fail("cannot open %s", path);
	snprintf(path, sizeof(path), "%s/gap", t_dir);
	gap_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (gap_fd < 0)
		t_fail("cannot open %s", path);
	t_ready("%p %zu", (void *)mem, len);
	while (!t_usr1) {
		beat(ring, ++k, fd);
		note_gap(gap_fd);
		for (size_t n = rewrite < len ? rewrite : len; n;) {	/* the same bytes again */
			size_t piece = n < len - at ? n : len - at;

			t_fill(mem + at, piece, 0x4ea27beaULL);
			at = (at + piece) % len;
			n -= piece;
		}
		t_sleep_ms(20);
	}
	t_check_common();
	if (t_verify(mem, len, 0x4ea27beaULL))
		t_fail("the pattern changed");
	check_ring(ring, k);
	printf("PASS beats=%" PRIu64 "\n", k);
	fflush(stdout);
	return 0;
}
