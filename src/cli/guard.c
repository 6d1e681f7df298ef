/*
 * The guard (guard.h): a process of its own session that outlives memdump's
 * supervisor and worker. It waits on a pipe whose write end only they hold;
 * at its EOF both are gone. If the shared page (struct dump_trace) still
 * names something to undo, nobody undid it (both were killed, or the
 * supervisor while it reclaimed): the guard does, as the supervisor would
 * (dump_reclaim): the parasite area, a frozen cgroup, and the network lock
 * and TCP repair mode of a target that runs on.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dump/dump.h"
#include "log.h"
#include "proc.h"
#include "cli/guard.h"

#define UNTRACED_TRIES	250
#define UNTRACED_NS	(20 * 1000 * 1000)

/* Close every descriptor above stderr but the two kept (-1: none). */
static void close_others(int a, int b)
{
	unsigned int lo = 3, keep[2] = { a < b ? a : b, a < b ? b : a };

	for (int i = 0; i < 2; i++) {
		if (keep[i] == (unsigned int)-1 || keep[i] < lo)
			continue;
		if (keep[i] > lo)
			close_range(lo, keep[i] - 1, 0);
		lo = keep[i] + 1;
	}
	close_range(lo, ~0U, 0);
}

/*
 * The worker's exit closes its files before the kernel detaches its
 * tracees: wait until the target is untraced (or gone), so that it can be
 * seized again to unmap the parasite area.
 */
static void wait_untraced(pid_t pid)
{
	struct timespec t = { 0, UNTRACED_NS };

	for (int i = 0; pid > 0 && i < UNTRACED_TRIES && proc_tracer(pid) > 0; i++)
		nanosleep(&t, NULL);
}

static void __attribute__((noreturn)) guard_run(struct dump_trace *t, int fd)
{
	pid_t pid;
	char c;

	prctl(PR_SET_NAME, "memdump-guard");
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	close_others(fd, log_fileno());
	while (read(fd, &c, 1) < 0 && errno == EINTR)
		;
	if (dump_trace_pending(t)) {
		pid = (pid_t)(t->nr_net ? t->net[0].pid : t->in.pid);
		pr_warn("memdump was killed during the dump of process %d: its guard %d undoes "
			"what the dump left", pid, getpid());
		wait_untraced((pid_t)t->in.pid);
		if (dump_reclaim(t))
			pr_err("the guard could not undo all the dump left: %s", fail_reason());
	}
	log_close();
	_exit(0);
}

int guard_start(struct dump_trace *t)
{
	int p[2], status;
	pid_t mid;

	if (pipe2(p, O_CLOEXEC))
		return fail(-errno, "cannot make a pipe for the guard process: %m");
	mid = fork();
	if (mid == 0) {		/* the guard's parent: it goes, init adopts the guard */
		pid_t g;

		close(p[1]);
		setsid();
		g = fork();
		if (g == 0)
			guard_run(t, p[0]);
		_exit(g < 0);
	}
	close(p[0]);
	status = mid < 0 ? -errno : 0;
	while (mid > 0 && waitpid(mid, &status, 0) < 0)
		if (errno != EINTR) {
			status = -errno;
			break;
		}
	if (status) {
		close(p[1]);
		return fail(status < 0 ? status : -EAGAIN, "cannot fork the guard process: %s",
			    strerror(status < 0 ? -status : EAGAIN));
	}
	return p[1];
}

void guard_stop(int fd)
{
	if (fd >= 0)
		close(fd);
}
