/* t-ttydev: terminals that are devices, and a pty slave whose master is gone.
 *   t-ttydev DIR vt|console|hung|hungtree|vtdeleted|vtinput|vtdevtty|hungopen
 * vt: the process leads a session of its own and opens a virtual terminal node
 *     it made (DIR/vt, 4:VT_MINOR) without O_NOCTTY, so the vt becomes its
 *     controlling terminal (fd 20, O_RDWR|O_NONBLOCK); fd 21 is a second,
 *     read-only description of it. The vt gets distinctive termios, a window
 *     size and exclusive mode. After restore: the same node and device, the
 *     same termios, window size, exclusive mode and file flags, and still the
 *     session's controlling terminal (tcgetsid, /dev/tty, tty_nr) with the
 *     process's group in front.
 * console: a console node it made (DIR/console, 5:1), opened read-only
 *     (fd 20): the same node, device, termios and flags after restore.
 * hung: a pty pair whose master it closed after opening the slave twice (fds
 *     20, 21) and dup'ing one (22); the slave was its controlling terminal,
 *     which the master's close took away. After restore: each fd still on
 *     /dev/pts/N (deleted) of the same index, hung up (ioctl EIO, read EOF,
 *     write EIO, poll HUP), 20 and 22 one description, 21 another, the index
 *     still taken, no controlling terminal.
 * hungtree: hung, with a child keeping the same descriptions of the slave.
 * vtdeleted: the vt node removed after the open (refused);
 * vtinput: a line of input queued on the vt, not read (refused);
 * vtdevtty: /dev/tty open too, its terminal the vt (refused);
 * hungopen: its controlling pty slave hung up by vhangup() while it holds the
 *     master (refused).
 * READY <pid> <path>
 */
#include "tlib.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>

#define VT_MINOR	47	/* a vt no other test or zdtm (tty5) uses */

static const char *mode = "";
static char path[4096];
static struct stat st0;
static struct termios tio0;

static void make_node(const char *name, dev_t rdev)
{
	snprintf(path, sizeof(path), "%s/%s", t_dir, name);
	unlink(path);
	if (mknod(path, S_IFCHR | 0600, rdev))
		t_fail("mknod %s: %s", path, strerror(errno));
}

static void set_modes(int fd)
{
	struct winsize ws = { .ws_row = 22, .ws_col = 77 };
	struct termios t;

	if (tcgetattr(fd, &t))
		t_fail("tcgetattr: %s", strerror(errno));
	t.c_lflag &= ~(ECHO | ICANON);
	t.c_lflag |= NOFLSH;
	t.c_cc[VMIN] = 3;
	t.c_cc[VTIME] = 7;
	t.c_cc[VINTR] = 7;
	t.c_iflag |= IUTF8;
	if (tcsetattr(fd, TCSANOW, &t) || ioctl(fd, TIOCSWINSZ, &ws) || ioctl(fd, TIOCEXCL))
		t_fail("cannot set the vt's modes: %s", strerror(errno));
}

static void setup_vt(void)
{
	int fd, ro;

	if (setsid() < 0)
		t_fail("setsid: %s", strerror(errno));
	make_node("vt", makedev(4, VT_MINOR));
	fd = open(path, O_RDWR | O_NONBLOCK);	/* no O_NOCTTY: it becomes the terminal */
	ro = open(path, O_RDONLY | O_NOCTTY);
	if (fd < 0 || ro < 0)
		t_fail("open %s: %s", path, strerror(errno));
	if (dup2(fd, 20) != 20 || dup2(ro, 21) != 21)
		t_fail("dup2: %s", strerror(errno));
	close(fd);
	close(ro);
	set_modes(20);
	if (tcgetsid(20) != getpid())
		t_fail("the vt did not become the session's terminal: %s", strerror(errno));
	fstat(20, &st0);
	tcgetattr(20, &tio0);
	if (!strcmp(mode, "vtdeleted"))
		unlink(path);
	if (!strcmp(mode, "vtdevtty") && (fd = open("/dev/tty", O_RDWR)) != 23 &&
	    dup2(fd, 23) != 23)
		t_fail("open /dev/tty: %s", strerror(errno));
	if (!strcmp(mode, "vtinput")) {
		for (const char *c = "typed\n"; *c; c++)
			if (ioctl(20, TIOCSTI, c))
				t_fail("TIOCSTI: %s", strerror(errno));
		tcgetattr(20, &tio0);
	}
}

