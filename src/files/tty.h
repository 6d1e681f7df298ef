/*
 * Pseudo-terminal pairs the target holds, both ends (tty.c): each end's
 * termios, locked termios, window size, packet mode, lock and exclusive
 * state, the pty index, whether the slave is the process's controlling
 * terminal, and the bytes queued in either direction, in CRIU's
 * tty-info.img and tty-data.img. A slave whose master a runtime holds
 * (a container's terminal) is dumped alone: its settings, no queued byte.
 */
#ifndef MEMDUMP_DUMP_TTY_H
#define MEMDUMP_DUMP_TTY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "ptyq.h"
#include "ctx/restore_ctx.h"
#include "tty.pb-c.h"

struct dump_ctx;
struct file_desc;
struct fd_policy;

/* tty-info id of /dev/tty, the process's controlling terminal (a pty slave of the dump). */
#define TTY_CTTY_INFO_ID	0x40000000u
/* tty-info id of the job's terminal (--shell-job): its termios, window size, foreground group,
 * given to the restoring shell's terminal; files.img keeps tty_info_id 0 for it. */
#define TTY_JOB_INFO_ID		0x40000001u
/* tty-info id of a console, virtual terminal or serial port (tty_dev.c), by its device. */
#define TTY_DEV_INFO_ID(rdev)	(0x20000000u | (uint32_t)(major(rdev) & 0xfff) << 16 | \
				 (uint32_t)(minor(rdev) & 0xffff))
#define TTY_IS_DEV_INFO_ID(id)	(((id) & 0xf0000000u) == 0x20000000u)

struct tty_state {
	bool master;
	uint32_t index;		/* /dev/pts/INDEX */
	uint32_t info_id;	/* its tty-info.img entry (one per end) */
	struct kterm t, locked;	/* the slave's (a master shows its slave's) */
	struct winsize ws;
	int pkt, lock, excl;
	bool ctty;		/* slave: the process's controlling terminal */
	uint32_t sid, pgrp;
	int fd;			/* a target fd of it */
	int local;		/* master: memdump's copy (pidfd_getfd), -1 */
	char *in, *out;		/* master: queued for the slave's reader, the master's */
	size_t in_len, out_len;
	uint32_t *lines;	/* master, canonical input: its lines (ptyq.h) */
	size_t nr_lines;
	bool taken;		/* master: the queues were read, not yet put back */
	bool orphan;		/* slave whose master a runtime holds (fd_policy.ext_tty) */
	bool devtty;		/* /dev/tty: index is the controlling terminal's (TTY_CTTY_INFO_ID) */
	bool job;		/* the job's terminal (TTY_JOB_INFO_ID) */
	int dev_type;		/* a device (tty_dev.c): its TtyType, 0: a pty end */
	bool hung;		/* slave: hung up, its master closed (no modes: CRIU's hung entry) */
};

/* A /dev/ptmx master or a /dev/pts/N slave. */
bool tty_is_pty(const struct stat *st);
/*
 * Why a pty end cannot be dumped (its other end outside the process, a slave
 * of another devpts, a controlling terminal of a session it does not lead),
 * or NULL. A slave whose master is outside the dump is dumped alone when
 * the policy says a runtime holds the master (orphan_pts_master, --external
 * tty[..]); else it goes to the caller's terminal rules (--shell-job):
 * *external is set.
 */
const char *tty_pty_unsupported(const struct fd_policy *p, int fd, const struct stat *st,
				bool *external, char *buf, size_t len);
/*
 * /dev/tty whose process's controlling terminal is a pty slave of a pair the
 * dump holds (restore opens /dev/tty again once that terminal is made), or
 * false (the job's terminal: --shell-job). *why (to buf) when it cannot be.
 */
bool tty_devtty_of_pair(const struct fd_policy *p, const struct stat *st, const char **why,
			char *buf, size_t len);
/*
 * A console, virtual terminal or serial port node (tty_dev.c): its TtyType
 * (CONSOLE, VT, SERIAL), 0 for any other file.
 */
int tty_dev_type(const struct stat *st);
/*
 * Why such a device on fd cannot be dumped (its node gone from the process's
 * root, a controlling terminal restore cannot make again), or NULL. *job: it is
 * the controlling terminal of a session led outside the dump (the job's terminal,
 * the caller's --shell-job rules).
 */
