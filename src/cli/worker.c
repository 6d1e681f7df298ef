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
 * behind the network lock.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dump/dump.h"
#include "log.h"
#include "cli/options.h"
#include "cli/worker.h"

static volatile pid_t worker;

static void forward(int sig)
{
	if (worker > 0)
		kill(worker, sig);
}

static int wait_worker(struct dump_trace *trace)
{
	struct sigaction sa = { .sa_handler = forward };
	int status;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	while (waitpid(worker, &status, 0) < 0)
		if (errno != EINTR)
			return 1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	pr_err("the worker process %d was killed by signal %d (%s)", worker, WTERMSIG(status),
	       strsignal(WTERMSIG(status)));
	if (dump_reclaim(trace))
		log_report_failure("cleaning up after the worker failed", -EIO);
	return 128 + WTERMSIG(status);
}

int run_in_worker(int (*fn)(const struct options *o), const struct options *o,
		  const char *failure)
{
	struct options wo = *o;
	pid_t parent = getpid();
	int ret;

	wo.trace = mmap(NULL, sizeof(*wo.trace), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (wo.trace == MAP_FAILED)
		return fail(-errno, "cannot map a page to share with the worker: %m");
	worker = fork();
	if (worker < 0)
		return fail(-errno, "cannot fork: %m");
	if (worker > 0)
		return wait_worker(wo.trace);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(1);
	ret = fn(&wo);
	if (ret < 0) {
		log_report_failure(failure, ret);
		ret = 1;
	}
	log_close();
	exit(ret);
}
