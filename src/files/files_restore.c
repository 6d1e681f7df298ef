/*
 * Restore, step 2: the open file descriptions of the restored process,
 * opened here in memdump (the forked child moves them to their numbers):
 * regular files at their position, pipes recreated and refilled with their
 * unread data, FIFOs, pty pairs (tty.c), the job's terminal (memdump's own,
 * --shell-job as in CRIU),
 * memfds (reopened from their restored object, see shmem.c) and the
 * event-loop fds: eventfds, signalfds, timerfds (armed last, timerfd.c) and
 * epoll sets (created here, filled in the child once every fd has its
 * number: epoll.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"
#include "image/image.h"
#include "log.h"
#include "vma_status.h"
#include "proc.h"
#include "ctx/restore_ctx.h"
#include "files/fd_kinds.h"
#include "files/files.h"
#include "files/pidfd.h"
#include "files/ghost.h"
#include "files/proccwd.h"
#include "files/tty.h"
#include "mem/shmem.h"
#include "ns/cgroups.h"
#include "ns/mntns.h"
#include "ns/ns.h"
#include "mem/pages.h"
#include "unix/sk_unix.h"

#ifndef F_SETPIPE_SZ
#define F_SETPIPE_SZ	1031
#endif

#ifndef __O_TMPFILE
#define __O_TMPFILE	020000000
#endif

/*
 * The flags a file was opened with, to open it again: none that creates or
 * truncates. A file made with O_TMPFILE (its flags carry __O_TMPFILE and
 * O_DIRECTORY) is opened again as the file it is (its ghost, or the name it
 * got since), not as the directory it was made in.
 */
static int reopen_flags(uint32_t flags)
{
	if ((flags & __O_TMPFILE) == __O_TMPFILE)	/* O_DIRECTORY alone: a directory */
		flags &= ~(__O_TMPFILE | O_DIRECTORY);
	return (int)(flags & ~(uint32_t)(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY | O_CLOEXEC));
}

/*
 * How strictly a file must match the dump: CHECK_CONTENT for files memory
 * comes from (private mappings and the exe: their clean pages are not in the
 * image), CHECK_SIZE for files open as fds (their data may have changed, a
 * log truncated back to its size, as CRIU allows) and for files mapped
 * shared: the file is the memory, its content legitimately changes between
 * two restores of the same images (other processes share it), but a file cut
 * shorter would make the process die of SIGBUS on its first access to the
 * pages past the new end, and one grown makes pages that faulted readable.
 * CHECK_INODE for the cwd and root.
 */
enum { CHECK_INODE, CHECK_SIZE, CHECK_CONTENT };

/*
 * A file must be the one dumped: same inode, type and size. Its mtime must
 * match too when memory comes from it (file mappings, the exe): their pages
 * that were not written are not in the image. Files only open as fds may
 * have been touched (a log truncated back to its size), like CRIU allows.
 */
/*
 * The restore was given another root (--root, CRIU's `root`: a runtime's
 * new rootfs, e.g. podman's overlay of a container imported under a new
 * name): the files the dump saw on the dumped root's filesystem are on the
 * given root's now, with other inode numbers, so they are checked against
 * it by type, size and (what memory comes from) modification time, as CRIU
 * checks them, not by inode.
 */
static bool on_given_root(struct rst *r, const RegFileEntry *re, dev_t now)
{
	const FileEntry *root = r->ds.fs ? rst_file(r, r->ds.fs->root_id) : NULL;
	struct stat st;

	if (!r->o->root || !r->mnt_stage || !root || root->type != FD_TYPES__REG || !root->reg ||
	    !root->reg->has_dev || !root->reg->has_ino || stat(r->mnt_stage, &st))
		return false;
	if (st.st_dev == root->reg->dev && st.st_ino == root->reg->ino)
		return false;	/* the dumped root itself */
	return re->dev == root->reg->dev && now == st.st_dev;
}

/* procfs makes its inodes as files are looked up (a sysctl's): their numbers change */
static bool dynamic_inode(const char *path)
{
	struct statfs fs;

	return !statfs(path, &fs) && fs.f_type == PROC_SUPER_MAGIC;
}

