/* t-stopped: a child in group-stop, blocked in read() on a pipe that holds
 * a byte. `again`: stopped by SIGSTOP, then sent SIGSTOP again with kill()
 * and tkill() (queued while stopped); `tstp`: stopped by SIGTSTP in a
 * process group of its own. The stop stays unreaped (WNOWAIT). On SIGUSR1:
 * the child is still stopped, by the same signal as its parent's waitid
 * reports, stays so, and once continued reads its byte and exits with 7.
 * READY <pid> <child> */
#include "tlib.h"
#include <stdbool.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static void child(int rd)
{
	char c;

	if (read(rd, &c, 1) != 1)
		_exit(1);
	_exit(c == 'x' ? 7 : 2);
}

static char proc_state(pid_t pid)
{
	char path[64], state = '?';
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
		t_fail("cannot read %s", path);
	fclose(f);
	return state;
}

static void expect_stop(pid_t pid, int sig)
{
	siginfo_t si = { 0 };

	if (waitid(P_PID, pid, &si, WSTOPPED | WNOHANG | WNOWAIT))
		t_fail("waitid(%d): %s", pid, strerror(errno));
	if (si.si_pid != pid || si.si_code != CLD_STOPPED)
		t_fail("child %d: no stop reported (pid %d, code %d)", pid, si.si_pid, si.si_code);
	if (si.si_status != sig)
		t_fail("child %d stopped by signal %d, not %d", pid, si.si_status, sig);
}

int main(int argc, char **argv)
{
	bool tstp = argc > 2 && !strcmp(argv[2], "tstp");
	int sig = tstp ? SIGTSTP : SIGSTOP, p[2], st;
	siginfo_t si;
	pid_t c;

	t_init(argc, argv, SA_RESTART);
	if (pipe(p))
		t_fail("pipe: %s", strerror(errno));
	c = fork();
	if (c == 0) {
		close(p[1]);
		child(p[0]);
	}
	close(p[0]);
	if (tstp && setpgid(c, c))
		t_fail("setpgid: %s", strerror(errno));
	kill(c, sig);
	if (waitid(P_PID, c, &si, WSTOPPED | WNOWAIT))
		t_fail("waitid: %s", strerror(errno));
	if (!tstp) {
		kill(c, SIGSTOP);
		syscall(SYS_tkill, c, SIGSTOP);
	}
	if (write(p[1], "x", 1) != 1)
		t_fail("write: %s", strerror(errno));
	t_ready("%d", c);
	t_wait_usr1();
	if (proc_state(c) != 'T')
		t_fail("child %d is not stopped: state %c", c, proc_state(c));
	expect_stop(c, sig);
	t_sleep_ms(100);
	if (proc_state(c) != 'T')
		t_fail("child %d ran on: state %c", c, proc_state(c));
	kill(c, SIGCONT);
	if (waitpid(c, &st, 0) != c)
		t_fail("waitpid(%d): %s", c, strerror(errno));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 7)
		t_fail("child %d did not read its byte after SIGCONT: status %#x", c, st);
	t_pass(NULL);
}
