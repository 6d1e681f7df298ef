/* t-state: process attributes beside memory, each set to a value no default
 * has, checked by the program itself after SIGUSR1 (test/statecmp checks
 * what /proc shows):
 *   per thread: scheduling policy and priority (SCHED_OTHER nice 3, BATCH
 *   nice 7, FIFO 3 with SCHED_RESET_ON_FORK, IDLE), CPU affinity, timer
 *   slack, parent-death signal; all threads share a seccomp filter
 *   (syslog() fails with EBADFD) and can add one with TSYNC after a restore;
 *   the process: oom_score_adj 345, loginuid 4242, child subreaper,
 *   personality ADDR_NO_RANDOMIZE|READ_IMPLIES_EXEC set after its mappings
 *   (a r/w mapping must stay non-executable), membarrier private expedited
 *   registration, ITIMER_REAL due 4 s after the start (SIGALRM must come
 *   once) and ITIMER_VIRTUAL / ITIMER_PROF armed for hours.
 * "perthread": thread 3 adds a filter of its own (getcpu() fails with
 * EXFULL there only), so the threads' filters differ.
 * usage: t-state DIR [noseccomp|perthread]
 * READY <pid> */
#include "tlib.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <linux/filter.h>
#include <linux/membarrier.h>
#include <linux/seccomp.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/time.h>

#define NR_THREADS	4		/* the leader is thread 0 */
#define PDEATH_SIG	(SIGRTMIN + 3)
#define LOGINUID	4242
#define OOM_ADJ		345
#define PERSONA		(ADDR_NO_RANDOMIZE | READ_IMPLIES_EXEC)

struct want {
	int policy, prio, nice, cpu;
	unsigned long slack;
};

static const struct want wants[NR_THREADS] = {
	{ SCHED_OTHER, 0, 3, 0, 123456 },
	{ SCHED_BATCH, 0, 7, 1, 777777 },
	{ SCHED_FIFO | SCHED_RESET_ON_FORK, 3, 0, 0, 0 },
	{ SCHED_IDLE, 0, 0, 1, 4242424 },
};

static volatile sig_atomic_t alarms;
static volatile int nr_set;
static char failure[NR_THREADS][160];
static int with_seccomp = 1;
static void *rw_map;

static void on_alarm(int sig) { (void)sig; alarms++; }
static void on_pdeath(int sig) { (void)sig; }

static int ncpu = 1;	/* CPUs at the start, before any affinity is set */

static int nr_cpus(void)
{
	return ncpu;
}

static void set_sched(int i)
{
	const struct want *w = &wants[i];
	struct sched_param p = { .sched_priority = w->prio };
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(w->cpu % nr_cpus(), &s);
	if (setpriority(PRIO_PROCESS, 0, w->nice) || sched_setscheduler(0, w->policy, &p) ||
	    sched_setaffinity(0, sizeof(s), &s) ||
	    (w->slack && prctl(PR_SET_TIMERSLACK, w->slack)) ||
	    prctl(PR_SET_PDEATHSIG, PDEATH_SIG + i)) {
		perror("set_sched");
		exit(2);
	}
}

/* What this thread is now against what it set; "" when all is the same. */
static void check_sched(int i, char *why, size_t len)
{
	const struct want *w = &wants[i];
	struct sched_param p;
	int pol = sched_getscheduler(0), sig = 0, nice;
	long slack = prctl(PR_GET_TIMERSLACK);
	cpu_set_t s;

	errno = 0;
	nice = getpriority(PRIO_PROCESS, 0);
	sched_getparam(0, &p);
	sched_getaffinity(0, sizeof(s), &s);
	prctl(PR_GET_PDEATHSIG, &sig);
	if (pol != w->policy || p.sched_priority != w->prio)
		snprintf(why, len, "policy %#x prio %d, want %#x %d", pol, p.sched_priority,
			 w->policy, w->prio);
	else if (nice != w->nice)
		snprintf(why, len, "nice %d, want %d", nice, w->nice);
	else if (CPU_COUNT(&s) != 1 || !CPU_ISSET(w->cpu % nr_cpus(), &s))
		snprintf(why, len, "affinity %d CPUs, want only CPU %d", CPU_COUNT(&s),
			 w->cpu % nr_cpus());
	else if (w->slack && slack != (long)w->slack)
		snprintf(why, len, "timer slack %ld, want %lu", slack, w->slack);
	else if (sig != PDEATH_SIG + i)
		snprintf(why, len, "parent-death signal %d, want %d", sig, PDEATH_SIG + i);
	else if (with_seccomp && (syscall(SYS_syslog, 10, 0, 0) != -1 || errno != EBADFD))
		snprintf(why, len, "syslog() is not denied by the seccomp filter");
}

static void deny_syslog(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_syslog, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EBADFD),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("seccomp");
		exit(2);
	}
}

/* After the restore: one more filter for every thread at once (TSYNC). */
static const char *tsync_filter(void)
{
	struct sock_filter f[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	struct sock_fprog prog = { .len = 1, .filter = f };
	long ret = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);

	return ret == 0 ? NULL : ret > 0 ? "TSYNC refused: a thread has other filters" :
	       "TSYNC failed";
}

