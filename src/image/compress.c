/*
 * Compressed pages images (compress.h). Layout, little-endian:
 *
 *   header  magic "MDPAGEZ1", u32 algo (1 lz4, 2 zstd), u32 block size,
 *           u64 raw size, u64 number of blocks
 *   index   one u32 per block: its compressed size; bit 31 set: stored as is
 *   blocks  back to back
 *
 * Every block but the last holds PZ_BLOCK raw bytes: block b starts at raw
 * offset b * PZ_BLOCK, and its compressed bytes after the index and the
 * blocks before it, so blocks decompress in any order and on any core.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lz4.h>
#include <lz4hc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "fdio.h"
#include "common.h"
#include "image/compress.h"
#include "image/feed.h"
#include "log.h"

#define PZ_MAGIC	"MDPAGEZ1"

bool pz_is_compressed(const void *start, size_t len)
{
	return len >= 8 && !memcmp(start, PZ_MAGIC, 8);
}
#define PZ_RAW_BIT	0x80000000u

struct pz_header {
	char magic[8];
	uint32_t algo, block;
	uint64_t raw, nr_blocks;
};

_Static_assert(sizeof(struct pz_header) == 32, "pz_header is 32 bytes");

int pz_parse(const char *s, struct pz_opts *o)
{
	const char *colon;
	char *end;
	size_t n;

	*o = (struct pz_opts){ PZ_LZ4, 0 };
	if (!s || !*s)
		return 0;
	colon = strchr(s, ':');
	n = colon ? (size_t)(colon - s) : strlen(s);
	if (n == 3 && !strncmp(s, "lz4", 3))
		o->algo = PZ_LZ4;
	else if (n == 4 && !strncmp(s, "zstd", 4))
		o->algo = PZ_ZSTD;
	else
		return -EINVAL;
	if (!colon)
		return 0;
	errno = 0;
	long l = strtol(colon + 1, &end, 10);

	if (errno || *end || end == colon + 1 || l < 1 ||
	    l > (o->algo == PZ_ZSTD ? ZSTD_maxCLevel() : LZ4HC_CLEVEL_MAX))
		return -EINVAL;
	o->level = (int)l;
	return 0;
}

const char *pz_name(enum pz_algo a)
{
	return a == PZ_LZ4 ? "lz4" : a == PZ_ZSTD ? "zstd" : "none";
}

static uint64_t nr_blocks(uint64_t raw)
{
	return (raw + PZ_BLOCK - 1) / PZ_BLOCK;
}

static size_t bound(enum pz_algo a)
{
	return a == PZ_ZSTD ? ZSTD_compressBound(PZ_BLOCK) : (size_t)LZ4_compressBound(PZ_BLOCK);
}

/* One block into out (room bytes): its compressed size, or 0 when it does not shrink. */
static size_t compress_block(const struct pz_opts *o, ZSTD_CCtx *zc, const void *in, size_t len,
			     void *out, size_t room)
{
	size_t n;

	if (o->algo == PZ_ZSTD) {
		n = ZSTD_compressCCtx(zc, out, room, in, len, o->level ? o->level : 3);
		if (ZSTD_isError(n))
			n = 0;
	} else if (o->level) {
		n = (size_t)LZ4_compress_HC(in, out, (int)len, (int)room, o->level);
	} else {
		n = (size_t)LZ4_compress_default(in, out, (int)len, (int)room);
	}
	return n && n < len ? n : 0;
}

static int write_all(int fd, const void *buf, size_t len, const char *name)
{
	int ret = fd_write_full(fd, buf, len);

	return ret ? fail(ret, "cannot write the compressed %s: %s", name, strerror(-ret)) : 0;
}

/*
 * Compression on both cores: PZ_BATCH blocks at a time, the even ones on this
 * thread and the odd ones on a second, each into its slot of the batch's
 * buffer (room bytes a block); then written in order.
 */
#define PZ_BATCH	64u

struct pz_batch {
	const struct pz_opts *o;
	const uint8_t *raw;
	uint64_t len, b0, n;		/* blocks [b0, b0 + n) of len raw bytes */
	uint8_t *out;
	size_t room;
	size_t *sizes;			/* compressed size, 0: stored as is */
};

struct pz_half {
	struct pz_batch *bt;
	uint64_t first;
	ZSTD_CCtx *zc;
};

