/*
 * Event-loop fds of the target: eventfd, timerfd, signalfd, epoll and
 * inotify. Their whole state is in /proc/PID/fdinfo/FD, read host-side
 * while the target is frozen; each kind has its file (eventfd.c, timerfd.c,
 * signalfd.c, epoll.c, inotify.c) that reads it and writes its files.img entry.
 */
#ifndef MEMDUMP_EVLOOP_H
#define MEMDUMP_EVLOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "eventfd.pb-c.h"
#include "eventpoll.pb-c.h"
#include "fsnotify.pb-c.h"
#include "signalfd.pb-c.h"
#include "timerfd.pb-c.h"

struct dump_ctx;
struct file_desc;
struct image;
struct proc_tree;

struct eventfd_state {
	uint64_t count;
	bool semaphore;		/* EFD_SEMAPHORE */
};

struct timerfd_state {
	uint32_t clockid;
	uint32_t settime_flags;	/* TFD_TIMER_ABSTIME, TFD_TIMER_CANCEL_ON_SET */
	uint64_t ticks;		/* expirations not yet read */
	uint64_t value_ns;	/* remaining time, 0: disarmed */
	uint64_t interval_ns;
	uint64_t dump_ns;	/* clockid's reading when value_ns was read */
};

/* One registration of an epoll set. */
struct epoll_tfd {
	uint32_t tfd;		/* the fd number it was added with */
	uint32_t file_fd;	/* the adding process's fd of its file: tfd, or another
				 * when tfd was closed (or reused) since */
	uint32_t events;
	uint64_t data;
	uint64_t ino, pos;
	uint32_t sdev;
	bool edge_taken;	/* EPOLLET, ready, and its edge already reported */
};

struct epoll_state {
	struct epoll_tfd *tfds;
	size_t nr;
};

#define MAX_HANDLE_BYTES	128	/* MAX_HANDLE_SZ */

/* One inotify watch: its wd, mask and the inode by file handle and path. */
struct inotify_watch {
	uint32_t wd, mask, ignored_mask;
	uint32_t sdev;		/* the kernel's encoding, MAJOR << 20 | MINOR */
	uint64_t ino;
	uint32_t fh_bytes, fh_type;
	unsigned char fh[MAX_HANDLE_BYTES];
	char *path;
};

struct inotify_state {
	struct inotify_watch *w;
	size_t nr;
};

/*
 * One fanotify mark: on an inode (w: its inode by file handle and path, as an
 * inotify watch's) or on a mount (w.path: its mount point, mnt_id).
 */
struct fanotify_mark {
	int type;		/* MARK_TYPE__INODE, MARK_TYPE__MOUNT */
	uint32_t mflags, mnt_id;
	struct inotify_watch w;	/* mask, ignored_mask, sdev; wd unused */
};

struct fanotify_state {
	uint32_t faflags, evflags;	/* of fanotify_init() */
	struct fanotify_mark *m;
	size_t nr;
};

/* eventfd.c (eventfd_write is glibc's) */
int eventfd_collect(pid_t pid, int fd, struct eventfd_state *s);
int eventfd_write_entry(struct image *img, const struct file_desc *f);

/* timerfd.c */
int timerfd_collect(struct dump_ctx *d, int fd, struct timerfd_state *s);
/* A timerfd only in flight (SCM_RIGHTS): from memdump's own copy fd. */
int timerfd_collect_own(int fd, struct timerfd_state *s);
int timerfd_write(struct image *img, const struct file_desc *f);

/* signalfd.c */
int signalfd_collect(pid_t pid, int fd, uint64_t *sigmask);
int signalfd_write(struct image *img, const struct file_desc *f);

/* epoll.c */
/*
 * A registered target whose file no process adding it again has open as any
 * fd: why. tree: the processes of a tree dump, any of which may hold the set, or NULL.
 */
bool epoll_target_gone(const struct proc_tree *tree, pid_t pid, int epfd, char *why,
		       size_t len);
int epoll_collect(struct dump_ctx *d, int fd, struct epoll_state *s);
/*
 * A set only in flight (SCM_RIGHTS), memdump's copy ep: its registrations,
 * each on a file the process holds (file_fd its fd); refused by name otherwise.
 */