static int per_thread;	/* "perthread": thread 3 adds a filter of its own */

/* Thread 3's own filter: getcpu() fails with EXFULL. */
static void deny_getcpu(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getcpu, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EXFULL),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("seccomp getcpu");
		exit(2);
	}
}

static int getcpu_denied(void)
{
	return syscall(SYS_getcpu, NULL, NULL, NULL) == -1 && errno == EXFULL;
}

static void *thread_main(void *arg)
{
	int i = (int)(long)arg;

	if (per_thread && i == 3)
		deny_getcpu();
	set_sched(i);
	__sync_fetch_and_add(&nr_set, 1);
	while (!t_usr1)
		t_sleep_ms(10);
	check_sched(i, failure[i], sizeof(failure[i]));
	if (!failure[i][0] && per_thread && getcpu_denied() != (i == 3))
		snprintf(failure[i], sizeof(failure[i]), "getcpu() %s", i == 3 ?
			 "is not denied by the thread's own filter" : "is denied");
	return NULL;
}

static int write_proc(const char *name, long v)
{
	char path[64], buf[32];
	int fd, n, ok;

	snprintf(path, sizeof(path), "/proc/self/%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	n = snprintf(buf, sizeof(buf), "%ld", v);
	ok = write(fd, buf, n) == n;
	close(fd);
	return ok ? 0 : -1;
}

static long read_proc(const char *name)
{
	char path[64];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/%s", name);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static void set_process(void)
{
	/* fires once, 4 s from now: after the dump (a signal in the parasite fails it) */
	struct itimerval real = { { 0, 0 }, { 4, 0 } };
	struct itimerval virt = { { 7200, 0 }, { 3600, 0 } };
	struct itimerval prof = { { 9000, 0 }, { 5400, 0 } };
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };

	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = on_pdeath;
	for (int i = 0; i < NR_THREADS; i++)
		sigaction(PDEATH_SIG + i, &sa, NULL);
	rw_map = t_mmap(1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_POPULATE);
	if (write_proc("oom_score_adj", OOM_ADJ) || write_proc("loginuid", LOGINUID) ||
	    prctl(PR_SET_CHILD_SUBREAPER, 1) || personality(PERSONA) < 0 ||
	    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) ||
	    setitimer(ITIMER_REAL, &real, NULL) || setitimer(ITIMER_VIRTUAL, &virt, NULL) ||
	    setitimer(ITIMER_PROF, &prof, NULL)) {
		perror("set_process");
		exit(2);
	}
}

static const char *check_itimers(void)
{
	struct itimerval v, p;

	if (getitimer(ITIMER_VIRTUAL, &v) || getitimer(ITIMER_PROF, &p))
		return "getitimer failed";
	if (v.it_interval.tv_sec != 7200 || v.it_value.tv_sec > 3600 || v.it_value.tv_sec < 3500)
		return "ITIMER_VIRTUAL differs";
	if (p.it_interval.tv_sec != 9000 || p.it_value.tv_sec > 5400 || p.it_value.tv_sec < 5300)
		return "ITIMER_PROF differs";
	for (int i = 0; i < 600 && !alarms; i++)
		t_sleep_ms(10);
	return alarms == 1 ? NULL : "ITIMER_REAL did not fire once within 6 s of the check";
}

static const char *check_process(void)
{
	char perms[5];
	int sub = 0;

	if (read_proc("oom_score_adj") != OOM_ADJ)
		return "oom_score_adj differs";
	if (read_proc("loginuid") != LOGINUID)
		return "loginuid differs";
	if (prctl(PR_GET_CHILD_SUBREAPER, &sub) || sub != 1)
		return "not a child subreaper";
	if (personality(0xffffffff) != PERSONA)
		return "personality differs";
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0))
		return "membarrier private expedited is not registered";
	if (t_maps_perms(rw_map, perms) || perms[2] == 'x')
		return "a read/write mapping made before the personality became executable";
	return check_itimers();
}

int main(int argc, char **argv)
{
	pthread_t th[NR_THREADS];
	const char *why;

	t_init(argc, argv, SA_RESTART);
	{
		cpu_set_t s;

		if (!sched_getaffinity(0, sizeof(s), &s))
			ncpu = CPU_COUNT(&s);
	}
	with_seccomp = !(argc > 2 && !strcmp(argv[2], "noseccomp"));
	per_thread = argc > 2 && !strcmp(argv[2], "perthread");
	set_process();
	if (with_seccomp)
		deny_syslog();
	for (long i = 1; i < NR_THREADS; i++)
		pthread_create(&th[i], NULL, thread_main, (void *)i);
	set_sched(0);
	while (nr_set < NR_THREADS - 1)
		t_sleep_ms(1);
	t_ready(NULL);
	t_wait_usr1();
	t_check_common();
	check_sched(0, failure[0], sizeof(failure[0]));
	for (int i = 1; i < NR_THREADS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < NR_THREADS; i++)
		if (failure[i][0])
			t_fail("thread %d: %s", i, failure[i]);
	if (per_thread && getcpu_denied())
		t_fail("thread 0: getcpu() is denied");
	if ((why = check_process()) || (with_seccomp && !per_thread && (why = tsync_filter())))
		t_fail("%s", why);
	t_pass(NULL);
}
