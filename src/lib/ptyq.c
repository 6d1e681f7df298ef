/* Pseudo-terminal termios and queued bytes put back (include/ptyq.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "ptyq.h"

#define K_TCGETS2	_IOR('T', 0x2A, struct kterm)
#define K_TCSETS2	_IOW('T', 0x2B, struct kterm)
#define PTY_LNEXT	0x16	/* ^V quotes a byte while lines are put back */
#define PTY_EOF		0x04

int kterm_get(int fd, struct kterm *t)
{
	memset(t, 0, sizeof(*t));
	return ioctl(fd, K_TCGETS2, t) ? -errno : 0;
}

int kterm_set(int fd, const struct kterm *t)
{
	return ioctl(fd, K_TCSETS2, t) ? -errno : 0;
}

int kterm_get_locked(int fd, struct kterm *t)
{
	memset(t, 0, sizeof(*t));
	return ioctl(fd, TIOCGLCKTRMIOS, t) ? -errno : 0;
}

int kterm_set_locked(int fd, const struct kterm *t)
{
	return ioctl(fd, TIOCSLCKTRMIOS, t) ? -errno : 0;
}

int pty_open_peer(int master, int flags)
{
	int locked = 0, unlock = 0, fd;

	if (ioctl(master, TIOCGPTLCK, &locked))
		return -errno;
	if (locked && ioctl(master, TIOCSPTLCK, &unlock))
		return -errno;
	/* O_CLOEXEC given here would stay in the file's flags (fdinfo shows it) */
	fd = ioctl(master, TIOCGPTPEER, (flags & ~O_CLOEXEC) | O_NOCTTY);
	fd = fd < 0 ? -errno : fd;
	if (fd >= 0)
		fcntl(fd, F_SETFD, FD_CLOEXEC);
	if (locked && ioctl(master, TIOCSPTLCK, &locked) && fd >= 0) {
		close(fd);
		return -errno;
	}
	return fd;
}

/* The slave's termios while bytes go back: nothing interpreted, echoed or converted. */
static void put_back_mode(const struct kterm *t, struct kterm *w)
{
	static const int specials[] = { VINTR, VQUIT, VERASE, VKILL, VEOF, VEOL, VEOL2, VSTART,
					VSTOP, VSUSP, VREPRINT, VWERASE, VLNEXT, VDISCARD };

	*w = *t;
	w->iflag = 0;
	w->oflag &= ~OPOST;
	w->lflag &= ~(ISIG | ECHO | ECHOE | ECHOK | ECHONL | ECHOCTL | ECHOPRT | ECHOKE | IEXTEN |
		      EXTPROC | TOSTOP | FLUSHO | PENDIN);
	for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]); i++)
		w->cc[specials[i]] = 0;	/* _POSIX_VDISABLE */
	if (w->lflag & ICANON) {	/* quoting only: no other special character */
		w->lflag |= IEXTEN;
		w->cc[VLNEXT] = PTY_LNEXT;
	}
}

static int inject(int slave, const unsigned char *in, size_t n, char *why, size_t len)
{
	for (size_t i = 0; i < n; i++) {
		if (ioctl(slave, TIOCSTI, &in[i])) {
			snprintf(why, len, "cannot put back input byte %zu of %zu (TIOCSTI): %s", i,
				 n, strerror(errno));
			return -errno;
		}
	}
	return 0;
}

/* A line's end: a newline, an EOL byte c (VEOL set to it a moment), or an end-of-file (c 0). */
static int terminate(int slave, struct kterm *w, uint8_t c, char *why, size_t len)
{
	int slot = !c ? VEOF : c == '\n' ? -1 : VEOL, ret = 0;
	uint8_t ch = c ? c : PTY_EOF;

	if (slot >= 0) {
		w->cc[slot] = ch;
		ret = kterm_set(slave, w);
	}
	if (!ret)
		ret = inject(slave, &ch, 1, why, len);
	if (slot >= 0) {
		w->cc[slot] = 0;
		if (kterm_set(slave, w) && !ret)
			ret = -errno;
	}
	if (ret && !why[0])
		snprintf(why, len, "cannot end a line of its input: %s", strerror(-ret));
	return ret;
}

