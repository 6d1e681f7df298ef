/*
 * Terminals that are devices (tty.h): a console (/dev/console), a virtual
 * terminal (/dev/ttyN) or a serial port (/dev/ttySN), open by a node the
 * process's root still leads to. They outlive the process: restore opens the
 * node again by its path and gives the device the termios, locked termios,
 * window size and exclusive mode it had, as CRIU does (its CONSOLE, VT and
 * SERIAL tty-info entries). A device that is the controlling terminal of a
 * session the dump leads becomes it again (the leader takes it, holding a
 * node of it); one of a session led outside the dump is the job's terminal
 * (--shell-job, files.c). Input typed on it and not read yet would be lost
 * with the last close: refused, as is a hung-up one.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "ctx/proc_tree.h"
#include "files/files.h"
#include "files/tty.h"
#include "log.h"
#include "proc.h"

#include "tty.pb-c.h"

#define TTY_MAJOR	4
#define TTYAUX_MAJOR	5
#define VT_LAST		63	/* MAX_NR_CONSOLES */

/* TtyType of a console, virtual terminal or serial port node, 0 for any other. */
int tty_dev_type(const struct stat *st)
{
	unsigned maj = major(st->st_rdev), min = minor(st->st_rdev);

	if (!S_ISCHR(st->st_mode))
		return 0;
	if (maj == TTYAUX_MAJOR && min == 1)
		return TTY_TYPE__CONSOLE;
	if (maj == TTY_MAJOR && min >= 1 && min <= VT_LAST)
		return TTY_TYPE__VT;
	if (maj == TTY_MAJOR && min > VT_LAST && min < 256)
		return TTY_TYPE__SERIAL;
	return 0;
}

static const char *kind_name(int type)
{
	return type == TTY_TYPE__CONSOLE ? "a console" :
	       type == TTY_TYPE__VT ? "a virtual terminal" : "a serial port";
}

static dev_t ctty_dev(const struct proc_stat *ps)
{
	return makedev((ps->tty_nr >> 8) & 0xfff, (ps->tty_nr & 0xff) | ((ps->tty_nr >> 12) & 0xfff00));
}

static bool in_tree(const struct proc_tree *t, pid_t pid)
{
	for (int i = 0; t && i < t->n; i++)
		if (t->procs[i].pid == pid)
			return true;
	return false;
}

/* Is the device its controlling terminal, of a session whose leader the dump does not hold? */
static bool job_terminal(const struct fd_policy *p, const struct stat *st,
			 const struct proc_stat *ps)
{
	return ps->tty_nr && ctty_dev(ps) == st->st_rdev && ps->sid != p->pid &&
	       !in_tree(p->tree, ps->sid);
}

/* Does pid hold an fd on a terminal of device rdev? */
static bool holds_dev(pid_t pid, dev_t rdev)
{
	char path[320];
	struct dirent *de;
	bool found = false;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	dir = opendir(path);
	while (dir && !found && (de = readdir(dir))) {
		struct stat st;

		snprintf(path, sizeof(path), "/proc/%d/fd/%s", pid, de->d_name);
		found = de->d_name[0] != '.' && !stat(path, &st) && S_ISCHR(st.st_mode) &&
			st.st_rdev == rdev;
	}
	if (dir)
		closedir(dir);
	return found;
}

/* The node fd was opened by, as a path in the process's root, leads to it. */
static const char *path_unsupported(pid_t pid, int fd, const struct stat *st)
{
	char path[64], link[PATH_MAX], in_root[PATH_MAX + 64];
	struct stat at;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	n = readlink(path, link, sizeof(link) - 1);
	link[n > 0 ? n : 0] = 0;
	if (n > 10 && !strcmp(link + n - 10, " (deleted)"))
		return "whose device node was deleted (restore opens it again by its path)";
	snprintf(in_root, sizeof(in_root), "/proc/%d/root%s", pid, link);
	if (link[0] != '/' || stat(in_root, &at) || !S_ISCHR(at.st_mode) ||
	    at.st_rdev != st->st_rdev || at.st_ino != st->st_ino || at.st_dev != st->st_dev)
		return "whose path does not lead to its node in the process's root";
	return NULL;
}

/* The controlling terminal of a session of the dump: its leader takes it again, holding it. */
static const char *ctty_unsupported(const struct fd_policy *p, const struct stat *st,
				    const struct proc_stat *ps, char *buf, size_t len)
{
	const char *what = kind_name(tty_dev_type(st));

	if (!ps->tty_nr || ctty_dev(ps) != st->st_rdev)
		return NULL;
	if (ps->tpgid != ps->sid)
		snprintf(buf, len, "%s that is the controlling terminal of session %d, whose "
			 "foreground process group %d is not the session leader's", what, ps->sid,
			 ps->tpgid);
	else if (ps->sid != p->pid && !holds_dev(ps->sid, st->st_rdev))
		snprintf(buf, len, "%s that is the controlling terminal of session %d, whose "
			 "leader holds no fd of it (restore makes it the leader's terminal by one)",
			 what, ps->sid);
	else
		return NULL;
	return buf;
}

