/*
 * Who adds each registration of an epoll set again. One process holding
 * the set: itself, on the fd number the registration was made with. A set
 * several processes of a tree hold (inherited over fork: one open file
 * description) shows the same registrations in every holder's fdinfo, but
 * each was added by one of them, on its own fd number, and the kernel keys
 * it by file and that number: restore adds it again in a holder whose fd of
 * that number is the registered file. The first such holder in dump order
 * (the tree's order) writes it in its files.img; the others leave it out.
 * A registration whose fd was closed since (or the number reused by another
 * file) while its file stays open as another fd: the first holder that has
 * the file as any fd adds it, through a temporary fd of the registered
 * number (epoll_restore.c). One whose file no holder has open is refused by
 * name.
 *
 * kcmp(P, pid, KCMP_EPOLL_TFD, N, {efd, N, toff}) compares P's fd N with the
 * file registered as N (the toff-th such) in pid's set efd.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/kcmp.h>

#include "ctx/dump_ctx.h"
#include "evloop/evloop.h"
#include "ctx/proc_tree.h"

static bool same_target(pid_t p, pid_t pid, struct kcmp_epoll_slot *slot)
{
	return syscall(SYS_kcmp, p, pid, KCMP_EPOLL_TFD, slot->tfd, slot) == 0;
}

/* Does process p hold pid's file epfd (the same description) as one of its fds? */
static bool holds_set(pid_t p, pid_t pid, int epfd)
{
	char path[64];
	struct dirent *de;
	DIR *dir;
	bool found = false;

	snprintf(path, sizeof(path), "/proc/%d/fd", p);
	dir = opendir(path);
	if (!dir)
		return false;
	while (!found && (de = readdir(dir)))
		found = de->d_name[0] != '.' &&
			syscall(SYS_kcmp, p, pid, KCMP_FILE, atoi(de->d_name), epfd) == 0;
	closedir(dir);
	return found;
}

/* The first fd of p that is the registered file, or -1. */
static int fd_of_target(pid_t p, pid_t pid, struct kcmp_epoll_slot *slot)
{
	char path[64];
	struct dirent *de;
	DIR *dir;
	int fd = -1;

	snprintf(path, sizeof(path), "/proc/%d/fd", p);
	dir = opendir(path);
	if (!dir)
		return -1;
	while (fd < 0 && (de = readdir(dir))) {
		int n = atoi(de->d_name);

		if (de->d_name[0] != '.' && syscall(SYS_kcmp, p, pid, KCMP_EPOLL_TFD, n, slot) == 0)
			fd = n;
	}
	closedir(dir);
	return fd;
}

/* Pass 1: a holder whose fd of the registered number is the registered file. */
static int owner_by_number(const struct proc_tree *t, pid_t pid, int epfd,
			   struct kcmp_epoll_slot *slot)
{
	bool mine;

	errno = 0;
	mine = same_target(pid, pid, slot);
	if (!mine && errno && errno != EBADF && errno != ENOENT && errno != EINVAL)
		return -errno;
	for (int k = 0; t && k < t->n; k++) {
		const struct tree_proc *p = &t->procs[k];

		if (p->pid == pid && mine)
			return 1;	/* no earlier holder adds it */
		if (p->pid == pid || tree_is_zombie(p))
			continue;
		if (same_target(p->pid, pid, slot) && holds_set(p->pid, pid, epfd))
			return 0;	/* an earlier holder, or the only one */
	}
	return mine ? 1 : -EBADF;
}

/* Pass 2, nobody has it as that number: the first holder with the file as any fd. */
static int owner_by_file(const struct proc_tree *t, pid_t pid, int epfd,
			 struct kcmp_epoll_slot *slot, int *file_fd)
{
	for (int k = 0; t && k < t->n; k++) {
		const struct tree_proc *p = &t->procs[k];

		if (tree_is_zombie(p) || (p->pid != pid && !holds_set(p->pid, pid, epfd)))
			continue;
		*file_fd = fd_of_target(p->pid, pid, slot);
		if (*file_fd >= 0)
			return p->pid == pid;
	}
	if (!t)
		*file_fd = fd_of_target(pid, pid, slot);
	return t || *file_fd < 0 ? -EBADF : 1;
}

int epoll_tfd_owner(const struct proc_tree *t, pid_t pid, int epfd,
		    const struct epoll_state *s, size_t i, int *file_fd)
{
	struct kcmp_epoll_slot slot = { .efd = epfd, .tfd = s->tfds[i].tfd, .toff = 0 };
	int r;

	for (size_t j = 0; j < i; j++)		/* the same number added before: toff */
		slot.toff += s->tfds[j].tfd == s->tfds[i].tfd;
	*file_fd = (int)s->tfds[i].tfd;
	r = owner_by_number(t, pid, epfd, &slot);
	if (r != -EBADF)
		return r;
	return owner_by_file(t, pid, epfd, &slot, file_fd);
}
