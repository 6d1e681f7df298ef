/* t-seccompuid: seccomp filters installed by root without no_new_privs, one
 * of which denies setresuid (EPERM), then the ids dropped to 65534 with
 * setuid/setgid and no capability left (zdtm seccomp_filter: its filter
 * kills on setresuid, which the restore itself calls). After restore: uids,
 * gids 65534, CapEff 0, NoNewPrivs 0, Seccomp 2, setresuid still denied,
 * getppid still allowed. READY <pid> */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>

#include "tlib.h"

static void deny(int nr)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = 4, .filter = f };

	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		t_fail("seccomp filter: %s", strerror(errno));
}

static long status_field(const char *key, int hex)
{
	char line[256];
	long v = -1;
	size_t n = strlen(key);
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':') {
			v = strtol(line + n + 1, NULL, hex ? 16 : 10);
			break;
		}
	fclose(f);
	return v;
}

static void check(const char *when)
{
	uid_t r, e, s;

	if (syscall(SYS_getresuid, &r, &e, &s) || r != 65534 || e != 65534 || s != 65534 || getgid() != 65534)
		t_fail("%s: ids are not 65534", when);
	if (status_field("CapEff", 1) != 0 || status_field("NoNewPrivs", 0) != 0 ||
	    status_field("Seccomp", 0) != 2)
		t_fail("%s: CapEff %lx NoNewPrivs %ld Seccomp %ld", when, status_field("CapEff", 1),
		       status_field("NoNewPrivs", 0), status_field("Seccomp", 0));
	errno = 0;
	if (syscall(SYS_setresuid, -1, -1, -1) != -1 || errno != EPERM)
		t_fail("%s: setresuid is not denied by the filter", when);
	if (getppid() <= 0)
		t_fail("%s: getppid failed", when);
}

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);
	if (geteuid() != 0) {
		printf("SKIP not root\n");
		return 2;
	}
	deny(SYS_ptrace);
	deny(SYS_setresuid);
	if (syscall(SYS_setgroups, 0, NULL) || syscall(SYS_setgid, 65534) ||
	    syscall(SYS_setuid, 65534))
		t_fail("dropping the ids: %s", strerror(errno));
	check("before");

	t_ready(NULL);
	t_wait_usr1();
	t_check_common();
	check("after");
	t_pass("filters, ids and capabilities restored");
}
