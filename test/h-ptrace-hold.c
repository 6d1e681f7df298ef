/* h-ptrace-hold: helper for the runner (not a test target).
 * PTRACE_SEIZEs PID (without stopping it), prints "HOLDING <pid>" and
 * keeps the ptrace attachment until killed, passing signals on.
 * usage: h-ptrace-hold PID */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s PID\n", argv[0]);
		return 2;
	}
	pid_t pid = atoi(argv[1]);
	if (ptrace(PTRACE_SEIZE, pid, 0, 0)) {
		perror("PTRACE_SEIZE");
		return 1;
	}
	printf("HOLDING %d\n", (int)pid);
	fflush(stdout);
	for (;;) {
		int st;
		if (waitpid(pid, &st, __WALL) < 0) {
			pause();
			continue;
		}
		if (!WIFSTOPPED(st))
			continue;
		if (st >> 16 == PTRACE_EVENT_STOP)
			ptrace(PTRACE_LISTEN, pid, 0, 0);
		else
			ptrace(PTRACE_CONT, pid, 0, WSTOPSIG(st));
	}
}
