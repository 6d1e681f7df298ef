/*
 * Fault injection for the tests: MEMDUMP_FAULT=<point> makes memdump stall at
 * that point of a dump (for a minute, or MEMDUMP_FAULT_SECS, or until a signal
 * arrives), so that a test can kill one of its processes, or act on the
 * target, exactly there. Without the variable nothing happens.
 */
#ifndef MEMDUMP_FAULT_H
#define MEMDUMP_FAULT_H

#include <stdbool.h>

/* Points: "infected" (the parasite area is mapped, for remote syscalls),
 * "in-remote-syscall" (a thread is stopped at the entry of a remote syscall
 * on the trampoline), "parasite-running" (the blob is serving, between
 * commands), "snapshot-copy" (--snapshot: the target runs again, its pages
 * are still write-protected), "images-written" (a killing dump, its images
 * written, before the last look at the sockets' queues and the inventory),
 * "pages-compressed" (a killing dump with --compress, the target killed,
 * the compressed pages-1.img complete but not yet renamed over the raw one),
 * "cgroup-frozen" (--freeze-cgroup: the cgroup frozen, the tree not yet
 * seized), "pages-half" (half of pages-1.img's bytes taken from the
 * target), "seal-chunk" (--encrypt, MEMDUMP_FAULT_FAIL=1 only: sealing
 * pages-1.img's middle chunk fails, on either sealing thread), "net-locked" (--tcp-established: the network lock is on, no
 * connection in repair mode yet), "tcp-repaired" (a connection read, still
 * in repair mode: the only moment it is), "tcp-read" (the connection read
 * and out of repair mode again), "net-unlocked" (--leave-running or a
 * failed dump: the lock off, before the connections' window probes),
 * "target-killed" (a killing dump: the process with the locked connections
 * is dead, its lock made plain for the restore),
 * "threads-in-parasite" (every thread but the leader runs the blob for its
 * own state), "remote-set-NR", "remote-entry-NR", "remote-exit-NR" (the first remote
 * syscall number NR: its registers set, stopped at its entry, stopped at its
 * exit, before the thread gets its own registers back). A restore's points:
 * src/ctx/restore_ctx.h (RST_FAULT_*). */
void fault_point(const char *point);

/*
 * A restore step's point (src/restore/restore.h lists them): stalls as
 * fault_point() does and returns 0; with MEMDUMP_FAULT_FAIL=1 the step
 * fails there instead: -EIO, after fail() naming the point.
 */
int fault_step(const char *point);
/* Is point the one MEMDUMP_FAULT names? (for a step memdump does not run itself) */
bool fault_wanted(const char *point);
/* MEMDUMP_FAULT_FAIL=1: the step fails rather than stalls */
bool fault_fails(void);
/* The stall alone, not logged (a forked process's stderr is not memdump's): false if a
 * signal ended it */
bool fault_stall(void);

#endif
