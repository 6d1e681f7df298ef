/* t-tty: a pseudo terminal pair (fd 20 = master /dev/ptmx, fd 21 = slave
 * /dev/pts/N) with distinctive termios settings on the slave, window size
 * set, a locked termios flag, and bytes queued both ways: input for the
 * slave's reader (a whole line and a line being typed) and output of the
 * slave not yet read by the master (ONLCR already applied). After SIGUSR1
 * the fds must still be a connected pty pair with the same index, settings
 * and exactly the same queued bytes.
 *   t-tty DIR [raw|pkt|ctty]
 * raw: the slave in raw mode, input with bytes a canonical or ISIG terminal
 *      would interpret (^C, ^D, DEL, CR, NUL);
 * pkt: the master in packet mode (reads start with TIOCPKT_DATA);
 * eof: canonical input with lines ended by EOF (^E here), a bare EOF, an EOL
 *      byte ('!') and a quoted (^V) newline inside a line;
 * ctty: the process leads a session whose controlling terminal is the slave;
 * lone: the slave is closed (a master alone, which memdump refuses);
 * pktstatus: packet mode with a status byte waiting (refused, kept).
 * READY <pid> <pts-path> */
#include "tlib.h"
#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>

static const char line_in[] = "typed\n", part_in[] = "par", raw_in[] = "a\003b\004\177\r\n\0z";
static const char out_pending[] = "pend\n", out_seen[] = "pend\r\n";
static const char eof_in[] = "l1\nab\005\005x\026\ny\nc!";
static const char *const eof_reads[] = { "l1\n", "ab", "", "x\ny\n", "c!" };
static const char *mode = "";

static void put(int fd, const char *buf, size_t n)
{
	if (write(fd, buf, n) != (ssize_t)n)
		t_fail("write fd %d: %s", fd, strerror(errno));
}

/* What the slave's reader has not read yet, as typed on the master. */
static void queue_input(void)
{
	if (!strcmp(mode, "raw")) {
		put(20, raw_in, sizeof(raw_in) - 1);
		return;
	}
	if (!strcmp(mode, "eof"))
		put(20, eof_in, sizeof(eof_in) - 1);
	else
		put(20, line_in, strlen(line_in));
	put(20, part_in, strlen(part_in));
}

static void check_input(void)
{
	char buf[64];
	ssize_t n;

	fcntl(21, F_SETFL, O_RDWR | O_NONBLOCK);
	if (!strcmp(mode, "raw")) {
		n = read(21, buf, sizeof(buf));
		if (n != (ssize_t)sizeof(raw_in) - 1 || memcmp(buf, raw_in, n))
			t_fail("raw input changed (read %zd)", n);
		return;
	}
	if (!strcmp(mode, "eof")) {
		for (size_t i = 0; i < sizeof(eof_reads) / sizeof(eof_reads[0]); i++) {
			n = read(21, buf, sizeof(buf));
			if (n != (ssize_t)strlen(eof_reads[i]) || memcmp(buf, eof_reads[i], n))
				t_fail("read %zu of the pending lines: %zd bytes (%.*s)", i, n,
				       (int)(n > 0 ? n : 0), buf);
		}
	} else {
		n = read(21, buf, sizeof(buf));
		if (n != (ssize_t)strlen(line_in) || memcmp(buf, line_in, n))
			t_fail("pending line lost (read %zd)", n);
	}
	n = read(21, buf, sizeof(buf));
	if (n >= 0 || errno != EAGAIN)
		t_fail("the line being typed became readable (read %zd)", n);
	if (write(20, "t\n", 2) != 2)
		t_fail("write master");
	t_sleep_ms(50);
	n = read(21, buf, sizeof(buf));
	if (n != 5 || memcmp(buf, "part\n", 5))
		t_fail("the line being typed was not kept (read %zd: %.*s)", n, (int)(n > 0 ? n : 0), buf);
}

static void check_output(void)
{
	char buf[64];
	size_t skip = !strcmp(mode, "pkt") ? 1 : 0;
	ssize_t n;

	fcntl(20, F_SETFL, O_RDWR | O_NONBLOCK);
	n = read(20, buf, sizeof(buf));
	if (n != (ssize_t)(strlen(out_seen) + skip) || (skip && buf[0]) ||
	    memcmp(buf + skip, out_seen, strlen(out_seen)))
		t_fail("pending output lost (read %zd)", n);
	if (write(21, "out\n", 4) != 4)
		t_fail("write slave: %s", strerror(errno));
	t_sleep_ms(50);
	n = read(20, buf, sizeof(buf));
	if (n < (ssize_t)(4 + skip) || memcmp(buf + skip, "out", 3))
		t_fail("master does not see slave output (read %zd)", n);
}

