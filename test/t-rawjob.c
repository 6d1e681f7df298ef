/*
 * t-rawjob: a full-screen program's terminal modes, as vim or less set them:
 * stdin a terminal in raw mode without echo, its group the foreground.
 * Prints READY <pid> <rows>x<cols>, then reads keys. On SIGUSR1 it checks that
 * its terminal is still raw, without echo, its window size the one at start
 * and its group the foreground, prints KEY?, reads one key and prints
 * PASS got=<hex> (or FAIL <reason>).
 */
#include "tlib.h"

#include <sys/ioctl.h>
#include <termios.h>

static const char *check(const struct winsize *ws0)
{
	struct termios t;
	struct winsize ws;

	if (tcgetattr(0, &t))
		return "stdin is no terminal";
	if (t.c_lflag & (ICANON | ECHO))
		return "the terminal is not raw and silent any more";
	if (ioctl(0, TIOCGWINSZ, &ws) || ws.ws_row != ws0->ws_row || ws.ws_col != ws0->ws_col)
		return "the window size changed";
	if (tcgetpgrp(0) != getpgrp())
		return "its group is not the foreground";
	return NULL;
}

int main(int argc, char **argv)
{
	struct termios t;
	struct winsize ws0;
	const char *why;
	unsigned char c;

	t_init(argc, argv, 0);	/* no SA_RESTART: SIGUSR1 ends the read */
	if (tcgetattr(0, &t) || ioctl(0, TIOCGWINSZ, &ws0))
		return printf("FAIL stdin is no terminal\r\n"), 1;
	cfmakeraw(&t);
	if (tcsetattr(0, TCSANOW, &t))
		return printf("FAIL cannot make it raw\r\n"), 1;
	setvbuf(stdout, NULL, _IONBF, 0);
	printf("READY %d %ux%u\r\n", (int)getpid(), ws0.ws_row, ws0.ws_col);
	while (!t_usr1)
		if (read(0, &c, 1) < 0 && errno != EINTR)
			return printf("FAIL read: %m\r\n"), 1;
	why = check(&ws0);
	if (why)
		return printf("FAIL %s\r\n", why), 1;
	printf("KEY?\r\n");
	if (read(0, &c, 1) != 1)
		return printf("FAIL no key: %m\r\n"), 1;
	printf("PASS got=%02x\r\n", c);
	return 0;
}
