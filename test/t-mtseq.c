/* t-mtseq: a "real" multi-threaded program for dump/restore end-to-end
 * tests (not SIGUSR1-driven): 4 threads each compute a sequence and append
 * one line per step to DIR/mtseq.<i> (O_APPEND, own fd), sleeping DELAY ms
 * between steps; main joins them, prints "DONE <checksum>" and exits 0.
 * Output must be identical whether or not the run was dumped/restored.
 * usage: t-mtseq DIR [STEPS=60] [DELAY_MS=50]
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <pthread.h>

#define NTH 4
static int steps = 60, delay_ms = 50;
static uint64_t result[NTH];

static void *run(void *arg)
{
	int id = (int)(intptr_t)arg;
	char path[4096], line[128];
	snprintf(path, sizeof(path), "%s/mtseq.%d", t_dir, id);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0) {
		perror(path);
		exit(2);
	}
	uint64_t x = id + 1, y = 0;
	for (int s = 0; s < steps; s++) {
		for (int k = 0; k < 100000; k++)      /* some real computation */
			x = t_mix(x) ^ (x >> 7), y += x & 0xff;
		int n = snprintf(line, sizeof(line), "T%d %d %016" PRIx64 " %" PRIu64 "\n", id, s, x, y);
		if (write(fd, line, n) != n)
			exit(3);
		t_sleep_ms(delay_ms);
	}
	close(fd);
	result[id] = x ^ y;
	return NULL;
}

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);
	if (argc > 2)
		steps = atoi(argv[2]);
	if (argc > 3)
		delay_ms = atoi(argv[3]);
	pthread_t pt[NTH];
	for (int i = 0; i < NTH; i++)
		pthread_create(&pt[i], NULL, run, (void *)(intptr_t)i);
	t_ready(NULL);
	uint64_t sum = 0;
	for (int i = 0; i < NTH; i++) {
		pthread_join(pt[i], NULL);
		sum = sum * 31 + result[i];
	}
	printf("DONE %016" PRIx64 "\n", sum);
	return 0;
}
