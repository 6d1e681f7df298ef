/* t-tty: a pseudo terminal pair (fd 20 = master /dev/ptmx, fd 21 = slave
 * /dev/pts/N) with distinctive termios settings on the slave, window size
 * set, and unread input waiting on the slave side. After SIGUSR1 the
 * fds must still be a connected pty pair with the same settings and data.
 * READY <pid> <pts-path> */
#include "tlib.h"
#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>

static const char input[] = "typed\n";

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0 || grantpt(m) || unlockpt(m))
		t_fail("posix_openpt: %s", strerror(errno));
	char pts[64];
	snprintf(pts, sizeof(pts), "%s", ptsname(m));
	int s = open(pts, O_RDWR | O_NOCTTY);
	if (s < 0)
		t_fail("open %s: %s", pts, strerror(errno));
	if (dup2(m, 20) != 20 || dup2(s, 21) != 21)
		t_fail("dup2");
	close(m);
	close(s);

	struct termios tio;
	tcgetattr(21, &tio);
	tio.c_lflag &= ~(ECHO | ECHOE);         /* no echo, keep ICANON */
	tio.c_cc[VINTR] = 0x07;                 /* ^G */
	tio.c_cc[VEOF] = 0x05;                  /* ^E */
	cfsetospeed(&tio, B9600);
	cfsetispeed(&tio, B9600);
	tcsetattr(21, TCSANOW, &tio);
	struct winsize ws = { .ws_row = 33, .ws_col = 111 };
	ioctl(21, TIOCSWINSZ, &ws);
	if (write(20, input, strlen(input)) != (ssize_t)strlen(input))
		t_fail("write master");

	t_ready("%s", pts);
	t_wait_usr1();
	t_check_common();

	if (!isatty(21) || !isatty(20))
		t_fail("fds 20/21 are no longer terminals");
	struct termios now;
	if (tcgetattr(21, &now))
		t_fail("tcgetattr: %s", strerror(errno));
	if ((now.c_lflag & ECHO) || !(now.c_lflag & ICANON) || now.c_cc[VINTR] != 0x07 ||
	    now.c_cc[VEOF] != 0x05 || cfgetospeed(&now) != B9600)
		t_fail("termios settings lost (lflag %#x, VINTR %#x)", (unsigned)now.c_lflag, now.c_cc[VINTR]);
	struct winsize w2;
	if (ioctl(21, TIOCGWINSZ, &w2) || w2.ws_row != 33 || w2.ws_col != 111)
		t_fail("window size lost (%dx%d)", w2.ws_col, w2.ws_row);
	char buf[64];
	fcntl(21, F_SETFL, O_NONBLOCK);
	ssize_t n = read(21, buf, sizeof(buf));
	if (n != (ssize_t)strlen(input) || memcmp(buf, input, n))
		t_fail("pending terminal input lost (read %zd)", n);
	/* still connected: slave -> master */
	if (write(21, "out\n", 4) != 4)
		t_fail("write slave: %s", strerror(errno));
	fcntl(20, F_SETFL, O_NONBLOCK);
	t_sleep_ms(50);
	n = read(20, buf, sizeof(buf));
	if (n < 4 || memcmp(buf, "out", 3))
		t_fail("master does not see slave output (read %zd)", n);
	t_pass(NULL);
}
