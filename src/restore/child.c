/*
 * Restore, step 4: the process forked with the dumped PID (clone3 set_tid),
 * still memdump's code: it moves the prepared fds to their numbers and the
 * blob's fds right above them (a process sharing its parent's fd table waits
 * instead for the table's first process to do that for it: share.c), fills
 * the epoll sets (epoll.c), sets root, cwd
 * and umask, joins its session, group and cgroups, sets oom_score_adj,
 * loginuid, subreaper (attrs.c), forks its zombie children (zombies.c), takes the file locks (locks.c), and
 * jumps into the restorer blob on the leader's stack in the restorer area.
 * A failure is told through the area (err, msg, stage) before exiting.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/futex.h>

#include "common.h"
#include "log.h"
#include "fault.h"
#include "restore/restore.h"
#include "evloop/evloop.h"
#include "files/files.h"
#include "files/proccwd.h"
#include "files/locks.h"
#include "files/pidfd.h"
#include "files/tty.h"
#include "mem/premap.h"
#include "net/sock.h"
#include "ns/cgroups.h"
#include "ns/mntns.h"
#include "ns/timens.h"
#include "restore/pipeline.h"
#include "task/task.h"
#include "ns/nsfile.h"
#include "unix/sk_unix.h"

void child_exit_fail(struct rst *r, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->a->msg, sizeof(r->a->msg), fmt, ap);
	va_end(ap);
	r->a->err = err ? err : -EINVAL;
	r->a->msg_has_errno = 1;
	__atomic_store_n(&r->a->stage, RST_STAGE_FAILED, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &r->a->stage, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	_exit(127);
}

static void unregister_rseq(void)
{
#ifdef RSEQ_SIG
#else
#define RSEQ_SIG 0x53053053
#endif
	extern const ptrdiff_t __rseq_offset __attribute__((weak));
	extern const unsigned int __rseq_size __attribute__((weak));
	char *tp;

	if (!&__rseq_offset || !&__rseq_size || !__rseq_size)
		return;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	if (syscall(SYS_rseq, tp + __rseq_offset, 32, 1, RSEQ_SIG) &&
	    syscall(SYS_rseq, tp + __rseq_offset, __rseq_size, 1, RSEQ_SIG))
		return;
}

/* Room for fds up to top. */
static void raise_nofile(struct rst *r, rlim_t top)
{
	struct rlimit rl;

	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur >= top)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (rl.rlim_cur < top)
		rl.rlim_cur = rl.rlim_max = top;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		child_exit_fail(r, -errno, "cannot raise RLIMIT_NOFILE to %lu: %m", (unsigned long)top);
}

/* A copy of fd from base up, out of the way of the final numbers. */
static int move_up(struct rst *r, int fd, int base)
{
	int n = fcntl(fd, F_DUPFD_CLOEXEC, base);

	if (n < 0)
		child_exit_fail(r, -errno, "cannot move fd %d: %m", fd);
	return n;
}

/* A pidfd of a process of the set, opened now that its PID exists, above base. */
static int pidfd_up(struct rst *r, const PidfdEntry *e, int base)
{
	int fd = pidfd_open_in_child(e), n;

	if (fd < 0)
		child_exit_fail(r, fd, "cannot open a pidfd of process %d: %s", e->nspid,
				strerror(-fd));
	n = move_up(r, fd, base);
	close(fd);
	return n;
}

/* A /proc file of a process of the set, opened now that its PID exists, above base. */
static int proc_reg_up(struct rst *r, const RegFileEntry *re, int base)
{
	int fd = reg_proc_open_in_child(r, re), n;

	if (fd == -EEXIST)	/* of a process that exited: its stand-in's PID (proccwd.h) */
		child_exit_fail(r, fd, "cannot open %s: the PID of its process, which exited, is "
				"in use", re->name);
	if (fd < 0)
		child_exit_fail(r, fd, "cannot open %s: %s", re->name, strerror(-fd));
	n = move_up(r, fd, base);
	close(fd);
	return n;
}

/* A file of one of its namespaces, opened now that it is in them, above base. */
static int nsfile_up(struct rst *r, const NsFileEntry *e, int base)
{
	int fd = nsfile_open_in_child(r, e), n;

	if (fd < 0)
		child_exit_fail(r, fd, "cannot open its %s namespace file: %s",
				nsfile_name(e->ns_cflag), strerror(-fd));
	n = move_up(r, fd, base);
	close(fd);
	return n;
}

