/* t-zombiecred: run as root, a zombie child whose credentials are not its
 * parent's: groups 1234 2345, gids 1001 1002 1003 (fs 1004), uids 2001 2002
 * 2003 (fs 2003), exit status 5, unreaped. On SIGUSR1 its Uid, Gid and
 * Groups lines in /proc/PID/status must be the ones it had before the dump,
 * and waitid() must give si_uid 2001 and status 5.
 * READY <pid> <zombie-pid> */
#include "tlib.h"
#include <grp.h>
#include <sys/fsuid.h>
#include <sys/wait.h>

#define NR_KEYS 3
static const char *const keys[NR_KEYS] = { "Uid", "Gid", "Groups" };

static void status_line(pid_t pid, const char *key, char *out, size_t len)
{
	char path[64], line[512];
	size_t n = strlen(key);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		t_fail("cannot open %s: %s", path, strerror(errno));
	*out = 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':')
			snprintf(out, len, "%s", line);
	fclose(f);
	if (!*out)
		t_fail("%s has no %s line", path, key);
}

static void __attribute__((noreturn)) become_other(void)
{
	gid_t groups[2] = { 1234, 2345 };

	if (setgroups(2, groups) || setresgid(1001, 1002, 1003) || (setfsgid(1004), 0) ||
	    setresuid(2001, 2002, 2003))
		_exit(100);
	setfsuid(2003);
	_exit(5);
}

int main(int argc, char **argv)
{
	char before[NR_KEYS][512], after[512];
	siginfo_t si;
	pid_t z;

	t_init(argc, argv, SA_RESTART);
	z = fork();
	if (z == 0)
		become_other();
	if (z < 0 || waitid(P_PID, z, &si, WEXITED | WNOWAIT))
		t_fail("no zombie child: %s", strerror(errno));
	if (si.si_status != 5 || si.si_uid != 2001)
		t_fail("the child could not change its credentials (status %d)", si.si_status);
	for (int i = 0; i < NR_KEYS; i++)
		status_line(z, keys[i], before[i], sizeof(before[i]));
	t_ready("%d", z);
	t_wait_usr1();
	for (int i = 0; i < NR_KEYS; i++) {
		status_line(z, keys[i], after, sizeof(after));
		if (strcmp(after, before[i]))
			t_fail("zombie %d: %.*s, was %.*s", z, (int)strcspn(after, "\n"), after,
			       (int)strcspn(before[i], "\n"), before[i]);
	}
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, z, &si, WEXITED | WNOHANG))
		t_fail("waitid(%d): %s", z, strerror(errno));
	if (si.si_pid != z || si.si_code != CLD_EXITED || si.si_status != 5 || si.si_uid != 2001)
		t_fail("zombie %d: si_pid %d code %d status %d uid %u, want CLD_EXITED 5 uid 2001", z,
		       si.si_pid, si.si_code, si.si_status, (unsigned)si.si_uid);
	t_pass(NULL);
}
