/*
 * The table of fd kinds (fd_kinds.h). Each row points at its kind's own
 * functions; where a kind's function takes other arguments than the table's
 * (it was written for its kind alone), a two-line adapter here passes them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "ctx/restore_ctx.h"
#include "evloop/evloop.h"
#include "evloop/evloop_show.h"
#include "files/fd_kinds.h"
#include "files/files.h"
#include "files/ghost.h"
#include "files/files_show.h"
#include "files/pidfd.h"
#include "image/image.h"
#include "log.h"
#include "net/sock.h"
#include "files/sockets_show.h"
#include "ns/mqueue.h"
#include "mem/shmem.h"
#include "ns/nsfile.h"
#include "files/sockets.h"
#include "inet/sk_inet.h"
#include "unix/sk_unix.h"

/* Event-loop fds: anonymous inodes named by their link. */
static bool link_is(const char *link, const char *name)
{
	return !strcmp(link, name);
}

static bool is_eventfd(pid_t pid, int fd, const char *link, const struct stat *st)
{
	(void)pid, (void)fd, (void)st;
	return link_is(link, "anon_inode:[eventfd]");
}

static bool is_timerfd(pid_t pid, int fd, const char *link, const struct stat *st)
{
	(void)pid, (void)fd, (void)st;
	return link_is(link, "anon_inode:[timerfd]");
}

static bool is_signalfd(pid_t pid, int fd, const char *link, const struct stat *st)
{
	(void)pid, (void)fd, (void)st;
	return link_is(link, "anon_inode:[signalfd]");
}

static bool is_epoll(pid_t pid, int fd, const char *link, const struct stat *st)
{
	(void)pid, (void)fd, (void)st;
	return link_is(link, "anon_inode:[eventpoll]");
}

static bool is_inotify(pid_t pid, int fd, const char *link, const struct stat *st)
{
	(void)pid, (void)fd, (void)st;
	return link_is(link, "anon_inode:inotify");
}

static bool is_fanotify(pid_t pid, int fd, const char *link, const struct stat *st)
{
	(void)pid, (void)fd, (void)st;
	return link_is(link, "anon_inode:[fanotify]");
}

static bool is_socket(pid_t pid, int fd, const char *link, const struct stat *st)
{
	(void)pid, (void)fd, (void)link;
	return S_ISSOCK(st->st_mode);
}

static bool is_mqueue(pid_t pid, int fd, const char *link, const struct stat *st)
{
	(void)link, (void)st;
	return mqueue_is_fd(pid, fd);
}

static bool epoll_unsupported(const struct fd_policy *p, int fd, const char *link,
			      const struct stat *st, char *why, size_t len)
{
	(void)link, (void)st;
	return epoll_target_gone(p->tree, p->pid, fd, why, len);
}

static bool inotify_refused(const struct fd_policy *p, int fd, const char *link,
			    const struct stat *st, char *why, size_t len)
{
	(void)link, (void)st;
	return inotify_unsupported(p->pid, fd, why, len);
}

static bool fanotify_refused(const struct fd_policy *p, int fd, const char *link,
			     const struct stat *st, char *why, size_t len)
{
	(void)link, (void)st;
	return fanotify_unsupported(p->pid, fd, why, len);
}

static bool mqueue_refused(const struct fd_policy *p, int fd, const char *link,
			   const struct stat *st, char *why, size_t len)
{
	const char *w = mqueue_unsupported(p->pid, link, st);

	(void)fd;
	if (w)
		snprintf(why, len, "%s", w);
	return w != NULL;
}

static int eventfd_fd_collect(struct dump_ctx *d, int fd, const char *link, struct file_desc *f)
{
	(void)link;
	return eventfd_collect(d->pid, fd, &f->efd);
}

static int timerfd_fd_collect(struct dump_ctx *d, int fd, const char *link, struct file_desc *f)
{
	(void)link;
	return timerfd_collect(d, fd, &f->tfd);
}

