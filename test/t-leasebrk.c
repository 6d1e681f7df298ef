/* t-leasebrk: file leases being broken: another process's non-blocking open met
 * each lease, failed with EWOULDBLOCK and started its break.
 *   fd 10: DIR/brk-rd, O_RDONLY, a read lease a writer broke (F_GETLEASE: F_UNLCK)
 *   fd 11: DIR/brk-down, O_RDWR, a write lease a reader broke (F_RDLCK),
 *          F_SETSIG SIGRTMIN+3
 *   fd 12: DIR/brk-wr, O_RDWR, a write lease a writer broke (F_UNLCK)
 *   fd 13: DIR/brk-ro, O_RDONLY, a write lease a writer broke (F_UNLCK)
 * fds 10, 12, 13 signal SIGIO with their fd (F_SETSIG SIGIO). Each break's
 * signal reached the handler once before READY, naming its fd.
 * After SIGUSR1: no other signal came (a restore's own break sends none);
 * F_GETLEASE gives each target; each is still being broken: an open it
 * conflicts with still fails with EWOULDBLOCK (a reader of brk-ro's write
 * lease too, not a reader of brk-rd's read lease) without a signal, but a
 * writer of brk-down breaks its lease further and signals fd 11 once more;
 * once the holder gives each lease up, the opens succeed.
 * `tree`: fd 10 is DIR/brk-tree, O_RDWR, a write lease a writer broke before
 * a fork: the child holds the same open file description; `handed`: the
 * parent closed its fd after the fork, the child alone holds the lease. The
 * child checks its fd on the parent's word, the parent the rest.
 * `waiter`: fd 10 is DIR/brk-wait, O_RDONLY, a read lease a child's blocking
 * open for writing waits on: after SIGUSR1 it still waits, until the parent
 * gives the lease up; then its open succeeds.
 * `two`: fds 10 and 11 are two opens of DIR/brk-two, O_RDONLY, each with a
 * read lease (fd 11's signal SIGRTMIN+3), both broken by one writer (refused).
 * READY <pid> [<child>] */
#include "tlib.h"
#include <fcntl.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#define NFD 14

static char dir[512];
static volatile sig_atomic_t got[NFD], ghost;
static volatile sig_atomic_t last_code[NFD], last_band[NFD], last_pid[NFD];	/* for a failure */

static void on_break(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_fd >= 10 && si->si_fd < NFD) {
		got[si->si_fd]++;
		last_code[si->si_fd] = si->si_code;
		last_band[si->si_fd] = (sig_atomic_t)si->si_band;
		last_pid[si->si_fd] = si->si_pid;
	} else {
		ghost++;
	}
}

static void path_of(const char *name, char *p, size_t len)
{
	snprintf(p, len, "%s/%s", dir, name);
}

static void open_at(const char *name, int flags, int want)
{
	char p[600];
	int fd;

	path_of(name, p, sizeof(p));
	fd = open(p, flags | O_CREAT, 0600);
	if (fd < 0 || dup2(fd, want) != want)
		t_fail("open %s: %s", p, strerror(errno));
	if (fd != want)
		close(fd);
}

/* A forked child opens name with flags (non-blocking): 0 opened, 1 EWOULDBLOCK, 2 else. */
static int child_open(const char *name, int flags)
{
	pid_t c = fork();
	int st;

	if (c == 0) {
		char p[600];
		int fd;

		path_of(name, p, sizeof(p));
		fd = open(p, flags | O_NONBLOCK);
		_exit(fd >= 0 ? 0 : errno == EWOULDBLOCK ? 1 : 2);
	}
	if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st))
		t_fail("fork/wait: %s", strerror(errno));
	return WEXITSTATUS(st);
}

static void expect_open(const char *name, int flags, int want)
{
	static const char *const what[] = { "opened", "EWOULDBLOCK", "failed otherwise" };
	int r = child_open(name, flags);

	if (r != want)
		t_fail("an open of %s for %s: %s, want %s", name,
		       (flags & O_ACCMODE) == O_RDONLY ? "reading" : "writing", what[r], what[want]);
}

static void expect_lease(int fd, int want)
{
	int l = fcntl(fd, F_GETLEASE);

	if (l != want)
		t_fail("fd %d: F_GETLEASE %d, want %d", fd, l, want);
}

