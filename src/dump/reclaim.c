/*
 * After a dump's worker was killed (struct dump_trace): the target runs on
 * where the kernel detached it; undo what the worker left. The parasite
 * area's head (infect_reclaim), and if the target is alive, its TCP
 * connections in repair mode and the network lock: the lock off first, then
 * repair mode, as the dump itself ends (sockets.c).
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

/* The recorded SO_REUSEADDR of a repaired socket, or -1 if it is not one. */
static int repaired_reuseaddr(const struct dump_trace *t, uint64_t ino)
{
	for (int i = 0; i < t->nr_repair && i < DUMP_TRACE_REPAIRS; i++)
		if (t->repair[i].ino == ino)
			return t->repair[i].reuseaddr;
	return -1;
}

static void unrepair_fd(const struct dump_trace *t, int pidfd, int fd)
{
	int copy = syscall(SYS_pidfd_getfd, pidfd, fd, 0), off = 0, reuse;
	struct stat st;

	if (copy < 0)
		return;
	if (!fstat(copy, &st) && S_ISSOCK(st.st_mode) &&
	    (reuse = repaired_reuseaddr(t, st.st_ino)) >= 0) {
		if (setsockopt(copy, SOL_TCP, TCP_REPAIR, &off, sizeof(off)) ||
		    setsockopt(copy, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof(reuse)))
			pr_warn("process %d: cannot take fd %d out of repair mode: %s",
				(int)t->net_pid, fd, strerror(errno));
		else
			pr_info("process %d: fd %d out of repair mode", (int)t->net_pid, fd);
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
			unrepair_fd(t, pidfd, atoi(e->d_name));
	if (dir)
		closedir(dir);
	if (pidfd >= 0)
		close(pidfd);
}

int dump_reclaim(struct dump_trace *t)
{
	pid_t npid = (pid_t)t->net_pid;
	int ret;

	/* the fault points are the worker's: cleaning up after it stalls at none */
	unsetenv("MEMDUMP_FAULT");
	ret = infect_reclaim(&t->in);

	freezer_reclaim(t);	/* a cgroup it froze runs again */

	if (!npid || kill(npid, 0))	/* the connections' process, gone with them */
		return ret;
	if (t->locked) {
		netlock_remove(npid);
		pr_info("removed the network lock of process %d", npid);
	}
	if (t->nr_repair)
		unrepair_all(t, npid);
	return ret;
}