static int signalfd_fd_collect(struct dump_ctx *d, int fd, const char *link, struct file_desc *f)
{
	(void)link;
	return signalfd_collect(d->pid, fd, &f->sigmask);
}

static int epoll_fd_collect(struct dump_ctx *d, int fd, const char *link, struct file_desc *f)
{
	(void)link;
	return epoll_collect(d, fd, &f->ep);
}

static int inotify_fd_collect(struct dump_ctx *d, int fd, const char *link, struct file_desc *f)
{
	(void)link;
	return inotify_collect(d, fd, &f->ify);
}

static int fanotify_fd_collect(struct dump_ctx *d, int fd, const char *link, struct file_desc *f)
{
	(void)link;
	return fanotify_collect(d, fd, &f->ffy);
}

/* The event-loop kinds a message can hold alone: from memdump's copy (its own fdinfo). */
static int eventfd_inflight(struct dump_ctx *d, int fd, struct file_desc *f)
{
	(void)d;
	return eventfd_collect(getpid(), fd, &f->efd);
}

static int timerfd_inflight(struct dump_ctx *d, int fd, struct file_desc *f)
{
	(void)d;
	return timerfd_collect_own(fd, &f->tfd);
}

static int signalfd_inflight(struct dump_ctx *d, int fd, struct file_desc *f)
{
	(void)d;
	return signalfd_collect(getpid(), fd, &f->sigmask);
}

static int epoll_inflight(struct dump_ctx *d, int fd, struct file_desc *f)
{
	return epoll_collect_inflight(d, fd, &f->ep);
}

static int socket_fd_collect(struct dump_ctx *d, int fd, const char *link, struct file_desc *f)
{
	(void)link;
	return sockets_collect(d, fd, f);
}

static int socket_fd_write(struct image *files, const struct file_desc *f)
{
	return sockets_write(f, files);
}

/* An fd on a POSIX message queue of the process's IPC namespace (mqueue.c checked it). */
static int mqueue_fd_collect(struct dump_ctx *d, int fd, const char *link, struct file_desc *f)
{
	(void)d, (void)fd;
	f->flags &= O_ACCMODE | O_NONBLOCK;
	f->path = strdup(link + 1);
	return f->path ? 0 : -ENOMEM;
}

static int mqueue_fd_write(struct image *files, const struct file_desc *f)
{
	FileEntry fe = FILE_ENTRY__INIT;
	MqueueFileEntry mqf = MQUEUE_FILE_ENTRY__INIT;

	fe.id = f->id;
	fe.type = FD_TYPES__UND;	/* CRIU has no type for it */
	mqf.id = f->id;
	mqf.name = f->path;
	mqf.flags = f->flags;
	fe.mqf = &mqf;
	return img_write_msg(files, &fe.base);
}

static bool has_reg(const FileEntry *fe)
{
	return fe->reg && fe->reg->name && fe->reg->name[0] == '/';
}

static bool has_pipe(const FileEntry *fe) { return fe->pipe; }
static bool has_fifo(const FileEntry *fe) { return fe->fifo && fe->fifo->has_regf_id; }
static bool has_tty(const FileEntry *fe) { return fe->tty; }
static bool has_memfd(const FileEntry *fe) { return fe->memfd; }
static bool has_efd(const FileEntry *fe) { return fe->efd; }
static bool has_sgfd(const FileEntry *fe) { return fe->sgfd; }
static bool has_tfd(const FileEntry *fe) { return fe->tfd; }
static bool has_epfd(const FileEntry *fe) { return fe->epfd; }
static bool has_ify(const FileEntry *fe) { return fe->ify; }
static bool has_ffy(const FileEntry *fe) { return fe->ffy && fe->ffy->fown; }
static bool has_mqf(const FileEntry *fe) { return fe->mqf; }
static bool has_pidfd(const FileEntry *fe) { return fe->pidfd; }
static bool has_nsf(const FileEntry *fe) { return fe->nsf; }
static bool has_usk(const FileEntry *fe) { return fe->usk && fe->usk->opts; }
static bool has_nlsk(const FileEntry *fe) { return fe->nlsk && fe->nlsk->opts; }
static bool has_psk(const FileEntry *fe) { return fe->psk && fe->psk->opts && fe->psk->fown; }