static void check_ctty(const char *pts)
{
	int fd;

	if (strcmp(mode, "ctty"))
		return;
	if (getsid(0) != getpid() || tcgetsid(21) != getpid())
		t_fail("not the session leader of its terminal (sid %d, tty's %d)", getsid(0),
		       tcgetsid(21));
	if (tcgetpgrp(21) != getpgrp())
		t_fail("not the foreground group of %s", pts);
	fd = open("/dev/tty", O_RDWR);
	if (fd < 0)
		t_fail("no controlling terminal: /dev/tty: %s", strerror(errno));
	close(fd);
}

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);
	if (argc > 2)
		mode = argv[2];
	if (!strcmp(mode, "ctty") && setsid() < 0)
		t_fail("setsid: %s", strerror(errno));
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0 || grantpt(m) || unlockpt(m))
		t_fail("posix_openpt: %s", strerror(errno));
	char pts[64];
	snprintf(pts, sizeof(pts), "%s", ptsname(m));
	int s = open(pts, O_RDWR | (strcmp(mode, "ctty") ? O_NOCTTY : 0));
	if (s < 0)
		t_fail("open %s: %s", pts, strerror(errno));
	if (dup2(m, 20) != 20 || dup2(s, 21) != 21)
		t_fail("dup2");
	close(m);
	close(s);

	struct termios tio;
	tcgetattr(21, &tio);
	if (!strcmp(mode, "raw"))
		cfmakeraw(&tio);
	else
		tio.c_lflag &= ~(ECHO | ECHOE);         /* no echo, keep ICANON */
	tio.c_cc[VINTR] = 0x07;                 /* ^G */
	tio.c_cc[VEOF] = 0x05;                  /* ^E */
	if (!strcmp(mode, "eof"))
		tio.c_cc[VEOL] = '!';
	cfsetospeed(&tio, B9600);
	cfsetispeed(&tio, B9600);
	tio.c_oflag |= OPOST | ONLCR;
	tcsetattr(21, TCSANOW, &tio);
	struct termios lk = { .c_cflag = CLOCAL };
	if (ioctl(21, TIOCSLCKTRMIOS, &lk))
		t_fail("TIOCSLCKTRMIOS: %s", strerror(errno));
	struct winsize ws = { .ws_row = 33, .ws_col = 111, .ws_xpixel = 7 };
	ioctl(21, TIOCSWINSZ, &ws);
	int one = 1;
	if ((!strcmp(mode, "pkt") || !strcmp(mode, "pktstatus")) && ioctl(20, TIOCPKT, &one))
		t_fail("TIOCPKT: %s", strerror(errno));
	queue_input();
	if (write(21, out_pending, strlen(out_pending)) != (ssize_t)strlen(out_pending))
		t_fail("write slave");
	t_sleep_ms(50);

	if (!strcmp(mode, "lone"))
		close(21);
	if (!strcmp(mode, "pktstatus"))
		tcflush(21, TCIFLUSH);	/* TIOCPKT_FLUSHREAD for the master's reader */
	t_ready("%s", pts);
	t_wait_usr1();
	t_check_common();
	if (!strcmp(mode, "pktstatus")) {
		char st[8];

		fcntl(20, F_SETFL, O_RDWR | O_NONBLOCK);
		if (read(20, st, sizeof(st)) != 1 || !(st[0] & TIOCPKT_FLUSHREAD))
			t_fail("the packet status byte was lost");
		t_pass(mode);
	}
	if (!strcmp(mode, "lone")) {
		if (!isatty(20) || strcmp(ptsname(20), pts))
			t_fail("the master changed");
		t_pass(mode);
	}

	if (!isatty(21) || !isatty(20))
		t_fail("fds 20/21 are no longer terminals");
	if (strcmp(ptsname(20), pts))
		t_fail("the pair is %s now, not %s", ptsname(20), pts);
	struct termios now;
	if (tcgetattr(21, &now))
		t_fail("tcgetattr: %s", strerror(errno));
	if ((now.c_lflag & ECHO) || !!(now.c_lflag & ICANON) != !!(tio.c_lflag & ICANON) ||
	    now.c_cc[VINTR] != 0x07 || now.c_cc[VEOF] != 0x05 || cfgetospeed(&now) != B9600 ||
	    now.c_iflag != tio.c_iflag || now.c_oflag != tio.c_oflag || now.c_lflag != tio.c_lflag)
		t_fail("termios settings lost (lflag %#x, VINTR %#x)", (unsigned)now.c_lflag, now.c_cc[VINTR]);
	struct termios lk2;
	if (ioctl(21, TIOCGLCKTRMIOS, &lk2) || lk2.c_cflag != CLOCAL || lk2.c_lflag)
		t_fail("locked termios lost (cflag %#x)", (unsigned)lk2.c_cflag);
	int pkt = -1;
	if (ioctl(20, TIOCGPKT, &pkt) || pkt != !strcmp(mode, "pkt"))
		t_fail("packet mode %d", pkt);
	struct winsize w2;
	if (ioctl(21, TIOCGWINSZ, &w2) || w2.ws_row != 33 || w2.ws_col != 111 || w2.ws_xpixel != 7)
		t_fail("window size lost (%dx%d)", w2.ws_col, w2.ws_row);
	check_ctty(pts);
	check_output();
	check_input();
	t_pass(mode[0] ? mode : NULL);
}