/* fd i's description above base: opened now (a pidfd, a /proc or namespace file) or memdump's. */
static int fd_up(struct rst *r, const int *tmp_fd, size_t i, int base)
{
	const struct rfd *f = &r->fds[i];

	if (f->pidfd)
		return pidfd_up(r, f->pidfd, base);
	if (!f->proc_reg && !f->nsf)
		return move_up(r, f->src, base);
	for (size_t k = 0; k < i; k++)	/* one description for its dups */
		if ((r->fds[k].proc_reg || r->fds[k].nsf) && r->fds[k].id == f->id)
			return move_up(r, tmp_fd[k], base);
	return f->nsf ? nsfile_up(r, f->nsf, base) : proc_reg_up(r, f->proc_reg, base);
}

/* Indexes into the blob's fd list become fd numbers: the list starts at high. */
static void number_blob_fds(struct rst *r, int high)
{
	struct rst_vma *rv = (struct rst_vma *)(r->area + r->a->vmas_off);
	struct rst_seal *seals = (struct rst_seal *)(r->area + r->a->seals_off);
	struct rst_run *runs = (struct rst_run *)(r->area + r->a->runs_off);

	for (size_t i = 0; i < r->a->nr_vmas; i++)
		if (rv[i].how == RST_MAP_FD)
			rv[i].fd += high;
	for (size_t i = 0; i < r->a->nr_seals; i++)
		seals[i].fd += high;
	for (size_t i = 0; i < r->a->nr_runs; i++)
		runs[i].fd += high;
	r->a->pages_fd += high;
	r->a->mm.exe_fd += high;
	if (r->a->lazy_sock >= 0)
		r->a->lazy_sock += high;
}

/* g's blob fds (g: r, then the followers of its fd table) moved up out of the way. */
static int **move_blob_fds(struct rst *r, struct rst *const *g, size_t n, int base2)
{
	int **tmp = calloc(n, sizeof(*tmp));

	for (size_t k = 0; tmp && k < n; k++) {
		if (g[k]->nr_blob_fds > blob_fd_room(&g[k]->ds))
			child_exit_fail(r, -E2BIG, "too many fds for the restorer of %d (%zu)",
					g[k]->pid, g[k]->nr_blob_fds);
		tmp[k] = calloc(g[k]->nr_blob_fds + 1, sizeof(int));
		if (!tmp[k])
			child_exit_fail(r, -ENOMEM, "out of memory");
		for (size_t i = 0; i < g[k]->nr_blob_fds; i++)
			tmp[k][i] = move_up(r, g[k]->blob_fds[i], base2);
	}
	if (!tmp)
		child_exit_fail(r, -ENOMEM, "out of memory");
	return tmp;
}

/* Each one's blob fds from high up, one after the other; the first free number after. */
static int install_blob_fds(struct rst *r, struct rst *const *g, size_t n, int **tmp, int high)
{
	for (size_t k = 0; k < n; k++) {
		int *close_fds = (int *)((char *)g[k]->area + g[k]->a->close_off);

		for (size_t i = 0; i < g[k]->nr_blob_fds; i++) {
			if (dup3(tmp[k][i], high + (int)i, O_CLOEXEC) < 0)
				child_exit_fail(r, -errno, "cannot install fd %d: %m", high + (int)i);
			close_fds[i] = high + (int)i;
		}
		g[k]->a->nr_close = g[k]->nr_blob_fds;
		number_blob_fds(g[k], high);
		high += (int)g[k]->nr_blob_fds;
	}
	return high;
}

/* memdump's pidfd at high, for every blob of the fd table: one fd watched by all (abort.c). */
static void install_lifeline(struct rst *r, struct rst *const *g, size_t n, int tmp, int high)
{
	if (dup3(tmp, high, O_CLOEXEC) < 0)
		child_exit_fail(r, -errno, "cannot install fd %d: %m", high);
	for (size_t k = 0; k < n; k++)
		g[k]->a->lifeline_fd = high;
}

/*
 * Install the fds at their numbers, the blob's fds right above them; with a
 * fd table its children share (share.c), their blobs' fds above those.
 */