static size_t block_len(uint64_t len, uint64_t b)
{
	return (size_t)(b + 1 < nr_blocks(len) ? PZ_BLOCK : len - b * PZ_BLOCK);
}

static void *compress_half(void *arg)
{
	struct pz_half *h = arg;
	struct pz_batch *bt = h->bt;

	for (uint64_t i = h->first; i < bt->n; i += 2) {
		uint64_t b = bt->b0 + i;

		bt->sizes[i] = compress_block(bt->o, h->zc, bt->raw + b * PZ_BLOCK,
					      block_len(bt->len, b), bt->out + i * bt->room, bt->room);
	}
	return NULL;
}

static void compress_batch(struct pz_batch *bt, struct pz_half h[2])
{
	pthread_t t;
	bool two = bt->n > 1 && !pthread_create(&t, NULL, compress_half, &h[1]);

	compress_half(&h[0]);
	if (two)
		pthread_join(t, NULL);
	else if (bt->n > 1)
		compress_half(&h[1]);
}

/* A batch's blocks into fd in order, their sizes into index. */
static int write_batch(int fd, const struct pz_batch *bt, uint32_t *index, const char *name,
		       uint64_t *pos)
{
	int ret = 0;

	for (uint64_t i = 0; i < bt->n && !ret; i++) {
		uint64_t b = bt->b0 + i;
		size_t in_len = block_len(bt->len, b), n = bt->sizes[i];

		index[b] = n ? (uint32_t)n : (uint32_t)in_len | PZ_RAW_BIT;
		ret = write_all(fd, n ? bt->out + i * bt->room : bt->raw + b * PZ_BLOCK,
				n ? n : in_len, name);
		*pos += n ? n : in_len;
	}
	return ret;
}