static int check_file_unchanged(struct rst *r, const RegFileEntry *re, int level)
{
	const char *why = level == CHECK_CONTENT ? "mapped file" : "file";
	char buf[PATH_MAX];
	const char *path = rst_path(r, re->name, buf, sizeof(buf));
	struct stat st;

	int err = re->has_root_mntns && re->root_mntns ? mntns_root_stat(r, re->name, &st) : 0;

	if (err)	/* a file of the tree root's mount namespace: there */
		return fail(err, "%s %s: %s", why, re->name, strerror(-err));
	/* a symlink itself (an O_PATH|O_NOFOLLOW fd on it), not what it names */
	if (!(re->has_root_mntns && re->root_mntns) &&
	    (re->has_mode && S_ISLNK(re->mode) ? lstat(path, &st) : stat(path, &st)))
		return fail(-errno, "%s %s: %s", why, re->name, strerror(errno));
	/* on a filesystem the restore mounted anew (a tmpfs): its files have new inodes */
	if (re->has_dev && re->has_ino && (st.st_dev != re->dev || st.st_ino != re->ino) &&
	    !mntns_new_dev(r, st.st_dev) && !dynamic_inode(path) && !on_given_root(r, re, st.st_dev) &&
	    !(S_ISDIR(st.st_mode) && cgroups_made_inode(r, st.st_dev, st.st_ino)))
		return fail(-ESTALE, "%s %s was replaced since the dump (other inode)", why,
			    re->name);
	if (re->has_mode && (st.st_mode & S_IFMT) != (re->mode & S_IFMT))
		return fail(-ESTALE, "%s %s changed type since the dump", why, re->name);
	if (S_ISREG(st.st_mode)) {
		uint64_t mt = (uint64_t)st.st_mtim.tv_sec * 1000000000ULL + st.st_mtim.tv_nsec;

		if (level >= CHECK_SIZE && re->has_size && (uint64_t)st.st_size != re->size)
			return fail(-ESTALE, "%s %s changed since the dump (size %lld, was %" PRIu64 ")",
				    why, re->name, (long long)st.st_size, re->size);
		if (level >= CHECK_CONTENT && re->has_mtime_ns && mt != re->mtime_ns)
			return fail(-ESTALE, "%s %s changed since the dump (modified)", why, re->name);
	}
	if (S_ISCHR(st.st_mode) && re->has_rdev && st.st_rdev != re->rdev)
		return fail(-ESTALE, "%s %s is another device than at dump time", why, re->name);
	return 0;
}

static int check_level(struct rst *r, uint32_t id)
{
	const MmEntry *mm = r->ds.mm;
	int level = CHECK_INODE;

	if (mm->exe_file_id == id)
		return CHECK_CONTENT;
	for (size_t i = 0; i < mm->n_vmas; i++)
		if ((mm->vmas[i]->status & VMA_FILE_PRIVATE) && !vma_shm_private(mm->vmas[i]) &&
		    mm->vmas[i]->shmid == id)
			return CHECK_CONTENT;
	for (size_t i = 0; i < r->ds.nr_fds; i++)
		if (r->ds.fds[i]->id == id)
			level = CHECK_SIZE;
	for (size_t i = 0; i < r->ds.nr_files; i++) {
		const FileEntry *fe = r->ds.files[i];

		if (fe->type == FD_TYPES__FIFO && fe->fifo && fe->fifo->regf_id == id)
			level = CHECK_SIZE;
	}
	if (r->ds.fs && (r->ds.fs->cwd_id == id || r->ds.fs->root_id == id))
		level = MAX(level, CHECK_INODE);
	for (size_t i = 0; i < mm->n_vmas; i++)
		if ((mm->vmas[i]->status & VMA_FILE_SHARED) && mm->vmas[i]->shmid == id)
			return CHECK_SIZE;
	return level;
}

/*
 * pid names a process of this restore: its PID as its PID namespace sees it
 * (a /proc of that namespace, mounted in its own mount namespace) or as
 * memdump does (the host's /proc). The restored process opens the path in
 * the /proc it has, as the original did.
 */
static bool proc_pid_of_set(struct rst *r, pid_t pid)
{
	const struct dumpset *ds = &tree_proc(r, 0)->ds;

	for (size_t i = 0; i <= ds->nr_members; i++) {
		const PstreeEntry *pe = i < ds->nr_members ? ds->members[i] : ds->pstree;

		if ((pid_t)pe->pid == pid || (pe->n_ns_threads && (pid_t)pe->ns_threads[0] == pid))
			return true;
	}
	return false;
}

const RegFileEntry *reg_proc_of_set(struct rst *r, const FileEntry *fe)
{
	const char *name = fe->type == FD_TYPES__REG && fe->reg ? fe->reg->name : NULL;
	char *end;
	long pid;

	if (!name || fe->reg->deleted_name || strncmp(name, "/proc/", 6))
		return NULL;
	if (proccwd_is_fd(r, fe->id))
		return fe->reg;	/* of a process gone: opened with a stand-in (proccwd.h) */
	pid = strtol(name + 6, &end, 10);
	if (end == name + 6 && strncmp(name + 6, "self/", 5) && strncmp(name + 6, "thread-self/", 12))
		return mntns_by_init(r, name) ? fe->reg : NULL;	/* /proc/sys/..., mounted late */
	return end != name + 6 && *end == '/' && pid > 0 && proc_pid_of_set(r, (pid_t)pid) ?
	       fe->reg : NULL;
}

