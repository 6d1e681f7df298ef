/* t-mqueue [MODE]: POSIX message queues.
 *   (none): a queue held open (mq_open) and unlinked, a message in it, in
 *           memdump's IPC namespace: memdump refuses it by name; on SIGUSR1 the
 *           message is still there.  READY <pid> <mqd>
 *   ns:     run in an IPC namespace of its own (unshare --ipc): queue /md-a
 *           (read-write, O_NONBLOCK, 8 x 64 bytes, mode 0640) with five
 *           messages at priorities 1, 7, 3, 1, 7; /md-b (read-only,
 *           blocking, 4 x 128 bytes, mode 0604, owned by 65534:65534) empty;
 *           /md-c (mode 0600) that nobody holds open, one message at priority 5.
 *           On SIGUSR1: the fds' flags, every queue's attributes, owner and
 *           mode, and the messages in priority order, then none (EAGAIN).
 *           READY <pid> <mqd a> <mqd b>
 *   tree:   in its own IPC namespace, /md-a as in ns, and a child C holding the
 *           same description (forked). On SIGUSR1 C takes the first two
 *           messages and clears O_NONBLOCK (mq_setattr: on the description),
 *           then the parent finds it clear and takes the other three, in
 *           priority order.
 *           READY <pid> <mqd> <C>
 *   notify: in its own IPC namespace, /md-n with an mq_notify registration
 *           (refused by name); on SIGUSR1 the registration still holds.
 */
#include "tlib.h"
#include <fcntl.h>
#include <mqueue.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

struct msg { const char *text; unsigned prio; };

static const struct msg sent[] = { { "low-1", 1 }, { "high-1", 7 }, { "mid", 3 },
				   { "low-2", 1 }, { "high-2", 7 } };
static const struct msg order[] = { { "high-1", 7 }, { "high-2", 7 }, { "mid", 3 },
				    { "low-1", 1 }, { "low-2", 1 } };

static mqd_t make(const char *name, int flags, mode_t mode, long maxmsg, long msgsize)
{
	struct mq_attr a = { .mq_maxmsg = maxmsg, .mq_msgsize = msgsize };
	mqd_t q;

	mq_unlink(name);
	q = mq_open(name, O_CREAT | O_EXCL | flags, mode, &a);
	if (q < 0)
		t_fail("mq_open %s: %s", name, strerror(errno));
	if (fchmod(q, mode))
		t_fail("fchmod %s: %s", name, strerror(errno));
	return q;
}

static void expect_queue(const char *name, mqd_t q, long maxmsg, long msgsize, long cur,
			 mode_t mode, uid_t uid, gid_t gid)
{
	struct mq_attr a;
	struct stat st;

	if (mq_getattr(q, &a))
		t_fail("mq_getattr %s: %s", name, strerror(errno));
	if (a.mq_maxmsg != maxmsg || a.mq_msgsize != msgsize || a.mq_curmsgs != cur)
		t_fail("%s: %ld x %ld bytes, %ld queued, not %ld x %ld, %ld", name, a.mq_maxmsg,
		       a.mq_msgsize, a.mq_curmsgs, maxmsg, msgsize, cur);
	if (fstat(q, &st))
		t_fail("fstat %s: %s", name, strerror(errno));
	if ((st.st_mode & 07777) != mode || st.st_uid != uid || st.st_gid != gid)
		t_fail("%s: mode %o owner %d:%d, not %o %d:%d", name, st.st_mode & 07777,
		       (int)st.st_uid, (int)st.st_gid, mode, (int)uid, (int)gid);
}

static void expect_flags(const char *name, mqd_t q, int want)
{
	int fl = fcntl(q, F_GETFL);
	struct mq_attr a;

	if (fl < 0 || (fl & (O_ACCMODE | O_NONBLOCK)) != want)
		t_fail("%s: fd flags %#x, not %#x", name, fl, want);
	if (mq_getattr(q, &a) || (a.mq_flags & O_NONBLOCK) != (want & O_NONBLOCK))
		t_fail("%s: mq_flags %#lx", name, a.mq_flags);
}

static void expect_msg(const char *name, mqd_t q, const struct msg *m, long size)
{
	char buf[256];
	unsigned prio;
	ssize_t n = mq_receive(q, buf, (size_t)size, &prio);

	if (n < 0)
		t_fail("%s: no message %s: %s", name, m->text, strerror(errno));
	if ((size_t)n != strlen(m->text) || memcmp(buf, m->text, (size_t)n) || prio != m->prio)
		t_fail("%s: got \"%.*s\" at %u, not \"%s\" at %u", name, (int)n, buf, prio, m->text,
		       m->prio);
}

static void send_msg(mqd_t q, const struct msg *m)
{
	if (mq_send(q, m->text, strlen(m->text), m->prio))
		t_fail("mq_send: %s", strerror(errno));
}

