/*
 * t-ptytree: a pty pair split across a tree, as a terminal multiplexer holds
 * it. The parent holds the master only (window 100x40); its child leads a
 * session of its own whose controlling terminal is the slave, in raw mode,
 * with a grandchild's group in the foreground. Bytes are queued both ways:
 * "to-slave" for the slave's reader, "to-master\n" for the master's.
 * READY <pid> <slave path> <child>; on SIGUSR1 the parent checks
 * its end and the child checks its own (session, terminal, foreground group,
 * raw mode, window size, name, the queued input) and tells the parent through
 * a pipe.
 */
#include "tlib.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>

static void wait_usr1(void)
{
	sigset_t none;

	sigemptyset(&none);
	while (!t_usr1)
		sigsuspend(&none);
}

static const char *child_check(int s, const char *name, pid_t g)
{
	static char why[128];
	struct termios t;
	struct winsize ws;
	char buf[64];
	ssize_t n;
	int tty;

	if (getsid(0) != getpid() || tcgetsid(s) != getpid())
		return "the slave is not its session's terminal any more";
	if (tcgetpgrp(s) != g) {
		snprintf(why, sizeof(why), "foreground group %d, not %d", tcgetpgrp(s), g);
		return why;
	}
	tty = open("/dev/tty", O_RDWR | O_NOCTTY);	/* ENXIO without one */
	if (tty < 0 || tcgetsid(tty) != getpid())
		return "/dev/tty is not its session's terminal";
	close(tty);
	if (tcgetattr(s, &t) || (t.c_lflag & (ICANON | ECHO | ISIG)) || (t.c_oflag & OPOST))
		return "the terminal is not raw any more";
	if (ioctl(s, TIOCGWINSZ, &ws) || ws.ws_col != 100 || ws.ws_row != 40)
		return "the window size is not 100x40";
	if (!ttyname(s) || strcmp(ttyname(s), name))
		return "the slave has another name";
	if (tcsetpgrp(s, getpid()))	/* a background reader would get EIO */
		return "cannot take the foreground";
	fcntl(s, F_SETFL, O_NONBLOCK);
	n = read(s, buf, sizeof(buf));
	if (n != 8 || memcmp(buf, "to-slave", 8)) {
		snprintf(why, sizeof(why), "read %zd bytes of input, not \"to-slave\"", n);
		return why;
	}
	if (kill(g, 0) || getpgid(g) != g || getsid(g) != getpid())
		return "the grandchild is not in its group";
	return NULL;
}

static void child(const char *name, int res)
{
	struct termios t;
	const char *why;
	pid_t g;
	int s;

	setsid();
	s = open(name, O_RDWR);	/* its controlling terminal */
	if (s < 0 || tcgetattr(s, &t))
		_exit(2);
	cfmakeraw(&t);
	if (tcsetattr(s, TCSANOW, &t))
		_exit(2);
	g = fork();
	if (g == 0) {
		setpgid(0, 0);
		for (;;)
			pause();
	}
	setpgid(g, g);
	signal(SIGTTOU, SIG_IGN);
	if (tcsetpgrp(s, g) || write(s, "to-master\n", 10) != 10)
		_exit(2);
	if (write(res, "r", 1) != 1)
		_exit(2);
	wait_usr1();
	why = child_check(s, name, g);
	kill(g, SIGKILL);
	waitpid(g, NULL, 0);
	dprintf(res, "%s", why ? why : "ok");
	_exit(0);
}

int main(int argc, char **argv)
{
	char name[64], buf[128] = "";
	struct winsize ws = { .ws_row = 40, .ws_col = 100 };
	struct pollfd p;
	unsigned idx, now = ~0U;
	int m, res[2], st;
	ssize_t n;
	pid_t c;

	t_init(argc, argv, 0);
	m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0 || grantpt(m) || unlockpt(m) || ioctl(m, TIOCGPTN, &idx) ||
	    ioctl(m, TIOCSWINSZ, &ws) || pipe(res))
		return printf("FAIL setup: %m\n"), 1;
	snprintf(name, sizeof(name), "%s", ptsname(m));
	c = fork();
	if (c == 0) {
		close(m);
		close(res[0]);
		child(name, res[1]);
	}
	close(res[1]);
	if (read(res[0], buf, 1) != 1)
		return printf("FAIL the child did not start\n"), 1;
	if (write(m, "to-slave", 8) != 8)
		return printf("FAIL write: %m\n"), 1;
	p = (struct pollfd){ .fd = m, .events = POLLIN };
	poll(&p, 1, 10000);
	t_ready("%s %d", name, c);
	wait_usr1();
	if (ioctl(m, TIOCGPTN, &now) || now != idx)
		return printf("FAIL the master is pty %u, not %u\n", now, idx), 1;
	fcntl(m, F_SETFL, O_NONBLOCK);
	n = read(m, buf, sizeof(buf));
	if (n != 10 || memcmp(buf, "to-master\n", 10))
		return printf("FAIL read %zd bytes of output, not \"to-master\\n\"\n", n), 1;
	kill(c, SIGUSR1);
	n = read(res[0], buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = 0;
	waitpid(c, &st, 0);
	if (strcmp(buf, "ok"))
		return printf("FAIL child: %s (status %d)\n", buf[0] ? buf : "no answer", st), 1;
	printf("PASS\n");
	return 0;
}
