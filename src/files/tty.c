/*
 * Pseudo-terminal pairs held by the target (tty.h). Both ends must be in the
 * process: a master's slave elsewhere could not be joined again, and a
 * slave whose master is elsewhere is the job's terminal (--shell-job,
 * files.c). State is read through memdump's copy of the target's fd
 * (pidfd_getfd: the same open file description). The queued bytes cannot
 * be read without being taken: they are read last, while the target is
 * frozen, and put back (ptyq.c) when it runs on. A slave whose master a
 * runtime holds (a container's terminal: orphan_pts_master, --external
 * tty[..]) is dumped alone, its settings only.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <linux/magic.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "files/files.h"
#include "ctx/proc_tree.h"
#include "files/tty.h"
#include "image/image.h"
#include "log.h"
#include "proc.h"

#include "tty.pb-c.h"
#include "mem/pages.h"

#define PTY_SLAVE_MAJOR	136	/* UNIX98_PTY_SLAVE_MAJOR, 8 majors of 256 */
#define QUEUE_MAX	(1 << 20)

static bool is_master(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && st->st_rdev == makedev(5, 2);
}

static bool is_slave(const struct stat *st)
{
	unsigned maj = major(st->st_rdev);

	return S_ISCHR(st->st_mode) && maj >= PTY_SLAVE_MAJOR && maj < PTY_SLAVE_MAJOR + 8;
}

bool tty_is_pty(const struct stat *st)
{
	return is_master(st) || is_slave(st);
}

static uint32_t slave_index(const struct stat *st)
{
	return (major(st->st_rdev) - PTY_SLAVE_MAJOR) * 256 + minor(st->st_rdev);
}

static int copy_fd(pid_t pid, int fd)
{
	int pidfd = syscall(SYS_pidfd_open, pid, 0), n;

	if (pidfd < 0)
		return -errno;
	n = syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	n = n < 0 ? -errno : n;
	close(pidfd);
	return n;
}

static int master_index(pid_t pid, int fd, uint32_t *idx)
{
	int lfd = copy_fd(pid, fd), ret = 0;

	if (lfd < 0)
		return lfd;
	if (ioctl(lfd, TIOCGPTN, idx))
		ret = -errno;
	close(lfd);
	return ret;
}

static bool in_dev_pts(const struct stat *st)
{
	struct stat pts;

	return !stat("/dev/pts", &pts) && pts.st_dev == st->st_dev;
}

static bool on_devpts(int fd)
{
	struct statfs sfs;

	return !fstatfs(fd, &sfs) && sfs.f_type == DEVPTS_SUPER_MAGIC;
}

/*
 * The devpts path is on (a ptmx node when master, else its root directory):
 * its st_dev; -EXDEV when path is on another file system.
 */
static int devpts_at(const char *path, bool master, dev_t *pts)
{
	int fd = open(path, O_PATH | O_CLOEXEC | (master ? 0 : O_DIRECTORY)), ret = 0;
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || (master && !is_master(&st)))
		ret = -ENODEV;
	else if (!on_devpts(fd))
		ret = -EXDEV;
	else
		*pts = st.st_dev;
	close(fd);
	return ret;
}

/*
 * The devpts instance (its st_dev) a ptmx at in_root (a path under
 * /proc/PID/root) hands out ptys of, as the kernel finds it: the devpts the
 * node is on (pts/ptmx), else the devpts mounted at "pts" beside it
 * (/dev/ptmx).
 */
static int ptmx_devpts(const char *in_root, dev_t *pts)
{
	char dir[PATH_MAX + 80], *slash;
	int ret = devpts_at(in_root, true, pts);

	if (ret != -EXDEV)
		return ret;
	snprintf(dir, sizeof(dir), "%s", in_root);
	slash = strrchr(dir, '/');
	if (!slash)
		return -ENOENT;
	snprintf(slash, sizeof(dir) - (slash - dir), "/pts");
	ret = devpts_at(dir, false, pts);
	return ret == -EXDEV ? -ENODEV : ret;
}

/* The path fd of pid was opened by, under pid's root (/proc/PID/root/...): in_root. */
static int fd_path_in_root(pid_t pid, int fd, char *link, size_t llen, char *in_root,
			   size_t rlen)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	n = readlink(path, link, llen - 1);
	if (n <= 0 || link[0] != '/')
		return -ENOENT;
	link[n] = 0;
	snprintf(in_root, rlen, "/proc/%d/root%s", pid, link);
	return 0;
}

/* The devpts instance of the master fd of pid: the one its ptmx path led to. */
static int master_pts(pid_t pid, int fd, dev_t *pts)
{
	char link[PATH_MAX], in_root[PATH_MAX + 64];
	struct stat st;
	int lfd = copy_fd(pid, fd), ret;

	if (lfd < 0)
		return lfd;
	ret = fstat(lfd, &st) ? -errno : 0;
	if (!ret && on_devpts(lfd)) {
		*pts = st.st_dev;
		close(lfd);
		return 0;
	}
	close(lfd);
	if (!ret)
		ret = fd_path_in_root(pid, fd, link, sizeof(link), in_root, sizeof(in_root));
	return ret ? ret : ptmx_devpts(in_root, pts);
}

