/* A file read by a reader thread while the caller consumes it: see streamread.h. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/streamread.h"
#include "log.h"

#define NR_BUFS		4
#define BUF_SIZE	(8u << 20)
#define DIO_ALIGN	4096u

struct slot {
	void *buf;
	ssize_t n;		/* bytes, 0 at the end, -errno */
	bool full;
};

struct stream {
	int fd, dio_fd;		/* dio_fd: the same file opened O_DIRECT, or -1 */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;		/* the consumer gave up */
	struct slot slot[NR_BUFS];
};

/*
 * The same file opened again with O_DIRECT (a new open file description:
 * fd's flags stay as they are), or -1 where it is not the same file or
 * the filesystem has no O_DIRECT.
 */
static int open_direct(int fd)
{
	char path[64];
	struct stat a, b;
	int dfd;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	dfd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	if (fstat(fd, &a) || fstat(dfd, &b) || a.st_dev != b.st_dev || a.st_ino != b.st_ino ||
	    !S_ISREG(b.st_mode)) {
		close(dfd);
		return -1;
	}
	return dfd;
}

/* One buffer's worth at off; O_DIRECT while offsets stay aligned. */
static ssize_t read_at(struct stream *s, void *buf, off_t off)
{
	for (;;) {
		bool direct = s->dio_fd >= 0 && !(off % DIO_ALIGN);
		ssize_t n = pread(direct ? s->dio_fd : s->fd, buf, BUF_SIZE, off);

		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (direct && errno == EINVAL) {	/* no O_DIRECT after all */
			close(s->dio_fd);
			s->dio_fd = -1;
			continue;
		}
		return -errno;
	}
}

static void *reader_main(void *arg)
{
	struct stream *s = arg;
	off_t off = 0;

	for (unsigned i = 0;; i = (i + 1) % NR_BUFS) {
		struct slot *sl = &s->slot[i];
		ssize_t n;

		pthread_mutex_lock(&s->lock);
		while (sl->full && !s->stop)
			pthread_cond_wait(&s->cond, &s->lock);
		pthread_mutex_unlock(&s->lock);
		if (s->stop)
			break;
		n = read_at(s, sl->buf, off);
		pthread_mutex_lock(&s->lock);
		sl->n = n;
		sl->full = true;
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
		if (n <= 0)
			break;
		off += n;
	}
	return NULL;
}

/* Consume the slots in order until the end or an error. */
static int consume_all(struct stream *s, const char *name, stream_consume_fn consume, void *arg)
{
	for (unsigned i = 0;; i = (i + 1) % NR_BUFS) {
		struct slot *sl = &s->slot[i];
		ssize_t n;

		pthread_mutex_lock(&s->lock);
		while (!sl->full)
			pthread_cond_wait(&s->cond, &s->lock);
		n = sl->n;
		pthread_mutex_unlock(&s->lock);
		if (n < 0)
			return fail((int)n, "cannot read image %s: %s", name, strerror((int)-n));
		if (n == 0)
			return 0;
		consume(arg, sl->buf, (size_t)n);
		pthread_mutex_lock(&s->lock);
		sl->full = false;
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
	}
}

static int alloc_slots(struct stream *s)
{
	for (int i = 0; i < NR_BUFS; i++)
		if (posix_memalign(&s->slot[i].buf, DIO_ALIGN, BUF_SIZE))
			return -ENOMEM;
	return 0;
}

static void free_stream(struct stream *s)
{
	for (int i = 0; i < NR_BUFS; i++)
		free(s->slot[i].buf);
	if (s->dio_fd >= 0)
		close(s->dio_fd);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
}

int stream_read(int fd, const char *name, stream_consume_fn consume, void *arg)
{
	struct stream s = { .fd = fd, .dio_fd = open_direct(fd) };
	pthread_t reader;
	int ret;

	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.cond, NULL);
	ret = alloc_slots(&s);
	if (!ret && (ret = -pthread_create(&reader, NULL, reader_main, &s)))
		fail(ret, "cannot start a thread to read image %s: %s", name, strerror(-ret));
	if (ret) {
		free_stream(&s);
		return ret;
	}
	ret = consume_all(&s, name, consume, arg);
	pthread_mutex_lock(&s.lock);
	s.stop = true;
	pthread_cond_broadcast(&s.cond);
	pthread_mutex_unlock(&s.lock);
	pthread_join(reader, NULL);
	free_stream(&s);
	return ret;
}