static void check_same_node(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		t_fail("fstat %d: %s", fd, strerror(errno));
	if (st.st_rdev != st0.st_rdev || st.st_ino != st0.st_ino || st.st_dev != st0.st_dev)
		t_fail("fd %d: device %x ino %lu, was %x ino %lu", fd, (unsigned)st.st_rdev,
		       (unsigned long)st.st_ino, (unsigned)st0.st_rdev, (unsigned long)st0.st_ino);
}

static void check_termios(int fd)
{
	struct termios t;

	if (tcgetattr(fd, &t))
		t_fail("tcgetattr %d: %s", fd, strerror(errno));
	if (t.c_iflag != tio0.c_iflag || t.c_oflag != tio0.c_oflag ||
	    t.c_cflag != tio0.c_cflag || t.c_lflag != tio0.c_lflag ||
	    memcmp(t.c_cc, tio0.c_cc, NCCS))
		t_fail("fd %d: termios changed (lflag %o, was %o)", fd, t.c_lflag, tio0.c_lflag);
}

static unsigned tty_nr(void)
{
	unsigned nr = ~0U;
	char buf[1024], *p;
	FILE *f = fopen("/proc/self/stat", "r");

	if (!f || !fgets(buf, sizeof(buf), f))
		t_fail("cannot read /proc/self/stat");
	fclose(f);
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %u", &nr) != 1)
		t_fail("cannot parse /proc/self/stat");
	return nr;
}

static void check_vt(void)
{
	struct winsize ws;
	int excl = 0, fd;
	unsigned dev = 0;

	check_same_node(20);
	check_same_node(21);
	check_termios(20);
	if (ioctl(20, TIOCGWINSZ, &ws) || ws.ws_row != 22 || ws.ws_col != 77)
		t_fail("window size %ux%u, want 77x22", ws.ws_col, ws.ws_row);
	if (ioctl(20, TIOCGEXCL, &excl) || !excl)
		t_fail("the vt is no longer exclusive");
	if ((fcntl(20, F_GETFL) & (O_ACCMODE | O_NONBLOCK)) != (O_RDWR | O_NONBLOCK) ||
	    (fcntl(21, F_GETFL) & (O_ACCMODE | O_NONBLOCK)) != O_RDONLY)
		t_fail("file flags changed: %o %o", fcntl(20, F_GETFL), fcntl(21, F_GETFL));
	if (tcgetsid(20) != getpid())
		t_fail("the vt is not its session's terminal: sid %d", tcgetsid(20));
	if (tcgetpgrp(20) != getpgrp())
		t_fail("foreground group %d, want %d", tcgetpgrp(20), getpgrp());
	if (tty_nr() != (4 << 8 | VT_MINOR))
		t_fail("tty_nr %#x, want the vt", tty_nr());
	fd = open("/dev/tty", O_RDONLY | O_NOCTTY);
	if (fd < 0 || ioctl(fd, TIOCGDEV, &dev) || dev != (unsigned)st0.st_rdev)
		t_fail("/dev/tty is not the vt (%#x): %s", dev, strerror(errno));
	close(fd);
	ioctl(20, TIOCNXCL);
}

static void setup_console(void)
{
	make_node("console", makedev(5, 1));
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		t_fail("open %s: %s", path, strerror(errno));
	if (dup2(fd, 20) != 20)
		t_fail("dup2: %s", strerror(errno));
	close(fd);
	fstat(20, &st0);
	if (tcgetattr(20, &tio0))
		t_fail("tcgetattr: %s", strerror(errno));
}

static void check_console(void)
{
	check_same_node(20);
	check_termios(20);
	if ((fcntl(20, F_GETFL) & (O_ACCMODE | O_NONBLOCK)) != O_RDONLY)
		t_fail("file flags changed: %o", fcntl(20, F_GETFL));
	if (tty_nr() != 0)
		t_fail("the console became its controlling terminal (%#x)", tty_nr());
}

static int pty_index(int m)
{
	int n = -1;

	if (ioctl(m, TIOCGPTN, &n))
		t_fail("TIOCGPTN: %s", strerror(errno));
	return n;
}

