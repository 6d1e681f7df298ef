/*
 * Restore of epoll sets. The set is created in memdump with the other
 * files; its registrations are added in the forked child once every fd is
 * at its number (child.c), because the kernel keys each one by file and fd
 * number: the process's EPOLL_CTL_MOD/DEL on that number must find it.
 *
 * A set that watches other sets is filled after them. In each set, the
 * edge-triggered registrations whose edge was taken at the dump are added
 * first and their pending report consumed (epoll_wait, timeout 0), then the
 * others: a target that is ready is reported once more only where the
 * process had not seen it yet.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "log.h"
#include "ctx/restore_ctx.h"

int epoll_open(const EventpollFileEntry *e)
{
	int fd = epoll_create1(EPOLL_CLOEXEC);

	if (fd < 0)
		return fail(-errno, "cannot create epoll set %u: %s", e->id, strerror(errno));
	if ((e->flags & O_NONBLOCK) && fcntl(fd, F_SETFL, O_NONBLOCK)) {
		int err = errno;

		close(fd);
		return fail(-err, "cannot set the flags of epoll set %u: %s", e->id, strerror(err));
	}
	return fd;
}

/* The dumped fd entry of target number n, or NULL. */
static const FdinfoEntry *fd_entry(const struct dumpset *ds, uint32_t n)
{
	for (size_t i = 0; i < ds->nr_fds; i++)
		if (ds->fds[i]->fd == n)
			return ds->fds[i];
	return NULL;
}

/* The process's fd number of file id (its first fd). */
static int fd_of_file(const struct dumpset *ds, uint32_t id)
{
	for (size_t i = 0; i < ds->nr_fds; i++)
		if (ds->fds[i]->id == id)
			return ds->fds[i]->fd;
	return -1;
}

int epoll_check(const struct dumpset *ds, const EventpollFileEntry *e)
{
	for (size_t i = 0; i < e->n_tfd; i++)
		if (!fd_entry(ds, e->tfd[i]->tfd))
			return fail(-EIO, "files.img: epoll set %u watches fd %u, which fdinfo "
				    "does not list", e->id, e->tfd[i]->tfd);
	return 0;
}

static int add(int epfd, const EventpollTfdEntry *t, char *msg, size_t len)
{
	struct epoll_event ev = { .events = t->events, .data.u64 = t->data };

	if (!epoll_ctl(epfd, EPOLL_CTL_ADD, t->tfd, &ev))
		return 0;
	snprintf(msg, len, "epoll fd %d: cannot watch fd %u (events %#x): %s", epfd, t->tfd,
		 t->events, strerror(errno));
	return -errno;
}

/* Consume the reports of the registrations added so far (all edge-taken). */
static void take_edges(int epfd, size_t n)
{
	struct epoll_event ev[64];

	while (n && epoll_wait(epfd, ev, 64, 0) == 64)
		n = n > 64 ? n - 64 : 0;
}

static int fill_set(const EventpollFileEntry *e, int epfd, char *msg, size_t len)
{
	size_t taken = 0;
	int ret = 0;

	for (size_t i = 0; !ret && i < e->n_tfd; i++)
		if (e->tfd[i]->has_edge_taken && e->tfd[i]->edge_taken) {
			ret = add(epfd, e->tfd[i], msg, len);
			taken++;
		}
	if (taken)
		take_edges(epfd, taken);
	for (size_t i = 0; !ret && i < e->n_tfd; i++)
		if (!(e->tfd[i]->has_edge_taken && e->tfd[i]->edge_taken))
			ret = add(epfd, e->tfd[i], msg, len);
	return ret;
}

/* Whether every epoll set that e watches is in done. */
static bool inner_done(const struct dumpset *ds, const EventpollFileEntry *e, const bool *done)
{
	for (size_t i = 0; i < e->n_tfd; i++) {
		const FdinfoEntry *t = fd_entry(ds, e->tfd[i]->tfd);

		if (!t || t->type != FD_TYPES__EVENTPOLL)
			continue;
		for (size_t k = 0; k < ds->nr_files; k++)
			if (ds->files[k]->id == t->id && !done[k])
				return false;
	}
	return true;
}

/* One pass over the sets not filled yet whose inner sets are; how many it filled. */
static int fill_pass(const struct dumpset *ds, bool *done, char *msg, size_t len)
{
	int filled = 0;

	for (size_t k = 0; k < ds->nr_files; k++) {
		const FileEntry *fe = ds->files[k];
		int epfd = fd_of_file(ds, fe->id), ret;

		if (done[k] || !inner_done(ds, fe->epfd, done))
			continue;
		ret = epfd < 0 ? 0 : fill_set(fe->epfd, epfd, msg, len);
		if (ret)
			return ret;
		done[k] = true;
		filled++;
	}
	return filled;
}

int epoll_fill_all(const struct dumpset *ds, char *msg, size_t len)
{
	bool *done = calloc(ds->nr_files + 1, sizeof(*done));
	size_t left = 0;
	int n = 0;

	if (!done) {
		snprintf(msg, len, "out of memory");
		return -ENOMEM;
	}
	for (size_t k = 0; k < ds->nr_files; k++) {
		done[k] = ds->files[k]->type != FD_TYPES__EVENTPOLL || !ds->files[k]->epfd;
		left += !done[k];
	}
	while (left && (n = fill_pass(ds, done, msg, len)) > 0)
		left -= n;
	free(done);
	if (n < 0)
		return n;
	if (left) {
		snprintf(msg, len, "epoll sets watch each other in a loop");
		return -ELOOP;
	}
	return 0;
}
