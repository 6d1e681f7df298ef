/*
 * Open files: the target's fds and the files its mappings, exe, cwd and root
 * name. Kinds memdump cannot restore yet (sockets, eventfd, epoll, ...) are
 * refused at dump time, naming the fd, so that no dump is made that cannot be
 * restored.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/kcmp.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "files/fd_kinds.h"
#include "files/proccwd.h"
#include "files/files.h"
#include "files/ghost.h"
#include "files/opath.h"
#include "ns/mntns.h"
#include "ns/mqueue.h"
#include "image/image.h"
#include "kernel_uapi.h"
#include "log.h"
#include "proc.h"
#include "ctx/proc_tree.h"
#include "ns/pidns.h"
#include "mem/shmem.h"
#include "net/sock.h"
#include "files/tty.h"
#include "evloop/iouring.h"
#include "evloop/uffd.h"

#include "files.pb-c.h"
#include "mem/pages.h"
#include "files/sockets.h"
#include "unix/sk_unix.h"


static struct file_desc *new_desc(struct file_set *fs, enum file_kind kind)
{
	struct file_desc *n = realloc(fs->descs, (fs->nr_descs + 1) * sizeof(*n));

	if (!n)
		return NULL;
	fs->descs = n;
	n = &fs->descs[fs->nr_descs++];
	memset(n, 0, sizeof(*n));
	n->id = fs->nr_descs;
	n->kind = kind;
	return n;
}

int files_add_path(struct dump_ctx *d, const char *path, const struct stat *st, int flags,
		   const char *src)
{
	struct file_set *fs = &d->files;
	bool del = ghost_is_deleted(path);
	size_t n = strlen(path) - (del ? strlen(" (deleted)") : 0);
	struct file_desc *f;
	int ret;

	for (int i = 0; i < fs->nr_descs; i++) {
		f = &fs->descs[i];
		if (f->kind == FK_REG && f->st.st_dev == st->st_dev && f->st.st_ino == st->st_ino &&
		    !strncmp(f->path, path, n) && !f->path[n] && !!f->ghost_id == del)
			return f->id;
	}
	f = new_desc(&d->files, FK_REG);
	if (!f || !(f->path = strdup(path)))
		return -ENOMEM;
	f->st = *st;
	f->flags = flags;
	ret = del ? ghost_attach(d, f, src) : 0;
	return ret ? ret : f->id;
}

/* A cwd in the /proc directory of a process that exited (proccwd.h): path /proc/PID. */
static int add_proc_gone(struct dump_ctx *d, const char *name, const struct stat *st)
{
	pid_t gone = proccwd_pid(name);
	const char *why = proccwd_unsupported(d->pid, name, st);
	struct file_desc *f;

	if (why)
		return fail(-EOPNOTSUPP, "process %d: its cwd %s is %s", d->pid, name, why);
	f = new_desc(&d->files, FK_REG);
	if (!f || asprintf(&f->path, "/proc/%d", gone) < 0) {
		if (f)
			f->path = NULL;
		return -ENOMEM;
	}
	f->st = *st;
	f->flags = O_RDONLY | O_DIRECTORY;
	f->gone_pid = gone;
	pr_debug("cwd %s: the /proc directory of process %d, which exited", name, gone);
	return f->id;
}

int files_id_of_proc_link(struct dump_ctx *d, const char *link)
{
	char proc[64], path[PATH_MAX];
	struct stat st;
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/%d/%s", d->pid, link);
	n = readlink(proc, path, sizeof(path) - 1);
	if (n < 0 || stat(proc, &st))
		return fail(-errno, "cannot read %s: %s", proc, strerror(errno));
	path[n] = 0;
	if (!strcmp(link, "cwd") && proccwd_pid(path))
		return add_proc_gone(d, path, &st);
	return files_add_path(d, path, &st, O_RDONLY | (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0),
			      proc);
}

/* pos and flags of an fdinfo text */
static void fdinfo_pos_flags(const char *info, uint64_t *pos, uint32_t *flags)
{
	const char *v = proc_line_after(info, "pos:");

	if (v)
		*pos = strtoull(v, NULL, 10);
	v = proc_line_after(info, "flags:");
	if (v)
		*flags = strtoul(v, NULL, 8);
}

static int read_fdinfo(pid_t pid, int fd, uint64_t *pos, uint32_t *flags)
{
	char *info = NULL;
	ssize_t n = proc_fdinfo(pid, fd, &info);

	if (n < 0) {
		errno = -n;
		return n;
	}
	fdinfo_pos_flags(info, pos, flags);
	free(info);
	return 0;
}

/* An earlier fd of the same open file description (dup), by kcmp. */
static int same_description(struct dump_ctx *d, int fd)
{
	struct file_set *fs = &d->files;

	for (int i = 0; i < fs->nr_fds; i++)
		if (syscall(SYS_kcmp, d->pid, d->pid, KCMP_FILE, fs->fds[i].fd, fd) == 0)
			return fs->fds[i].id;
	return 0;
}

static bool is_tty(const struct stat *st)
{
	unsigned maj = major(st->st_rdev);

	return S_ISCHR(st->st_mode) && (maj == 136 || maj == 4 || maj == 5);
}

#ifndef F_GETOWNER_UIDS
#define F_GETOWNER_UIDS	17
#endif

