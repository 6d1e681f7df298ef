/*
 * A target's own time namespace (timens.c, timens_restore.c): the
 * monotonic and boot-time clocks as its processes read them, saved at the
 * dump into CRIU's timens-1.img. A restore makes a new time namespace
 * whose clocks go on from those values, as CRIU does: a checkpointed
 * process sees no time pass while it was an image.
 */
#ifndef MEMDUMP_NS_TIMENS_H
#define MEMDUMP_NS_TIMENS_H

#include <stdbool.h>
#include <sys/types.h>

struct dump_ctx;
struct refusals;
struct rst;

/* Is pid in another time namespace than memdump? */
bool timens_own(pid_t pid);
/* What stops it: a time namespace for its children it is not in itself. */
void timens_refuse(pid_t pid, struct refusals *r);
/* timens-1.img, while frozen. */
int timens_dump(struct dump_ctx *d);

/* Restore: the clocks read from the image, before anything is forked. */
int timens_restore_load(struct rst *r);
/* In the forked root, before its children: into a new time namespace whose
 * clocks read what the image says. A failure is described in why. */
int timens_restore_in_child(struct rst *r, char *why, size_t len);

#endif
