/* t-seccompstrict: a thread in seccomp strict mode beside a free main thread.
 * The strict thread, blocked in read() on a pipe, echoes each byte it reads
 * (plus one) on another pipe: read and write are all strict mode lets it do.
 * After restore: its status shows Seccomp 1 (strict), the main thread's 0,
 * and it still echoes. READY <pid> <strict-tid> */
#include <linux/seccomp.h>
#include <pthread.h>
#include <sys/prctl.h>

#include "tlib.h"

static int to_strict[2], from_strict[2];
static volatile pid_t strict_tid;

static void *strict_main(void *arg)
{
	unsigned char c;

	(void)arg;
	strict_tid = (pid_t)syscall(SYS_gettid);
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT))
		return NULL;	/* the main thread sees Seccomp 0 and fails */
	for (;;) {		/* only read, write (and exit) from here on */
		if (syscall(SYS_read, to_strict[0], &c, 1) != 1)
			syscall(SYS_exit, 1);
		c++;
		syscall(SYS_write, from_strict[1], &c, 1);
	}
}

static int seccomp_mode(pid_t tid)
{
	char path[64], line[128];
	int mode = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Seccomp: %d", &mode) == 1)
			break;
	fclose(f);
	return mode;
}

static void echo(unsigned char c, const char *when)
{
	unsigned char r = 0;

	if (write(to_strict[1], &c, 1) != 1 || read(from_strict[0], &r, 1) != 1)
		t_fail("%s: no echo from the strict thread: %s", when, strerror(errno));
	if (r != (unsigned char)(c + 1))
		t_fail("%s: the strict thread echoed %u for %u", when, r, c);
}

int main(int argc, char **argv)
{
	pthread_t th;

	t_init(argc, argv, SA_RESTART);
	if (pipe(to_strict) || pipe(from_strict))
		t_fail("pipe: %s", strerror(errno));
	if (pthread_create(&th, NULL, strict_main, NULL))
		t_fail("pthread_create failed");
	echo(1, "before");
	if (seccomp_mode(strict_tid) != 1)
		t_fail("the thread is not in strict mode before the dump");

	t_ready("%d", (int)strict_tid);
	t_wait_usr1();
	t_check_common();

	if (seccomp_mode(strict_tid) != 1)
		t_fail("thread %d: Seccomp %d, want 1 (strict)", (int)strict_tid,
		       seccomp_mode(strict_tid));
	if (seccomp_mode(getpid()) != 0)
		t_fail("the main thread: Seccomp %d, want 0", seccomp_mode(getpid()));
	echo(41, "after");
	echo(200, "after, again");
	t_pass("strict thread strict and echoing");
}
