/*
 * A pages image fed to the restorer blob as it is made (feed.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "image/feed.h"
#include "log.h"

struct feed_worker {
	struct page_feed *f;
	uint64_t first;		/* its chunks: first, first + nr_threads, ... */
};

struct page_feed {
	const struct feed_ops *ops;
	void *src;
	uint64_t nr;
	size_t chunk;
	dev_t dev;		/* the stand-in's */
	ino_t ino;
	bool filled;
	/* a feed: its pipe open (opened), its threads started (running) */
	bool opened, running;
	int wfd, cancel;	/* the pipe's write end (non-blocking); an eventfd */
	bool splice;		/* chunks handed to the pipe with vmsplice, not copied */
	int nr_threads;
	pthread_t tid[FEED_THREADS_MAX];
	struct feed_worker w[FEED_THREADS_MAX];
	pthread_mutex_t lock;
	pthread_cond_t turn_cv;
	uint64_t turn;		/* the chunk to be written next */
	bool stop;
	int err;
	uint64_t bad;
};

struct page_feed *feed_new(const struct feed_ops *ops, void *src, uint64_t nr, size_t chunk,
			   int standin_fd)
{
	struct page_feed *f = calloc(1, sizeof(*f));
	struct stat st;

	if (!f || fstat(standin_fd, &st)) {
		free(f);
		ops->free(src);
		return NULL;
	}
	*f = (struct page_feed){ .ops = ops, .src = src, .nr = nr, .chunk = chunk,
				 .dev = st.st_dev, .ino = st.st_ino, .wfd = -1, .cancel = -1 };
	return f;
}

struct page_feed *feed_find(struct page_feed *f, int fd)
{
	struct stat st;

	if (!f || fd < 0 || fstat(fd, &st))
		return NULL;
	return st.st_dev == f->dev && st.st_ino == f->ino ? f : NULL;
}

bool feed_authenticated(const struct page_feed *f)
{
	return f && f->ops->authenticated;
}

const char *feed_made(const struct page_feed *f)
{
	return f->ops->made;
}

int feed_fill(struct page_feed *f)
{
	int ret;

	if (f->filled)
		return 0;
	ret = f->ops->fill(f->src);
	f->filled = !ret;
	return ret;
}

uint8_t *feed_buf(size_t len)
{
	void *p = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void feed_buf_free(uint8_t *buf, size_t len)
{
	if (buf)
		munmap(buf, len ? len : 1);
}

int feed_bufs_init(struct feed_bufs *b, size_t size)
{
	*b = (struct feed_bufs){ .size = size };
	b->buf[0] = feed_buf(size);
	b->buf[1] = feed_buf(size);
	return b->buf[0] && b->buf[1] ? 0 : -ENOMEM;
}

uint8_t *feed_bufs_next(struct feed_bufs *b)
{
	return b->buf[b->turn++ & 1];
}

void feed_bufs_free(struct feed_bufs *b)
{
	feed_buf_free(b->buf[0], b->size);
	feed_buf_free(b->buf[1], b->size);
	b->buf[0] = b->buf[1] = NULL;
}

/*
 * Some of a chunk into the pipe: its pages themselves when f->splice (no
 * copy; produce()'s buffers stay as they are until the reader has them),
 * else copied. The bytes taken, or -1 with errno.
 */
static ssize_t feed_put(struct page_feed *f, const uint8_t *buf, size_t len)
{
	struct iovec iov = { (void *)buf, len };

	if (f->splice)
		return vmsplice(f->wfd, &iov, 1, SPLICE_F_NONBLOCK);
	return write(f->wfd, buf, len);
}

/* len bytes into the pipe, waiting for room: 0, -EPIPE (no reader), -ECANCELED. */
static int feed_write(struct page_feed *f, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = feed_put(f, buf, len);
		struct pollfd p[2] = { { .fd = f->wfd, .events = POLLOUT },
				       { .fd = f->cancel, .events = POLLIN } };

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return -errno;
		if (p[1].revents)
			return -ECANCELED;
	}
	return 0;
}

/* Chunk i's turn to be written (the ones before it are), or the feed stopped: false. */
static bool feed_turn(struct page_feed *f, uint64_t i)
{
	bool go;

	pthread_mutex_lock(&f->lock);
	while (!f->stop && f->turn != i)
		pthread_cond_wait(&f->turn_cv, &f->lock);
	go = !f->stop;
	pthread_mutex_unlock(&f->lock);
	return go;
}

/* Chunk i written (ret 0: the next one's turn) or the feed stopped by it. */
static void feed_done(struct page_feed *f, uint64_t i, int ret)
{
	pthread_mutex_lock(&f->lock);
	if (ret) {
		f->stop = true;
		f->err = ret;
		f->bad = i;
	} else {
		f->turn = i + 1;
	}
	/* the reader sees the end: the turn's holder alone writes, the others see stop */
	if ((ret || f->turn == f->nr) && f->wfd >= 0) {
		close(f->wfd);
		f->wfd = -1;
	}
	pthread_cond_broadcast(&f->turn_cv);
	pthread_mutex_unlock(&f->lock);
}

