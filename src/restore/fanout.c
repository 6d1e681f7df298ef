/*
 * restore --copies N (docs/fanout.md): one image set restored N times, the
 * copies sharing its memory copy-on-write. memdump itself is the template:
 * it maps and fills the private anonymous memory once (premap_restore.c),
 * then forks each copy from it, so every copy inherits the same pages and
 * its blob moves them in place; only what a copy writes becomes its own.
 *
 * Each copy has a PID namespace of its own, held by a small init of
 * memdump's, which forks the copy with the dumped PID (clone3 set_tid) and
 * then only reaps; it exits with the copy. Until the copy's commit point the
 * init dies with memdump (PR_SET_PDEATHSIG), and the namespace with it: a
 * memdump killed mid fan-out leaves the copies it released running and no
 * other. Everything else of a copy (fds, credentials, signals, registers) is
 * made for it as for one restore. The copies are made one after the other.
 * What fan-out cannot give each copy exactly is refused by name first.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/sched.h>

#include "common.h"
#include "fault.h"
#include "log.h"
#include "proc.h"
#include "vma_status.h"
#include "mem/premap.h"
#include "ns/cgroups.h"
#include "restore/pipeline.h"
#include "restore/restore.h"

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK	18
#endif

struct fanout {
	unsigned long base, size;	/* the premapped range, filled once; 0: none */
	uint64_t *sums;			/* the checksums of the premapped runs, by run */
};

/* ", what" onto why (the first of each kind only: one line) */
static void add_why(char *why, size_t len, const char *fmt, ...)
{
	size_t n = strlen(why);
	va_list ap;

	if (n + 2 >= len)
		return;
	if (n)
		n += (size_t)snprintf(why + n, len - n, ", ");
	va_start(ap, fmt);
	vsnprintf(why + n, len - n, fmt, ap);
	va_end(ap);
}

static void refuse_vmas(const MmEntry *mm, char *why, size_t len)
{
	const char *seen[6] = { 0 };
	static const char *const what[6] = {
		"shared anonymous memory", "System V shared memory", "a memfd mapping",
		"MADV_WIPEONFORK memory", "MADV_DONTFORK memory", "mlock()ed memory",
	};

	for (size_t i = 0; i < mm->n_vmas; i++) {
		const VmaEntry *v = mm->vmas[i];
		uint64_t madv = v->has_madv ? v->madv : 0;
		bool is[6] = {
			v->status & VMA_ANON_SHARED, v->status & VMA_AREA_SYSVIPC,
			v->status & VMA_AREA_MEMFD, madv & (1UL << MADV_WIPEONFORK),
			madv & (1UL << MADV_DONTFORK), v->locked,
		};

		for (int k = 0; k < 6; k++)
			if (is[k] && !seen[k]) {
				seen[k] = what[k];
				add_why(why, len, "%s at %#lx", what[k], (unsigned long)v->start);
			}
	}
	if (mm->has_mlock_future && mm->mlock_future)
		add_why(why, len, "mlockall(MCL_FUTURE)");
	if (mm->uffd)
		add_why(why, len, "a userfaultfd (fd %u)", mm->uffd->fd);
	if (mm->n_iourings)
		add_why(why, len, "an io_uring ring (fd %u)", mm->iourings[0]->fd);
}

static bool is_socket(FdTypes t)
{
	return t == FD_TYPES__INETSK || t == FD_TYPES__UNIXSK || t == FD_TYPES__PACKETSK ||
	       t == FD_TYPES__NETLINKSK;
}

/* A thread in another cgroup than the leader's (cgroups_move_threads() moves it by its dumped TID). */
static bool threads_cgroups(const struct rst *r)
{
	const TaskCoreEntry *tc = r->ds.cores[0]->tc;
	uint32_t lead = tc && tc->has_cg_set ? tc->cg_set : 0;

	for (size_t i = 1; i < r->ds.nr_cores; i++) {
		const ThreadCoreEntry *th = r->ds.cores[i]->thread_core;

		if (th && th->has_cg_set && th->cg_set != lead)
			return true;
	}
	return false;
}

