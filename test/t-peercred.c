/* t-peercred: UNIX sockets' peer credentials (SO_PEERCRED) checked after a
 * restore. usage: t-peercred DIR MODE
 *   self: a stream socketpair made by the process; a connection to its own
 *         listener, the client's end and the accepted end; the listener; a
 *         stream and a datagram pair whose other end it closed
 *   euid: the same made under other effective ids (uid, gid, groups), the
 *         listener's listen() under the process's own
 *   child: `self` and `euid` in a child of the tree, which checks its own
 *   gone: a stream socketpair made by a child (sharing the fd table) that
 *         exited: its pid is no process's at restore
 *   tree: a stream pair (own ids) and a datagram pair (other ids) made, then
 *         a fork: the parent keeps one end of each, the child the other, data
 *         queued both ways; both check theirs (the maker's pid and ids)
 *   tree-conn: two connections to its listener made (listen, connect, accept),
 *         then a fork: the child keeps the client end of one and the
 *         accepted end of the other, the parent the other ends and the
 *         listener; both check theirs
 *   listen: two listeners and nothing else, one listen()ed under other ids
 *   forkconn: a listener, then a fork: the child connects to it, the parent
 *         accepts (a server forking workers), a byte queued each way; both
 *         check theirs and the byte, the parent its listener's too
 *   shared: a stream socketpair, then a fork: both keep one end (one
 *         description in two processes), the parent the other
 *   shared2: a stream socketpair, then two forks: both children keep one end
 *         (one description in two siblings), the parent the other (refused)
 *   closed: a listener at a path and an abstract one, then a fork: the child
 *         connects to each, the parent accepts and closes both listeners, then
 *         removes the path (zdtm deleted_unix_sock); names and bytes checked too
 *   below: a connection to its listener, a stream pair (own ids), a datagram
 *         pair (other ids), then a fork: the child keeps one end of each and
 *         forks a grandchild keeping them too (one description in two
 *         processes), the parent the other ends (zdtm's
 *         seccomp_filter_inheritance); all three check theirs
 *   mgr:  python's multiprocessing Manager's shape: three children forked,
 *         E, then L, then S; L listens (after its fork) and accepts four
 *         connections: from its earlier sibling E, its parent, and two from
 *         its later sibling S (the second under other ids); each connector
 *         sends a byte, L sends it back upper-cased: all queued. Each checks
 *         its ends' credentials and the byte its peer queued
 *   named: a datagram socketpair (under other ids) whose ends were then bound
 *         (a path since removed, an abstract name), and a connection accepted
 *         from a listener whose file was removed (zdtm sk-unix01's shapes);
 *         their names and a datagram each way checked too
 * Checked: SO_PEERCRED's pid, uid and gid, SO_PEERGROUPS (a listener's: its
 * listen()'s, in self and euid).
 * READY <pid> */
#include "tlib.h"

#include <grp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#define MAX 32
#define NG 8
static int fds[MAX], nr;
static struct ucred before[MAX];
static gid_t groups[MAX][NG];
static socklen_t glen[MAX];

static void must(int ok, const char *what) { if (!ok) t_fail("%s: %s", what, strerror(errno)); }

static struct ucred peer(int fd)
{
	struct ucred c;
	socklen_t l = sizeof(c);

	must(!getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &l), "SO_PEERCRED");
	return c;
}

static socklen_t peer_groups(int fd, gid_t *g)
{
	socklen_t l = NG * sizeof(gid_t);

	must(!getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &l), "SO_PEERGROUPS");
	return l;
}

static void keep(int fd)
{
	fds[nr] = fd;
	glen[nr] = peer_groups(fd, groups[nr]);
	before[nr++] = peer(fd);
}

/* other effective ids for a while (as_other), or the process's own back */
static void as_other(int on)
{
	static const gid_t g[] = { 65534, 100, 4 }, none[] = { 0 };

	if (on) {
		must(!setgroups(3, g) && !setresgid(-1, 65533, -1) && !setresuid(-1, 65532, -1),
		     "other ids");
	} else {
		must(!setresuid(-1, 0, -1) && !setresgid(-1, 0, -1) && !setgroups(1, none),
		     "own ids");
	}
}

