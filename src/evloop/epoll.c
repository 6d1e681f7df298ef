/*
 * An epoll set: every registration, from fdinfo "tfd:" lines (the fd number
 * it was added with, events with EPOLLET/EPOLLONESHOT/EPOLLEXCLUSIVE, data).
 * The kernel keys a registration by file and fd number, so restore adds each
 * one on its fd number. A registration whose file is no longer open as that
 * fd (closed, or the number reused) but still as another fd (kcmp
 * KCMP_EPOLL_TFD finds it) keeps its number and names that fd too
 * (file_fd): restore adds it through a temporary fd of the number. One whose
 * file the process has open as no fd is refused.
 *
 * Ready lists: an edge-triggered registration that is ready is reported
 * again after restore, unless its edge was already taken. When the set
 * itself polls not ready while such a target is ready, nothing is on its
 * ready list: every such edge was taken (edge_taken), and restore consumes
 * it once before the process runs.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/kcmp.h>

#include "ctx/dump_ctx.h"
#include "evloop/evloop.h"
#include "ctx/file_desc.h"
#include "image/image.h"
#include "log.h"
#include "proc.h"

#include "files.pb-c.h"

static int parse_tfds(const char *buf, struct epoll_state *s)
{
	for (const char *p = strstr(buf, "tfd:"); p; p = strstr(p + 4, "tfd:")) {
		struct epoll_tfd t = { 0 }, *n;
		unsigned long long data, pos, ino;
		unsigned tfd, events, sdev;

		if (sscanf(p, "tfd: %u events: %x data: %llx pos:%llu ino:%llx sdev:%x", &tfd,
			   &events, &data, &pos, &ino, &sdev) != 6)
			return -EIO;
		n = realloc(s->tfds, (s->nr + 1) * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->tfds = n;
		t = (struct epoll_tfd){ .tfd = tfd, .events = events, .data = data, .pos = pos,
					.ino = ino, .sdev = sdev };
		s->tfds[s->nr++] = t;
	}
	return 0;
}

static int read_tfds(pid_t pid, int epfd, struct epoll_state *s)
{
	char *buf = NULL;
	ssize_t n = proc_fdinfo(pid, epfd, &buf);
	int ret;

	if (n < 0)
		return n;
	ret = parse_tfds(buf, s);
	free(buf);
	return ret;
}

bool epoll_target_gone(const struct proc_tree *tree, pid_t pid, int epfd, char *why,
		       size_t len)
{
	struct epoll_state s = { 0 };
	bool gone = false;

	if (read_tfds(pid, epfd, &s)) {
		snprintf(why, len, "an epoll set whose fdinfo cannot be read");
		gone = true;
	}
	for (size_t i = 0; !gone && i < s.nr; i++) {
		int file_fd, r = epoll_tfd_owner(tree, pid, epfd, &s, i, &file_fd);

		if (r >= 0)
			continue;
		gone = true;
		if (r == -EBADF && tree)
			snprintf(why, len, "an epoll set watching fd %u, a file that no process of "
				 "the tree holding the set has open as any fd (closed while still "
				 "registered, held elsewhere)", s.tfds[i].tfd);
		else if (r == -EBADF)
			snprintf(why, len, "an epoll set watching fd %u, a file the process no longer "
				 "has open as any fd (closed while still registered, held elsewhere)",
				 s.tfds[i].tfd);
		else
			snprintf(why, len, "an epoll set whose target fd %u cannot be checked "
				 "(kcmp: %s)", s.tfds[i].tfd, strerror(-r));
	}
	epoll_state_free(&s);
	return gone;
}

/* Whether memdump's copy of a target polls ready for its registered events. */
static bool target_ready(int pidfd, const struct epoll_tfd *t)
{
	int fd = syscall(SYS_pidfd_getfd, pidfd, t->file_fd, 0);
	struct pollfd p = { .fd = fd, .events = t->events & 0xffff };
	bool ready;

	if (fd < 0)
		return false;
	ready = poll(&p, 1, 0) == 1 && (p.revents & t->events);
	close(fd);
	return ready;
}

/* ep: memdump's copy of the set; pidfd: of the process whose file_fds the registrations name. */
static void mark_taken_edges(int pidfd, int ep, struct epoll_state *s)
{
	struct pollfd p = { .fd = ep, .events = POLLIN };

	if (poll(&p, 1, 0) == 0) {	/* its ready list holds nothing ready */
		for (size_t i = 0; i < s->nr; i++)
			s->tfds[i].edge_taken = (s->tfds[i].events & EPOLLET) &&
						target_ready(pidfd, &s->tfds[i]);
	}
}

/* Only the registrations this process adds again (epoll_tree.c): the others are another's. */
static int keep_own(struct dump_ctx *d, int fd, struct epoll_state *s)
{
	struct epoll_tfd *own = calloc(s->nr + 1, sizeof(*own));
	size_t n = 0;

	if (!own)
		return -ENOMEM;
	for (size_t i = 0; i < s->nr; i++) {
		int file_fd, r = epoll_tfd_owner(d->tree, d->pid, fd, s, i, &file_fd);

		if (r < 0) {
			free(own);
			return fail(-EOPNOTSUPP, "fd %d: the epoll set watches fd %u, a file which "
				    "no process holding the set has open as any fd", fd,
				    s->tfds[i].tfd);
		}
		s->tfds[i].file_fd = (uint32_t)file_fd;
		if (r == 1)
			own[n++] = s->tfds[i];
		else
			pr_debug("epoll fd %d: fd %u is another process's registration\n", fd,
				 s->tfds[i].tfd);
	}
	free(s->tfds);
	s->tfds = own;
	s->nr = n;
	return 0;
}