/* Canonical input: each line's bytes (a newline or ^V in it quoted), then its end. */
static int inject_lines(int slave, struct kterm *w, const struct pty_queue *q, char *why,
			size_t len)
{
	static const uint8_t lnext = PTY_LNEXT;
	size_t start = 0;
	int ret = 0;

	for (size_t i = 0; i <= q->nr_lines && !ret; i++) {
		bool tail = i == q->nr_lines, eof = !tail && (q->lines[i] & 1);
		size_t end = tail ? q->in_len : q->lines[i] >> 1;
		size_t body = tail || eof ? end : end - 1;

		if (end > q->in_len || body < start) {
			snprintf(why, len, "line %zu of its input ends at %zu, outside its %zu bytes",
				 i, end, q->in_len);
			return -EINVAL;
		}
		for (size_t k = start; k < body && !ret; k++) {
			if (q->in[k] == '\n' || q->in[k] == PTY_LNEXT)
				ret = inject(slave, &lnext, 1, why, len);
			if (!ret)
				ret = inject(slave, &q->in[k], 1, why, len);
		}
		if (!ret && !tail)
			ret = terminate(slave, w, eof ? 0 : q->in[end - 1], why, len);
		start = end;
	}
	return ret;
}

static int write_out(int slave, const char *out, size_t n, char *why, size_t len)
{
	while (n) {
		ssize_t w = write(slave, out, n);

		if (w <= 0) {
			int err = w < 0 ? errno : EIO;

			snprintf(why, len, "cannot put back %zu output bytes: %s", n, strerror(err));
			return -err;
		}
		out += w;
		n -= w;
	}
	return 0;
}

static int put_back_on(int slave, const struct kterm *t, const struct pty_queue *q, char *why,
		       size_t len)
{
	struct kterm w, locked, none = { 0 };
	int ret = kterm_get_locked(slave, &locked);

	if (!ret)
		ret = kterm_set_locked(slave, &none);
	if (ret) {
		snprintf(why, len, "cannot clear its locked termios: %s", strerror(-ret));
		return ret;
	}
	put_back_mode(t, &w);
	ret = kterm_set(slave, &w);
	if (ret)
		snprintf(why, len, "cannot set its termios: %s", strerror(-ret));
	if (!ret)
		ret = w.lflag & ICANON ? inject_lines(slave, &w, q, why, len) :
					 inject(slave, q->in, q->in_len, why, len);
	if (!ret)
		ret = write_out(slave, (const char *)q->out, q->out_len, why, len);
	if (kterm_set(slave, t) && !ret) {
		ret = -errno;
		snprintf(why, len, "cannot set its termios back: %s", strerror(errno));
	}
	if (kterm_set_locked(slave, &locked) && !ret) {
		ret = -errno;
		snprintf(why, len, "cannot set its locked termios back: %s", strerror(errno));
	}
	return ret;
}

int pty_put_back(int master, const struct kterm *t, const struct pty_queue *q, char *why,
		 size_t len)
{
	int pkt = 0, off = 0, slave, ret;

	why[0] = 0;
	if (!q->in_len && !q->out_len && !q->nr_lines)
		return 0;
	if (ioctl(master, TIOCGPKT, &pkt) || (pkt && ioctl(master, TIOCPKT, &off))) {
		snprintf(why, len, "cannot read or clear its packet mode: %s", strerror(errno));
		return -errno;
	}
	slave = pty_open_peer(master, O_RDWR | O_NONBLOCK);
	if (slave < 0) {
		snprintf(why, len, "cannot open its slave: %s", strerror(-slave));
		ret = slave;
	} else {
		ret = put_back_on(slave, t, q, why, len);
		close(slave);
	}
	if (pkt && ioctl(master, TIOCPKT, &pkt) && !ret) {
		ret = -errno;
		snprintf(why, len, "cannot set its packet mode back: %s", strerror(errno));
	}
	return ret;
}
