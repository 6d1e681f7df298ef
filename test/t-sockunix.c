/* t-sockunix: UNIX sockets of every kind, with data queued both ways, checked
 * after a restore: stream, datagram and seqpacket socketpairs, a path-named
 * listener with an accepted connection, an abstract one, datagram sockets
 * bound to paths, shutdown and closed peers, options and credentials.
 * usage: t-sockunix DIR
 * READY <pid> */
#include "tlib.h"

#include <stdbool.h>
#include <stddef.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

static int pr[2], pd[2], pq[2], sh[2], cp[2];
static int lst, lc, la, alst, ac, aa, dsrv, dcli, dnamed, unb, bound;
static char path_l[108], path_d[108], path_dc[108], path_b[108], abs_name[64];

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

static int sock(int type) { int s = socket(AF_UNIX, type, 0); if (s < 0) t_fail("socket: %m"); return s; }

static void must(int ok, const char *what) { if (!ok) t_fail("%s: %s", what, strerror(errno)); }

static int listener(const char *name, bool abstract)
{
	struct sockaddr_un a;
	socklen_t l = mkaddr(&a, name, abstract);
	int s = sock(SOCK_STREAM);

	must(!bind(s, (struct sockaddr *)&a, l), "bind listener");
	must(!listen(s, 7), "listen");
	return s;
}

static void connect_to(int s, const char *name, bool abstract)
{
	struct sockaddr_un a;
	socklen_t l = mkaddr(&a, name, abstract);

	must(!connect(s, (struct sockaddr *)&a, l), "connect");
}

static void put(int s, const char *msg) { must(send(s, msg, strlen(msg), 0) == (ssize_t)strlen(msg), "send"); }

static void setup(void)
{
	int one = 1, sz = 65536;
	struct timeval tv = { 7, 0 };
	struct sockaddr_un a;
	socklen_t l;

	must(!socketpair(AF_UNIX, SOCK_STREAM, 0, pr), "socketpair");
	put(pr[0], "stream a->b "); put(pr[0], "twice");
	put(pr[1], "stream b->a");
	must(!setsockopt(pr[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)), "SO_SNDBUF");
	must(!setsockopt(pr[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), "SO_RCVTIMEO");
	must(!socketpair(AF_UNIX, SOCK_DGRAM, 0, pd), "socketpair dgram");
	put(pd[1], "back");	/* before SO_PASSCRED: a send with it autobinds (a named pair
				 * end, whose peer credentials are refused) */
	must(!setsockopt(pd[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)), "SO_PASSCRED");
	put(pd[0], "d1"); put(pd[0], "dgram two"); put(pd[0], "3");
	must(!socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pq), "socketpair seqpacket");
	put(pq[0], "rec1"); put(pq[0], "record2");
	fcntl(pq[1], F_SETFL, O_NONBLOCK);
	must(!socketpair(AF_UNIX, SOCK_STREAM, 0, sh), "socketpair sh");
	put(sh[0], "bye");
	must(!shutdown(sh[0], SHUT_WR), "shutdown");
	must(!socketpair(AF_UNIX, SOCK_STREAM, 0, cp), "socketpair cp");
	put(cp[1], "last words");
	close(cp[1]);

	lst = listener(path_l, false);
	lc = sock(SOCK_STREAM);
	connect_to(lc, path_l, false);
	la = accept(lst, NULL, NULL);
	must(la >= 0, "accept");
	put(lc, "hello server");
	put(la, "hello client");
	chmod(path_l, 0640);

	alst = listener(abs_name, true);
	ac = sock(SOCK_STREAM);
	connect_to(ac, abs_name, true);
	aa = accept(alst, NULL, NULL);
	must(aa >= 0, "accept abstract");
	put(ac, "abstract hi");

	dsrv = sock(SOCK_DGRAM);
	l = mkaddr(&a, path_d, false);
	must(!bind(dsrv, (struct sockaddr *)&a, l), "bind dgram");
	dcli = sock(SOCK_DGRAM);
	connect_to(dcli, path_d, false);
	put(dcli, "to server 1"); put(dcli, "to server 2");
	dnamed = sock(SOCK_DGRAM);
	l = mkaddr(&a, path_dc, false);
	must(!bind(dnamed, (struct sockaddr *)&a, l), "bind dgram client");
	l = mkaddr(&a, path_d, false);
	must(sendto(dnamed, "from named", 10, 0, (struct sockaddr *)&a, l) == 10, "sendto");

	unb = sock(SOCK_STREAM);
	bound = sock(SOCK_STREAM);
	l = mkaddr(&a, path_b, false);
	must(!bind(bound, (struct sockaddr *)&a, l), "bind plain");
}

