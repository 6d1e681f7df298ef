/*
 * Dump-time refusals, checked from /proc before the target is seized: a
 * refused target is never traced nor changed. Each check adds what it finds
 * to one list; refuse_check() fails once with all of it, so that the user
 * learns everything that stands in the way from a single attempt.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "common.h"
#include "dump/dump.h"
#include "files/files.h"
#include "files/ghost.h"
#include "files/proccwd.h"
#include "files/opath.h"
#include "files/locks.h"
#include "ns/mntns.h"
#include "ns/ns.h"
#include "task/task.h"
#include "ns/pidns.h"
#include "ns/timens.h"
#include "dump/refuse.h"
#include "nsswitch.h"
#include "track/track.h"
#include "ctx/proc_tree.h"
#include "dump/zombies.h"
#include "net/sock.h"
#include "log.h"
#include "proc.h"
#include "mem/pages.h"
#include "files/sockets.h"

/* PID 1, or the init of a nested PID namespace (last NSpid value 1) but as a tree's root. */
static void check_init(pid_t pid, const struct proc_tree *tree, struct refusals *r)
{
	char v[256] = "", *last;

	if (pid == 1) {
		refuse_add(r, "it is init (PID 1)");
		return;
	}
	if (proc_status_field(pid, "NSpid", v, sizeof(v)))
		return;
	last = strrchr(v, '\t') ? strrchr(v, '\t') + 1 : strrchr(v, ' ') ? strrchr(v, ' ') + 1 : v;
	if (atoi(last) == 1 && !(tree && tree->procs[0].pid == pid))
		refuse_add(r, "it is the init of a PID namespace");
}

/* Is pid a live process of the tree being dumped (a tree dump; NULL: one process)? */
static bool in_tree(const struct proc_tree *tree, pid_t pid)
{
	for (int i = 0; tree && i < tree->n; i++)
		if (tree->procs[i].pid == pid && !tree_is_zombie(&tree->procs[i]))
			return true;
	return false;
}

/*
 * One descendant: who it is, whose child, and what else the tree's dump will
 * need of it; true when it is alive and stops the dump (a process tree proper
 * when one process is dumped; in a tree dump, what the tree cannot take).
 */
static bool refuse_descendant(const struct tree_proc *p, const struct tree_proc *root,
			      const struct proc_tree *tree, struct refusals *r)
{
	char extra[160] = "";

	if (tree_is_zombie(p)) {
		if (!zombie_refused(p, root, tree, extra + 2, sizeof(extra) - 2))
			return false;	/* dumped, zombies.c */
		refuse_add(r, "child process %d (%s) of %d, a zombie %s", p->pid, p->comm,
			   p->ppid, extra + 2);
		return false;
	}
	if (tree && in_tree(tree, p->pid) && (!p->tracer || p->tracer == getpid()) &&
	    p->exit_signal == SIGCHLD && p->state != 'Z')
		return false;	/* dumped with the tree (treedump.c), frozen by this dump */
	if (p->tracer && p->tracer != getpid())
		snprintf(extra, sizeof(extra), ", traced by %d", p->tracer);
	else if (tree && p->state == 'Z')
		snprintf(extra, sizeof(extra), ", whose main thread has exited");
	else if (tree && p->exit_signal != SIGCHLD)
		snprintf(extra, sizeof(extra), ", whose exit signal is %d, not SIGCHLD",
			 p->exit_signal);
	else if (tree)
		snprintf(extra, sizeof(extra), ", born during the dump");
	refuse_add(r, "child process %d (%s) of %d%s", p->pid, p->comm, p->ppid, extra);
	return true;
}

static void refuse_tree_error(int err, struct refusals *r)
{
	if (err == -EAGAIN)
		refuse_add(r, "a process tree that kept changing over %d scans", TREE_MAX_PASSES);
	else if (err == -E2BIG)
		refuse_add(r, "a process tree of more than %d processes", TREE_MAX_PROCS);
	else
		refuse_add(r, "a process tree that cannot be read (%s)", strerror(-err));
}

/*
 * Every descendant, grandchildren included, then why they stop the dump: any
 * live one when one process is dumped; in a tree dump (tree), only those it
 * cannot take. Only the direct children of pid are looked at then: the
 * grandchildren are their own parents' to check.
 */
/* The live processes of t (pid's tree as read) that appeared below pid: refused. */
static int children_alive(pid_t pid, const struct proc_tree *tree, const struct proc_tree *t,
			  struct refusals *r)
{
	int alive = 0;

