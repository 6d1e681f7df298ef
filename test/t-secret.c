/* t-secret: a secret string, made at start (not in this binary), in its heap
 * (MB megabytes of copies, default 8) and unread in a pipe it holds both ends
 * of: an encrypted image set must not show it anywhere. On SIGUSR1 the heap
 * and the pipe's bytes must be as they were.
 * usage: t-secret DIR [MB]
 * READY <pid> <secret> <heap address> */
#include "tlib.h"
#include <fcntl.h>

#define COPY 64		/* bytes a copy takes in the heap */

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);
	size_t mb = argc > 2 ? strtoul(argv[2], NULL, 0) : 8, len = mb << 20;
	char secret[COPY], buf[COPY];
	struct timespec ts;
	int p[2];

	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(secret, sizeof(secret), "MDSECRET-%d-%lx-%lx", (int)t_pid, (long)ts.tv_sec,
		 (long)ts.tv_nsec);
	char *heap = t_mmap(len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
	for (size_t off = 0; off < len; off += COPY)
		memcpy(heap + off, secret, COPY);
	if (pipe(p) || write(p[1], secret, COPY) != COPY)
		t_fail("pipe: %s", strerror(errno));
	t_ready("%s %p", secret, (void *)heap);
	t_wait_usr1();
	t_check_common();
	for (size_t off = 0; off < len; off += COPY)
		if (memcmp(heap + off, secret, COPY))
			t_fail("heap copy at offset %zu differs", off);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	if (read(p[0], buf, sizeof(buf)) != COPY || memcmp(buf, secret, COPY))
		t_fail("the pipe does not hold the secret any more");
	t_pass(NULL);
}
