/* t-fds: file descriptors and signal state at fixed fd numbers.
 *   fd 10: regular file O_RDWR, offset 12345
 *   fd 11: log file O_WRONLY|O_APPEND, offset at its end (3 lines)
 *   fd 12/13: pipe read/write ends, 14 bytes of unread data in it
 *   fd 14: fifo DIR/t-fds.fifo opened O_RDWR, 9 bytes of unread data
 *   fd 15: /dev/null O_WRONLY
 *   fd 16: regular file O_RDONLY|O_CLOEXEC, offset 7
 *   SIGUSR2: SA_SIGINFO|SA_RESTART handler, sa_mask {SIGINT}
 *   SIGTERM: plain handler, SA_NODEFER;  SIGINT: SIG_IGN
 *   blocked mask: {SIGHUP, SIGWINCH, SIGRTMIN+3}
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#define FILE_LEN 20000
static const char pipe_data[] = "pipe-data-1234";      /* 14 bytes */
static const char fifo_data[] = "fifo-data";           /* 9 bytes */
static const char log_data[] = "line 1\nline 2\nline 3\n";

static void h_usr2(int s, siginfo_t *si, void *uc) { (void)s; (void)si; (void)uc; }
static void h_term(int s) { (void)s; }

static void at(int fd, int want)
{
	if (fd < 0) {
		perror("open");
		exit(2);
	}
	if (dup2(fd, want) != want)
		exit(2);
	close(fd);
}

static void check_fd(int fd, int want_acc, int want_flags, off_t want_off, const char *what)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		t_fail("%s (fd %d) is not open", what, fd);
	if ((fl & O_ACCMODE) != want_acc)
		t_fail("%s (fd %d): access mode %#x, want %#x", what, fd, fl & O_ACCMODE, want_acc);
	if ((fl & want_flags) != want_flags)
		t_fail("%s (fd %d): flags %#x lack %#x", what, fd, fl, want_flags);
	if (want_off >= 0 && lseek(fd, 0, SEEK_CUR) != want_off)
		t_fail("%s (fd %d): offset %lld, want %lld", what, fd,
		       (long long)lseek(fd, 0, SEEK_CUR), (long long)want_off);
}

