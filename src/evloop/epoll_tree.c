/*
 * Who adds each registration of an epoll set again. One process holding
 * the set: itself, on the fd number the registration was made with. A set
 * several processes of a tree hold (inherited over fork: one open file
 * description) shows the same registrations in every holder's fdinfo, but
 * each was added by one of them, on its own fd number, and the kernel keys
 * it by file and that number: restore adds it again in a holder whose fd of
 * that number is the registered file. The first such holder in dump order
 * (the tree's order) writes it in its files.img; the others leave it out.
 * A registration that no holder has open as its fd (closed while still
 * registered) cannot be added again and is refused by name.
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

int epoll_tfd_owner(const struct proc_tree *t, pid_t pid, int epfd,
		    const struct epoll_state *s, size_t i)
{
	struct kcmp_epoll_slot slot = { .efd = epfd, .tfd = s->tfds[i].tfd, .toff = 0 };
	bool mine;

	for (size_t j = 0; j < i; j++)		/* the same number added before: toff */
		slot.toff += s->tfds[j].tfd == s->tfds[i].tfd;
	errno = 0;
	mine = same_target(pid, pid, &slot);
	if (!mine && errno && errno != EBADF && errno != ENOENT && errno != EINVAL)
		return -errno;
	for (int k = 0; t && k < t->n; k++) {
		const struct tree_proc *p = &t->procs[k];

		if (p->pid == pid && mine)
			return 1;	/* no earlier holder adds it */
		if (p->pid == pid || tree_is_zombie(p))
			continue;
		if (same_target(p->pid, pid, &slot) && holds_set(p->pid, pid, epfd))
			return 0;	/* an earlier holder, or the only one */
	}
	return mine ? 1 : -EBADF;
}
