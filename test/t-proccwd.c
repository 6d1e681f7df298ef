/* t-proccwd: a cwd in the /proc directory of a process that exited (zdtm unhashed_proc).
 *
 *   t-proccwd DIR [tree]
 *
 * It forks a child, changes into /proc/CHILD, kills and reaps it: its cwd is an
 * unhashed directory, /proc/self/cwd reads "/proc/CHILD (deleted)", getcwd() fails
 * with ENOENT, nothing can be looked up in it. `tree`: then it forks a second child,
 * which inherits that cwd and checks it too (told by SIGUSR1, its status reported).
 * READY <pid> <gone pid>. On SIGUSR1 every check again: the same link, ENOENT from
 * getcwd(), the same errors from a lookup ("status") and stat(".") (ESRCH), a directory
 * (through /proc/self/cwd) of mode 0555 owned by root on the procfs of /proc/self, and
 * PID CHILD free.
 */
#include "tlib.h"

#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char link_before[256];
static pid_t gone;
static int lookup_errno;	/* of a lookup in the cwd, as it was first */
static int dot_errno;		/* of stat("."), likewise */

static void check_cwd(const char *who)
{
	char buf[256];
	struct stat st, proc;
	ssize_t n = readlink("/proc/self/cwd", buf, sizeof(buf) - 1);

	if (n < 0)
		t_fail("%s: readlink cwd: %s", who, strerror(errno));
	buf[n] = 0;
	if (strcmp(buf, link_before))
		t_fail("%s: cwd reads \"%s\", want \"%s\"", who, buf, link_before);
	if (getcwd(buf, sizeof(buf)) || errno != ENOENT)
		t_fail("%s: getcwd gave %s (%s), want ENOENT", who, buf, strerror(errno));
	if (openat(AT_FDCWD, "status", O_RDONLY) >= 0)
		t_fail("%s: \"status\" opens in the cwd", who);
	if (!lookup_errno)
		lookup_errno = errno;
	if (errno != lookup_errno)
		t_fail("%s: \"status\" in the cwd: %s, want %s", who, strerror(errno),
		       strerror(lookup_errno));
	if (!stat(".", &st))
		t_fail("%s: stat(\".\") works in the cwd", who);
	if (!dot_errno)
		dot_errno = errno;
	if (errno != dot_errno)
		t_fail("%s: stat(\".\"): %s, want %s", who, strerror(errno), strerror(dot_errno));
	if (stat("/proc/self/cwd", &st) || stat("/proc/self", &proc))
		t_fail("%s: stat: %s", who, strerror(errno));
	if (!S_ISDIR(st.st_mode) || (st.st_mode & 07777) != 0555 || st.st_uid || st.st_gid ||
	    st.st_dev != proc.st_dev)
		t_fail("%s: cwd mode %o uid %u gid %u dev %lx (procfs %lx)", who, st.st_mode,
		       st.st_uid, st.st_gid, (unsigned long)st.st_dev, (unsigned long)proc.st_dev);
	if (!kill(gone, 0) || errno != ESRCH)
		t_fail("%s: PID %d, which exited, is in use", who, (int)gone);
}

/* The second child (tree): checks its inherited cwd when told. */
static void __attribute__((noreturn)) inheritor(void)
{
	t_wait_usr1();
	check_cwd("child");
	_exit(0);
}

int main(int argc, char **argv)
{
	bool tree = argc > 2 && !strcmp(argv[2], "tree");
	pid_t kid = 0;
	char path[64];
	ssize_t n;
	int st;

	t_init(argc, argv, 0);
	gone = fork();
	if (gone < 0)
		t_fail("fork: %s", strerror(errno));
	if (!gone) {
		pause();
		_exit(0);
	}
	snprintf(path, sizeof(path), "/proc/%d", (int)gone);
	if (chdir(path))
		t_fail("chdir %s: %s", path, strerror(errno));
	kill(gone, SIGKILL);
	waitpid(gone, NULL, 0);
	n = readlink("/proc/self/cwd", link_before, sizeof(link_before) - 1);
	if (n < 0)
		t_fail("readlink: %s", strerror(errno));
	link_before[n] = 0;
	check_cwd("before");
	if (tree && (kid = fork()) == 0)
		inheritor();
	if (kid < 0)
		t_fail("fork: %s", strerror(errno));
	t_ready("%d", (int)gone);
	t_wait_usr1();
	t_check_common();
	check_cwd("parent");
	if (kid) {
		kill(kid, SIGUSR1);
		if (waitpid(kid, &st, 0) != kid || !WIFEXITED(st) || WEXITSTATUS(st))
			t_fail("the child's check failed (status %#x)", st);
	}
	t_pass(link_before);
}
