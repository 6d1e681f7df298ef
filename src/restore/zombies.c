/*
 * Zombie children of the restored process (dump/zombies.c wrote them): each
 * is forked by the restored process itself, still memdump's code, with its
 * PID (clone3 set_tid), after the process joined its session and group so
 * that the zombie is in them too, and exits at once with its wait status:
 * the parent, restored, finds it as it was and reaps it when it wants.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/prctl.h>
#include <linux/securebits.h>

#include "common.h"
#include "log.h"
#include "restore/restore.h"
#include "restore/pipeline.h"

/* Signals that do not end a process by default: no zombie can hold them. */
static bool kills_by_default(int sig)
{
	return sig > 0 && sig < 65 && sig != SIGCHLD && sig != SIGCONT && sig != SIGURG &&
	       sig != SIGWINCH && sig != SIGSTOP && sig != SIGTSTP && sig != SIGTTIN &&
	       sig != SIGTTOU;
}

int zombies_check(struct rst *r)
{
	int ret;

	for (size_t i = 1; i < r->ds.nr_procs; i++) {
		pid_t z = (pid_t)r->ds.procs[i]->pid;
		int code = (int)r->ds.zombie_cores[i - 1]->tc->exit_code;
		char path[32];

		if ((WIFSIGNALED(code) && (!kills_by_default(WTERMSIG(code)) || WCOREDUMP(code))) ||
		    (!WIFSIGNALED(code) && !WIFEXITED(code)))
			return fail(-EINVAL, "core-%d.img: zombie %d has a wait status (%#x) no "
				    "exit gives", z, z, (unsigned)code);
		snprintf(path, sizeof(path), "/proc/%d", z);
		if (access(path, F_OK))
			continue;
		ret = rst_wait_zombie_gone(z);	/* a zombie left by the killing dump? */
		if (ret > 0)
			return fail(-EEXIST, "PID %d (a zombie child of the dump) is in use", z);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/*
 * The parent's dumped credentials, which the dump checked the zombie had too
 * (dump/zombies.c), set as the blob sets a thread's (restorer.c,
 * restore_creds); -errno on what the kernel refused.
 */
static int zombie_creds(const struct rst_creds *c)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_setgroups, c->nr_groups, c->groups) ||
	    prctl(PR_SET_SECUREBITS, 1 << SECURE_NO_SETUID_FIXUP) ||
	    syscall(SYS_setresgid, c->gid, c->egid, c->sgid))
		return -errno;
	syscall(SYS_setfsgid, c->fsgid);
	if (syscall(SYS_setresuid, c->uid, c->euid, c->suid))
		return -errno;
	syscall(SYS_setfsuid, c->fsuid);
	if (prctl(PR_SET_SECUREBITS, c->secbits))
		return -errno;
	for (int b = 0; b < 64; b++)
		if (!(c->cap_bnd[b / 32] & (1u << (b % 32))) && prctl(PR_CAPBSET_DROP, b) &&
		    errno != EINVAL)
			return -errno;
	for (int i = 0; i < 2; i++)
		data[i] = (struct __user_cap_data_struct){ .effective = c->cap_eff[i],
			.permitted = c->cap_prm[i], .inheritable = c->cap_inh[i] };
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	for (int b = 0; c->has_amb && b < 64; b++)
		if ((c->cap_amb[b / 32] & (1u << (b % 32))) &&
		    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, b, 0, 0))
			return -errno;
	if (c->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return 0;
}

/* In the zombie: end with the dumped status, no core, no atexit handler. */
static void __attribute__((noreturn)) zombie_exit(const struct rst *r, const TaskCoreEntry *tc)
{
	const struct rst_thread *leader = (const struct rst_thread *)(r->area + r->a->threads_off);
	int code = (int)tc->exit_code;
	struct rlimit none = { 0, 0 };
	sigset_t only;

	prctl(PR_SET_NAME, tc->comm);
	if (leader->has_creds && zombie_creds(&leader->creds))
		syscall(SYS_exit_group, 127);	/* the parent sees another status: fails */
	if (WIFSIGNALED(code)) {
		prctl(PR_SET_DUMPABLE, 0);
		setrlimit(RLIMIT_CORE, &none);
		signal(WTERMSIG(code), SIG_DFL);
		sigfillset(&only);
		sigdelset(&only, WTERMSIG(code));
		sigprocmask(SIG_SETMASK, &only, NULL);
		syscall(SYS_tgkill, getpid(), gettid(), WTERMSIG(code));
	}
	syscall(SYS_exit_group, WIFEXITED(code) ? WEXITSTATUS(code) : 127);
	__builtin_unreachable();
}

/* Its SIGCHLD, queued while every signal is blocked: the dumped queue comes later. */
static void drop_sigchld(void)
{
	struct timespec zero = { 0, 0 };
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	while (sigtimedwait(&chld, NULL, &zero) == SIGCHLD)
		;
}

/* The wait status waitpid would give for what waitid tells. */
static int status_of(const siginfo_t *si)
{
	return si->si_code == CLD_EXITED ? (si->si_status & 0xff) << 8 : si->si_status & 0x7f;
}

static int make_zombie(struct rst *r, size_t i, char *why, size_t len)
{
	pid_t set_tid = (pid_t)r->ds.procs[i]->pid, z;
	siginfo_t si;

	z = rst_fork_pid(set_tid);
	if (z == 0)
		zombie_exit(r, r->ds.zombie_cores[i - 1]->tc);
	if (z < 0) {
		snprintf(why, len, "cannot create zombie %d: %s", set_tid, strerror(errno));
		return -errno;
	}
	while (waitid(P_PID, z, &si, WEXITED | WNOWAIT) < 0)
		if (errno != EINTR) {
			snprintf(why, len, "zombie %d did not exit: %s", z, strerror(errno));
			return -errno;
		}
	drop_sigchld();
	if (status_of(&si) != (int)r->ds.zombie_cores[i - 1]->tc->exit_code) {
		snprintf(why, len, "zombie %d could not take its credentials (it exited with "
			 "%#x)", z, (unsigned)status_of(&si));
		return -EPERM;
	}
	return 0;
}

int zombies_make_in_child(struct rst *r, char *why, size_t len)
{
	int ret = 0;

	for (size_t i = 1; i < r->ds.nr_procs && !ret; i++)
		ret = make_zombie(r, i, why, len);
	return ret;
}