/*
 * A /proc/PID/... file of a process outside the dump: PID must still be that
 * process (the same start time), or the path would name another's file.
 */
static int check_outside_proc(const RegFileEntry *re)
{
	struct proc_stat ps;
	long pid = strtol(re->name + 6, NULL, 10);

	if (proc_read_stat((pid_t)pid, &ps))
		return fail(-ESRCH, "file %s: process %ld, outside the dump, is gone", re->name, pid);
	if (ps.start_time != re->proc_start)
		return fail(-ESRCH, "file %s: process %ld, outside the dump, is gone (its PID is "
			    "another process's now)", re->name, pid);
	return 0;
}

/* Is file id used by nothing of r's but fds, all copies of an earlier process's? */
static bool copies_only(const struct rst *r, uint32_t id)
{
	const MmEntry *mm = r->ds.mm;
	bool copy = false;

	for (size_t i = 0; i < r->ds.nr_fds; i++)
		if (r->ds.fds[i]->id == id) {
			if (!r->ds.fds[i]->has_share_pid)
				return false;
			copy = true;
		}
	if (!copy || mm->exe_file_id == id ||
	    (r->ds.fs && (r->ds.fs->cwd_id == id || r->ds.fs->root_id == id)))
		return false;
	for (size_t i = 0; i < mm->n_vmas; i++)
		if ((mm->vmas[i]->status & (VMA_FILE_PRIVATE | VMA_FILE_SHARED)) &&
		    mm->vmas[i]->shmid == id)
			return false;
	for (size_t i = 0; i < r->ds.nr_files; i++)
		if (r->ds.files[i]->type == FD_TYPES__FIFO && r->ds.files[i]->fifo &&
		    r->ds.files[i]->fifo->regf_id == id)
			return false;
	return true;
}

/*
 * A regular file (not deleted: a ghost is recreated from its image) must be
 * the one dumped. One only held as copies of an earlier process's fds is
 * that process's to check, in its namespace: it may be outside this one's
 * root (stdio inherited before a pivot_root).
 */
int reg_check(struct rst *r, const FileEntry *fe)
{
	if (copies_only(r, fe->id))
		return 0;
	if (dumpset_remap(&r->ds, fe->id))
		return 0;	/* deleted: recreated from its ghost (ghost.c) */
	if (reg_proc_of_set(r, fe))
		return 0;	/* its process is made by this restore */
	if (fe->reg->has_proc_start && !strncmp(fe->reg->name, "/proc/", 6)) {
		int ret = check_outside_proc(fe->reg);

		if (ret)
			return ret;
	}
	return check_file_unchanged(r, fe->reg, check_level(r, fe->id));
}

int fifo_check(struct rst *r, const FileEntry *fe)
{
	return rst_reg_path(r, fe->fifo->regf_id) ? 0 :
	       fail(-EIO, "files.img: FIFO %u names no path", fe->id);
}

/* The job's terminal (no pty pair of the process: tty.c checks those). */
int term_check(struct rst *r, const FileEntry *fe)
{
	if (fe->tty->tty_info_id)
		return tty_check(r, fe);	/* a pty pair of the process */
	if (!r->o->shell_job)
		return fail(-EOPNOTSUPP, "the process had its terminal (%s) open: restore "
			    "with --shell-job to give it memdump's", fe->tty->name ?
			    fe->tty->name : "?");
	return 0;
}

static int open_reg(struct rst *r, const RegFileEntry *re)
{
	int flags = reopen_flags(re->flags) & ~O_ASYNC;
	char buf[PATH_MAX];
	int fd = re->deleted_name ? ghost_open_linked(r, re, flags)
		 : re->has_root_mntns && re->root_mntns ? mntns_root_open(r, re->name, flags)
		 : open(rst_reg_host_path(r, re->id, buf, sizeof(buf)), flags | O_CLOEXEC);

	if (fd < 0 && (re->deleted_name || (re->has_root_mntns && re->root_mntns)))
		return fd;
	if (fd < 0)
		return fail(-errno, "cannot open %s: %s", re->name, strerror(errno));
	if (re->pos && lseek(fd, re->pos, SEEK_SET) < 0 && errno != ESPIPE) {
		int err = -errno;

		close(fd);
		return fail(err, "cannot seek %s to %" PRIu64 ": %s", re->name, re->pos,
			    strerror(-err));
	}
	return fd;
}

