/*
 * Ghost files: files the target holds open or mapped after they were
 * deleted. Their content (up to the ghost limit, --ghost-limit) is saved in
 * ghost-file-ID.img (a sparse file as its data extents, CRIU's chunks, so
 * that its holes stay holes) and remap-fpath.img links every file entry of such a
 * file to its ghost, as CRIU does; restore recreates the file, opens it for
 * the process and deletes it again. Deleted FIFOs and directories (a cwd or
 * an fd: rmdir left them empty) are ghosts without content.
 */
#ifndef MEMDUMP_GHOST_H
#define MEMDUMP_GHOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "files.pb-c.h"

struct dump_ctx;
struct file_desc;

#define GHOST_LIMIT_DEFAULT	(1ULL << 20)

/* A data extent of a deleted regular file (between its holes). */
struct ghost_chunk {
	uint64_t off, len;
};

/* One deleted inode: its attributes and content. */
struct ghost {
	int id;			/* remap_id, ghost-file-ID.img */
	struct stat st;
	struct ghost_chunk *chunks;	/* its data extents, in order (regular files) */
	int nr_chunks;
	char *data;		/* the bytes of the chunks, one after the other */
};

struct ghost_set {
	struct ghost *g;
	int nr;
};

/*
 * A deleted name (" (deleted)" at its end) of a file st still linked elsewhere: another
 * name of the same inode in the same directory (as process pid sees it, under its
 * root), into out. -ENOENT: none.
 */
int ghost_other_link(pid_t pid, const char *name, const struct stat *st, char *out, size_t len);
/*
 * f (a REG or the path entry of a FIFO, its path still with " (deleted)")
 * becomes a deleted file: the suffix is dropped and its inode's ghost, read
 * through src (a /proc/PID/fd, map_files or exe link), is attached. A deleted
 * name of a file still linked gets no ghost: f->path becomes another link of it
 * (ghost_other_link) and f->deleted_name its own name, or it is refused.
 */
int ghost_attach(struct dump_ctx *d, struct file_desc *f, const char *src);
/* remap-fpath.img and one ghost-file-ID.img per ghost */
int write_ghosts(struct dump_ctx *d);
void ghosts_free(struct ghost_set *gs);

/* Restore (its _restore.c files) */

struct rst;

/* ghost.c: deleted files, recreated before the fds are opened, deleted once they are */
int ghost_check(struct rst *r);
int ghost_create_all(struct rst *r);
void ghost_unlink_all(struct rst *r);
/* Where file id's ghost is recreated; NULL: no ghost, or not created yet. */
const char *ghost_path(struct rst *r, uint32_t file_id);
/* A REG whose own name was deleted (re->deleted_name) opened by it again; the fd or -errno. */
int ghost_open_linked(struct rst *r, const RegFileEntry *re, int flags);

#endif
