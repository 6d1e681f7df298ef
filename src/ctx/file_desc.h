/*
 * The open file descriptions of the dump context (dump_ctx.files): every
 * one gets an id in files.img; fds (fdinfo-1.img), file mappings, the exe
 * file, cwd and root refer to them by id. Any kind of state that meets a
 * file registers it here (defined in files/: files.c, ghost.c); files/files.h
 * has what the pipeline calls of the files kind.
 */
#ifndef MEMDUMP_FILE_DESC_H
#define MEMDUMP_FILE_DESC_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "evloop/evloop.h"

struct dump_ctx;
struct file_set;

enum file_kind { FK_REG, FK_PIPE, FK_FIFO, FK_TTY, FK_MEMFD, FK_EVENTFD, FK_TIMERFD,
		 FK_SIGNALFD, FK_EPOLL, FK_INOTIFY, FK_SOCKET, FK_MQUEUE, FK_PIDFD, FK_NSFILE,
		 FK_FANOTIFY };

struct sk_state;
struct tty_state;

/*
 * Who gets an open file's SIGIO/SIGURG (F_SETOWN_EX: pid_type F_OWNER_TID, _PID
 * or _PGRP, pid; 0: nobody), with which signal (F_SETSIG, 0: SIGIO) and the
 * uid/euid of the process that set it (F_GETOWNER_UIDS): CRIU's fown_entry.
 */
struct fd_owner {
	uint32_t uid, euid, signum, pid_type, pid;
};

struct file_desc {
	int id;
	enum file_kind kind;
	char *path;		/* REG, FIFO, TTY; MQUEUE: the queue's name */
	uint32_t flags;		/* open flags */
	uint64_t pos;
	struct stat st;
	uint64_t pipe_id;	/* PIPE, FIFO: the pipe's inode; MEMFD: its shmid */
	int fifo_reg_id;	/* FIFO: REG entry with its path */
	int ghost_id;		/* REG of a deleted file: its ghost (ghost.c), 0: none */
	char *deleted_name;	/* REG: the deleted name it was open by, path another link */
	uint64_t proc_start;	/* REG: /proc file of a process outside the dump: its start time */
	pid_t gone_pid;		/* REG: the /proc/PID directory of a process that exited (a
				 * cwd: files/proccwd.h), PID; 0: none */
	struct fd_owner fown;	/* REG, PIPE, TTY, SOCKET: its SIGIO owner */
	struct sk_state *sk;	/* SOCKET (sockets.h) */
	struct tty_state *tty;	/* TTY of a pty pair in the process (tty.h), or NULL */
	int inflight_fd;	/* only in flight (SCM_RIGHTS): memdump's copy, 0: none */
	union {			/* the event-loop kinds (evloop.h) */
		struct eventfd_state efd;
		struct timerfd_state tfd;
		uint64_t sigmask;
		struct epoll_state ep;
		struct inotify_state ify;
		struct fanotify_state ffy;
		int32_t pidfd_pid;	/* PIDFD: the process, -1: exited (pidfd.c) */
		uint32_t ns_cflag;	/* NSFILE: its kind, CLONE_NEW* (nsfile.c) */
	};
};

struct fd_entry {
	int fd;
	int id;
	bool cloexec;
	pid_t share_pid;	/* a tree: the earlier process holding its description, or 0 */
	int share_fd;		/* and its fd there */
};

struct fd_policy;	/* dump.h */

/*
 * A REG entry for a path (deduplicated by device and inode); returns its id.
 * A deleted file's path ends in " (deleted)": its content is read through
 * src (a /proc link to it) into a ghost.
 */
int files_add_path(struct dump_ctx *d, const char *path, const struct stat *st, int flags,
		   const char *src);
int files_id_of_proc_link(struct dump_ctx *d, const char *link);	/* cwd, root, exe */
/*
 * A file in flight on UNIX socket ino (SCM_RIGHTS), memdump's copy fd (kept
 * open by the caller until the images are written): the id of the target's
 * description of it, or of a new one (a pipe end, a regular file, a FIFO);
 * any other file is refused, naming ino.
 */
int files_add_inflight(struct dump_ctx *d, int fd, uint64_t ino);
/* The id of the target's own description of memdump's copy fd (kcmp), 0: none; refused
 * (naming ino) when the restored process opens it itself (a pidfd, ...). */
int files_inflight_held(struct dump_ctx *d, int fd, uint64_t ino);
/* Memdump's copy fd is a file the restored process opens itself (a pidfd, a namespace
 * or /proc file), which memdump cannot send with a message: what it is; NULL: sendable. */
const char *files_unsendable(int fd);

/* files/files.c: the owner of fd of process pid's open file, read on a pidfd_getfd copy */
int fd_owner_read(pid_t pid, int fd, struct fd_owner *o);
/* The fd kinds whose owner memdump restores: regular files, pipes, sockets, terminals. */
bool fd_owner_carried(const struct stat *st, const char *link);
struct proc_tree;
/*
 * Why restore cannot give owner w of an fd of process pid (tree: its dumped tree,
 * or NULL) back; NULL: it can, or there is no owner.
 */
const char *fd_owner_problem(pid_t pid, const struct proc_tree *tree, const struct fd_owner *w);
/* o as a fown_entry (e: a FownEntry of fown.pb-c.h) */
void fd_owner_fill(void *e, const struct fd_owner *o);

/* files/ghost.c: deleted files */
/* A /proc link or maps name ending in " (deleted)" (memfds excluded). */
bool ghost_is_deleted(const char *name);
/*
 * Why the deleted file name (" (deleted)" at its end) cannot be a ghost: its
 * kind, a size above limit, a directory that is gone too (as process pid sees its
 * directories, under its root); in why. Else false.
 */
bool ghost_unsupported(pid_t pid, const char *name, const struct stat *st, uint64_t limit,
		       char *why, size_t len);

#endif
