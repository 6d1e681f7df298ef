/*
 * Dump of a cwd in the /proc directory of a process that exited (proccwd.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>

#include "files/proccwd.h"
#include "ns/pidns.h"

pid_t proccwd_pid(const char *name)
{
	int pid = 0, end = 0;

	if (sscanf(name, "/proc/%d%n", &pid, &end) != 1 || pid <= 0 ||
	    strcmp(name + end, " (deleted)") || name[6] < '1' || name[6] > '9')
		return 0;
	return pid;
}

/* Are /proc/PID/WHAT and memdump's the same file (a namespace, the root)? */
static bool same_as_mine(pid_t pid, const char *what)
{
	char path[64], self[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, what);
	snprintf(self, sizeof(self), "/proc/self/%s", what);
	return !stat(path, &a) && !stat(self, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

const char *proccwd_unsupported(pid_t pid, const char *name, const struct stat *st)
{
	struct stat mine;
	struct statfs fs;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/cwd", pid);
	if (!S_ISDIR(st->st_mode) || statfs(path, &fs) || fs.f_type != PROC_SUPER_MAGIC)
		return "not a directory of procfs";
	if (pidns_own(pid) && pidns_gone_proc_at(pid, "cwd", name))
		return NULL;	/* its own PID namespace's: the process changes into it itself */
	if (stat("/proc/self", &mine) || mine.st_dev != st->st_dev)
		return "a directory of another procfs than memdump's /proc, whose PID no restore "
		       "can make";
	if (!same_as_mine(pid, "ns/pid") || !same_as_mine(pid, "ns/mnt") ||
	    !same_as_mine(pid, "root"))
		return "the /proc directory of a process that exited, seen from another PID or "
		       "mount namespace or root than memdump's, which memdump cannot make again";
	return NULL;
}

const char *proccwd_fd_unsupported(pid_t gone, const char *link)
{
	char task[48];
	int n = snprintf(task, sizeof(task), "/proc/%d/task/", gone);
	long tid;

	if (strncmp(link, task, n))
		return NULL;
	tid = strtol(link + n, NULL, 10);
	if (tid > 0 && tid != gone)
		return "a /proc file of a thread of a process that exited, other than its main "
		       "one: memdump makes such a file with a stand-in that has no threads";
	return NULL;
}
