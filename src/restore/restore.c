/*
 * memdump restore: recreate a dumped process with its PID, threads, memory
 * and files, so that it runs on as if it had never stopped. This file is the
 * driver; each step has its own file (private interface: restore.h):
 *
 *  1. check.c: the whole image set is loaded and checked first:
 *     nothing is started when a file changed, a PID is taken or an image is
 *     inconsistent.
 *  2. shmem.c, files.c: shared memory objects are created
 *     and filled, every fd the process needs is opened here, in memdump.
 *  3. area.c, task.c: the restorer area (restorer.h), a
 *     memfd mapped at an address free in memdump and in the target: blob
 *     code, its arguments (VMAs, threads, pending signals ...), stacks.
 *  4. child.c: clone3(set_tid = PID) forks memdump; the child moves
 *     the fds to their numbers, sets cwd, umask, personality and jumps into
 *     the blob, which rebuilds memory and threads (parasite/restorer.c).
 *  5. resume.c: when every thread is parked before its final
 *     rt_sigreturn, memdump attaches with ptrace, lets them go, stops each
 *     right after its rt_sigreturn, injects one munmap of the restorer area
 *     and detaches: nothing of the restorer remains in the process.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <linux/sched.h>

#include "common.h"
#include "fault.h"
#include "log.h"
#include "proc.h"
#include "restore/restore.h"
#include "image/feed.h"
#include "mem/lazy.h"
#include "evloop/evloop.h"
#include "files/files.h"
#include "files/ghost.h"
#include "files/pidfd.h"
#include "files/tty.h"
#include "mem/pagesum.h"
#include "mem/premap.h"
#include "mem/shmem.h"
#include "net/sock.h"
#include "ns/cgroups.h"
#include "ns/mntns.h"
#include "ns/netns.h"
#include "ns/ns.h"
#include "ns/timens.h"
#include "restore/pipeline.h"
#include "task/task.h"
#include "inet/sk_inet.h"
#include "unix/sk_unix.h"

const FileEntry *rst_file(struct rst *r, uint32_t id)
{
	return dumpset_file(&r->ds, id);
}

const char *rst_path(const struct rst *r, const char *path, char *buf, size_t len)
{
	if (!r->mnt_stage || !path || path[0] != '/')
		return path;
	snprintf(buf, len, "%s%s", r->mnt_stage, path);
	return buf;
}

const char *rst_reg_path(struct rst *r, uint32_t id)
{
	const FileEntry *fe = rst_file(r, id);
	const char *ghost = ghost_path(r, id);

	if (ghost)
		return ghost;
	return fe && fe->type == FD_TYPES__REG && fe->reg ? fe->reg->name : NULL;
}

const char *rst_reg_host_path(struct rst *r, uint32_t id, char *buf, size_t len)
{
	const char *ghost = ghost_path(r, id);

	return ghost ? ghost : rst_path(r, rst_reg_path(r, id), buf, len);	/* made there */
}

