/*
 * restore --copies N (docs/fanout.md): one image set restored N times, the
 * copies sharing its memory copy-on-write. memdump itself is the template:
 * it maps and fills the private anonymous memory once (premap_restore.c),
 * then forks each copy from it, so every copy inherits the same pages and
 * its blob moves them in place; only what a copy writes becomes its own.
 *
 * Each copy has a PID namespace of its own, held by a small init of
 * memdump's (forked without the template: no page table of it copied), which
 * only reaps; it exits with the copy. The copy is the one fork of the
 * template: a helper sharing memdump's memory (CLONE_VM, no copy) enters the
 * namespace, forks the copy with the dumped PID (clone3 set_tid) and exits,
 * which makes the init the copy's parent. Until the copy's commit point the
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
#include <sched.h>
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

/*
 * The forking helper's stack (fork_copy): on memdump's own, which the copy
 * goes on with (child_main(), below it as it needs: its own copy of memdump's
 * stack, as a fork's), where memdump's sanitizers know a stack is.
 */
#define MID_STACK	(64UL << 10)

/* The forking helper's word (fork_copy), in memdump's memory: it shares it. */
struct mid {
	struct rst *r;
	pid_t copy;
	int err;
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
 * The helper that forks the copy (fork_copy) takes the namespace's next PID:
 * 2, unless that is the copy's; ns_last_pid is the namespace's own.
 */
static int spare_pid(pid_t copy)
{
	int fd;
	bool ok;

	if (copy != 2)
		return 0;
	fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
	ok = fd >= 0 && write(fd, "2", 1) == 1;
	if (fd >= 0)
		close(fd);
	return ok ? 0 : -(errno ?: EIO);
}

/*
 * The init of a copy's PID namespace (PID 1 there): armed, it tells memdump,
 * which then forks the copy into its namespace (fork_copy); the copy comes to
 * it as its child (the dumped PID here) when the helper that forked it exits.
 * It reaps whatever comes; the copy gone, it goes too (and every process of
 * the namespace). Armed (until the copy's commit point) it dies with memdump,
 * or when memdump closes its pipe.
 */
static void __attribute__((noreturn)) init_main(struct rst *r, int from, int to)
{
	int err, st = 0, armed = 1;
	pid_t copy = r->pid;
	char c;

	/* memdump gone before the prctl (getppid() is 0 here): the write below fails */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	err = spare_pid(copy);
	if (write(to, &err, sizeof(err)) != sizeof(err) || err)
		_exit(127);
	close_but(from, to);
	for (;;) {
		pid_t w = waitpid(-1, &st, armed ? WNOHANG : 0);
		struct pollfd p = { .fd = from, .events = POLLIN };

		if (w == copy)
			_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
		if (w < 0 && errno == ECHILD && !armed)	/* the copy was never its child */
			_exit(127);
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

/* The init's word: armed (0), or why not. */
static int init_armed(struct rst *r)
{
	int err = 0;

	if (read(r->fan_from, &err, sizeof(err)) != sizeof(err))
		return fail(-ECHILD, "the init of the PID namespace of a copy of process %d died",
			    r->pid);
	if (err)
		return fail(err, "cannot make PID %d free in the PID namespace of a copy: %s",
			    r->pid, strerror(-err));
	return 0;
}

/* The forking helper, in memdump's memory: the copy, then gone (its child is the init's). */
static int mid_main(void *arg)
{
	struct mid *m = arg;
	pid_t copy = rst_fork_pid_ns(m->r->pid, 0, 0);

	if (copy == 0)
		child_main(m->r);
	m->err = copy < 0 ? -errno : 0;
	m->copy = copy;
	return 0;
}

/* This thread's PID namespace for its children: the one of /proc/PID/ns/pid (0: its own). */
static int pidns_children(pid_t pid)
{
	char path[64];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "/proc/%s/ns/pid", pid ? "" : "self");
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/ns/pid", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWPID))
		ret = -errno;
	if (fd >= 0)
		close(fd);
	return ret;
}

/*
 * The copy: forked by a helper that shares memdump's memory (CLONE_VM, no page
 * table copied) in the copy's namespace, so that its exit leaves the copy to
 * the init; memdump waits (CLONE_VFORK), the template forked this once only.
 */
static int fork_copy(struct rst *r)
{
	char stack[MID_STACK] __attribute__((aligned(64)));
	struct mid m = { .r = r, .copy = -1 };
	int ret = pidns_children(r->fan_init), back, st;
	pid_t mid;

	if (ret)
		return fail(ret, "cannot enter the PID namespace of a copy: %s", strerror(-ret));
	template_forked(r->fan, true);
	mid = clone(mid_main, stack + MID_STACK,
		    CLONE_VM | CLONE_VFORK | SIGCHLD, &m);
	ret = mid < 0 ? -errno : 0;
	template_forked(r->fan, false);
	back = pidns_children(0);	/* memdump's: no other child of its may go there */
	while (mid > 0 && waitpid(mid, &st, 0) < 0 && errno == EINTR)
		;	/* reaped: its children were the init's before it died */
	if (back)	/* the fan-out stops: no fork of memdump's after it */
		return fail(back, "cannot go back to memdump's PID namespace: %s", strerror(-back));
	if (ret)
		return fail(ret, "cannot create the helper that forks a copy: %s", strerror(-ret));
	if (m.err)
		return fail(m.err, "cannot create a copy of process %d in its PID namespace: %s",
			    r->pid, strerror(-m.err));
	return 0;
}

/* The copy's PID here, the init's child. */
static int copy_found(struct rst *r)
{
	pid_t host = copy_host_pid(r->fan_init);

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
	uint64_t old;
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
	rst_block_signals(&old);	/* every signal: the blob runs so (rst_fork_target) */
	init = fork_init();	/* the template MADV_DONTFORK: not copied */
	if (init == 0) {
		close(up[0]);
		close(down[1]);
		init_main(r, down[0], up[1]);
	}
	ret = init < 0 ? -errno : 0;
	close(up[1]);
	close(down[0]);
	r->fan_from = up[0];
	r->fan_to = down[1];
	if (ret)
		ret = fail(ret, "cannot create the PID namespace of a copy: %s", strerror(-ret));
	else
		r->fan_init = init;
	if (!ret)
		ret = init_armed(r) ?: fork_copy(r);
	rst_unblock_signals(&old);
	rst_close_prepared(r);
	return ret ? ret : copy_found(r);
}

/* In the copy, first: its parent is the init (the helper that forked it gone). */
void fanout_in_copy(void)
{
	while (getppid() != 1)
		usleep(50);
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

/* Copy i of the set ds, loaded and verified once: its checks, its fds, its process. */
static int one_copy(const struct restore_opts *o, struct fanout *f, const struct dumpset *ds,
		    int i)
{
	uint64_t t0 = now_us(), t1;
	struct rst r;
	int ret;

	rst_catch_signals();
	ret = rst_load_lent(&r, o, ds, true);	/* memdump checked by the set's load */
	r.fan = f;
	t1 = now_us();
	if (!ret)
		ret = rst_restore_one(&r);
	if (ret)
		cgroups_undo(&r);
	fanout_end(&r, ret != 0);
	rst_free(&r);
	rst_release_signals();
	pr_info("--copies: copy %d in %.1f ms, its checks %.1f ms\n", i, (now_us() - t0) / 1e3,
		(t1 - t0) / 1e3);
	return ret;
}

int fanout_run(const struct restore_opts *o)
{
	struct restore_opts one = *o;
	struct fanout f = { 0 };
	uint64_t t0 = now_us();
	struct rst r;
	int ret = refuse_opts(o);

	if (ret)
		return ret;
	one.detach = true;	/* each copy's PID printed, none waited for */
	/* loaded and verified once for all copies; its pages' sums checked from the
	 * template's memory, which the first copy fills (plan_memory) */
	ret = rst_load(&r, &one, true, false);
	if (!ret)
		ret = refuse(&r);
	pr_info("--copies: the set loaded and checked once in %.1f ms\n", (now_us() - t0) / 1e3);
	for (int i = 0; i < o->copies && !ret; i++)
		ret = (i ? fault_step(RST_FAULT_COPY) : 0) ?: one_copy(&one, &f, &r.ds, i);
	rst_free(&r);
	if (f.base)
		munmap((void *)f.base, f.size);
	free(f.sums);
	pr_info("--copies: %d copies in %.1f ms\n", o->copies, (now_us() - t0) / 1e3);
	return ret;
}
