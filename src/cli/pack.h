/*
 * An image set as one stream (pack.c; layout in docs/images.md, "Streams"):
 * memdump pack / unpack, and dump / restore --stream through a private
 * temporary directory.
 */
#ifndef MEMDUMP_PACK_H
#define MEMDUMP_PACK_H

#include "cli/options.h"

/* The set in dir written to fd as one stream: 0 or <0 after fail(). */
int pack_set(const char *dir, int fd);
/*
 * A stream read from fd into dir, which must not exist or be empty: unpacked
 * beside it, checked whole (every image against the inventory), then renamed
 * to dir. On any failure nothing is left behind. 0 or <0 after fail().
 */
/* key: a sealed set is opened with it and checked whole; NULL: a sealed set is
 * checked by the stream's checksums only (the restore authenticates it). */
int unpack_set(int fd, const char *dir, const struct img_key *key);

/*
 * dump --stream: the set is written into a private directory (o->dir set to
 * it), then packed to the stream; a killing dump into a pipe writes its
 * pages into the stream while frozen instead, the rest before the kill
 * (o->stream_direct, version 3). stream_dump_begin() also keeps stdout for
 * the stream when it is "-" (memdump's own output goes to stderr then).
 */
struct stream_job {
	char dir[256];		/* the private directory, "" when none */
	int fd;			/* the stream */
	bool own_fd;		/* dup'ed here: closed by stream_end() */
	char prev[PATH_MAX];	/* --prev-images-dir made absolute (pack.c) */
	struct stream_direct *direct;	/* shared with the dump's worker, or NULL (pack.c) */
};
int stream_dump_begin(struct options *o, struct stream_job *j);
/* after the dump: pack (when ret is 0) and remove the directory; the result */
int stream_dump_end(struct stream_job *j, int ret, bool killed_target);
/* restore --stream: unpacked into a private directory, o->dir set to it */
int stream_restore_begin(struct options *o, struct stream_job *j);
void stream_end(struct stream_job *j);

#endif
