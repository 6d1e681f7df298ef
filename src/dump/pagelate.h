/*
 * A pre-dump's pages read after the thaw (read and mem modes): the process's
 * pidfd and /proc/PID/mem held across the release (dump.c), the pages
 * and the stats written from the running process, a tracker this run made removed if that
 * fails (the process seized again for it).
 */
#ifndef MEMDUMP_DUMP_PAGELATE_H
#define MEMDUMP_DUMP_PAGELATE_H

#include <stdbool.h>

#include "ctx/dump_ctx.h"

struct late_hold {
	int pidfd, mem_fd;
};

/* Asked of a dump: a pre-dump in read or mem mode (no page-cache warming for it). */
bool pages_late_opts(const struct dump_opts *o);
bool pages_late_wanted(const struct dump_ctx *d);
void pages_late_hold(struct dump_ctx *d, struct late_hold *h);
int pages_late_write(struct dump_ctx *d, struct late_hold *h);
void pages_late_undo(struct dump_ctx *d, struct late_hold *h);
void pages_late_drop(struct late_hold *h);

#endif