/* A target fd on the master (or a slave) of pty idx of devpts pts, or -1. */
static int find_end(pid_t pid, bool master, dev_t pts, uint32_t idx)
{
	char path[64];
	struct dirent *de;
	int found = -1;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	dir = opendir(path);
	while (dir && found < 0 && (de = readdir(dir))) {
		int fd = atoi(de->d_name);
		uint32_t n = ~0U;
		dev_t in = 0;
		struct stat st;

		snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
		if (de->d_name[0] == '.' || stat(path, &st))
			continue;
		if (master && is_master(&st) && !master_index(pid, fd, &n) && n == idx &&
		    !master_pts(pid, fd, &in) && in == pts)
			found = fd;
		else if (!master && is_slave(&st) && slave_index(&st) == idx && st.st_dev == pts)
			found = fd;
	}
	if (dir)
		closedir(dir);
	return found;
}

static bool in_tree(const struct proc_tree *t, pid_t pid)
{
	for (int i = 0; t && i < t->n; i++)
		if (t->procs[i].pid == pid)
			return true;
	return false;
}

/* A process outside the dump (pid, its tree) with an fd on pty idx (its slave, or master), or 0. */
static pid_t other_holder(const struct fd_policy *p, dev_t pts, uint32_t idx)
{
	DIR *proc = opendir("/proc");
	struct dirent *de;
	pid_t found = 0;

	while (proc && !found && (de = readdir(proc))) {
		pid_t other = atoi(de->d_name);
		int fd;

		if (other <= 0 || other == p->pid || other == getpid() || in_tree(p->tree, other))
			continue;	/* memdump holds its copies of the masters it read */
		fd = find_end(other, false, pts, idx);
		if (fd < 0)
			fd = find_end(other, true, pts, idx);
		if (fd >= 0)
			found = other;
	}
	if (proc)
		closedir(proc);
	return found;
}

static const char *shared_unsupported(const struct fd_policy *p, dev_t pts, uint32_t idx,
				      char *buf, size_t len)
{
	pid_t other = other_holder(p, pts, idx);
	struct proc_stat ps;

	if (!other)
		return NULL;
	snprintf(buf, len, "a pseudo-terminal (/dev/pts/%u) that process %d (%s) holds too", idx,
		 other, proc_read_stat(other, &ps) ? "?" : ps.comm);
	return buf;
}

static dev_t ctty_of(const struct proc_stat *ps)
{
	return makedev((ps->tty_nr >> 8) & 0xfff, (ps->tty_nr & 0xff) | ((ps->tty_nr >> 12) & 0xfff00));
}

/* A process of the dump (pid, or its tree) holding the master (or a slave) of pty idx? */
static bool end_dumped(const struct fd_policy *p, bool master, dev_t pts, uint32_t idx)
{
	if (find_end(p->pid, master, pts, idx) >= 0)
		return true;
	for (int i = 0; p->tree && i < p->tree->n; i++)
		if (!tree_is_zombie(&p->tree->procs[i]) &&
		    find_end(p->tree->procs[i].pid, master, pts, idx) >= 0)
			return true;
	return false;
}

static bool master_dumped(const struct fd_policy *p, dev_t pts, uint32_t idx)
{
	return end_dumped(p, true, pts, idx);
}

static bool ctty_slave(pid_t pid, struct stat *st);

/* Does pid lead its session, whose controlling terminal is /dev/pts/idx of devpts pts? */
static bool leads_on(pid_t pid, dev_t pts, uint32_t idx)
{
	struct proc_stat ps;
	struct stat st;

	return !proc_read_stat(pid, &ps) && ps.sid == pid && ctty_slave(pid, &st) &&
	       slave_index(&st) == idx && st.st_dev == pts;
}

/* A slave of pty idx in the dump: an fd, or a session leader's controlling terminal. */
static bool slave_dumped(const struct fd_policy *p, dev_t pts, uint32_t idx)
{
	if (end_dumped(p, false, pts, idx) || leads_on(p->pid, pts, idx))
		return true;
	for (int i = 0; p->tree && i < p->tree->n; i++)
		if (!tree_is_zombie(&p->tree->procs[i]) && leads_on(p->tree->procs[i].pid, pts, idx))
			return true;
	return false;
}

/* A slave whose master is outside the dump, declared a runtime's (struct tty_ext)? */
static bool is_orphan(const struct fd_policy *p, const struct stat *st)
{
	const struct tty_ext *e = &p->ext_tty;
	bool declared = e->any || (e->one && e->rdev == (uint32_t)st->st_rdev &&
				   e->dev == (uint32_t)st->st_dev);

	return is_slave(st) && declared && !master_dumped(p, st->st_dev, slave_index(st));
}

