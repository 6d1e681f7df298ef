/*
 * Fault injection for the tests: MEMDUMP_FAULT=<point> makes memdump stall at
 * that point of a dump (for a minute, or MEMDUMP_FAULT_SECS, or until a signal
 * arrives), so that a test can kill one of its processes, or act on the
 * target, exactly there. Without the variable nothing happens.
 */
#ifndef MEMDUMP_FAULT_H
#define MEMDUMP_FAULT_H

/* Points: "infected" (the parasite area is mapped, for remote syscalls),
 * "in-remote-syscall" (a thread is stopped at the entry of a remote syscall
 * on the trampoline), "parasite-running" (the blob is serving, between
 * commands), "snapshot-copy" (--snapshot: the target runs again, its pages
 * are still write-protected), "images-written" (a killing dump, its images
 * written, before the last look at the sockets' queues and the inventory),
 * "cgroup-frozen" (--freeze-cgroup: the cgroup frozen, the tree not yet
 * seized), "pages-half" (half of pages-1.img's bytes taken from the
 * target), "remote-set-NR", "remote-entry-NR", "remote-exit-NR" (the
 * first remote syscall number NR: its registers set, stopped at its entry,
 * stopped at its exit, before the thread gets its own registers back). */
void fault_point(const char *point);

#endif