int fd_owner_read(pid_t pid, int fd, struct fd_owner *o)
{
	int pidfd = syscall(SYS_pidfd_open, pid, 0), copy, err = 0;
	struct f_owner_ex ex = { 0 };
	uid_t uids[2] = { 0, 0 };
	int sig;

	memset(o, 0, sizeof(*o));
	copy = pidfd < 0 ? -1 : syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	if (copy < 0)
		err = -errno;
	if (pidfd >= 0)
		close(pidfd);
	if (err)
		return err;
	sig = fcntl(copy, F_GETSIG);
	if (sig < 0 || fcntl(copy, F_GETOWN_EX, &ex) ||
	    (ex.pid && fcntl(copy, F_GETOWNER_UIDS, uids)))
		err = -errno;
	close(copy);
	if (err)
		return err;
	*o = (struct fd_owner){ uids[0], uids[1], sig, ex.type, ex.pid };
	return 0;
}

bool fd_owner_carried(const struct stat *st, const char *link)
{
	return (S_ISREG(st->st_mode) && link[0] == '/') || S_ISSOCK(st->st_mode) || is_tty(st) ||
	       (S_ISFIFO(st->st_mode) && !strncmp(link, "pipe:", 5));
}

/*
 * Is process owner (a TGID) one restore has made when it gives pid its fds: pid
 * itself, its parent or a child of it in the dumped tree?
 */
static bool owner_made(pid_t pid, const struct proc_tree *tree, pid_t owner)
{
	if (owner == pid)
		return true;
	for (int i = 0; tree && i < tree->n; i++)
		if (tree->procs[i].pid == owner)
			return tree->procs[i].ppid == pid || owner == proc_ppid(pid);
	return false;
}

const char *fd_owner_problem(pid_t pid, const struct proc_tree *tree, const struct fd_owner *w)
{
	if (!w->pid)
		return NULL;
	switch (w->pid_type) {
	case F_OWNER_TID:
		if (proc_tgid(w->pid) != (pid_t)w->pid)
			return "a thread that is not a main thread";
		/* fallthrough */
	case F_OWNER_PID:
		return owner_made(pid, tree, w->pid) ? NULL : "a process that is not the fd's own, "
		       "its parent or a child of it in the dump";
	case F_OWNER_PGRP:
		return "a process group, which memdump does not restore as an owner yet";
	}
	return "an owner of an unknown kind";
}

void fd_owner_fill(void *e, const struct fd_owner *o)
{
	FownEntry *f = e;

	f->uid = o->uid;
	f->euid = o->euid;
	f->signum = o->signum;
	f->pid_type = o->pid_type;
	f->pid = o->pid;
}

static bool is_other_proc_file(pid_t pid, const char *link)
{
	char self[32];
	int n = snprintf(self, sizeof(self), "/proc/%d/", pid);

	return !strncmp(link, "/proc/", 6) && link[6] >= '0' && link[6] <= '9' &&
	       strncmp(link, self, n);
}

/* The start time of process n of the /proc that holder sees (through its root), 0 if none. */
static uint64_t seen_proc_start(pid_t holder, long n)
{
	char path[96];
	struct proc_stat ps;

	snprintf(path, sizeof(path), "/proc/%d/root/proc/%ld/stat", holder, n);
	return proc_read_stat_path(path, &ps) ? 0 : ps.start_time;
}

/* Is tree process t the process of start time start that its namespace or memdump calls n? */
static bool tree_proc_is(const struct tree_proc *t, long n, uint64_t start)
{
	struct proc_stat ps;

	if (t->state == 'Z' || (t->pid != n && pidns_inner(t->pid) != n))
		return false;
	return !proc_read_stat(t->pid, &ps) && ps.start_time == start;
}

/*
 * A /proc/PID/... file of a live process of the dumped tree: restore gives
 * that process its PID again, and the fd's owner opens the file once the
 * process exists (files_restore.c). PID is as the /proc the holder sees
 * names it: memdump's, or one of the tree's PID namespace, where it is the
 * PID there (the process with that PID there and the same start time).
 */
static bool proc_file_of_tree(pid_t holder, const struct proc_tree *tree, const char *link)
{
	char *end;
	long n = strtol(link + 6, &end, 10);
	uint64_t start;

	if (!tree || *end != '/' || n <= 0)
		return false;
	start = pidns_own(holder) ? seen_proc_start(holder, n) : 0;
	for (int i = 0; i < tree->n; i++)
		if (start ? tree_proc_is(&tree->procs[i], n, start)
			  : tree->procs[i].pid == n && tree->procs[i].state != 'Z')
			return true;
	return false;
}

/*
 * The start time of the process outside the dump whose /proc/PID/... file
 * link is, 0 if it cannot be read: restore opens the file again by path
 * only if PID is still that process (files_restore.c). A holder in a PID
 * namespace must see memdump's /proc (the same process there), as restore
 * checks it in memdump's.
 */
static uint64_t outside_proc_start(pid_t holder, const char *link)
{
	struct proc_stat ps;
	char *end;
	long n = strtol(link + 6, &end, 10);

	if (*end != '/' || n <= 0 || proc_read_stat((pid_t)n, &ps))
		return 0;
	if (pidns_own(holder) && seen_proc_start(holder, n) != ps.start_time)
		return 0;
	return ps.start_time;
}