static void child_fds(struct rst *r, struct rst *const *g, size_t n)
{
	int high = r->max_target_fd + 1;
	size_t blobs = 0;
	int base2, *tmp_fd, **tmp_blob, lifeline, log_copy;

	for (size_t k = 0; k < n; k++)
		blobs += g[k]->nr_blob_fds;
	base2 = high + (int)blobs + 64;
	raise_nofile(r, (rlim_t)base2 + r->nr_fds + blobs + 64);
	tmp_fd = calloc(r->nr_fds + 1, sizeof(int));
	if (!tmp_fd)
		child_exit_fail(r, -ENOMEM, "out of memory");
	for (size_t i = 0; i < r->nr_fds; i++)
		tmp_fd[i] = fd_up(r, tmp_fd, i, base2);
	tmp_blob = move_blob_fds(r, g, n, base2);
	lifeline = move_up(r, r->lifeline, base2);
	log_copy = move_up(r, log_fileno() >= 0 ? log_fileno() : 2, base2);
	syscall(SYS_close_range, 0, base2 - 1, 0);
	for (size_t i = 0; i < r->nr_fds; i++) {
		if (dup3(tmp_fd[i], r->fds[i].target, r->fds[i].cloexec ? O_CLOEXEC : 0) < 0)
			child_exit_fail(r, -errno, "cannot install fd %d: %m", r->fds[i].target);
	}
	high = install_blob_fds(r, g, n, tmp_blob, high);
	install_lifeline(r, g, n, lifeline, high);
	/* memdump's messages from now on: to its log or stderr, above everything; closed
	 * before the blob runs (child_main) */
	r->log_fd = dup3(log_copy, high + 1, O_CLOEXEC) == high + 1 ? high + 1 : -1;
	syscall(SYS_close_range, r->log_fd >= 0 ? high + 2 : high + 1, ~0U, 0);
	log_to_fd(r->log_fd);
}

/* Its fds, or, sharing its parent's fd table, the wait until their owner installed them. */
static void child_table(struct rst *r)
{
	size_t n = r->tree ? share_followers(r, NULL, 0) : 0;
	struct rst *g[n + 1];
	char msg[256];
	int ret;

	if (r->fdt_owner) {
		share_follower_wait(r);
		return;
	}
	g[0] = r;
	share_followers(r, g + 1, n);
	share_owner_wait(r, g + 1, n);	/* every follower's children forked */
	child_fds(r, g, n + 1);
	ret = leases_apply_in_child(r, msg, sizeof(msg));	/* before their SIGIO owners */
	if (!ret)
		ret = files_fown_in_child(r, msg, sizeof(msg));
	if (ret)
		child_exit_fail(r, ret, "%s", msg);
	share_owner_done(g + 1, n);
	ret = epoll_fill_all(&r->ds, msg, sizeof(msg));
	if (ret)
		child_exit_fail(r, ret, "%s", msg);
}

