/*
 * Dump: the pages of a frozen target, which (pagescan.c, cowpages.c, the
 * parent set of an incremental dump: parent.c), the image's page cache
 * warmed before the freeze (pagewarm.c), written (pages.c) or sent to a
 * page server (page_xfer.c).
 */
#ifndef MEMDUMP_MEM_PAGES_H
#define MEMDUMP_MEM_PAGES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ctx/dump_ctx.h"

/* pagewarm.c: before the freeze, pages-1.img made, unnamed, and its page cache
 * filled (d->pages_fd, d->pages_warm); pages.c names it and cuts it to the bytes
 * written. For a tree: whether the dump warms, and its processes' unnamed files
 * in dirfd, as far as the cache has room for them all (out[i].fd -1: not warmed). */
int pages_warm(struct dump_ctx *d, const struct dump_opts *o);
int pages_warm_trim(struct dump_ctx *d, int fd, uint64_t written);
/* pages-1.img to write: the warmed one named now, or a new one; -errno */
int pages_image_fd(struct dump_ctx *d);
bool pages_warm_wanted(const struct dump_opts *o);
struct warm_file {
	pid_t pid;
	int fd;
	uint64_t bytes;
	uint64_t dirty;		/* of them, dirty: zeros written (pagewarm.c) */
};
int pages_warm_procs(const struct dump_opts *o, const pid_t *pids, int n, int dirfd,
		     struct warm_file *out);

/* pagescan.c: which pages to dump (d->runs); start and wait, or both at once */
int select_pages_start(struct dump_ctx *d);
int select_pages_wait(struct dump_ctx *d);
int select_pages(struct dump_ctx *d);

/* cowpages.c: the pages of d->runs that are its tree parent's very pages (the same
 * physical page) move to d->tparent_runs */
int cow_select(struct dump_ctx *d);

/* parent.c: --prev-images-dir */
int parent_open(struct dump_ctx *d, const char *path);
/* From addr, the end (<= end) of the stretch the parent holds (*held) or not. */
uint64_t parent_stretch(const struct parent_set *p, uint64_t addr, uint64_t end, bool *held);
int parent_link(struct dump_ctx *d);
void parent_unlink(struct dump_ctx *d);
void parent_free(struct dump_ctx *d);

/* pages.c */
int write_pages(struct dump_ctx *d);
/*
 * pageflush.c: pages-1.img (fd, through the page cache) queued for the disk by
 * a thread of its own as it is written (d->pages_flush; none if it cannot
 * start); told how far it is written, then that no more comes; ended (joined)
 * before the set is synced, or aborted after a failure. NULL: nothing.
 */
void pages_flush_start(struct dump_ctx *d, int fd);
void pages_flush_written(struct pages_flush *f, uint64_t end);
void pages_flush_close(struct pages_flush *f, uint64_t end);
void pages_flush_end(struct dump_ctx *d);
void pages_flush_abort(struct dump_ctx *d);
/* page_xfer.c: pages-1.img to the page server: its stream opened (the fd to write to),
 * a DATA header before each piece, and at the end the pagemap and the commit */
int page_xfer_open(struct dump_ctx *d);
int page_xfer_data(struct dump_ctx *d, uint64_t bytes);
bool page_xfer_copies(const struct dump_ctx *d);	/* TLS: no splice into the stream */
int page_xfer_send(struct dump_ctx *d, const void *buf, uint64_t bytes);	/* header and bytes */
int page_xfer_sync(struct dump_ctx *d);
int page_xfer_error(struct dump_ctx *d, int err);
int page_xfer_commit(struct dump_ctx *d);
/* The frozen target's memory: process_vm_readv, or /proc/PID/mem (use_mem,
 * which reads pages without PROT_READ too; always in a tree). */
ssize_t read_target_mem(const struct dump_ctx *d, bool use_mem, uint64_t addr, void *buf,
			size_t len);

#endif