/* What an anonymous-inode file of no kind in the table (fd_kinds.c) is. */
static const char *anon_unsupported(const char *link)
{
	static const struct { const char *link, *what; } names[] = {
		{ "anon_inode:bpf", "a BPF object" },
		{ "anon_inode:[perf_event]", "a perf event" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strncmp(link, names[i].link, strlen(names[i].link)))
			return names[i].what;
	return "an anonymous-inode file of a kind memdump does not know";
}

/*
 * Whether an fd is of a kind memdump cannot dump; if so, what it is, in
 * why. Used before the freeze (refuse.c, to list every refused fd at once)
 * and again while frozen.
 */
/*
 * A terminal is the job's controlling terminal, given back on restore as
 * the restoring shell's (--shell-job); any other one is refused.
 */
static const char *tty_unsupported(const struct fd_policy *p, int fd, const struct stat *st,
				   char *buf, size_t len)
{
	struct proc_stat ps;
	unsigned maj, min;
	bool ctty, external = false;
	const char *why;

	if (tty_is_pty(st)) {
		const char *w = tty_pty_unsupported(p, fd, st, &external, buf, len);

		if (w || !external)
			return w;	/* a pair in the process (tty.c) */
	}
	if (tty_devtty_of_pair(p, st, &why, buf, len))
		return why;	/* /dev/tty of a pair of the dump (tty.c) */
	if (tty_devtty_of_dev(p, st))
		return "/dev/tty of a controlling terminal that is a console, virtual terminal or "
		       "serial port (memdump opens /dev/tty again for a pseudo-terminal's only)";
	if (tty_dev_type(st)) {
		bool job;
		const char *w = tty_dev_unsupported(p, fd, st, &job, buf, len);

		if (w || !job)
			return w;	/* a console, vt or serial port, opened again (tty_dev.c) */
	}
	if (proc_read_stat(p->pid, &ps))
		return "a terminal of a process memdump cannot read";
	maj = (ps.tty_nr >> 8) & 0xfff;
	min = (ps.tty_nr & 0xff) | ((ps.tty_nr >> 12) & 0xfff00);
	ctty = ps.tty_nr && (st->st_rdev == makedev(maj, min) || st->st_rdev == makedev(5, 0));
	if (!ctty)
		return "a terminal other than the job's controlling terminal (a pseudo-terminal "
		       "slave is dumped with its master only)";
	if (!p->shell_job)
		return "the job's controlling terminal: dump with --shell-job to have restore "
		       "give it the restoring shell's";
	return NULL;
}

/* Filesystems whose files are no paths to open again: what they are, or NULL. */
static const char *special_fs(pid_t pid, int fd)
{
	static const struct { long magic; const char *what; } kinds[] = {
		{ 0x42494e4d, "a binfmt_misc file" },			/* BINFMTFS_MAGIC */
		{ 0x64626720, "a debugfs file" },			/* DEBUGFS_MAGIC */
		{ 0x74726163, "a tracefs file" },			/* TRACEFS_MAGIC */
		{ 0xcafe4a11, "a BPF filesystem object" },		/* BPF_FS_MAGIC */
	};
	char path[64];
	struct statfs sf;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	if (statfs(path, &sf))
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if ((long)sf.f_type == kinds[i].magic)
			return kinds[i].what;
	return NULL;
}

bool fd_unsupported(const struct fd_policy *p, int fd, const char *link, const struct stat *st,
		    char *why, size_t len)
{
	return fd_unsupported_as(p, fd, link, st, opath_fd(p->pid, fd), why, len);
}

bool fd_unsupported_as(const struct fd_policy *p, int fd, const char *link, const struct stat *st,
		       bool opath, char *why, size_t len)
{
	pid_t pid = p->pid, gone;
	const char *w = NULL;
	char buf[256];
	const struct fd_kind *k = opath ? NULL : fd_kind_of_fd(pid, fd, link, st);

	if (k)		/* a kind with a home of its own; sockets: net/sockets.c decides */
		return k->unsupported && k->unsupported(p, fd, link, st, why, len);
	if (opath && (w = opath_unsupported(link, st)))
		;
	else if (!strcmp(link, "anon_inode:[io_uring]")) {
		/* made again by the restorer blob, or refused with what it holds (evloop/iouring.c) */
		return iouring_unsupported(pid, fd, why, len);
	} else if (!strcmp(link, "anon_inode:[userfaultfd]")) {
		/* made again by the restorer blob, or refused with what it holds (evloop/uffd.c) */
		return uffd_unsupported(pid, fd, p->tracked, why, len);
	} else if (!strncmp(link, "anon_inode:", 11))
		w = anon_unsupported(link);
	else if (link[0] != '/' && !S_ISFIFO(st->st_mode))
		w = "an object with no path, which a restore cannot open";
	else if (!opath && is_tty(st))
		w = tty_unsupported(p, fd, st, buf, sizeof(buf));
	else if (!opath && (S_ISBLK(st->st_mode) || !(S_ISFIFO(st->st_mode) || S_ISREG(st->st_mode) ||
						     S_ISDIR(st->st_mode) || S_ISCHR(st->st_mode))))
		w = "a block device or unknown file";
	else if ((w = special_fs(pid, fd)))
		;
	else if (S_ISREG(st->st_mode) && !strcmp(link, "/dev/zero (deleted)"))
		return false;	/* shared anonymous memory, dumped as memory (shmem.c) */
	else if ((gone = pidns_gone_proc(pid, fd, link)))
		w = proccwd_fd_unsupported(gone, link);
	else if (ghost_is_deleted(link))
		return ghost_unsupported(pid, link, st, p->ghost_limit, why, len);
	else if (is_other_proc_file(pid, link) && !proc_file_of_tree(pid, p->tree, link) &&
		 !outside_proc_start(pid, link))
		w = pidns_own(pid) ? "a /proc file of a process outside the dump that memdump's "
				     "/proc does not show as the same process, or not at all"
				   : "a /proc file of a process outside the dump that memdump cannot "
				     "read the start time of";
	if (w)
		snprintf(why, len, "%s", w);
	return w != NULL;
}

static int refuse_fd(pid_t pid, int fd, const char *link, const char *what)
{
	return fail(-EOPNOTSUPP, "process %d: fd %d (%s) is %s, which memdump cannot dump yet",
		    pid, fd, link, what);
}

/* A new description of kind k's, with the file's stat and open flags. */
static struct file_desc *kind_desc(struct dump_ctx *d, const struct fd_kind *k,
				   const struct stat *st, uint32_t flags)
{
	struct file_desc *f = new_desc(&d->files, k->kind);

	if (f) {
		f->st = *st;
		f->flags = flags & ~O_CLOEXEC;
	}
	return f;
}

/* An fd of a kind with a home of its own (evloop/, net/, ns/: fd_kinds.c). */
static int describe_kind(struct dump_ctx *d, const struct fd_kind *k, int fd, const char *link,
			 const struct stat *st, uint32_t flags)
{
	struct file_desc *f = kind_desc(d, k, st, flags);
	int ret;

	if (!f)
		return -ENOMEM;
	ret = k->collect(d, fd, link, f);
	return ret ? ret : f->id;
}

static int describe_fd(struct dump_ctx *d, int fd, const char *link, const struct stat *st,
		       uint32_t flags, uint64_t pos)
{
	struct file_set *fs = &d->files;
	const struct fd_kind *k;
	struct file_desc *f;
	enum file_kind kind;
	char why[512], proc[64];
	const char *dw;
	bool opath = flags & O_PATH;

	if (fd_unsupported_as(&d->policy, fd, link, st, opath, why, sizeof(why)))
		return refuse_fd(d->pid, fd, link, why);
	k = opath ? NULL : fd_kind_of_fd(d->pid, fd, link, st);
	if (k)
		return describe_kind(d, k, fd, link, st, flags);
	if (opath)
		kind = FK_REG;	/* whatever its path names (opath.h) */
	else if (S_ISFIFO(st->st_mode))
		kind = !strncmp(link, "pipe:", 5) ? FK_PIPE : FK_FIFO;
	else if (is_tty(st))
		kind = FK_TTY;
	else
		kind = FK_REG;
	if (opath)
		;
	else if (!strncmp(link, "/memfd:", 7)) {
		int ret = shmem_add_memfd_fd(d, fd, link);

		if (ret)
			return ret;
		kind = FK_MEMFD;
	} else if (kind == FK_REG) {
		int ret = shmem_anon_fd_id(d, fd, link, st);	/* "/dev/zero (deleted)" */

		if (ret < 0)
			return ret;
		if (ret)
			kind = FK_MEMFD;
	}
	f = new_desc(&d->files, kind);
	if (!f)
		return -ENOMEM;
	f->st = *st;
	f->flags = flags & ~O_CLOEXEC;
	f->pos = pos;
	if (kind == FK_PIPE || kind == FK_FIFO || kind == FK_MEMFD)
		f->pipe_id = st->st_ino;
	if (kind != FK_PIPE && !(f->path = strdup(link)))
		return -ENOMEM;
	if (kind == FK_TTY && ((tty_is_pty(st) && (!tty_external(&d->policy, st) ||
						   tty_hung_slave(d->pid, fd, st))) ||
			       tty_devtty_of_pair(&d->policy, st, &dw, why, sizeof(why)))) {
		int ret = tty_collect(d, fd, f);

		return ret ? ret : f->id;
	}
	if (kind == FK_TTY && tty_dev_reopened(&d->policy, st)) {	/* console, vt, serial */
		int ret = tty_dev_collect(d, fd, f);

		return ret ? ret : f->id;
	}
	if (kind == FK_TTY && d->policy.shell_job) {	/* the job's terminal (tty_unsupported) */
		int ret = tty_collect_job(d, fd, f);

		return ret ? ret : f->id;
	}
	if (kind == FK_REG && (f->gone_pid = pidns_gone_proc(d->pid, fd, link))) {
		f->path[strcspn(f->path, " ")] = 0;	/* "/proc/N (deleted)": the path is /proc/N */
		return f->id;	/* made with a stand-in of PID N (proccwd.h) */
	}
	if (kind == FK_REG && is_other_proc_file(d->pid, link) &&
	    !proc_file_of_tree(d->pid, d->tree, link))
		f->proc_start = outside_proc_start(d->pid, link);	/* checked by fd_unsupported */
	snprintf(proc, sizeof(proc), "/proc/%d/fd/%d", d->pid, fd);
	if (kind == FK_REG && ghost_is_deleted(link)) {
		int ret = ghost_attach(d, f, proc);

		return ret ? ret : f->id;
	}
	if (kind == FK_FIFO) {
		int idx = f - fs->descs, id = files_add_path(d, link, st, flags, proc);

		if (id < 0)
			return id;
		fs->descs[idx].fifo_reg_id = id;
		return fs->descs[idx].id;
	}
	return f->id;
}

/*
 * The owner as process pid names it: in a PID namespace of its own (a tree's,
 * made again with the same PIDs inside), its PID there, which the restored
 * process gives F_SETOWN_EX (files_restore.c).
 */
static int owner_as_seen(pid_t pid, struct fd_owner *w)
{
	pid_t inner;

	if (!w->pid || !pidns_own(pid))
		return 0;
	inner = pidns_inner((pid_t)w->pid);
	if (inner < 0)
		return fail(inner, "process %d: the SIGIO owner %u of one of its fds is gone", pid,
			    w->pid);
	w->pid = (uint32_t)inner;
	return 0;
}

/* The SIGIO owner of new description id (fd), for the kinds that carry one. */
static int collect_owner(struct dump_ctx *d, int fd, const struct stat *st, const char *link,
			 int id)
{
	struct file_desc *f = NULL;
	const char *why;
	int ret;

	for (int i = 0; i < d->files.nr_descs && !f; i++)
		if (d->files.descs[i].id == id)
			f = &d->files.descs[i];
	if (!f || !fd_owner_carried(st, link) || (f->flags & O_PATH))
		return 0;	/* an O_PATH fd has no owner (F_GETOWN_EX: EBADF) */
	ret = fd_owner_read(d->pid, fd, &f->fown);
	if (ret)
		return fail(ret, "cannot read the owner (F_GETOWN_EX) of fd %d of process %d: %s",
			    fd, d->pid, strerror(-ret));
	/* checked before the freeze (refuse.c), and again as it is now */
	why = fd_owner_problem(d->pid, d->tree, &f->fown);
	if (why)
		return fail(-EOPNOTSUPP, "process %d: fd %d (%s) has a SIGIO owner (type %u, id %u) "
			    "set since the check: %s", d->pid, fd, link, f->fown.pid_type,
			    f->fown.pid, why);
	return owner_as_seen(d->pid, &f->fown);
}

/*
 * The process's own userfaultfd: in mm_entry.uffd, not in the fd tables (the
 * restorer blob makes it at its number in the restored mm: evloop/uffd.c).
 */
static int collect_uffd(struct dump_ctx *d, int fd)
{
	if (d->uffd)
		return fail(-EOPNOTSUPP, "process %d: fd %d is a second userfaultfd, which "
			    "memdump does not restore (one per process)", d->pid, fd);
	return uffd_collect(d->pid, fd, d->policy.tracked, &d->uffd);
}

/*
 * An io_uring ring: in mm_entry.iourings, not in the fd tables (the restorer
 * blob makes it at its number in the restored mm: evloop/iouring.c).
 */
static int collect_iouring(struct dump_ctx *d, int fd, uint32_t flags)
{
	struct IouringEntry **n = realloc(d->iourings, (d->nr_iourings + 1) * sizeof(*n));
	int ret;

	if (!n)
		return -ENOMEM;
	d->iourings = n;
	ret = iouring_collect(d->pid, fd, flags, &n[d->nr_iourings]);
	if (!ret)
		d->nr_iourings++;
	return ret;
}

static int collect_fd(struct dump_ctx *d, int fd)
{
	struct file_set *fs = &d->files;
	char proc[64], link[PATH_MAX], *info = NULL;
	uint32_t flags = 0;
	uint64_t pos = 0;
	struct fd_entry *e;
	struct stat st;
	ssize_t n;
	int id;

	snprintf(proc, sizeof(proc), "/proc/%d/fd/%d", d->pid, fd);
	n = readlink(proc, link, sizeof(link) - 1);
	if (n >= 0 && !stat(proc, &st)) {
		ssize_t in = proc_fdinfo(d->pid, fd, &info);	/* once: flags, pos, locks */

		if (in < 0) {
			errno = -in;
			n = -1;
		}
	} else {
		n = -1;
	}
	if (n < 0)
		return errno == ENOENT ? 0 : fail(-errno, "cannot inspect fd %d of process %d: %s",
						  fd, d->pid, strerror(errno));
	link[n] = 0;
	fdinfo_pos_flags(info, &pos, &flags);
	if (!strcmp(link, "anon_inode:[userfaultfd]")) {
		free(info);
		return collect_uffd(d, fd);
	}
	if (!strcmp(link, "anon_inode:[io_uring]")) {
		free(info);
		return collect_iouring(d, fd, flags);
	}
	id = same_description(d, fd);
	if (!id) {
		id = describe_fd(d, fd, link, &st, flags, pos);
		if (id > 0) {	/* any file can be flock()ed */
			int ret = locks_collect(d, fd, info);

			if (!ret)
				ret = collect_owner(d, fd, &st, link, id);
			if (ret) {
				free(info);
				return ret;
			}
		}
	}
	free(info);
	if (id < 0)
		return id;
	e = realloc(fs->fds, (fs->nr_fds + 1) * sizeof(*e));
	if (!e)
		return -ENOMEM;
	fs->fds = e;
	fs->fds[fs->nr_fds++] = (struct fd_entry){ .fd = fd, .id = id, .cloexec = flags & O_CLOEXEC };
	pr_debug("fd %d: %s (id %d)", fd, link, id);
	return 0;
}

/* Does memdump's fd hold a lock (flock, OFD: the description's own), as its fdinfo shows? */
static bool self_fd_locked(int fd)
{
	char path[64], line[256];
	bool locked = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return true;	/* cannot tell: refused */
	while (!locked && fgets(line, sizeof(line), f))
		locked = !strncmp(line, "lock:", 5);
	fclose(f);
	return locked;
}

/* What a file in flight carries that the message does not give back (owner, lock), or NULL. */
static const char *inflight_attached(int fd)
{
	struct f_owner_ex ex = { 0 };

	if (fcntl(fd, F_GETOWN_EX, &ex) || ex.pid)
		return "a file with a SIGIO owner no process of the dump holds";
	if (self_fd_locked(fd))
		return "a file with a lock (flock, OFD) no process of the dump holds";
	return NULL;
}

/*
 * Which file in flight (not the target's) memdump cannot dump; NULL: it can.
 * own_kind: of a kind that dumps from memdump's copy (an eventfd, timerfd,
 * signalfd, epoll set: fd_kinds.c).
 */
static const char *inflight_unsupported(int fd, const char *link, const struct stat *st,
					bool own_kind)
{
	if (own_kind)
		return inflight_attached(fd);
	if (S_ISSOCK(st->st_mode))
		return "a socket no process of the dump holds";
	if (!strncmp(link, "anon_inode:", 11))
		return "an anonymous-inode file no process of the dump holds";
	if (link[0] != '/' && !S_ISFIFO(st->st_mode))
		return "a namespace file or another object with no path";
	if (!strncmp(link, "/memfd:", 7) || ghost_is_deleted(link))
		return "a memfd or deleted file no process of the dump holds";
	if (is_tty(st))
		return "a terminal no process of the dump holds";
	if (!(S_ISFIFO(st->st_mode) || S_ISREG(st->st_mode) || S_ISDIR(st->st_mode) ||
	      S_ISCHR(st->st_mode)))
		return "a block device or unknown file";
	if (!strncmp(link, "/proc/", 6) || special_fs(getpid(), fd))
		return "a /proc or other special file";
	return inflight_attached(fd);
}

/* A new description of a kind of fd_kinds.c for a file only in flight, from memdump's copy. */
static int describe_inflight_kind(struct dump_ctx *d, const struct fd_kind *k, int fd,
				  const struct stat *st, uint32_t flags)
{
	struct file_desc *f = kind_desc(d, k, st, flags);
	int ret;

	if (!f)
		return -ENOMEM;
	f->inflight_fd = fd;
	ret = k->collect_inflight(d, fd, f);
	return ret ? ret : f->id;
}

/* A new description for a file only in flight: a pipe end, a FIFO, a regular file. */
static int describe_inflight(struct dump_ctx *d, int fd, const char *link, const struct stat *st,
			     uint32_t flags, uint64_t pos)
{
	bool pipe = S_ISFIFO(st->st_mode) && !strncmp(link, "pipe:", 5);
	struct file_desc *f = new_desc(&d->files, pipe ? FK_PIPE :
				       S_ISFIFO(st->st_mode) ? FK_FIFO : FK_REG);
	char proc[64];
	int idx, id;

	if (!f || (!pipe && !(f->path = strdup(link))))
		return -ENOMEM;
	f->st = *st;
	f->flags = flags & ~O_CLOEXEC;
	f->pos = pos;
	f->inflight_fd = fd;
	if (S_ISFIFO(st->st_mode))
		f->pipe_id = st->st_ino;
	if (f->kind != FK_FIFO)
		return f->id;
	idx = f - d->files.descs;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	id = files_add_path(d, link, st, flags, proc);
	if (id < 0)
		return id;
	d->files.descs[idx].fifo_reg_id = id;
	return d->files.descs[idx].id;
}

/*
 * A file in flight the target holds too: its description's id, unless the restored
 * process opens that description itself once it runs (a pidfd, a namespace file, a
 * /proc file): memdump would have nothing to send with the message.
 */
static int held_inflight(const struct file_set *fs, int id, uint64_t ino, const char *link)
{
	for (int i = 0; i < fs->nr_descs; i++) {
		const struct file_desc *f = &fs->descs[i];

		if (f->id != id)
			continue;
		if (f->kind == FK_PIDFD || f->kind == FK_NSFILE ||
		    (f->kind == FK_REG && f->path && !strncmp(f->path, "/proc/", 6)))
			return fail(-EOPNOTSUPP, "UNIX socket %lu has a file descriptor in flight "
				    "(SCM_RIGHTS), %s, that the restored process opens itself, "
				    "which memdump cannot send again", (unsigned long)ino, link);
		break;
	}
	return id;
}

int files_inflight_held(struct dump_ctx *d, int fd, uint64_t ino)
{
	const struct file_set *fs = &d->files;
	char proc[64], link[PATH_MAX] = "?";
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, link, sizeof(link) - 1);
	if (n > 0)
		link[n] = 0;
	for (int i = 0; i < fs->nr_fds; i++) {
		long same = syscall(SYS_kcmp, d->pid, getpid(), KCMP_FILE, fs->fds[i].fd, fd);

		if (same < 0)
			return fail(-errno, "UNIX socket %lu: cannot compare a file in flight with "
				    "the process's (kcmp): %s", (unsigned long)ino, strerror(errno));
		if (!same)
			return held_inflight(fs, fs->fds[i].id, ino, link);
	}
	return 0;
}