/* fd's lease shows as being broken in fdinfo */
static void expect_breaking(int fd)
{
	char p[64], buf[1024];
	ssize_t n;
	int f;

	snprintf(p, sizeof(p), "/proc/self/fdinfo/%d", fd);
	f = open(p, O_RDONLY);
	n = f < 0 ? -1 : read(f, buf, sizeof(buf) - 1);
	if (f >= 0)
		close(f);
	if (n <= 0)
		t_fail("cannot read %s", p);
	buf[n] = 0;
	if (!strstr(buf, "LEASE") || !strstr(buf, "BREAKING"))
		t_fail("fd %d: no lease being broken in its fdinfo: %s", fd, buf);
}

/* Until fd's break signals number n (20 s: a bound on a lost signal, not a speed). */
static void wait_signals(int fd, int n)
{
	for (int i = 0; i < 2000 && got[fd] < n; i++)
		t_sleep_ms(10);
	if (got[fd] != n)
		t_fail("fd %d: %d break signals, want %d", fd, (int)got[fd], n);
}

static void lease_and_break(int fd, int type, int sig, const char *name, int brk)
{
	if (fcntl(fd, F_SETSIG, sig) || fcntl(fd, F_SETLEASE, type))
		t_fail("fd %d: F_SETLEASE: %s", fd, strerror(errno));
	expect_open(name, brk, 1);
	wait_signals(fd, 1);
}

static void give_up(int fd, const char *name)
{
	if (fcntl(fd, F_SETLEASE, F_UNLCK))
		t_fail("fd %d: cannot give the lease up: %s", fd, strerror(errno));
	expect_open(name, O_WRONLY, 0);
}

static void no_ghost(void)
{
	if (ghost)
		t_fail("%d break signals naming no fd of a lease", (int)ghost);
}

static void run_one(void)
{
	open_at("brk-rd", O_RDONLY, 10);
	open_at("brk-down", O_RDWR, 11);
	open_at("brk-wr", O_RDWR, 12);
	open_at("brk-ro", O_RDONLY, 13);
	lease_and_break(10, F_RDLCK, SIGIO, "brk-rd", O_WRONLY);
	lease_and_break(11, F_WRLCK, SIGRTMIN + 3, "brk-down", O_RDONLY);
	lease_and_break(12, F_WRLCK, SIGIO, "brk-wr", O_WRONLY);
	lease_and_break(13, F_WRLCK, SIGIO, "brk-ro", O_WRONLY);
	t_ready("");
	t_wait_usr1();
	t_check_common();
	for (int fd = 10; fd < NFD; fd++) {
		if (got[fd] != 1)
			t_fail("fd %d: %d break signals by now, want 1 (the last: code %d band %#x "
			       "pid %d)", fd, (int)got[fd], (int)last_code[fd],
			       (unsigned)last_band[fd], (int)last_pid[fd]);
		expect_breaking(fd);
	}
	no_ghost();
	expect_lease(10, F_UNLCK);
	expect_lease(11, F_RDLCK);
	expect_lease(12, F_UNLCK);
	expect_lease(13, F_UNLCK);
	expect_open("brk-rd", O_WRONLY, 1);
	expect_open("brk-rd", O_RDONLY, 0);	/* a read lease */
	expect_open("brk-ro", O_RDONLY, 1);	/* a write lease on a read-only fd */
	expect_open("brk-ro", O_WRONLY, 1);
	expect_open("brk-wr", O_RDONLY, 1);
	expect_open("brk-down", O_RDONLY, 1);
	expect_open("brk-down", O_WRONLY, 1);	/* breaks it further: a signal */
	wait_signals(11, 2);
	expect_lease(11, F_UNLCK);
	for (int fd = 10; fd < NFD; fd++)
		if (fd != 11 && got[fd] != 1)
			t_fail("fd %d: a signal for an open of a lease already being broken", fd);
	no_ghost();
	give_up(10, "brk-rd");
	give_up(11, "brk-down");
	give_up(12, "brk-wr");
	give_up(13, "brk-ro");
	t_pass(NULL);
}

/* The child: on the parent's word, its fd's lease (the parent's description) checked. */
static void tree_child(int go, int done, bool handed)
{
	char x;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	while (read(go, &x, 1) < 0 && errno == EINTR)
		;
	expect_lease(10, F_UNLCK);
	expect_breaking(10);
	if (handed)
		give_up(10, "brk-tree");
	if (write(done, "k", 1) != 1)
		_exit(3);
	_exit(0);
}

