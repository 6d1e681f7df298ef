/*
 * Zombie children of the restored process (dump/zombies.c wrote them): each
 * is forked by the restored process itself, still memdump's code, with its
 * PID (clone3 set_tid), after the process joined its session and group so
 * that the zombie is in them too, and exits at once with its wait status:
 * the parent, restored, finds it as it was and reaps it when it wants.
 */
#include <errno.h>
#include <fcntl.h>
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
#include "task/sessions.h"
#include "task/task.h"

/* Signals that do not end a process by default: no zombie can hold them. */
static bool kills_by_default(int sig)
{
	return sig > 0 && sig < 65 && sig != SIGCHLD && sig != SIGCONT && sig != SIGURG &&
	       sig != SIGWINCH && sig != SIGSTOP && sig != SIGTSTP && sig != SIGTTIN &&
	       sig != SIGTTOU;
}

/*
 * A zombie's group: its parent's (inherited), its own, or one whose leader
 * was gone at the dump (dump/zombies.c): a stand-in with the leader's PID
 * makes the group, the zombie joins it, the stand-in exits and is reaped.
 */
static bool needs_stand_in(const struct rst *r, const PstreeEntry *z)
{
	return z->pgid != r->ds.procs[0]->pgid && z->pgid != z->pid;
}

/* A zombie that leads a session of its own (setsid before it exited). */
static bool leads_session(const PstreeEntry *z)
{
	return z->sid == z->pid;
}

/* A zombie of a session whose leader is gone, the set's root a PID namespace's init. */
static bool in_lost_session(const struct rst *r, const PstreeEntry *z)
{
	return z->sid != r->ds.procs[0]->sid && !leads_session(z);
}

/*
 * A zombie session leader whose session has live members of the tree: the
 * tree's fork makes it (sessions.c, SK_ZOMBIE; zombie_leader_exit below).
 */
static bool made_by_plan(struct rst *r, const PstreeEntry *z)
{
	const struct sess_plan *p = r->tree ? tree_plan(r) : NULL;

	for (int k = p ? p->nr_procs : 0; p && k < p->nr; k++)
		if (p->n[k].kind == SK_ZOMBIE && p->n[k].host == (pid_t)z->pid)
			return true;
	return false;
}

/* 0: no process has PID id (a zombie of the killing dump waited for); >0: one has */
static int pid_free(pid_t id)
{
	char path[32];

	snprintf(path, sizeof(path), "/proc/%d", id);
	return access(path, F_OK) ? 0 : rst_wait_zombie_gone(id);
}

