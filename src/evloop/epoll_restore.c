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
 *
 * A registration whose fd was closed (or reused) since names the fd of its
 * file (file_fd): it is added on its own number through a temporary copy of
 * that fd there, the fd the number holds now put back after. This runs
 * before the record locks are set (child.c): closing these fds cannot drop one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include "log.h"
#include "ctx/restore_ctx.h"
#include "evloop/evloop.h"

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

/* The process's fd whose file registration t watches. */
static uint32_t file_fd(const EventpollTfdEntry *t)
{
	return t->has_file_fd ? t->file_fd : t->tfd;
}

int epoll_check(const struct dumpset *ds, const EventpollFileEntry *e)
{
	for (size_t i = 0; i < e->n_tfd; i++)
		if (!fd_entry(ds, file_fd(e->tfd[i])))
			return fail(-EIO, "files.img: epoll set %u watches fd %u (the file of fd "
				    "%u), which fdinfo does not list", e->id, e->tfd[i]->tfd,
				    file_fd(e->tfd[i]));
	return 0;
}

static int ctl_add(int epfd, const EventpollTfdEntry *t, char *msg, size_t len)
{
	struct epoll_event ev = { .events = t->events, .data.u64 = t->data };

	if (!epoll_ctl(epfd, EPOLL_CTL_ADD, t->tfd, &ev))
		return 0;
	snprintf(msg, len, "epoll fd %d: cannot watch fd %u (events %#x): %s", epfd, t->tfd,
		 t->events, strerror(errno));
	return -errno;
}

/* Room in RLIMIT_NOFILE for fd n (the dumped limits are set later, by the blob). */
static void room_for(int n)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur <= (rlim_t)n && rl.rlim_max > (rlim_t)n) {
		rl.rlim_cur = (rlim_t)n + 1;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* t's file at its number for the time of the add; the fd there now kept in *saved. */
static int borrow_number(const EventpollTfdEntry *t, int *saved, int *cloexec)
{
	int n = (int)t->tfd, flags = fcntl(n, F_GETFD);

	*saved = -1;
	*cloexec = flags >= 0 && (flags & FD_CLOEXEC);
	if (flags >= 0 && (*saved = fcntl(n, F_DUPFD_CLOEXEC, 0)) < 0)
		return -errno;
	room_for(n);
	if (dup3((int)t->file_fd, n, 0) < 0)
		return -errno;
	return 0;
}

/* The number back as it was: the fd it held, or closed. */
static int give_back(const EventpollTfdEntry *t, int saved, int cloexec)
{
	int ret = 0;

	if (saved < 0)
		return close((int)t->tfd) ? -errno : 0;
	if (dup3(saved, (int)t->tfd, cloexec ? O_CLOEXEC : 0) < 0)
		ret = -errno;
	close(saved);
	return ret;
}

/* A registration whose fd was closed or reused: through a temporary fd of its number. */
static int add_borrowed(int epfd, const EventpollTfdEntry *t, char *msg, size_t len)
{
	int saved, cloexec, ret = borrow_number(t, &saved, &cloexec), back;

	if (ret) {
		snprintf(msg, len, "epoll fd %d: cannot open the file of fd %u as fd %u for its "
			 "registration: %s", epfd, t->file_fd, t->tfd, strerror(-ret));
		if (saved >= 0)
			close(saved);
		return ret;
	}
	ret = ctl_add((int)t->tfd == epfd ? saved : epfd, t, msg, len);	/* the set's own number */
	back = give_back(t, saved, cloexec);
	if (!ret && back)
		snprintf(msg, len, "epoll fd %d: cannot put fd %u back after its registration: "
			 "%s", epfd, t->tfd, strerror(-back));
	return ret ? ret : back;
}

static int add(int epfd, const EventpollTfdEntry *t, char *msg, size_t len)
{
	if (t->has_file_fd && t->file_fd != t->tfd)
		return add_borrowed(epfd, t, msg, len);
	return ctl_add(epfd, t, msg, len);
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

/*
 * A set only in flight: registration t on memdump's fd file of the registered
 * file (the child still has memdump's fds), through its number tfd for the time
 * of the add, the fd there now put back after.
 */
static int add_inflight(int epfd, const EventpollTfdEntry *t, int file, char *msg, size_t len)
{
	EventpollTfdEntry at = *t;

	if (file == (int)t->tfd)
		return ctl_add(epfd, t, msg, len);
	at.has_file_fd = true;
	at.file_fd = (uint32_t)file;
	return add_borrowed(epfd, &at, msg, len);
}

/* Every registration of set e (memdump's epfd), the taken edges first (fill_set). */
static int fill_inflight(struct rst *r, const EventpollFileEntry *e, int epfd, char *msg,
			 size_t len)
{
	size_t taken = 0;
	int ret = 0;

	for (int pass = 0; pass < 2 && !ret; pass++) {
		for (size_t i = 0; !ret && i < e->n_tfd; i++) {
			const EventpollTfdEntry *t = e->tfd[i];
			const FdinfoEntry *fe = fd_entry(&r->ds, file_fd(t));
			struct rdesc *d = fe ? rst_desc(r, fe->id) : NULL;
			bool edge = t->has_edge_taken && t->edge_taken;

			if (edge != !pass)
				continue;
			if (!d || d->fd < 0) {
				snprintf(msg, len, "epoll set %u in flight: the file of fd %u is not "
					 "open", e->id, file_fd(t));
				return -EBADF;
			}
			ret = add_inflight(epfd, t, d->fd, msg, len);
			taken += edge;
		}
		if (!pass && taken)
			take_edges(epfd, taken);
	}
	return ret;
}

int epoll_fill_inflight(struct rst *r, char *msg, size_t len)
{
	for (size_t k = 0; k < r->ds.nr_files; k++) {
		const FileEntry *fe = r->ds.files[k];
		struct rdesc *d;
		int ret;

		if (fe->type != FD_TYPES__EVENTPOLL || !fe->epfd || fd_of_file(&r->ds, fe->id) >= 0)
			continue;
		d = rst_desc(r, fe->id);
		if (!d || d->fd < 0)
			continue;	/* not this process's (a tree's other member) */
		ret = fill_inflight(r, fe->epfd, d->fd, msg, len);
		if (ret)
			return ret;
	}
	return 0;
}

/* Whether every epoll set that e watches is in done. */
static bool inner_done(const struct dumpset *ds, const EventpollFileEntry *e, const bool *done)
{
	for (size_t i = 0; i < e->n_tfd; i++) {
		const FdinfoEntry *t = fd_entry(ds, file_fd(e->tfd[i]));

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
