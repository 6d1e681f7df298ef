/* t-pidfd: pidfds at fixed numbers; a child C of its own waits for SIGTERM.
 *   fd 10: itself
 *   fd 11: its child C, PIDFD_NONBLOCK, close-on-exec
 *   fd 12, 13: two pidfds of A, a child that was killed and reaped
 *   fd 14: one of B, another such child
 * After SIGUSR1: fd 10 and 11 name the restored PIDs and signal them (C ends
 * by SIGTERM sent through fd 11); 12-14 name an exited process, are readable,
 * 12 and 13 share an inode and 14 has another; the flags as they were.
 * READY <pid> <C> */
#include "tlib.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>

#ifndef PIDFD_NONBLOCK
#define PIDFD_NONBLOCK	O_NONBLOCK
#endif

static int pidfd_open(pid_t pid, unsigned int flags)
{
	return (int)syscall(SYS_pidfd_open, pid, flags);
}

static int send_signal(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

static void at(int fd, int want, int cloexec)
{
	if (fd < 0 || dup3(fd, want, cloexec ? O_CLOEXEC : 0) != want)
		exit(2);
	close(fd);
}

static pid_t waiting_child(void)
{
	pid_t c = fork();

	if (c < 0)
		exit(2);
	if (!c) {
		signal(SIGUSR1, SIG_IGN);
		for (;;)
			pause();
	}
	return c;
}

/* A child killed and reaped after n pidfds of it went to fds first, first + 1 ... */
static void dead_child(int first, int n)
{
	pid_t c = waiting_child();

	for (int i = 0; i < n; i++)
		at(pidfd_open(c, 0), first + i, 0);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
}

/* The Pid: line of pidfd fd's fdinfo. */
static long fdinfo_pid(int fd)
{
	char path[64], line[256];
	long pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		t_fail("fd %d: no fdinfo", fd);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Pid: %ld", &pid) == 1)
			break;
	fclose(f);
	return pid;
}

static ino_t ino(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		t_fail("fd %d is not open", fd);
	return st.st_ino;
}

static void check_dead(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (fdinfo_pid(fd) != -1)
		t_fail("fd %d: pidfd of pid %ld, want an exited process (-1)", fd, fdinfo_pid(fd));
	if (poll(&p, 1, 0) != 1 || !(p.revents & POLLIN))
		t_fail("fd %d: the pidfd of an exited process is not readable", fd);
}

int main(int argc, char **argv)
{
	pid_t child;
	int status;

	t_init(argc, argv, SA_RESTART);
	child = waiting_child();
	at(pidfd_open(getpid(), 0), 10, 0);
	at(pidfd_open(child, PIDFD_NONBLOCK), 11, 1);
	dead_child(12, 2);
	dead_child(14, 1);
	t_ready(" %d", (int)child);
	t_wait_usr1();
	t_check_common();
	if (fdinfo_pid(10) != getpid() || send_signal(10, 0))
		t_fail("fd 10 is no pidfd of this process (Pid %ld)", fdinfo_pid(10));
	if (!(fcntl(11, F_GETFL) & O_NONBLOCK) || !(fcntl(11, F_GETFD) & FD_CLOEXEC))
		t_fail("fd 11 lost PIDFD_NONBLOCK or close-on-exec");
	if (fdinfo_pid(11) != child)
		t_fail("fd 11: pidfd of pid %ld, want the child %d", fdinfo_pid(11), (int)child);
	for (int fd = 12; fd <= 14; fd++)
		check_dead(fd);
	if (ino(12) != ino(13))
		t_fail("fds 12 and 13, pidfds of one process, have other inodes");
	if (ino(12) == ino(14))
		t_fail("fds 12 and 14, pidfds of two processes, share an inode");
	if (send_signal(11, SIGTERM))
		t_fail("cannot signal the child through fd 11: %s", strerror(errno));
	if (waitpid(child, &status, 0) != child || !WIFSIGNALED(status) ||
	    WTERMSIG(status) != SIGTERM)
		t_fail("the child did not end by the SIGTERM of fd 11 (status %#x)", status);
	t_pass(NULL);
}