static void run_tree(bool handed)
{
	int go[2], done[2];
	char x = 0;
	pid_t c;

	open_at("brk-tree", O_RDWR, 10);
	lease_and_break(10, F_WRLCK, SIGIO, "brk-tree", O_WRONLY);
	if (pipe(go) || pipe(done))
		t_fail("pipe: %s", strerror(errno));
	c = fork();
	if (c == 0) {
		close(go[1]);
		close(done[0]);
		tree_child(go[0], done[1], handed);
	}
	close(go[0]);
	close(done[1]);
	if (handed)
		close(10);
	t_ready("%d", (int)c);
	t_wait_usr1();
	t_check_common();
	if (got[10] != 1)
		t_fail("fd 10: %d break signals by now, want 1 (the last: code %d band %#x pid %d)",
		       (int)got[10], (int)last_code[10], (unsigned)last_band[10], (int)last_pid[10]);
	no_ghost();
	if (!handed) {
		expect_lease(10, F_UNLCK);
		expect_breaking(10);
	}
	expect_open("brk-tree", O_RDONLY, 1);
	expect_open("brk-tree", O_WRONLY, 1);
	if (write(go[1], "g", 1) != 1 || read(done[0], &x, 1) != 1)
		t_fail("the child failed");
	if (waitpid(c, NULL, 0) != c)
		t_fail("waitpid: %s", strerror(errno));
	if (!handed)
		give_up(10, "brk-tree");
	expect_open("brk-tree", O_WRONLY, 0);
	if (got[10] != 1)
		t_fail("fd 10: %d break signals, want 1", (int)got[10]);
	no_ghost();
	t_pass(handed ? "handed" : "tree");
}

/* A child's blocking open for writing waits on fd 10's read lease. */
static void run_waiter(void)
{
	int st;
	pid_t c;

	open_at("brk-wait", O_RDONLY, 10);
	if (fcntl(10, F_SETSIG, SIGIO) || fcntl(10, F_SETLEASE, F_RDLCK))
		t_fail("fd 10: F_SETLEASE: %s", strerror(errno));
	c = fork();
	if (c == 0) {
		char p[600];

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		path_of("brk-wait", p, sizeof(p));
		_exit(open(p, O_WRONLY) >= 0 ? 0 : 1);
	}
	wait_signals(10, 1);	/* its open met the lease */
	t_ready("%d", (int)c);
	t_wait_usr1();
	t_check_common();
	no_ghost();
	expect_lease(10, F_UNLCK);
	expect_breaking(10);
	if (waitpid(c, &st, WNOHANG) != 0)
		t_fail("the child's open did not wait for the lease");
	if (fcntl(10, F_SETLEASE, F_UNLCK))
		t_fail("fd 10: cannot give the lease up: %s", strerror(errno));
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st))
		t_fail("the child's open failed once the lease was given up (status %#x)", st);
	if (got[10] != 1)
		t_fail("fd 10: %d break signals, want 1", (int)got[10]);
	no_ghost();
	t_pass("waiter");
}

/* Two read leases of one file, two open file descriptions, broken by one writer. */
static void run_two(void)
{
	open_at("brk-two", O_RDONLY, 10);
	open_at("brk-two", O_RDONLY, 11);
	if (fcntl(11, F_SETSIG, SIGRTMIN + 3) || fcntl(11, F_SETLEASE, F_RDLCK))
		t_fail("fd 11: F_SETLEASE: %s", strerror(errno));
	lease_and_break(10, F_RDLCK, SIGIO, "brk-two", O_WRONLY);
	wait_signals(11, 1);
	t_ready("");
	t_wait_usr1();
	t_check_common();
	no_ghost();
	expect_lease(10, F_UNLCK);
	expect_lease(11, F_UNLCK);
	if (fcntl(11, F_SETLEASE, F_UNLCK))
		t_fail("fd 11: cannot give the lease up: %s", strerror(errno));
	expect_open("brk-two", O_WRONLY, 1);	/* fd 10's lease still there */
	give_up(10, "brk-two");
	t_pass("two");
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_sigaction = on_break, .sa_flags = SA_SIGINFO | SA_RESTART };

	t_init(argc, argv, SA_RESTART);
	snprintf(dir, sizeof(dir), "%s", t_dir);
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGIO, &sa, NULL) || sigaction(SIGRTMIN + 3, &sa, NULL))
		t_fail("sigaction: %s", strerror(errno));
	if (argc > 2 && !strcmp(argv[2], "tree"))
		run_tree(false);
	if (argc > 2 && !strcmp(argv[2], "handed"))
		run_tree(true);
	if (argc > 2 && !strcmp(argv[2], "waiter"))
		run_waiter();
	if (argc > 2 && !strcmp(argv[2], "two"))
		run_two();
	run_one();
}
