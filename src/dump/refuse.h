/* What memdump cannot dump yet, found before the target is touched. */
#ifndef MEMDUMP_REFUSE_H
#define MEMDUMP_REFUSE_H

#include <sys/types.h>

/*
 * 0, or -EOPNOTSUPP after one fail() line that names every reason at once:
 * PID 1 or a PID namespace's init, child processes, a process group or
 * session held by other processes, namespaces other than memdump's.
 */
int refuse_check(pid_t pid);

#endif