	for (int i = 1; i < t->n; i++)
		if (!tree || t->procs[i].ppid == pid)
			alive += refuse_descendant(&t->procs[i], &t->procs[0], tree, r);
	if (alive && !tree)
		refuse_add(r, "the process tree changed: %d live process(es) appeared below %d "
			   "after the dump began (dump again)", alive, pid);
	return tree ? 0 : alive;
}

/* pid's tree read into t (empty when pid is gone: target_check() and the freeze tell). */
static int check_children_into(pid_t pid, const struct proc_tree *tree, struct proc_tree *t,
			       struct refusals *r)
{
	int ret = tree_collect(pid, t);

	if (ret == -ESRCH)
		return 0;
	if (ret) {
		refuse_tree_error(ret, r);
		return 0;
	}
	return children_alive(pid, tree, t, r);
}

static int check_children(pid_t pid, const struct proc_tree *tree, struct refusals *r)
{
	struct proc_tree t;
	int alive = check_children_into(pid, tree, &t, r);

	tree_free(&t);
	return alive;
}

static const char *const ns_names[] = {
	"pid", "pid_for_children", "mnt", "net", "uts", "ipc", "cgroup", "user", "time",
	"time_for_children",
};

/* Namespaces other than memdump's own that memdump cannot save: restore would
 * create the process in memdump's. */
static void check_namespaces(pid_t pid, const struct proc_tree *tree, struct refusals *r)
{
	bool pid_tree = tree && pidns_own(tree->procs[0].pid);

	for (size_t i = 0; i < ARRAY_SIZE(ns_names); i++) {
		if (pid_tree && !strncmp(ns_names[i], "pid", 3))
			continue;	/* the tree's PID namespace: pidns.c */
		if (!strcmp(ns_names[i], "mnt"))
			continue;	/* mntns.c, through ns_refuse() */
		if (!strncmp(ns_names[i], "time", 4))
			continue;	/* saved: timens.c, which refuses what it cannot */
		char path[96], self[64];
		struct stat a, b;

		snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, ns_names[i]);
		snprintf(self, sizeof(self), "/proc/self/ns/%s", ns_names[i]);
		if (ns_kind_by_name(ns_names[i]) || !strcmp(ns_names[i], "cgroup") ||
		    stat(path, &a) || stat(self, &b))
			continue;	/* saved: ns.c, procattr.c (cgroup) */
		if (a.st_ino != b.st_ino || a.st_dev != b.st_dev)
			refuse_add(r, "its own %s namespace", ns_names[i]);
	}
	timens_refuse(pid, r);
}

