/* t-scmev: event-loop files only in flight (SCM_RIGHTS) on a datagram socket pair's queue.
 *
 *   t-scmev DIR
 *
 *   t-scmev DIR pair   the same on a socketpair(): its peer credentials (this process's)
 *                      checked too (zdtm scm05)
 *
 * Messages queued on sk[1], every file in them closed by the process after sending:
 *   "ep1"  an epoll set watching sk[1] (EPOLLIN, data 0x1111) and a pipe's read end
 *          (EPOLLIN|EPOLLONESHOT, data 0x3333) registered as fd N, since moved to
 *          another number (N reused by the eventfd of ep2); the pipe holds a byte: both
 *          are ready
 *   "ep1b" the same set again (one description)
 *   "ep2"  an epoll set watching an eventfd the process holds (EPOLLIN|EPOLLET, data
 *          0x2222) whose edge was already taken (epoll_wait saw it)
 *   "ev"   an eventfd (EFD_SEMAPHORE|EFD_NONBLOCK, count 5); timerfds: a relative
 *          one-shot of 1000 s, an expired CLOCK_REALTIME one-shot with its tick unread,
 *          a periodic one of 500 s
 *   "sig"  a signalfd for SIGUSR2 and SIGRTMIN+1, SIGUSR2 blocked and pending
 * On SIGUSR1: N still the eventfd; each message received with its fds; the sets' fdinfo
 * registrations (fd, events, data) as before; ep1 reports sk[1] and the pipe, then only
 * sk[1] (one-shot); ep2 reports nothing until the eventfd is written; the eventfd
 * counts 5 as a semaphore and stays non-blocking; the timers as set; the signalfd's mask
 * as before and it reads SIGUSR2.
 */
#include "tlib.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <linux/kcmp.h>

enum { MAXFD = 4, TXT = 1024 };

static int sk[2];

static void send_fds(const char *data, const int *fds, int n)
{
	char ctl[CMSG_SPACE(MAXFD * sizeof(int))];
	struct iovec iov = { (void *)data, strlen(data) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = CMSG_SPACE(n * sizeof(int)) };
	struct cmsghdr *c;

	memset(ctl, 0, sizeof(ctl));
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(c), fds, n * sizeof(int));
	if (sendmsg(sk[0], &m, 0) != (ssize_t)iov.iov_len)
		t_fail("sendmsg %s: %s", data, strerror(errno));
}

/* Message want with n fds into fds. */
static void recv_fds(const char *want, int *fds, int n)
{
	char ctl[CMSG_SPACE(MAXFD * sizeof(int))], buf[64] = "";
	struct iovec iov = { buf, sizeof(buf) - 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof(ctl) };
	struct cmsghdr *c;
	ssize_t len = recvmsg(sk[1], &m, MSG_DONTWAIT);

	if (len < 0)
		t_fail("recvmsg %s: %s", want, strerror(errno));
	if (strcmp(buf, want))
		t_fail("message \"%s\", want \"%s\"", buf, want);
	c = CMSG_FIRSTHDR(&m);
	if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(n * sizeof(int)) ||
	    (m.msg_flags & MSG_CTRUNC))
		t_fail("message %s: not %d fds", want, n);
	memcpy(fds, CMSG_DATA(c), n * sizeof(int));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(a, b);
}

/*
 * The "tfd: N events: E data: D" parts of fd's fdinfo in txt, sorted (the kernel
 * lists them in the order of its files' addresses).
 */
static void registrations(int fd, char *txt)
{
	char path[64], line[256], regs[8][64];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		t_fail("open %s: %s", path, strerror(errno));
	while (n < 8 && fgets(line, sizeof(line), f)) {
		unsigned tfd, ev;
		unsigned long long data;

		if (sscanf(line, "tfd: %u events: %x data: %llx", &tfd, &ev, &data) == 3)
			snprintf(regs[n++], sizeof(regs[0]), "%u %x %llx;", tfd, ev, data);
	}
	fclose(f);
	qsort(regs, n, sizeof(regs[0]), cmp_str);
	txt[0] = 0;
	for (size_t i = 0; i < n; i++)
		snprintf(txt + strlen(txt), TXT - strlen(txt), "%s", regs[i]);
}

static void sigmask_line(int fd, char *txt)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		t_fail("open %s: %s", path, strerror(errno));
	txt[0] = 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "sigmask:", 8))
			snprintf(txt, TXT, "%s", line);
	fclose(f);
}

/* 0 when fd links to name, else -1. */
static int readlink_is(int fd, const char *name)
{
	char path[64], link[256];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return -1;
	link[n] = 0;
	return strcmp(link, name) ? -1 : 0;
}

