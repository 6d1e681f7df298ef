/* t-tree: a live process tree. The parent P has two children: A feeds P a
 * counter through a pipe (A holds the write end only, P the read end only)
 * and has a child G of its own; B leads a process group of its own. Every
 * process fills private memory with a pattern of its own, and all of them
 * write to the stdout they inherited (one open file description: its offset
 * is shared). On SIGUSR1, P checks that every number came in order, passes
 * SIGUSR1 down; each process checks its PID, parent, group, session and
 * memory, prints "ok NAME" and exits 0; P reaps A and B (A reaps G) and
 * prints PASS.
 * READY <P> <A> <B> <G> */
#include "tlib.h"
#include <sys/prctl.h>
#include <sys/wait.h>

#define MEM (2u << 20)

static pid_t parent_pid, self_pid;
static char *mem;

static void check_self(const char *name, pid_t ppid, pid_t pgid, pid_t sid)
{
	const void *bad;

	if (getpid() != self_pid || (pid_t)syscall(SYS_getpid) != self_pid)
		t_fail("%s: pid changed: %d != %d", name, (int)getpid(), (int)self_pid);
	if (getppid() != ppid)
		t_fail("%s: parent is %d, not %d", name, (int)getppid(), (int)ppid);
	if (getpgrp() != pgid || getsid(0) != sid)
		t_fail("%s: group %d session %d, not %d %d", name, (int)getpgrp(), (int)getsid(0),
		       (int)pgid, (int)sid);
	bad = t_verify(mem, MEM, (uint64_t)self_pid);
	if (bad)
		t_fail("%s: memory differs at %p", name, bad);
}

/* A child: its own memory; it waits for SIGUSR1 (and run() meanwhile). */
static void child_setup(const char *name)
{
	prctl(PR_SET_NAME, name);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent_pid)
		_exit(3);
	self_pid = getpid();
	mem = t_mmap(MEM, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	t_fill(mem, MEM, (uint64_t)self_pid);
}

static void __attribute__((noreturn)) grandchild(pid_t pgid, pid_t sid)
{
	pid_t a = getppid();

	parent_pid = a;
	child_setup("tree-g");
	t_wait_usr1();
	check_self("G", a, pgid, sid);
	printf("ok G\n");
	fflush(stdout);
	_exit(0);
}

static void __attribute__((noreturn)) feeder(int wfd, int ready_fd, pid_t pgid, pid_t sid)
{
	uint32_t n = 0;
	pid_t g;
	int st;

	child_setup("tree-a");
	g = fork();
	if (g < 0)
		t_fail("fork: %s", strerror(errno));
	if (g == 0)
		grandchild(pgid, sid);
	if (write(ready_fd, &g, sizeof(g)) != sizeof(g))
		_exit(4);
	close(ready_fd);
	while (!t_usr1) {
		if (write(wfd, &n, sizeof(n)) == sizeof(n))
			n++;
		t_sleep_ms(1);
	}
	check_self("A", parent_pid, pgid, sid);
	close(wfd);
	kill(g, SIGUSR1);
	if (waitpid(g, &st, 0) != g || st != 0)
		t_fail("A: G ended with %#x", st);
	printf("ok A %u\n", n);
	fflush(stdout);
	_exit(0);
}

static void __attribute__((noreturn)) grouper(int ready_fd, pid_t sid)
{
	child_setup("tree-b");
	if (setpgid(0, 0))
		t_fail("B: setpgid: %s", strerror(errno));
	if (write(ready_fd, "b", 1) != 1)
		_exit(4);
	close(ready_fd);
	t_wait_usr1();
	check_self("B", parent_pid, self_pid, sid);
	printf("ok B\n");
	fflush(stdout);
	_exit(0);
}

static void reap(pid_t pid, const char *name)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		t_fail("waitpid %s (%d): %s", name, (int)pid, strerror(errno));
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		t_fail("%s (%d) ended with status %#x", name, (int)pid, st);
}

int main(int argc, char **argv)
{
	int feed[2], ready[2];
	uint32_t expect = 0, got;
	pid_t a, b, g, pgid, sid;
	char c;

	t_init(argc, argv, 0);
	parent_pid = self_pid = getpid();
	pgid = getpgrp();
	sid = getsid(0);
	mem = t_mmap(MEM, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	t_fill(mem, MEM, (uint64_t)self_pid);
	if (pipe(feed) || pipe(ready))
		t_fail("pipe: %s", strerror(errno));
	a = fork();
	if (a == 0) {
		close(feed[0]);
		close(ready[0]);
		feeder(feed[1], ready[1], pgid, sid);
	}
	close(feed[1]);
	if (read(ready[0], &g, sizeof(g)) != sizeof(g))
		t_fail("A did not start");
	b = fork();
	if (b == 0) {
		close(feed[0]);
		close(ready[0]);
		grouper(ready[1], sid);
	}
	if (read(ready[0], &c, 1) != 1)
		t_fail("B did not start");
	close(ready[0]);
	close(ready[1]);
	while (expect < 20) {
		if (read(feed[0], &got, sizeof(got)) != sizeof(got) || got != expect)
			t_fail("fed %u, expected %u", got, expect);
		expect++;
	}
	t_ready("%d %d %d", a, b, g);
	while (!t_usr1) {
		ssize_t r = read(feed[0], &got, sizeof(got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r != sizeof(got) || got != expect)
			t_fail("fed %u (read %zd), expected %u", got, r, expect);
		expect++;
	}
	check_self("P", getppid(), pgid, sid);
	kill(a, SIGUSR1);
	kill(b, SIGUSR1);
	while (read(feed[0], &got, sizeof(got)) == sizeof(got)) {
		if (got != expect)
			t_fail("fed %u at the end, expected %u", got, expect);
		expect++;
	}
	reap(a, "A");
	reap(b, "B");
	if (waitpid(-1, NULL, WNOHANG) != -1 || errno != ECHILD)
		t_fail("another child appeared");
	printf("PASS %u numbers in order\n", expect);
	fflush(stdout);
	return 0;
}