static void setup_hung(void)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY), a, b;

	if (m < 0 || grantpt(m) || unlockpt(m))
		t_fail("openpt: %s", strerror(errno));
	snprintf(path, sizeof(path), "/dev/pts/%d", pty_index(m));
	if (setsid() < 0)
		t_fail("setsid: %s", strerror(errno));
	a = open(path, O_RDWR);
	b = open(path, O_RDONLY | O_NOCTTY);
	if (a < 0 || b < 0 || ioctl(a, TIOCSCTTY, 0))
		t_fail("open %s: %s", path, strerror(errno));
	if (dup2(a, 20) != 20 || dup2(b, 21) != 21 || dup2(a, 22) != 22)
		t_fail("dup2: %s", strerror(errno));
	close(a);
	close(b);
	fstat(20, &st0);
	signal(SIGHUP, SIG_IGN);
	if (!strcmp(mode, "hungopen")) {
		if (dup2(m, 23) != 23 || vhangup())
			t_fail("vhangup: %s", strerror(errno));
	}
	close(m);
}

static void check_hung_fd(int fd, int flags)
{
	char link[64], want[4200], c;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct termios t;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, want, sizeof(want) - 1);
	want[n > 0 ? n : 0] = 0;
	if (strncmp(want, path, strlen(path)) || strcmp(want + strlen(path), " (deleted)"))
		t_fail("fd %d is %s, want %s (deleted)", fd, want, path);
	check_same_node(fd);
	if (tcgetattr(fd, &t) == 0 || errno != EIO)
		t_fail("fd %d is not hung up: tcgetattr %s", fd, strerror(errno));
	if (read(fd, &c, 1) != 0)
		t_fail("fd %d: read does not see an end of file", fd);
	if (flags == O_RDWR && (write(fd, "x", 1) != -1 || errno != EIO))
		t_fail("fd %d: write does not fail with EIO", fd);
	if (poll(&p, 1, 0) != 1 || !(p.revents & POLLHUP))
		t_fail("fd %d: poll %#x, no POLLHUP", fd, p.revents);
	if ((fcntl(fd, F_GETFL) & O_ACCMODE) != flags)
		t_fail("fd %d: flags %o", fd, fcntl(fd, F_GETFL));
}

static pid_t kid;

/* hungtree: a child keeps the same descriptions (forked after the setup). */
static void fork_keeper(void)
{
	kid = fork();
	if (kid < 0)
		t_fail("fork: %s", strerror(errno));
	if (kid == 0) {
		for (;;)
			pause();
	}
}

static void check_keeper(void)
{
	pid_t me = getpid();

	if (kill(kid, 0))
		t_fail("its child %d is gone", (int)kid);
	for (int fd = 20; fd <= 22; fd++)
		if (syscall(SYS_kcmp, me, kid, 0 /* KCMP_FILE */, fd, fd) != 0)
			t_fail("its child's fd %d is not its own description", fd);
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
}

static void check_hung(void)
{
	pid_t me = getpid();
	int m;

	check_hung_fd(20, O_RDWR);
	check_hung_fd(21, O_RDONLY);
	check_hung_fd(22, O_RDWR);
	if (syscall(SYS_kcmp, me, me, 0 /* KCMP_FILE */, 20, 22) != 0 ||
	    syscall(SYS_kcmp, me, me, 0, 20, 21) == 0)
		t_fail("the descriptions are not shared as they were");
	m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m >= 0 && (int)minor(st0.st_rdev) == pty_index(m))
		t_fail("the index of %s is free again", path);
	if (tty_nr() != 0)
		t_fail("a controlling terminal %#x again", tty_nr());
}

int main(int argc, char **argv)
{
	t_init(argc, argv, 0);
	if (argc > 2)
		mode = argv[2];
	if (!strncmp(mode, "vt", 2))
		setup_vt();
	else if (!strcmp(mode, "console"))
		setup_console();
	else if (!strncmp(mode, "hung", 4))
		setup_hung();
	else
		t_fail("unknown mode %s", mode);
	if (!strcmp(mode, "hungtree"))
		fork_keeper();
	t_ready("%s", path);
	t_wait_usr1();
	t_check_common();
	if (!strncmp(mode, "vt", 2))
		check_vt();
	else if (!strcmp(mode, "console"))
		check_console();
	else if (!strcmp(mode, "hung"))
		check_hung();
	else if (!strcmp(mode, "hungtree")) {
		check_hung();
		check_keeper();
	}
	t_pass(mode);
}
