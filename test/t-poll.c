/* t-poll: one poll(SECS) on a pipe nobody writes to. Interrupted by a dump, it
 * must not wait longer than its deadline plus the time it was stopped: the
 * kernel's restart block (its absolute deadline) does not survive a restore,
 * and poll() with its original timeout again would wait it all over.
 * usage: t-poll DIR [SECS]   (default 6)
 * READY <pid>
 * POLLED when poll returned; after SIGUSR1: PASS late_ms=<n> (negative: it
 * returned before the deadline, EINTR) or FAIL */
#include "tlib.h"
#include <poll.h>

static long long rt_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	int secs, p[2], ret;
	long long deadline;
	struct pollfd pfd;
	char info[64];

	t_init(argc, argv, 0);
	secs = argc > 2 ? atoi(argv[2]) : 6;
	if (pipe(p))
		t_fail("pipe: %s", strerror(errno));
	pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
	deadline = rt_ms() + secs * 1000LL;
	t_ready(NULL);
	ret = poll(&pfd, 1, secs * 1000);
	if (ret < 0 && errno != EINTR)
		t_fail("poll: %s", strerror(errno));
	if (ret > 0)
		t_fail("poll reported an event on an empty pipe");
	long long late = rt_ms() - deadline;
	printf("POLLED\n");
	fflush(stdout);
	t_wait_usr1();
	t_check_common();
	snprintf(info, sizeof(info), "late_ms=%lld", late);
	t_pass(info);
}