static void check_same_file(int fd, const char *path, const char *what)
{
	struct stat a, b;
	if (fstat(fd, &a) || stat(path, &b) || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		t_fail("%s (fd %d) is not %s", what, fd, path);
}

static void check_data(int fd, const char *want, size_t len, const char *what)
{
	char buf[64];
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	ssize_t n = read(fd, buf, sizeof(buf));
	if (n != (ssize_t)len || memcmp(buf, want, len))
		t_fail("%s: read %zd bytes, want %zu bytes \"%s\"", what, n, len, want);
}

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);
	char reg[4096], log[4096], fifo[4096], ro[4096];
	snprintf(reg, sizeof(reg), "%s/t-fds.reg", t_dir);
	snprintf(log, sizeof(log), "%s/t-fds.log", t_dir);
	snprintf(fifo, sizeof(fifo), "%s/t-fds.fifo", t_dir);
	snprintf(ro, sizeof(ro), "%s/t-fds.ro", t_dir);

	static char buf[FILE_LEN];
	for (int i = 0; i < FILE_LEN; i++)
		buf[i] = 'a' + i % 26;
	int fd = open(reg, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (write(fd, buf, FILE_LEN) != FILE_LEN)
		exit(2);
	lseek(fd, 12345, SEEK_SET);
	at(fd, 10);

	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (write(fd, log_data, strlen(log_data)) != (ssize_t)strlen(log_data))
		exit(2);
	at(fd, 11);

	int p[2];
	if (pipe(p) || write(p[1], pipe_data, 14) != 14)
		exit(2);
	at(p[0], 12);
	at(p[1], 13);

	unlink(fifo);
	if (mkfifo(fifo, 0600))
		t_fail("mkfifo: %s", strerror(errno));
	fd = open(fifo, O_RDWR);
	if (fd < 0 || write(fd, fifo_data, 9) != 9)
		exit(2);
	at(fd, 14);

	at(open("/dev/null", O_WRONLY), 15);

	fd = open(ro, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (write(fd, "0123456789", 10) != 10)
		exit(2);
	close(fd);
	fd = open(ro, O_RDONLY | O_CLOEXEC);
	lseek(fd, 7, SEEK_SET);
	if (dup3(fd, 16, O_CLOEXEC) != 16)
		exit(2);
	close(fd);

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = h_usr2;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGINT);
	sigaction(SIGUSR2, &sa, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h_term;
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_DFL);  /* bash ignores it in background jobs */

	sigset_t blk;
	sigemptyset(&blk);
	sigaddset(&blk, SIGHUP);
	sigaddset(&blk, SIGWINCH);
	sigaddset(&blk, SIGRTMIN + 3);
	sigprocmask(SIG_BLOCK, &blk, NULL);

	t_ready(NULL);
	t_wait_usr1();
	t_check_common();

	/* regular file */
	check_fd(10, O_RDWR, 0, 12345, "regular file");
	check_same_file(10, reg, "regular file");
	char c;
	if (pread(10, &c, 1, 12345) != 1 || c != 'a' + 12345 % 26)
		t_fail("regular file content differs");
	if (fcntl(10, F_GETFD) & FD_CLOEXEC)
		t_fail("fd 10 got FD_CLOEXEC");
	/* append log */
	check_fd(11, O_WRONLY, O_APPEND, (off_t)strlen(log_data), "append log");
	check_same_file(11, log, "append log");
	/* read-only cloexec file */
	check_fd(16, O_RDONLY, 0, 7, "read-only file");
	check_same_file(16, ro, "read-only file");
	if (!(fcntl(16, F_GETFD) & FD_CLOEXEC))
		t_fail("fd 16 lost FD_CLOEXEC");
	/* /dev/null */
	struct stat st;
	if (fstat(15, &st) || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3))
		t_fail("fd 15 is not /dev/null");
	check_fd(15, O_WRONLY, 0, -1, "/dev/null");
	/* pipe: data still there, ends still connected */
	if (fstat(12, &st) || !S_ISFIFO(st.st_mode))
		t_fail("fd 12 is not a pipe");
	check_fd(12, O_RDONLY, 0, -1, "pipe read end");
	check_fd(13, O_WRONLY, 0, -1, "pipe write end");
	check_data(12, pipe_data, 14, "pipe");
	if (write(13, "x", 1) != 1)
		t_fail("pipe write end: %s", strerror(errno));
	check_data(12, "x", 1, "pipe after write");
	/* fifo */
	check_fd(14, O_RDWR, 0, -1, "fifo");
	check_same_file(14, fifo, "fifo");
	check_data(14, fifo_data, 9, "fifo");
	/* signal handlers */
	sigaction(SIGUSR2, NULL, &sa);
	if (sa.sa_sigaction != h_usr2 || !(sa.sa_flags & SA_SIGINFO) || !(sa.sa_flags & SA_RESTART) ||
	    !sigismember(&sa.sa_mask, SIGINT) || sigismember(&sa.sa_mask, SIGHUP))
		t_fail("SIGUSR2 disposition lost (handler %p flags %#x)", (void *)sa.sa_sigaction,
		       (unsigned)sa.sa_flags);
	sigaction(SIGTERM, NULL, &sa);
	if (sa.sa_handler != h_term || !(sa.sa_flags & SA_NODEFER) || (sa.sa_flags & SA_RESTART))
		t_fail("SIGTERM disposition lost");
	sigaction(SIGINT, NULL, &sa);
	if (sa.sa_handler != SIG_IGN)
		t_fail("SIGINT is no longer ignored");
	sigaction(SIGQUIT, NULL, &sa);
	if (sa.sa_handler != SIG_DFL)
		t_fail("SIGQUIT is not SIG_DFL");
	/* blocked mask */
	sigset_t cur;
	sigprocmask(SIG_BLOCK, NULL, &cur);
	for (int s = 1; s < NSIG; s++) {
		int want = s == SIGHUP || s == SIGWINCH || s == SIGRTMIN + 3;
		if (s == 32 || s == 33)       /* glibc internal */
			continue;
		if (sigismember(&cur, s) != want)
			t_fail("signal %d is %sblocked", s, want ? "not " : "");
	}
	t_pass(NULL);
}
