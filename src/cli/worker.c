/*
 * Running a command in a worker process. memdump dump holds the target
 * frozen and infected; if memdump were SIGKILLed at that moment the target
 * would be left running parasite code. So the work happens in a child: the
 * parent only waits and passes on SIGINT/SIGTERM/SIGHUP, and when the parent
 * dies (even by SIGKILL) the child gets SIGTERM (PR_SET_PDEATHSIG) and
 * aborts cleanly: cures, resumes and detaches the target, removes images.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "cli/worker.h"

static volatile pid_t worker;

static void forward(int sig)
{
	if (worker > 0)
		kill(worker, sig);
}

static int wait_worker(void)
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
	return 128 + WTERMSIG(status);
}

int run_in_worker(int (*fn)(const struct options *o), const struct options *o,
		  const char *failure)
{
	pid_t parent = getpid();
	int ret;

	worker = fork();
	if (worker < 0)
		return fail(-errno, "cannot fork: %m");
	if (worker > 0)
		return wait_worker();
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(1);
	ret = fn(o);
	if (ret < 0) {
		log_report_failure(failure, ret);
		ret = 1;
	}
	log_close();
	exit(ret);
}