const char *files_unsendable(int fd)
{
	char proc[64], link[PATH_MAX];
	const struct fd_kind *k;
	struct stat st;
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, link, sizeof(link) - 1);
	if (n < 0 || fstat(fd, &st))
		return "a file memdump cannot inspect";
	link[n] = 0;
	k = fd_kind_of_fd(getpid(), fd, link, &st);
	if (k && k->kind == FK_PIDFD)
		return "a pidfd";
	if (k && k->kind == FK_NSFILE)
		return "a namespace file";
	if (!strncmp(link, "/proc/", 6))
		return "a /proc file";
	return NULL;
}

int files_add_inflight(struct dump_ctx *d, int fd, uint64_t ino)
{
	const struct fd_kind *k;
	char proc[64], link[PATH_MAX];
	int id;
	uint32_t flags = 0;
	uint64_t pos = 0;
	const char *why;
	struct stat st;
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, link, sizeof(link) - 1);
	if (n < 0 || fstat(fd, &st) || read_fdinfo(getpid(), fd, &pos, &flags))
		return fail(-errno, "UNIX socket %lu: cannot inspect a file in flight: %s",
			    (unsigned long)ino, strerror(errno));
	link[n] = 0;
	id = files_inflight_held(d, fd, ino);	/* one the target holds too */
	if (id)
		return id;
	k = fd_kind_of_fd(getpid(), fd, link, &st);
	why = inflight_unsupported(fd, link, &st, k && k->collect_inflight);
	if (!why && k && !k->collect_inflight)
		why = "a file of a kind the message alone holds (only a pipe end, a FIFO, a "
		      "regular file, an eventfd, timerfd, signalfd or epoll set can be)";
	if (why)
		return fail(-EOPNOTSUPP, "UNIX socket %lu has a file descriptor in flight "
			    "(SCM_RIGHTS) that is %s (%s), which memdump cannot dump",
			    (unsigned long)ino, why, link);
	if (k)		/* its kind's collector names what it refuses */
		return describe_inflight_kind(d, k, fd, &st, flags);
	return describe_inflight(d, fd, link, &st, flags, pos);
}