static void add(int ep, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
		t_fail("epoll_ctl %d: %s", fd, strerror(errno));
}

/* The data of the events ep reports now, summed; their number. */
static int ready(int ep, uint64_t *sum)
{
	struct epoll_event ev[8];
	int n = epoll_wait(ep, ev, 8, 0);

	*sum = 0;
	for (int i = 0; i < n; i++)
		*sum += ev[i].data.u64;
	return n;
}

static int timer(int clock, int flags, long value_s, long value_ns, long interval_s)
{
	struct itimerspec its = { .it_value = { value_s, value_ns },
				  .it_interval = { interval_s, 0 } };
	int fd = timerfd_create(clock, flags);

	if (fd < 0 || timerfd_settime(fd, 0, &its, NULL))
		t_fail("timerfd: %s", strerror(errno));
	return fd;
}

static char ep1_regs[TXT], ep2_regs[TXT], sig_mask[TXT];
static int use_pair;	/* "pair": sk made by socketpair(), its peer credentials checked */
static int held_efd, moved, closed_nr;

/* Two datagram sockets bound to abstract names and connected to each other
 * (connect() sets no peer credentials). */
static int dgram_pair(int sv[2])
{
	for (int i = 0; i < 2; i++) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		socklen_t l = offsetof(struct sockaddr_un, sun_path) + 1 +
			      snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "t-scmev-%d-%d",
				       (int)getpid(), i);

		sv[i] = socket(AF_UNIX, SOCK_DGRAM, 0);
		if (sv[i] < 0 || bind(sv[i], (struct sockaddr *)&a, l))
			return -1;
	}
	for (int i = 0; i < 2; i++) {
		struct sockaddr_un a;
		socklen_t l = sizeof(a);

		if (getsockname(sv[!i], (struct sockaddr *)&a, &l) ||
		    connect(sv[i], (struct sockaddr *)&a, l))
			return -1;
	}
	return 0;
}

static void setup(void)
{
	int ep1 = epoll_create1(0), ep2 = epoll_create1(0), p[2], efd, t[3], sfd;
	uint64_t sum;
	sigset_t set;

	if (ep1 < 0 || ep2 < 0 || pipe(p) ||
	    (use_pair ? socketpair(AF_UNIX, SOCK_DGRAM, 0, sk) : dgram_pair(sk)))
		t_fail("setup: %s", strerror(errno));
	add(ep1, sk[1], EPOLLIN, 0x1111);
	add(ep1, p[0], EPOLLIN | EPOLLONESHOT, 0x3333);
	closed_nr = p[0];
	moved = fcntl(p[0], F_DUPFD, 50);
	close(p[0]);
	if (moved < 0 || write(p[1], "x", 1) != 1)
		t_fail("pipe: %s", strerror(errno));
	held_efd = eventfd(3, 0);	/* on number N */
	if (held_efd != closed_nr)
		t_fail("the eventfd is fd %d, not %d", held_efd, closed_nr);
	add(ep2, held_efd, EPOLLIN | EPOLLET, 0x2222);
	if (ready(ep2, &sum) != 1 || sum != 0x2222)
		t_fail("ep2 did not report the eventfd before the dump");
	registrations(ep1, ep1_regs);
	registrations(ep2, ep2_regs);

	efd = eventfd(5, EFD_SEMAPHORE | EFD_NONBLOCK);
	t[0] = timer(CLOCK_MONOTONIC, 0, 1000, 0, 0);
	t[1] = timer(CLOCK_REALTIME, TFD_NONBLOCK, 0, 1000, 0);
	t[2] = timer(CLOCK_MONOTONIC, 0, 500, 0, 500);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGRTMIN + 1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, 0);
	if (efd < 0 || sfd < 0)
		t_fail("eventfd, signalfd: %s", strerror(errno));
	sigmask_line(sfd, sig_mask);
	raise(SIGUSR2);
	t_sleep_ms(20);		/* t[1] expires */

	send_fds("ep1", &ep1, 1);
	send_fds("ep1b", &ep1, 1);
	send_fds("ep2", &ep2, 1);
	send_fds("ev", (int[]){ efd, t[0], t[1], t[2] }, 4);
	send_fds("sig", &sfd, 1);
	close(ep1), close(ep2), close(efd), close(sfd);
	for (int i = 0; i < 3; i++)
		close(t[i]);
}

