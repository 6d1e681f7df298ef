/*
 * File locks (locks.h). fdinfo shows, on every fd of an open file
 * description, the flock and OFD locks of that description and the POSIX
 * locks the process took through it: collected once per description.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ctx/dump_ctx.h"
#include "files/locks.h"
#include "image/image.h"
#include "log.h"
#include "restorer.h"
#include "proc.h"

#include "file-lock.pb-c.h"

/* "READ", "WRITE", "UNLCK" as F_*, or -1 */
static int rw_type(const char *rw)
{
	return !strcmp(rw, "READ") ? F_RDLCK : !strcmp(rw, "WRITE") ? F_WRLCK :
	       !strcmp(rw, "UNLCK") ? F_UNLCK : -1;
}

/*
 * A lease: held (its type) or being broken, which fdinfo shows with the type
 * the break leads to (F_GETLEASE's: a read for a write lease an open for
 * reading broke, an unlock else).
 */
static int lease_parse(const char *mode, int type, struct file_lock *l)
{
	l->flag = FL_LEASE;
	if (!strcmp(mode, "ACTIVE") && type != F_UNLCK)
		l->type = type;
	else if (!strcmp(mode, "BREAKING") && type != F_WRLCK)
		l->type = type | LEASE_BREAKING;
	else
		return -EOPNOTSUPP;
	return 1;
}

int lock_parse(const char *line, struct file_lock *l, char *kind, size_t len)
{
	char k[16] = "", mode[16] = "", rw[16] = "", end[32] = "";
	long long start;
	int pid, type;

	if (strstr(line, "->"))
		return 0;	/* a waiter: its system call is restarted */
	if (sscanf(line, "lock: %*d: %15s %15s %15s %d %63s %lld %31s", k, mode, rw, &pid,
		   l->dev_ino, &start, end) != 7) {
		snprintf(kind, len, "a file lock memdump cannot read");
		return -EOPNOTSUPP;
	}
	snprintf(kind, len, "%s %s", k, mode);
	type = rw_type(rw);
	l->pid = pid;
	l->start = start;
	l->len = !strcmp(end, "EOF") ? 0 : strtoll(end, NULL, 10) - start + 1;
	if (type < 0)
		return -EOPNOTSUPP;
	if (!strcmp(k, "LEASE"))
		return lease_parse(mode, type, l);
	if (strcmp(mode, "ADVISORY") || type == F_UNLCK)
		return -EOPNOTSUPP;
	else if (!strcmp(k, "POSIX"))
		l->flag = FL_POSIX;
	else if (!strcmp(k, "FLOCK"))
		l->flag = FL_FLOCK;
	else if (!strcmp(k, "OFDLCK"))
		l->flag = FL_OFDLCK;
	else
		return -EOPNOTSUPP;
	l->type = type;
	return 1;
}

int leases_on_inode(const char *dev_ino)
{
	char *buf = NULL, *line, *save = NULL, id[64];
	ssize_t got = proc_read_file("/proc/locks", &buf);
	int n = 0;

	if (got < 0)
		return (int)got;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (!strstr(line, "->") && sscanf(line, "%*d: LEASE %*s %*s %*d %63s", id) == 1 &&
		    !strcmp(id, dev_ino))
			n++;
	free(buf);
	return n;
}

/* The restorer takes POSIX locks back from a fixed table (restorer.h). */
static int too_many_posix(const struct dump_ctx *d, const struct lock_set *ls)
{
	int n = 0;

	for (int i = 0; i < ls->nr; i++)
		n += ls->l[i].flag == FL_POSIX;
	if (n <= RST_MAX_LOCKS)
		return 0;
	return fail(-EOPNOTSUPP, "process %d holds more than %d POSIX lock entries (one per lock "
		    "and fd of its file), which memdump cannot restore", d->pid, RST_MAX_LOCKS);
}

/*
 * A break whose time is up ends only when the kernel next looks at the
 * file's leases: F_GETLEASE on memdump's copy of the fd (the same open file
 * description) makes it look now, so that fdinfo then shows the lease as it
 * is (gone, or a read lease), not a break already over.
 */
static int leases_time_out(pid_t pid, int fd)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0), copy, err = 0;

	if (pidfd < 0)
		return -errno;
	copy = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	if (copy < 0 || fcntl(copy, F_GETLEASE) < 0)
		err = -errno;
	if (copy >= 0)
		close(copy);
	close(pidfd);
	return err;
}

/*
 * The fdinfo of fd (info, as read for it, copied into buf), with its breaks
 * already over ended (leases_time_out): read again then, it changed.
 */
