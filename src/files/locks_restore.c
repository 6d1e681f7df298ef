/*
 * Restore of file locks (filelocks.img): taken by the restored process
 * itself, in the child once every fd has its number and nothing more is
 * closed before the blob (closing any fd of a file drops the process's
 * POSIX locks on it), so that each lock shows its own PID as it did. flock
 * and OFD locks and leases belong to the open file description, POSIX locks
 * to the process; all are taken non-blocking: a lock someone else holds now is a
 * clear failure, not a hang. Leases are taken earlier, before the fds' SIGIO
 * owners are given back (leases_apply_in_child()); one being broken is
 * broken again there, by a non-blocking open of the kind that broke it, the
 * kernel's break timer started anew (it shows no time left to a dump).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "log.h"
#include "ctx/restore_ctx.h"
#include "files/locks.h"

static const char *kind(const FileLockEntry *l)
{
	return l->flag == FL_POSIX ? "POSIX" : l->flag == FL_FLOCK ? "flock" :
	       l->flag == FL_LEASE ? "lease" : "OFD";
}

/* F_RDLCK, F_WRLCK; a lease being broken: its target and what it was taken as */
static bool type_known(const FileLockEntry *l)
{
	uint32_t target = l->type & ~LEASE_BREAKING;

	if (l->flag != FL_LEASE || !(l->type & LEASE_BREAKING))
		return (l->type == F_RDLCK || l->type == F_WRLCK) && !l->has_lease_held;
	if (target != F_RDLCK && target != F_UNLCK)
		return false;
	if (!l->has_lease_held)
		return true;	/* CRIU's: the fd's access mode tells */
	return l->lease_held == F_WRLCK || (l->lease_held == F_RDLCK && target == F_UNLCK);
}

int locks_check(struct rst *r)
{
	size_t posix = 0;

	for (size_t i = 0; i < r->ds.nr_locks; i++)
		posix += r->ds.locks[i]->flag == FL_POSIX;
	if (posix > RST_MAX_LOCKS)
		return fail(-EOPNOTSUPP, "filelocks.img: %zu POSIX lock entries, at most %d", posix,
			    RST_MAX_LOCKS);
	for (size_t i = 0; i < r->ds.nr_locks; i++) {
		const FileLockEntry *l = r->ds.locks[i];
		bool found = false;

		for (size_t j = 0; j < r->ds.nr_fds; j++)
			found |= (int32_t)r->ds.fds[j]->fd == l->fd;
		if (!found)
			return fail(-EIO, "filelocks.img: a lock on fd %d, which the process has not",
				    l->fd);
		if ((l->flag != FL_POSIX && l->flag != FL_FLOCK && l->flag != FL_OFDLCK &&
		     l->flag != FL_LEASE) || !type_known(l) || l->start < 0 || l->len < 0)
			return fail(-EIO, "filelocks.img: the lock on fd %d is not one restore knows",
				    l->fd);
	}
	return 0;
}

static int take(const FileLockEntry *l)
{
	struct flock fl = { .l_type = l->type, .l_whence = SEEK_SET, .l_start = l->start,
			    .l_len = l->len };

	if (l->flag == FL_FLOCK)
		return flock(l->fd, (l->type == F_RDLCK ? LOCK_SH : LOCK_EX) | LOCK_NB);
	return fcntl(l->fd, l->flag == FL_POSIX ? F_SETLK : F_OFD_SETLK, &fl);
}

/* POSIX locks: the blob takes them, once it has closed its own fds (restorer.h). */
void locks_fill(struct rst *r)
{
	r->a->nr_locks = 0;
	for (size_t i = 0; i < r->ds.nr_locks && r->a->nr_locks < RST_MAX_LOCKS; i++) {
		const FileLockEntry *l = r->ds.locks[i];

		if (l->flag != FL_POSIX || r->fdt_owner)
			continue;
		r->a->locks[r->a->nr_locks++] = (struct rst_lock){ l->fd, l->type, l->start,
								  l->len };
	}
}

int locks_apply_in_child(struct rst *r, char *why, size_t len)
{
	for (size_t i = 0; i < r->ds.nr_locks; i++) {
		const FileLockEntry *l = r->ds.locks[i];

		if (l->flag == FL_POSIX || l->flag == FL_LEASE)
			continue;	/* the blob's (locks_fill()), leases_apply_in_child()'s */
		if (take(l)) {
			int err = errno;

			snprintf(why, len, "cannot take the %s %s lock of fd %d (%" PRId64 "+%" PRId64
				 "): %s", kind(l), l->type == F_RDLCK ? "read" : "write", l->fd,
				 l->start, l->len, err != EAGAIN && err != EWOULDBLOCK ? strerror(err) :
				 "another process holds a conflicting lock");
			return -err;
		}
	}
	return 0;
}

/* The type F_SETLEASE took: a lease being broken, the one before its break. */
static int lease_held(const FileLockEntry *l)
{
	int acc;

	if (!(l->type & LEASE_BREAKING))
		return (int)l->type;
	if (l->has_lease_held)
		return (int)l->lease_held;
	acc = fcntl(l->fd, F_GETFL);	/* CRIU's images: a read-only fd's is a read lease */
	return acc >= 0 && (acc & O_ACCMODE) == O_RDONLY && l->type == (F_UNLCK | LEASE_BREAKING) ?
	       F_RDLCK : F_WRLCK;
}

/*
 * Break fd's lease again as it was being broken: an open for writing (the
 * lease then goes) or for reading (a write lease then becomes a read one),
 * non-blocking, through /proc/self/fd (the file wherever, deleted or not),
 * which the lease must stop. The kernel signals the break to the fd's SIGIO
 * owner: it has none yet.
 */
static int break_again(const FileLockEntry *l)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", l->fd);
	fd = open(path, ((l->type & ~LEASE_BREAKING) == F_UNLCK ? O_WRONLY : O_RDONLY) |
		  O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd >= 0) {
		close(fd);
		return -ENOLCK;	/* nothing stopped it: no lease */
	}
	return errno == EWOULDBLOCK ? 0 : -errno;
}

/*
 * A lease: taken (a lease is the open file description's: a description an
 * earlier process of the tree holds is its), its SIGIO owner, which
 * F_SETLEASE made this process, taken away (files_fown_in_child() gives the
 * dumped one), broken again if it was being broken.
 */
static int take_lease(struct rst *r, const FileLockEntry *l, char *why, size_t len)
{
	int type = lease_held(l), err = 0;
	const char *what = "take";

	if (rst_share_src(r, l->fd) >= 0)
		return 0;
	if (fcntl(l->fd, F_SETLEASE, type) || fcntl(l->fd, F_SETOWN, 0))
		err = -errno;
	if (!err && (l->type & LEASE_BREAKING)) {
		what = "break again";
		err = break_again(l);
	}
	if (err)
		snprintf(why, len, "cannot %s the %s lease of fd %d: %s", what,
			 type == F_RDLCK ? "read" : "write", l->fd, err == -EAGAIN ?
			 "the file is open elsewhere in a conflicting mode" : err == -ENOLCK ?
			 "the lease did not stop a conflicting open" : strerror(-err));
	return err;
}

int leases_apply_in_child(struct rst *r, char *why, size_t len)
{
	int err = 0;

	for (size_t i = 0; i < r->ds.nr_locks && !err; i++)
		if (r->ds.locks[i]->flag == FL_LEASE)
			err = take_lease(r, r->ds.locks[i], why, len);
	return err;
}
