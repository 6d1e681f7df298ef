/*
 * A restore's pages image fed to the restorer blob through a pipe, in file
 * order, as its bytes are made (decrypted: crypt.c; decompressed: compress.c)
 * instead of being made whole into a file first: chunk by chunk on two
 * threads, each into its own buffer, written into the pipe in turn (chunk i
 * after chunk i - 1), so the blob fills the process's memory while the next
 * chunks are made. A chunk that fails (does not authenticate, does not
 * decompress) ends the feed before a byte of it is written.
 *
 * Until then the image has a stand-in, a file of its raw size that holds
 * nothing: a restore that cannot read it in file order (a tree, lazy pages,
 * copies) fills it first (feed_fill).
 */
#ifndef MEMDUMP_FEED_H
#define MEMDUMP_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct feed_ops {
	const char *made;	/* how its bytes are made: "decrypted", "decompressed" */
	/*
	 * every chunk is authenticated as it is made (AEAD: its bytes are those
	 * the set was sealed with, in their place): the blob need not sum them
	 */
	bool authenticated;
	/* threads making chunks at once (0: 2); more than the CPUs where they wait for the disk */
	int threads;
	/* a producing thread's own state (its buffers, contexts), or NULL: -ENOMEM */
	void *(*thread_new)(void *src);
	void (*thread_free)(void *ts);
	/*
	 * chunk i made: *out its *len bytes; 0 or -errno (-EIO, -EBADMSG: the
	 * image's). *out is page-aligned and its bytes stay as they are until
	 * the thread's produce() has been called twice more (two buffers in
	 * turn, struct feed_bufs): the pipe may hold its pages
	 * themselves (vmsplice) until its reader has copied them.
	 */
	int (*produce)(void *ts, uint64_t i, const uint8_t **out, size_t *len);
	/* every chunk into the stand-in: 0 or <0 after fail() */
	int (*fill)(void *src);
	/* chunk bad failed with err: fail() naming the image and the chunk, its return */
	int (*failed)(void *src, int err, uint64_t bad);
	void (*free)(void *src);
};

#define FEED_THREADS_MAX	8

struct page_feed;

/* A buffer of len bytes for produce(): page-aligned, its own mapping; NULL: -ENOMEM. */
uint8_t *feed_buf(size_t len);
/* It unmapped (the pages the pipe still holds stay theirs until read). */
void feed_buf_free(uint8_t *buf, size_t len);

/* A producing thread's two chunk buffers of size bytes, taken in turn (produce()). */
struct feed_bufs {
	uint8_t *buf[2];
	size_t size;
	unsigned turn;
};
/* 0, or -ENOMEM (feed_bufs_free() still to call). */
int feed_bufs_init(struct feed_bufs *b, size_t size);
/* The buffer for the thread's next chunk. */
uint8_t *feed_bufs_next(struct feed_bufs *b);
void feed_bufs_free(struct feed_bufs *b);

/*
 * A feed of nr chunks of at most chunk bytes made by ops from src, whose
 * stand-in is the file standin_fd (the feed keeps its identity, not the fd).
 * The feed owns src from then on (ops->free), also when it fails: NULL.
 */
struct page_feed *feed_new(const struct feed_ops *ops, void *src, uint64_t nr, size_t chunk,
			   int standin_fd);
/* f when fd is its stand-in (the same inode), else NULL; f may be NULL. */
struct page_feed *feed_find(struct page_feed *f, int fd);
/* f not NULL and its chunks authenticated as they are made (feed_ops). */
bool feed_authenticated(const struct page_feed *f);
/* How its bytes are made (feed_ops.made). */
const char *feed_made(const struct page_feed *f);
/* Its bytes into its stand-in, once: 0 or <0 after fail(). */
int feed_fill(struct page_feed *f);
/*
 * feed_open() makes the pipe, *rfd its read end (the caller's); feed_run()
 * starts the threads (f NULL or not opened: nothing to do). A restore runs
 * them only once the process is forked: a raw clone3 copies glibc's list of
 * threads but not the threads, and the child's setresgid() (glibc's, which
 * signals every thread of the list) would wait for them forever. 0 or <0
 * after fail().
 */
int feed_open(struct page_feed *f, int *rfd);
int feed_run(struct page_feed *f);
/*
 * The feed's threads gone (cancel: stopped first, 0): 0 when every chunk was
 * made and written; -EPIPE when its reader went before the end (no fail():
 * the reader's failure says why); or <0 after ops->failed() naming the chunk
 * (fail_clear() first: the reader's "the pages ended early" is its echo).
 */
int feed_end(struct page_feed *f, bool cancel);
void feed_free(struct page_feed *f);

#endif
