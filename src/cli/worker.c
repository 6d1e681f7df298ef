/*
 * Running a command in a worker process. memdump dump holds the target
 * frozen and infected; if memdump were SIGKILLed at that moment the target
 * would be left running parasite code. So the work happens in a child: the
 * parent only waits and passes on SIGINT/SIGTERM/SIGHUP, and when the parent
 * dies (even by SIGKILL) the child gets SIGTERM (PR_SET_PDEATHSIG) and
 * aborts cleanly: cures, resumes and detaches the target, removes images.
 *
 * If the worker itself is killed, the kernel detaches the target: a running
 * parasite cures itself; a parasite area mapped for remote syscalls only is
 * unmapped by the parent, which the worker tells where it is through a
 * shared page (struct dump_trace), as are TCP connections left in repair mode
 * behind the network lock. Should both be killed, the guard (guard.c), a
 * process outside their session, undoes the same.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dump/dump.h"
#include "log.h"
#include "cli/guard.h"
#include "cli/options.h"
#include "cli/worker.h"

static volatile pid_t worker;

static void forward(int sig)
{
	if (worker > 0)
		kill(worker, sig);
}

static void forward_signals(void)
{
	struct sigaction sa = { .sa_handler = forward };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* A worker that was killed left the target to the kernel: reclaim what it mapped there. */
static int worker_killed(struct dump_trace *trace, int status)
{
	pr_err("the worker process %d was killed by signal %d (%s)", worker, WTERMSIG(status),
	       strsignal(WTERMSIG(status)));
	if (dump_reclaim(trace))
		log_report_failure("cleaning up after the worker failed", -EIO);
	return 128 + WTERMSIG(status);
}

static int wait_worker(struct dump_trace *trace)
{
	int status;

	forward_signals();
	while (waitpid(worker, &status, 0) < 0)
		if (errno != EINTR)
			return 1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return worker_killed(trace, status);
}

/*
 * Fork the worker: 0 in the worker, its PID in the parent, <0 after fail().
 * *guard: the guard's descriptor (guard.h), or -1.
 */
static pid_t fork_worker(struct dump_trace **trace, int *guard)
{
	pid_t parent = getpid();

	*guard = -1;
	*trace = mmap(NULL, sizeof(**trace), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		      -1, 0);
	if (*trace == MAP_FAILED)
		return fail(-errno, "cannot map a page to share with the worker: %m");
	*guard = guard_start(*trace);
	if (*guard < 0)
		return *guard;
	worker = fork();
	if (worker < 0)
		return fail(-errno, "cannot fork: %m");
	if (worker > 0)
		return worker;
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(1);
	return 0;
}

int run_in_worker(int (*fn)(const struct options *o), const struct options *o,
		  const char *failure)
{
	struct options wo = *o;
	int guard, ret;
	pid_t pid = fork_worker(&wo.trace, &guard);

	if (pid < 0)
		return pid;
	if (pid > 0) {
		ret = wait_worker(wo.trace);
		guard_stop(guard);
		return ret;
	}
	ret = fn(&wo);
	dump_trace_clear(wo.trace);	/* it ended: nothing for the guard to undo */
	if (ret < 0) {
		log_report_failure(failure, ret);
		ret = 1;
	}
	log_close();
	exit(ret);
}

/* Wait for the worker, stopping it once hangup_fd hangs up; its wait status. */
static int watch_worker(int hangup_fd, int *status)
{
	int pidfd = syscall(SYS_pidfd_open, worker, 0);
	bool told = false;

	if (pidfd < 0)
		return fail(-errno, "cannot watch the worker %d: %m", worker);
	forward_signals();
	for (;;) {
		struct pollfd p[2] = { { .fd = pidfd, .events = POLLIN },
				       { .fd = told ? -1 : hangup_fd, .events = 0 } };

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		if (p[1].revents & (POLLHUP | POLLERR)) {
			pr_warn("the client hung up: stopping the worker %d", worker);
			kill(worker, SIGTERM);
			told = true;
		}
	}
	close(pidfd);
	while (waitpid(worker, status, 0) < 0)
		if (errno != EINTR)
			return fail(-errno, "cannot wait for the worker %d: %m", worker);
	return 0;
}

int worker_call(int (*fn)(void *arg, struct dump_trace *trace), void *arg, int hangup_fd,
		struct worker_result *res)
{
	struct worker_result *shared;
	struct dump_trace *trace;
	pid_t pid;
	int status, ret, guard;

	shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		      -1, 0);
	if (shared == MAP_FAILED)
		return fail(-errno, "cannot map a page to share with the worker: %m");
	shared->ret = -ECHILD;
	snprintf(shared->reason, sizeof(shared->reason), "the worker exited without a result");
	pid = fork_worker(&trace, &guard);
	if (pid == 0) {
		shared->ret = fn(arg, trace);
		dump_trace_clear(trace);	/* it ended: nothing for the guard to undo */
		if (shared->ret < 0)
			snprintf(shared->reason, sizeof(shared->reason), "%s", fail_reason());
		log_close();
		_exit(shared->ret < 0);
	}
	ret = pid < 0 ? pid : watch_worker(hangup_fd, &status);
	if (!ret && WIFSIGNALED(status)) {
		worker_killed(trace, status);
		ret = fail(-ECHILD, "the worker process %d was killed by signal %d (%s)", pid,
			   WTERMSIG(status), strsignal(WTERMSIG(status)));
	}
	guard_stop(guard);
	*res = *shared;
	munmap(shared, sizeof(*shared));
	if (trace != MAP_FAILED)
		munmap(trace, sizeof(*trace));
	return ret;
}