/* /proc/PID/timers lists POSIX timers, one "ID: n" line each: the restorer takes 64. */
static void check_posix_timers(pid_t pid, struct refusals *r)
{
	char path[64], *buf = NULL, *p;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/timers", pid);
	if (proc_read_file(path, &buf) < 0)
		return;
	for (p = buf; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		n += !strncmp(p, "ID:", 3);
	free(buf);
	if (n > MAX_POSIX_TIMERS)
		refuse_add(r, "%d POSIX timers (timer_create), more than the %d memdump restores",
			   n, MAX_POSIX_TIMERS);
}

/*
 * A deleted cwd is an empty directory (rmdir): a ghost, recreated by the
 * restore, if its parent is still there; the /proc directory of a process
 * that exited is made again with a stand-in of its PID (files/proccwd.h). A
 * deleted root stays refused.
 */
static void check_cwd_root(const struct dump_opts *o, struct refusals *r)
{
	static const char *const links[] = { "cwd", "root" };

	for (size_t i = 0; i < ARRAY_SIZE(links); i++) {
		char path[64], target[PATH_MAX], why[256];
		struct stat st;
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/%d/%s", o->pid, links[i]);
		n = readlink(path, target, sizeof(target) - 1);
		if (n < 0) {
			refuse_add(r, "an unreachable %s", links[i]);
			continue;
		}
		target[n] = 0;
		if (!ghost_is_deleted(target))
			continue;
		if (i == 0 && proccwd_pid(target)) {	/* a /proc dir of a process gone */
			const char *w = stat(path, &st) ? "unreachable" :
					proccwd_unsupported(o->pid, target, &st);

			if (w)
				refuse_add(r, "a deleted cwd (%s): %s", target, w);
			continue;
		}
		if (i == 0 && stat(path, &st))
			refuse_add(r, "an unreachable deleted cwd (%s)", target);
		else if (i == 0 && ghost_unsupported(o->pid, target, &st, o->ghost_limit, why, sizeof(why)))
			refuse_add(r, "a deleted cwd (%s): %s", target, why);
		else if (i != 0)
			refuse_add(r, "a deleted %s (%s)", links[i], target);
	}
}

/*
 * "lock:" lines of an fd's fdinfo: flock, POSIX and OFD locks are restored
 * (POSIX ones by the restorer, once it has closed the fds it mapped files
 * through: a close drops the process's POSIX locks on that file), and read
 * and write leases, held or being broken (restore breaks them again) but a
 * lease being broken on a file other descriptions hold leases on too (locks.h).
 * What else fdinfo shows (delegations, what memdump cannot read) is refused.
 */
static void check_fd_locks(pid_t pid, int fd, struct refusals *r)
{
	char path[64], line[256], kind[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", pid, fd);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		struct file_lock l;
		int ret, n;

		if (strncmp(line, "lock:", 5))
			continue;
		ret = lock_parse(line, &l, kind, sizeof(kind));
		if (ret > 0 && l.flag == FL_LEASE && (l.type & LEASE_BREAKING) &&
		    (n = leases_on_inode(l.dev_ino)) > 1) {
			refuse_add(r, "fd %d holds a lease being broken on a file with %d leases "
				   "(of other open file descriptions), which restore cannot all "
				   "take back before it breaks them again", fd, n);
			break;
		}
		if (ret < 0)
			refuse_add(r, "fd %d holds a %s %s", fd, !strncmp(kind, "LEASE", 5) ||
				   !strncmp(kind, "DELEG", 5) ? "file lease" : "file lock", kind);
		if (ret < 0)
			break;
	}
	fclose(f);
}

/* The fd's open file has O_ASYNC (fdinfo "flags:", octal). */
static bool fd_async(pid_t pid, int fd)
{
	return proc_fd_flag(pid, fd, O_ASYNC);
}

/*
 * Signal-driven I/O (O_ASYNC) and the owner of an fd's SIGIO/SIGURG (F_SETOWN,
 * F_SETOWN_EX, F_SETSIG): restored on regular files, pipes, sockets and terminals
 * (files.c), when the owner is dumped too. What stops it, in why.
 */
static bool owner_unsupported(const struct dump_opts *o, int fd, const char *link,
			      const struct stat *st, char *why, size_t len)
{
	struct fd_owner w;
	const char *problem;
	bool async = fd_async(o->pid, fd);
	int err = fd_owner_read(o->pid, fd, &w);

	if (opath_fd(o->pid, fd))
		return false;	/* it has none (F_GETOWN_EX: EBADF) */
	if (!fd_owner_carried(st, link)) {
		if (async || (!err && (w.pid || w.signum)))
			snprintf(why, len, "signal-driven I/O (O_ASYNC, F_SETOWN or F_SETSIG) on a kind "
				 "of fd whose owner memdump does not restore");
		return async || (!err && (w.pid || w.signum));
	}
	if (err) {
		snprintf(why, len, "a SIGIO owner that cannot be read (F_GETOWN_EX): %s", strerror(-err));
		return true;
	}
	if ((problem = fd_owner_problem(o->pid, o->tree, &w))) {
		snprintf(why, len, "a SIGIO owner (F_SETOWN_EX, type %u, id %u): %s", w.pid_type,
			 w.pid, problem);
		return true;
	}
	return false;
}

static void check_fd(const struct dump_opts *o, bool tracked, int fd, struct refusals *r)
{
	struct fd_policy p = { o->ghost_limit, o->shell_job, o->pid, o->tree, o->ext_tty, tracked };
	pid_t pid = o->pid;
	char path[64], link[PATH_MAX], why[512];
	struct stat st;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0 || stat(path, &st))
		return;		/* closed meanwhile; collect_fds looks again when frozen */
	link[n] = 0;
	if (fd_unsupported(&p, fd, link, &st, why, sizeof(why)))
		refuse_add(r, "fd %d (%s: %s)", fd, link, why);
	else if (owner_unsupported(o, fd, link, &st, why, sizeof(why)))
		refuse_add(r, "fd %d (%s) with %s", fd, link, why);
	check_fd_locks(pid, fd, r);
}

static void check_fds(const struct dump_opts *o, const struct tracker *t, struct refusals *r)
{
	char path[64];
	struct dirent *de;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fd", o->pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((de = readdir(dir)))
		if (de->d_name[0] != '.' && !track_owns_fd(t, atoi(de->d_name)))
			check_fd(o, t->fd >= 0, atoi(de->d_name), r);
	closedir(dir);
}