static void self(int other)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t l = offsetof(struct sockaddr_un, sun_path) + 1 +
		      snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "t-peercred-%d-%d",
			       (int)getpid(), other);
	int sv[2], dv[2], s = socket(AF_UNIX, SOCK_STREAM, 0), c;

	must(s >= 0, "socket");
	must(!bind(s, (struct sockaddr *)&a, l) && !listen(s, 4), "listen");
	if (other)
		as_other(1);
	must(!socketpair(AF_UNIX, SOCK_STREAM, 0, sv), "socketpair");
	must(!socketpair(AF_UNIX, SOCK_DGRAM, 0, dv), "socketpair");
	c = socket(AF_UNIX, SOCK_STREAM, 0);
	must(c >= 0 && !connect(c, (struct sockaddr *)&a, l), "connect");
	if (other)
		as_other(0);
	keep(sv[0]);
	keep(sv[1]);
	keep(dv[0]);
	keep(dv[1]);
	keep(c);
	keep(accept(s, NULL, NULL));
	keep(s);
	must(write(sv[0], "x", 1) == 1, "write");
	if (other)
		as_other(1);
	must(!socketpair(AF_UNIX, SOCK_STREAM, 0, sv), "socketpair");	/* peers closed */
	must(!socketpair(AF_UNIX, SOCK_DGRAM, 0, dv), "socketpair");
	if (other)
		as_other(0);
	must(write(sv[1], "y", 1) == 1 && write(dv[1], "y", 1) == 1, "write");
	close(sv[1]);
	close(dv[1]);
	keep(sv[0]);
	keep(dv[0]);	/* a queue, sent again on the new pair */
}

static int data_fd = -1;	/* forkconn: one byte queued by the peer, 'c' or 'p' */
static char data_want;
static char queued[MAX];	/* mgr: the byte fds[i]'s peer queued on it, 0: none */

static int check(void)
{
	int bad = 0;
	char b = 0;

	if (data_fd >= 0 && (read(data_fd, &b, 1) != 1 || b != data_want)) {
		printf("FAIL fd %d: the byte queued by its peer is not there\n", data_fd);
		bad = 1;
	}

	for (int i = 0; i < nr; i++) {
		struct ucred c = peer(fds[i]);

		if (queued[i] && (read(fds[i], &b, 1) != 1 || b != queued[i])) {
			printf("FAIL fd %d: the byte %c queued by its peer is not there\n", fds[i],
			       queued[i]);
			bad = 1;
		}
		gid_t g[NG];
		socklen_t gl = peer_groups(fds[i], g);

		if (c.pid != before[i].pid || c.uid != before[i].uid || c.gid != before[i].gid) {
			printf("FAIL fd %d: peer pid %d uid %u gid %u, was pid %d uid %u gid %u\n",
			       fds[i], (int)c.pid, c.uid, c.gid, (int)before[i].pid, before[i].uid,
			       before[i].gid);
			bad = 1;
		} else if (gl != glen[i] || memcmp(g, groups[i], gl)) {
			printf("FAIL fd %d: peer groups (%u bytes) not the dumped ones (%u bytes)\n",
			       fds[i], (unsigned)gl, (unsigned)glen[i]);
			bad = 1;
		}
	}
	return bad;
}

static void in_child(void)
{
	int st;
	pid_t k = fork();

	must(k >= 0, "fork");
	if (k == 0) {
		self(0);
		self(1);
		while (!t_usr1)
			t_sleep_ms(10);
		fflush(stdout);
		_exit(check());
	}
	t_ready("child %d", (int)k);
	t_wait_usr1();
	must(!kill(k, SIGUSR1) && waitpid(k, &st, 0) == k, "the child");
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		t_fail("the child's peer credentials changed (status %#x)", st);
	t_pass("child");
}

/* a connection to s (at a, l) made: *c the client's end, *acc the accepted one */
static void conn(int s, struct sockaddr_un *a, socklen_t l, int *c, int *acc)
{
	*c = socket(AF_UNIX, SOCK_STREAM, 0);
	must(*c >= 0 && !connect(*c, (struct sockaddr *)a, l), "connect");
	*acc = accept(s, NULL, NULL);
	must(*acc >= 0, "accept");
}