static void check_epolls(void)
{
	char regs[TXT];
	int ep1, ep1b, ep2;
	uint64_t sum, one = 1;
	int n;

	recv_fds("ep1", &ep1, 1);
	recv_fds("ep1b", &ep1b, 1);
	if (syscall(SYS_kcmp, getpid(), getpid(), KCMP_FILE, ep1, ep1b))
		t_fail("ep1 and ep1b are not one description");
	registrations(ep1, regs);
	if (strcmp(regs, ep1_regs))
		t_fail("ep1 registrations \"%s\", want \"%s\"", regs, ep1_regs);
	n = ready(ep1, &sum);
	if (n != 2 || sum != 0x1111 + 0x3333)
		t_fail("ep1 reports %d events (sum %#llx), want sk[1] and the pipe", n,
		       (unsigned long long)sum);
	n = ready(ep1, &sum);
	if (n != 1 || sum != 0x1111)
		t_fail("ep1 reports %d events (sum %#llx) again, want sk[1] only (one-shot)", n,
		       (unsigned long long)sum);
	recv_fds("ep2", &ep2, 1);
	registrations(ep2, regs);
	if (strcmp(regs, ep2_regs))
		t_fail("ep2 registrations \"%s\", want \"%s\"", regs, ep2_regs);
	if ((n = ready(ep2, &sum)) != 0)
		t_fail("ep2 reports %d events: its edge was taken before the dump", n);
	if (write(held_efd, &one, sizeof(one)) != sizeof(one))
		t_fail("write eventfd: %s", strerror(errno));
	if (ready(ep2, &sum) != 1 || sum != 0x2222)
		t_fail("ep2 does not report the eventfd written");
}

static void check_ev(void)
{
	int f[4];
	uint64_t v;
	struct itimerspec its;

	recv_fds("ev", f, 4);
	if (!(fcntl(f[0], F_GETFL) & O_NONBLOCK))
		t_fail("the eventfd lost O_NONBLOCK");
	for (int i = 0; i < 5; i++)
		if (read(f[0], &v, sizeof(v)) != sizeof(v) || v != 1)
			t_fail("eventfd read %d: not 1 (semaphore of 5)", i);
	if (read(f[0], &v, sizeof(v)) >= 0 || errno != EAGAIN)
		t_fail("eventfd: a 6th read did not fail with EAGAIN");
	if (timerfd_gettime(f[1], &its) || its.it_interval.tv_sec || its.it_interval.tv_nsec ||
	    !(its.it_value.tv_sec || its.it_value.tv_nsec) || its.it_value.tv_sec > 1000)
		t_fail("timer 1: value %ld s, interval %ld s", (long)its.it_value.tv_sec,
		       (long)its.it_interval.tv_sec);
	if (read(f[2], &v, sizeof(v)) != sizeof(v) || v != 1)
		t_fail("timer 2: its expiration is not there to read");
	if (timerfd_gettime(f[3], &its) || its.it_interval.tv_sec != 500 ||
	    its.it_interval.tv_nsec || !its.it_value.tv_sec || its.it_value.tv_sec > 500)
		t_fail("timer 3: value %ld s, interval %ld s", (long)its.it_value.tv_sec,
		       (long)its.it_interval.tv_sec);
}

static void check_sig(void)
{
	struct signalfd_siginfo si;
	char mask[TXT];
	int sfd;

	recv_fds("sig", &sfd, 1);
	sigmask_line(sfd, mask);
	if (strcmp(mask, sig_mask))
		t_fail("signalfd %s, want %s", mask, sig_mask);
	if (read(sfd, &si, sizeof(si)) != sizeof(si) || si.ssi_signo != SIGUSR2)
		t_fail("signalfd does not read the pending SIGUSR2");
}

int main(int argc, char **argv)
{
	t_init(argc, argv, 0);
	use_pair = argc > 2 && !strcmp(argv[2], "pair");
	setup();
	t_ready("%d %d", closed_nr, moved);
	t_wait_usr1();
	t_check_common();
	if (readlink_is(closed_nr, "anon_inode:[eventfd]"))
		t_fail("fd %d is not the eventfd it was", closed_nr);
	check_epolls();
	check_ev();
	check_sig();
	for (int i = 0; use_pair && i < 2; i++) {
		struct ucred c;
		socklen_t l = sizeof(c);

		if (getsockopt(sk[i], SOL_SOCKET, SO_PEERCRED, &c, &l) || c.pid != getpid() ||
		    c.uid != getuid())
			t_fail("the pair's end %d: peer pid %d uid %u, not this process's", i,
			       (int)c.pid, c.uid);
	}
	t_pass(NULL);
}
