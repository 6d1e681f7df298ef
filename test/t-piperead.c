/* t-piperead: the main thread is blocked in read() on an empty pipe
 * (write end held by the process itself). SIGUSR1 (no SA_RESTART) must
 * make read() fail with EINTR; any other return (spurious EINTR without
 * the signal, data, EOF, other errors) is a failure. Afterwards the pipe
 * must be empty and still connect its two ends.
 * READY <pid> <read-fd> <write-fd> */
#include "tlib.h"
#include <fcntl.h>

int main(int argc, char **argv)
{
	t_init(argc, argv, 0);
	int p[2];
	char buf[64];

	if (pipe(p))
		t_fail("pipe: %s", strerror(errno));
	t_ready("%d %d", p[0], p[1]);

	ssize_t n = read(p[0], buf, sizeof(buf));
	int e = errno;
	if (n >= 0)
		t_fail("read returned %zd instead of blocking", n);
	if (e != EINTR)
		t_fail("read failed: %s", strerror(e));
	if (!t_usr1)
		t_fail("read returned EINTR without SIGUSR1 (syscall not restarted)");
	t_check_common();

	/* pipe still empty and working */
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	n = read(p[0], buf, sizeof(buf));
	if (n != -1 || errno != EAGAIN)
		t_fail("pipe is not empty (read %zd)", n);
	if (write(p[1], "ping", 4) != 4)
		t_fail("write to pipe: %s", strerror(errno));
	n = read(p[0], buf, sizeof(buf));
	if (n != 4 || memcmp(buf, "ping", 4))
		t_fail("pipe does not connect its ends any more (read %zd)", n);
	t_pass(NULL);
}