/* memdump's pidfd (the lifeline, abort.c) readable: memdump is gone. */
static bool memdump_gone(const struct rst *r)
{
	struct pollfd p = { .fd = r->lifeline, .events = POLLIN };

	return r->lifeline >= 0 && poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* The tests' fault point rst-child-files: its fds installed. */
static void fault_in_child(struct rst *r)
{
	if (!fault_wanted(RST_FAULT_CHILD))
		return;
	if (fault_fails())
		child_exit_fail(r, -EIO, "process %d: fault injected at %s (MEMDUMP_FAULT_FAIL)",
				r->pid, RST_FAULT_CHILD);
	pr_warn("fault point %s: stalling (MEMDUMP_FAULT)", RST_FAULT_CHILD);
	fault_stall();	/* memdump's stderr, not the restored one's (log_to_fd) */
}

void child_main(struct rst *r)
{
	const TaskCoreEntry *tc = r->leader->tc;
	unsigned long sp = r->a->area_start + ((struct rst_thread *)(r->area + r->a->threads_off))[0].stack_top;
	unsigned long entry = r->a->area_start;
	char msg[256];
	int ret;

	unregister_rseq();
	/* memdump's code until the blob: it dies with its parent (abort.c; the blob
	 * sets the dumped signal); a sibling's parent is not memdump; a copy's
	 * (--copies) is the init of its namespace, which dies with memdump */
	if (r->fan)
		fanout_in_copy();
	else if ((r->tree_parent || !r->o->sibling) && !r->via_helper)	/* else: once back (treefork.c) */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (memdump_gone(r))	/* before the prctl: nothing would take it */
		_exit(127);
	/* the root, alone still: its time namespace, which the others are forked into */
	ret = r->tree_parent ? 0 : timens_restore_in_child(r, msg, sizeof(msg));
	if (!ret)
		ret = cgroups_join_in_child(r, msg, sizeof(msg));	/* while memdump's mounts are there */
	if (!ret)
		ret = mntns_mount_in_child(r, msg, sizeof(msg));	/* its root, its proc */
	if (ret)
		child_exit_fail(r, ret, "%s", msg);
	if (r->tree) {
		premap_fill(r);		/* what its children share with it, before they exist */
		ret = tree_open_late(r, msg, sizeof(msg));	/* /proc files they inherit */
		if (ret)
			child_exit_fail(r, ret, "%s", msg);
		ret = sk_cred_remake_tree(r, msg, sizeof(msg));	/* their ends inherited */
		if (ret)
			child_exit_fail(r, ret, "%s", msg);
		share_listened(r);	/* the others of the tree connect to them now */
		tree_fork_children(r);	/* its group first, then its children (tree.c) */
	} else if (r->ctty_lone) {	/* its terminal from memdump's fd, before fds move */
		attrs_apply_groups(r);
		ret = tty_ctty_early(r, msg, sizeof(msg));
		if (ret)
			child_exit_fail(r, ret, "%s", msg);
	}
	ret = sk_child_remake(r, msg, sizeof(msg));	/* on memdump's fds, before they move */
	if (!ret)	/* with the sockets made again; sent again next */
		ret = epoll_fill_inflight(r, msg, sizeof(msg));
	if (!ret)
		ret = sk_child_finish(r, msg, sizeof(msg));
	if (ret)
		child_exit_fail(r, ret, "%s", msg);
	/* a deleted cwd, deleted again by now: by the fd memdump kept, before it goes */
	if (r->cwd_fd >= 0 && fchdir(r->cwd_fd))
		child_exit_fail(r, -errno, "cannot change directory to the deleted %s: %m", r->cwd);
	child_table(r);
	fault_in_child(r);
	/*
	 * Both are paths as memdump sees them: the cwd now, the root last (what
	 * follows writes /proc/self). A process that chrooted without a chdir
	 * keeps a cwd outside its root (zdtm chroot), which no path after the
	 * chroot reaches.
	 */
	ret = proccwd_chdir_in_child(r);	/* /proc/PID of a process gone, in its PID namespace */
	if (ret < 0)
		child_exit_fail(r, ret, "cannot change directory to %s (deleted), the /proc "
				"directory of a process that exited: %s%s", r->cwd ? r->cwd : "?",
				strerror(-ret), ret == -EEXIST ? " (its PID is in use)" : "");
	if (!ret && r->cwd && r->cwd_fd < 0 && chdir(r->cwd))
		child_exit_fail(r, -errno, "cannot change directory to %s: %m", r->cwd);
	if (r->ds.fs && r->ds.fs->has_umask)
		umask(r->ds.fs->umask);
	else if (tc->has_umask)
		umask(tc->umask);
	ret = attrs_apply_in_child(r, msg, sizeof(msg));
	if (!ret)
		ret = tty_ctty_in_child(r, msg, sizeof(msg));	/* once it leads its session */
	if (!ret)
		ret = tty_devtty_in_child(r, msg, sizeof(msg));
	if (!ret && tty_job_fg_in_child(r))
		pr_warn("process %d: cannot make its group the foreground of memdump's terminal "
			"again: %m\n", (int)getpid());
	if (ret)
		child_exit_fail(r, ret, "%s", msg);
	ret = zombies_make_in_child(r, msg, sizeof(msg));	/* in its group and session */
	if (ret)
		child_exit_fail(r, ret, "%s", msg);
	ret = r->fdt_owner ? 0 : locks_apply_in_child(r, msg, sizeof(msg));	/* no fd closed after */
	if (ret)
		child_exit_fail(r, ret, "%s", msg);
	if (r->root && strcmp(r->root, "/") && chroot(r->root))
		child_exit_fail(r, -errno, "cannot chroot to %s: %m", r->root);

	if (r->log_fd >= 0) {	/* no fd of memdump's reaches the restored program */
		log_to_fd(-1);
		close(r->log_fd);
		r->log_fd = -1;
	}
	__asm__ volatile(
		"mov	%0, %%rsp\n"
		"xor	%%ebp, %%ebp\n"
		"jmp	*%1\n"
		: : "r"(sp), "r"(entry), "D"(r->a) : "memory");
	__builtin_unreachable();
}