/* The next message of s is exactly want. */
static void expect(int s, const char *want, const char *what)
{
	char buf[256];
	ssize_t n = recv(s, buf, sizeof(buf), MSG_DONTWAIT);

	if (n < 0)
		t_fail("%s: nothing queued (%s), want '%s'", what, strerror(errno), want);
	if ((size_t)n != strlen(want) || memcmp(buf, want, n))
		t_fail("%s: got '%.*s', want '%s'", what, (int)n, buf, want);
}

static void expect_eof(int s, const char *what)
{
	char c;
	ssize_t n = recv(s, &c, 1, MSG_DONTWAIT);

	if (n != 0)
		t_fail("%s: want EOF, got %zd (%s)", what, n, n < 0 ? strerror(errno) : "data");
}

static void expect_empty(int s, const char *what)
{
	char c;

	if (recv(s, &c, 1, MSG_DONTWAIT) != -1 || errno != EAGAIN)
		t_fail("%s: more data queued than dumped", what);
}

static void expect_name(int s, bool peer, const char *name, bool abstract, const char *what)
{
	struct sockaddr_un a, want;
	socklen_t l = sizeof(a), wl = name ? mkaddr(&want, name, abstract) : sizeof(sa_family_t);

	if (name && !abstract)
		wl = offsetof(struct sockaddr_un, sun_path) + strlen(name) + 1;
	if ((peer ? getpeername(s, (struct sockaddr *)&a, &l) : getsockname(s, (struct sockaddr *)&a, &l)))
		t_fail("%s: %s", what, strerror(errno));
	if (l != wl || (name && memcmp(a.sun_path, want.sun_path, wl - offsetof(struct sockaddr_un, sun_path))))
		t_fail("%s: name differs (len %u, want %u: %s)", what, l, wl, name ? name : "unnamed");
}

static int opt(int s, int o) { int v = 0; socklen_t l = sizeof(v); getsockopt(s, SOL_SOCKET, o, &v, &l); return v; }

static void expect_creds(int s, const char *want)
{
	char buf[64], ctl[CMSG_SPACE(sizeof(struct ucred))];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	struct cmsghdr *c;
	ssize_t n = recvmsg(s, &m, MSG_DONTWAIT);
	struct ucred u;

	if (n != (ssize_t)strlen(want) || memcmp(buf, want, n))
		t_fail("dgram with creds: got %zd bytes, want '%s'", n, want);
	c = CMSG_FIRSTHDR(&m);
	if (!c || c->cmsg_type != SCM_CREDENTIALS)
		t_fail("dgram '%s' came without credentials", want);
	memcpy(&u, CMSG_DATA(c), sizeof(u));
	if (u.pid != getpid() || u.uid != getuid())
		t_fail("dgram '%s' has credentials pid %d uid %d, want %d %d", want, u.pid, u.uid, getpid(), getuid());
}

static void check_listener(int l, const char *name, bool abstract)
{
	int c = sock(SOCK_STREAM), s;

	connect_to(c, name, abstract);
	s = accept(l, NULL, NULL);
	must(s >= 0, "accept after restore");
	put(c, "new");
	expect(s, "new", "new connection after restore");
	close(c);
	close(s);
}