bool tty_external(const struct fd_policy *p, const struct stat *st)
{
	return is_slave(st) && !master_dumped(p, st->st_dev, slave_index(st)) && !is_orphan(p, st);
}

/*
 * Restore makes a new pair in the devpts the slave's path leads to in the
 * process's root (its ptmx beside it) and makes the session leader take it as
 * its controlling terminal again, before it forks the rest of its session.
 */
static const char *orphan_unsupported(const struct fd_policy *p, int fd, const struct stat *st,
				      char *buf, size_t len)
{
	char path[64], link[PATH_MAX], in_root[PATH_MAX + 64], *slash;
	uint32_t idx = slave_index(st);
	struct proc_stat ps;
	struct stat at;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", p->pid, fd);
	n = readlink(path, link, sizeof(link) - 1);
	link[n > 0 ? n : 0] = 0;
	snprintf(in_root, sizeof(in_root), "/proc/%d/root%s", p->pid, link);
	if (link[0] != '/' || stat(in_root, &at) || at.st_rdev != st->st_rdev ||
	    at.st_dev != st->st_dev)
		return "a pseudo-terminal slave (its master outside) whose path does not lead to "
		       "it in the process's root";
	slash = strrchr(in_root, '/');
	snprintf(slash, sizeof(in_root) - (slash - in_root), "/ptmx");
	if (stat(in_root, &at) || !is_master(&at) || at.st_dev != st->st_dev)
		return "a pseudo-terminal slave (its master outside) of a devpts without its ptmx";
	if (proc_read_stat(p->pid, &ps))
		return "a terminal of a process memdump cannot read";
	if (!ps.tty_nr || ctty_of(&ps) != st->st_rdev)
		return NULL;
	if (ps.tpgid != ps.sid)
		snprintf(buf, len, "the controlling terminal /dev/pts/%u, whose foreground process "
			 "group %d is not its session's (%d)", idx, ps.tpgid, ps.sid);
	else if (ps.sid != p->pid && !in_tree(p->tree, ps.sid))
		snprintf(buf, len, "the controlling terminal /dev/pts/%u of session %d, whose "
			 "leader is not dumped", idx, ps.sid);
	else
		return NULL;
	return buf;
}

/* A live process of the dump in session sid whose group is pgrp? */
static bool group_dumped(const struct fd_policy *p, pid_t sid, pid_t pgrp)
{
	for (int i = 0; p->tree && i < p->tree->n; i++) {
		const struct tree_proc *t = &p->tree->procs[i];

		if (!tree_is_zombie(t) && t->sid == sid && t->pgid == pgrp)
			return true;
	}
	return false;
}

/*
 * Restore makes a session leader's controlling terminal (the leader takes it
 * before it forks the rest of its session); in a tree, the process of the
 * foreground group sets it once it is in its group.
 */
static const char *ctty_unsupported(const struct fd_policy *p, const struct stat *st, char *buf,
				    size_t len)
{
	uint32_t idx = slave_index(st);
	struct proc_stat ps;

	if (proc_read_stat(p->pid, &ps))
		return "a terminal of a process memdump cannot read";
	if (!ps.tty_nr || ctty_of(&ps) != st->st_rdev)
		return NULL;
	if (ps.sid != p->pid && !in_tree(p->tree, ps.sid))
		snprintf(buf, len, "the controlling terminal /dev/pts/%u of session %d, whose "
			 "leader is not dumped (restore makes only a session leader's)", idx,
			 ps.sid);
	else if (ps.tpgid != ps.pgid && !group_dumped(p, ps.sid, ps.tpgid))
		snprintf(buf, len, "the controlling terminal /dev/pts/%u, whose foreground process "
			 "group %d is not the process's%s", idx, ps.tpgid,
			 p->tree ? " nor one of the dumped tree in its session" : "");
	else
		return NULL;
	return buf;
}

/* Does the master fd's path, in pid's root, lead to a ptmx of devpts pts (restore opens it)? */
static bool master_path_leads(pid_t pid, int fd, dev_t pts)
{
	char link[PATH_MAX], in_root[PATH_MAX + 64];
	dev_t at;

	return !fd_path_in_root(pid, fd, link, sizeof(link), in_root, sizeof(in_root)) &&
	       !ptmx_devpts(in_root, &at) && at == pts;
}

/* Is there a ptmx of devpts pts beside the slave fd's path (" (deleted)" off) in pid's root? */
static bool ptmx_beside(pid_t pid, int fd, dev_t pts)
{
	char link[PATH_MAX], in_root[PATH_MAX + 64], *slash;
	dev_t at;

	if (fd_path_in_root(pid, fd, link, sizeof(link), in_root, sizeof(in_root)))
		return false;
	slash = strrchr(in_root, '/');
	snprintf(slash, sizeof(in_root) - (slash - in_root), "/ptmx");
	return !ptmx_devpts(in_root, &at) && at == pts;
}

