/*
 * Fault injection for the tests: MEMDUMP_FAULT=<point> makes memdump stall at
 * that point of a dump (for up to a minute, or until a signal arrives), so
 * that a test can kill one of its processes exactly there. Without the
 * variable nothing happens.
 */
#ifndef MEMDUMP_FAULT_H
#define MEMDUMP_FAULT_H

/* Points: "infected" (the parasite area is mapped, for remote syscalls),
 * "in-remote-syscall" (a thread is stopped at the entry of a remote syscall
 * on the trampoline), "parasite-running" (the blob is serving, between
 * commands). */
void fault_point(const char *point);

#endif
