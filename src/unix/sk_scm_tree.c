/*
 * Files in flight (SCM_RIGHTS) in a tree dump; sk_scm.c resolves one
 * process's. A UNIX socket several processes of the tree hold is made again,
 * its queue sent again, by the first of them in pstree order (restore's
 * sk_unix_tree_restore.c): the queue in that process's set is the one whose
 * files count. A later holder's set has the same queue as a copy no restore
 * sends: its messages are written without their files (copy_of_earlier()).
 *
 * In the first holder's set, a file in flight is, in this order: one of its
 * own fds' description (files.img id), an earlier file in flight of its own,
 * the description another process of the tree holds as an fd (the first in
 * pstree order: not a follower of a shared fd table), named by that process
 * and fd (share_pid, share_fd: restore sends that process's prepared fd), or
 * a description of its own (files_add_inflight(): a pipe end whose other end
 * another process holds is one pipe, restore's tree makes it once). A file
 * only in flight on a socket of an earlier process too is refused: the two
 * sets would each have a description of their own.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/kcmp.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "ctx/file_desc.h"
#include "ctx/proc_tree.h"
#include "net/sock.h"
#include "log.h"
#include "unix/sk_unix.h"

/* Does process o hold UNIX socket ino as an fd? */
static bool holds_socket(const struct dump_ctx *o, uint64_t ino)
{
	for (int i = 0; i < o->files.nr_descs; i++) {
		const struct file_desc *f = &o->files.descs[i];

		if (f->kind == FK_SOCKET && f->sk && f->sk->family == AF_UNIX &&
		    f->sk->un.ino == ino)
			return true;
	}
	return false;
}

bool sk_scm_tree_copy(const struct dump_ctx *d, uint64_t ino)
{
	for (int j = 0; j < d->nr_tree_prev; j++)
		if (holds_socket(d->tree_prev[j], ino))
			return true;
	return false;
}

/* Process pid's fd with the description of memdump's copy fd: 1 (in *hfd), 0: none. */
static int fd_of(pid_t pid, int fd, uint32_t *hfd)
{
	char path[64];
	struct dirent *de;
	int ret = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	dir = opendir(path);
	if (!dir)
		return fail(-errno, "cannot list %s: %s", path, strerror(errno));
	while (!ret && (de = readdir(dir))) {
		int n = atoi(de->d_name);

		if (de->d_name[0] == '.')
			continue;
		if (!syscall(SYS_kcmp, pid, getpid(), KCMP_FILE, n, fd)) {
			*hfd = (uint32_t)n;
			ret = 1;
		}
	}
	closedir(dir);
	return ret;
}

/* The first process of the tree but d's own holding the description of fd (1), or none (0). */
static int holder(const struct dump_ctx *d, int fd, uint32_t *pid, uint32_t *hfd)
{
	int ret = 0;

	for (int i = 0; d->tree && i < d->tree->n && !ret; i++) {
		const struct tree_proc *p = &d->tree->procs[i];

		if (p->pid == d->pid || tree_is_zombie(p))
			continue;
		ret = fd_of(p->pid, fd, hfd);
		if (ret > 0)
			*pid = (uint32_t)p->pid;
	}
	return ret;
}

/* An earlier process of the tree with memdump's fd in flight on a socket it sends, or 0. */
static pid_t inflight_earlier(const struct dump_ctx *d, int fd)
{
	pid_t self = getpid();

	for (int j = 0; j < d->nr_tree_prev; j++) {
		const struct file_set *fs = &d->tree_prev[j]->files;

		for (int i = 0; i < fs->nr_descs; i++) {
			const struct sk_state *sk = fs->descs[i].sk;

			if (fs->descs[i].kind != FK_SOCKET || !sk || sk->family != AF_UNIX)
				continue;
			for (size_t q = 0; q < sk->un.nr_queue; q++) {
				const struct sk_packet *p = &sk->un.queue[q];

				for (size_t k = 0; p->fd_ids && k < p->nr_fds; k++)
					if (!syscall(SYS_kcmp, self, self, KCMP_FILE, p->fds[k], fd))
						return d->tree_prev[j]->pid;
			}
		}
	}
	return 0;
}

int sk_scm_tree_share(const struct dump_ctx *d, uint64_t ino, struct sk_packet *p, size_t k)
{
	uint32_t pid = 0, hfd = 0;
	const char *what;
	pid_t other;
	int ret;

	if (!p->share_pid) {
		p->share_pid = calloc(p->nr_fds, sizeof(*p->share_pid));
		p->share_fd = calloc(p->nr_fds, sizeof(*p->share_fd));
		if (!p->share_pid || !p->share_fd)
			return -ENOMEM;
	}
	ret = holder(d, p->fds[k], &pid, &hfd);
	if (ret < 0)
		return ret;
	what = ret ? files_unsendable(p->fds[k]) : NULL;
	if (what)
		return fail(-EOPNOTSUPP, "UNIX socket %lu has a file descriptor in flight "
			    "(SCM_RIGHTS) that is %s process %u of the tree holds as fd %u, which "
			    "the restored process opens itself: memdump cannot send it again",
			    (unsigned long)ino, what, pid, hfd);
	if (ret) {
		p->share_pid[k] = pid;
		p->share_fd[k] = hfd;
		return 1;
	}
	other = inflight_earlier(d, p->fds[k]);
	if (other)
		return fail(-EOPNOTSUPP, "UNIX socket %lu has a file descriptor in flight "
			    "(SCM_RIGHTS) that is in flight on a socket of process %d of the tree "
			    "too, and no process holds it: memdump cannot restore it shared",
			    (unsigned long)ino, other);
	return 0;
}
