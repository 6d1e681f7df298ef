/* t-compress: a heap of compressible memory with a known content, and a
 * region of incompressible (pseudo-random) pages beside it.
 * usage: t-compress DIR [MB]   (default 16 MB of each)
 *        t-compress --gen ADDR LEN SEED   (print the expected bytes of the heap)
 * READY <pid> <heap addr> <heap len> <seed>
 * Heap word at address a: t_word(seed, a) on every 64th word of a page, else
 * the page's number (a >> 12) xor the seed: a page is mostly one repeated word. */
#include "tlib.h"

#define SEED 0x2c0de5eedULL

static uint64_t heap_word(uint64_t seed, uintptr_t a)
{
	return (a & 511) == 0 ? t_word(seed, a) : (a >> 12) ^ seed;
}

static int gen(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s --gen ADDR LEN SEED\n", argv[0]);
		return 2;
	}
	uintptr_t a = strtoull(argv[2], NULL, 0);
	size_t len = strtoull(argv[3], NULL, 0);
	uint64_t seed = strtoull(argv[4], NULL, 0);

	for (size_t i = 0; i < len; i++, a++) {
		uint64_t w = heap_word(seed, a & ~(uintptr_t)7);

		if (putchar((int)(uint8_t)(w >> (8 * (a & 7)))) == EOF)
			return 1;
	}
	return fflush(stdout) ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--gen"))
		return gen(argc, argv);
	t_init(argc, argv, SA_RESTART);

	size_t len = (argc > 2 ? strtoull(argv[2], NULL, 0) : 16) << 20;
	uint64_t *heap = malloc(len);	/* glibc: an mmap of its own, page aligned + 16 */
	uint8_t *noise = t_mmap(len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_POPULATE);

	if (!heap)
		t_fail("malloc of %zu bytes failed", len);
	for (size_t i = 0; i < len / 8; i++)
		heap[i] = heap_word(SEED, (uintptr_t)&heap[i]);
	t_fill(noise, len, SEED + 1);
	t_ready("%p %zu %#llx", (void *)heap, len, (unsigned long long)SEED);
	t_wait_usr1();
	t_check_common();
	for (size_t i = 0; i < len / 8; i++)
		if (heap[i] != heap_word(SEED, (uintptr_t)&heap[i]))
			t_fail("heap differs at %p", (void *)&heap[i]);
	const void *bad = t_verify(noise, len, SEED + 1);
	if (bad)
		t_fail("noise region differs at %p", bad);
	t_pass(NULL);
}