/* both ends' credentials are the maker's: kept by each process after the fork */
static void tree(int connections)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t l = offsetof(struct sockaddr_un, sun_path) + 1 +
		      snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "t-peercred-%d-t",
			       (int)getpid());
	int sv[2], dv[2], st, s = -1;
	pid_t k;

	if (connections) {	/* sv: child's client end, dv: child's accepted end */
		s = socket(AF_UNIX, SOCK_STREAM, 0);
		must(s >= 0 && !bind(s, (struct sockaddr *)&a, l) && !listen(s, 4), "listen");
		conn(s, &a, l, &sv[1], &sv[0]);
		conn(s, &a, l, &dv[0], &dv[1]);
	} else {
		must(!socketpair(AF_UNIX, SOCK_STREAM, 0, sv), "socketpair");
		as_other(1);
		must(!socketpair(AF_UNIX, SOCK_DGRAM, 0, dv), "socketpair");
		as_other(0);
	}
	k = fork();
	must(k >= 0, "fork");
	if (k == 0) {
		close(sv[0]);
		close(dv[0]);
		if (s >= 0)
			close(s);
		nr = 0;
		keep(sv[1]);
		keep(dv[1]);
		must(write(sv[1], "c", 1) == 1 && write(dv[1], "c", 1) == 1, "write");
		while (!t_usr1)
			t_sleep_ms(10);
		fflush(stdout);
		_exit(check());
	}
	close(sv[1]);
	close(dv[1]);
	keep(sv[0]);
	keep(dv[0]);
	must(write(sv[0], "p", 1) == 1 && write(dv[0], "p", 1) == 1, "write");
	t_ready("tree%s %d", connections ? "-conn" : "", (int)k);
	t_wait_usr1();
	must(!kill(k, SIGUSR1) && waitpid(k, &st, 0) == k, "the child");
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		t_fail("the child's peer credentials changed (status %#x)", st);
	if (check())
		exit(1);
	t_pass(connections ? "tree-conn" : "tree");
}

/* listeners only: their credentials are their listen()'s */
static void listeners(void)
{
	for (int other = 0; other < 2; other++) {
		int s = socket(AF_UNIX, SOCK_STREAM, 0);

		must(s >= 0 && !bind(s, (struct sockaddr *)&(struct sockaddr_un){ AF_UNIX, "" },
				     sizeof(sa_family_t)), "autobind");
		if (other)
			as_other(1);
		must(!listen(s, 4), "listen");
		if (other)
			as_other(0);
		keep(s);
	}
}

/* the child, forked: its ends kept and checked on SIGUSR1; the parent waits for it */
static void child_checks(pid_t k)
{
	int st;

	if (k == 0) {
		while (!t_usr1)
			t_sleep_ms(10);
		fflush(stdout);
		_exit(check());
	}
	t_wait_usr1();
	must(!kill(k, SIGUSR1) && waitpid(k, &st, 0) == k, "the child");
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		t_fail("the child's peer credentials changed (status %#x)", st);
}

/* a listener, then a fork: the child connects, the parent accepts */
static void forkconn(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t l = offsetof(struct sockaddr_un, sun_path) + 1 +
		      snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "t-peercred-%d-f",
			       (int)getpid());
	int s = socket(AF_UNIX, SOCK_STREAM, 0), c;
	pid_t k;

	must(s >= 0 && !bind(s, (struct sockaddr *)&a, l) && !listen(s, 4), "listen");
	k = fork();
	must(k >= 0, "fork");
	if (k == 0) {
		close(s);
		c = socket(AF_UNIX, SOCK_STREAM, 0);
		must(c >= 0 && !connect(c, (struct sockaddr *)&a, l), "connect");
		nr = 0;
		keep(c);
		must(write(c, "c", 1) == 1, "write");
		data_fd = c;
		data_want = 'p';
		child_checks(0);
	}
	c = accept(s, NULL, NULL);
	must(c >= 0, "accept");
	keep(c);
	keep(s);
	must(write(c, "p", 1) == 1, "write");
	data_fd = c;
	data_want = 'c';
	t_ready("forkconn %d", (int)k);
	child_checks(k);
	if (check())
		exit(1);
	t_pass("forkconn");
}

/* mgr: a connector's connection to L's listener at a (its own ids, or other ones): its
 * byte sent, L's upper-cased one wanted back; told to its parent on ready */
static void mgr_connect(const struct sockaddr_un *a, socklen_t l, int other, char b)
{
	int c = socket(AF_UNIX, SOCK_STREAM, 0);

	must(c >= 0, "socket");
	if (other)
		as_other(1);
	while (connect(c, (const struct sockaddr *)a, l))	/* L listens meanwhile */
		must(errno == ECONNREFUSED || errno == ENOENT, "connect"), t_sleep_ms(5);
	if (other)
		as_other(0);
	keep(c);
	queued[nr - 1] = (char)(b - 'a' + 'A');
	must(write(c, &b, 1) == 1, "write");
}