/*
 * Mappings of deleted files become ghosts: each must fit the ghost limit.
 * Shared memory is not a file (anonymous MAP_HUGETLB memory: mem/vma.c).
 */
static void check_deleted_maps(const struct dump_opts *o, struct refusals *r)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", o->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (getline(&line, &cap, f) > 0) {
		unsigned long s, e;
		char mf[96], why[256], *name = strchr(line, '/');
		struct stat st;

		line[strcspn(line, "\n")] = 0;
		if (!name || !ghost_is_deleted(name) || !strncmp(name, "/dev/zero", 9) ||
		    !strncmp(name, "/SYSV", 5) || !strcmp(name, "/anon_hugepage (deleted)") ||
		    sscanf(line, "%lx-%lx", &s, &e) != 2)
			continue;
		snprintf(mf, sizeof(mf), "/proc/%d/map_files/%lx-%lx", o->pid, s, e);
		if (!stat(mf, &st) && ghost_unsupported(o->pid, name, &st, o->ghost_limit, why, sizeof(why)))
			refuse_add(r, "a mapping %lx-%lx of %s: %s", s, e, name, why);
	}
	free(line);
	fclose(f);
}

/*
 * A program run from a memfd (fexecve): its exe is the memfd, which restore
 * has no file to set as the exe from (PR_SET_MM_MAP wants a file). Other
 * private mappings of a memfd are restored from the memfd (vma.c).
 */
static void check_memfd_exe(pid_t pid, struct refusals *r)
{
	char path[64], link[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return;
	link[n] = 0;
	if (!strncmp(link, "/memfd:", 7))
		refuse_add(r, "a private mapping of %s (a program run from a memfd, fexecve), "
			   "which restore has no file to map from", link);
}

/* A 'Z' process whose leader exited alone still runs its other threads. */
static bool live_threads(pid_t pid)
{
	pid_t *tids = NULL;
	int n = proc_tasks(pid, &tids);

	free(tids);
	return n > 1;
}

/* Another live process in the target's group or session keeps that ID in use. */
static void check_group_holders(pid_t pid, const struct proc_tree *tree, struct refusals *r)
{
	DIR *dir = opendir("/proc");
	struct dirent *de;
	struct proc_stat st;
	int shown = 0;

	if (!dir)
		return;
	while ((de = readdir(dir)) && shown < 3) {
		pid_t other = atoi(de->d_name);

		if (other <= 0 || other == pid || in_tree(tree, other) || proc_read_stat(other, &st))
			continue;
		if ((st.pgid != pid && st.sid != pid) || (st.state == 'Z' && !live_threads(other)))
			continue;
		refuse_add(r, "process %d (%s) in its %s, which restore could not recreate",
			   other, st.comm, st.sid == pid ? "session" : "process group");
		shown++;
	}
	closedir(dir);
}

/*
 * Per thread: SCHED_DEADLINE (its runtime/deadline/period are not kept),
 * seccomp strict mode when memdump cannot suspend it while it traces the
 * thread (PTRACE_O_SUSPEND_SECCOMP needs CAP_SYS_ADMIN): the dump's remote
 * system calls would kill it; more supplementary groups than the restorer
 * sets (each thread's own are dumped).
 */
static void check_thread_modes(pid_t pid, struct refusals *r)
{
	pid_t *tids = NULL;
	int n = proc_tasks(pid, &tids);

	for (int i = 0; i < n; i++) {
		char path[96], *stat = NULL, *p, v[16] = "";
		int policy = 0;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tids[i]);
		if (proc_read_file(path, &stat) >= 0 && (p = strrchr(stat, ')'))) {
			/* policy is field 41, the 39th after ") " */
			for (int f = 0; f < 39 && p; f++)
				p = strchr(p + 1, ' ');
			policy = p ? atoi(p + 1) : 0;
		}
		free(stat);
		if (policy == 6)
			refuse_add(r, "thread %d runs SCHED_DEADLINE", tids[i]);
		if (!task_proc_creds(tids[i], &(struct creds){ 0 }))
			refuse_add(r, "thread %d has more than %d supplementary groups (Groups)",
				   tids[i], CREDS_MAX_GROUPS);
		if (!proc_status_field(tids[i], "Seccomp", v, sizeof(v)) && atoi(v) == 1 &&
		    !self_capable(CAP_SYS_ADMIN))
			refuse_add(r, "thread %d is in seccomp strict mode, which memdump cannot "
				   "suspend without CAP_SYS_ADMIN (PTRACE_O_SUSPEND_SECCOMP)",
				   tids[i]);
	}
	free(tids);
}