int collect_fds(struct dump_ctx *d)
{
	char path[64];
	struct dirent *de;
	int ret = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fd", d->pid);
	dir = opendir(path);
	if (!dir)
		return fail(-errno, "cannot list %s: %s", path, strerror(errno));
	while (!ret && (de = readdir(dir)))
		if (de->d_name[0] != '.' && !track_owns_fd(&d->track, atoi(de->d_name)))
			ret = collect_fd(d, atoi(de->d_name));	/* memdump's tracker: not the process's */
	closedir(dir);
	return ret ?: sk_scm_resolve(d);	/* files in flight: once every fd is known */
}

static FownEntry fown_zero = FOWN_ENTRY__INIT;

static void fill_reg(RegFileEntry *r, const struct file_desc *f)
{
	r->id = f->id;
	r->flags = f->flags;
	r->pos = f->pos;
	r->fown = &fown_zero;
	r->name = f->path;
	r->deleted_name = f->deleted_name;
	r->has_size = true;
	r->size = f->st.st_size;
	r->has_mode = true;
	r->mode = f->st.st_mode;
	r->has_dev = r->has_ino = r->has_mtime_ns = r->has_rdev = true;
	r->dev = f->st.st_dev;
	r->ino = f->st.st_ino;
	r->mtime_ns = f->st.st_mtim.tv_sec * 1000000000ULL + f->st.st_mtim.tv_nsec;
	r->rdev = f->st.st_rdev;
	r->has_proc_start = f->proc_start != 0;
	r->proc_start = f->proc_start;
}

