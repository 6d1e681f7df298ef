/*
 * Open namespace files, restore side (nsfile.h): opened by the restored
 * process itself, in the namespaces the restore gave it.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"
#include "ctx/restore_ctx.h"
#include "kernel_uapi.h"
#include "log.h"
#include "ns/nsfile.h"

int nsfile_check(struct rst *r, const FileEntry *fe)
{
	(void)r;
	if (!nsfile_name(fe->nsf->ns_cflag))
		return fail(-EIO, "files.img: namespace file %u of an unknown kind (%#x)", fe->id,
			    fe->nsf->ns_cflag);
	return 0;
}

int nsfile_open_desc(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	(void)r, (void)fe;
	d->fd = -1;
	return 0;
}

/* The pidfd ioctl (Linux 6.11) that gives the caller's namespace of kind cflag, or 0. */
static unsigned long pidfd_ns_ioctl(uint32_t cflag)
{
	static const struct { uint32_t flag; unsigned long nr; } ioc[] = {
		{ CLONE_NEWCGROUP, PIDFD_GET_CGROUP_NAMESPACE }, { CLONE_NEWIPC, PIDFD_GET_IPC_NAMESPACE },
		{ CLONE_NEWNS, PIDFD_GET_MNT_NAMESPACE }, { CLONE_NEWNET, PIDFD_GET_NET_NAMESPACE },
		{ CLONE_NEWPID, PIDFD_GET_PID_NAMESPACE }, { CLONE_NEWTIME, PIDFD_GET_TIME_NAMESPACE },
		{ CLONE_NEWUSER, PIDFD_GET_USER_NAMESPACE }, { CLONE_NEWUTS, PIDFD_GET_UTS_NAMESPACE },
	};

	for (size_t i = 0; i < ARRAY_SIZE(ioc); i++)
		if (ioc[i].flag == cflag)
			return ioc[i].nr;
	return 0;
}

/* Through a pidfd of itself: no /proc needed (a container may have none, or another's). */
static int open_by_pidfd(uint32_t cflag)
{
	unsigned long nr = pidfd_ns_ioctl(cflag);
	int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0), fd;

	if (pidfd < 0)
		return -errno;
	fd = nr ? ioctl(pidfd, nr, 0) : -1;
	fd = fd < 0 ? -(nr ? errno : ENOTTY) : fd;
	close(pidfd);
	return fd;
}

/*
 * Called once the process is in its restored namespaces and root: its
 * /proc/self/ns/NAME as its root shows it, or, where that /proc is none or
 * another namespace's (the process is not in it), its own pidfd's namespace
 * ioctl (Linux 6.11; that fd lacks O_LARGEFILE, which no call on it heeds).
 */
int nsfile_open_in_child(const struct rst *r, const NsFileEntry *e)
{
	char self[64];
	int fd;

	(void)r;
	snprintf(self, sizeof(self), "/proc/self/ns/%s", nsfile_name(e->ns_cflag));
	fd = open(self, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open_by_pidfd(e->ns_cflag);
	if (fd >= 0 && (e->flags & O_NONBLOCK) && fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}