int rst_reg_open(struct rst *r, uint32_t id, int flags)
{
	const FileEntry *fe = rst_file(r, id);
	char buf[PATH_MAX];
	const char *path;
	int fd;

	if (!ghost_path(r, id) && fe && fe->type == FD_TYPES__REG && fe->reg &&
	    fe->reg->has_root_mntns && fe->reg->root_mntns) {
		fd = mntns_root_open(r, fe->reg->name, flags);
		if (fd < 0)
			fail_clear();	/* the caller says it, once */
		return fd;
	}
	path = rst_reg_host_path(r, id, buf, sizeof(buf));
	if (!path)
		return -EINVAL;
	fd = open(path, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

void rst_close_prepared(struct rst *r)
{
	for (size_t i = 0; i < r->nr_descs; i++)
		if (r->descs[i].fd >= 0)
			close(r->descs[i].fd);
	for (size_t i = 0; i < r->nr_blob_fds; i++)
		close(r->blob_fds[i]);
	r->nr_blob_fds = 0;
	for (size_t i = 0; i < r->nr_descs; i++)
		r->descs[i].fd = -1;
	shm_close_all(r);
	if (r->lifeline >= 0)
		close(r->lifeline);
	r->lifeline = -1;
	if (r->lazy_peer >= 0)
		close(r->lazy_peer);
	r->lazy_peer = -1;
	lazy_remote_free(r->lazy_remote);
	r->lazy_remote = NULL;
	if (r->cwd_fd >= 0)
		close(r->cwd_fd);
	r->cwd_fd = -1;
	close_inherited(r);
	tty_close_fg(r);
	tty_close_hung(r);	/* its slaves hung up again */
	sk_helpers_close(r);
	cgroups_close_join(r);
}

static int futex_wait_ms(volatile unsigned int *w, unsigned int val, long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	return syscall(SYS_futex, w, FUTEX_WAIT, val, &ts, NULL, 0);
}

int rst_area_error(const struct rst *r)
{
	int err = r->a->err ? r->a->err : -EIO;
	const char *name = strerrorname_np(-err);

	if (r->a->msg_has_errno)
		return fail(err, "%s", r->a->msg);
	return fail(err, "%s: %s (%s)", r->a->msg, name ? name : "unknown errno", strerror(-err));
}

static int child_gone(struct rst *r, int status)
{
	if (r->a->err)
		return rst_area_error(r);
	if (WIFSIGNALED(status))
		return fail(-ECHILD, "the restored process was killed by signal %d during restore%s",
			    WTERMSIG(status), WCOREDUMP(status) ? " (core dumped)" : "");
	return fail(-ECHILD, "the restored process exited with %d during restore",
		    WEXITSTATUS(status));
}

/* A process of a restored tree that is not memdump's child: gone, or a zombie? */
static bool member_gone(pid_t pid)
{
	char path[64], *buf = NULL, *p;
	bool gone;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (proc_read_file(path, &buf) < 0)
		return true;
	p = strrchr(buf, ')');
	gone = !p || p[1] == 0 || p[2] == 'Z' || p[2] == 'X';
	free(buf);
	return gone;
}

/*
 * Wait until every thread is parked, or the restore failed, or the process
 * made no progress for the stall limit (stall.c: then it is killed).
 */
int rst_wait_parked(struct rst *r)
{
	long limit = rst_stall_limit_ms();
	struct rst_progress last, now;
	uint64_t since = now_us();

	rst_progress_take(r, &last);
	for (;;) {
		unsigned int st = __atomic_load_n(&r->a->stage, __ATOMIC_SEQ_CST);
		int status;
		pid_t w;

		if (st == RST_STAGE_PARKED)
			return 0;
		if (rst_interrupted()) {
			rst_kill(r);
			return -EINTR;
		}
		if (st == RST_STAGE_FAILED) {
			rst_kill(r);
			return rst_area_error(r);
		}
		if (rst_not_child(r)) {	/* forked by its parent in the tree, or a sibling */
			if (member_gone(r->pid))
				return fail(-ECHILD, "the restored process %d died during restore",
					    r->pid);
		} else {
			w = waitpid(r->pid, &status, WNOHANG | __WALL);
			if (w == r->pid && (WIFEXITED(status) || WIFSIGNALED(status)))
				return child_gone(r, status);
		}
		rst_progress_take(r, &now);
		if (!rst_progress_same(&now, &last)) {
			last = now;
			since = now_us();
		} else if (now_us() - since >= (uint64_t)limit * 1000) {
			int ret = rst_stall_fail(r, &now, limit);

			rst_kill(r);
			return ret;
		}
		futex_wait_ms(&r->a->stage, st, 20);
	}
}

void rst_kill(struct rst *r)
{
	int status;

	kill(r->pid, SIGKILL);
	resume_reap_traced(r);
	if (!rst_not_child(r))
		while (waitpid(r->pid, &status, __WALL) < 0 && errno == EINTR)
			;
}

/*
 * The pid file is written to a new temporary (O_EXCL, so a planted symlink
 * is never followed) and renamed over the name: a symlink there is replaced,
 * not written through.
 */
int rst_write_pidfile(const char *pidfile, pid_t pid)
{
	char tmp[PATH_MAX], line[32];
	int fd, len, ok;

	if (!pidfile)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", pidfile, getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return fail(-errno, "cannot write the pid file %s: %s", pidfile, strerror(errno));
	len = snprintf(line, sizeof(line), "%d\n", pid);
	ok = write(fd, line, len) == len;
	ok = !close(fd) && ok && !rename(tmp, pidfile);
	if (!ok) {
		int err = errno ?: EIO;

		unlink(tmp);
		return fail(-err, "cannot write the pid file %s: %s", pidfile, strerror(err));
	}
	return 0;
}

int rst_wait_restored(pid_t pid)
{
	int status;

	for (;;) {
		pid_t w = waitpid(pid, &status, 0);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return fail(-errno, "cannot wait for %d: %s", pid, strerror(errno));
		if (WIFEXITED(status))
			return WEXITSTATUS(status);
		if (WIFSIGNALED(status))
			return 128 + WTERMSIG(status);
	}
}

/*
 * A deleted cwd: the directory recreated for it (ghost_restore.c), open while it
 * is there; the process changes into it by this fd once it is deleted again.
 */
static int open_ghost_cwd(struct rst *r)
{
	const char *path = r->ds.fs ? ghost_path(r, r->ds.fs->cwd_id) : NULL;

	if (!path)
		return 0;
	r->cwd_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (r->cwd_fd < 0)
		return fail(-errno, "cannot open the deleted cwd %s: %s", path, strerror(errno));
	return 0;
}

/* Everything the process needs, opened or built here before the fork. */
int rst_prepare(struct rst *r)
{
	int ret = cgroups_open_join(r);

	if (!ret)
		ret = ghost_create_all(r);
	if (!ret)
		ret = open_ghost_cwd(r);
	if (!ret)
		ret = fault_step(RST_FAULT_GHOSTS) ?: rst_interrupted();
	if (!ret)
		ret = shm_create_all(r);
	if (!ret)
		ret = open_fds(r);
	if (!ret)
		ret = build_area(r);
	if (!ret)
		ret = rst_arm_abort(r);	/* abort.c */
	if (!r->tree) {
		ghost_unlink_all(r);	/* every fd and mapping of them is open (a tree: tree.c) */
		sk_unix_unlink_gone(r);	/* every socket connected that needed the name */
		if (!sk_unix_aliases_kept(r))	/* else once parked: the sweeper would take them */
			ghost_sweep_end(r);
	}
	return ret;
}

bool rst_not_child(const struct rst *r)
{
	return r->tree_parent || r->o->sibling || r->fan_init;
}

pid_t rst_fork_pid(pid_t pid)
{
	return rst_fork_pid_ns(pid, 0, 0);
}

pid_t rst_fork_pid_ns(pid_t pid, pid_t ns_pid, unsigned long flags)
{
	pid_t tids[2] = { ns_pid, pid };	/* the innermost namespace first */
	struct clone_args ca;

	memset(&ca, 0, sizeof(ca));
	ca.exit_signal = flags & CLONE_PARENT ? 0 : SIGCHLD;	/* CLONE_PARENT: memdump's own */
	ca.flags = flags;
	ca.set_tid = (uintptr_t)(ns_pid ? &tids[0] : &tids[1]);
	ca.set_tid_size = ns_pid ? 2 : 1;
	return (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
}

pid_t rst_ns_pid(const PstreeEntry *pe)
{
	return pe->n_ns_threads ? (pid_t)pe->ns_threads[0] : 0;
}

/*
 * Every signal blocked in this thread, the old mask in *old: with the raw
 * system call, since glibc's sigfillset() and sigprocmask() leave out its
 * own SIGCANCEL (32) and SIGSETXID (33). A process forked so keeps them
 * unblocked, its blob's threads too, and a signal 32 the restored process's
 * POSIX timer sends while it is parked (glibc's SIGEV_THREAD timers use it)
 * met the default action: the process died during the restore.
 */
void rst_block_signals(uint64_t *old)
{
	uint64_t all = ~0ULL;

	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, old, sizeof(all));
}

void rst_unblock_signals(const uint64_t *old)
{
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, old, NULL, sizeof(*old));
}

/* The process, with its PID: it runs child_main() (child.c). */
int rst_fork_target(struct rst *r)
{
	uint64_t old;
	pid_t child;
	int ret;

	if (fault_wanted(RST_FAULT_CHILD) && !fault_fails())
		pr_warn("fault point %s: each process stalls there (MEMDUMP_FAULT)", RST_FAULT_CHILD);
	if (r->fan)
		return fanout_fork(r);	/* a copy, in a PID namespace of its own */
	/* every signal blocked: the blob runs so until the final rt_sigreturn */
	rst_block_signals(&old);
	/* its PID namespace's init: a new one; --restore-sibling: memdump's parent's child */
	child = rst_fork_pid_ns(r->pid, rst_ns_pid(r->ds.pstree),
				(rst_ns_pid(r->ds.pstree) == 1 ? CLONE_NEWPID : 0) |
				(r->o->sibling ? CLONE_PARENT : 0));
	if (child == 0)
		child_main(r);
	ret = child < 0 ? -errno : 0;
	rst_unblock_signals(&old);
	rst_close_prepared(r);
	if (ret == -EEXIST)
		return fail(ret, "PID %d is in use", r->pid);
	if (ret)
		return fail(ret, "cannot create process %d: %s", r->pid, strerror(-ret));
	return 0;
}

/*
 * setup-namespaces and post-setup-namespaces (runc runs its prestart hooks
 * there, with the PID): the namespaces and mounts were made before the
 * process; both are told once it is parked, before post-restore.
 */
int rst_fire_setup_ns(const struct rst *r)
{
	int ret = hook_fire(r->o->hooks, HOOK_SETUP_NS, r->pid);

	return ret ? ret : hook_fire(r->o->hooks, HOOK_POST_SETUP_NS, r->pid);
}

void rst_report(struct rst *r, uint64_t t0, uint64_t t1, uint64_t t2)
{
	const struct rst_args *a = r->a;

	pr_info("restored %d in %.3f s: load %.3f s, prepare %.3f s, rebuild %.3f s (memory: %lu pages, %lu as "
		"huge pages, in %.3f s, %.0f MB/s; populate %.3f s, read %.3f s, sum %.3f s; %u thread%s, "
		"the reader waited %.3f s), resume %.3f s\n",
		r->pid, (now_us() - t0 + r->load_us) / 1e6, r->load_us / 1e6, (t1 - t0) / 1e6, (t2 - t1) / 1e6,
		a->pages_restored, a->huge_chunks * 512, a->fill_us / 1e6,
		a->fill_us ? a->pages_restored * 4096.0 / a->fill_us : 0.0,
		a->prep_us / 1e6, a->read_us / 1e6, a->sum_us / 1e6, a->fill_threads,
		a->fill_threads == 1 ? "" : "s", a->wait_us / 1e6, (now_us() - t2) / 1e6);
	if (a->nr_zblocks)
		pr_info("pages-1.img: LZ4, %lu blocks decoded into the memory by the blob (%lu of them "
			"by its sum helper; read is the decoding)\n", a->nr_zblocks, a->z_blocks_helped);
}

/* A hook refused the parked process: it goes, before any of its code ran. */
static int abort_parked(struct rst *r, int ret)
{
	rst_kill(r);
	return ret;
}

/* The threads parked: post-restore, timers, the network, pre-resume, then they run. */
static int release(struct rst *r)
{
	const struct hooks *h = r->o->hooks;
	int ret = cgroups_move_threads(r) ?: rst_fire_setup_ns(r) ?:
		  hook_fire(h, HOOK_POST_RESTORE, r->pid);

	if (!ret)
		ret = timerfd_arm_all(r);	/* as late as possible: the restore takes no time off */
	inotify_drain_all(r);		/* what the restore did to the ghosts it watches */
	if (ret)
		return abort_parked(r, ret);
	ret = netns_firewall_late(r);
	if (ret)
		return abort_parked(r, ret);
	/* its connections stay in repair mode and locked until the commit (golive.c) */
	rst_hook_network_unlock(&r, 1);
	ret = hook_fire(h, HOOK_PRE_RESUME, r->pid);
	if (!ret && r->fan)
		ret = fanout_disarm(r);	/* its init outlives memdump from now on */
	if (!ret)
		ret = fault_step(RST_FAULT_COMMIT) ?: rst_interrupted();
	if (ret)
		return abort_parked(r, ret);
	ret = resume_threads(r);	/* the commit point (abort.c), then the network */
	if (ret)
		return ret;
	rst_default_signals();
	hook_fire_late(h, HOOK_POST_RESUME, r->pid);
	return 0;
}

int rst_detached(struct rst *r)
{
	if (r->o->pid_out) {
		*r->o->pid_out = r->pid;
		return 0;
	}
	printf("%d\n", r->pid);
	fflush(stdout);
	return 0;
}

/*
 * Its sealed pages image fed to the blob (vma_restore.c): every chunk
 * authenticated before it may run; a chunk refused is the reason of the
 * failure (the blob only saw its pages end), one not read means the blob
 * failed first (ret says why) or parked without its pages.
 */
static int feed_finish(struct rst *r, int ret)
{
	int fret;

	if (!r->feed)
		return ret;
	fret = feed_end(r->feed, false);
	r->feed = NULL;
	if (fret == -EPIPE && !ret)
		return fail(-EIO, "process %d was restored without all of its pages image", r->pid);
	return fret && fret != -EPIPE ? fret : ret;
}

int rst_restore_one(struct rst *r)
{
	uint64_t t0 = now_us(), t1, t2;
	int ret;

	ret = rst_prepare(r);	/* in its namespaces since rst_load() */
	if (!ret)
		ret = fault_step(RST_FAULT_PREPARED) ?: rst_interrupted();
	if (!ret) {
		/* pagecheck.c; a sealed set's feed authenticates every byte itself */
		r->a->sum_pages = feed_authenticated(r->feed) ? RST_SUM_NONE : pagecheck_mode(&r->ds);
		r->a->fill_helper = fill_helper_wanted();
		ret = lazy_start(&r, 1);	/* --lazy-pages: the page handler first */
	}
	if (!ret) {
		ret = rst_fork_target(r);
	}
	mntns_restore_leave(r);
	ns_restore_leave(r);
	if (ret)
		return ret;
	ret = fault_step(RST_FAULT_FORKED) ?: rst_interrupted();
	if (!ret)
		ret = feed_run(r->feed);	/* threads only once forked: image/feed.h */
	if (ret)
		return abort_parked(r, ret);	/* parked or not: it goes */
	t1 = now_us();
	ret = pagecheck_start(r);
	if (ret == -ESRCH ||
	    (ret && __atomic_load_n(&r->a->stage, __ATOMIC_SEQ_CST) == RST_STAGE_FAILED)) {
		/* the process failed before its pages could be checked: its reason first */
		int why;

		fail_clear();
		why = rst_wait_parked(r);
		if (why)
			return why;
		kill(r->pid, SIGKILL);
		waitpid(r->pid, NULL, __WALL);
		return fail(ret, "cannot check the restored pages of process %d", r->pid);
	}
	if (ret) {
		kill(r->pid, SIGKILL);
		waitpid(r->pid, NULL, __WALL);
		return ret;
	}
	ret = feed_finish(r, rst_wait_parked(r));
	sk_unix_unlink_all(r);	/* aliases its child connected to (sk_unix_keep_alias) */
	ghost_sweep_end(r);	/* the child closed its copy of the sweeper's socket by now */
	ret = pagecheck_finish(r, !ret) ?: ret;
	t2 = now_us();
	if (ret && r->a->stage == RST_STAGE_PARKED) {	/* damaged pages: it never runs */
		kill(r->pid, SIGKILL);
		waitpid(r->pid, NULL, __WALL);
		return ret;
	}
	if (!ret)
		ret = release(r);
	if (ret)
		return ret;
	rst_report(r, t0, t1, t2);
	ret = rst_write_pidfile(r->o->pidfile, r->pid);
	if (ret)
		return ret;
	if (r->o->detach || r->o->sibling)
		return rst_detached(r);	/* a sibling is its parent's to wait for */
	return rst_wait_restored(r->pid);
}

void rst_init(struct rst *r, const struct restore_opts *o)
{
	memset(r, 0, sizeof(*r));
	r->o = o;
	r->area_fd = -1;
	r->exe_fd = -1;
	r->log_fd = -1;
	r->ds.dirfd = -1;
	r->ds.pages_fd = -1;
	r->ns_back[0] = r->ns_back[1] = r->ns_back[2] = -1;
	r->tree_sync_fd = -1;
	r->mnt_back = r->mnt_cwd = -1;
	r->mnt_ns_fd = -1;
	r->mnt_go[0] = r->mnt_go[1] = -1;
	r->lifeline = -1;
	r->fan_from = r->fan_to = -1;
	r->cwd_fd = -1;
	r->lazy_peer = -1;
	r->make_bound_pts = tty_make_bound_pts;
	attrs_read_own(r);
}

int rst_check_loaded(struct rst *r)
{
	int ret;

	r->pid = dumpset_pid(&r->ds);
	r->leader = r->ds.cores[0];
	ret = shm_collect(r);
	if (!ret)
		ret = check_images(r);
	if (!ret)
		ret = zombies_check(r);
	return ret;
}

/*
 * The set loaded and every check a restore makes before it starts anything.
 * enter (a restore, not a check): the pre-restore hook, then this thread
 * goes into the process's new namespaces first (ns.c, mntns.c: nothing runs
 * in them yet), so that its files are checked where it will find them.
 */
static int load_checked(struct rst *r, const struct restore_opts *o, bool enter);

int rst_load(struct rst *r, const struct restore_opts *o, bool defer_sums, bool enter)
{
	int ret;

	rst_init(r, o);
	ret = ns_check_join(o);
	if (!ret)
		ret = scan_inherited(r);
	if (!ret)
		/* --lazy-pages: no blob reads the lazy pages to sum them; checked before */
		ret = o->lazy && lazy_remote_fd(o) >= 0 ? dumpset_load_remote_pages(o->dir, &r->ds) :
		      defer_sums && o->lazy && lazy_check_late() ? dumpset_load_lazy(o->dir, &r->ds) :
		      /* checked block by block as served where the set has block marks
		       * (lazy_restore.c), else whole before anything runs */
		      defer_sums && o->lazy && !lazy_check_first() ?
				 dumpset_load_for_restore(o->dir, &r->ds, false) :
		      defer_sums && !o->lazy ? dumpset_load_for_restore(o->dir, &r->ds, true)
				 : dumpset_load(o->dir, &r->ds);
	return ret ? ret : load_checked(r, o, enter);
}

/*
 * A copy of a fan-out (fanout.c): the set was loaded and verified once; the
 * copy reads it and never changes it (no lazy pages, no tree, no shared
 * memory: refused there), and leaves it to the fan-out to free.
 */
int rst_load_lent(struct rst *r, const struct restore_opts *o, const struct dumpset *ds,
		  bool own_checked)
{
	int ret;

	rst_init(r, o);
	r->ds = *ds;
	r->ds_lent = true;
	r->own_checked = own_checked;
	ret = ns_check_join(o);
	if (!ret)
		ret = scan_inherited(r);
	return ret ? ret : load_checked(r, o, true);
}

/* The set loaded: its mounts, the hooks and namespaces (enter), every check. */
static int load_checked(struct rst *r, const struct restore_opts *o, bool enter)
{
	int ret;

	r->pid = dumpset_pid(&r->ds);
	ret = mntns_load(r);	/* the root's set holds the tree's mount namespace */
	if (!ret && enter)
		ret = hook_fire(o->hooks, HOOK_PRE_RESTORE, r->pid);
	if (!ret && enter)
		ret = timens_restore_load(r);	/* made by the root once forked (child.c) */
	if (!ret && enter)
		ret = ns_restore_enter(r);
	if (!ret && enter)
		ret = mntns_restore_enter(r);
	if (!ret && enter)
		ret = fault_step(RST_FAULT_MOUNTS) ?: rst_interrupted();
	r->cg_early = enter;	/* a directory fd may be on a cgroup it makes again */
	if (!ret)
		ret = rst_check_loaded(r);
	if (!ret && r->ds.nr_members)
		ret = tree_load(r);	/* the tree's other processes (tree.c) */
	if (!ret)
		ret = tty_check_keys(r);
	return ret;
}

void rst_free(struct rst *r)
{
	feed_end(r->feed, true);	/* a restore that failed before its end */
	tree_free_members(r);
	mntns_restore_leave(r);
	ns_restore_leave(r);
	mntns_free(r);
	pagecheck_free(r);
	premap_free(r);
	rst_close_prepared(r);
	tty_close_orphans(r);
	ghost_unlink_all(r);
	sk_unix_unlink_all(r);	/* kept for a child that connects: not once the restore ended */
	ghost_sweep_end(r);
	if (r->area)
		munmap(r->area, r->area_size);
	free(r->descs);
	free(r->fds);
	free(r->blob_fds);
	free(r->shms);
	cgroups_join_free(r);
	close_inherited(r);
	timerfd_close_all(r);
	inotify_drain_close(r);
	pidfd_close_all(r);
	tcp_close_all(r);
	sk_queue_free(r);
	if (!r->ds_lent)
		dumpset_free(&r->ds);
}

int restore_run(const struct restore_opts *o)
{
	uint64_t t = now_us();
	struct rst r;
	int ret;

	if (o->copies)
		return fanout_run(o);
	rst_catch_signals();	/* before anything is made: abort.c */
	ret = rst_load(&r, o, true, true);
	r.load_us = now_us() - t;
	if (!ret)
		ret = r.tree ? restore_tree(&r) : rst_restore_one(&r);
	if (ret)
		cgroups_undo(&r);	/* the cgroups it made for nothing */
	rst_free(&r);
	rst_release_signals();
	return ret;
}

int restore_check(const struct restore_opts *o)
{
	struct rst r;
	int ret = rst_load(&r, o, false, false);

	rst_free(&r);
	return ret;
}
