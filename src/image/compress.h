/*
 * Compressed pages images (docs/images.md, "Compressed pages"): a pages-N.img
 * whose pagemap head says so (pagemap_head.compress) holds a header, an index
 * of block sizes and the blocks, each PZ_BLOCK bytes of the raw image (the
 * last one shorter) compressed on its own with LZ4 or zstd. Readers get the
 * raw bytes back in a memfd (pz_open_raw): offsets, sizes and checksums are
 * those of the raw image, so everything past the open is unchanged.
 */
#ifndef MEMDUMP_COMPRESS_H
#define MEMDUMP_COMPRESS_H

#include <stdbool.h>
#include <stdint.h>

enum pz_algo { PZ_NONE = 0, PZ_LZ4 = 1, PZ_ZSTD = 2 };

struct pz_opts {
	enum pz_algo algo;
	int level;		/* 0: the algorithm's default (lz4: fast; zstd: 3) */
};

#define PZ_BLOCK	(256u << 10)

/* "lz4", "zstd", "zstd:LEVEL", "lz4:LEVEL" (LZ4 HC), or NULL (lz4): 0 or -EINVAL. */
int pz_parse(const char *s, struct pz_opts *o);
const char *pz_name(enum pz_algo a);
/*
 * The raw pages image name in dirfd replaced by its compressed form (written
 * under a dot name, renamed over it), on both cores: 0 or <0 after fail();
 * *packed its size.
 */
int pz_compress_image(int dirfd, const char *name, const struct pz_opts *o, uint64_t *packed);
/* Its compressed form written into out (at its start, seekable; name stays). */
int pz_compress_fd(int dirfd, const char *name, int out, const struct pz_opts *o,
		   uint64_t *packed);
/*
 * A compressed pages image (fd, named name for errors) decompressed, on both
 * cores, into a new memfd holding the raw bytes: that fd, or <0 after fail().
 * fd stays open.
 */
int pz_open_raw(int fd, const char *name);
/*
 * As pz_open_raw(), but the memfd (returned) only sized: its bytes come
 * from *feed (image/feed.h), fed to the restorer as they are decompressed
 * or put into the memfd by feed_fill(). fd stays open.
 */
struct page_feed;
int pz_open_fed(int fd, const char *name, struct page_feed **feed);
/* Do the len bytes a pages image starts with say it is compressed (its magic)? */
bool pz_is_compressed(const void *start, size_t len);

/*
 * The layout of a compressed pages image, checked as pz_open_raw checks it,
 * for a reader that decodes its blocks itself (the restorer blob decodes
 * LZ4 blocks straight into the restored memory): block b holds raw bytes
 * [b * PZ_BLOCK, ...) and its len[b] bytes start at off[b] in the file
 * (stored[b]: as they are, not compressed; then len[b] is its raw size).
 */
struct pz_layout {
	enum pz_algo algo;
	uint64_t raw, nr_blocks;
	uint64_t *off;
	uint32_t *len;
	uint8_t *stored;
};

/* 0, or <0 after fail() naming name (corrupt, truncated, not compressed). */
int pz_read_layout(int fd, const char *name, struct pz_layout *l);
void pz_layout_free(struct pz_layout *l);

#endif
