/*
 * A target's own userfaultfd (not memdump's tracker: track/): dumped as
 * mm_entry.uffd when it is the common case a restore makes exactly (one
 * userfaultfd, nothing in flight, MISSING and WP ranges, no event features),
 * made again by the restorer blob in the restored mm (its ranges registered,
 * its WP bits and zero pages applied again); refused by name, with the state
 * it holds, otherwise (docs/restore.md, **A target's userfaultfd**).
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
/* UFFDIO_REGISTER_MODE_* as the state holds them */
#define UFFD_MODE_MISSING	1u
#define UFFD_MODE_WP		2u
#define UFFD_MODE_MINOR		4u
#define UFFD_MODE_LOCKED	8u	/* not a mode: VM_LOCKED without VM_LOCKONFAULT */
/* UFFD_FEATURE_EVENT_FORK, _REMAP, _REMOVE, _UNMAP */
#define UFFD_NONCOOP_FEATURES	((1UL << 1) | (1UL << 2) | (1UL << 3) | (1UL << 6))

struct uffd_span {
	unsigned long start, end;	/* [start, end) */
	unsigned modes;			/* UFFD_MODE_*: a range's; 0 for a protected run */
};

/*
 * What a userfaultfd holds, as the dump records it (mm_entry.uffd): fdinfo's
 * counts, flags and features, each VMA registered (smaps um/uw/ui) and the
 * runs of pages write-protected now (pagemap bit 57) in the WP ones.
 */
struct uffd_state {
	int fd;
	unsigned long pending, total, features, flags;
	struct uffd_span *ranges, *wp, *zero;	/* zero: the shared zero page mapped
						 * (PAGE_IS_PFNZERO) in a MISSING range */
	size_t nr_ranges, nr_wp, nr_zero;
};

/* st read from /proc for fd of pid; tracked: WP ranges left out (the tracker's). */
int uffd_read(pid_t pid, int fd, bool tracked, struct uffd_state *st);
void uffd_state_free(struct uffd_state *st);

/*
 * What of st is beyond the case a restore makes exactly (one userfaultfd,
 * nothing in flight, MISSING and WP ranges, no event features, no tracker),
 * named for a refusal; NULL when st is that case.
 */
const char *uffd_beyond(const struct uffd_state *st, bool tracked);

/* st as mm_entry.uffd (field 93); e released with uffd_entry_release. */
struct UffdEntry;
int uffd_fill_entry(const struct uffd_state *st, struct UffdEntry *e);
void uffd_entry_release(struct UffdEntry *e);

/*
 * Whether userfaultfd fd of pid is refused (checked before the freeze and at
 * it); why names it with the state it holds. tracked: as for uffd_read.
 */
bool uffd_unsupported(pid_t pid, int fd, bool tracked, char *why, size_t len);

/*
 * The state of fd of pid, frozen, accepted by uffd_unsupported, with the
 * zero pages of its MISSING ranges, into *out (freed with uffd_state_free
 * and free); refused by name when it is beyond a restore now.
 */
int uffd_collect(pid_t pid, int fd, bool tracked, struct uffd_state **out);

/*
 * The restore (uffd_restore.c): mm_entry.uffd checked against the VMAs and
 * the fds (its fd kept free below the blob's), --lazy-pages refused with it;
 * its spans laid out at off in the restorer area for the blob.
 */
struct rst;
int uffd_check(struct rst *r);
size_t uffd_area_size(const struct rst *r);
void uffd_area_fill(struct rst *r, unsigned long off);

#endif
