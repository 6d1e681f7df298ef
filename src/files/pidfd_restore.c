/*
 * pidfds, restore side (pidfd.h). A pidfd of a process of the dump cannot be
 * opened before that process exists: the restored process opens it itself
 * while it installs its fds (child.c), once the PID is there. A pidfd of a
 * process that had exited is made here, in memdump: a helper process is
 * forked, a pidfd opened on it for every description of that dead process,
 * and the helper killed and reaped, so that pidfds that shared an inode share
 * one again and the others do not.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "ctx/restore_ctx.h"
#include "log.h"
#include "files/pidfd.h"

#define PIDFD_OPEN_FLAGS	(O_NONBLOCK | O_EXCL)	/* PIDFD_NONBLOCK, PIDFD_THREAD */
#define PIDFD_WAIT_MS		10000

static int pidfd_open_raw(pid_t pid, unsigned int flags)
{
	return (int)syscall(SYS_pidfd_open, pid, flags);
}

/*
 * Is pid a process the set restores: its root, or one of the tree's
 * (pstree.img)? In a PID namespace of the set, pid is as the namespace sees it.
 */
bool pidfd_restored_here(struct rst *r, pid_t pid)
{
	const struct dumpset *ds = &tree_proc(r, 0)->ds;

	for (size_t i = 0; i <= ds->nr_members; i++) {
		const PstreeEntry *pe = i < ds->nr_members ? ds->members[i] : ds->pstree;
		pid_t seen = pe->n_ns_threads ? (pid_t)pe->ns_threads[0] : (pid_t)pe->pid;

		if (seen == pid)
			return true;
	}
	return false;
}

int pidfd_check(struct rst *r, const FileEntry *fe)
{
	if (fe->pidfd->nspid == -1 || pidfd_restored_here(r, fe->pidfd->nspid))
		return 0;
	return fail(-EINVAL, "files.img: pidfd %u refers to process %d, which this set does not "
		    "restore", fe->id, fe->pidfd->nspid);
}

static bool dead_of(const FileEntry *fe, uint32_t ino)
{
	return fe->type == FD_TYPES__PIDFD && fe->pidfd && fe->pidfd->nspid == -1 &&
	       fe->pidfd->ino == ino;
}

/* The copy kept for another process of the tree of exited process ino's pidfd, or -1. */
static int tree_dead_get(struct rst *r, uint32_t ino)
{
	struct rst *root = tree_proc(r, 0);

	for (size_t i = 0; i < root->nr_dead_pidfds; i++)
		if (root->dead_pidfds[i].ino == ino)
			return root->dead_pidfds[i].fd;
	return -1;
}

static int tree_dead_put(struct rst *r, uint32_t ino, int fd)
{
	struct rst *root = tree_proc(r, 0);
	struct dead_pidfd *d = realloc(root->dead_pidfds,
				       (root->nr_dead_pidfds + 1) * sizeof(*d));
	int copy;

	if (!d)
		return fail(-ENOMEM, "pidfd of an exited process: out of memory");
	root->dead_pidfds = d;	/* the old array is gone once realloc moved it */
	copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (copy < 0)
		return fail(-errno, "pidfd of an exited process: cannot keep a copy: %s",
			    strerror(errno));
	d[root->nr_dead_pidfds++] = (struct dead_pidfd){ ino, copy };
	return 0;
}

/*
 * Every description of the exited process of inode ino in this process: pidfds
 * of one helper, which is then killed; another process of the tree gets copies
 * (the same inode, as at dump time).
 */
static int open_dead(struct rst *r, uint32_t ino)
{
	int ret = 0, status, put = 0, kept = tree_dead_get(r, ino);
	pid_t helper = kept >= 0 ? 0 : fork();

	if (helper < 0)
		return fail(-errno, "pidfd of an exited process: cannot fork: %s", strerror(errno));
	if (!helper && kept < 0) {
		for (;;)
			pause();
	}
	for (size_t i = 0; !ret && i < r->ds.nr_files; i++) {
		const FileEntry *fe = r->ds.files[i];
		struct rdesc *d = dead_of(fe, ino) ? rst_desc(r, fe->id) : NULL;

		if (!d || d->fd >= 0)
			continue;
		if (kept >= 0)
			d->fd = fcntl(kept, F_DUPFD_CLOEXEC, 3);
		else
			d->fd = pidfd_open_raw(helper, (fe->pidfd->flags & PIDFD_OPEN_FLAGS));
		if (d->fd < 0)
			ret = fail(-errno, "pidfd %u: cannot open a pidfd: %s", fe->id, strerror(errno));
		else
			fcntl(d->fd, F_SETFD, FD_CLOEXEC);
		if (!ret && kept < 0 && r->tree && !put++)
			ret = tree_dead_put(r, ino, d->fd);	/* for the tree's other processes */
	}
	if (helper > 0) {
		kill(helper, SIGKILL);
		while (waitpid(helper, &status, 0) < 0 && errno == EINTR)
			;
	}
	return ret;
}

void pidfd_close_all(struct rst *r)
{
	for (size_t i = 0; i < r->nr_dead_pidfds; i++)
		close(r->dead_pidfds[i].fd);
	free(r->dead_pidfds);
	r->dead_pidfds = NULL;
	r->nr_dead_pidfds = 0;
}

int pidfd_open_desc(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	if (fe->pidfd->nspid != -1) {
		d->fd = -1;	/* the restored process opens it (pidfd_open_in_child) */
		return 0;
	}
	return open_dead(r, fe->pidfd->ino);
}

int pidfd_open_in_child(const PidfdEntry *e)
{
	struct timespec pause_ms = { 0, 1000000 };

	for (int waited = 0; waited < PIDFD_WAIT_MS; waited++) {
		int fd = pidfd_open_raw(e->nspid, e->flags & PIDFD_OPEN_FLAGS);

		if (fd >= 0 || errno != ESRCH)
			return fd >= 0 ? fd : -errno;
		nanosleep(&pause_ms, NULL);	/* its process is being forked */
	}
	return -ESRCH;
}