const char *tty_pty_unsupported(const struct fd_policy *p, int fd, const struct stat *st,
				bool *external, char *buf, size_t len)
{
	uint32_t idx;

	*external = false;
	if (is_master(st)) {
		dev_t pts;

		if (master_index(p->pid, fd, &idx) || master_pts(p->pid, fd, &pts))
			return "a pseudo-terminal master memdump cannot read (TIOCGPTN, its devpts)";
		if (!master_path_leads(p->pid, fd, pts))
			return "a pseudo-terminal master whose path does not lead to the ptmx of its "
			       "devpts in the process's root";
		if (slave_dumped(p, pts, idx))
			return shared_unsupported(p, pts, idx, buf, len);
		snprintf(buf, len, "a pseudo-terminal master whose slave /dev/pts/%u the process "
			 "does not hold%s", idx, p->tree ? " (nor any process of the tree)" : "");
		return buf;
	}
	if (tty_hung_slave(p->pid, fd, st))
		return tty_hung_unsupported(p, fd, st, buf, len);
	if (is_orphan(p, st))
		return orphan_unsupported(p, fd, st, buf, len);
	if (!in_dev_pts(st) && !master_dumped(p, st->st_dev, slave_index(st))) {
		snprintf(buf, len, "a pseudo-terminal slave whose master is outside the dump (a "
			 "runtime's terminal: dump with --external tty[%x:%x], or orphan_pts_master)",
			 (uint32_t)st->st_rdev, (uint32_t)st->st_dev);
		return buf;
	}
	if (!master_dumped(p, st->st_dev, slave_index(st))) {
		*external = true;	/* the job's terminal, or refused as such */
		return NULL;
	}
	if (shared_unsupported(p, st->st_dev, slave_index(st), buf, len))
		return buf;
	return ctty_unsupported(p, st, buf, len);
}

/* Is fd of pid a hung-up file (its ioctls fail with EIO)? */
static bool is_hung(pid_t pid, int fd)
{
	int lfd = copy_fd(pid, fd);
	struct kterm t;
	bool hung;

	if (lfd < 0)
		return false;
	hung = kterm_get(lfd, &t) == -EIO;
	close(lfd);
	return hung;
}

static bool link_deleted(pid_t pid, int fd)
{
	char path[64], link[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	n = readlink(path, link, sizeof(link) - 1);
	link[n > 0 ? n : 0] = 0;
	return n > 10 && !strcmp(link + n - 10, " (deleted)");
}

bool tty_hung_slave(pid_t pid, int fd, const struct stat *st)
{
	return is_slave(st) && is_hung(pid, fd);
}

/*
 * Its master closed: the kernel hung up every file of the slave and deleted
 * its node, no new file of it can be opened. The index stays taken until
 * the last of them is closed: no other process may hold one.
 */
const char *tty_hung_unsupported(const struct fd_policy *p, int fd, const struct stat *st,
				 char *buf, size_t len)
{
	if (!link_deleted(p->pid, fd))
		return "a pseudo-terminal slave hung up (vhangup) while its master is open";
	if (!ptmx_beside(p->pid, fd, st->st_dev))
		return "a hung-up pseudo-terminal slave whose devpts has no ptmx beside its path in "
		       "the process's root";
	return shared_unsupported(p, st->st_dev, slave_index(st), buf, len);
}

static bool is_devtty(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && st->st_rdev == makedev(5, 0);
}

/* A slave of device rdev that pid holds an fd of: its stat. */
static bool held_slave(pid_t pid, dev_t rdev, struct stat *st)
{
	char path[64];
	struct dirent *de;
	struct stat at;
	bool found = false;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	dir = opendir(path);
	while (dir && !found && (de = readdir(dir))) {
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, atoi(de->d_name));
		found = de->d_name[0] != '.' && !stat(path, &at) && is_slave(&at) &&
			at.st_rdev == rdev;
	}
	if (dir)
		closedir(dir);
	if (found)
		*st = at;
	return found;
}

/*
 * The process's controlling terminal, when it is a pty slave: its stat. Its
 * device number names no devpts: the slave of an fd of the process, else
 * /dev/pts/N in the process's root.
 */
static bool ctty_slave(pid_t pid, struct stat *st)
{
	struct proc_stat ps;
	char path[96];

	if (proc_read_stat(pid, &ps) || !ps.tty_nr)
		return false;
	st->st_mode = S_IFCHR;
	st->st_rdev = ctty_of(&ps);
	if (!is_slave(st))
		return false;
	if (held_slave(pid, ctty_of(&ps), st))
		return true;
	snprintf(path, sizeof(path), "/proc/%d/root/dev/pts/%u", pid, slave_index(st));
	return !stat(path, st) && st->st_rdev == ctty_of(&ps);
}

bool tty_devtty_of_pair(const struct fd_policy *p, const struct stat *st, const char **why,
			char *buf, size_t len)
{
	struct stat slave;

	*why = NULL;
	if (!is_devtty(st) || !ctty_slave(p->pid, &slave) || !master_dumped(p, slave.st_dev, slave_index(&slave)))
		return false;
	*why = ctty_unsupported(p, &slave, buf, len);
	return true;
}