/* mgr: L's accepts, each connector's byte peeked (left queued) and sent back upper-cased */
static void mgr_listen(const struct sockaddr_un *a, socklen_t l, int n)
{
	int s = socket(AF_UNIX, SOCK_STREAM, 0);

	must(s >= 0 && !bind(s, (const struct sockaddr *)a, l) && !listen(s, 8), "listen");
	keep(s);
	for (int i = 0; i < n; i++) {
		int c = accept(s, NULL, NULL);
		char b = 0;

		must(c >= 0 && recv(c, &b, 1, MSG_PEEK) == 1, "accept, peek");
		keep(c);
		queued[nr - 1] = b;
		b = (char)(b - 'a' + 'A');
		must(write(c, &b, 1) == 1, "write");
	}
}

/* mgr: a child of the parent: its part (which: 'e', 'l', 's'), ready said on done, checked
 * on SIGUSR1 */
static void mgr_child(char which, const struct sockaddr_un *a, socklen_t l, int done)
{
	while (nr > 0)	/* the parent's connection: its own (python's workers close it too) */
		close(fds[--nr]);
	memset(queued, 0, sizeof(queued));
	if (which == 'l') {
		mgr_listen(a, l, 4);
	} else if (which == 'e') {
		mgr_connect(a, l, 0, 'e');
	} else {
		mgr_connect(a, l, 0, 's');
		mgr_connect(a, l, 1, 't');
	}
	must(write(done, &which, 1) == 1, "write");
	close(done);
	child_checks(0);
}

static void mgr(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t l = offsetof(struct sockaddr_un, sun_path) + 1 +
		      snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "t-peercred-%d-m",
			       (int)getpid());
	static const char parts[] = "els";
	pid_t k[3];
	int done[2], st;
	char b;

	must(!pipe(done), "pipe");
	for (int i = 0; i < 3; i++) {
		k[i] = fork();
		must(k[i] >= 0, "fork");
		if (k[i] == 0) {
			close(done[0]);
			mgr_child(parts[i], &a, l, done[1]);
		}
		if (parts[i] == 'l')
			mgr_connect(&a, l, 0, 'p');
	}
	close(done[1]);
	for (int i = 0; i < 3; i++)
		must(read(done[0], &b, 1) == 1, "a child's ready");
	close(done[0]);
	t_ready("mgr %d %d %d", (int)k[0], (int)k[1], (int)k[2]);
	t_wait_usr1();
	for (int i = 0; i < 3; i++) {
		must(!kill(k[i], SIGUSR1) && waitpid(k[i], &st, 0) == k[i], "a child");
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			t_fail("child %c: its peer credentials or bytes changed (status %#x)",
			       parts[i], st);
	}
	if (check())
		exit(1);
	t_pass("mgr");
}

/* a socketpair, then a fork: one end in both processes */
static void shared(void)
{
	int sv[2];
	pid_t k;

	must(!socketpair(AF_UNIX, SOCK_STREAM, 0, sv), "socketpair");
	k = fork();
	must(k >= 0, "fork");
	if (k == 0) {
		close(sv[1]);
		nr = 0;
		keep(sv[0]);
		child_checks(0);
	}
	keep(sv[0]);
	keep(sv[1]);
	t_ready("shared %d", (int)k);
	child_checks(k);
	if (check())
		exit(1);
	t_pass("shared");
}

/* a socketpair, then two forks: one end in both children, the other in the parent */
static void shared2(void)
{
	int sv[2];
	pid_t k[2];

	must(!socketpair(AF_UNIX, SOCK_STREAM, 0, sv), "socketpair");
	for (int i = 0; i < 2; i++) {
		k[i] = fork();
		must(k[i] >= 0, "fork");
		if (k[i] == 0) {
			close(sv[1]);
			nr = 0;
			keep(sv[0]);
			child_checks(0);
		}
	}
	close(sv[0]);
	keep(sv[1]);
	t_ready("shared2 %d %d", (int)k[0], (int)k[1]);
	t_wait_usr1();
	for (int i = 0; i < 2; i++) {
		int st;

		must(!kill(k[i], SIGUSR1) && waitpid(k[i], &st, 0) == k[i], "a child");
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			t_fail("a child's peer credentials changed (status %#x)", st);
	}
	if (check())
		exit(1);
	t_pass("shared2");
}

