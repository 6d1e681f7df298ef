/* t-threadcreds: credentials that differ between the threads of one process.
 * A second thread changes only its own ids with raw system calls (glibc's
 * wrappers would change every thread's): groups 111 and 222, gids
 * 1001/1002/1003, uids 2001/2002/2003, which also drops its capabilities.
 * The main thread stays root, with the groups given on the command line
 * ("many": 100 groups, more than a short list holds). After restore each
 * thread's Uid, Gid, Groups and CapEff lines in /proc/self/task/TID/status
 * are what they were. READY <pid> <tid> */
#include <pthread.h>

#include "tlib.h"

#define NMANY 100

static pid_t worker_tid;
static char before[2][1024];

static int status_lines(pid_t tid, char *out, size_t len)
{
	char path[64], line[1024];
	const char *keys[] = { "Uid:", "Gid:", "Groups:", "CapEff:", "CapPrm:" };
	size_t used = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	out[0] = 0;
	while (fgets(line, sizeof(line), f))
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			if (!strncmp(line, keys[k], strlen(keys[k])) && used + strlen(line) < len) {
				strcpy(out + used, line);
				used += strlen(line);
			}
	fclose(f);
	return 0;
}

static void *worker(void *arg)
{
	gid_t g[2] = { 111, 222 };

	(void)arg;
	if (syscall(SYS_setgroups, 2, g) || syscall(SYS_setresgid, 1001, 1002, 1003) ||
	    syscall(SYS_setresuid, 2001, 2002, 2003))
		t_fail("worker's ids: %s", strerror(errno));
	__atomic_store_n(&worker_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);	/* its ids are set */
	for (;;)
		pause();
	return NULL;
}

static void check(void)
{
	char now[1024];
	pid_t tids[2] = { (pid_t)syscall(SYS_gettid), worker_tid };

	for (int i = 0; i < 2; i++) {
		if (status_lines(tids[i], now, sizeof(now)))
			t_fail("thread %d's status: %s", tids[i], strerror(errno));
		if (strcmp(now, before[i]))
			t_fail("thread %d: before\n%safter\n%s", tids[i], before[i], now);
	}
}

int main(int argc, char **argv)
{
	pthread_t th;

	t_init(argc, argv, SA_RESTART);
	if (geteuid() != 0) {
		printf("SKIP not root\n");
		return 2;
	}
	if (argc > 2 && !strcmp(argv[2], "many")) {	/* argv[1]: the scratch dir */
		gid_t g[NMANY];

		for (int i = 0; i < NMANY; i++)
			g[i] = 5000 + i;
		if (syscall(SYS_setgroups, NMANY, g))
			t_fail("main's groups: %s", strerror(errno));
	}
	if (pthread_create(&th, NULL, worker, NULL))
		t_fail("pthread_create");
	while (!__atomic_load_n(&worker_tid, __ATOMIC_SEQ_CST))
		t_sleep_ms(1);
	if (status_lines((pid_t)syscall(SYS_gettid), before[0], sizeof(before[0])) ||
	    status_lines(worker_tid, before[1], sizeof(before[1])))
		t_fail("status: %s", strerror(errno));
	if (!strcmp(before[0], before[1]))
		t_fail("the threads have the same credentials");
	t_ready("%d", worker_tid);
	t_wait_usr1();
	t_check_common();
	check();
	t_pass("each thread's own credentials");
}
