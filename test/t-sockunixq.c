/* t-sockunixq: connections a UNIX listener has not accepted yet, and datagrams
 * queued from senders that are gone (issue 24).
 *  - a stream listener (path name) with one accepted connection, then three
 *    clients not yet accepted: c1 (non-blocking), c2 (bound to a name), c3
 *    (shut down for writing); a seqpacket listener (abstract name) with one;
 *  - a datagram socketpair end whose twin sent a datagram, then closed;
 *  - a datagram socket bound to a path that a child process connected to
 *    and sent a datagram to, then exited.
 * On SIGUSR1: accept() returns c1, c2, c3 in that order (what each sends
 * arrives on its accepted end, c3's gives EOF), both ways, nothing more
 * pending; the accepted end's SO_PEERCRED is this process; the seqpacket
 * one keeps its record; the datagrams are read, the socketpair end gets
 * ECONNREFUSED once then ENOTCONN, the bound one can still be connected to.
 * Refused modes (the dump must name them): data (a client not accepted
 * sent data), closed (a client not accepted closed), tree (a client not
 * accepted is a child's), outside (a client not accepted is a process outside
 * the tree's), named (a datagram from a named sender gone since), namedpeer (a
 * datagram socket connected to a named one closed since); after the
 * refusal the same checks pass, the refused state included.
 * usage: t-sockunixq DIR [data|closed|tree|outside|named|namedpeer]
 * READY <pid> */
#include "tlib.h"

#include <stdbool.h>
#include <stddef.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

static int lst, acc0, cli0, c1, c2, c3, slst, s1, dpair, dsrv;
static char path_l[108], path_c2[108], path_d[108], abs_name[64];

static socklen_t mkaddr(struct sockaddr_un *a, const char *name, bool abstract)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (abstract) {
		memcpy(a->sun_path + 1, name, strlen(name));
		return offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name);
	}
	snprintf(a->sun_path, sizeof(a->sun_path), "%s", name);
	return offsetof(struct sockaddr_un, sun_path) + strlen(name) + 1;
}

static void must(int ok, const char *what) { if (!ok) t_fail("%s: %s", what, strerror(errno)); }

static int sock(int type) { int s = socket(AF_UNIX, type, 0); must(s >= 0, "socket"); return s; }

static void bind_to(int s, const char *name, bool abstract)
{
	struct sockaddr_un a;
	socklen_t l = mkaddr(&a, name, abstract);

	must(!bind(s, (struct sockaddr *)&a, l), "bind");
}

static void connect_to(int s, const char *name, bool abstract)
{
	struct sockaddr_un a;
	socklen_t l = mkaddr(&a, name, abstract);

	must(!connect(s, (struct sockaddr *)&a, l), "connect");
}

static void put(int s, const char *msg) { must(send(s, msg, strlen(msg), 0) == (ssize_t)strlen(msg), "send"); }

static void expect(int s, const char *want, const char *what)
{
	char buf[64] = "";
	struct pollfd p = { .fd = s, .events = POLLIN };
	ssize_t n;

	must(poll(&p, 1, 5000) == 1, what);
	n = recv(s, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	if (n < 0 || (size_t)n != strlen(want) || memcmp(buf, want, n))
		t_fail("%s: got %zd '%.*s', want '%s' (%s)", what, n, (int)(n > 0 ? n : 0), buf, want,
		       n < 0 ? strerror(errno) : "");
}

static pid_t main_pid;

/* A child of ours (outside: a grandchild, not in the tree) connects to (stream) or sends to
 * (datagram) name, then exits, or stays while this process lives. */
static pid_t child_does(const char *name, int type, bool stay, const char *bind_name, bool outside)
{
	pid_t k = fork();

	must(k >= 0, "fork");
	if (k == 0) {
		int s;

		if (outside && fork())
			_exit(0);
		for (int fd = 3; fd < 64; fd++)
			close(fd);
		s = sock(type);

		if (bind_name)
			bind_to(s, bind_name, false);
		connect_to(s, name, false);
		if (type == SOCK_DGRAM)
			put(s, "from-child");
		while (stay && !kill(main_pid, 0))
			t_sleep_ms(100);
		_exit(0);
	}
	if (!stay || outside)
		must(waitpid(k, NULL, 0) == k, "waitpid");
	return k;
}

static void setup_listeners(const char *mode)
{
	lst = sock(SOCK_STREAM);
	bind_to(lst, path_l, false);
	must(!listen(lst, 8), "listen");
	cli0 = sock(SOCK_STREAM);
	connect_to(cli0, path_l, false);
	acc0 = accept(lst, NULL, NULL);
	must(acc0 >= 0, "accept");
	c1 = sock(SOCK_STREAM);
	connect_to(c1, path_l, false);
	must(!fcntl(c1, F_SETFL, O_NONBLOCK), "O_NONBLOCK");
	c2 = sock(SOCK_STREAM);
	bind_to(c2, path_c2, false);
	connect_to(c2, path_l, false);
	c3 = sock(SOCK_STREAM);
	connect_to(c3, path_l, false);
	must(!shutdown(c3, SHUT_WR), "shutdown");
	slst = sock(SOCK_SEQPACKET);
	bind_to(slst, abs_name, true);
	must(!listen(slst, 2), "listen seqpacket");
	s1 = sock(SOCK_SEQPACKET);
	connect_to(s1, abs_name, true);
	if (!strcmp(mode, "data"))
		put(c2, "sent before accept");
	if (!strcmp(mode, "closed")) {
		int c4 = sock(SOCK_STREAM);

		connect_to(c4, path_l, false);
		close(c4);
	}
	if (!strcmp(mode, "outside") || !strcmp(mode, "tree"))
		child_does(path_l, SOCK_STREAM, true, NULL, !strcmp(mode, "outside"));
	t_sleep_ms(strcmp(mode, "ok") ? 200 : 0);	/* the child's connection in */
}

static void setup_dgrams(const char *mode)
{
	int sv[2];

	must(!socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), "socketpair");
	put(sv[1], "from-twin");
	close(sv[1]);
	dpair = sv[0];
	dsrv = sock(SOCK_DGRAM);
	bind_to(dsrv, path_d, false);
	if (!strcmp(mode, "named")) {
		char n[120];

		snprintf(n, sizeof(n), "%s/named-sender.sock", t_dir);
		child_does(path_d, SOCK_DGRAM, false, n, false);
	} else {
		child_does(path_d, SOCK_DGRAM, false, NULL, false);
	}
	if (!strcmp(mode, "namedpeer")) {	/* sent to, then connected to a named one, closed */
		char t[120], c[120];
		int a = sock(SOCK_DGRAM), x = sock(SOCK_DGRAM), cs = sock(SOCK_DGRAM);
		struct sockaddr_un ad;
		socklen_t l;

		snprintf(t, sizeof(t), "%s/t.sock", t_dir);
		snprintf(c, sizeof(c), "%s/c.sock", t_dir);
		bind_to(a, t, false);
		bind_to(cs, c, false);
		l = mkaddr(&ad, t, false);
		must(sendto(x, "early", 5, 0, (struct sockaddr *)&ad, l) == 5, "sendto");
		connect_to(a, c, false);
		close(cs);
	}
}