/* Unread data of pipe/FIFO pipe_id: written into wfd. */
static int refill(struct rst *r, enum img_type t, uint32_t pipe_id, int wfd)
{
	struct image *img;
	PipeDataEntry *pde;
	char name[64];
	int ret;

	img_name(t, 0, name, sizeof(name));
	if (faccessat(r->ds.dirfd, name, F_OK, 0))
		return 0;
	ret = img_open(r->ds.dirfd, t, 0, &img);
	if (ret)
		return ret;
	/* one entry per pipe; a repeated entry (one per end) is the same data */
	bool done = false;

	while ((ret = img_read_msg(img, &pipe_data_entry__descriptor, (void **)&pde)) == 1) {
		uint32_t n = pde->bytes, id = pde->pipe_id;
		uint32_t size = pde->has_size ? pde->size : 0;
		char *buf;

		img_free(&pipe_data_entry__descriptor, pde);
		buf = malloc(n ? n : 1);
		if (!buf) {
			ret = -ENOMEM;
			break;
		}
		ret = img_read_raw(img, buf, n);
		if (!ret && id == pipe_id && !done) {
			int fl = fcntl(wfd, F_GETFL);

			done = true;
			if (size || n > 65536)
				fcntl(wfd, F_SETPIPE_SZ, MAX(n, size));

			fcntl(wfd, F_SETFL, fl | O_NONBLOCK);
			if (write(wfd, buf, n) != (ssize_t)n)
				ret = fail(-errno ?: -EIO, "cannot refill pipe %u with %u bytes: %s",
					   pipe_id, n, strerror(errno ?: EIO));
			fcntl(wfd, F_SETFL, fl);
		}
		free(buf);
		if (ret)
			break;
	}
	img_abort(img);
	return ret < 0 ? ret : 0;
}

static int reopen_as(int fd, int flags)
{
	char path[64];
	int n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = open(path, (flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY)) | O_CLOEXEC);
	return n < 0 ? -errno : n;
}

/*
 * The pipes memdump was started with on fds above 2, kept (as a copy) before
 * memdump opens anything: one may stand for a one-ended pipe of the dump.
 */
int scan_inherited(struct rst *r)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *de;
	int ret = 0;

	if (!dir)
		return fail(-errno, "cannot list memdump's fds: %s", strerror(errno));
	while (!ret && (de = readdir(dir))) {
		int n = atoi(de->d_name);
		struct inherited *x;
		struct stat st;

		if (n <= 2 || n == dirfd(dir) || fstat(n, &st) || !S_ISFIFO(st.st_mode))
			continue;
		x = realloc(r->inh, (r->nr_inh + 1) * sizeof(*x));
		if (!x) {
			ret = -ENOMEM;
			break;
		}
		r->inh = x;
		x[r->nr_inh].n = n;
		x[r->nr_inh].fd = fcntl(n, F_DUPFD_CLOEXEC, 3);
		x[r->nr_inh].flags = fcntl(n, F_GETFL);
		if (x[r->nr_inh].fd >= 0)
			r->nr_inh++;
	}
	closedir(dir);
	return ret;
}

void close_inherited(struct rst *r)
{
	for (size_t i = 0; i < r->nr_inh; i++)
		close(r->inh[i].fd);
	free(r->inh);
	r->inh = NULL;
	r->nr_inh = 0;
}

/* memdump's copy of the pipe it inherited as fd n, if it goes the way rd says. */
static int inherited_pipe(struct rst *r, int n, bool rd)
{
	for (size_t i = 0; i < r->nr_inh; i++) {
		int acc = r->inh[i].flags & O_ACCMODE;

		if (r->inh[i].n == n && (acc == O_RDWR || acc == (rd ? O_RDONLY : O_WRONLY)))
			return r->inh[i].fd;
	}
	return -1;
}

/* Which ends of pipe_id the process has, and on which fds. */
struct pipe_ends {
	bool rd, wr;
	bool low;		/* one of its fds is 0, 1 or 2 */
	int inherited;		/* memdump's inherited pipe standing for it, or -1 */
};

static bool is_pipe(const FileEntry *fe, uint32_t pipe_id)
{
	return fe && fe->type == FD_TYPES__PIPE && fe->pipe && fe->pipe->pipe_id == pipe_id;
}

static bool has_fd(const struct rst *r, uint32_t id)
{
	for (size_t i = 0; i < r->ds.nr_fds; i++)
		if (r->ds.fds[i]->id == id)
			return true;
	return false;
}