static int refuse(struct dump_ctx *d, int fd, const struct tty_state *t, const char *what)
{
	return fail(-EOPNOTSUPP, "process %d: fd %d (pty %s /dev/pts/%u) %s, which memdump cannot "
		    "dump yet", d->pid, fd, t->master ? "master of" : "slave", t->index, what);
}

/* termios, locked termios, window size, lock, packet and exclusive modes of lfd. */
static int read_modes(int lfd, struct tty_state *t)
{
	int ret = kterm_get(lfd, &t->t);

	if (!ret)
		ret = kterm_get_locked(lfd, &t->locked);
	if (!ret && ioctl(lfd, TIOCGWINSZ, &t->ws))
		ret = -errno;
	if (!ret && ioctl(lfd, TIOCGEXCL, &t->excl))
		ret = -errno;
	if (!ret && t->master && (ioctl(lfd, TIOCGPKT, &t->pkt) || ioctl(lfd, TIOCGPTLCK, &t->lock)))
		ret = -errno;
	return ret;
}

static int check_modes(struct dump_ctx *d, int fd, int lfd, struct tty_state *t)
{
	int ldisc = -1;

	if (ioctl(lfd, TIOCGETD, &ldisc) || ldisc != 0)
		return refuse(d, fd, t, "has a line discipline other than N_TTY");
	if (t->pkt && (t->t.lflag & EXTPROC))
		return refuse(d, fd, t, "is in packet mode with EXTPROC");
	return 0;
}

/*
 * Input typed on a runtime's terminal and not read yet: it cannot be taken
 * without its master (which would put it back), so it is refused. A line
 * being typed in canonical mode (no newline yet) shows in no count: it stays
 * with the old terminal, as with CRIU.
 */
static int check_orphan_input(struct dump_ctx *d, int fd, int lfd, struct tty_state *t)
{
	char what[96];
	int n = 0;

	if (ioctl(lfd, TIOCINQ, &n) || n <= 0)
		return 0;
	snprintf(what, sizeof(what), "has %d bytes of input not read yet (its master is outside)",
		 n);
	return refuse(d, fd, t, what);
}

/* /dev/tty: the controlling terminal's index, its session and foreground group. */
static int collect_devtty(struct dump_ctx *d, struct tty_state *t)
{
	struct proc_stat ps;
	struct stat slave;

	if (!ctty_slave(d->pid, &slave) || proc_read_stat(d->pid, &ps))
		return fail(-EIO, "process %d: fd %d (/dev/tty): its controlling terminal is gone",
			    d->pid, t->fd);
	t->index = slave_index(&slave);
	t->info_id = TTY_CTTY_INFO_ID;
	t->devtty = true;
	t->sid = (uint32_t)ps.sid;
	t->pgrp = (uint32_t)ps.tpgid;
	return 0;
}

int tty_collect(struct dump_ctx *d, int fd, struct file_desc *f)
{
	struct tty_state *t = calloc(1, sizeof(*t));
	struct proc_stat ps;
	int lfd, ret;

	if (!t)
		return -ENOMEM;
	f->tty = t;
	t->fd = fd;
	t->local = -1;
	t->master = is_master(&f->st);
	if (is_devtty(&f->st))
		return collect_devtty(d, t);
	if (tty_hung_slave(d->pid, fd, &f->st)) {	/* no modes left to read */
		t->hung = true;
		t->index = slave_index(&f->st);
		t->info_id = t->index * 2 + 1;
		return 0;
	}
	lfd = syscall(SYS_pidfd_getfd, d->in.pidfd, fd, 0);
	if (lfd < 0)
		return fail(-errno, "cannot take pty fd %d of process %d: %s", fd, d->pid,
			    strerror(errno));
	ret = t->master ? (ioctl(lfd, TIOCGPTN, &t->index) ? -errno : 0) : 0;
	if (!t->master)
		t->index = slave_index(&f->st);
	if (!ret)
		ret = read_modes(lfd, t);
	if (ret) {
		close(lfd);
		return fail(ret, "cannot read pty fd %d of process %d: %s", fd, d->pid,
			    strerror(-ret));
	}
	ret = check_modes(d, fd, lfd, t);
	t->orphan = !t->master && is_orphan(&d->policy, &f->st);
	if (!ret && t->orphan)
		ret = check_orphan_input(d, fd, lfd, t);
	t->info_id = t->index * 2 + (t->master ? 2 : 1);
	if (!proc_read_stat(d->pid, &ps)) {
		t->ctty = !t->master && ps.tty_nr && ctty_of(&ps) == f->st.st_rdev;
		t->sid = t->ctty ? (uint32_t)ps.sid : 0;
		t->pgrp = t->ctty ? (uint32_t)ps.tpgid : 0;
	}
	if (t->master && !ret)
		t->local = lfd;
	else
		close(lfd);
	return ret;
}