/* The refused modes' extra: data c2 sent before; a fourth connection (c4 closed, a child's). */
static void check_accepts(const char *mode)
{
	bool extra = !strcmp(mode, "closed") || !strcmp(mode, "outside") || !strcmp(mode, "tree");
	int a[3], x;
	struct ucred cr;
	socklen_t l = sizeof(cr);
	struct sockaddr_un n;
	socklen_t nl = sizeof(n);

	for (int i = 0; i < 3; i++) {
		a[i] = accept(lst, NULL, NULL);
		must(a[i] >= 0, "accept a pending connection");
	}
	if (extra)
		must(accept(lst, NULL, NULL) >= 0, "accept the fourth connection");
	must(!fcntl(lst, F_SETFL, O_NONBLOCK), "O_NONBLOCK");
	x = accept(lst, NULL, NULL);
	if (x >= 0 || errno != EAGAIN)
		t_fail("a connection too many was pending (%d, %s)", x, strerror(errno));
	if (!(fcntl(c1, F_GETFL) & O_NONBLOCK))
		t_fail("c1 lost O_NONBLOCK");
	put(c1, "one");
	put(c2, "two");
	expect(a[0], "one", "the first accepted is c1");
	expect(a[1], strcmp(mode, "data") ? "two" : "sent before accepttwo",
	       "the second accepted is c2");
	must(recv(a[2], &x, 1, 0) == 0, "the third accepted (c3, shut down) gives EOF");
	put(a[0], "back");
	expect(c1, "back", "c1 reads its accepted end");
	must(!getpeername(a[1], (struct sockaddr *)&n, &nl), "getpeername");
	if (strcmp(n.sun_path, path_c2))
		t_fail("the second accepted's peer is '%s', not c2's name", n.sun_path);
	must(!getsockopt(a[0], SOL_SOCKET, SO_PEERCRED, &cr, &l), "SO_PEERCRED");
	if (cr.pid != getpid())
		t_fail("the accepted end's SO_PEERCRED pid %d is not %d", cr.pid, (int)getpid());
	put(cli0, "zero");
	expect(acc0, "zero", "the connection accepted before");
}

static void check_seqpacket(void)
{
	int a = accept(slst, NULL, NULL);
	char buf[16];

	must(a >= 0, "accept seqpacket");
	put(s1, "rec1");
	put(s1, "rec2");
	must(recv(a, buf, 2, 0) == 2, "seqpacket recv");
	expect(a, "rec2", "seqpacket keeps its records");
}

static void check_dgrams(void)
{
	int s;

	expect(dpair, "from-twin", "the closed twin's datagram");
	if (send(dpair, "x", 1, 0) >= 0 || errno != ECONNREFUSED)
		t_fail("a send to the closed twin did not give ECONNREFUSED (%s)", strerror(errno));
	if (send(dpair, "x", 1, 0) >= 0 || errno != ENOTCONN)
		t_fail("a second send did not give ENOTCONN (%s)", strerror(errno));
	expect(dsrv, "from-child", "the exited child's datagram");
	s = sock(SOCK_DGRAM);
	connect_to(s, path_d, false);
	put(s, "again");
	expect(dsrv, "again", "a new sender");
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "ok";

	t_init(argc, argv, 0);
	main_pid = getpid();
	signal(SIGCHLD, SIG_DFL);
	snprintf(path_l, sizeof(path_l), "%s/l.sock", t_dir);
	snprintf(path_c2, sizeof(path_c2), "%s/c2.sock", t_dir);
	snprintf(path_d, sizeof(path_d), "%s/d.sock", t_dir);
	snprintf(abs_name, sizeof(abs_name), "t-sockunixq-%d", (int)getpid());
	setup_listeners(mode);
	setup_dgrams(mode);
	t_ready("%s", mode);
	t_wait_usr1();
	t_check_common();
	check_accepts(mode);
	check_seqpacket();
	check_dgrams();
	t_pass(NULL);
}