static ssize_t lock_fdinfo(pid_t pid, int fd, const char *info, char **buf)
{
	int err;

	*buf = strdup(info);
	if (!*buf)
		return -ENOMEM;
	if (!strstr(*buf, "BREAKING"))
		return strlen(*buf);
	err = leases_time_out(pid, fd);
	if (err)
		return err;
	free(*buf);
	*buf = NULL;
	return proc_fdinfo(pid, fd, buf);
}

/*
 * The type a lease being broken was taken with (fdinfo shows where the break
 * leads): only a write lease is downgraded, and only a read-only fd takes a
 * read lease. A read-only fd's lease a writer broke can be either: an open
 * for reading waits on a write lease only, and a non-blocking one fails at
 * once with nothing else done.
 */
static int lease_held(pid_t pid, int fd, unsigned int flags, struct file_lock *l)
{
	char path[64];
	int probe;

	l->held = F_WRLCK;
	if ((flags & O_ACCMODE) != O_RDONLY || (l->type & ~LEASE_BREAKING) == F_RDLCK)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	probe = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (probe >= 0) {
		close(probe);
		l->held = F_RDLCK;
		return 0;
	}
	return errno == EWOULDBLOCK ? 0 : -errno;
}

/* fdinfo's "flags:" (octal), before strtok_r cuts it */
static unsigned int fdinfo_flags(const char *buf)
{
	const char *v = proc_line_after(buf, "flags:");

	return v ? (unsigned int)strtoul(v, NULL, 8) : 0;
}

static int add_lock(struct lock_set *ls, const struct file_lock *l)
{
	struct file_lock *nl = realloc(ls->l, (ls->nr + 1) * sizeof(*nl));

	if (!nl)
		return -ENOMEM;
	ls->l = nl;
	ls->l[ls->nr++] = *l;
	return 0;
}

int locks_collect(struct dump_ctx *d, int fd, const char *info)
{
	struct lock_set *ls = &d->files.locks;
	char *buf = NULL, *line, *save = NULL, kind[64];
	ssize_t n = lock_fdinfo(d->pid, fd, info, &buf);
	unsigned int flags;
	int ret = 0;

	if (n < 0) {
		free(buf);
		return fail(n, "cannot read the fdinfo of fd %d: %s", fd, strerror(-n));
	}
	flags = fdinfo_flags(buf);
	for (line = strtok_r(buf, "\n", &save); line && !ret; line = strtok_r(NULL, "\n", &save)) {
		struct file_lock l = { .fd = fd };

		if (strncmp(line, "lock:", 5))
			continue;
		ret = lock_parse(line, &l, kind, sizeof(kind));
		if (ret <= 0) {
			if (ret)
				ret = fail(ret, "process %d: fd %d holds a %s lock, which memdump "
					   "cannot dump", d->pid, fd, kind);
			continue;
		}
		ret = l.flag == FL_LEASE && (l.type & LEASE_BREAKING) ?
		      lease_held(d->pid, fd, flags, &l) : 0;
		if (ret) {
			ret = fail(ret, "process %d: fd %d holds a lease being broken, whose type "
				   "memdump cannot find: %s", d->pid, fd, strerror(-ret));
			break;
		}
		ret = add_lock(ls, &l);
		if (!ret)
			ret = too_many_posix(d, ls);
		pr_debug("fd %d: %s lock", fd, kind);
	}
	free(buf);
	return ret;
}

int write_locks(struct dump_ctx *d)
{
	struct lock_set *ls = &d->files.locks;
	struct image *img;
	int ret;

	if (!ls->nr || d->kobj.files_shared)
		return 0;	/* its parent's fd table: its parent's set holds them */
	ret = img_create(&d->dir, IMG_FILE_LOCKS, 0, &img);
	for (int i = 0; !ret && i < ls->nr; i++) {
		FileLockEntry e = FILE_LOCK_ENTRY__INIT;

		e.flag = ls->l[i].flag;
		e.type = ls->l[i].type;
		e.pid = ls->l[i].pid;
		e.fd = ls->l[i].fd;
		e.start = ls->l[i].start;
		e.len = ls->l[i].len;
		e.has_lease_held = ls->l[i].flag == FL_LEASE && (ls->l[i].type & LEASE_BREAKING);
		e.lease_held = ls->l[i].held;
		ret = img_write_msg(img, &e.base);
		if (ret)
			img_abort(img);
	}
	return ret ? ret : img_close(img);
}

void locks_free(struct lock_set *ls)
{
	free(ls->l);
	ls->l = NULL;
	ls->nr = 0;
}
