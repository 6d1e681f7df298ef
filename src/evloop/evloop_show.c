/*
 * memdump show: what an eventfd, timerfd, signalfd, epoll set or inotify
 * instance of the dump holds, in the PATH column: counter, clock and times,
 * signal mask, every registration of an epoll set, every inotify watch; and
 * the process's own userfaultfd, which the blob makes (not in files.img).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>

#include "evloop/evloop_show.h"

static void eventfd_text(const EventfdFileEntry *e, char *buf, size_t len)
{
	snprintf(buf, len, "eventfd count %" PRIu64 "%s", e->counter,
		 e->has_semaphore && e->semaphore ? " semaphore" : "");
}

static void timerfd_text(const TimerfdEntry *t, char *buf, size_t len)
{
	if (!t->vsec && !t->vnsec && !t->isec && !t->insec) {
		snprintf(buf, len, "timerfd clock %u disarmed, %" PRIu64 " tick(s) unread",
			 t->clockid, t->ticks);
		return;
	}
	if (!t->vsec && !t->vnsec) {	/* periodic, expired, restarted when read */
		snprintf(buf, len, "timerfd clock %u expired, every %" PRIu64 ".%09" PRIu64
			 " s, %" PRIu64 " tick(s) unread", t->clockid, t->isec, t->insec, t->ticks);
		return;
	}
	snprintf(buf, len, "timerfd clock %u in %" PRIu64 ".%09" PRIu64 " s, every %" PRIu64
		 ".%09" PRIu64 " s%s, %" PRIu64 " tick(s) unread", t->clockid, t->vsec, t->vnsec,
		 t->isec, t->insec, t->settime_flags & TFD_TIMER_ABSTIME ? ", absolute" : "",
		 t->ticks);
}

static void epoll_text(const EventpollFileEntry *e, char *buf, size_t len)
{
	size_t n = snprintf(buf, len, "epoll, %zu target(s)", e->n_tfd);

	for (size_t i = 0; i < e->n_tfd && n < len; i++) {
		const EventpollTfdEntry *t = e->tfd[i];

		n += snprintf(buf + n, len - n, "%s fd %u events %#x data %#" PRIx64 "%s%s%s%s",
			      i ? ";" : ":", t->tfd, t->events, t->data,
			      t->events & EPOLLET ? " ET" : "",
			      t->events & EPOLLONESHOT ? " ONESHOT" : "",
			      t->events & EPOLLEXCLUSIVE ? " EXCLUSIVE" : "",
			      t->has_edge_taken && t->edge_taken ? " (edge taken)" : "");
		if (t->has_file_fd && t->file_fd != t->tfd && n < len)
			n += snprintf(buf + n, len - n, " (closed since: the file of fd %u)",
				      t->file_fd);
	}
}

static void inotify_text(const InotifyFileEntry *e, char *buf, size_t len)
{
	size_t n = snprintf(buf, len, "inotify, %zu watch(es)", e->n_wd);

	for (size_t i = 0; i < e->n_wd && n < len; i++) {
		const InotifyWdEntry *w = e->wd[i];

		n += snprintf(buf + n, len - n, "%s wd %u mask %#x %s", i ? ";" : ":", w->wd, w->mask,
			      w->f_handle && w->f_handle->path ? w->f_handle->path : "?");
	}
}

static void fanotify_text(const FanotifyFileEntry *e, char *buf, size_t len)
{
	size_t n = snprintf(buf, len, "fanotify flags %#x event flags %#x, %zu mark(s)", e->faflags,
			    e->evflags, e->n_mark);

	for (size_t i = 0; i < e->n_mark && n < len; i++) {
		const FanotifyMarkEntry *m = e->mark[i];
		const char *path = m->type == MARK_TYPE__MOUNT ? (m->me ? m->me->path : NULL) :
				   m->ie && m->ie->f_handle ? m->ie->f_handle->path : NULL;

		n += snprintf(buf + n, len - n, "%s %s %s mask %#x ignored %#x", i ? ";" : ":",
			      m->type == MARK_TYPE__MOUNT ? "mount" : "inode", path ? path : "?",
			      m->mask, m->ignored_mask);
	}
}

bool show_evloop(const FileEntry *fe, char *buf, size_t len, uint32_t *flags)
{
	if (fe->type == FD_TYPES__EVENTFD && fe->efd) {
		eventfd_text(fe->efd, buf, len);
		*flags = fe->efd->flags;
	} else if (fe->type == FD_TYPES__TIMERFD && fe->tfd) {
		timerfd_text(fe->tfd, buf, len);
		*flags = fe->tfd->flags;
	} else if (fe->type == FD_TYPES__SIGNALFD && fe->sgfd) {
		snprintf(buf, len, "signalfd mask %#" PRIx64, fe->sgfd->sigmask);
		*flags = fe->sgfd->flags;
	} else if (fe->type == FD_TYPES__INOTIFY && fe->ify) {
		inotify_text(fe->ify, buf, len);
		*flags = fe->ify->flags;
	} else if (fe->type == FD_TYPES__FANOTIFY && fe->ffy) {
		fanotify_text(fe->ffy, buf, len);
		*flags = fe->ffy->flags;
	} else if (fe->type == FD_TYPES__EVENTPOLL && fe->epfd) {
		epoll_text(fe->epfd, buf, len);
		*flags = fe->epfd->flags;
	} else {
		return false;
	}
	return true;
}

/* uffd_range_entry.modes: MISSING 1, WP 2 */
static const char *uffd_modes(uint32_t m)
{
	return m == 3 ? "MISSING|WP" : m == 2 ? "WP" : m == 1 ? "MISSING" : "?";
}

static size_t wp_pages(UffdWpEntry **runs, size_t n)
{
	size_t pages = 0;

	for (size_t i = 0; i < n; i++)
		pages += (runs[i]->end - runs[i]->start) / 4096;
	return pages;
}

void show_uffd(const UffdEntry *u, char *buf, size_t len)
{
	size_t off = (size_t)snprintf(buf, len, "fd %u flags %#o features %#" PRIx64
				      ": %zu range(s)", u->fd, u->flags, u->features,
				      u->n_ranges);

	for (size_t i = 0; i < u->n_ranges && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s %#" PRIx64 "-%#" PRIx64 " %s",
					i ? "," : "", u->ranges[i]->start, u->ranges[i]->end,
					uffd_modes(u->ranges[i]->modes));
	if (off < len)
		snprintf(buf + off, len - off, "; %zu page(s) write-protected, %zu zero page(s)",
			 wp_pages(u->protected_, u->n_protected_), wp_pages(u->zero, u->n_zero));
}

void show_iouring(const IouringEntry *e, char *buf, size_t len)
{
	size_t off = (size_t)snprintf(buf, len, "fd %u%s: %u/%u entries, %u requests done, "
				      "%zu registered file(s), %zu registered buffer(s), mapped",
				      e->fd, e->fd_flags ? " (O_CLOEXEC)" : "", e->sq_entries,
				      e->cq_entries, e->done, e->n_files, e->n_bufs);

	for (size_t i = 0; i < e->n_maps && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s %#" PRIx64 "-%#" PRIx64 " (offset %#"
					PRIx64 ")", i ? "," : "", e->maps[i]->start, e->maps[i]->end,
					e->maps[i]->pgoff);
}