static void check(void)
{
	struct timeval tv;
	socklen_t l = sizeof(tv);
	struct stat st;

	expect(pr[1], "stream a->b twice", "socketpair a->b");
	expect(pr[0], "stream b->a", "socketpair b->a");
	put(pr[1], "still works");
	expect(pr[0], "still works", "socketpair after restore");
	if (opt(pr[0], SO_SNDBUF) != 131072)
		t_fail("SO_SNDBUF is %d, want 131072", opt(pr[0], SO_SNDBUF));
	getsockopt(pr[1], SOL_SOCKET, SO_RCVTIMEO, &tv, &l);
	if (tv.tv_sec != 7)
		t_fail("SO_RCVTIMEO is %ld s, want 7", (long)tv.tv_sec);
	if (!opt(pd[1], SO_PASSCRED))
		t_fail("SO_PASSCRED is off");
	expect_creds(pd[1], "d1");
	expect_creds(pd[1], "dgram two");
	expect_creds(pd[1], "3");
	expect_empty(pd[1], "dgram pair");
	expect(pd[0], "back", "dgram pair back");
	expect(pq[1], "rec1", "seqpacket 1");
	expect(pq[1], "record2", "seqpacket 2");
	if (!(fcntl(pq[1], F_GETFL) & O_NONBLOCK))
		t_fail("O_NONBLOCK lost");
	expect(sh[1], "bye", "shutdown pair data");
	expect_eof(sh[1], "shutdown pair");
	if (send(sh[0], "x", 1, MSG_NOSIGNAL) != -1 || errno != EPIPE)
		t_fail("a write after SHUT_WR did not fail with EPIPE");
	expect(cp[0], "last words", "closed peer data");
	expect_eof(cp[0], "closed peer");

	expect(la, "hello server", "accepted connection");
	expect(lc, "hello client", "connecting end");
	expect_name(la, false, path_l, false, "accepted socket name");
	expect_name(lc, true, path_l, false, "client's peer name");
	expect_name(lc, false, NULL, false, "client name");
	if (stat(path_l, &st) || !S_ISSOCK(st.st_mode) || (st.st_mode & 0777) != 0640)
		t_fail("%s: not a socket with mode 0640", path_l);
	check_listener(lst, path_l, false);
	expect(aa, "abstract hi", "abstract connection");
	expect_name(ac, true, abs_name, true, "abstract peer name");
	check_listener(alst, abs_name, true);

	expect(dsrv, "to server 1", "dgram server 1");
	expect(dsrv, "to server 2", "dgram server 2");
	{
		char buf[32];
		struct sockaddr_un from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(dsrv, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);

		if (n != 10 || memcmp(buf, "from named", 10) || strcmp(from.sun_path, path_dc))
			t_fail("dgram from a named socket: %zd bytes from '%s'", n, n > 0 ? from.sun_path : "");
	}
	put(dcli, "after");
	expect(dsrv, "after", "dgram client still connected");
	expect_name(dcli, true, path_d, false, "dgram client's peer");
	expect_name(bound, false, path_b, false, "bound stream socket");
	expect_name(unb, false, NULL, false, "unbound socket");
}

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);
	snprintf(path_l, sizeof(path_l), "%s/l.sock", t_dir);
	snprintf(path_d, sizeof(path_d), "%s/d.sock", t_dir);
	snprintf(path_dc, sizeof(path_dc), "%s/dc.sock", t_dir);
	snprintf(path_b, sizeof(path_b), "%s/b.sock", t_dir);
	snprintf(abs_name, sizeof(abs_name), "memdump-test-%d", getpid());
	unlink(path_l); unlink(path_d); unlink(path_dc); unlink(path_b);
	setup();
	t_ready(NULL);
	t_wait_usr1();
	t_check_common();
	check();
	t_pass(NULL);
}