static void run_ns(void)
{
	mqd_t a = make("/md-a", O_RDWR | O_NONBLOCK, 0640, 8, 64);
	mqd_t b = make("/md-b", O_RDONLY, 0604, 4, 128);
	mqd_t c = make("/md-c", O_WRONLY, 0600, 2, 32);
	const struct msg orphan = { "orphan", 5 };

	if (fchown(b, 65534, 65534))
		t_fail("fchown: %s", strerror(errno));
	for (size_t i = 0; i < ARRAY_LEN(sent); i++)
		send_msg(a, &sent[i]);
	send_msg(c, &orphan);
	mq_close(c);
	t_ready("%d %d", (int)a, (int)b);
	t_wait_usr1();
	t_check_common();
	expect_flags("/md-a", a, O_RDWR | O_NONBLOCK);
	expect_flags("/md-b", b, O_RDONLY);
	expect_queue("/md-a", a, 8, 64, 5, 0640, 0, 0);
	expect_queue("/md-b", b, 4, 128, 0, 0604, 65534, 65534);
	for (size_t i = 0; i < ARRAY_LEN(order); i++)
		expect_msg("/md-a", a, &order[i], 64);
	if (mq_receive(a, (char[64]){ 0 }, 64, NULL) >= 0 || errno != EAGAIN)
		t_fail("/md-a: not empty, or blocking, after five messages: %s", strerror(errno));
	c = mq_open("/md-c", O_RDONLY | O_NONBLOCK);
	if (c < 0)
		t_fail("/md-c is gone: %s", strerror(errno));
	expect_queue("/md-c", c, 2, 32, 1, 0600, 0, 0);
	expect_msg("/md-c", c, &orphan, 32);
	t_pass("ns");
}

static void run_tree(void)
{
	mqd_t a = make("/md-a", O_RDWR | O_NONBLOCK, 0640, 8, 64);
	int go[2], done[2];
	char x = 0;
	pid_t c;

	for (size_t i = 0; i < ARRAY_LEN(sent); i++)
		send_msg(a, &sent[i]);
	if (pipe(go) || pipe(done))
		t_fail("pipe: %s", strerror(errno));
	c = fork();
	if (c == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(go[1]);
		close(done[0]);
		while (read(go[0], &x, 1) < 0 && errno == EINTR)
			;
		expect_msg("/md-a in the child", a, &order[0], 64);
		expect_msg("/md-a in the child", a, &order[1], 64);
		if (mq_setattr(a, &(struct mq_attr){ .mq_flags = 0 }, NULL))
			t_fail("mq_setattr: %s", strerror(errno));
		if (write(done[1], "k", 1) != 1)
			_exit(3);
		_exit(0);
	}
	close(go[0]);
	close(done[1]);
	t_ready("%d %d", (int)a, (int)c);
	t_wait_usr1();
	t_check_common();
	if (write(go[1], "g", 1) != 1 || read(done[0], &x, 1) != 1)
		t_fail("the child failed");
	expect_flags("/md-a", a, O_RDWR);	/* the child's mq_setattr: one description */
	expect_queue("/md-a", a, 8, 64, 3, 0640, 0, 0);
	for (size_t i = 2; i < ARRAY_LEN(order); i++)
		expect_msg("/md-a", a, &order[i], 64);
	if (waitpid(c, NULL, 0) != c)
		t_fail("waitpid: %s", strerror(errno));
	t_pass("tree");
}

static void run_notify(void)
{
	mqd_t q = make("/md-n", O_RDWR | O_NONBLOCK, 0600, 4, 32);
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR2 };

	signal(SIGUSR2, SIG_IGN);
	if (mq_notify(q, &ev))
		t_fail("mq_notify: %s", strerror(errno));
	t_ready("%d", (int)q);
	t_wait_usr1();
	if (mq_notify(q, &ev) == 0 || errno != EBUSY)
		t_fail("the mq_notify registration is gone");
	t_pass("notify");
}

int main(int argc, char **argv)
{
	char name[64], buf[8192];
	mqd_t q;

	t_init(argc, argv, SA_RESTART);
	if (argc > 2 && !strcmp(argv[2], "ns"))
		run_ns();
	if (argc > 2 && !strcmp(argv[2], "tree"))
		run_tree();
	if (argc > 2 && !strcmp(argv[2], "notify"))
		run_notify();
	snprintf(name, sizeof(name), "/memdump-t%d", (int)getpid());
	q = mq_open(name, O_CREAT | O_EXCL | O_RDWR, 0600, NULL);
	if (q < 0)
		t_fail("mq_open: %s", strerror(errno));
	mq_unlink(name);
	if (mq_send(q, "queued", 6, 1))
		t_fail("mq_send: %s", strerror(errno));
	t_ready("%d", (int)q);
	t_wait_usr1();
	if (mq_receive(q, buf, sizeof(buf), NULL) != 6 || memcmp(buf, "queued", 6))
		t_fail("the queued message is gone");
	t_pass(NULL);
}