/* What one copy forked from a template would not have exactly: refused by name. */
static int refuse(struct rst *r)
{
	char why[480] = "";

	if (r->ds.nr_members)
		add_why(why, sizeof(why), "a process tree (%zu processes)", r->ds.nr_members + 1);
	if (r->ds.nr_procs > 1)
		add_why(why, sizeof(why), "zombie children");
	if (threads_cgroups(r))
		add_why(why, sizeof(why), "threads in other cgroups than its leader's");
	if (rst_ns_pid(r->ds.pstree))
		add_why(why, sizeof(why), "a PID namespace of its own");
	if (r->ds.inv->has_own_ns && r->ds.inv->own_ns)
		add_why(why, sizeof(why), "namespaces of its own (%#x)", r->ds.inv->own_ns);
	refuse_vmas(r->ds.mm, why, sizeof(why));
	for (size_t i = 0; i < r->ds.nr_fds; i++)
		if (is_socket(r->ds.fds[i]->type)) {
			add_why(why, sizeof(why), "a socket (fd %u)", r->ds.fds[i]->fd);
			break;
		}
	if (r->ds.nr_locks)
		add_why(why, sizeof(why), "file locks");
	if (r->ds.pstree->sid != (uint32_t)r->pid || r->ds.pstree->pgid != (uint32_t)r->pid)
		add_why(why, sizeof(why), "a session (%u) or process group (%u) it does not lead, "
			"which a copy's PID namespace does not hold", r->ds.pstree->sid,
			r->ds.pstree->pgid);
	if (!why[0])
		return 0;
	return fail(-EOPNOTSUPP, "--copies: process %d has %s, which fan-out does not restore",
		    r->pid, why);
}

static int refuse_opts(const struct restore_opts *o)
{
	const char *opt = o->pidfile ? "--pidfile" : o->sibling ? "--restore-sibling" :
			  o->lazy ? "--lazy-pages" : o->nr_join_ns ? "--join-ns" :
			  o->feed ? "--decrypt" : o->root ? "--root" : o->nr_inherit_fd ?
			  "--inherit-fd" : o->pid_out ? "CRIU's RPC" : NULL;

	return opt ? fail(-EINVAL, "--copies: not with %s (one process each time)", opt) : 0;
}

/* Every fd but a and b closed. */
static void close_but(int a, int b)
{
	int lo = MIN(a, b), hi = MAX(a, b);

	if (lo > 0)
		syscall(SYS_close_range, 0, lo - 1, 0);
	if (hi > lo + 1)
		syscall(SYS_close_range, lo + 1, hi - 1, 0);
	syscall(SYS_close_range, hi + 1, ~0U, 0);
}

/*
 * The init of a copy's PID namespace (PID 1 there): forks the copy with the
 * dumped PID, then reaps whatever comes to it; the copy gone, it goes too
 * (and every process of the namespace). Armed (until the copy's commit
 * point) it dies with memdump, or when memdump closes its pipe.
 */
static void __attribute__((noreturn)) init_main(struct rst *r, int from, int to)
{
	int err = 0, st = 0, armed = 1;
	pid_t copy;
	char c;

	/* memdump gone before the prctl (getppid() is 0 here): the write below fails */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	copy = rst_fork_pid_ns(r->pid, 0, 0);
	if (copy == 0) {
		close(from);
		close(to);
		child_main(r);
	}
	if (copy < 0)
		err = -errno;
	if (write(to, &err, sizeof(err)) != sizeof(err) || copy < 0)
		_exit(127);
	if (r->premap_hi)	/* the copy holds the pages now */
		munmap((void *)r->premap_lo, r->premap_hi - r->premap_lo);
	close_but(from, to);
	for (;;) {
		pid_t w = waitpid(-1, &st, armed ? WNOHANG : 0);
		struct pollfd p = { .fd = from, .events = POLLIN };

		if (w == copy)
			_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
		if (!armed || w > 0 || poll(&p, 1, 100) != 1)
			continue;
		if (read(from, &c, 1) != 1)	/* memdump gave up on the copy */
			_exit(127);
		prctl(PR_SET_PDEATHSIG, 0);
		armed = 0;
		if (write(to, &c, 1) != 1)
			_exit(127);
		close(from);
		close(to);
	}
}

