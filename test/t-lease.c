/* t-lease: file leases (F_SETLEASE).
 *   fd 10: DIR/lease-rd, O_RDONLY, a read lease (its break signal: SIGIO)
 *   fd 11: DIR/lease-wr, O_RDWR, a write lease, F_SETSIG SIGRTMIN+2
 *   fd 12: DIR/lease-free, O_RDONLY, no lease
 * After SIGUSR1: F_GETLEASE shows each as set; a forked child's open for
 * writing of lease-rd (for reading of lease-wr) fails with EWOULDBLOCK and
 * breaks the lease: the holder gets its signal naming the fd, and once it
 * gives the lease up the child's open succeeds.
 * Leases being broken: t-leasebrk.
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <stdbool.h>
#include <sys/wait.h>

static char dir[512];

static int open_at(const char *name, int flags, int want)
{
	char p[600];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, flags | O_CREAT, 0600);
	if (fd < 0 || (want >= 0 && dup2(fd, want) != want))
		t_fail("open %s: %s", p, strerror(errno));
	if (want >= 0 && fd != want) {
		close(fd);
		fd = want;
	}
	return fd;
}

/* A forked child opens name with flags (non-blocking): 0 opened, 1 EWOULDBLOCK, 2 else. */
static int child_open(const char *name, int flags)
{
	pid_t c = fork();
	int st;

	if (c == 0) {
		char p[600];
		int fd;

		snprintf(p, sizeof(p), "%s/%s", dir, name);
		fd = open(p, flags | O_NONBLOCK);
		_exit(fd >= 0 ? 0 : errno == EWOULDBLOCK ? 1 : 2);
	}
	if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st))
		t_fail("fork/wait: %s", strerror(errno));
	return WEXITSTATUS(st);
}

static void expect_lease(int fd, int want)
{
	int got = fcntl(fd, F_GETLEASE);

	if (got != want)
		t_fail("fd %d: F_GETLEASE %d, want %d", fd, got, want);
}

/* Another process's open breaks fd's lease: its signal, naming fd, arrives. */
static void check_break(int fd, const char *name, int flags, int sig, int target)
{
	sigset_t set;
	siginfo_t si;
	struct timespec limit = { 20, 0 };	/* a bound on a lost signal, not a speed */
	int got;

	if (child_open(name, flags) != 1)
		t_fail("fd %d: another process's open of %s did not meet the lease", fd, name);
	sigemptyset(&set);
	sigaddset(&set, sig);
	got = sigtimedwait(&set, &si, &limit);
	if (got != sig)
		t_fail("fd %d: no signal %d for the lease break: %s", fd, sig, strerror(errno));
	if (sig != SIGIO && si.si_fd != fd)
		t_fail("fd %d: the break signal names fd %d", fd, si.si_fd);
	expect_lease(fd, target);	/* being broken: F_GETLEASE gives the target */
	if (fcntl(fd, F_SETLEASE, F_UNLCK))
		t_fail("fd %d: cannot give the lease up: %s", fd, strerror(errno));
	if (child_open(name, flags) != 0)
		t_fail("fd %d: %s cannot be opened once the lease is given up", fd, name);
}

int main(int argc, char **argv)
{
	sigset_t set;

	t_init(argc, argv, SA_RESTART);
	snprintf(dir, sizeof(dir), "%s", t_dir);
	sigemptyset(&set);
	sigaddset(&set, SIGIO);
	sigaddset(&set, SIGRTMIN + 2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	open_at("lease-rd", O_RDONLY, 10);
	open_at("lease-wr", O_RDWR, 11);
	open_at("lease-free", O_RDONLY, 12);
	if (fcntl(10, F_SETLEASE, F_RDLCK) || fcntl(11, F_SETSIG, SIGRTMIN + 2) ||
	    fcntl(11, F_SETLEASE, F_WRLCK))
		t_fail("F_SETLEASE: %s", strerror(errno));
	t_ready("");
	t_wait_usr1();
	t_check_common();
	expect_lease(10, F_RDLCK);
	expect_lease(11, F_WRLCK);
	expect_lease(12, F_UNLCK);
	check_break(10, "lease-rd", O_WRONLY, SIGIO, F_UNLCK);
	check_break(11, "lease-wr", O_RDONLY, SIGRTMIN + 2, F_RDLCK);
	t_pass(NULL);
}
