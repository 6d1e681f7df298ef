/*
 * After a dump's worker was killed (struct dump_trace): the target runs on
 * where the kernel detached it; undo what the worker left. The parasite
 * area's head (infect_reclaim), and if the target is alive, its TCP
 * connections in repair mode and the network lock: the lock off first (the
 * kernel removed it with the worker's netlink socket: a plain one is
 * removed), then repair mode, as the dump itself ends (sockets.c). A target
 * the dump was killing (exiting, a zombie, or a SIGKILL pending) is left
 * alone: its lock was made plain for the restore, or it went with the dump.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dump/dump.h"
#include "dump/freezer.h"
#include "log.h"
#include "netlock.h"
#include "proc.h"

/* The recorded SO_REUSEADDR of a repaired socket, or -1 if it is not one. */
static int repaired_reuseaddr(const struct dump_trace *t, uint64_t ino)
{
	for (int i = 0; i < t->nr_repair && i < DUMP_TRACE_REPAIRS; i++)
		if (t->repair[i].ino == ino)
			return t->repair[i].reuseaddr;
	return -1;
}

static void unrepair_fd(const struct dump_trace *t, pid_t pid, int pidfd, int fd)
{
	int copy = syscall(SYS_pidfd_getfd, pidfd, fd, 0), off = 0, reuse;
	struct stat st;

	if (copy < 0)
		return;
	if (!fstat(copy, &st) && S_ISSOCK(st.st_mode) &&
	    (reuse = repaired_reuseaddr(t, st.st_ino)) >= 0) {
		if (setsockopt(copy, SOL_TCP, TCP_REPAIR, &off, sizeof(off)) ||
		    setsockopt(copy, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof(reuse)))
			pr_warn("process %d: cannot take fd %d out of repair mode: %s", pid, fd,
				strerror(errno));
		else
			pr_info("process %d: fd %d out of repair mode", pid, fd);
	}
	close(copy);
}

static void unrepair_all(const struct dump_trace *t, pid_t pid)
{
	int pidfd = syscall(SYS_pidfd_open, pid, 0);
	char path[64];
	struct dirent *e;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	dir = pidfd >= 0 ? opendir(path) : NULL;
	while (dir && (e = readdir(dir)))
		if (e->d_name[0] != '.')
			unrepair_fd(t, pid, pidfd, atoi(e->d_name));
	if (dir)
		closedir(dir);
	if (pidfd >= 0)
		close(pidfd);
}

#define PF_EXITING	0x00000004	/* the kernel's task flag: in do_exit() */

/* A signal mask field of /proc/PID/status ("ShdPnd", "SigPnd") holds SIGKILL. */
static bool kill_pending(pid_t pid, const char *field)
{
	char buf[64];

	return !proc_status_field(pid, field, buf, sizeof(buf)) &&
	       (strtoull(buf, NULL, 16) & (1ULL << (SIGKILL - 1)));
}

/*
 * Does pid run on (its connections with it)? Not once SIGKILL is sent: the
 * kernel marks it pending before kill() returns, until the process exits.
 */
static bool running_on(pid_t pid)
{
	struct proc_stat st;

	if (!pid || proc_read_stat(pid, &st) || st.state == 'Z' || st.state == 'X' ||
	    (st.flags & PF_EXITING))
		return false;
	return !kill_pending(pid, "ShdPnd") && !kill_pending(pid, "SigPnd");
}

bool dump_trace_pending(const struct dump_trace *t)
{
	return t->in.area || t->nr_net || t->nr_repair || t->cg_frozen;
}

/* Was a socket of pid put in repair mode? */
static bool has_repaired(const struct dump_trace *t, pid_t pid)
{
	for (int i = 0; i < t->nr_repair && i < DUMP_TRACE_REPAIRS; i++)
		if (t->repair[i].pid == pid)
			return true;
	return false;
}

/*
 * The locked processes' connections: every lock off first (a connection between two
 * processes of a tree is in both locks), then repair mode.
 */
static void reclaim_net(const struct dump_trace *t)
{
	int n = t->nr_net < DUMP_TRACE_NETS ? t->nr_net : DUMP_TRACE_NETS;

	for (int i = 0; i < n; i++) {
		pid_t pid = (pid_t)t->net[i].pid;

		/* the kernel removed the owned lock with the worker's socket (netlock.h) */
		if (running_on(pid) && t->net[i].locked && netlock_remove(pid) >= 0)
			pr_info("the network lock of process %d is off", pid);
		else if (t->net[i].locked && !running_on(pid))
			pr_info("process %d was killed by the dump before its network lock was "
				"kept for the restore: the lock went with the dump", pid);
	}
	for (int i = 0; i < n; i++) {
		pid_t pid = (pid_t)t->net[i].pid;

		if (running_on(pid) && has_repaired(t, pid))
			unrepair_all(t, pid);
	}
}

int dump_reclaim(struct dump_trace *t)
{
	int ret;

	/* the fault points are the worker's: cleaning up after it stalls at none */
	unsetenv("MEMDUMP_FAULT");
	ret = infect_reclaim(&t->in);

	freezer_reclaim(t);	/* a cgroup it froze runs again */

	reclaim_net(t);
	dump_trace_clear(t);	/* done: nothing left for the guard (guard.c) */
	return ret;
}

void dump_trace_clear(struct dump_trace *t)
{
	t->in.area = 0;
	t->nr_net = 0;
	t->nr_repair = 0;
	t->cg_frozen = 0;
}
