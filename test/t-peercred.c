/* t-peercred: UNIX sockets' peer credentials (SO_PEERCRED) checked after a
 * restore. usage: t-peercred DIR MODE
 *   self: a stream socketpair made by the process; a connection to its own
 *         listener, the client's end and the accepted end
 *   gone: a stream socketpair made by a child (sharing the fd table) that
 *         exited: its pid is no process's at restore
 * READY <pid> */
#include "tlib.h"

#include <sched.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#define MAX 8
static int fds[MAX], nr;
static struct ucred before[MAX];

static void must(int ok, const char *what) { if (!ok) t_fail("%s: %s", what, strerror(errno)); }

static struct ucred peer(int fd)
{
	struct ucred c;
	socklen_t l = sizeof(c);

	must(!getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &l), "SO_PEERCRED");
	return c;
}

static void keep(int fd) { fds[nr] = fd; before[nr++] = peer(fd); }

static void self(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t l = offsetof(struct sockaddr_un, sun_path) + 1 +
		      snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "t-peercred-%d", (int)getpid());
	int sv[2], s = socket(AF_UNIX, SOCK_STREAM, 0), c = socket(AF_UNIX, SOCK_STREAM, 0);

	must(!socketpair(AF_UNIX, SOCK_STREAM, 0, sv), "socketpair");
	keep(sv[0]);
	keep(sv[1]);
	must(s >= 0 && c >= 0, "socket");
	must(!bind(s, (struct sockaddr *)&a, l) && !listen(s, 4), "listen");
	must(!connect(c, (struct sockaddr *)&a, l), "connect");
	keep(c);
	keep(accept(s, NULL, NULL));
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

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "self";

	t_init(argc, argv, 0);
	if (!strcmp(mode, "self"))
		self();
	else if (!strcmp(mode, "gone"))
		gone();
	else
		t_fail("unknown mode %s", mode);
	t_ready("%s", mode);
	t_wait_usr1();
	for (int i = 0; i < nr; i++) {
		struct ucred c = peer(fds[i]);

		if (c.pid != before[i].pid || c.uid != before[i].uid || c.gid != before[i].gid)
			t_fail("fd %d: peer pid %d uid %u gid %u, was pid %d uid %u gid %u", fds[i],
			       (int)c.pid, c.uid, c.gid, (int)before[i].pid, before[i].uid,
			       before[i].gid);
	}
	t_pass(mode);
}
