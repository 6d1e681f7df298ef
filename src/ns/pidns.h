/*
 * pidns.c: the PID namespace of a dumped tree whose root is its init.
 */
#ifndef MEMDUMP_PIDNS_H
#define MEMDUMP_PIDNS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_tree;
struct refusals;

/* Is pid in another PID namespace than memdump? */
bool pidns_own(pid_t pid);
/* Process pid's PID as its innermost PID namespace sees it (pid in memdump's), or -ESRCH. */
pid_t pidns_inner(pid_t pid);
/* What stops the dump of tree t, whose root is in a PID namespace of its own, into r. */
void pidns_refuse(const struct proc_tree *t, struct refusals *r);
/* The IDs process pid and its n threads tids see in their namespace; -ESRCH: gone. */
int pidns_ids(pid_t pid, const pid_t *tids, int n, uint32_t *ns_tids, uint32_t *ns_pgid,
	      uint32_t *ns_sid);
/*
 * The PID N of holder's fd (link, its /proc/PID/fd link's text) when it is the
 * /proc/N directory, or a file in it, of a process of holder's PID namespace
 * that exited: on the /proc of that namespace holder's root shows, which has
 * no N now. 0: not one (restore makes it with a stand-in of PID N, proccwd.h).
 */
pid_t pidns_gone_proc(pid_t holder, int fd, const char *link);
/* The same for holder's /proc/PID/WHAT link ("cwd", "fd/N"). */
pid_t pidns_gone_proc_at(pid_t holder, const char *what, const char *link);

#endif
