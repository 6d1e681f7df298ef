/*
 * File locks of the target (locks.c): flock, POSIX and OFD locks, from the
 * "lock:" lines of /proc/PID/fdinfo, written to filelocks.img; read and
 * write leases too (FL_LEASE), held or being broken (another open waits on
 * it or gave up: restore takes the lease and breaks it again); more POSIX
 * locks than the restorer takes back are refused.
 */
#ifndef MEMDUMP_LOCKS_H
#define MEMDUMP_LOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct dump_ctx;

#define FL_POSIX	1
#define FL_FLOCK	2
#define FL_LEASE	8	/* CRIU's value */
#define FL_OFDLCK	1024
#define LEASE_BREAKING	4	/* CRIU's: with a lease's target type, in its type */

/* One lock line of fdinfo. */
struct file_lock {
	int fd;
	uint32_t flag;		/* FL_* */
	uint32_t type;		/* F_RDLCK, F_WRLCK (a lease's: F_SETLEASE's); a lease
				 * being broken: its target (F_RDLCK, F_UNLCK) | LEASE_BREAKING */
	uint32_t held;		/* a lease being broken: the type it was taken with */
	int32_t pid;
	int64_t start, len;	/* len 0: to EOF */
	char dev_ino[64];	/* "maj:min:ino" as fdinfo prints it */
};

struct lock_set {
	struct file_lock *l;
	int nr;
};

/*
 * One "lock:" line: 1 and *l when it is a lock memdump restores, 0 when it
 * is a waiter ("->"), -EOPNOTSUPP with what in kind[] (DELEG, ...).
 */
int lock_parse(const char *line, struct file_lock *l, char *kind, size_t len);
/*
 * How many leases /proc/locks shows on the file dev_ino ("maj:min:ino"), or
 * -errno. Read leases of several open file descriptions being broken are
 * refused (refuse.c): the first one broken again would stop the others
 * being taken (no new lease while one is being broken to an unlock).
 */
int leases_on_inode(const char *dev_ino);
/* The locks fd shows (held through its open file description); info: its fdinfo, as read. */
int locks_collect(struct dump_ctx *d, int fd, const char *info);
int write_locks(struct dump_ctx *d);
void locks_free(struct lock_set *ls);

/* Restore (its _restore.c files) */

struct rst;

/* locks.c: flock, POSIX, OFD locks, taken by the child as its last step before the blob */
int locks_check(struct rst *r);
int locks_apply_in_child(struct rst *r, char *why, size_t len);
/*
 * Leases, taken (and those being broken, broken again) by the child once its
 * fds have their numbers, before their SIGIO owners are given back: no
 * signal reaches anyone for the break restore makes.
 */
int leases_apply_in_child(struct rst *r, char *why, size_t len);
/* The POSIX ones into the area, for the blob to take after its own fds are closed. */
void locks_fill(struct rst *r);

#endif
