/* t-zombie: two zombie children the process has not reaped, one that
 * exited with status 3, one killed by SIGTERM. After a restore both must
 * still be zombies (its children, in its group and session, their comm
 * kept), no extra SIGCHLD must arrive, and waitpid gives the same status.
 * A SIGCHLD handler counts deliveries: none comes after READY.
 * READY <pid> <exited-pid> <killed-pid> */
#include "tlib.h"
#include <sys/prctl.h>
#include <sys/wait.h>

static volatile sig_atomic_t chld;
static void on_chld(int sig) { (void)sig; chld++; }

static void stat_of(pid_t pid, char *state, int *ppid, int *pgid, int *sid, char *comm)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%*d (%15[^)]) %c %d %d %d", comm, state, ppid, pgid, sid) != 5)
		t_fail("cannot read %s", path);
	fclose(f);
}

static void check_zombie(pid_t z, const char *comm, int status)
{
	char state, c[16];
	int ppid, pgid, sid, st;

	stat_of(z, &state, &ppid, &pgid, &sid, c);
	if (state != 'Z' || ppid != getpid() || pgid != getpgrp() || sid != getsid(0))
		t_fail("zombie %d: state %c ppid %d pgid %d sid %d", z, state, ppid, pgid, sid);
	if (strcmp(c, comm))
		t_fail("zombie %d is called %s, not %s", z, c, comm);
	if (waitpid(z, &st, WNOHANG) != z)
		t_fail("waitpid(%d) did not reap it: %s", z, strerror(errno));
	if (st != status)
		t_fail("zombie %d: status %#x, expected %#x", z, st, status);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_chld, .sa_flags = SA_RESTART };
	pid_t a, b;
	siginfo_t si;

	t_init(argc, argv, SA_RESTART);
	sigaction(SIGCHLD, &sa, NULL);
	a = fork();
	if (a == 0) {
		prctl(PR_SET_NAME, "zexit3");
		_exit(3);
	}
	int named[2];
	char c;

	if (pipe(named))
		t_fail("pipe: %s", strerror(errno));
	b = fork();
	if (b == 0) {
		prctl(PR_SET_NAME, "zterm");
		if (write(named[1], "n", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	if (read(named[0], &c, 1) != 1)
		t_fail("the second child did not start");
	close(named[0]);
	close(named[1]);
	kill(b, SIGTERM);
	waitid(P_PID, a, &si, WEXITED | WNOWAIT);
	waitid(P_PID, b, &si, WEXITED | WNOWAIT);
	while (!chld)
		t_sleep_ms(1);
	t_sleep_ms(20);		/* two may have merged into one */
	int before = chld;
	t_ready("%d %d", a, b);
	t_wait_usr1();
	if (chld != before)
		t_fail("%d SIGCHLD arrived since the start, %d before the dump", (int)chld, before);
	check_zombie(a, "zexit3", 3 << 8);
	check_zombie(b, "zterm", SIGTERM);
	if (waitpid(-1, NULL, WNOHANG) != -1 || errno != ECHILD)
		t_fail("another child appeared");
	t_pass(NULL);
}
