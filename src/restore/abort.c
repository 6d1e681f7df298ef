/*
 * A restore that is stopped before its commit point leaves nothing behind.
 *
 * The commit point is the moment memdump lets the parked threads go
 * (rst_commit): before it no instruction of any restored process has run;
 * after it the processes run on whatever happens to memdump.
 *
 *  - SIGINT, SIGTERM, SIGHUP before the commit point end the restore as a
 *    failure (rst_interrupted, checked at each step and in every wait):
 *    the processes it made are killed, the deleted files it recreated and
 *    the cgroups it made removed, as for any failure. After it they are
 *    memdump's defaults again: the processes run on.
 *  - memdump killed (SIGKILL, anything): every restored process watches
 *    memdump's pidfd (the lifeline, an fd of the blob) while parked or
 *    stalled, and exits when memdump is gone before letting it go; before
 *    the blob (memdump's code in the forked child) the parent-death signal
 *    (SIGKILL, child.c) takes it with its parent. What a SIGKILL cannot
 *    undo: a deleted file recreated and not yet deleted again (the next
 *    restore recreates it beside).
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fault.h"
#include "log.h"
#include "restore/restore.h"
#include "restore/pipeline.h"

/* the signal that asked the restore to stop, 0: none (a handler's flag) */
static volatile sig_atomic_t rst_stop_sig;
static const int stop_sigs[3] = { SIGINT, SIGTERM, SIGHUP };
static struct sigaction saved[3];	/* memdump's own, back after the commit */

static void on_stop(int sig)
{
	rst_stop_sig = sig;
}

void rst_catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop };	/* no SA_RESTART: waits end */

	rst_stop_sig = 0;
	for (int i = 0; i < 3; i++)
		sigaction(stop_sigs[i], &sa, &saved[i]);
}

int rst_interrupted(void)
{
	int sig = rst_stop_sig;

	if (!sig)
		return 0;
	return fail(-EINTR, "interrupted by SIG%s before the restored processes ran",
		    sigabbrev_np(sig) ?: "?");
}

void rst_release_signals(void)
{
	for (int i = 0; i < 3; i++)
		sigaction(stop_sigs[i], &saved[i], NULL);
}

void rst_default_signals(void)
{
	int sig = rst_stop_sig;

	rst_release_signals();
	if (sig)
		raise(sig);
}

void rst_commit(struct rst *const *all, size_t n)
{
	for (size_t i = 0; i < n; i++)
		resume_go(all[i]);
}

int rst_arm_abort(struct rst *r)
{
	r->a->lifeline_fd = -1;		/* child.c installs it */
	r->lifeline = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (r->lifeline < 0)
		return fail(-errno, "cannot open a pidfd of memdump for the restored processes: %s",
			    strerror(errno));
	if (!fault_wanted(RST_FAULT_FILL))
		return 0;
	r->a->fault = fault_fails() ? RST_BLOB_FAULT_FAIL : RST_BLOB_FAULT_STALL;
	if (r->a->fault == RST_BLOB_FAULT_STALL)
		pr_warn("fault point %s: process %d stalls there (MEMDUMP_FAULT)", RST_FAULT_FILL,
			r->pid);
	return 0;
}
