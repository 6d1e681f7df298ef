/* t-epollgone - epoll registrations whose fd was closed since (issue 24):
 *   fd 20, an epoll set:
 *     fd 40 EPOLLIN data 0x4040: a dup of the pipe's read end fd 10, closed
 *     fd 41 EPOLLIN data 0x4141: eventfd E, kept as fd 12; fd 41 then reused
 *     fd 41 EPOLLIN data 0x4142: eventfd F, now fd 41 (FD_CLOEXEC)
 *     fd 10 EPOLLIN data 0x1010: the pipe's read end itself
 *   fd 43, an epoll set: fd 43 EPOLLIN data 0x4343, eventfd G (kept as fd 13),
 *     registered while at 43; the set was moved to 43 since (its own number)
 * "nowhere" as argv[2]: also fd 42 EPOLLIN data 0x4242, a pipe whose read end
 * only a process outside (a detached grandchild) has open: the dump must
 * refuse it by name.
 * After SIGUSR1: each registration reports its own data, is keyed by its own
 * fd number (EPOLL_CTL_ADD of that number with its file: EEXIST), fd 40 is
 * closed and fd 41 is F with FD_CLOEXEC.
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>

static void at(int fd, int want, int flags)
{
	if (fd < 0 || dup3(fd, want, flags) != want)
		exit(2);
	close(fd);
}

static void add(int ep, int fd, uint64_t data)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = data };

	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
		perror("epoll_ctl");
		exit(2);
	}
}

/* What set 20 reports now: exactly one event with data want. */
static void expect_one(const char *what, uint64_t want)
{
	struct epoll_event ev[8];
	int got = epoll_wait(20, ev, 8, 0);

	if (got != 1 || ev[0].data.u64 != want)
		t_fail("%s: %d event(s) (first data %#llx), want one with data %#llx", what, got,
		       got > 0 ? (unsigned long long)ev[0].data.u64 : 0ULL,
		       (unsigned long long)want);
}

static void bump(int efd, int by)
{
	uint64_t v = (uint64_t)by;

	if (by > 0 ? write(efd, &v, 8) != 8 : read(efd, &v, 8) != 8)
		t_fail("eventfd %d: %s", efd, strerror(errno));
}

/* The registration of file fd under number n exists: adding it again says EEXIST. */
static void keyed(int fd, int n, const char *what)
{
	int saved = fcntl(n, F_DUPFD_CLOEXEC, 100);
	struct epoll_event ev = { .events = EPOLLIN };

	if (dup2(fd, n) != n)
		t_fail("dup2 %d %d: %s", fd, n, strerror(errno));
	if (!epoll_ctl(20, EPOLL_CTL_ADD, n, &ev) || errno != EEXIST)
		t_fail("%s: not registered as fd %d (ADD did not say EEXIST)", what, n);
	if (saved >= 0 ? dup3(saved, n, O_CLOEXEC) != n : close(n))
		t_fail("cannot put fd %d back", n);
	if (saved >= 0)
		close(saved);
}

static void check(void)
{
	char c;

	if (fcntl(40, F_GETFD) >= 0 || errno != EBADF)
		t_fail("fd 40 is open after restore");
	if (!(fcntl(41, F_GETFD) & FD_CLOEXEC))
		t_fail("fd 41 lost FD_CLOEXEC");
	expect_one("nothing written yet", 0x4142);	/* F: count 1 */
	bump(41, 0);
	if (epoll_wait(20, (struct epoll_event[1]){}, 1, 0) != 0)
		t_fail("set 20 reports something with nothing ready");
	if (write(11, "x", 1) != 1)
		t_fail("write to the pipe: %s", strerror(errno));
	{
		struct epoll_event ev[8];
		int got = epoll_wait(20, ev, 8, 0);
		uint64_t a = got == 2 ? ev[0].data.u64 ^ ev[1].data.u64 : 0;

		if (got != 2 || a != (0x4040 ^ 0x1010))
			t_fail("a write to the pipe: %d event(s), want 0x4040 and 0x1010", got);
	}
	if (read(10, &c, 1) != 1 || c != 'x')
		t_fail("the pipe lost its byte");
	bump(12, 1);
	expect_one("a write to E (fd 12)", 0x4141);
	bump(12, 0);
	bump(41, 1);
	expect_one("a write to F (fd 41)", 0x4142);
	bump(41, 0);
	bump(13, 1);
	{
		struct epoll_event ev;

		if (epoll_wait(43, &ev, 1, 0) != 1 || ev.data.u64 != 0x4343)
			t_fail("set 43 does not report G's write with data 0x4343");
	}
	keyed(10, 40, "the pipe's registration 0x4040");
	keyed(12, 41, "E's registration 0x4141");
	keyed(10, 10, "the pipe's registration 0x1010");
}

/* A grandchild, not ours, that holds fd and lives as long as we do. */
static void hold_outside(int fd)
{
	pid_t me = getpid(), c = fork();

	if (c < 0)
		exit(2);
	if (c == 0) {
		if (fork() == 0) {
			for (int i = 0; i < 1024; i++)
				if (i != fd)
					close(i);
			while (!kill(me, 0))
				sleep(1);
		}
		_exit(0);
	}
	waitpid(c, NULL, 0);
}

int main(int argc, char **argv)
{
	int p[2];

	t_init(argc, argv, SA_RESTART);
	if (pipe(p))
		exit(2);
	at(p[0], 10, 0);
	at(p[1], 11, 0);
	at(epoll_create1(0), 20, 0);
	at(dup(10), 40, 0);
	add(20, 40, 0x4040);
	close(40);
	at(eventfd(0, EFD_NONBLOCK), 41, 0);
	add(20, 41, 0x4141);
	at(dup(41), 12, 0);
	at(eventfd(1, EFD_NONBLOCK), 41, O_CLOEXEC);
	add(20, 41, 0x4142);
	add(20, 10, 0x1010);
	at(eventfd(0, EFD_NONBLOCK), 43, 0);
	at(epoll_create1(0), 44, 0);
	add(44, 43, 0x4343);
	at(dup(43), 13, 0);
	at(44, 43, 0);
	if (argc > 2 && !strcmp(argv[2], "nowhere")) {
		if (pipe(p))
			exit(2);
		at(p[0], 42, 0);
		add(20, 42, 0x4242);
		hold_outside(42);
		close(42);
		close(p[1]);
	}
	t_ready("");
	t_wait_usr1();
	t_check_common();
	check();
	t_pass(NULL);
}
