/* Pseudo-terminal termios and queued bytes put back (include/ptyq.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "ptyq.h"

#define K_TCGETS2	_IOR('T', 0x2A, struct kterm)
#define K_TCSETS2	_IOW('T', 0x2B, struct kterm)

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

static int put_back_on(int slave, const struct kterm *t, const void *in, size_t in_len,
		       const void *out, size_t out_len, char *why, size_t len)
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
		ret = inject(slave, in, in_len, why, len);
	if (!ret)
		ret = write_out(slave, out, out_len, why, len);
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

int pty_put_back(int master, const struct kterm *t, const void *in, size_t in_len,
		 const void *out, size_t out_len, char *why, size_t len)
{
	int pkt = 0, off = 0, slave, ret;

	if (!in_len && !out_len)
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
		ret = put_back_on(slave, t, in, in_len, out, out_len, why, len);
		close(slave);
	}
	if (pkt && ioctl(master, TIOCPKT, &pkt) && !ret) {
		ret = -errno;
		snprintf(why, len, "cannot set its packet mode back: %s", strerror(errno));
	}
	return ret;
}