int tty_collect_job(struct dump_ctx *d, int fd, struct file_desc *f)
{
	struct tty_state *t = calloc(1, sizeof(*t));
	struct proc_stat ps;
	int lfd, ret = 0;

	if (!t)
		return -ENOMEM;
	f->tty = t;
	t->fd = fd;
	t->local = -1;
	t->job = true;
	t->info_id = TTY_JOB_INFO_ID;
	lfd = syscall(SYS_pidfd_getfd, d->in.pidfd, fd, 0);
	if (lfd < 0)
		return fail(-errno, "cannot take terminal fd %d of process %d: %s", fd, d->pid,
			    strerror(errno));
	if (kterm_get(lfd, &t->t) || ioctl(lfd, TIOCGWINSZ, &t->ws))
		ret = fail(-errno, "cannot read the terminal of fd %d of process %d: %s", fd,
			   d->pid, strerror(errno));
	close(lfd);
	if (!ret && !proc_read_stat(d->pid, &ps)) {
		t->sid = (uint32_t)ps.sid;
		t->pgrp = (uint32_t)ps.tpgid;
	}
	return ret;
}

/* What the master's reader would get (the slave's output), packet status bytes off. */
static int read_output(struct dump_ctx *d, struct tty_state *t)
{
	int fl = fcntl(t->local, F_GETFL), ret = 0;
	char buf[4097];

	fcntl(t->local, F_SETFL, fl | O_NONBLOCK);
	for (;;) {
		ssize_t n = read(t->local, buf, sizeof(buf));
		size_t skip = t->pkt ? 1 : 0;
		char *m;

		if (n < 0 && (errno == EAGAIN || errno == EIO))
			break;
		if (n <= 0 || (t->pkt && buf[0]) || t->out_len + n > QUEUE_MAX) {
			ret = fail(n < 0 ? -errno : -EIO, "process %d: cannot read what pty master fd "
				   "%d holds: %s", d->pid, t->fd, n < 0 ? strerror(errno) :
				   "a packet status or too much data");
			break;
		}
		m = realloc(t->out, t->out_len + n);
		if (!m) {
			ret = -ENOMEM;
			break;
		}
		t->out = m;
		memcpy(t->out + t->out_len, buf + skip, n - skip);
		t->out_len += n - skip;
	}
	fcntl(t->local, F_SETFL, fl);
	return ret;
}

static int append_in(struct tty_state *t, const char *buf, size_t n)
{
	char *m = realloc(t->in, t->in_len + n + 1);

	if (!m || t->in_len + n > QUEUE_MAX)
		return -ENOMEM;
	t->in = m;
	memcpy(t->in + t->in_len, buf, n);
	t->in_len += n;
	return 0;
}

static bool ends_line(const struct kterm *t, const char *buf, ssize_t n)
{
	uint8_t c = buf[n - 1];

	return c == '\n' || (t->cc[VEOL] && c == t->cc[VEOL]) ||
	       ((t->lflag & IEXTEN) && t->cc[VEOL2] && c == t->cc[VEOL2]);
}

static int add_line(struct tty_state *t, bool eof)
{
	uint32_t *l = realloc(t->lines, (t->nr_lines + 1) * sizeof(*l));

	if (!l)
		return -ENOMEM;
	t->lines = l;
	l[t->nr_lines++] = (uint32_t)t->in_len << 1 | eof;
	return 0;
}

/*
 * Every byte the slave's reader would get. Canonical: whole lines, one read
 * each (one ending in no newline or EOL byte, or a read of 0, was ended by
 * an end-of-file), then, ICANON off a moment, the line being typed.
 */
static int read_input(int slave, struct tty_state *t)
{
	bool canon = t->t.lflag & ICANON;
	struct kterm raw = t->t, none = { 0 };
	char buf[4096];
	ssize_t n;
	int ret = 0;

	for (int i = 0; i < QUEUE_MAX / 16 && !ret; i++) {
		n = read(slave, buf, sizeof(buf));
		if (n < 0 || (n == 0 && !canon))
			break;
		ret = append_in(t, buf, n);
		if (!ret && canon)
			ret = add_line(t, !n || !ends_line(&t->t, buf, n));
	}
	if (ret || !canon)
		return ret;
	raw.lflag &= ~ICANON;
	raw.cc[VMIN] = 1;
	raw.cc[VTIME] = 0;
	ret = kterm_set_locked(slave, &none);
	if (!ret)
		ret = kterm_set(slave, &raw);
	while (!ret && (n = read(slave, buf, sizeof(buf))) > 0)
		ret = append_in(t, buf, n);
	if (kterm_set(slave, &t->t) || kterm_set_locked(slave, &t->locked))
		ret = ret ? ret : -errno;
	return ret;
}

static int read_queues(struct dump_ctx *d, struct tty_state *t)
{
	int slave, ret;

	t->taken = true;
	ret = read_output(d, t);
	if (ret)
		return ret;
	slave = pty_open_peer(t->local, O_RDWR | O_NONBLOCK);
	if (slave < 0)
		return fail(slave, "process %d: cannot open the slave of pty master fd %d: %s",
			    d->pid, t->fd, strerror(-slave));
	ret = read_input(slave, t);
	close(slave);
	if (ret)
		return fail(ret, "process %d: cannot read the input queued on /dev/pts/%u: %s",
			    d->pid, t->index, strerror(-ret));
	return 0;
}

