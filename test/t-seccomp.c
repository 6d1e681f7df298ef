/* t-seccomp: a target whose seccomp filter makes vmsplice fail with EPERM,
 * so that splice mode must fall back to read mode; memory as t-pattern.
 * With "notify", a second filter sends getcpu() to a (missing) supervisor
 * (SECCOMP_RET_USER_NOTIF); with "strict", the process is in seccomp strict
 * mode instead, waiting in read() for SIGUSR1; with "kill", a filter kills
 * the process on the syscalls memdump's parasite makes it run (memfd_create,
 * pipe2, eventfd2, ppoll, vmsplice, getitimer, membarrier): the dump must
 * not be subject to it (PTRACE_O_SUSPEND_SECCOMP). With "nocap", the vmsplice
 * filter is installed without no_new_privs (as root), then the process
 * becomes uid/gid 65534 with no capability, as a container's process under a
 * runtime's default profile: the restore must install the filter again
 * before its credentials; "nocap-deny" adds a filter that denies capset,
 * which the restorer needs after installing them: refused at dump time.
 * usage: t-seccomp DIR [notify|strict|kill|nocap|nocap-deny]
 * READY <pid> <addr> <len> <seed> */
#include "tlib.h"

#include <stddef.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <grp.h>

#define SEED 0x5eed0005ULL

static void install(struct sock_filter *f, unsigned short n, int nnp, const char *what)
{
	struct sock_fprog prog = { .len = n, .filter = f };

	if ((nnp && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror(what);
		exit(2);
	}
}

/* As a runtime's default profile: installed by root, then no capability left. */
static void nocap(int deny_capset)
{
	struct sock_filter vm[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_vmsplice, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_filter cs[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_capset, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	gid_t g = 65534;

	if (setgroups(1, &g) || setresgid(g, g, g)) {
		perror("setgid");
		exit(2);
	}
	install(vm, 4, 0, "seccomp nocap");
	if (deny_capset)
		install(cs, 4, 0, "seccomp deny capset");
	if (setresuid(65534, 65534, 65534)) {
		perror("setuid");
		exit(2);
	}
}

/* After the restore: the same uid, no capability, no no_new_privs, vmsplice still denied. */
static void check_nocap(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	int mode = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Seccomp:", 8))
			mode = atoi(line + 8);
	if (f)
		fclose(f);
	if (getuid() != 65534 || geteuid() != 65534 || getgid() != 65534)
		t_fail("uid %d euid %d gid %d, expected 65534", (int)getuid(), (int)geteuid(),
		       (int)getgid());
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 0)
		t_fail("no_new_privs is set after the restore");
	if (mode != 2)
		t_fail("seccomp mode %d after the restore, expected 2 (filter)", mode);
	if (syscall(SYS_vmsplice, -1, NULL, 0, 0) != -1 || errno != EPERM)
		t_fail("vmsplice not denied by the filter after the restore (errno %d)", errno);
}

static void deny_vmsplice(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_vmsplice, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("seccomp");
		exit(2);
	}
}

static void kill_on_parasite_syscalls(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_memfd_create, 6, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pipe2, 5, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_eventfd2, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ppoll, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_vmsplice, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getitimer, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_membarrier, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("seccomp kill");
		exit(2);
	}
}

/* A filter that hands getcpu() to a supervisor: the dump must refuse it by name. */
static void notify_getcpu(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getcpu, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)) {
		perror("seccomp notify");
		exit(2);
	}
}

/*
 * Strict mode: only read, write, exit and sigreturn are left. SIGUSR1 (no
 * SA_RESTART) ends the blocking read; PASS, then exit, not exit_group.
 */
static void __attribute__((noreturn)) strict_wait(void)
{
	int p[2];
	char c;

	if (pipe(p) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT)) {
		perror("strict");
		exit(2);
	}
	while (read(p[0], &c, 1) < 0 && !t_usr1)
		;
	if (write(1, "PASS\n", 5) != 5)
		syscall(SYS_exit, 1);
	syscall(SYS_exit, 0);
	__builtin_unreachable();
}

int main(int argc, char **argv)
{
	size_t len = 8 << 20;
	uint8_t *big;
	const void *bad;

	if (argc > 2 && !strcmp(argv[2], "strict")) {
		t_init(argc, argv, 0);
		t_ready(NULL);
		strict_wait();
	}
	t_init(argc, argv, SA_RESTART);
	big = t_mmap(len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_POPULATE);
	t_fill(big, len, SEED);
	if (argc > 2 && !strcmp(argv[2], "kill"))
		kill_on_parasite_syscalls();
	else if (argc > 2 && !strncmp(argv[2], "nocap", 5))
		nocap(!strcmp(argv[2], "nocap-deny"));
	else
		deny_vmsplice();
	if (argc > 2 && !strcmp(argv[2], "notify"))
		notify_getcpu();
	t_ready("%p %zu %#llx", (void *)big, len, (unsigned long long)SEED);
	t_wait_usr1();
	t_check_common();
	if (argc > 2 && !strcmp(argv[2], "nocap"))
		check_nocap();
	if ((bad = t_verify(big, len, SEED)))
		t_fail("region differs at %p", bad);
	t_pass(NULL);
}
