/*
 * The kinds of open file memdump dumps and restores, in one table
 * (fd_kinds.c): how the dump recognises one and what it collects and
 * writes, how the restore checks and opens it, how `memdump show` prints
 * it. A new kind is its own file (dump, restore and show of it), its proto,
 * and one line of the table.
 *
 * Regular files, pipes, FIFOs, terminals and memfds are the files kind's
 * own: files.c recognises them (a path, a pipe inode, a terminal's rdev) and
 * writes their entries itself; their rows give the restore and show sides.
 */
#ifndef MEMDUMP_FD_KINDS_H
#define MEMDUMP_FD_KINDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "ctx/file_desc.h"
#include "files.pb-c.h"

struct dump_ctx;
struct dumpset;
struct fd_policy;
struct image;
struct rdesc;
struct rst;

/* What `memdump show` prints of one fd's file. */
struct fd_show {
	char path[4096];
	uint32_t flags;			/* open flags */
	uint64_t pos;
	bool has_pos;
};

struct fd_kind {
	const char *name;		/* as `memdump check --fd-kinds` lists it */
	const char *home;		/* the file that dumps it */
	FdTypes type;			/* its type in files.img */
	enum file_kind kind;		/* the dump's (file_desc.kind) */
	/* dump: is fd (its /proc link, its stat) one? NULL: the files kind's own */
	bool (*is)(pid_t pid, int fd, const char *link, const struct stat *st);
	/* why it cannot be dumped (before the freeze, and again frozen); NULL: it can */
	bool (*unsupported)(const struct fd_policy *p, int fd, const char *link,
			    const struct stat *st, char *why, size_t len);
	/* frozen: f (kind, st, flags set) filled from the fd */
	int (*collect)(struct dump_ctx *d, int fd, const char *link, struct file_desc *f);
	/* its entries in files.img (and images of its own) */
	int (*write)(struct image *files, const struct file_desc *f);
	/* restore: fe of this type is this kind's (its entry is there) */
	bool (*has_entry)(const FileEntry *fe);
	/* before anything starts; NULL: nothing more to check */
	int (*check)(struct rst *r, const FileEntry *fe);
	/* opened in memdump: d->fd, or 0 when it opened every fd of its kind at once */
	int (*open)(struct rst *r, const FileEntry *fe, struct rdesc *d);
	void (*show)(const struct dumpset *ds, const FileEntry *fe, struct fd_show *s);
	/*
	 * dump: f (kind, st, flags set) filled from memdump's own copy fd of a file
	 * only in flight (SCM_RIGHTS: no process of the dump holds it); NULL: refused
	 */
	int (*collect_inflight)(struct dump_ctx *d, int fd, struct file_desc *f);
};

/* Dump: the kind of fd, or NULL when it is the files kind's own (or unknown). */
const struct fd_kind *fd_kind_of_fd(pid_t pid, int fd, const char *link, const struct stat *st);
/* Dump: the kind of a collected description. */
const struct fd_kind *fd_kind_of_desc(const struct file_desc *f);
/* Restore, show: the kind of an entry of files.img, or NULL (a type memdump does not know,
 * or an entry without its part). */
const struct fd_kind *fd_kind_of_entry(const FileEntry *fe);
/* Every kind, one per line: `memdump check --fd-kinds`. */
void fd_kinds_print(FILE *out);

#endif