/* A packet-mode status byte waiting (TIOCPKT_FLUSH..., STOP/START) would be taken with it. */
static int check_status(struct dump_ctx *d, struct tty_state *t)
{
	struct pollfd p = { .fd = t->local, .events = POLLPRI };

	if (t->pkt && poll(&p, 1, 0) > 0 && (p.revents & POLLPRI))
		return refuse(d, t->fd, t, "has a packet-mode status byte waiting");
	return 0;
}

static void fill_termios(TermiosEntry *e, uint32_t *cc, const struct kterm *k)
{
	e->c_iflag = k->iflag;
	e->c_oflag = k->oflag;
	e->c_cflag = k->cflag;
	e->c_lflag = k->lflag;
	e->c_line = k->line;
	e->c_ispeed = k->ispeed;
	e->c_ospeed = k->ospeed;
	for (int i = 0; i < PTY_NCC; i++)
		cc[i] = k->cc[i];
	e->n_c_cc = PTY_NCC;
	e->c_cc = cc;
}

static int write_info(struct image *img, const struct file_desc *f)
{
	const struct tty_state *t = f->tty;
	TtyInfoEntry e = TTY_INFO_ENTRY__INIT;
	TermiosEntry tio = TERMIOS_ENTRY__INIT, lck = TERMIOS_ENTRY__INIT;
	WinsizeEntry ws = WINSIZE_ENTRY__INIT;
	TtyPtyEntry pty = TTY_PTY_ENTRY__INIT;
	uint32_t cc[PTY_NCC], lcc[PTY_NCC];

	e.id = t->info_id;
	e.type = t->devtty ? TTY_TYPE__CTTY : t->job ? TTY_TYPE__EXT_TTY :
		 t->dev_type ? (TtyType)t->dev_type : TTY_TYPE__PTY;
	e.locked = t->lock;
	e.exclusive = t->excl;
	e.packet_mode = t->pkt;
	e.sid = t->sid;
	e.pgrp = t->pgrp;
	e.rdev = f->st.st_rdev;
	e.has_dev = true;
	e.dev = f->st.st_dev;
	fill_termios(&tio, cc, &t->t);
	fill_termios(&lck, lcc, &t->locked);
	e.termios = t->hung ? NULL : &tio;	/* CRIU's hung-up terminal: no modes */
	e.termios_locked = t->hung ? NULL : &lck;
	ws.ws_row = t->ws.ws_row;
	ws.ws_col = t->ws.ws_col;
	ws.ws_xpixel = t->ws.ws_xpixel;
	ws.ws_ypixel = t->ws.ws_ypixel;
	e.winsize = t->hung ? NULL : &ws;
	pty.index = t->index;
	e.pty = t->dev_type ? NULL : &pty;
	e.has_ctty = e.has_master = true;
	e.ctty = t->ctty;
	e.master = t->master;
	e.has_orphan = t->orphan;
	e.orphan = t->orphan;
	e.has_uid = e.has_gid = e.has_mode = true;
	e.uid = f->st.st_uid;
	e.gid = f->st.st_gid;
	e.mode = f->st.st_mode & 07777;
	return img_write_msg(img, &e.base);
}

static int write_data(struct image *img, uint32_t id, const char *buf, size_t len,
		      uint32_t *lines, size_t nr_lines)
{
	TtyDataEntry e = TTY_DATA_ENTRY__INIT;

	if (!len && !nr_lines)
		return 0;
	e.tty_id = id;
	e.n_lines = nr_lines;
	e.lines = lines;
	e.data.data = (uint8_t *)buf;
	e.data.len = len;
	return img_write_msg(img, &e.base);
}

static bool info_seen(const struct file_set *fs, int i)
{
	for (int k = 0; k < i; k++)
		if (fs->descs[k].tty && fs->descs[k].tty->info_id == fs->descs[i].tty->info_id)
			return true;
	return false;
}

static int write_images(struct dump_ctx *d, const struct file_desc *lone)
{
	struct file_set *fs = &d->files;
	struct image *info, *data;
	int ret = img_create(&d->dir, IMG_TTY_INFO, 0, &info);

	if (ret)
		return ret;
	ret = img_create(&d->dir, IMG_TTY_DATA, 0, &data);
	if (ret) {
		img_abort(info);
		return ret;
	}
	for (int i = 0; i < fs->nr_descs && !ret; i++) {
		struct tty_state *t = fs->descs[i].tty;

		if (!t || info_seen(fs, i))
			continue;
		ret = write_info(info, &fs->descs[i]);
		if (!ret && t->master)	/* the slave's reader: tty_id is the slave's */
			ret = write_data(data, t->info_id - 1, t->in, t->in_len, t->lines,
					 t->nr_lines);
		if (!ret && t->master)
			ret = write_data(data, t->info_id, t->out, t->out_len, NULL, 0);
	}
	if (!ret && lone->tty)
		ret = write_info(info, lone);
	if (ret) {
		img_abort(info);
		img_abort(data);
		return ret;
	}
	ret = img_close(info);
	return ret ? (img_abort(data), ret) : img_close(data);
}

