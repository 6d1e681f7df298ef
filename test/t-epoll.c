/* t-epoll: epoll sets at fixed numbers.
 *   fd 10/11: a pipe, 3 unread bytes;  fd 12: eventfd, count 1;  fd 13: eventfd, count 0
 *   fd 21 (B): fd 12 EPOLLIN|EPOLLET (its edge already taken by the program),
 *              fd 13 EPOLLIN|EPOLLONESHOT
 *   fd 20 (A): fd 10 EPOLLIN (level), fd 11 EPOLLOUT|EPOLLET (edge not yet taken),
 *              fd 21 EPOLLIN (nested set B)
 *   fd 22 (C): fd 13 EPOLLIN|EPOLLEXCLUSIVE
 * After SIGUSR1 every set reports what it would have uninterrupted.
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

static void at(int fd, int want)
{
	if (fd < 0 || dup3(fd, want, fcntl(fd, F_GETFD) & FD_CLOEXEC ? O_CLOEXEC : 0) != want)
		exit(2);
	close(fd);
}

static void add(int ep, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
		perror("epoll_ctl");
		exit(2);
	}
}

/* The data of what ep reports now, sorted into want order; fails unless exactly want. */
static void expect(int ep, const char *what, int n, const uint64_t *want)
{
	struct epoll_event ev[8];
	int got = epoll_wait(ep, ev, 8, 0);

	if (got != n)
		t_fail("%s: %d event(s), want %d (first data %#llx)", what, got, n,
		       got > 0 ? (unsigned long long)ev[0].data.u64 : 0ULL);
	for (int i = 0; i < n; i++) {
		int found = 0;

		for (int j = 0; j < got; j++)
			found |= ev[j].data.u64 == want[i];
		if (!found)
			t_fail("%s: no event with data %#llx", what, (unsigned long long)want[i]);
	}
}

static void bump(int efd)
{
	uint64_t one = 1;

	if (write(efd, &one, 8) != 8)
		t_fail("write to eventfd %d: %s", efd, strerror(errno));
}

static void check(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0x5 };
	char buf[8];

	expect(21, "B, restored", 0, NULL);
	expect(20, "A, restored", 2, (uint64_t[]){ 0x1010, 0x1111 });
	expect(20, "A, again", 1, (uint64_t[]){ 0x1010 });
	bump(12);
	expect(20, "A after a write to fd 12", 2, (uint64_t[]){ 0x1010, 0x2121 });
	expect(21, "B after a write to fd 12", 1, (uint64_t[]){ 0x1212 });
	bump(13);
	expect(21, "B after a write to fd 13", 1, (uint64_t[]){ 0x1313 });
	expect(22, "C after a write to fd 13", 1, (uint64_t[]){ 0x2213 });
	bump(13);
	expect(21, "B after a second write to fd 13 (one-shot)", 0, NULL);
	if (epoll_ctl(20, EPOLL_CTL_MOD, 10, &ev))
		t_fail("EPOLL_CTL_MOD of fd 10 in A: %s", strerror(errno));
	expect(20, "A after MOD", 1, (uint64_t[]){ 0x5 });
	if (!epoll_ctl(22, EPOLL_CTL_MOD, 13, &ev) || errno != EINVAL)
		t_fail("fd 13 in C is not EPOLLEXCLUSIVE (MOD did not fail with EINVAL)");
	if (read(10, buf, sizeof(buf)) != 3 || memcmp(buf, "abc", 3))
		t_fail("the pipe lost its data");
}

int main(int argc, char **argv)
{
	struct epoll_event ev[4];
	int p[2];

	t_init(argc, argv, SA_RESTART);
	if (pipe(p))
		exit(2);
	at(p[0], 10);
	at(p[1], 11);
	if (write(11, "abc", 3) != 3)
		exit(2);
	at(eventfd(1, EFD_NONBLOCK), 12);
	at(eventfd(0, EFD_NONBLOCK), 13);
	at(epoll_create1(0), 21);
	add(21, 12, EPOLLIN | EPOLLET, 0x1212);
	add(21, 13, EPOLLIN | EPOLLONESHOT, 0x1313);
	at(epoll_create1(EPOLL_CLOEXEC), 20);
	add(20, 10, EPOLLIN, 0x1010);
	add(20, 11, EPOLLOUT | EPOLLET, 0x1111);
	add(20, 21, EPOLLIN, 0x2121);
	at(epoll_create1(0), 22);
	add(22, 13, EPOLLIN | EPOLLEXCLUSIVE, 0x2213);
	if (epoll_wait(21, ev, 4, 0) != 1 || ev[0].data.u64 != 0x1212)
		exit(3);	/* B's edge on fd 12: taken */
	t_ready("");
	t_wait_usr1();
	t_check_common();
	if (!(fcntl(20, F_GETFD) & FD_CLOEXEC) || (fcntl(21, F_GETFD) & FD_CLOEXEC))
		t_fail("FD_CLOEXEC of the epoll fds is not as set");
	check();
	t_pass(NULL);
}
