/*
 * Moving the calling thread into another process's namespace and back
 * (setns is per thread: memdump's other threads stay where they are). Used
 * for the namespaces whose state is read or rebuilt from inside: UTS, IPC.
 */
#ifndef MEMDUMP_NSSWITCH_H
#define MEMDUMP_NSSWITCH_H

#include <stdbool.h>
#include <sys/types.h>

/* The kinds memdump saves and restores (enters to read, unshares or joins to
 * restore), with their /proc/PID/ns names: uts, ipc, net. */
struct ns_kind {
	const char *name;	/* "uts" */
	int flag;		/* CLONE_NEWUTS */
};
extern const struct ns_kind ns_kinds[];
extern const int nr_ns_kinds;
const struct ns_kind *ns_kind_by_name(const char *name);

/* memdump's own namespace of this kind (before any thread entered another): its inode. */
unsigned long ns_home_inode(const struct ns_kind *k);
/* Whether pid's namespace of this kind is another one than memdump's. */
bool ns_is_own(pid_t pid, const struct ns_kind *k);
/* Its inode (the namespace's identity), or 0. */
unsigned long ns_inode(pid_t pid, const char *name);

/*
 * Into the namespace open at fd (or /proc/PID/ns/NAME): *back gets an fd of
 * the thread's current one, for ns_return(). 0 or -errno (reported).
 */
int ns_enter_fd(int fd, const struct ns_kind *k, int *back);
int ns_enter_pid(pid_t pid, const struct ns_kind *k, int *back);
void ns_return(int back, const struct ns_kind *k);

#endif