/* The blocks of raw (len bytes) into fd, after the header and index (filled in here). */
static int write_blocks(int fd, const uint8_t *raw, uint64_t len, const struct pz_opts *o,
			const char *name, uint64_t *packed)
{
	uint64_t nb = nr_blocks(len);
	struct pz_header h = { .algo = o->algo, .block = PZ_BLOCK, .raw = len, .nr_blocks = nb };
	uint32_t *index = calloc(nb + 1, sizeof(*index));
	struct pz_batch bt = { .o = o, .raw = raw, .len = len, .room = bound(o->algo) };
	struct pz_half half[2] = { { &bt, 0, NULL }, { &bt, 1, NULL } };
	uint64_t pos = sizeof(h) + nb * sizeof(*index);
	int ret;

	bt.out = malloc(PZ_BATCH * bt.room);
	bt.sizes = calloc(PZ_BATCH, sizeof(*bt.sizes));
	for (int i = 0; i < 2 && o->algo == PZ_ZSTD; i++)
		half[i].zc = ZSTD_createCCtx();
	ret = index && bt.out && bt.sizes &&
	      (o->algo != PZ_ZSTD || (half[0].zc && half[1].zc)) ? 0 : -ENOMEM;
	memcpy(h.magic, PZ_MAGIC, 8);
	if (!ret && lseek(fd, (off_t)pos, SEEK_SET) < 0)
		ret = fail(-errno, "cannot write the compressed %s: %s", name, strerror(errno));
	for (bt.b0 = 0; !ret && bt.b0 < nb; bt.b0 += bt.n) {
		bt.n = MIN(nb - bt.b0, (uint64_t)PZ_BATCH);
		compress_batch(&bt, half);
		ret = write_batch(fd, &bt, index, name, &pos);
	}
	if (!ret && pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		ret = fail(-EIO, "cannot write the compressed %s", name);
	if (!ret && nb && pwrite(fd, index, nb * sizeof(*index), sizeof(h)) !=
			  (ssize_t)(nb * sizeof(*index)))
		ret = fail(-EIO, "cannot write the compressed %s", name);
	*packed = pos;
	for (int i = 0; i < 2; i++)
		ZSTD_freeCCtx(half[i].zc);
	free(bt.sizes);
	free(bt.out);
	free(index);
	return ret;
}

static int map_file(int fd, const char *name, const uint8_t **map, uint64_t *len)
{
	struct stat st;

	*map = NULL;
	if (fstat(fd, &st))
		return fail(-errno, "cannot read %s: %s", name, strerror(errno));
	*len = (uint64_t)st.st_size;
	if (!*len)
		return 0;
	*map = mmap(NULL, *len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (*map == MAP_FAILED) {
		*map = NULL;
		return fail(-errno, "cannot map %s: %s", name, strerror(errno));
	}
	return 0;
}

int pz_compress_fd(int dirfd, const char *name, int out, const struct pz_opts *o,
		   uint64_t *packed)
{
	const uint8_t *raw;
	uint64_t len;
	int in = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), ret;

	if (in < 0)
		return fail(-errno, "cannot open %s to compress it: %s", name, strerror(errno));
	ret = map_file(in, name, &raw, &len);
	close(in);
	if (!ret)
		ret = write_blocks(out, raw, len, o, name, packed);
	if (raw)
		munmap((void *)raw, len);
	return ret;
}

int pz_compress_image(int dirfd, const char *name, const struct pz_opts *o, uint64_t *packed)
{
	char tmp[80];
	int out, ret;

	snprintf(tmp, sizeof(tmp), ".%s.z", name);
	out = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (out < 0)
		return fail(-errno, "cannot create the compressed %s: %s", name, strerror(errno));
	ret = pz_compress_fd(dirfd, name, out, o, packed);
	if (close(out) && !ret)
		ret = fail(-errno, "cannot write the compressed %s: %s", name, strerror(errno));
	if (!ret && renameat(dirfd, tmp, dirfd, name))
		ret = fail(-errno, "cannot rename the compressed %s: %s", name, strerror(errno));
	if (ret)
		unlinkat(dirfd, tmp, 0);
	return ret;
}

/* --- reading --- */

struct pz_read {
	const char *name;
	const uint8_t *src;		/* the compressed image, mapped */
	int mfd;			/* the memfd, written with pwrite */
	struct pz_header h;
	const uint32_t *index;
	uint64_t *start;		/* each block's offset in src */
	int algo;
	uint64_t bad;			/* the first block that failed, or UINT64_MAX */
	int werr;			/* the memfd's writes failed: -errno */
	pthread_mutex_t lock;
};

static int check_layout(struct pz_read *r, uint64_t file_len)
{
	uint64_t pos = sizeof(r->h);

	if (file_len < sizeof(r->h) || memcmp(r->src, PZ_MAGIC, 8))
		return fail(-EIO, "image %s is corrupt: not a compressed pages image", r->name);
	memcpy(&r->h, r->src, sizeof(r->h));
	if ((r->h.algo != PZ_LZ4 && r->h.algo != PZ_ZSTD) || r->h.block != PZ_BLOCK ||
	    r->h.nr_blocks != nr_blocks(r->h.raw) || r->h.raw > (1ULL << 48) ||
	    (file_len - pos) / sizeof(uint32_t) < r->h.nr_blocks)
		return fail(-EIO, "image %s is corrupt: its compression header is wrong", r->name);
	r->index = (const uint32_t *)(r->src + pos);
	pos += r->h.nr_blocks * sizeof(uint32_t);
	r->start = calloc(r->h.nr_blocks + 1, sizeof(*r->start));
	if (!r->start)
		return -ENOMEM;
	for (uint64_t b = 0; b < r->h.nr_blocks; b++) {
		r->start[b] = pos;
		pos += r->index[b] & ~PZ_RAW_BIT;
		if (pos > file_len)
			return fail(-EIO, "image %s is truncated: its block %" PRIu64 " ends past its "
				    "end", r->name, b);
	}
	if (pos != file_len)
		return fail(-EIO, "image %s is corrupt: %" PRIu64 " bytes after its last block",
			    r->name, file_len - pos);
	return 0;
}

/* 0, or -errno: a write, not the image, failed */
static int pwrite_all(int fd, const uint8_t *p, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -ENOSPC;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/*
 * Block b into the memfd: decompressed into out (a PZ_BLOCK buffer of the
 * thread, its pages faulted once) and written there with pwrite, which
 * allocates the memfd's pages in the kernel: a shared mapping of it would
 * take a page-table fault for every 4 KiB page (~12 us each on this VM).
 */
/* How many raw bytes block b holds (the last one may be short). */
static size_t block_raw(const struct pz_read *r, uint64_t b)
{
	return (size_t)(b + 1 < r->h.nr_blocks ? PZ_BLOCK : r->h.raw - b * PZ_BLOCK);
}

/* A compressed block's clen bytes in decoded into out, exactly want bytes: ok? */
static bool decode(const struct pz_read *r, ZSTD_DCtx *zd, const uint8_t *in, size_t clen,
		   uint8_t *out, size_t want)
{
	if (r->h.algo == PZ_ZSTD) {
		size_t n = ZSTD_decompressDCtx(zd, out, want, in, clen);

		return !ZSTD_isError(n) && n == want;
	}
	return LZ4_decompress_safe((const char *)in, (char *)out, (int)clen, (int)want) ==
	       (int)want;
}

/* 0, -EIO: the block does not decompress, or the -errno of the write. */
static int decompress_block(struct pz_read *r, ZSTD_DCtx *zd, uint64_t b, uint8_t *out)
{
	size_t want = block_raw(r, b), clen = r->index[b] & ~PZ_RAW_BIT;
	const uint8_t *in = r->src + r->start[b];

	if (r->index[b] & PZ_RAW_BIT)
		return clen != want ? -EIO : pwrite_all(r->mfd, in, want, b * PZ_BLOCK);
	return !decode(r, zd, in, clen, out, want) ? -EIO :
	       pwrite_all(r->mfd, out, want, b * PZ_BLOCK);
}

static void note_bad(struct pz_read *r, uint64_t b, int err)
{
	pthread_mutex_lock(&r->lock);
	if (err != -EIO && !r->werr)
		r->werr = err;
	else if (err == -EIO && b < r->bad)
		r->bad = b;
	pthread_mutex_unlock(&r->lock);
}

/* Every other block from the first one, (intptr_t) of the two halves of the work. */
struct pz_worker {
	struct pz_read *r;
	uint64_t first;
};

static void *decompress_every_other(void *arg)
{
	struct pz_worker *w = arg;
	ZSTD_DCtx *zd = w->r->h.algo == PZ_ZSTD ? ZSTD_createDCtx() : NULL;
	uint8_t *out = malloc(PZ_BLOCK);

	for (uint64_t b = w->first; b < w->r->h.nr_blocks; b += 2) {
		int err = (w->r->h.algo == PZ_ZSTD && !zd) || !out ? -ENOMEM :
			  decompress_block(w->r, zd, b, out);

		if (err) {
			note_bad(w->r, b, err);
			break;
		}
	}
	free(out);
	ZSTD_freeDCtx(zd);
	return NULL;
}

/* Both halves, the second on a thread of its own when there is more than one block. */
static void decompress_all(struct pz_read *r)
{
	struct pz_worker w0 = { r, 0 }, w1 = { r, 1 };
	pthread_t t;
	bool two = r->h.nr_blocks > 1 && !pthread_create(&t, NULL, decompress_every_other, &w1);

	decompress_every_other(&w0);
	if (two)
		pthread_join(t, NULL);
	else if (r->h.nr_blocks > 1)
		decompress_every_other(&w1);
}

static int corrupt_block(const struct pz_read *r, uint64_t b)
{
	return fail(-EIO, "image %s is corrupt: its block %" PRIu64 " (pages bytes %#" PRIx64
		    "-%#" PRIx64 ") does not decompress", r->name, b, b * (uint64_t)PZ_BLOCK,
		    MIN((b + 1) * (uint64_t)PZ_BLOCK, r->h.raw));
}

/* Its raw bytes into mfd (r->lock initialized): 0 or <0 after fail(). */
static int fill_memfd(struct pz_read *r, int mfd)
{
	if (ftruncate(mfd, (off_t)r->h.raw))
		return fail(-errno, "cannot decompress %s: %s", r->name, strerror(errno));
	if (!r->h.raw)
		return 0;
	r->mfd = mfd;
	r->bad = UINT64_MAX;
	r->werr = 0;
	decompress_all(r);
	if (r->werr)
		return fail(r->werr, "cannot decompress %s: %s", r->name, strerror(-r->werr));
	return r->bad != UINT64_MAX ? corrupt_block(r, r->bad) : 0;
}

static int copy_layout(const struct pz_read *r, struct pz_layout *l)
{
	uint64_t nb = r->h.nr_blocks;

	l->algo = (enum pz_algo)r->h.algo;
	l->raw = r->h.raw;
	l->nr_blocks = nb;
	l->off = calloc(nb + 1, sizeof(*l->off));
	l->len = calloc(nb + 1, sizeof(*l->len));
	l->stored = calloc(nb + 1, sizeof(*l->stored));
	if (!l->off || !l->len || !l->stored)
		return -ENOMEM;
	for (uint64_t b = 0; b < nb; b++) {
		size_t want = block_raw(r, b);

		l->off[b] = r->start[b];
		l->len[b] = r->index[b] & ~PZ_RAW_BIT;
		l->stored[b] = !!(r->index[b] & PZ_RAW_BIT);
		/* a block that did not shrink is stored: a compressed one is shorter than its bytes */
		if (l->stored[b] ? l->len[b] != want : l->len[b] >= want)
			return fail(-EIO, "image %s is corrupt: its block %" PRIu64 " has a wrong "
				    "size (%u bytes for %zu)", r->name, b, l->len[b], want);
	}
	return 0;
}

int pz_read_layout(int fd, const char *name, struct pz_layout *l)
{
	struct pz_read r = { .name = name };
	uint64_t len = 0;
	int ret = map_file(fd, name, &r.src, &len);

	memset(l, 0, sizeof(*l));
	if (!ret)
		ret = check_layout(&r, len);
	if (!ret)
		ret = copy_layout(&r, l);
	if (r.src)
		munmap((void *)r.src, len);
	free(r.start);
	if (ret)
		pz_layout_free(l);
	return ret;
}

void pz_layout_free(struct pz_layout *l)
{
	free(l->off);
	free(l->len);
	free(l->stored);
	memset(l, 0, sizeof(*l));
}

int pz_open_raw(int fd, const char *name)
{
	struct pz_read r = { .name = name };
	uint64_t len = 0;
	int mfd = -1, ret = map_file(fd, name, &r.src, &len);

	pthread_mutex_init(&r.lock, NULL);
	if (!ret)
		ret = check_layout(&r, len);
	if (!ret) {
		mfd = memfd_create("memdump-pages", MFD_CLOEXEC);
		if (mfd < 0)
			ret = fail(-errno, "cannot decompress %s: %s", name, strerror(errno));
	}
	if (!ret)
		ret = fill_memfd(&r, mfd);
	pthread_mutex_destroy(&r.lock);
	if (r.src)
		munmap((void *)r.src, len);
	free(r.start);
	if (ret && mfd >= 0)
		close(mfd);
	return ret ? ret : mfd;
}

/* ---- a restore's pages image fed as it is decompressed (image/feed.h) ---- */

#define FEED_BLOCKS	4	/* blocks in a chunk of the feed: 1 MiB */

/* The compressed image, mapped for the feed's life; the memfd it stands in for. */
struct pz_feed {
	struct pz_read r;
	uint64_t len;		/* of the mapping */
	int fd;			/* the compressed file: the feed's threads pread its blocks */
	char name[64];
};

static uint64_t feed_chunks(const struct pz_read *r)
{
	return r->h.nr_blocks ? (r->h.nr_blocks + FEED_BLOCKS - 1) / FEED_BLOCKS : 1;
}

static void zfeed_free(void *src)
{
	struct pz_feed *z = src;

	if (z->r.src)
		munmap((void *)z->r.src, z->len);
	if (z->r.mfd >= 0)
		close(z->r.mfd);
	if (z->fd >= 0)
		close(z->fd);
	free(z->r.start);
	pthread_mutex_destroy(&z->r.lock);
	free(z);
}

static int zfeed_fill(void *src)
{
	struct pz_feed *z = src;

	return fill_memfd(&z->r, z->r.mfd);
}

static int zfeed_failed(void *src, int err, uint64_t bad)
{
	struct pz_feed *z = src;

	if (err == -EIO)
		return corrupt_block(&z->r, z->r.bad != UINT64_MAX ? z->r.bad : bad * FEED_BLOCKS);
	return fail(err, "cannot decompress %s: %s", z->name, strerror(-err));
}

/*
 * A feeding thread's: its decoder, a block's compressed bytes (read, not
 * taken from the mapping: a file cut under a mapping is a SIGBUS, under a
 * read a short read), its two chunk buffers in turn (feed_ops.produce).
 */
struct zfeed_thread {
	struct pz_feed *z;
	ZSTD_DCtx *zd;
	uint8_t *in;
	struct feed_bufs out;
};

static void zfeed_thread_free(void *ts)
{
	struct zfeed_thread *t = ts;

	ZSTD_freeDCtx(t->zd);
	feed_bufs_free(&t->out);
	free(t->in);
	free(t);
}

static void *zfeed_thread_new(void *src)
{
	struct pz_feed *z = src;
	struct zfeed_thread *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->z = z;
	t->zd = z->r.h.algo == PZ_ZSTD ? ZSTD_createDCtx() : NULL;
	t->in = malloc(PZ_BLOCK);
	if (feed_bufs_init(&t->out, (size_t)MIN((uint64_t)FEED_BLOCKS * PZ_BLOCK, z->r.h.raw)) ||
	    !t->in || (z->r.h.algo == PZ_ZSTD && !t->zd)) {
		zfeed_thread_free(t);
		return NULL;
	}
	return t;
}

/*
 * Block b's raw bytes into out, its compressed ones read into the thread's
 * buffer first: 0, -EIO (the block noted bad), or -errno of the read.
 */
static int decode_block(struct zfeed_thread *t, uint64_t b, uint8_t *out)
{
	struct pz_read *r = &t->z->r;
	size_t want = block_raw(r, b), clen = r->index[b] & ~PZ_RAW_BIT;
	ssize_t got;
	bool ok;

	if (clen > PZ_BLOCK) {	/* longer than its raw bytes: corrupt */
		note_bad(r, b, -EIO);
		return -EIO;
	}
	got = pread(t->z->fd, t->in, clen, (off_t)r->start[b]);
	if (got < 0)
		return -errno;
	if ((size_t)got != clen)
		return -ENODATA;	/* the file was cut since its check */
	if (r->index[b] & PZ_RAW_BIT) {
		ok = clen == want;
		if (ok)
			memcpy(out, t->in, want);
	} else {
		ok = decode(r, t->zd, t->in, clen, out, want);
	}
	if (!ok)
		note_bad(r, b, -EIO);
	return ok ? 0 : -EIO;
}

static int zfeed_produce(void *ts, uint64_t i, const uint8_t **out, size_t *len)
{
	struct zfeed_thread *t = ts;
	struct pz_read *r = &t->z->r;
	uint64_t b0 = i * FEED_BLOCKS, b1 = MIN(b0 + FEED_BLOCKS, r->h.nr_blocks);
	uint8_t *o = feed_bufs_next(&t->out);

	*out = o;
	*len = (size_t)(MIN(b1 * (uint64_t)PZ_BLOCK, r->h.raw) - MIN(b0 * (uint64_t)PZ_BLOCK, r->h.raw));
	for (uint64_t b = b0; b < b1; b++) {
		int ret = decode_block(t, b, o + (b - b0) * PZ_BLOCK);

		if (ret)
			return ret;
	}
	return 0;
}

static const struct feed_ops pz_feed_ops = {
	.made = "decompressed",
	.thread_new = zfeed_thread_new,
	.thread_free = zfeed_thread_free,
	.produce = zfeed_produce,
	.fill = zfeed_fill,
	.failed = zfeed_failed,
	.free = zfeed_free,
};

int pz_open_fed(int fd, const char *name, struct page_feed **feed)
{
	struct pz_feed *z = calloc(1, sizeof(*z));
	int mfd = -1, ret;

	*feed = NULL;
	if (!z)
		return -ENOMEM;
	snprintf(z->name, sizeof(z->name), "%s", name);
	z->r = (struct pz_read){ .name = z->name, .mfd = -1, .bad = UINT64_MAX };
	z->fd = -1;
	pthread_mutex_init(&z->r.lock, NULL);
	ret = map_file(fd, name, &z->r.src, &z->len);
	if (!ret)
		ret = check_layout(&z->r, z->len);
	if (!ret) {
		/* its blocks read from the disk while the restore prepares */
		posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
		z->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		mfd = z->fd < 0 ? -1 : memfd_create("memdump-pages", MFD_CLOEXEC);
		if (mfd < 0 || ftruncate(mfd, (off_t)z->r.h.raw))
			ret = fail(-errno, "cannot decompress %s: %s", name, strerror(errno));
	}
	if (!ret) {
		z->r.mfd = fcntl(mfd, F_DUPFD_CLOEXEC, 3);
		if (z->r.mfd < 0)
			ret = fail(-errno, "cannot keep %s open: %s", name, strerror(errno));
	}
	if (ret) {
		if (mfd >= 0)
			close(mfd);
		zfeed_free(z);
		return ret;
	}
	*feed = feed_new(&pz_feed_ops, z, feed_chunks(&z->r), (size_t)FEED_BLOCKS * PZ_BLOCK, mfd);
	if (!*feed) {
		close(mfd);
		return -ENOMEM;
	}
	return mfd;
}