/* Does the process hold an fd on the slave of pty idx? */
static bool holds_slave(const struct file_set *fs, uint32_t idx)
{
	for (int i = 0; i < fs->nr_descs; i++) {
		const struct tty_state *t = fs->descs[i].tty;

		if (t && !t->master && !t->job && !t->devtty && !t->orphan && !t->dev_type &&
		    !t->hung && t->index == idx)
			return true;
	}
	return false;
}

/*
 * A session leader whose controlling terminal is a slave of a dumped pair it
 * holds no fd of (it closed them): the slave's entry, its settings read
 * through memdump's own open of it, marked as the session's terminal.
 */
static int lone_ctty(struct dump_ctx *d, struct file_desc *f, struct tty_state *t)
{
	struct proc_stat ps;
	char path[96];
	int fd, ret;

	if (proc_read_stat(d->pid, &ps) || ps.sid != d->pid || !ctty_slave(d->pid, &f->st) ||
	    !master_dumped(&d->policy, f->st.st_dev, slave_index(&f->st)) ||
	    holds_slave(&d->files, slave_index(&f->st)))
		return 0;
	t->index = slave_index(&f->st);
	t->info_id = t->index * 2 + 1;
	t->ctty = true;
	t->sid = (uint32_t)ps.sid;
	t->pgrp = (uint32_t)ps.tpgid;
	snprintf(path, sizeof(path), "/proc/%d/root/dev/pts/%u", d->pid, t->index);
	fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return fail(-errno, "process %d: cannot open its controlling terminal %s: %s",
			    d->pid, path, strerror(errno));
	ret = read_modes(fd, t);
	close(fd);
	if (ret)
		return fail(ret, "process %d: cannot read its controlling terminal %s: %s", d->pid,
			    path, strerror(-ret));
	f->tty = t;
	return 0;
}

/* Restore keeps at most 4 new pairs for a tree (struct rst_orphan): hung-up slaves and
 * runtime terminals of different indexes. */
#define NEW_PAIRS_MAX	4

static int check_new_pairs(struct dump_ctx *d)
{
	struct file_set *fs = &d->files;
	int n = 0;

	for (int i = 0; i < fs->nr_descs; i++) {
		const struct tty_state *t = fs->descs[i].tty;

		if (t && (t->hung || t->orphan) && !info_seen(fs, i))
			n++;
	}
	if (n <= NEW_PAIRS_MAX)
		return 0;
	return fail(-EOPNOTSUPP, "process %d holds %d hung-up or runtime terminals (pty slaves "
		    "whose master is not in the dump), more than the %d memdump restores", d->pid,
		    n, NEW_PAIRS_MAX);
}

int tty_write(struct dump_ctx *d)
{
	struct file_set *fs = &d->files;
	struct tty_state lone_t = { .local = -1 };
	struct file_desc lone = { 0 };
	bool any = false;
	int ret = check_new_pairs(d);

	if (!ret)
		ret = lone_ctty(d, &lone, &lone_t);
	for (int i = 0; i < fs->nr_descs && !ret; i++) {
		if (fs->descs[i].tty && fs->descs[i].tty->master)
			ret = check_status(d, fs->descs[i].tty);
		if (fs->descs[i].tty)	/* a slave alone: its pair's master in another process */
			any = true;
	}
	for (int i = 0; i < fs->nr_descs && !ret; i++)
		if (fs->descs[i].tty && fs->descs[i].tty->master)
			ret = read_queues(d, fs->descs[i].tty);
	return ret || !(any || lone.tty) ? ret : write_images(d, &lone);
}

int tty_put_back(struct dump_ctx *d)
{
	struct file_set *fs = &d->files;
	char why[256];
	int ret = 0;

	for (int i = 0; i < fs->nr_descs; i++) {
		struct tty_state *t = fs->descs[i].tty;
		int err;

		if (!t || !t->taken)
			continue;
		t->taken = false;
		struct pty_queue q = { .in = (uint8_t *)t->in, .in_len = t->in_len,
				       .out = (uint8_t *)t->out, .out_len = t->out_len,
				       .lines = t->lines, .nr_lines = t->nr_lines };

		err = pty_put_back(t->local, &t->t, &q, why, sizeof(why));
		if (err && !ret)
			ret = fail(err, "process %d: pty /dev/pts/%u: %s", d->pid, t->index, why);
	}
	return ret;
}

void tty_state_free(struct tty_state *t)
{
	if (!t)
		return;
	if (t->local >= 0)
		close(t->local);
	free(t->in);
	free(t->out);
	free(t->lines);
	free(t);
}
