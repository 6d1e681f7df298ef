/*
 * Is the PID a process memdump may trace at all? Told from /proc before
 * anything else, each with its own message: a missing process, a kernel
 * thread, a zombie, a thread ID, memdump or one of its ancestors, a process
 * traced by somebody else.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "dump/refuse.h"
#include "log.h"
#include "proc.h"

#define PF_KTHREAD	0x00200000

static int check_not_ancestor(pid_t pid)
{
	pid_t p = getpid();

	while (p > 1) {
		if (p == pid)
			return fail(-EINVAL, p == getpid() ?
				    "process %d is memdump itself" :
				    "process %d is an ancestor of memdump", pid);
		p = proc_ppid(p);
		if (p < 0)
			break;
	}
	return 0;
}

/* Everything that makes a PID undumpable and can be told before touching it. */
int target_check(pid_t pid)
{
	struct proc_stat st;
	pid_t tracer;
	int ret;

	ret = proc_read_stat(pid, &st);
	if (ret == -ENOENT)
		return fail(ret, "no process with PID %d", pid);
	if (ret)
		return fail(ret, "cannot read /proc/%d/stat: %s", pid, strerror(-ret));
	if (st.flags & PF_KTHREAD)
		return fail(-EINVAL, "process %d (%s) is a kernel thread", pid, st.comm);
	if (st.state == 'Z' || st.state == 'X')
		return fail(-EINVAL, "process %d (%s) is a zombie", pid, st.comm);
	if (proc_tgid(pid) != pid)
		return fail(-EINVAL, "%d is a thread of process %d, not a process", pid,
			    proc_tgid(pid));
	ret = check_not_ancestor(pid);
	if (ret)
		return ret;
	tracer = proc_tracer(pid);
	if (tracer > 0) {
		char comm[32] = "?";

		proc_comm(tracer, comm, sizeof(comm));
		return fail(-EBUSY, "process %d (%s) is already traced by %d (%s)", pid, st.comm,
			    tracer, comm);
	}
	return 0;
}

