/*
 * Within dump/: memory tracking between dumps (track.c), and the record that
 * lets the next memdump run find it (trackstate.c).
 *
 * The target holds the tracker itself: a userfaultfd it created (a remote
 * syscall), on an fd number of its own, with UFFD_FEATURE_WP_ASYNC. Its
 * private memory is registered in write-protect mode and write-protected;
 * the kernel then clears the protection of each page the process writes,
 * with no fault to handle, and PAGEMAP_SCAN reports those pages
 * (PAGE_IS_WRITTEN). Closing the fd (its last reference) unregisters every
 * VMA and clears every protection.
 */
#ifndef MEMDUMP_DUMP_TRACK_H
#define MEMDUMP_DUMP_TRACK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct dump_ctx;
struct infect_ctx;

struct tracker {
	pid_t pid;
	uint64_t start_time;	/* of the process: a reused PID is another one */
	int fd;			/* the userfaultfd's number in the target, -1: none */
	int tmp_fd;		/* the number userfaultfd() gives, before it moves to fd */
	uint64_t ino;		/* its inode; 0 while it is being created */
	/*
	 * Checksum of inventory.img of the image set whose dump last
	 * write-protected the memory: pages not written since are that set's.
	 * 0: unknown (a dump failed or was killed after protecting).
	 */
	uint64_t base;
	int local;		/* memdump's copy (pidfd_getfd), -1 */
	bool created;		/* by this memdump run */
};

/* trackstate.c: the record, /run/memdump/track-PID */
void track_init(struct tracker *t, pid_t pid);
int track_state_load(struct tracker *t);	/* 0, -ENOENT, or another error */
int track_state_save(const struct tracker *t);
void track_state_remove(pid_t pid);

/* track.c */
/* The tracker of pid, checked against the live process: t->fd < 0 if none. */
int track_find(struct tracker *t, pid_t pid);
/* fd is the tracker's (it is not the process's own state). */
bool track_owns_fd(const struct tracker *t, int fd);
/* Frozen: create the tracker in the target, or take the one it holds. */
int track_attach(struct dump_ctx *d);
/* Frozen: register every trackable VMA; refuse VMAs another userfaultfd holds. */
int track_register(struct dump_ctx *d);
/* Frozen: write-protect every registered VMA (a new iteration starts). */
int track_protect(struct dump_ctx *d);
/* Frozen: remove the tracker from the target (fd closed: nothing left). */
int track_remove(struct infect_ctx *in, struct tracker *t);
/* The same for a process no longer seized: seized again for it. */
int track_remove_seized(struct tracker *t);
void track_close(struct tracker *t);
/* A killed target's tracker (dump.c, track_drop_late): memdump's copy closed, the record removed. */
void track_gone(struct tracker *t);

/* track.c: memdump track --stop -t PID */
int track_stop_run(pid_t pid);

#endif
