/* t-sessions: sessions and process groups in a PID namespace, run as its init
 * (I, a session of its own). A leads a session; in it: A1 (a group of its
 * own), B1 (a child of B, which called setsid after forking it), V (its
 * parent W exited: a child of I now, in A's session, a group of its own), Q2
 * (its parent Q1, the leader of its group, exited: a child of I, in A's
 * session and Q1's dead group) and Q3 (Q2's child, in A1's group). Y is a
 * child of I in the session and group of X, which exited. The PIDs are in
 * memory every process shares; I reaps the ones that exit before READY.
 * On SIGUSR1, I checks every process's session and group against those at
 * READY, and that V, Q2 and Y are its children, then prints PASS.
 * READY <I> <sid:pgid of each of A A1 B B1 Y V Q2 Q3, in the namespace>
 * `subreaper`: not in a PID namespace, a child subreaper with Y only (Y's
 * session is no ancestor's: a dump refuses it). READY <I> <Y> */
#include "tlib.h"
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/wait.h>

enum { A, A1, B, B1, Y, V, Q2, Q3, N };
static const char *names[N] = { "A", "A1", "B", "B1", "Y", "V", "Q2", "Q3" };
static volatile pid_t *pids;	/* shared: each process writes its own */

static void __attribute__((noreturn)) stay(int slot)
{
	pids[slot] = getpid();
	for (;;)
		pause();
}

static pid_t xfork(void)
{
	pid_t p = fork();

	if (p < 0)
		t_fail("fork: %s", strerror(errno));
	return p;
}

static void wait_slot(int slot)
{
	for (int i = 0; !pids[slot]; i++) {
		if (i > 5000)
			t_fail("%s did not start", names[slot]);
		t_sleep_ms(1);
	}
}

/* B: B1 forked in A's session, then a session of its own. */
static void __attribute__((noreturn)) run_b(void)
{
	if (xfork() == 0)
		stay(B1);
	wait_slot(B1);
	if (setsid() < 0)
		t_fail("setsid B: %s", strerror(errno));
	stay(B);
}

/* Q1 leads a group, forks Q2 (which forks Q3 into A1's group) and exits. */
static void __attribute__((noreturn)) run_q1(void)
{
	setpgid(0, 0);
	if (xfork() == 0) {
		if (xfork() == 0) {
			if (setpgid(0, pids[A1]))
				t_fail("setpgid Q3: %s", strerror(errno));
			stay(Q3);
		}
		wait_slot(Q3);
		stay(Q2);
	}
	wait_slot(Q2);
	_exit(0);
}

static void __attribute__((noreturn)) run_a(void)
{
	pid_t w, q1;

	if (setsid() < 0)
		t_fail("setsid A: %s", strerror(errno));
	if (xfork() == 0) {
		setpgid(0, 0);
		stay(A1);
	}
	wait_slot(A1);
	if (xfork() == 0)
		run_b();
	wait_slot(B);
	w = xfork();
	if (w == 0) {	/* W: V, then gone */
		if (xfork() == 0) {
			setpgid(0, 0);
			stay(V);
		}
		wait_slot(V);
		_exit(0);
	}
	q1 = xfork();
	if (q1 == 0)
		run_q1();
	waitpid(w, NULL, 0);
	waitpid(q1, NULL, 0);
	stay(A);
}

/* X leads a session, forks Y into it and exits. */
static void run_x(void)
{
	pid_t x = xfork();

	if (x == 0) {
		setsid();
		if (xfork() == 0)
			stay(Y);
		wait_slot(Y);
		_exit(0);
	}
	waitpid(x, NULL, 0);
}

static bool my_child(pid_t p)
{
	return waitpid(p, NULL, WNOHANG) == 0;
}

int main(int argc, char **argv)
{
	pid_t sid[N], pgid[N];
	char line[512] = "";

	t_init(argc, argv, 0);
	if (argc > 2 && !strcmp(argv[2], "subreaper")) {
		prctl(PR_SET_CHILD_SUBREAPER, 1);
		pids = t_mmap(T_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS);
		run_x();
		wait_slot(Y);
		if (!my_child(pids[Y]) || getsid(pids[Y]) == getsid(0))
			t_fail("Y is not a child in a session of its own");
		t_ready("%d", (int)pids[Y]);
		t_wait_usr1();
		t_check_common();
		t_pass(NULL);
	}
	if (getpid() != 1)
		t_fail("not the init of a PID namespace (%d)", (int)getpid());
	setsid();
	pids = t_mmap(T_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS);
	if (xfork() == 0)
		run_a();
	run_x();
	for (int i = 0; i < N; i++)
		wait_slot(i);
	for (int i = 0; i < Q3 + 1; i++) {	/* A exits no child: W and Q1 reaped */
		sid[i] = getsid(pids[i]);
		pgid[i] = getpgid(pids[i]);
		snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s%d:%d", i ? " " : "",
			 (int)sid[i], (int)pgid[i]);
	}
	/* the shapes this test is about */
	if (sid[B1] != pids[A] || sid[B] != pids[B] || sid[V] != pids[A] || pgid[V] != pids[V] ||
	    sid[Q2] != pids[A] || pgid[Q2] == pids[Q2] || getpgid(pgid[Q2]) >= 0 ||
	    pgid[Q3] != pids[A1] || sid[Y] == 1 || getsid(sid[Y]) >= 0 ||
	    !my_child(pids[Y]) || !my_child(pids[V]) || !my_child(pids[Q2]))
		t_fail("not the tree it should be: %s", line);
	t_ready("%s", line);
	t_wait_usr1();
	t_check_common();
	for (int i = 0; i < N; i++)
		if (getsid(pids[i]) != sid[i] || getpgid(pids[i]) != pgid[i])
			t_fail("%s (%d) is in session %d group %d, not %d %d", names[i], (int)pids[i],
			       (int)getsid(pids[i]), (int)getpgid(pids[i]), (int)sid[i], (int)pgid[i]);
	if (!my_child(pids[Y]) || !my_child(pids[V]) || !my_child(pids[Q2]))
		t_fail("Y, V and Q2 are not all children of the init");
	t_pass(line);
}