static void *feed_thread(void *arg)
{
	struct page_feed *f = ((struct feed_worker *)arg)->f;
	uint64_t first = ((struct feed_worker *)arg)->first;
	void *ts = f->ops->thread_new(f->src);
	int ret = ts ? 0 : -ENOMEM;

	for (uint64_t i = first; i < f->nr; i += (uint64_t)f->nr_threads) {
		const uint8_t *out = NULL;
		size_t len = 0;

		if (!ret)
			ret = f->ops->produce(ts, i, &out, &len);
		if (!feed_turn(f, i))
			break;
		if (!ret)
			ret = feed_write(f, out, len);
		feed_done(f, i, ret);
		if (ret)
			break;
	}
	if (ts)
		f->ops->thread_free(ts);
	return NULL;
}

/* The pipe (its read end blocking, its write end not) and the eventfd that cancels. */
static int feed_pipe(struct page_feed *f, int *rfd)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC))
		return fail(-errno, "cannot make a pipe for the pages image: %s", strerror(errno));
	*rfd = p[0];
	f->wfd = p[1];
	/*
	 * A chunk at once in the pipe (best effort: pipe-max-size may be less).
	 * vmsplice when the pipe holds no more than a chunk's pages: once a
	 * chunk is all in it, the reader has copied every chunk before, so the
	 * buffer of the chunk before those is free again (feed_ops.produce).
	 */
	fcntl(p[1], F_SETPIPE_SZ, (int)f->chunk);
	f->splice = f->chunk % PAGE_SIZE == 0 && fcntl(p[1], F_GETPIPE_SZ) > 0 &&
		    (size_t)fcntl(p[1], F_GETPIPE_SZ) <= f->chunk;
	f->cancel = eventfd(0, EFD_CLOEXEC);
	if (f->cancel < 0 || fcntl(p[1], F_SETFL, O_NONBLOCK)) {
		int err = -errno;

		close(p[0]);
		close(p[1]);
		f->wfd = -1;
		return fail(err, "cannot make a pipe for the pages image: %s", strerror(-err));
	}
	return 0;
}

int feed_open(struct page_feed *f, int *rfd)
{
	int ret = feed_pipe(f, rfd);

	if (ret)
		return ret;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->turn_cv, NULL);
	f->turn = 0;
	f->stop = false;
	f->err = 0;
	f->nr_threads = 0;
	f->opened = true;
	return 0;
}

int feed_run(struct page_feed *f)
{
	sigset_t all, old;
	int want, ret = 0;

	if (!f || !f->opened || f->running)
		return 0;
	want = (int)MIN((uint64_t)(f->ops->threads ? f->ops->threads : 2), f->nr);
	want = MAX(MIN(want, FEED_THREADS_MAX), 1);
	/* no signal for them: memdump's handlers run on its own thread; EPIPE, not SIGPIPE */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	f->nr_threads = want;	/* each thread takes every nr_threads-th chunk */
	for (int t = 0; t < want; t++) {
		f->w[t] = (struct feed_worker){ f, (uint64_t)t };
		ret = -pthread_create(&f->tid[t], NULL, feed_thread, &f->w[t]);
		if (ret) {
			f->nr_threads = t;
			break;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	f->running = true;
	if (ret) {
		feed_end(f, true);
		return fail(ret, "cannot start feeding the pages image: %s", strerror(-ret));
	}
	return 0;
}

int feed_end(struct page_feed *f, bool cancel)
{
	uint64_t one = 1;
	int ret;

	if (!f || !f->opened)
		return 0;
	if (cancel && f->running) {
		pthread_mutex_lock(&f->lock);
		f->stop = true;
		pthread_cond_broadcast(&f->turn_cv);
		pthread_mutex_unlock(&f->lock);
		if (write(f->cancel, &one, sizeof(one)) != sizeof(one))
			pr_debug("cannot cancel the pages image's feed: %s", strerror(errno));
	}
	for (int t = 0; f->running && t < f->nr_threads; t++)
		pthread_join(f->tid[t], NULL);
	f->opened = false;
	f->running = false;	/* never run and not cancelled: no chunk written, -EPIPE below */
	if (f->wfd >= 0)
		close(f->wfd);
	close(f->cancel);
	f->wfd = f->cancel = -1;
	pthread_cond_destroy(&f->turn_cv);
	pthread_mutex_destroy(&f->lock);
	if (cancel)
		return 0;
	ret = f->err ? f->err : f->turn != f->nr ? -EPIPE : 0;
	if (!ret || ret == -EPIPE)	/* -EPIPE: the reader went first, the caller knows why */
		return ret;
	fail_clear();
	return f->ops->failed(f->src, ret, f->bad);
}

void feed_free(struct page_feed *f)
{
	if (!f)
		return;
	feed_end(f, true);
	f->ops->free(f->src);
	free(f);
}