/*
 * A tree's process in another mount namespace than the root's: is desc f,
 * its own (not a copy of an earlier process's), on a mount of the root's?
 * A file it only maps: does the root show it at its path, and its own root
 * not?
 */
static bool of_root_mntns(const struct dump_ctx *d, const struct file_desc *f)
{
	const struct file_set *fs = &d->files;

	if (!d->mnt_ns_id || !d->tree || f->kind != FK_REG || f->ghost_id)
		return false;
	for (int i = 0; i < fs->nr_fds; i++)
		if (fs->fds[i].id == f->id)
			return !fs->fds[i].share_pid &&
			       mntns_fd_of_root(d->pid, fs->fds[i].fd, d->tree->procs[0].pid);
	/* no fd: a mapped file (the program run before a pivot_root) */
	return f->path && mntns_path_of_root(d->pid, f->path, &f->st, d->tree->procs[0].pid);
}

static int write_file_entry(struct image *img, const struct file_desc *f, bool root_mntns)
{
	FileEntry fe = FILE_ENTRY__INIT;
	RegFileEntry reg = REG_FILE_ENTRY__INIT;
	PipeEntry pipe = PIPE_ENTRY__INIT;
	FifoEntry fifo = FIFO_ENTRY__INIT;
	TtyFileEntry tty = TTY_FILE_ENTRY__INIT;
	MemfdFileEntry memfd = MEMFD_FILE_ENTRY__INIT;
	FownEntry fown = FOWN_ENTRY__INIT;

	fd_owner_fill(&fown, &f->fown);
	fe.id = f->id;
	switch (f->kind) {
	case FK_REG:
		fe.type = FD_TYPES__REG;
		fill_reg(&reg, f);
		reg.has_root_mntns = reg.root_mntns = root_mntns;
		reg.fown = &fown;
		fe.reg = &reg;
		break;
	case FK_PIPE:
		fe.type = FD_TYPES__PIPE;
		pipe.id = f->id;
		pipe.pipe_id = f->pipe_id;
		pipe.flags = f->flags;
		pipe.fown = &fown;
		fe.pipe = &pipe;
		break;
	case FK_FIFO:
		fe.type = FD_TYPES__FIFO;
		fifo.id = f->id;
		fifo.pipe_id = f->pipe_id;
		fifo.has_regf_id = true;
		fifo.regf_id = f->fifo_reg_id;
		fe.fifo = &fifo;
		break;
	case FK_TTY:
		fe.type = FD_TYPES__TTY;
		tty.id = f->id;
		tty.tty_info_id = f->tty && !f->tty->job ? f->tty->info_id : 0;
		tty.flags = f->flags;
		tty.fown = &fown;
		tty.name = f->path;
		fe.tty = &tty;
		break;
	case FK_MEMFD:
		fe.type = FD_TYPES__MEMFD;
		memfd.id = f->id;
		memfd.flags = f->flags;
		memfd.pos = f->pos;
		memfd.fown = &fown_zero;
		memfd.inode_id = f->pipe_id;
		fe.memfd = &memfd;
		break;
	default:	/* a kind with a home of its own */
		return fd_kind_of_desc(f)->write(img, f);
	}
	return img_write_msg(img, &fe.base);
}