/* a connection to a listener, a stream pair (own ids), a datagram pair (other ids), then a
 * fork: the child keeps one end of each and forks a grandchild that keeps them too (one
 * description in two processes), the parent the other ends; a byte queued for the child */
static void below(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t l = offsetof(struct sockaddr_un, sun_path) + 1 +
		      snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "t-peercred-%d-b",
			       (int)getpid());
	int sv[2], dv[2], up[2], s = socket(AF_UNIX, SOCK_STREAM, 0), c, acc;
	char b;
	pid_t k, g;

	must(s >= 0 && !bind(s, (struct sockaddr *)&a, l) && !listen(s, 4), "listen");
	conn(s, &a, l, &c, &acc);
	must(!socketpair(AF_UNIX, SOCK_STREAM, 0, sv) && !pipe(up), "socketpair");
	as_other(1);
	must(!socketpair(AF_UNIX, SOCK_DGRAM, 0, dv), "socketpair");
	as_other(0);
	must(write(sv[0], "p", 1) == 1, "write");
	k = fork();
	must(k >= 0, "fork");
	if (k == 0) {
		close(sv[0]);
		close(dv[0]);
		close(s);
		close(c);
		nr = 0;
		keep(sv[1]);
		keep(dv[1]);
		keep(acc);
		g = fork();
		must(g >= 0, "fork");
		if (g == 0) {
			must(write(up[1], "g", 1) == 1, "write");
			child_checks(0);
		}
		data_fd = sv[1];
		data_want = 'p';
		child_checks(g);
		fflush(stdout);
		_exit(check());
	}
	close(sv[1]);
	close(dv[1]);
	close(acc);
	keep(sv[0]);
	keep(dv[0]);
	keep(c);
	keep(s);
	must(read(up[0], &b, 1) == 1, "the grandchild's ready");
	t_ready("below %d", (int)k);
	child_checks(k);
	if (check())
		exit(1);
	t_pass("below");
}

static char stack[65536];
static int sv_gone[2];

static int child(void *arg)
{
	(void)arg;
	return socketpair(AF_UNIX, SOCK_STREAM, 0, sv_gone) ? 1 : 0;
}

static void gone(void)
{
	int st;
	pid_t p = clone(child, stack + sizeof(stack), CLONE_VM | CLONE_FILES | SIGCHLD, NULL);

	must(p > 0 && waitpid(p, &st, 0) == p, "clone");
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		t_fail("the child could not make a socketpair");
	keep(sv_gone[0]);
	keep(sv_gone[1]);
}

static struct sockaddr_un names[MAX];
static socklen_t nlen[MAX];
static int nnamed, named_fd[MAX];

static void keep_named(int fd)
{
	named_fd[nnamed] = fd;
	nlen[nnamed] = sizeof(names[0]);
	must(!getsockname(fd, (struct sockaddr *)&names[nnamed], &nlen[nnamed]), "getsockname");
	nnamed++;
	keep(fd);
}

static socklen_t path_name(struct sockaddr_un *a, const char *dir, const char *n)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path, sizeof(a->sun_path), "%s/%s", dir, n);
	return offsetof(struct sockaddr_un, sun_path) + strlen(a->sun_path) + 1;
}

static int named_pair;	/* named(): named_fd[0], [1] a datagram pair */
static int check_named(void);

static void named(const char *dir)
{
	struct sockaddr_un a;
	socklen_t l;
	int dv[2], s = socket(AF_UNIX, SOCK_STREAM, 0), c;

	as_other(1);
	must(!socketpair(AF_UNIX, SOCK_DGRAM, 0, dv), "socketpair");
	as_other(0);
	l = path_name(&a, dir, "dp");
	must(!bind(dv[0], (struct sockaddr *)&a, l) && !unlink(a.sun_path), "bind dp");
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	l = offsetof(struct sockaddr_un, sun_path) + 1 +
	    snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "t-peercred-n-%d", (int)getpid());
	must(!bind(dv[1], (struct sockaddr *)&a, l), "bind abstract");
	keep_named(dv[0]);
	keep_named(dv[1]);
	l = path_name(&a, dir, "ls");
	must(s >= 0 && !bind(s, (struct sockaddr *)&a, l) && !listen(s, 4), "listen");
	c = socket(AF_UNIX, SOCK_STREAM, 0);
	must(c >= 0 && !connect(c, (struct sockaddr *)&a, l), "connect");
	must(!unlink(a.sun_path), "unlink ls");
	keep_named(c);
	keep_named(accept(s, NULL, NULL));
	keep_named(s);
	must(write(dv[0], "a", 1) == 1, "write");	/* queued: sent again after the bind */
	named_pair = 1;
}