static void log_tfds(int fd, const struct epoll_state *s)
{
	for (size_t i = 0; i < s->nr; i++)
		pr_debug("epoll fd %d: fd %u (file of fd %u) events %#x data %#llx%s\n", fd,
			 s->tfds[i].tfd, s->tfds[i].file_fd, s->tfds[i].events,
			 (unsigned long long)s->tfds[i].data,
			 s->tfds[i].edge_taken ? " (edge taken)" : "");
}

int epoll_collect(struct dump_ctx *d, int fd, struct epoll_state *s)
{
	int ret = read_tfds(d->pid, fd, s), ep;

	if (ret)
		return fail(ret, "fd %d: cannot read the epoll set's registrations: %s", fd,
			    strerror(-ret));
	ret = keep_own(d, fd, s);
	if (ret)
		return ret;
	ep = syscall(SYS_pidfd_getfd, d->in.pidfd, fd, 0);
	if (ep >= 0) {
		mark_taken_edges(d->in.pidfd, ep, s);
		close(ep);
	}
	log_tfds(fd, s);
	return 0;
}

/*
 * The fd of process pid that is the file registered as s->tfds[i] in memdump's
 * set ep: the registered number when it still is that file, else the first;
 * -EBADF: none.
 */
static int inflight_file_fd(const struct dump_ctx *d, int ep, const struct epoll_state *s,
			    size_t i)
{
	struct kcmp_epoll_slot slot = { .efd = ep, .tfd = s->tfds[i].tfd, .toff = 0 };
	pid_t self = getpid();

	for (size_t j = 0; j < i; j++)		/* the same number added before: toff */
		slot.toff += s->tfds[j].tfd == s->tfds[i].tfd;
	if (!syscall(SYS_kcmp, d->pid, self, KCMP_EPOLL_TFD, slot.tfd, &slot))
		return (int)slot.tfd;
	for (int k = 0; k < d->files.nr_fds; k++)
		if (!syscall(SYS_kcmp, d->pid, self, KCMP_EPOLL_TFD, d->files.fds[k].fd, &slot))
			return d->files.fds[k].fd;
	return -EBADF;
}

/* Is the process's fd an epoll set (a set in flight watching one is refused)? */
static bool fd_is_epoll(pid_t pid, int fd)
{
	return proc_fd_link_is(pid, fd, "anon_inode:[eventpoll]");
}

int epoll_collect_inflight(struct dump_ctx *d, int ep, struct epoll_state *s)
{
	int ret = read_tfds(getpid(), ep, s);

	if (ret)
		return fail(ret, "cannot read the registrations of an epoll set in flight: %s",
			    strerror(-ret));
	for (size_t i = 0; i < s->nr; i++) {
		int file_fd = inflight_file_fd(d, ep, s, i);

		if (file_fd < 0)
			return fail(-EOPNOTSUPP, "an epoll set in flight (SCM_RIGHTS) watches fd "
				    "%u, a file that process %d does not hold as any fd, which "
				    "memdump cannot dump", s->tfds[i].tfd, d->pid);
		if (fd_is_epoll(d->pid, file_fd))
			return fail(-EOPNOTSUPP, "an epoll set in flight (SCM_RIGHTS) watches "
				    "another epoll set (fd %d of process %d), which memdump cannot "
				    "dump", file_fd, d->pid);
		s->tfds[i].file_fd = (uint32_t)file_fd;
	}
	mark_taken_edges(d->in.pidfd, ep, s);
	log_tfds(ep, s);
	return 0;
}

int epoll_write(struct image *img, const struct file_desc *f)
{
	FileEntry fe = FILE_ENTRY__INIT;
	EventpollFileEntry e = EVENTPOLL_FILE_ENTRY__INIT;
	FownEntry fown = FOWN_ENTRY__INIT;
	size_t nr = f->ep.nr;
	EventpollTfdEntry *t = calloc(nr + 1, sizeof(*t));
	EventpollTfdEntry **tp = calloc(nr + 1, sizeof(*tp));
	int ret;

	if (!t || !tp) {
		free(t);
		free(tp);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nr; i++) {
		const struct epoll_tfd *s = &f->ep.tfds[i];

		eventpoll_tfd_entry__init(&t[i]);
		t[i].id = f->id;
		t[i].tfd = s->tfd;
		t[i].events = s->events;
		t[i].data = s->data;
		t[i].has_dev = t[i].has_inode = t[i].has_pos = true;
		t[i].dev = s->sdev;
		t[i].inode = s->ino;
		t[i].pos = s->pos;
		t[i].has_edge_taken = s->edge_taken;
		t[i].edge_taken = s->edge_taken;
		t[i].has_file_fd = s->file_fd != s->tfd;
		t[i].file_fd = s->file_fd;
		tp[i] = &t[i];
	}
	e.id = f->id;
	e.flags = f->flags;
	e.fown = &fown;
	e.n_tfd = nr;
	e.tfd = tp;
	fe.type = FD_TYPES__EVENTPOLL;
	fe.id = f->id;
	fe.epfd = &e;
	ret = img_write_msg(img, &fe.base);
	free(t);
	free(tp);
	return ret;
}

void epoll_state_free(struct epoll_state *s)
{
	free(s->tfds);
	s->tfds = NULL;
	s->nr = 0;
}