/* A cgroup of the target that memdump is not in must be one a restore can join. */
static void check_cgroups(pid_t pid, struct refusals *r)
{
	char path[64], *theirs = NULL, *own = NULL, *line, *save = NULL;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	if (proc_read_file(path, &theirs) < 0 || proc_read_file("/proc/self/cgroup", &own) < 0) {
		free(theirs);
		return;		/* collect_task_attrs reads it again, and fails */
	}
	for (line = strtok_r(theirs, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char mine[1024], procs[1024];

		if (cgroup_own_line(own, line, mine, sizeof(mine)))
			refuse_add(r, "cgroup %s, a hierarchy memdump is not in", line);
		else if (strcmp(mine, line) && cgroup_procs_path(line, procs, sizeof(procs)))
			refuse_add(r, "cgroup %s, which memdump cannot join (not mounted here)",
				   line);
	}
	free(theirs);
	free(own);
}

/* 0, or one fail() line with every refusal found. */
static int report(pid_t pid, const struct refusals *r)
{
	if (!r->n)
		return 0;
	return fail(-EOPNOTSUPP, "process %d holds state memdump cannot dump: %s", pid, r->text);
}

/* Once frozen, only a child forked since refuse_check() can have appeared. */
int refuse_check_frozen(pid_t pid, struct proc_tree *below, bool *children_only)
{
	struct refusals r = { .len = 0 };
	int appeared = check_children_into(pid, NULL, below, &r);

	*children_only = appeared && r.n == appeared + 1;	/* dump_run() dumps the tree */
	return report(pid, &r);
}

static void refuse_collect(const struct dump_opts *o, const struct tracker *t,
			   struct refusals *r)
{
	pid_t pid = o->pid;

	check_init(pid, o->tree, r);
	check_children(pid, o->tree, r);
	if (o->pre_dump) {	/* memory and fds (a userfaultfd, io_uring): the dump after it
				 * checks the rest (namespaces, mounts, sockets) */
		check_fds(o, t, r);
		check_deleted_maps(o, r);
		check_memfd_exe(pid, r);
		check_thread_modes(pid, r);
		return;
	}
	check_group_holders(pid, o->tree, r);
	check_namespaces(pid, o->tree, r);
	share_refuse(pid, o->tree, r);
	if (!o->tree || o->tree->procs[0].pid == pid)
		ns_refuse(pid, o->tree, o->host_netns, o->ext_net_ino, r);	/* the others are in its own */
	else
		ns_refuse_member(pid, o->tree, r);	/* but for a mount namespace of their own */
	if (o->nr_mnt_ext && !o->mnt_ext[0].optional && !mntns_own(pid))
		refuse_add(r, "--external mnt[%s] given, but no mount namespace of its own",
			   o->mnt_ext[0].key);
	check_posix_timers(pid, r);
	check_cwd_root(o, r);
	check_fds(o, t, r);
	check_deleted_maps(o, r);
	check_memfd_exe(pid, r);
	sockets_refuse(pid, o, r);
	check_thread_modes(pid, r);
	check_cgroups(pid, r);
}

int refuse_check(const struct dump_opts *o, const struct tracker *t)
{
	struct refusals r = { .len = 0 };

	refuse_collect(o, t, &r);
	return report(o->pid, &r);
}

/*
 * A tree dump: every live process of o->tree looked at as refuse_check()
 * looks at one, the findings of all in one line, each after its process.
 */
int refuse_check_tree(const struct dump_opts *o)
{
	struct refusals all = { .len = 0 };

	for (int i = 0; i < o->tree->n; i++) {
		struct dump_opts one = *o;
		struct refusals r = { .len = 0 };
		struct tracker t;

		if (tree_is_zombie(&o->tree->procs[i]))
			continue;
		one.pid = o->tree->procs[i].pid;
		if (track_find(&t, one.pid))	/* its tracker (a pre-dump's) is not its own */
			refuse_add(&r, "a memory tracking record memdump cannot read");
		refuse_collect(&one, &t, &r);
		if (r.n && i == 0)
			refuse_add(&all, "%s", r.text);
		else if (r.n)
			refuse_add(&all, "process %d (%s): %s", one.pid, o->tree->procs[i].comm,
				   r.text);
	}
	if (pidns_own(o->pid)) {
		struct refusals r = { .len = 0 };

		pidns_refuse(o->tree, &r);
		if (r.n)
			refuse_add(&all, "%s", r.text);
	}
	if (!all.n)
		return 0;
	return fail(-EOPNOTSUPP, "process %d holds state memdump cannot dump: %s", o->pid,
		    all.text);
}