static void find_ends(struct rst *r, uint32_t pipe_id, struct pipe_ends *pe)
{
	struct dumpset *ds = &r->ds;

	memset(pe, 0, sizeof(*pe));
	pe->inherited = -1;
	for (size_t i = 0; i < ds->nr_fds; i++) {
		const FileEntry *fe = rst_file(r, ds->fds[i]->id);
		bool rd;

		if (!is_pipe(fe, pipe_id))
			continue;
		rd = (fe->pipe->flags & O_ACCMODE) == O_RDONLY;
		pe->rd |= rd;
		pe->wr |= !rd;
		pe->low |= ds->fds[i]->fd <= 2;
		if (pe->inherited < 0)
			pe->inherited = inherited_pipe(r, ds->fds[i]->fd, rd);
	}
	for (size_t i = 0; i < r->nr_descs; i++) {	/* ends only in flight (SCM_RIGHTS) */
		const FileEntry *fe = rst_file(r, r->descs[i].id);
		bool rd;

		if (!is_pipe(fe, pipe_id) || has_fd(r, fe->id))
			continue;
		rd = (fe->pipe->flags & O_ACCMODE) == O_RDONLY;
		pe->rd |= rd;
		pe->wr |= !rd;
	}
}

/* The memdump fd that becomes target fd n of a one-ended pipe. */
static int own_end(struct rst *r, const struct pipe_ends *pe, int n)
{
	int fd;

	if (n <= 2)
		return n;
	fd = inherited_pipe(r, n, pe->rd);
	if (fd >= 0)
		return fd;
	return pe->inherited >= 0 ? pe->inherited : pe->rd ? 0 : 1;
}

/*
 * One end only: the other end was outside the process (a shell pipeline, a
 * test harness). On a standard fd, like a terminal, it becomes memdump's own
 * fd of that number; above 2, the pipe memdump inherited on that number
 * (memdump ... 3<&- 3>&...), when it has one of the same direction.
 */
static int give_own_ends(struct rst *r, uint32_t pipe_id, const struct pipe_ends *pe)
{
	struct dumpset *ds = &r->ds;

	for (size_t i = 0; i < ds->nr_fds; i++) {
		const FileEntry *fe = rst_file(r, ds->fds[i]->id);
		struct rdesc *d = rst_desc(r, fe->id);
		int n;

		if (!is_pipe(fe, pipe_id) || d->fd >= 0)
			continue;
		n = own_end(r, pe, ds->fds[i]->fd);
		d->fd = fcntl(n, F_DUPFD_CLOEXEC, 3);
		if (d->fd < 0)
			return fail(-errno, "pipe %u: memdump has no fd %d to give: %s", pipe_id, n,
				    strerror(errno));
		pr_info("pipe %u of fd %u: memdump's fd %d\n", pipe_id, ds->fds[i]->fd, n);
	}
	return 0;
}

/* --inherit-fd fd[N]:pipe:[INO] (runc's for a container's stdio): N for pipe INO, or -1. */
static int inherit_fd_of(const struct rst *r, uint32_t pipe_id)
{
	char key[32];

	snprintf(key, sizeof(key), "pipe:[%u]", pipe_id);
	return rst_inherit_fd(r->o, key);
}

/* Every description of pipe_id the process holds is memdump's fd n, which goes the same way. */
static int give_inherited(struct rst *r, uint32_t pipe_id, int n)
{
	struct dumpset *ds = &r->ds;
	int acc = fcntl(n, F_GETFL);

	if (acc < 0)
		return fail(-errno, "--inherit-fd fd[%d]:pipe:[%u]: memdump has no fd %d: %s", n,
			    pipe_id, n, strerror(errno));
	acc &= O_ACCMODE;
	for (size_t i = 0; i < ds->nr_files; i++) {
		const FileEntry *fe = ds->files[i];
		struct rdesc *d = is_pipe(fe, pipe_id) ? rst_desc(r, fe->id) : NULL;
		int want = d ? fe->pipe->flags & O_ACCMODE : 0;

		if (!d)
			continue;
		if (acc != O_RDWR && acc != want)
			return fail(-EINVAL, "--inherit-fd fd[%d]:pipe:[%u]: fd %d is not open for "
				    "%s as the dumped pipe end was", n, pipe_id, n,
				    want == O_RDONLY ? "reading" : "writing");
		d->fd = fcntl(n, F_DUPFD_CLOEXEC, 3);
		if (d->fd < 0)
			return fail(-errno, "cannot copy fd %d: %s", n, strerror(errno));
	}
	pr_info("pipe %u: memdump's fd %d (--inherit-fd)", pipe_id, n);
	return 0;
}

/* One description of a new pipe p: the first of each end is p's, the others reopen it. */
static int open_end(const FileEntry *fe, int p[2], bool used[2])
{
	bool rd = (fe->pipe->flags & O_ACCMODE) == O_RDONLY;
	int fd, k = rd ? 0 : 1;

	if (!used[k]) {
		fd = fcntl(p[k], F_DUPFD_CLOEXEC, 3);
		fd = fd < 0 ? -errno : fd;
	} else {
		fd = reopen_as(p[k], rd ? O_RDONLY : O_WRONLY);
	}
	used[k] = true;
	if (fd < 0)
		return fail(fd, "cannot open pipe %u: %s", fe->pipe->pipe_id, strerror(-fd));
	if (fcntl(fd, F_SETFL, fe->pipe->flags & (O_NONBLOCK | O_DIRECT)) < 0) {
		int err = errno;

		close(fd);
		return fail(-err, "cannot set the flags of pipe %u: %s", fe->pipe->pipe_id,
			    strerror(err));
	}
	return fd;
}