/* The copy's PID here: the init's only child. */
static pid_t copy_host_pid(pid_t init)
{
	char path[64], *buf = NULL;
	pid_t pid;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", init, init);
	if (proc_read_file(path, &buf) < 0)
		return -1;
	pid = (pid_t)atoi(buf);
	free(buf);
	return pid > 0 ? pid : -1;
}

/*
 * The template's range is copied into a child of memdump's only when it
 * forks a copy's init: any other fork (a throwaway one in the checks, a
 * sweeper) would copy the page tables of all of it (4 KiB pages: ~30 ms a
 * GiB on this VM) and drop them again.
 */
static void template_forked(const struct fanout *f, bool forked)
{
	if (f->base)
		madvise((void *)f->base, f->size, forked ? MADV_DOFORK : MADV_DONTFORK);
}

/* The template's memory: filled by the first copy's memdump, the same slots for the others. */
static int plan_memory(struct rst *r)
{
	struct fanout *f = r->fan;
	bool first = !f->base;
	int ret = premap_plan_copies(r, &f->base, &f->size);

	if (ret || !r->premap)
		return ret;
	if (!first) {
		premap_sums(r, f->sums, false);
		return 0;
	}
	f->sums = calloc(r->ds.nr_runs + 1, sizeof(*f->sums));
	if (!f->sums)
		return fail(-ENOMEM, "out of memory");
	ret = premap_fill_here(r);
	if (!ret)
		premap_sums(r, f->sums, true);
	if (!ret)	/* only the copies' inits get it (fork_init), no other fork of memdump's */
		template_forked(f, false);
	pr_info("--copies: %lu MiB filled once at %#lx, shared by the copies\n", f->size >> 20,
		f->base);
	return ret;
}

static pid_t fork_init(void)
{
	struct clone_args ca;

	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_NEWPID;
	ca.exit_signal = SIGCHLD;
	return (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
}

/* The init's word: the copy forked (0), or why not; then the copy's PID here. */
static int init_reported(struct rst *r)
{
	int err = 0;
	pid_t host;

	if (read(r->fan_from, &err, sizeof(err)) != sizeof(err))
		return fail(-ECHILD, "the init of the PID namespace of a copy of process %d died",
			    r->pid);
	if (err)
		return fail(err, "cannot create a copy of process %d in its PID namespace: %s",
			    r->pid, strerror(-err));
	host = copy_host_pid(r->fan_init);
	if (host < 0)
		return fail(-ESRCH, "the copy of process %d is gone from its PID namespace", r->pid);
	pr_info("copy of %d: %d here, its PID namespace's init %d\n", r->pid, host, r->fan_init);
	r->dumped_pid = r->pid;
	r->pid = host;
	return 0;
}

int fanout_fork(struct rst *r)
{
	int up[2], down[2], ret = plan_memory(r);
	sigset_t all, old;
	pid_t init;

	if (ret)
		return ret;
	if (pipe2(up, O_CLOEXEC))
		return fail(-errno, "cannot create a pipe: %s", strerror(errno));
	if (pipe2(down, O_CLOEXEC)) {
		ret = -errno;
		close(up[0]);
		close(up[1]);
		return fail(ret, "cannot create a pipe: %s", strerror(-ret));
	}
	sigfillset(&all);	/* every signal blocked: the blob runs so (rst_fork_target) */
	sigprocmask(SIG_SETMASK, &all, &old);
	template_forked(r->fan, true);
	init = fork_init();
	if (init == 0) {
		close(up[0]);
		close(down[1]);
		init_main(r, down[0], up[1]);
	}
	ret = init < 0 ? -errno : 0;
	template_forked(r->fan, false);
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(up[1]);
	close(down[0]);
	r->fan_from = up[0];
	r->fan_to = down[1];
	rst_close_prepared(r);
	if (ret)
		return fail(ret, "cannot create the PID namespace of a copy: %s", strerror(-ret));
	r->fan_init = init;
	return init_reported(r);
}

/* The NSpid line of a task's status: its TID here and in the copy's namespace. */
static int task_ids(pid_t pid, pid_t task, pid_t *here, pid_t *there)
{
	char path[96], *buf = NULL, *l;
	int ret = -ESRCH;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, task);
	if (proc_read_file(path, &buf) < 0)
		return ret;
	l = strstr(buf, "\nNSpid:");
	if (l && sscanf(l, "\nNSpid: %d %d", here, there) == 2)
		ret = 0;
	free(buf);
	return ret;
}