int zombies_check(struct rst *r)
{
	int ret;

	for (size_t i = 1; i < r->ds.nr_procs; i++) {
		pid_t z = (pid_t)r->ds.procs[i]->pid;
		int code = (int)r->ds.zombie_cores[i - 1]->tc->exit_code;

		if ((WIFSIGNALED(code) && (!kills_by_default(WTERMSIG(code)) || WCOREDUMP(code))) ||
		    (!WIFSIGNALED(code) && !WIFEXITED(code)))
			return fail(-EINVAL, "core-%d.img: zombie %d has a wait status (%#x) no "
				    "exit gives", z, z, (unsigned)code);
		if (leads_session(r->ds.procs[i]) && r->ds.procs[i]->pgid != r->ds.procs[i]->pid)
			return fail(-EINVAL, "pstree.img: zombie %d leads session %d but is in "
				    "process group %d", z, z, r->ds.procs[i]->pgid);
		if (in_lost_session(r, r->ds.procs[i]) && (rst_ns_pid(r->ds.procs[0]) != 1 ||
		    r->ds.procs[i]->pgid != r->ds.procs[i]->sid || !r->ds.procs[i]->ns_sid))
			return fail(-EINVAL, "pstree.img: zombie %d is in session %d, not its "
				    "parent's, which is no PID namespace's init", z,
				    r->ds.procs[i]->sid);
		if (rst_ns_pid(r->ds.procs[i]) && needs_stand_in(r, r->ds.procs[i]) &&
		    !r->ds.procs[i]->ns_pgid)
			return fail(-EINVAL, "pstree.img: zombie %d of a PID namespace is in process "
				    "group %d, which is outside the namespace", z,
				    r->ds.procs[i]->pgid);
		if (r->ds.zombie_cores[i - 1]->thread_core &&
		    r->ds.zombie_cores[i - 1]->thread_core->creds &&
		    r->ds.zombie_cores[i - 1]->thread_core->creds->n_groups > RST_MAX_GROUPS)
			return fail(-EOPNOTSUPP, "core-%d.img: zombie %d has more than %d groups", z,
				    z, RST_MAX_GROUPS);
		ret = pid_free(z);	/* a zombie left by the killing dump? */
		if (ret > 0)
			return fail(-EEXIST, "PID %d (a zombie child of the dump) is in use", z);
		ret = ret ? ret : needs_stand_in(r, r->ds.procs[i]) ? pid_free(r->ds.procs[i]->pgid) : 0;
		if (ret > 0)
			return fail(-EEXIST, "PID %d (the process group of zombie %d) is in use",
				    r->ds.procs[i]->pgid, z);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/*
 * The zombie's dumped credentials (its core's, dump/zombies.c; an older set
 * without them: its parent's, which the dump checked it had too), set as
 * the blob sets a thread's (restorer.c, restore_creds): groups, gids, uids,
 * securebits, capabilities; -errno on what the kernel refused.
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
static void __attribute__((noreturn)) zombie_exit(const struct rst *r, const TaskCoreEntry *tc,
						    const ThreadCoreEntry *th)
{
	const struct rst_thread *leader = (const struct rst_thread *)(r->area + r->a->threads_off);
	int code = (int)tc->exit_code;
	struct rlimit none = { 0, 0 };
	struct rst_creds own;
	sigset_t only;

	prctl(PR_SET_NAME, tc->comm);
	if (th && th->creds) {
		creds_from_image(&own, th->creds);
		if (zombie_creds(&own))
			syscall(SYS_exit_group, 127);	/* the parent sees another status: fails */
	} else if (leader->has_creds && zombie_creds(&leader->creds)) {
		syscall(SYS_exit_group, 127);
	}
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

/*
 * The stand-in leader of group pgid (ns_pgid in the PID namespace of the set,
 * 0: none), held until *hold is closed; 0 when the group is there already (an
 * earlier zombie of it), <0: -errno.
 */
static pid_t group_stand_in(pid_t pgid, pid_t ns_pgid, int *hold)
{
	int p[2];
	pid_t s;
	char c;

	*hold = -1;
	if (!kill(-(ns_pgid ? ns_pgid : pgid), 0))
		return 0;
	if (pipe2(p, O_CLOEXEC))
		return -errno;
	s = rst_fork_pid_ns(pgid, ns_pgid, 0);	/* in a PID namespace: both PIDs */
	if (s == 0) {
		close(p[1]);
		setpgid(0, 0);
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(p[0]);
	if (s < 0 || setpgid(s, s)) {	/* the group exists before the zombie forks */
		int err = -errno;

		close(p[1]);
		if (s > 0)
			waitpid(s, NULL, 0);
		return err;
	}
	*hold = p[1];
	return s;
}

static void stand_in_end(pid_t s, int hold)
{
	if (s <= 0)
		return;
	close(hold);
	while (waitpid(s, NULL, 0) < 0 && errno == EINTR)
		;
}

/*
 * Zombie i in its session again (dump/zombies.c): a stand-in with the leader's
 * PID makes the session and its group, forks the zombie in it and exits
 * without reaping it, so that the zombie falls to this process, the init of
 * the namespace. Its PID here, or -errno.
 */
static pid_t session_zombie(struct rst *r, size_t i)
{
	const PstreeEntry *pe = r->ds.procs[i];
	pid_t s = rst_fork_pid_ns((pid_t)pe->sid, (pid_t)pe->ns_sid, 0), z;
	siginfo_t si;
	int status;

	if (s == 0) {
		if (setsid() < 0)
			_exit(1);
		z = rst_fork_pid_ns((pid_t)pe->pid, rst_ns_pid(pe), 0);
		if (z == 0)
			zombie_exit(r, r->ds.zombie_cores[i - 1]->tc,
				    r->ds.zombie_cores[i - 1]->thread_core);
		while (z > 0 && waitid(P_PID, z, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
			;
		_exit(z > 0 ? 0 : 2);
	}
	if (s < 0)
		return -errno;
	while (waitpid(s, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return WIFEXITED(status) && WEXITSTATUS(status) == 1 ? -EPERM : -ECHILD;
	return rst_ns_pid(pe);
}

static int make_zombie(struct rst *r, size_t i, char *why, size_t len)
{
	const PstreeEntry *pe = r->ds.procs[i];
	pid_t set_tid = (pid_t)pe->pid, z, s = 0;
	pid_t ns_pgid = rst_ns_pid(pe) ? (pid_t)pe->ns_pgid : 0;	/* as the zombie sees it */
	int hold = -1;
	siginfo_t si;

	if (made_by_plan(r, pe))
		return 0;
	if (in_lost_session(r, pe)) {
		z = session_zombie(r, i);
		if (z < 0) {
			snprintf(why, len, "cannot make session %d again for zombie %d: %s", pe->sid,
				 set_tid, strerror(-z));
			return z;
		}
	} else if (needs_stand_in(r, pe) && (s = group_stand_in(pe->pgid, ns_pgid, &hold)) < 0) {
		snprintf(why, len, "cannot make process group %d again for zombie %d: %s",
			 pe->pgid, set_tid, strerror(-s));
		return s;
	} else {
		z = rst_fork_pid_ns(set_tid, rst_ns_pid(pe), 0);	/* in a PID namespace: both PIDs */
	}
	if (z == 0) {
		if (leads_session(pe) && pe->sid != r->ds.procs[0]->sid ? setsid() < 0 :
		    pe->pgid != r->ds.procs[0]->pgid &&
		    setpgid(0, pe->pgid == pe->pid ? 0 : ns_pgid ? ns_pgid : (pid_t)pe->pgid))
			syscall(SYS_exit_group, 126);	/* the parent sees another status: fails */
		zombie_exit(r, r->ds.zombie_cores[i - 1]->tc,
			    r->ds.zombie_cores[i - 1]->thread_core);
	}
	if (z < 0) {
		int err = -errno;

		snprintf(why, len, "cannot create zombie %d: %s", set_tid, strerror(-err));
		stand_in_end(s, hold);
		return err;
	}
	while (waitid(P_PID, z, &si, WEXITED | WNOWAIT) < 0)
		if (errno != EINTR) {
			int err = -errno;

			snprintf(why, len, "zombie %d did not exit: %s", z, strerror(-err));
			stand_in_end(s, hold);
			return err;
		}
	stand_in_end(s, hold);
	drop_sigchld();
	if (status_of(&si) != (int)r->ds.zombie_cores[i - 1]->tc->exit_code) {
		snprintf(why, len, "zombie %d could not take its group or credentials (it exited "
			 "with %#x)", z, (unsigned)status_of(&si));
		return -EPERM;
	}
	return 0;
}

/* Zombie host's index in r's set (1..), 0: not there. */
static size_t zombie_index(const struct rst *r, pid_t host)
{
	for (size_t i = 1; i < r->ds.nr_procs; i++)
		if ((pid_t)r->ds.procs[i]->pid == host)
			return i;
	return 0;
}

void zombie_leader_exit(const struct rst *r, pid_t host)
{
	size_t i = zombie_index(r, host);

	if (!i)
		syscall(SYS_exit_group, 125);	/* the parent sees another status: fails */
	zombie_exit(r, r->ds.zombie_cores[i - 1]->tc, r->ds.zombie_cores[i - 1]->thread_core);
}

int zombie_leader_wait(const struct rst *r, pid_t z, pid_t host, char *why, size_t len)
{
	size_t i = zombie_index(r, host);
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	while (waitid(P_PID, z, &si, WEXITED | WNOWAIT) < 0)
		if (errno != EINTR) {
			snprintf(why, len, "zombie %d did not exit: %m", host);
			return -errno;
		}
	drop_sigchld();
	if (!i || status_of(&si) != (int)r->ds.zombie_cores[i - 1]->tc->exit_code) {
		snprintf(why, len, "zombie %d, the leader of its session, could not fork its "
			 "members or take its credentials (it exited with %#x)", host,
			 (unsigned)status_of(&si));
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