/*
 * Both ends of pipe_id: a new pipe, refilled, for every description of it.
 * A one-ended pipe on fds above 2 with nothing inherited is a new pipe too:
 * its other end is nowhere (a reader sees the saved data then EOF, a writer
 * gets EPIPE).
 */
static int open_pipe(struct rst *r, uint32_t pipe_id)
{
	struct dumpset *ds = &r->ds;
	struct pipe_ends pe;
	int p[2] = { -1, -1 }, ret;
	bool used[2] = { false, false };

	if (inherit_fd_of(r, pipe_id) >= 0)
		return give_inherited(r, pipe_id, inherit_fd_of(r, pipe_id));
	find_ends(r, pipe_id, &pe);
	if (pe.rd != pe.wr && tree_has_pipe(r, pipe_id))
		pe.rd = pe.wr = true;	/* its other end is in another process of the tree */
	if (pe.rd != pe.wr && (pe.low || pe.inherited >= 0))
		return give_own_ends(r, pipe_id, &pe);
	if (pe.rd != pe.wr)
		pr_warn("pipe %u: its other end was outside the process; it is now nowhere "
			"(%s)\n", pipe_id, pe.rd ? "reads end after the saved data" : "writes fail");
	if (tree_pipe_get(r, pipe_id, p)) {	/* an earlier process of the tree made it */
		ret = p[0] < 0 || p[1] < 0 ? fail(-errno, "cannot copy a pipe: %s", strerror(errno)) : 0;
	} else if (pipe2(p, O_CLOEXEC)) {
		return fail(-errno, "cannot create a pipe: %s", strerror(errno));
	} else {
		ret = refill(r, IMG_PIPES_DATA, pipe_id, p[1]);
		if (!ret)
			ret = tree_pipe_put(r, pipe_id, p);
	}
	for (size_t i = 0; !ret && i < ds->nr_files; i++) {
		const FileEntry *fe = ds->files[i];
		struct rdesc *d = is_pipe(fe, pipe_id) ? rst_desc(r, fe->id) : NULL;

		if (!d)
			continue;	/* another file, or no fd uses it */
		d->fd = open_end(fe, p, used);
		ret = d->fd < 0 ? d->fd : 0;
	}
	close(p[0]);
	close(p[1]);
	return ret;
}

int fifo_open(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	char buf[PATH_MAX];
	const char *path = rst_reg_host_path(r, fe->fifo->regf_id, buf, sizeof(buf));
	const FileEntry *re = rst_file(r, fe->fifo->regf_id);
	int helper, ret;

	/* O_RDWR never blocks: with it open, the real open does not block either */
	helper = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (helper < 0)
		return fail(-errno, "cannot open FIFO %s: %s", path, strerror(errno));
	/* one FIFO of several processes of a tree: its data goes in once */
	ret = tree_fifo_first(r, fe->fifo->pipe_id) ? refill(r, IMG_FIFO_DATA, fe->fifo->pipe_id,
							      helper) : 0;
	if (!ret) {
		d->fd = open(path, (re->reg->flags & ~(O_CREAT | O_EXCL | O_TRUNC)) | O_CLOEXEC |
				       O_NONBLOCK);
		if (d->fd < 0)
			ret = fail(-errno, "cannot open FIFO %s: %s", path, strerror(errno));
		else if (fcntl(d->fd, F_SETFL, re->reg->flags & O_NONBLOCK) < 0)
			ret = fail(-errno, "cannot set the flags of FIFO %s: %s", path,
				   strerror(errno));
	}
	close(helper);
	return ret;
}

static int open_tty(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	int n = -1;

	/* like criu --shell-job: memdump's own terminal, same direction */
	for (size_t i = 0; i < r->ds.nr_fds; i++)
		if (r->ds.fds[i]->id == fe->id && r->ds.fds[i]->fd <= 2) {
			n = r->ds.fds[i]->fd;
			break;
		}
	if (n < 0)
		n = (fe->tty->flags & O_ACCMODE) == O_RDONLY ? 0 : 1;
	d->fd = fcntl(n, F_DUPFD_CLOEXEC, 3);
	if (d->fd < 0)
		return fail(-errno, "terminal %s: memdump has no fd %d to give: %s",
			    fe->tty->name ? fe->tty->name : "?", n, strerror(errno));
	return tty_job_open(r, fe, n);	/* the job's termios, window size, foreground */
}

