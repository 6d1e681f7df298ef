/* t-seccomp: a target whose seccomp filter makes vmsplice fail with EPERM,
 * so that splice mode must fall back to read mode; memory as t-pattern.
 * usage: t-seccomp DIR
 * READY <pid> <addr> <len> <seed> */
#include "tlib.h"

#include <stddef.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>

#define SEED 0x5eed0005ULL

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

int main(int argc, char **argv)
{
	size_t len = 8 << 20;
	uint8_t *big;
	const void *bad;

	t_init(argc, argv, SA_RESTART);
	big = t_mmap(len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_POPULATE);
	t_fill(big, len, SEED);
	deny_vmsplice();
	t_ready("%p %zu %#llx", (void *)big, len, (unsigned long long)SEED);
	t_wait_usr1();
	t_check_common();
	if ((bad = t_verify(big, len, SEED)))
		t_fail("region differs at %p", bad);
	t_pass(NULL);
}
