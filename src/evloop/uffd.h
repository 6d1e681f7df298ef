/*
 * A target's own userfaultfd (not memdump's tracker: track/): refused, by
 * name and with the state it holds, until memdump restores it (the fd made
 * again in the restored process's mm, its ranges registered, its WP bits
 * applied again: docs/restore.md, **A target's userfaultfd**).
 */
#ifndef MEMDUMP_UFFD_H
#define MEMDUMP_UFFD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * What userfaultfd fd of pid holds, as its refusal says it, in why. tracked:
 * memdump's tracker registers the process's VMAs for WP, so that its WP
 * ranges are not counted (they are the tracker's, or its own: smaps does not
 * tell).
 */
void uffd_refusal(pid_t pid, int fd, bool tracked, char *why, size_t len);

#endif
