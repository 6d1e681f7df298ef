/* t-zombiepg: a zombie child in a process group other than its parent's
 * (zdtm zombie01). "own": the child made its own group and exited. "dead":
 * a child made its own group, forked a grandchild as this process's child
 * (CLONE_PARENT) and exited; the grandchild exited too and is this process's
 * zombie, alone in a group whose leader is gone. "session": the child made a
 * session of its own (setsid) and exited. After restore the zombie is still
 * there, in that group (and session), with its status (7).
 * "leader" (zdtm zombie_leader; run as the init of a PID namespace): a child
 * A forks Z, which makes a session, forks G in it and exits; A never reaps
 * Z, G falls to this init. After restore Z is still A's zombie with status
 * 7, leading the session and group G is in, G this init's child again.
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

static pid_t own_session_zombie(pid_t *pgid)
{
	pid_t c = fork();

	if (c == 0) {
		setsid();
		_exit(7);
	}
	if (c < 0)
		t_fail("fork: %s", strerror(errno));
	*pgid = c;
	return c;
}

/* /proc/PID/stat's ppid, pgid and sid; 'Z' or the state into *state. */
static int stat_ids(pid_t p, char *state, pid_t *ppid, pid_t *pgid, pid_t *sid)
{
	char path[64], buf[512], *e;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/stat", p);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = (int)fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n > 0 ? n : 0] = 0;
	e = strrchr(buf, ')');
	return e && sscanf(e + 2, "%c %d %d %d", state, ppid, pgid, sid) == 4 ? 0 : -1;
}

/* In A: Z (status 7) its zombie, leading the session and group G is in, G the init's. */
static int leader_check(pid_t z, pid_t g)
{
	pid_t ppid, pgid, sid;
	siginfo_t si;
	char st;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, z, &si, WEXITED | WNOWAIT) || si.si_code != CLD_EXITED ||
	    si.si_status != 7)
		return 2;
	if (stat_ids(z, &st, &ppid, &pgid, &sid) || st != 'Z' || ppid != getpid() ||
	    pgid != z || sid != z)
		return 3;
	if (stat_ids(g, &st, &ppid, &pgid, &sid) || st == 'Z' || ppid != 1 || pgid != z ||
	    sid != z)
		return 4;
	return 0;
}

/* A: forks Z (which forks G), reports both, checks them on SIGUSR1. */
static void leader_parent(int out)
{
	pid_t ids[2] = { 0, 0 };
	int p[2];

	if (pipe(p))
		_exit(1);
	ids[0] = fork();
	if (ids[0] == 0) {
		pid_t g;

		setsid();
		g = fork();
		if (g == 0) {
			for (;;)
				pause();
		}
		if (write(p[1], &g, sizeof(g)) != sizeof(g))
			_exit(1);
		_exit(7);
	}
	if (ids[0] < 0 || read(p[0], &ids[1], sizeof(ids[1])) != sizeof(ids[1]))
		_exit(1);
	if (write(out, ids, sizeof(ids)) != sizeof(ids))
		_exit(1);
	t_wait_usr1();
	_exit(leader_check(ids[0], ids[1]));
}

static void zombie_leader(void)
{
	pid_t ids[2], a, ppid, pgid, sid;
	int p[2], st;
	char state;

	if (getpid() != 1)
		t_fail("not the init of a PID namespace");
	if (pipe(p))
		t_fail("pipe: %s", strerror(errno));
	a = fork();
	if (a == 0)
		leader_parent(p[1]);
	if (a < 0 || read(p[0], ids, sizeof(ids)) != sizeof(ids))
		t_fail("no zombie leader");
	for (int i = 0; i < 500 && (stat_ids(ids[1], &state, &ppid, &pgid, &sid) || ppid != 1); i++)
		t_sleep_ms(10);
	if (ppid != 1 || sid != ids[0])
		t_fail("G %d is not this init's child in session %d", ids[1], ids[0]);
	t_ready("%d %d %d", ids[0], ids[0], ids[1]);
	t_wait_usr1();
	t_check_common();
	kill(a, SIGUSR1);
	if (waitpid(a, &st, 0) != a || !WIFEXITED(st))
		t_fail("A %d did not exit", a);
	if (WEXITSTATUS(st))
		t_fail("A's check %d failed (2: Z's status, 3: Z's ids, 4: G's ids)",
		       WEXITSTATUS(st));
	kill(ids[1], SIGKILL);
	t_pass("the zombie leads its session again, its member the init's child");
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "dead";
	pid_t z, pgid;
	siginfo_t si;

	t_init(argc, argv, SA_RESTART);
	if (!strcmp(mode, "leader"))
		zombie_leader();
	z = !strcmp(mode, "own") ? own_group_zombie(&pgid) :
	    !strcmp(mode, "session") ? own_session_zombie(&pgid) : dead_group_zombie(&pgid);
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
	if (!strcmp(mode, "session") && getsid(z) != z)
		t_fail("zombie %d is in session %d, not its own", z, getsid(z));
	t_pass("the zombie in its group, with its status");
}
