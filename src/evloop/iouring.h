/*
 * io_uring instances (docs/io_uring.md): a ring with nothing in the kernel,
 * mapped by mmap, with registered files and buffers, is dumped as
 * mm_entry.iourings and made again by the restorer blob; any other is
 * refused, by name and with the state fdinfo shows.
 */
#ifndef MEMDUMP_IOURING_H
#define MEMDUMP_IOURING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Requests done a restore brings a new ring's counters to, with NOPs. */
#define IOURING_MAX_DONE	(1u << 24)

/*
 * Whether io_uring fd of pid is refused (before the freeze and at it): why
 * names it, with what it holds and the reason.
 */
bool iouring_unsupported(pid_t pid, int fd, char *why, size_t len);

/* The ring at fd of pid (frozen) as an entry (freed with iouring_entry_free); refused by name. */
struct IouringEntry;
int iouring_collect(pid_t pid, int fd, uint32_t fd_flags, struct IouringEntry **out);
void iouring_entry_free(struct IouringEntry *e);

/* The killing dump's dry run: a ring of e's size can be set up here. */
int iouring_dry_run(pid_t pid, const struct IouringEntry *e);

/*
 * The restore (iouring_restore.c): mm_entry.iourings checked (their fds kept
 * free below the blob's, their mappings clear of the VMAs), laid out at off
 * in the restorer area for the blob.
 */
struct rst;
int iouring_check(struct rst *r);
size_t iouring_area_size(const struct rst *r);
void iouring_area_fill(struct rst *r, unsigned long off);

#endif