#define PROC_WAIT_MS	10000

/*
 * In the restored process, which is in its root and sees its PID
 * namespace's /proc by now (a root of its own: the init pivoted before any
 * process opens its files): the path as dumped, not under memdump's stage.
 */
int reg_proc_open_in_child(struct rst *r, const RegFileEntry *re)
{
	struct timespec pause_ms = { 0, 1000000 };
	const char *path = re->name;
	pid_t s = proccwd_is_fd(r, re->id) ? proccwd_fd_stand_in(r, re->id) : 0;
	int fd = -1;

	if (s < 0)
		return s;	/* a /proc file of a process gone: its PID for a moment */
	for (int waited = 0; waited < (s ? 1 : PROC_WAIT_MS); waited++) {
		fd = open(path, (reopen_flags(re->flags) & ~O_ASYNC) | O_CLOEXEC);
		if (fd >= 0 || errno != ENOENT)
			break;
		nanosleep(&pause_ms, NULL);	/* its process is being forked */
	}
	if (s > 0) {
		int err = errno;

		proccwd_fd_stand_in_end(s);	/* its /proc directory unhashed again */
		errno = err;
	}
	if (fd < 0)
		return -errno;
	if (re->pos && lseek(fd, re->pos, SEEK_SET) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

int reg_open(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	if (reg_proc_of_set(r, fe)) {
		d->fd = -1;	/* the restored process opens it (reg_proc_open_in_child) */
		return 0;
	}
	d->fd = open_reg(r, fe->reg);
	return d->fd < 0 ? d->fd : 0;
}

/* Every description of the pipe at once. */
int pipe_open(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	(void)d;
	return open_pipe(r, fe->pipe->pipe_id);
}

/* A pty end of the process (tty.c), or the job's terminal: memdump's. */
int term_open(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	return fe->tty->tty_info_id ? tty_open(r, fe, d) : open_tty(r, fe, d);
}

/* One open file description, by its kind (files/fd_kinds.c). */
static int open_desc(struct rst *r, struct rdesc *d)
{
	const FileEntry *fe = rst_file(r, d->id);
	const struct fd_kind *k = fe ? fd_kind_of_entry(fe) : NULL;

	if (!k)
		return fail(-EOPNOTSUPP, "file %u: unsupported type", d->id);
	return k->open(r, fe, d);
}

int open_fds(struct rst *r)
{
	struct dumpset *ds = &r->ds;
	int ret = 0;

	r->descs = calloc(ds->nr_files + 1, sizeof(*r->descs));
	r->fds = calloc(ds->nr_fds + 1, sizeof(*r->fds));
	if (!r->descs || !r->fds)
		return -ENOMEM;
	/* descriptions that some fd uses (not one shared with another process of the tree) */
	for (size_t i = 0; i < ds->nr_fds; i++) {
		if (rst_share_src(r, (int)ds->fds[i]->fd) >= 0 || rst_desc(r, ds->fds[i]->id))
			continue;
		r->descs[r->nr_descs].id = ds->fds[i]->id;
		r->descs[r->nr_descs++].fd = -1;
	}
	ret = sk_scm_descs(r);	/* files only in flight on a UNIX socket (SCM_RIGHTS) */
	for (size_t i = 0; !ret && i < r->nr_descs; i++)
		if (r->descs[i].fd < 0)
			ret = open_desc(r, &r->descs[i]);
	if (ret)
		return ret;
	for (size_t i = 0; i < ds->nr_fds; i++) {
		struct rfd *f = &r->fds[r->nr_fds++];
		const FileEntry *fe = rst_file(r, ds->fds[i]->id);

		int shared = rst_share_src(r, (int)ds->fds[i]->fd);

		if (shared >= 0)
			f->src = shared;
		else
			f->src = rst_desc(r, ds->fds[i]->id)->fd;
		if (shared < 0 && fe->type == FD_TYPES__TTY && !fe->tty->tty_info_id &&
		    ds->fds[i]->fd <= 2)
			f->src = ds->fds[i]->fd;	/* the shell's own fd of that number */
		f->target = ds->fds[i]->fd;
		f->id = ds->fds[i]->id;
		f->cloexec = ds->fds[i]->flags & FD_CLOEXEC;
		if (fe->type == FD_TYPES__PIDFD && fe->pidfd && fe->pidfd->nspid != -1)
			f->pidfd = fe->pidfd;	/* opened by the restored process (child.c) */
		if (shared < 0 && rst_share_late(r, (int)ds->fds[i]->fd))
			f->src = -1;	/* its owner's, inherited (tree_open_late) */
		else if (shared < 0)
			f->proc_reg = reg_proc_of_set(r, fe);	/* likewise */
		if (shared < 0 && fe->type == FD_TYPES__NS)
			f->nsf = fe->nsf;	/* likewise (nsfile.h) */
	}
	return tty_prepare_fg(r);	/* its terminal's foreground group, once in it */
}

/* The fown_entry of a file entry of the kinds that carry one restored, or NULL. */
static const FownEntry *entry_fown(const FileEntry *fe)
{
	if (!fe)
		return NULL;
	switch (fe->type) {
	case FD_TYPES__REG:
		return fe->reg ? fe->reg->fown : NULL;
	case FD_TYPES__PIPE:
		return fe->pipe ? fe->pipe->fown : NULL;
	case FD_TYPES__TTY:
		return fe->tty ? fe->tty->fown : NULL;
	case FD_TYPES__UNIXSK:
		return fe->usk ? fe->usk->fown : NULL;
	case FD_TYPES__INETSK:
		return fe->isk ? fe->isk->fown : NULL;
	case FD_TYPES__NETLINKSK:
		return fe->nlsk ? fe->nlsk->fown : NULL;
	case FD_TYPES__PACKETSK:
		return fe->psk ? fe->psk->fown : NULL;
	default:
		return NULL;
	}
}

/* The open flags of a file entry of those kinds, for O_ASYNC. */
static uint32_t entry_flags(const FileEntry *fe)
{
	switch (fe->type) {
	case FD_TYPES__REG:
		return fe->reg ? fe->reg->flags : 0;
	case FD_TYPES__PIPE:
		return fe->pipe ? fe->pipe->flags : 0;
	case FD_TYPES__TTY:
		return fe->tty ? fe->tty->flags : 0;
	case FD_TYPES__UNIXSK:
		return fe->usk ? fe->usk->flags : 0;
	case FD_TYPES__INETSK:
		return fe->isk ? fe->isk->flags : 0;
	case FD_TYPES__NETLINKSK:
		return fe->nlsk ? fe->nlsk->flags : 0;
	case FD_TYPES__PACKETSK:
		return fe->psk ? fe->psk->flags : 0;
	default:
		return 0;
	}
}

/*
 * O_ASYNC, set here on the fd's number: the kernel signals the fd number that
 * turned it on (si_fd), and an open() or memdump's number would not do. Turned
 * off first, so that F_SETFL starts it even when open() left the flag set.
 */
static int set_async(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_ASYNC) || fcntl(fd, F_SETFL, fl | O_ASYNC))
		return -errno;
	return 0;
}