const char *tty_dev_unsupported(const struct fd_policy *p, int fd, const struct stat *st,
				bool *job, char *buf, size_t len);
/* /dev/tty whose controlling terminal is such a device, not the job's terminal (refused:
 * /dev/tty is opened again for a pty pair's only). */
bool tty_devtty_of_dev(const struct fd_policy *p, const struct stat *st);
/* A device the restore opens again by its path (not the job's terminal)? */
bool tty_dev_reopened(const struct fd_policy *p, const struct stat *st);
/* Its termios, locked termios, window size, exclusive mode, controlling terminal. */
int tty_dev_collect(struct dump_ctx *d, int fd, struct file_desc *f);
/*
 * A pty slave hung up because its master was closed (its /dev/pts node
 * deleted, every fd of it hung up): restore makes a pair at its index, opens
 * the slave and closes the master. Why it cannot be, or NULL.
 */
bool tty_hung_slave(pid_t pid, int fd, const struct stat *st);
const char *tty_hung_unsupported(const struct fd_policy *p, int fd, const struct stat *st,
				 char *buf, size_t len);
/* A pty slave whose master is not in the process, not declared a runtime's (the job's
 * terminal). */
bool tty_external(const struct fd_policy *p, const struct stat *st);
/* The frozen target's pty end on fd: its state (refusing what cannot be kept). */
int tty_collect(struct dump_ctx *d, int fd, struct file_desc *f);
/* The job's terminal on fd (--shell-job): its termios, window size, session and foreground. */
int tty_collect_job(struct dump_ctx *d, int fd, struct file_desc *f);
/* tty-info.img and tty-data.img; the queues are read (and kept until put back). */
int tty_write(struct dump_ctx *d);
/* The target runs on (--leave-running, or a failed dump): its queued bytes go back. */
int tty_put_back(struct dump_ctx *d);
void tty_state_free(struct tty_state *t);

/* Restore (its _restore.c files) */

/*
 * tty.c: a pty end (tty_info_id set): its pair opened at its index with
 * every setting and queued byte; checked before anything starts; the
 * controlling terminal taken again in the child, once it leads its session.
 */
int tty_open(struct rst *r, const FileEntry *fe, struct rdesc *d);
/* tty_restore.c: an image's termios as the kernel takes it (all zero for none). */
void tty_to_kterm(const TermiosEntry *e, struct kterm *k);
/* tty_dev_restore.c: a console, vt or serial port (e: its entry) opened again by its path. */
int tty_dev_check(struct rst *r, const FileEntry *fe, const TtyInfoEntry *e);
int tty_dev_open(struct rst *r, const FileEntry *fe, struct rdesc *d, const TtyInfoEntry *e);
/* The pairs made for hung-up slaves: their masters closed (the slaves hung up again) once
 * memdump forked the processes holding them. */
void tty_close_hung(struct rst *r);
int tty_check(struct rst *r, const FileEntry *fe);
int tty_ctty_in_child(struct rst *r, char *why, size_t len);
/* Its fds on /dev/tty opened again, its session's terminal made (after tty_ctty_in_child). */
int tty_devtty_in_child(struct rst *r, char *why, size_t len);
/* --shell-job: memdump's terminal n given for the job's (fe): the job's termios and window
 * size on it; in the child, its group made the foreground again if it was. */
int tty_job_open(struct rst *r, const FileEntry *fe, int n);
int tty_job_fg_in_child(struct rst *r);
/* In a forked process leading its session: before it forks its children (tree.c). */
int tty_ctty_early(struct rst *r, char *why, size_t len);
/* Every --inherit-fd tty[..] key names a slave of the dump whose master was outside. */
int tty_check_keys(struct rst *r);
void tty_close_orphans(struct rst *r);
/* Its controlling terminal's foreground group is its group: memdump's fd of it (open_fds);
 * in the forked process, once in its group, the group made the foreground again. */
int tty_prepare_fg(struct rst *r);
int tty_fg_early(struct rst *r, char *why, size_t len);
void tty_close_fg(struct rst *r);
/* A bind mount's source that is /dev/pts/N of a devpts the restore made: the pty made
 * first (kept for the slave of index N, whose master was outside), so that it exists. */
int tty_make_bound_pts(struct rst *r, const char *from);

#endif
