/* t-fown: the owner of fds' SIGIO (F_SETOWN, F_SETOWN_EX, F_SETSIG, O_ASYNC).
 *   fds 10/11: a pipe, both ends O_ASYNC, owner this process (F_SETOWN), signal SIGRTMIN+3;
 *              the owner set while the effective uid was 1 (the kernel keeps uid/euid 0/1)
 *   fd 12: DIR/fown-file, owner this process, signal SIGURG (this kernel keeps no O_ASYNC
 *          on a file without fasync)
 *   fds 13/14: a UNIX socketpair, fd 13 O_ASYNC, owner its main thread (F_OWNER_TID),
 *              signal SIGRTMIN+4
 *   fd 15: a pipe read end with only F_SETSIG SIGRTMIN+5 (no owner, no O_ASYNC)
 * argv[2] "other": fd 16, a pipe owned by the parent process (not dumped: refused);
 * "inotify": fd 16, an inotify instance with O_ASYNC (a kind whose owner is not restored:
 * refused).
 * After SIGUSR1: flags, owners, signals and owner uids as set, and the signals still come:
 * data written to fd 11 raises SIGRTMIN+3 with si_fd 10, to fd 14 SIGRTMIN+4 with si_fd 13.
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/socket.h>

#ifndef F_GETOWNER_UIDS
#define F_GETOWNER_UIDS 17
#endif

static void must(int ok, const char *what)
{
	if (!ok)
		t_fail("%s: %s", what, strerror(errno));
}

static void at(int fd, int want)
{
	must(fd >= 0 && dup2(fd, want) == want, "dup2");
	close(fd);
}

static void own(int fd, int type, pid_t pid, int sig, int async)
{
	struct f_owner_ex ex = { type, pid };

	if (pid)
		must(!fcntl(fd, F_SETOWN_EX, &ex), "F_SETOWN_EX");
	if (sig)
		must(!fcntl(fd, F_SETSIG, sig), "F_SETSIG");
	if (async)
		must(!fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC), "F_SETFL O_ASYNC");
}

static void expect(int fd, int type, pid_t pid, int sig, int async, uid_t uid, uid_t euid)
{
	struct f_owner_ex ex = { 0 };
	uid_t uids[2] = { 0, 0 };
	int fl = fcntl(fd, F_GETFL), s = fcntl(fd, F_GETSIG);

	must(!fcntl(fd, F_GETOWN_EX, &ex), "F_GETOWN_EX");
	if (!!(fl & O_ASYNC) != async)
		t_fail("fd %d: O_ASYNC %s, want %s", fd, fl & O_ASYNC ? "set" : "clear",
		       async ? "set" : "clear");
	if (ex.pid != pid || (pid && (int)ex.type != type))
		t_fail("fd %d: owner type %d pid %d, want type %d pid %d", fd, ex.type, ex.pid, type,
		       pid);
	if (s != sig)
		t_fail("fd %d: signal %d, want %d", fd, s, sig);
	if (pid && (fcntl(fd, F_GETOWNER_UIDS, uids) || uids[0] != uid || uids[1] != euid))
		t_fail("fd %d: owner uids %u/%u, want %u/%u", fd, uids[0], uids[1], uid, euid);
}

/* A write on wfd raises sig with si_fd rfd. */
static void expect_signal(int wfd, int rfd, int sig)
{
	struct timespec ts = { 5, 0 };
	siginfo_t si;
	sigset_t set;
	char c = 'x';

	sigemptyset(&set);
	sigaddset(&set, sig);
	must(write(wfd, &c, 1) == 1, "write");
	if (sigtimedwait(&set, &si, &ts) != sig)
		t_fail("no signal %d after a write to fd %d: %s", sig, wfd, strerror(errno));
	if (si.si_fd != rfd)
		t_fail("signal %d came for fd %d, want %d", sig, si.si_fd, rfd);
	must(read(rfd, &c, 1) == 1, "read");
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "";
	int p[2], sk[2], q[2], rt3 = SIGRTMIN + 3, rt4 = SIGRTMIN + 4, rt5 = SIGRTMIN + 5;
	pid_t me = getpid();
	char path[512];
	sigset_t set;

	t_init(argc, argv, SA_RESTART);
	sigemptyset(&set);
	sigaddset(&set, rt3);
	sigaddset(&set, rt4);
	sigaddset(&set, rt5);
	sigaddset(&set, SIGIO);
	must(!sigprocmask(SIG_BLOCK, &set, NULL), "sigprocmask");
	must(!pipe(p), "pipe");
	at(p[0], 10);
	at(p[1], 11);
	must(!syscall(SYS_setresuid, -1, 1, -1), "setresuid");
	own(10, F_OWNER_PID, me, rt3, 1);
	own(11, F_OWNER_PID, me, rt3, 1);
	must(!syscall(SYS_setresuid, -1, 0, -1), "setresuid back");
	snprintf(path, sizeof(path), "%s/fown-file", t_dir);
	at(open(path, O_RDWR | O_CREAT | O_TRUNC, 0600), 12);
	own(12, F_OWNER_PID, me, SIGURG, 0);
	must(!socketpair(AF_UNIX, SOCK_STREAM, 0, sk), "socketpair");
	at(sk[0], 13);
	at(sk[1], 14);
	own(13, F_OWNER_TID, me, rt4, 1);
	must(!pipe(q), "pipe");
	at(q[0], 15);
	close(q[1]);
	own(15, 0, 0, rt5, 0);
	if (!strcmp(mode, "other")) {
		must(!pipe(q), "pipe");
		at(q[0], 16);
		close(q[1]);
		own(16, F_OWNER_PID, getppid(), 0, 1);
	} else if (!strcmp(mode, "inotify")) {
		at(inotify_init1(0), 16);
		own(16, 0, 0, 0, 1);
	}
	t_ready(NULL);
	t_wait_usr1();
	t_check_common();
	expect(10, F_OWNER_PID, me, rt3, 1, 0, 1);
	expect(11, F_OWNER_PID, me, rt3, 1, 0, 1);
	expect(12, F_OWNER_PID, me, SIGURG, 0, 0, 0);
	expect(13, F_OWNER_TID, me, rt4, 1, 0, 0);
	expect(14, 0, 0, 0, 0, 0, 0);
	expect(15, 0, 0, rt5, 0, 0, 0);
	expect_signal(11, 10, rt3);
	expect_signal(14, 13, rt4);
	t_pass(NULL);
}
