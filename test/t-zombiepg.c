/* t-zombiepg: a zombie child in a process group other than its parent's
 * (zdtm zombie01). "own": the child made its own group and exited. "dead":
 * a child made its own group, forked a grandchild as this process's child
 * (CLONE_PARENT) and exited; the grandchild exited too and is this process's
 * zombie, alone in a group whose leader is gone. After restore the zombie is
 * still there, in that group, with its status (7).
 * READY <pid> <zombie> <pgid> */
#include "tlib.h"
#include <sched.h>
#include <sys/wait.h>

static pid_t dead_group_zombie(pid_t *pgid)
{
	int p[2];
	long g = -1;
	pid_t c;

	if (pipe(p))
		t_fail("pipe: %s", strerror(errno));
	c = fork();
	if (c == 0) {
		setpgid(0, 0);
		g = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
		if (g == 0)
			_exit(7);
		if (write(p[1], &g, sizeof(g)) != sizeof(g))
			_exit(1);
		_exit(0);
	}
	if (c < 0 || read(p[0], &g, sizeof(g)) != sizeof(g) || g <= 0)
		t_fail("no grandchild");
	waitpid(c, NULL, 0);
	*pgid = c;
	return (pid_t)g;
}

static pid_t own_group_zombie(pid_t *pgid)
{
	pid_t c = fork();

	if (c == 0) {
		setpgid(0, 0);
		_exit(7);
	}
	if (c < 0)
		t_fail("fork: %s", strerror(errno));
	*pgid = c;
	return c;
}

int main(int argc, char **argv)
{
	pid_t z, pgid;
	siginfo_t si;

	t_init(argc, argv, SA_RESTART);
	z = argc > 2 && !strcmp(argv[2], "own") ? own_group_zombie(&pgid) : dead_group_zombie(&pgid);
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, z, &si, WEXITED | WNOWAIT))
		t_fail("no zombie %d: %s", z, strerror(errno));
	if (getpgid(z) != pgid)
		t_fail("zombie %d is in group %d, not %d", z, getpgid(z), pgid);
	t_ready("%d %d", z, pgid);
	t_wait_usr1();
	t_check_common();
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, z, &si, WEXITED | WNOWAIT))
		t_fail("the zombie %d is gone: %s", z, strerror(errno));
	if (getpgid(z) != pgid)
		t_fail("zombie %d is in group %d, not %d", z, getpgid(z), pgid);
	if (si.si_code != CLD_EXITED || si.si_status != 7)
		t_fail("zombie %d: code %d status %d, not exited 7", z, si.si_code, si.si_status);
	if (kill(pgid, 0) == 0 && pgid != z)
		t_fail("the group's leader %d is alive", pgid);
	t_pass("the zombie in its group, with its status");
}