/* a listener at a path (its file removed since) and an abstract one, then a fork: the child
 * connects to each and sends a byte, the parent accepts each and closes both listeners
 * (zdtm deleted_unix_sock) */
static void closed(const char *dir)
{
	struct sockaddr_un a[2];
	socklen_t l[2];
	int s[2], c[2], up[2];
	char b;
	pid_t k;

	l[0] = path_name(&a[0], dir, "cl");
	memset(&a[1], 0, sizeof(a[1]));
	a[1].sun_family = AF_UNIX;
	l[1] = offsetof(struct sockaddr_un, sun_path) + 1 +
	       snprintf(a[1].sun_path + 1, sizeof(a[1].sun_path) - 1, "t-peercred-c-%d",
			(int)getpid());
	for (int i = 0; i < 2; i++) {
		s[i] = socket(AF_UNIX, SOCK_STREAM, 0);
		must(s[i] >= 0 && !bind(s[i], (struct sockaddr *)&a[i], l[i]) && !listen(s[i], 4),
		     "listen");
	}
	must(!pipe(up), "pipe");
	k = fork();
	must(k >= 0, "fork");
	if (k == 0) {
		nr = 0;
		for (int i = 0; i < 2; i++) {
			close(s[i]);
			c[i] = socket(AF_UNIX, SOCK_STREAM, 0);
			must(c[i] >= 0 && !connect(c[i], (struct sockaddr *)&a[i], l[i]), "connect");
			keep(c[i]);
			must(write(c[i], "c", 1) == 1, "write");
		}
		must(write(up[1], "x", 1) == 1, "write");
		data_fd = c[0];
		data_want = 'p';
		child_checks(0);
	}
	must(read(up[0], &b, 1) == 1, "the child's connections");
	for (int i = 0; i < 2; i++) {
		c[i] = accept(s[i], NULL, NULL);
		must(c[i] >= 0, "accept");
		close(s[i]);
		keep_named(c[i]);
	}
	must(!unlink(a[0].sun_path) && write(c[0], "p", 1) == 1, "unlink, write");
	data_fd = c[1];
	data_want = 'c';
	t_ready("closed %d", (int)k);
	child_checks(k);
	if (check() | check_named())
		exit(1);
	t_pass("closed");
}

/* names as before, and a datagram each way on the pair */
static int check_named(void)
{
	char b[2] = { 0 };
	int bad = 0;

	for (int i = 0; i < nnamed; i++) {
		struct sockaddr_un a;
		socklen_t l = sizeof(a);

		must(!getsockname(named_fd[i], (struct sockaddr *)&a, &l), "getsockname");
		if (l != nlen[i] || memcmp(&a, &names[i], l)) {
			printf("FAIL fd %d: its name is not the dumped one\n", named_fd[i]);
			bad = 1;
		}
	}
	if (named_pair && (read(named_fd[1], b, 1) != 1 || b[0] != 'a' ||
		       write(named_fd[1], "b", 1) != 1 || read(named_fd[0], b, 1) != 1 || b[0] != 'b')) {
		printf("FAIL the named datagram pair does not carry data both ways\n");
		bad = 1;
	}
	return bad;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "self";

	t_init(argc, argv, 0);
	if (!strcmp(mode, "self"))
		self(0);
	else if (!strcmp(mode, "euid"))
		self(1);
	else if (!strcmp(mode, "child"))
		in_child();
	else if (!strcmp(mode, "gone"))
		gone();
	else if (!strcmp(mode, "tree"))
		tree(0);
	else if (!strcmp(mode, "tree-conn"))
		tree(1);
	else if (!strcmp(mode, "listen"))
		listeners();
	else if (!strcmp(mode, "forkconn"))
		forkconn();
	else if (!strcmp(mode, "mgr"))
		mgr();
	else if (!strcmp(mode, "shared"))
		shared();
	else if (!strcmp(mode, "shared2"))
		shared2();
	else if (!strcmp(mode, "below"))
		below();
	else if (!strcmp(mode, "closed"))
		closed(t_dir);
	else if (!strcmp(mode, "named"))
		named(t_dir);
	else
		t_fail("unknown mode %s", mode);
	t_ready("%s", mode);
	t_wait_usr1();
	if (check() | check_named())
		exit(1);
	t_pass(mode);
}