static bool has_isk(const FileEntry *fe)
{
	return fe->isk && fe->isk->opts && (fe->isk->family == AF_INET ||
					    fe->isk->family == AF_INET6);
}

static int memfd_check(struct rst *r, const FileEntry *fe)
{
	return shm_of_memfd(r, fe->memfd) ? 0 :
	       fail(-EIO, "files.img: memfd %u has no inode in memfd.img", fe->id);
}

/*
 * The file entry of the deleted file "PATH (deleted)" an inotify watch is on:
 * a file of the process recreated as a ghost (ghost.c), or NULL.
 */
static const FileEntry *watched_ghost(struct rst *r, const InotifyWdEntry *w)
{
	const char *path = w->f_handle ? w->f_handle->path : NULL;
	size_t n = path ? strlen(path) : 0, k = strlen(" (deleted)");

	if (!path || !ghost_is_deleted(path))
		return NULL;
	for (size_t i = 0; i < r->ds.nr_files; i++) {
		const FileEntry *fe = r->ds.files[i];
		const char *name = dumpset_file_path(fe);

		if (fe->type == FD_TYPES__REG && name && strlen(name) == n - k &&
		    !strncmp(name, path, n - k) && dumpset_remap(&r->ds, fe->id))
			return fe;
	}
	return NULL;
}

static int inotify_fd_check(struct rst *r, const FileEntry *fe)
{
	for (size_t i = 0; i < fe->ify->n_wd; i++) {
		const InotifyWdEntry *w = fe->ify->wd[i];

		if (w->f_handle && w->f_handle->path && ghost_is_deleted(w->f_handle->path) &&
		    !watched_ghost(r, w))
			return fail(-EIO, "files.img: inotify %u: watch %u is on the deleted file %s, "
				    "of which the process has no ghost", fe->id, w->wd,
				    w->f_handle->path);
	}
	return inotify_check(r, fe->ify);
}

static int fanotify_fd_check(struct rst *r, const FileEntry *fe)
{
	(void)r;
	return fanotify_check(fe->ffy);
}

static int epoll_fd_check(struct rst *r, const FileEntry *fe)
{
	return epoll_check(&r->ds, fe->epfd);
}

static int mqueue_fd_check(struct rst *r, const FileEntry *fe)
{
	return mqueue_check(r, fe->mqf);
}

/* A new fd in memdump, or <0 after fail(): into d. */
static int opened(struct rdesc *d, int fd)
{
	d->fd = fd;
	return fd < 0 ? fd : 0;
}

static int memfd_fd_open(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	return opened(d, shm_open_memfd(r, fe));
}

static int eventfd_fd_open(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	(void)r;
	return opened(d, eventfd_open(fe->efd));
}

static int signalfd_fd_open(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	(void)r;
	return opened(d, signalfd_open(fe->sgfd));
}

static int timerfd_fd_open(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	return opened(d, timerfd_open(r, fe->tfd));
}

static int epoll_fd_open(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	(void)r;
	return opened(d, epoll_open(fe->epfd));
}

/* Its watches on deleted files added on their ghosts, there while the fds are opened. */
static int inotify_fd_open(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	const char **ghosts = calloc(fe->ify->n_wd + 1, sizeof(*ghosts));
	bool any = false;
	int ret;

	if (!ghosts)
		return -ENOMEM;
	for (size_t i = 0; i < fe->ify->n_wd; i++) {
		const FileEntry *g = watched_ghost(r, fe->ify->wd[i]);

		ghosts[i] = g ? ghost_path(r, g->id) : NULL;
		any |= g != NULL;
	}
	ret = opened(d, inotify_open(r, fe->ify, ghosts));
	free(ghosts);
	if (!ret && any && (ret = inotify_drain_later(r, d->fd))) {
		close(d->fd);
		d->fd = -1;
	}
	return ret;
}

