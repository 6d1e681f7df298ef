/* Run a command in a child that outlives a killed memdump long enough to clean up. */
#ifndef MEMDUMP_WORKER_H
#define MEMDUMP_WORKER_H

#include <stddef.h>

struct options;
struct dump_trace;

/* Returns the exit status for main(), or <0 (after fail()) if no worker started. */
int run_in_worker(int (*fn)(const struct options *o), const struct options *o,
		  const char *failure);

/* What a worker's function returned, and why it failed, for its parent (the RPC server). */
struct worker_result {
	int ret;			/* fn's return: 0, or -errno */
	char reason[8192];		/* fail_reason() when ret < 0 */
};

/*
 * Run fn(arg, trace) in a worker and wait for it; *res gets its result. The
 * worker is asked to stop (SIGTERM: a dump aborts, the target runs on) when
 * hangup_fd (>= 0) reports POLLHUP: the client that asked for it is gone.
 * Returns 0 when the worker ran to its end, or <0 after fail() when it could
 * not start or was killed.
 */
int worker_call(int (*fn)(void *arg, struct dump_trace *trace), void *arg, int hangup_fd,
		struct worker_result *res);

#endif
