/*
 * A pre-dump's pages read once the target runs again (read and mem modes:
 * CRIU's --pre-dump-mode=read). Frozen, the dump lists the runs to take and
 * the tracker protects every present page again (track.c); the target is
 * thawed, then the pages are read and written (pages.c). A page the target
 * writes meanwhile reads as written at the next dump, which takes it again:
 * what this set holds of it is never used. So the freeze lasts the listing,
 * whatever the size, and the pages go to the disk or to a page server at
 * their own pace while the process runs.
 *
 * Across the thaw the dump keeps the process's pidfd and its /proc/PID/mem.
 * process_vm_readv reads by PID: the process still alive at the end (its
 * pidfd) says no other process had that PID meanwhile. A page gone since the
 * listing is read through /proc/PID/mem (mprotected since: it reads through
 * PROT_NONE) or written as zeros (unmapped: whatever is at its address at
 * the next dump is new to the tracker, a mapping not registered, a page not
 * protected, so taken): pages.c, read_gone().
 */
#include <errno.h>
#include <inttypes.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "log.h"
#include "proc.h"
#include "dump/images.h"
#include "dump/pagelate.h"
#include "mem/pages.h"
#include "track/track.h"

bool pages_late_opts(const struct dump_opts *o)
{
	return o->pre_dump && o->mode != MODE_SPLICE;
}

/* A tree's processes too: a pre-dump lists no page as shared with a tree parent
 * (cowpages.c), each process's pages are its own, read from it. */
bool pages_late_wanted(const struct dump_ctx *d)
{
	return d->pre_dump && d->mode != MODE_SPLICE && d->track.local >= 0;
}

/* Before the release: the process's pidfd and /proc/PID/mem stay with the dump. */
void pages_late_hold(struct dump_ctx *d, struct late_hold *h)
{
	h->pidfd = d->in.pidfd;
	h->mem_fd = d->in.mem_fd;
	d->in.pidfd = d->in.mem_fd = -1;	/* infect_release() leaves them */
}

/* After the thaw: the pages, read from the running process, then the stats. */
int pages_late_write(struct dump_ctx *d, struct late_hold *h)
{
	int ret;

	d->in.pidfd = h->pidfd;
	d->in.mem_fd = h->mem_fd;
	ret = write_pages(d);
	d->in.pidfd = d->in.mem_fd = -1;
	if (!ret && pidfd_exited(h->pidfd))
		ret = fail(-ESRCH, "process %d ended while its pages were read", d->pid);
	if (!ret && d->stats.pages_gone)
		pr_info("%" PRIu64 " page(s) of process %d gone after the thaw: zeros here, "
			"taken again by the next dump", d->stats.pages_gone, d->pid);
	return ret ?: write_stats(d);
}

/*
 * A failure after the thaw: the set goes (dump.c), and a tracker this run
 * made with it, the process seized again for that while it is still the one
 * (its pidfd). A tracker it had before stays: its record says nothing is
 * known since (track_finish()), so the next dump takes every page.
 */
void pages_late_undo(struct dump_ctx *d, struct late_hold *h)
{
	if (d->track.created && h->pidfd >= 0 && !pidfd_exited(h->pidfd) &&
	    track_remove_seized(&d->track))
		fail_clear();	/* the first error is the one reported */
}

void pages_late_drop(struct late_hold *h)
{
	if (h->pidfd >= 0)
		close(h->pidfd);
	if (h->mem_fd >= 0)
		close(h->mem_fd);
	h->pidfd = h->mem_fd = -1;
}
