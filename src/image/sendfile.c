/*
 * A file's bytes to a stream, with their hash (sendfile.h).
 *
 * read() and write() copy every byte twice in memdump (page cache to the
 * buffer, buffer to the pipe) on one CPU, and the hash is a third pass
 * there. Spliced, the pipe takes references to the page-cache pages and
 * the hash runs beside it: a thread preads the same bytes (a read, not a
 * mapping: a file cut meanwhile is a short read, not a SIGBUS) into a
 * buffer of its own and hashes them. A file changed between the two reads
 * gives a stream whose checksum does not match its bytes: unpack refuses it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "fdio.h"
#include "image/sendfile.h"

#define SPLICE_MIN	(4u << 20)	/* smaller files: the copy is cheaper than a thread */
#define HASH_BUF	(1u << 20)
#define PIPE_WANT	(4 << 20)

struct hasher {
	int fd;
	uint64_t size;
	struct hash64 *h;
	atomic_bool stop;	/* the sender failed: no need to go on */
	int ret;
};

static void *hash_thread(void *arg)
{
	struct hasher *t = arg;
	uint8_t *buf = malloc(HASH_BUF);
	uint64_t off = 0;

	t->ret = buf ? 0 : -ENOMEM;
	while (!t->ret && off < t->size && !atomic_load(&t->stop)) {
		ssize_t n = pread(t->fd, buf, MIN((uint64_t)HASH_BUF, t->size - off), (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			t->ret = n < 0 ? -errno : -EIO;
			break;
		}
		hash64_update(t->h, buf, (size_t)n);
		off += (uint64_t)n;
	}
	free(buf);
	return NULL;
}

/* size bytes of fd spliced into out; -EOPNOTSUPP: refused at the first byte (sent none) */
static int splice_all(int fd, uint64_t size, int out, const char **what)
{
	loff_t off = 0;

	while ((uint64_t)off < size) {
		size_t want = (size_t)MIN(size - (uint64_t)off, (uint64_t)1 << 30);
		ssize_t n = splice(fd, &off, out, NULL, want, SPLICE_F_MOVE | SPLICE_F_MORE);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EINVAL && off == 0)
			return -EOPNOTSUPP;	/* a file system that cannot splice */
		if (n < 0) {
			/* the pipe's reader gone is a write error; anything else the file's */
			*what = errno == EPIPE ? "write" : "read";
			return -errno;
		}
		if (n == 0) {
			*what = "read";
			return -EIO;	/* the file shrank */
		}
	}
	return 0;
}

static int splice_hashed(int fd, uint64_t size, int out, struct hash64 *h, const char **what)
{
	struct hasher t = { .fd = fd, .size = size, .h = h };
	pthread_t tid;
	int ret, err = pthread_create(&tid, NULL, hash_thread, &t);

	if (err)
		return -EAGAIN;	/* the caller copies instead */
	ret = splice_all(fd, size, out, what);
	if (ret)
		atomic_store(&t.stop, true);
	pthread_join(tid, NULL);
	if (!ret && t.ret) {
		*what = "read";
		ret = t.ret;
	}
	return ret;
}

static int copy_hashed(int fd, uint64_t size, int out, struct hash64 *h, void *buf, size_t buf_len,
		       const char **what)
{
	uint64_t off = 0;

	while (off < size) {
		ssize_t n = pread(fd, buf, MIN((uint64_t)buf_len, size - off), (off_t)off);
		int ret;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			*what = "read";
			return n < 0 ? -errno : -EIO;
		}
		hash64_update(h, buf, (size_t)n);
		ret = fd_write_full(out, buf, (size_t)n);
		if (ret) {
			*what = "write";
			return ret;
		}
		off += (uint64_t)n;
	}
	return 0;
}

static bool is_pipe(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISFIFO(st.st_mode);
}

int img_send_file(int fd, uint64_t size, int out, struct hash64 *h, void *buf, size_t buf_len,
		  const char **what)
{
	if (size >= SPLICE_MIN && is_pipe(out)) {
		struct hash64 start = *h;
		int ret = splice_hashed(fd, size, out, h, what);

		/* nothing was sent: no thread, or no splice from this file */
		if (ret != -EAGAIN && ret != -EOPNOTSUPP)
			return ret;
		*h = start;
	}
	return copy_hashed(fd, size, out, h, buf, buf_len, what);
}

void img_send_grow_pipe(int out)
{
	if (!is_pipe(out) || fcntl(out, F_GETPIPE_SZ) >= PIPE_WANT)
		return;
	/* more than pipe-max-size needs CAP_SYS_RESOURCE; 1 MiB is anyone's by default */
	if (fcntl(out, F_SETPIPE_SZ, PIPE_WANT) < 0)
		(void)fcntl(out, F_SETPIPE_SZ, 1 << 20);
}