/* fdinfo's type: the kind's files.img type (a socket's by its family). */
static FdTypes fd_type(const struct file_desc *f)
{
	if (f->kind == FK_SOCKET)
		return sockets_fd_type(f);
	return fd_kind_of_desc(f)->type;
}

/* Copy a pipe's unread bytes without consuming them: tee, then splice. */
static int write_pipe_data(struct image *img, const struct file_desc *f, const char *proc)
{
	PipeDataEntry pde = PIPE_DATA_ENTRY__INIT;
	int src, tmp[2], ret = 0;
	ssize_t n = 0;

	src = open(proc, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (src < 0)
		return fail(-errno, "cannot open pipe %s: %s", proc, strerror(errno));
	if (pipe2(tmp, O_CLOEXEC)) {
		close(src);
		return -errno;
	}
	fcntl(tmp[1], F_SETPIPE_SZ, fcntl(src, F_GETPIPE_SZ));
	n = tee(src, tmp[1], 1 << 30, SPLICE_F_NONBLOCK);
	if (n < 0)
		n = 0;		/* EAGAIN: empty */
	pde.pipe_id = f->pipe_id;
	pde.bytes = n;
	pde.has_size = true;
	pde.size = fcntl(src, F_GETPIPE_SZ);
	ret = img_write_msg(img, &pde.base);
	while (!ret && n > 0) {
		char buf[65536];
		ssize_t r = read(tmp[0], buf, MIN((size_t)n, sizeof(buf)));

		if (r <= 0) {
			ret = -EIO;
			break;
		}
		ret = img_write_raw(img, buf, r);
		n -= r;
	}
	close(src);
	close(tmp[0]);
	close(tmp[1]);
	return ret;
}

/* Both ends of a pipe are two descriptions of one pipe: its data once. */
static bool pipe_seen_before(const struct file_set *fs, int i)
{
	for (int k = 0; k < i; k++)
		if (fs->descs[k].kind == fs->descs[i].kind && fs->descs[k].pipe_id == fs->descs[i].pipe_id)
			return true;
	return false;
}

static int write_pipes_data(struct dump_ctx *d, enum img_type type, enum file_kind kind)
{
	struct file_set *fs = &d->files;
	struct image *img;
	int ret = img_create(&d->dir, type, 0, &img);

	if (ret)
		return ret;
	for (int i = 0; i < fs->nr_descs && !ret; i++) {
		char proc[64] = "";

		if (fs->descs[i].kind != kind || pipe_seen_before(fs, i))
			continue;
		for (int j = 0; j < fs->nr_fds && !proc[0]; j++)
			if (fs->fds[j].id == fs->descs[i].id)
				snprintf(proc, sizeof(proc), "/proc/%d/fd/%d", d->pid, fs->fds[j].fd);
		if (!proc[0] && fs->descs[i].inflight_fd > 0)	/* only in flight: memdump's copy */
			snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fs->descs[i].inflight_fd);
		if (proc[0])
			ret = write_pipe_data(img, &fs->descs[i], proc);
	}
	if (ret) {
		img_abort(img);
		return ret;
	}
	return img_close(img);
}