static int fanotify_fd_open(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	return opened(d, fanotify_open(r, fe->ffy));
}

static int unix_fd_open(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	(void)fe, (void)d;
	return sk_unix_open_all(r);	/* every one at once */
}

static int inet_fd_open(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	return opened(d, sk_inet_open(r, fe->isk));
}

static int netlink_fd_open(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	(void)r;
	return opened(d, sk_netlink_open(fe->nlsk));
}

static int packet_fd_open(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	(void)r;
	return opened(d, sk_packet_open(fe->psk));
}

static int mqueue_fd_open(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	(void)r;
	return opened(d, mqueue_open(fe->mqf));
}

static void pidfd_show(const struct dumpset *ds, const FileEntry *fe, struct fd_show *s)
{
	(void)ds;
	if (fe->pidfd->nspid == -1)
		snprintf(s->path, sizeof(s->path), "pidfd of a process that had exited");
	else
		snprintf(s->path, sizeof(s->path), "pidfd of process %d", fe->pidfd->nspid);
	s->flags = fe->pidfd->flags;
}

static void nsfile_show(const struct dumpset *ds, const FileEntry *fe, struct fd_show *s)
{
	const char *name = nsfile_name(fe->nsf->ns_cflag);

	(void)ds;
	snprintf(s->path, sizeof(s->path), "%s namespace of the process", name ? name : "?");
	s->flags = fe->nsf->flags;
}

static void evloop_fd_show(const struct dumpset *ds, const FileEntry *fe, struct fd_show *s)
{
	(void)ds;
	show_evloop(fe, s->path, sizeof(s->path), &s->flags);
}

static void socket_fd_show(const struct dumpset *ds, const FileEntry *fe, struct fd_show *s)
{
	(void)ds;
	show_socket(fe, s->path, sizeof(s->path), &s->flags);
}

/*
 * One line per kind. The dump asks is() in this order; the files kind's own
 * (no is()) are what is left. Sockets: one collector and writer for every
 * family (net/sockets.c), one line per files.img type.
 */