/* The copy's threads, parked: their TIDs here, by their index in the area (fan_tids). */
static int map_tids(struct rst *r)
{
	const struct rst_thread *rt = (const struct rst_thread *)(r->area + r->a->threads_off);
	size_t n = r->a->nr_threads, found = 0;
	char path[64];
	struct dirent *e;
	DIR *d;

	r->fan_tids = calloc(n, sizeof(*r->fan_tids));
	if (!r->fan_tids)
		return fail(-ENOMEM, "out of memory");
	snprintf(path, sizeof(path), "/proc/%d/task", r->pid);
	d = opendir(path);
	if (!d)
		return fail(-errno, "cannot read the threads of copy %d: %s", r->pid, strerror(errno));
	while ((e = readdir(d))) {
		pid_t here, there;

		if (e->d_name[0] == '.' || task_ids(r->pid, atoi(e->d_name), &here, &there))
			continue;
		for (size_t i = 0; i < n; i++)
			if ((pid_t)rt[i].tid == there && !r->fan_tids[i]) {
				r->fan_tids[i] = here;
				found++;
			}
	}
	closedir(d);
	if (found != n)
		return fail(-ESRCH, "copy %d has %zu of its %zu threads", r->pid, found, n);
	return 0;
}

int fanout_disarm(struct rst *r)
{
	char c = 'd';
	int ret = map_tids(r);

	if (ret)
		return ret;

	if (write(r->fan_to, &c, 1) != 1 || read(r->fan_from, &c, 1) != 1)
		return fail(-ECHILD, "the init of the PID namespace of copy %d is gone", r->pid);
	return 0;
}

/* A copy that failed: its namespace goes, the copy with it. */
static void fanout_end(struct rst *r, bool failed)
{
	if (r->fan_init > 0 && failed) {
		kill(r->fan_init, SIGKILL);
		while (waitpid(r->fan_init, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (r->fan_from >= 0)
		close(r->fan_from);
	if (r->fan_to >= 0)
		close(r->fan_to);
	r->fan_from = r->fan_to = -1;
	r->fan_init = 0;
	free(r->fan_tids);
	r->fan_tids = NULL;
}

static int one_copy(const struct restore_opts *o, struct fanout *f)
{
	struct rst r;
	int ret;

	rst_catch_signals();
	ret = rst_load(&r, o, true, true);
	r.fan = f;
	if (!ret)
		ret = rst_restore_one(&r);
	if (ret)
		cgroups_undo(&r);
	fanout_end(&r, ret != 0);
	rst_free(&r);
	rst_release_signals();
	return ret;
}

int fanout_run(const struct restore_opts *o)
{
	struct restore_opts one = *o;
	struct fanout f = { 0 };
	struct rst r;
	int ret = refuse_opts(o);

	if (ret)
		return ret;
	one.detach = true;	/* each copy's PID printed, none waited for */
	ret = rst_load(&r, &one, false, false);
	if (!ret)
		ret = refuse(&r);
	rst_free(&r);
	for (int i = 0; i < o->copies && !ret; i++)
		ret = (i ? fault_step(RST_FAULT_COPY) : 0) ?: one_copy(&one, &f);
	if (f.base)
		munmap((void *)f.base, f.size);
	free(f.sums);
	return ret;
}
