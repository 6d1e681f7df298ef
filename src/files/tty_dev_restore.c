/*
 * A console, virtual terminal or serial port (files/tty_dev.c for what is
 * saved): its node opened again by its path (never as a controlling terminal
 * by the open: O_NOCTTY), checked to be the same device, and the device given
 * its locked termios, termios, window size and exclusive mode back. A session
 * leader's controlling terminal is taken again by the leader (tty_restore.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "ptyq.h"
#include "ctx/restore_ctx.h"
#include "files/tty.h"

#include "tty.pb-c.h"

static bool dev_entry(const TtyInfoEntry *e)
{
	return e && (e->type == TTY_TYPE__CONSOLE || e->type == TTY_TYPE__VT ||
		     e->type == TTY_TYPE__SERIAL);
}

int tty_dev_check(struct rst *r, const FileEntry *fe, const TtyInfoEntry *e)
{
	char buf[PATH_MAX];
	const char *path;
	struct stat st;

	if (!dev_entry(e) || !fe->tty->name)
		return fail(-EIO, "tty-info.img: no terminal device entry %#x for file %u",
			    fe->tty->tty_info_id, fe->id);
	path = rst_path(r, fe->tty->name, buf, sizeof(buf));
	if (stat(path, &st))
		return fail(-errno, "terminal %s: %s", fe->tty->name, strerror(errno));
	if (!S_ISCHR(st.st_mode) || st.st_rdev != e->rdev)
		return fail(-ENXIO, "terminal %s is no longer the device %#x it was", fe->tty->name,
			    e->rdev);
	return 0;
}

/* Locked termios first (they bind the others), termios, window size, exclusive mode. */
static int set_modes(int fd, const TtyInfoEntry *e)
{
	struct winsize ws = { 0 };
	struct kterm t;
	int ret = 0;

	if (e->termios_locked) {
		tty_to_kterm(e->termios_locked, &t);
		ret = kterm_set_locked(fd, &t);
	}
	if (!ret && e->termios) {
		tty_to_kterm(e->termios, &t);
		ret = kterm_set(fd, &t);
	}
	if (!ret && e->winsize) {
		ws.ws_row = e->winsize->ws_row;
		ws.ws_col = e->winsize->ws_col;
		ws.ws_xpixel = e->winsize->ws_xpixel;
		ws.ws_ypixel = e->winsize->ws_ypixel;
		ret = ioctl(fd, TIOCSWINSZ, &ws) ? -errno : 0;
	}
	if (!ret && ioctl(fd, e->exclusive ? TIOCEXCL : TIOCNXCL))
		ret = -errno;
	return ret;
}

/* Its modes, SIGTTOU ignored (memdump may be in the background of that terminal). */
static int give_modes(int fd, const TtyInfoEntry *e)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	int ret;

	sigaction(SIGTTOU, &ign, &old);
	ret = set_modes(fd, e);
	sigaction(SIGTTOU, &old, NULL);
	return ret;
}

int tty_dev_open(struct rst *r, const FileEntry *fe, struct rdesc *d, const TtyInfoEntry *e)
{
	int flags = fe->tty->flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_ASYNC | O_CLOEXEC);
	char buf[PATH_MAX];
	const char *path = rst_path(r, fe->tty->name, buf, sizeof(buf));
	struct stat st;
	int ret = 0;

	/* O_NONBLOCK: a serial port's open waits for its carrier */
	d->fd = open(path, flags | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (d->fd < 0)
		return fail(-errno, "cannot open terminal %s: %s", fe->tty->name, strerror(errno));
	if (fstat(d->fd, &st) || !S_ISCHR(st.st_mode) || st.st_rdev != e->rdev)
		ret = fail(-ENXIO, "terminal %s is no longer the device %#x it was", fe->tty->name,
			   e->rdev);
	if (!ret && (ret = give_modes(d->fd, e)))
		fail(ret, "cannot give terminal %s its modes: %s", fe->tty->name, strerror(-ret));
	if (!ret && fcntl(d->fd, F_SETFL, flags))
		ret = fail(-errno, "cannot set the flags of terminal %s: %s", fe->tty->name,
			   strerror(errno));
	if (ret) {
		close(d->fd);
		d->fd = -1;
	}
	return ret;
}
