/*
 * Restore of file locks (filelocks.img): taken by the restored process
 * itself, in the child once every fd has its number and nothing more is
 * closed before the blob (closing any fd of a file drops the process's
 * POSIX locks on it), so that each lock shows its own PID as it did. flock
 * and OFD locks and leases belong to the open file description (a lease set
 * after the fd's SIGIO owner was restored keeps it), POSIX locks to the
 * process; all are taken non-blocking: a lock someone else holds now is a
 * clear failure, not a hang.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>

#include "log.h"
#include "ctx/restore_ctx.h"
#include "files/locks.h"

#define FL_POSIX	1
#define FL_FLOCK	2
#define FL_LEASE	8
#define FL_OFDLCK	1024

static const char *kind(const FileLockEntry *l)
{
	return l->flag == FL_POSIX ? "POSIX" : l->flag == FL_FLOCK ? "flock" :
	       l->flag == FL_LEASE ? "lease" : "OFD";
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
		     l->flag != FL_LEASE) ||
		    (l->type != F_RDLCK && l->type != F_WRLCK) || l->start < 0 || l->len < 0)
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
	if (l->flag == FL_LEASE)	/* the process's own: the owner restored before stays */
		return fcntl(l->fd, F_SETLEASE, (int)l->type);
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

		if (l->flag == FL_POSIX)
			continue;	/* the blob's (locks_fill()) */
		if (take(l)) {
			int err = errno;

			snprintf(why, len, "cannot take the %s %s lock of fd %d (%" PRId64 "+%" PRId64
				 "): %s", kind(l), l->type == F_RDLCK ? "read" : "write", l->fd,
				 l->start, l->len, err != EAGAIN && err != EWOULDBLOCK ? strerror(err) :
				 l->flag == FL_LEASE ? "the file is open elsewhere in a conflicting mode" :
				 "another process holds a conflicting lock");
			return -err;
		}
	}
	return 0;
}