/* An earlier fd of the list on the same description: it was given its owner. */
static bool seen_before(const struct rst *r, size_t i)
{
	for (size_t k = 0; k < i; k++)
		if (r->fds[k].id == r->fds[i].id)
			return true;
	return false;
}

/*
 * F_SETOWN_EX as the process that set it: the kernel records the caller's uid
 * and euid with the owner (they decide whom the signal may reach). This thread's
 * ids only (the raw syscall), put back after; so is its dumpable flag.
 */
static int set_owner(int fd, const FownEntry *w)
{
	struct f_owner_ex ex = { .type = (int)w->pid_type, .pid = (pid_t)w->pid };
	uid_t ru, eu, su;
	int dumpable = prctl(PR_GET_DUMPABLE), err = 0;

	if (getresuid(&ru, &eu, &su) || syscall(SYS_setresuid, w->uid, w->euid, -1))
		return -errno;
	if (fcntl(fd, F_SETOWN_EX, &ex))
		err = -errno;
	if (syscall(SYS_setresuid, ru, eu, su))
		err = err ?: -errno;
	if (dumpable >= 0)
		prctl(PR_SET_DUMPABLE, dumpable);
	return err;
}

int files_fown_in_child(struct rst *r, char *msg, size_t len)
{
	for (size_t i = 0; i < r->nr_fds; i++) {
		const FileEntry *fe = rst_file(r, r->fds[i].id);
		const FownEntry *w = entry_fown(fe);
		int fd = r->fds[i].target, err = 0;

		if (!w || seen_before(r, i) || rst_share_src(r, fd) >= 0 || rst_share_late(r, fd))
			continue;	/* another's description: its owner sets them, after its lease */
		if (entry_flags(fe) & O_ASYNC)
			err = set_async(fd);
		if (err) {
			snprintf(msg, len, "cannot set O_ASYNC on fd %d: %s", fd, strerror(-err));
			return err;
		}
		if (!w->signum && !w->pid)
			continue;
		if (w->signum && fcntl(fd, F_SETSIG, (int)w->signum))
			err = -errno;
		if (!err && w->pid)
			err = set_owner(fd, w);
		if (err) {
			snprintf(msg, len, "cannot give fd %d its SIGIO owner (pid %u, signal %u): %s",
				 fd, w->pid, w->signum, strerror(-err));
			return err;
		}
	}
	return 0;
}
