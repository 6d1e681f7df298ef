/*
 * Is the PID a process memdump may trace at all? Told from /proc before
 * anything else, each with its own message: a missing process, a kernel
 * thread, a zombie, a thread ID, memdump or one of its ancestors, a process
 * traced by somebody else (another memdump, said so), or privileges memdump
 * lacks for it.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>

#include "infect/infect.h"
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

#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE	40
#endif

/*
 * Without these the dump fails later on a bare EPERM (a /proc file it cannot
 * open, a mapping it cannot stat): name the missing privilege instead.
 */
static int check_privileges(pid_t pid, const char *comm)
{
	long uid = proc_uid(pid);

	if (uid >= 0 && (uid_t)uid != geteuid() && !self_capable(CAP_SYS_PTRACE))
		return fail(-EPERM, "process %d (%s) belongs to uid %ld: tracing another user's "
			    "process needs CAP_SYS_PTRACE, which memdump (euid %u) lacks", pid,
			    comm, uid, geteuid());
	if (!self_capable(CAP_CHECKPOINT_RESTORE) && !self_capable(CAP_SYS_ADMIN))
		return fail(-EPERM, "memdump (euid %u) has neither CAP_CHECKPOINT_RESTORE nor "
			    "CAP_SYS_ADMIN, which a dump needs (/proc/PID/map_files; `memdump "
			    "check` lists what is missing)", geteuid());
	return 0;
}

/* A tracer named as the user knows it: another memdump is said to be one. */
static int refuse_traced(pid_t pid, const char *comm, pid_t tracer)
{
	char tcomm[32] = "?";

	proc_comm(tracer, tcomm, sizeof(tcomm));
	if (!strcmp(tcomm, "memdump"))
		return fail(-EBUSY, "process %d (%s) is already traced by %d: another memdump "
			    "is dumping it", pid, comm, tracer);
	return fail(-EBUSY, "process %d (%s) is already traced by %d (%s)", pid, comm, tracer,
		    tcomm);
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
	if (pid == 1)	/* the whole system below it; its restore would need PID 1 */
		return fail(-EINVAL, "process 1 (%s) is init: memdump does not dump PID 1", st.comm);
	if (st.state == 'Z' || st.state == 'X')
		return fail(-EINVAL, "process %d (%s) is a zombie", pid, st.comm);
	if (proc_tgid(pid) != pid)
		return fail(-EINVAL, "%d is a thread of process %d, not a process", pid,
			    proc_tgid(pid));
	ret = check_not_ancestor(pid);
	if (ret)
		return ret;
	tracer = proc_tracer(pid);
	if (tracer > 0)
		return refuse_traced(pid, st.comm, tracer);
	return check_privileges(pid, st.comm);
}