static const struct fd_kind kinds[] = {
	{ "regular file", "files/files.c", FD_TYPES__REG, FK_REG, .has_entry = has_reg,
	  .check = reg_check, .open = reg_open, .show = reg_show },
	{ "pipe", "files/files.c", FD_TYPES__PIPE, FK_PIPE, .has_entry = has_pipe,
	  .open = pipe_open, .show = pipe_show },
	{ "FIFO", "files/files.c", FD_TYPES__FIFO, FK_FIFO, .has_entry = has_fifo,
	  .check = fifo_check, .open = fifo_open, .show = fifo_show },
	{ "terminal", "files/tty.c", FD_TYPES__TTY, FK_TTY, .has_entry = has_tty,
	  .check = term_check, .open = term_open, .show = tty_fd_show },
	{ "memfd", "mem/shmem.c", FD_TYPES__MEMFD, FK_MEMFD, .has_entry = has_memfd,
	  .check = memfd_check, .open = memfd_fd_open, .show = memfd_show },
	{ "eventfd", "evloop/eventfd.c", FD_TYPES__EVENTFD, FK_EVENTFD, is_eventfd, NULL,
	  eventfd_fd_collect, eventfd_write_entry, has_efd, NULL, eventfd_fd_open, evloop_fd_show,
	  eventfd_inflight },
	{ "timerfd", "evloop/timerfd.c", FD_TYPES__TIMERFD, FK_TIMERFD, is_timerfd, NULL,
	  timerfd_fd_collect, timerfd_write, has_tfd, NULL, timerfd_fd_open, evloop_fd_show,
	  timerfd_inflight },
	{ "signalfd", "evloop/signalfd.c", FD_TYPES__SIGNALFD, FK_SIGNALFD, is_signalfd, NULL,
	  signalfd_fd_collect, signalfd_write, has_sgfd, NULL, signalfd_fd_open, evloop_fd_show,
	  signalfd_inflight },
	{ "epoll set", "evloop/epoll.c", FD_TYPES__EVENTPOLL, FK_EPOLL, is_epoll,
	  epoll_unsupported, epoll_fd_collect, epoll_write, has_epfd, epoll_fd_check,
	  epoll_fd_open, evloop_fd_show, epoll_inflight },
	{ "inotify", "evloop/inotify.c", FD_TYPES__INOTIFY, FK_INOTIFY, is_inotify,
	  inotify_refused, inotify_fd_collect, inotify_write, has_ify, inotify_fd_check,
	  inotify_fd_open, evloop_fd_show, NULL },
	{ "fanotify", "evloop/fanotify.c", FD_TYPES__FANOTIFY, FK_FANOTIFY, is_fanotify,
	  fanotify_refused, fanotify_fd_collect, fanotify_write, has_ffy, fanotify_fd_check,
	  fanotify_fd_open, evloop_fd_show, NULL },
	{ "UNIX socket", "net/sk_unix.c", FD_TYPES__UNIXSK, FK_SOCKET, is_socket, NULL,
	  socket_fd_collect, socket_fd_write, has_usk, NULL, unix_fd_open, socket_fd_show, NULL },
	{ "inet socket", "net/sk_inet.c", FD_TYPES__INETSK, FK_SOCKET,
	  .has_entry = has_isk, .open = inet_fd_open, .show = socket_fd_show },
	{ "netlink socket", "net/sk_netlink.c", FD_TYPES__NETLINKSK, FK_SOCKET,
	  .has_entry = has_nlsk, .open = netlink_fd_open, .show = socket_fd_show },
	{ "packet socket", "net/sk_packet.c", FD_TYPES__PACKETSK, FK_SOCKET,
	  .has_entry = has_psk, .open = packet_fd_open, .show = socket_fd_show },
	{ "pidfd", "files/pidfd.c", FD_TYPES__PIDFD, FK_PIDFD, pidfd_is, pidfd_unsupported,
	  pidfd_collect, pidfd_write, has_pidfd, pidfd_check, pidfd_open_desc, pidfd_show, NULL },
	{ "POSIX message queue", "ns/mqueue.c", FD_TYPES__UND, FK_MQUEUE, is_mqueue,
	  mqueue_refused, mqueue_fd_collect, mqueue_fd_write, has_mqf, mqueue_fd_check,
	  mqueue_fd_open, mqueue_show, NULL },
	{ "namespace file", "ns/nsfile.c", FD_TYPES__NS, FK_NSFILE, nsfile_is, nsfile_unsupported,
	  nsfile_collect, nsfile_write, has_nsf, nsfile_check, nsfile_open_desc, nsfile_show, NULL },
};

const struct fd_kind *fd_kind_of_fd(pid_t pid, int fd, const char *link, const struct stat *st)
{
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (kinds[i].is && kinds[i].is(pid, fd, link, st))
			return &kinds[i];
	return NULL;
}

const struct fd_kind *fd_kind_of_desc(const struct file_desc *f)
{
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (kinds[i].kind == f->kind)
			return &kinds[i];
	return NULL;
}

const struct fd_kind *fd_kind_of_entry(const FileEntry *fe)
{
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (kinds[i].type == fe->type && kinds[i].has_entry(fe))
			return &kinds[i];
	return NULL;
}

void fd_kinds_print(FILE *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		const ProtobufCEnumValue *v =
			protobuf_c_enum_descriptor_get_value(&fd_types__descriptor, kinds[i].type);

		fprintf(out, "%-20s %-10s %s\n", kinds[i].name, v ? v->name : "?",
			kinds[i].home);
	}
}
