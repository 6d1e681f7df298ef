/* t-pattern: anonymous memory filled with an address-derived pattern,
 * plus patterned .data, .bss, heap and stack.
 * usage: t-pattern DIR [MB]   (default 16 MB)
 *        t-pattern --gen ADDR LEN SEED   (print expected bytes)
 * READY <pid> <addr> <len> <seed>   (addr/len of the big region) */
#include "tlib.h"

#define SEED 0x5eed0001ULL
#define SMALL 8192

static uint64_t data_arr[SMALL / 8] = { 1 };  /* .data */
static uint64_t bss_arr[SMALL / 8];            /* .bss  */

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--gen"))
		return t_gen(argc, argv);
	t_init(argc, argv, SA_RESTART);

	size_t len = (argc > 2 ? strtoull(argv[2], NULL, 0) : 16) << 20;
	uint8_t *big = t_mmap(len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_POPULATE);
	uint64_t *heap = malloc(SMALL);
	uint64_t stack_arr[SMALL / 8];

	t_fill(big, len, SEED);
	t_fill(data_arr, SMALL, SEED + 1);
	t_fill(bss_arr, SMALL, SEED + 2);
	t_fill(heap, SMALL, SEED + 3);
	t_fill(stack_arr, SMALL, SEED + 4);

	t_ready("%p %zu %#llx", (void *)big, len, (unsigned long long)SEED);
	t_wait_usr1();
	t_check_common();

	const void *bad;
	if ((bad = t_verify(big, len, SEED)))
		t_fail("big region differs at %p (offset %#lx)", bad, (unsigned long)((uint8_t *)bad - big));
	if ((bad = t_verify(data_arr, SMALL, SEED + 1)))
		t_fail(".data differs at %p", bad);
	if ((bad = t_verify(bss_arr, SMALL, SEED + 2)))
		t_fail(".bss differs at %p", bad);
	if ((bad = t_verify(heap, SMALL, SEED + 3)))
		t_fail("heap differs at %p", bad);
	if ((bad = t_verify(stack_arr, SMALL, SEED + 4)))
		t_fail("stack differs at %p", bad);
	t_pass(NULL);
}