int epoll_collect_inflight(struct dump_ctx *d, int ep, struct epoll_state *s);
int epoll_write(struct image *img, const struct file_desc *f);

/*
 * epoll_tree.c: who adds registration i of pid's set epfd again: 1 pid, 0
 * another process of tree holding the set (NULL: none), -EBADF nobody (no
 * holder has its file open as any fd), or kcmp's error. *file_fd: the
 * adder's fd of the registered file (its number when still open as it).
 */
int epoll_tfd_owner(const struct proc_tree *tree, pid_t pid, int epfd,
		    const struct epoll_state *s, size_t i, int *file_fd);
void epoll_state_free(struct epoll_state *s);

/* inotify.c */
/* A watch that cannot be restored (its file deleted or not found): why. */
bool inotify_unsupported(pid_t pid, int fd, char *why, size_t len);
int inotify_collect(struct dump_ctx *d, int fd, struct inotify_state *s);
/* inotify.c: a warning when an inotify or fanotify (kind) fd has events queued (not kept). */
void notify_warn_pending(struct dump_ctx *d, int fd, const char *kind);
int inotify_write(struct image *img, const struct file_desc *f);
void inotify_state_free(struct inotify_state *s);
/*
 * The path of the inode w names by file handle (w->sdev, fh), into w->path;
 * what: the watch or mark, for why[]. A deleted file ("PATH (deleted)") is
 * kept when deleted_ok and an fd of pid holds it. 0, or -errno with why[].
 */
int fsnotify_inode_path(pid_t pid, struct inotify_watch *w, const char *what, bool deleted_ok,
			char *why, size_t len);

/* fanotify.c: a group, its init flags and every mark on an inode or a mount */
bool fanotify_unsupported(pid_t pid, int fd, char *why, size_t len);
int fanotify_collect(struct dump_ctx *d, int fd, struct fanotify_state *s);
int fanotify_write(struct image *img, const struct file_desc *f);
void fanotify_state_free(struct fanotify_state *s);

/* Restore (its _restore.c files) */

struct rst;
struct dumpset;

/* eventfd.c, signalfd.c: the new fd in memdump, or <0 after fail() */
int eventfd_open(const EventfdFileEntry *e);
int signalfd_open(const SignalfdEntry *s);

/* timerfd.c: created disarmed, kept in r->timers; armed once the threads are parked */
int timerfd_open(struct rst *r, const TimerfdEntry *t);
int timerfd_arm_all(struct rst *r);
void timerfd_close_all(struct rst *r);

/* epoll.c: the set is created with the files, filled in the child (fds at their numbers) */
int epoll_open(const EventpollFileEntry *e);
int epoll_check(const struct dumpset *ds, const EventpollFileEntry *e);
/* In the child: every set's registrations; <0 with what failed in msg. */
int epoll_fill_all(const struct dumpset *ds, char *msg, size_t len);
/* In the child, on memdump's fds before they move: the sets only in flight. */
int epoll_fill_inflight(struct rst *r, char *msg, size_t len);

/* inotify.c: every watch on its path, with its mask and wd */
int inotify_check(const struct rst *r, const InotifyFileEntry *e);
/* ghosts: for each watch on a deleted file ("PATH (deleted)"), its ghost's path (or NULL) */
int inotify_open(const struct rst *r, const InotifyFileEntry *e, const char *const *ghosts);
/*
 * An instance watching ghosts: the events the restore itself causes on them
 * (writing, naming, deleting them again) are read away right before the
 * process resumes, by inotify_drain_all(); inotify_drain_close frees the list.
 */
int inotify_drain_later(struct rst *r, int fd);
void inotify_drain_all(struct rst *r);
void inotify_drain_close(struct rst *r);

/*
 * fanotify_restore.c: the group with its init flags, every mark added again
 * and checked against the dump in fdinfo; the events the restore causes on
 * its marks are read away right before the process resumes (the drain list
 * above: fanotify_drain, the fds events carry closed).
 */
int fanotify_check(const FanotifyFileEntry *e);
int fanotify_open(struct rst *r, const FanotifyFileEntry *e);
void fanotify_drain(int fd);

#endif