const char *tty_dev_unsupported(const struct fd_policy *p, int fd, const struct stat *st,
				bool *job, char *buf, size_t len)
{
	struct proc_stat ps;
	const char *w;

	*job = false;
	if (proc_read_stat(p->pid, &ps))
		return "a terminal of a process memdump cannot read";
	if (job_terminal(p, st, &ps)) {
		*job = true;	/* the job's terminal: --shell-job (files.c) */
		return NULL;
	}
	w = path_unsupported(p->pid, fd, st);
	if (w) {
		snprintf(buf, len, "%s %s", kind_name(tty_dev_type(st)), w);
		return buf;
	}
	return ctty_unsupported(p, st, &ps, buf, len);
}

bool tty_dev_reopened(const struct fd_policy *p, const struct stat *st)
{
	struct proc_stat ps;

	return tty_dev_type(st) && !proc_read_stat(p->pid, &ps) && !job_terminal(p, st, &ps);
}

bool tty_devtty_of_dev(const struct fd_policy *p, const struct stat *st)
{
	struct stat ctty = { .st_mode = S_IFCHR };
	struct proc_stat ps;

	if (!S_ISCHR(st->st_mode) || st->st_rdev != makedev(TTYAUX_MAJOR, 0) ||
	    proc_read_stat(p->pid, &ps) || !ps.tty_nr)
		return false;
	ctty.st_rdev = ctty_dev(&ps);
	return tty_dev_type(&ctty) && !job_terminal(p, &ctty, &ps);
}

static int refuse(struct dump_ctx *d, int fd, const struct file_desc *f, const char *what)
{
	return fail(-EOPNOTSUPP, "process %d: fd %d (%s, %s) %s, which memdump cannot dump yet",
		    d->pid, fd, f->path ? f->path : "?", kind_name(tty_dev_type(&f->st)), what);
}

/* termios, locked termios, window size and exclusive mode; a hung-up file has none. */
static int read_dev_modes(struct dump_ctx *d, int fd, int lfd, struct file_desc *f)
{
	struct tty_state *t = f->tty;
	int n = 0, ret = kterm_get(lfd, &t->t);

	if (ret == -EIO)
		return refuse(d, fd, f, "was hung up");
	if (!ret)
		ret = kterm_get_locked(lfd, &t->locked);
	if (!ret && (ioctl(lfd, TIOCGWINSZ, &t->ws) || ioctl(lfd, TIOCGEXCL, &t->excl)))
		ret = -errno;
	if (ret)
		return fail(ret, "cannot read terminal fd %d of process %d: %s", fd, d->pid,
			    strerror(-ret));
	if (ioctl(lfd, TIOCGETD, &n) || n != 0)
		return refuse(d, fd, f, "has a line discipline other than N_TTY");
	if (ioctl(lfd, TIOCINQ, &n) || n > 0) {
		char what[96];

		snprintf(what, sizeof(what), "has %d bytes of input not read yet (a device's input "
			 "cannot be taken and put back)", n);
		return refuse(d, fd, f, what);
	}
	return 0;
}

int tty_dev_collect(struct dump_ctx *d, int fd, struct file_desc *f)
{
	struct tty_state *t = calloc(1, sizeof(*t));
	struct proc_stat ps;
	int lfd, ret;

	if (!t)
		return -ENOMEM;
	f->tty = t;
	t->fd = fd;
	t->local = -1;
	t->dev_type = tty_dev_type(&f->st);
	t->info_id = TTY_DEV_INFO_ID(f->st.st_rdev);
	lfd = syscall(SYS_pidfd_getfd, d->in.pidfd, fd, 0);
	if (lfd < 0)
		return fail(-errno, "cannot take terminal fd %d of process %d: %m", fd, d->pid);
	ret = read_dev_modes(d, fd, lfd, f);
	close(lfd);
	if (ret)
		return ret;
	if (proc_read_stat(d->pid, &ps))
		return fail(-EIO, "process %d: cannot read its stat", d->pid);
	t->ctty = ps.tty_nr && ctty_dev(&ps) == f->st.st_rdev;
	t->sid = t->ctty ? (uint32_t)ps.sid : 0;
	t->pgrp = t->ctty ? (uint32_t)ps.tpgid : 0;
	return 0;
}