static int write_fdinfo(struct dump_ctx *d)
{
	struct file_set *fs = &d->files;
	struct image *img;
	int ret = img_create(&d->dir, IMG_FDINFO, 1, &img);

	if (ret)
		return ret;
	for (int i = 0; i < fs->nr_fds && !ret && !d->kobj.files_shared; i++) {	/* its parent's */
		FdinfoEntry fe = FDINFO_ENTRY__INIT;

		fe.id = fs->fds[i].id;
		fe.fd = fs->fds[i].fd;
		fe.flags = fs->fds[i].cloexec ? FD_CLOEXEC : 0;
		fe.type = fd_type(&fs->descs[fs->fds[i].id - 1]);
		fe.has_share_pid = fe.has_share_fd = fs->fds[i].share_pid > 0;
		fe.share_pid = (uint32_t)fs->fds[i].share_pid;
		fe.share_fd = (uint32_t)fs->fds[i].share_fd;
		ret = img_write_msg(img, &fe.base);
	}
	if (ret) {
		img_abort(img);
		return ret;
	}
	return img_close(img);
}

int write_files(struct dump_ctx *d)
{
	struct file_set *fs = &d->files;
	struct image *img;
	int ret = img_create(&d->dir, IMG_FILES, 0, &img);

	if (ret)
		return ret;
	for (int i = 0; i < fs->nr_descs && !ret; i++)
		ret = write_file_entry(img, &fs->descs[i], of_root_mntns(d, &fs->descs[i]));
	if (ret) {
		img_abort(img);
		return ret;
	}
	ret = img_close(img);
	if (!ret)
		ret = write_fdinfo(d);
	if (!ret)
		ret = write_pipes_data(d, IMG_PIPES_DATA, FK_PIPE);
	if (!ret)
		ret = write_pipes_data(d, IMG_FIFO_DATA, FK_FIFO);
	if (!ret)
		ret = write_ghosts(d);
	if (!ret)
		ret = write_locks(d);
	if (!ret)
		ret = sockets_write_data(d);
	if (!ret)
		ret = tty_write(d);	/* last: the queued bytes are taken */
	return ret;
}

void files_free(struct file_set *fs)
{
	for (int i = 0; i < fs->nr_descs; i++) {
		free(fs->descs[i].path);
		free(fs->descs[i].deleted_name);
		if (fs->descs[i].kind == FK_EPOLL)
			epoll_state_free(&fs->descs[i].ep);
		if (fs->descs[i].kind == FK_INOTIFY)
			inotify_state_free(&fs->descs[i].ify);
		if (fs->descs[i].kind == FK_FANOTIFY)
			fanotify_state_free(&fs->descs[i].ffy);
		sk_state_free(fs->descs[i].sk);
		tty_state_free(fs->descs[i].tty);
	}
	ghosts_free(&fs->ghosts);
	locks_free(&fs->locks);
	free(fs->descs);
	free(fs->fds);
	fs->descs = NULL;
	fs->fds = NULL;
	fs->nr_descs = fs->nr_fds = 0;
}
