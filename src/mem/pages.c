/*
 * Page data: the selected runs, in address order, into pages-1.img.
 *
 *   splice  the parasite vmsplices the pages into a pipe (SPLICE_F_GIFT: page
 *           references, no copy) and we splice the pipe into the image: with
 *           O_DIRECT from the target's memory to the disk without a copy, or
 *           through the page cache (use_page_cache()).
 *           SPLICE_F_GIFT does not copy-on-write: a page in the pipe
 *           shows what the target writes after it resumes, so every byte is
 *           in the image before the target runs again.
 *   read    process_vm_readv into a buffer, then write.
 *   mem     pread of /proc/PID/mem into a buffer, then write.
 * In read and mem modes a writer thread writes one buffer while the next is
 * read: the copy and the disk overlap.
 *
 * --encrypt (d->seal_pages): read mode, on two threads that each read a
 * chunk of the sealed layout into their own buffer, sum it (in the chunks'
 * order), seal it in place (crypt.c) and write it at its place in the real
 * directory's image (seal_runs()), so the image's page cache holds
 * ciphertext only and no staging copy is made.
 *
 * Runs in VMAs without PROT_READ always go through /proc/PID/mem (the only
 * way that may read them). When vmsplice is refused (EPERM, EOPNOTSUPP, a
 * seccomp filter, ...) before any byte was moved, splice mode falls back to
 * read mode, and says so.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "mem/pages.h"
#include "mem/pagesum.h"
#include "infect/infect.h"
#include "fault.h"
#include "image/crypt.h"
#include "image/image.h"
#include "log.h"
#include "proc.h"
#include "progress.h"

#define BUF_SIZE	(8UL << 20)

#define NR_BUFS		2

struct pages_out {
	int fd;
	bool direct;
	uint64_t cache_end;	/* through the page cache up to this offset, then O_DIRECT */
	uint64_t written;
	struct progress bar;
	/* read and mem modes: buffers handed between reader and writer thread */
	uint8_t *buf[NR_BUFS];	/* aligned for O_DIRECT */
	size_t len[NR_BUFS];	/* bytes queued in buf[i], 0 = free */
	int next_fill, next_write;
	int err;		/* first write error */
	bool stop;
	struct pagesum *sum;	/* read and mem modes: fed what is written */
	struct pagesum *follow;	/* PAGESUM_FILE: told how far the image is written */
	struct pages_flush *flush;	/* pageflush.c: so is this, or NULL */
	uint64_t copied, half;	/* bytes taken from the target, and half of them all */
	struct dump_ctx *remote;	/* to a page server: each piece behind a header */
	bool remote_copy;	/* ... through memdump's buffers (TLS): page_xfer_send() */
	bool partial;		/* a piece's header sent, not all of its bytes */
	struct crypt_pages *seal;	/* --encrypt: sealed as written (crypt.h), or NULL */
	struct stream_direct *stream;	/* into the stream's entry (open_stream), or NULL */
	pthread_t writer;
	bool writer_up;		/* started at the first buffer (start_writer) */
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

/* Past the image's head that goes through the page cache: O_DIRECT from here on. */
static void direct_from_here(struct pages_out *o)
{
	if (o->direct || o->written < o->cache_end)
		return;
	o->direct = fcntl(o->fd, F_SETFL, fcntl(o->fd, F_GETFL) | O_DIRECT) == 0;
	o->cache_end = UINT64_MAX;	/* once */
	if (o->direct)
		pr_info("pages-1.img: O_DIRECT from %" PRIu64 " MiB on", o->written >> 20);
}

/* How much to write before looking at direct_from_here() again. */
static uint64_t until_switch(const struct pages_out *o)
{
	return o->direct ? UINT64_MAX : o->cache_end - o->written;
}

/* A buffer to a page server through TLS: one DATA piece (records of the session). */
static int send_buf(struct pages_out *o, const uint8_t *buf, size_t len)
{
	int ret = page_xfer_send(o->remote, buf, len);

	if (ret)
		return ret;
	o->written += len;
	pagesum_written(o->follow, o->written);
	progress_update(&o->bar, o->written);
	return 0;
}

static int write_buf(struct pages_out *o, const uint8_t *buf, size_t len)
{
	if (o->remote_copy)
		return send_buf(o, buf, len);
	while (len) {
		ssize_t n;

		direct_from_here(o);
		if (o->remote && !o->partial) {
			int err = page_xfer_data(o->remote, len);

			if (err)
				return err;
			o->partial = true;
		}
		n = write(o->fd, buf, MIN(len, until_switch(o)));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EINVAL && o->direct) {
			/* This filesystem takes no O_DIRECT writes: buffered then. */
			fcntl(o->fd, F_SETFL, fcntl(o->fd, F_GETFL) & ~O_DIRECT);
			o->direct = false;
			o->cache_end = UINT64_MAX;
			continue;
		}
		if (n <= 0)
			return fail(n < 0 ? -errno : -ENOSPC, "cannot write the pages image: %s",
				    strerror(n < 0 ? errno : ENOSPC));
		buf += n;
		len -= n;
		o->partial = len != 0;
		o->written += n;
		pagesum_written(o->follow, o->written);
		pages_flush_written(o->flush, o->written);
		progress_update(&o->bar, o->written);
	}
	return 0;
}

static void *writer_main(void *arg)
{
	struct pages_out *o = arg;

	pthread_mutex_lock(&o->lock);
	for (;;) {
		int i = o->next_write;

		while (!o->len[i] && !o->stop)
			pthread_cond_wait(&o->cond, &o->lock);
		if (!o->len[i])
			break;
		pthread_mutex_unlock(&o->lock);
		int err = 0;

		if (!o->err) {
			if (o->sum)
				pagesum_feed(o->sum, o->buf[i], o->len[i]);
			err = write_buf(o, o->buf[i], o->len[i]);
		}
		pthread_mutex_lock(&o->lock);
		if (err && !o->err)
			o->err = err;
		o->len[i] = 0;
		o->next_write = (i + 1) % NR_BUFS;
		pthread_cond_broadcast(&o->cond);
	}
	pthread_mutex_unlock(&o->lock);
	return NULL;
}

static int writer_up(struct pages_out *o);

/* The next free buffer for the reader, or NULL (no writer: o->err says why). */
static uint8_t *fill_buffer(struct pages_out *o)
{
	uint8_t *b;

	if (writer_up(o))
		return NULL;
	pthread_mutex_lock(&o->lock);
	while (o->len[o->next_fill])
		pthread_cond_wait(&o->cond, &o->lock);
	b = o->buf[o->next_fill];
	pthread_mutex_unlock(&o->lock);
	return b;
}

static int submit_buffer(struct pages_out *o, size_t len)
{
	int err;

	pthread_mutex_lock(&o->lock);
	o->len[o->next_fill] = len;
	o->next_fill = (o->next_fill + 1) % NR_BUFS;
	err = o->err;
	pthread_cond_broadcast(&o->cond);
	pthread_mutex_unlock(&o->lock);
	return err;
}

/* Wait until everything submitted is written; the first write error. */
static int flush_buffers(struct pages_out *o)
{
	int err;

	pthread_mutex_lock(&o->lock);
	for (int i = 0; i < NR_BUFS; i++)
		while (o->len[i])
			pthread_cond_wait(&o->cond, &o->lock);
	err = o->err;
	pthread_mutex_unlock(&o->lock);
	return err;
}

/*
 * In a tree, always through /proc/PID/mem: process_vm_readv pins the pages it
 * reads, and the kernel gives a copy-on-write page it pins a copy of its own
 * (the target's), so a parent's pages would no longer be its child's (the
 * images would hold them twice, cowpages.c finding none shared, and the
 * processes two copies from then on: cow-tree-read, cow-tree-lr-*); a read of
 * /proc/PID/mem takes the page without pinning it.
 */
ssize_t read_target_mem(const struct dump_ctx *d, bool use_mem, uint64_t addr, void *buf,
			size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)addr, len };

	if (use_mem || d->tree)
		return pread(d->in.mem_fd, buf, len, addr);
	return process_vm_readv(d->pid, &local, 1, &remote, 1, 0);
}

/* The fault point "pages-half": half of the pages taken from the target (fault.h). */
static void copied(struct pages_out *o, uint64_t bytes)
{
	bool before = o->copied < o->half;

	o->copied += bytes;
	if (before && o->copied >= o->half)
		fault_point("pages-half");
}

/*
 * A pre-dump reading after the thaw (dump/pagelate.c) found no page at addr
 * (err): it is gone from where it was listed. Through /proc/PID/mem, which
 * reads without PROT_READ, else zeros (the next dump takes what is there
 * then): PAGE_SIZE bytes into buf, or -1 with errno when the process is gone
 * or err is not a page's absence.
 */
static ssize_t read_gone(struct dump_ctx *d, uint64_t addr, void *buf, int err)
{
	if (err != EFAULT && err != EIO && err != 0) {
		errno = err;
		return -1;
	}
	if (pread(d->in.mem_fd, buf, PAGE_SIZE, addr) == PAGE_SIZE)
		return PAGE_SIZE;
	if (pidfd_exited(d->in.pidfd)) {
		errno = ESRCH;
		return -1;
	}
	memset(buf, 0, PAGE_SIZE);
	d->stats.pages_gone++;
	return PAGE_SIZE;
}

/* Copy one run with a reader: process_vm_readv or pread of /proc/PID/mem. */
static int copy_run(struct dump_ctx *d, struct pages_out *o, const struct page_run *r,
		    bool use_mem)
{
	uint64_t addr = r->start, left = r->nr_pages * PAGE_SIZE;

	while (left) {
		size_t len = MIN(left, BUF_SIZE);
		uint8_t *buf = fill_buffer(o);
		ssize_t n;
		int ret;

		if (!buf)
			return o->err;
		if (dump_interrupted)
			return fail(-EINTR, "interrupted");
		n = read_target_mem(d, use_mem, addr, buf, len);
		if (n <= 0 && d->pages_late)	/* the target runs: unmapped since? */
			n = read_gone(d, addr, buf, n < 0 ? errno : 0);
		if (n <= 0)
			return fail(n < 0 ? -errno : -EIO, "cannot read memory of process %d at %#lx: %s",
				    d->pid, addr, n < 0 ? strerror(errno) : "short read");
		/* A short read ends on a page boundary; go on from there. */
		ret = submit_buffer(o, n);
		if (ret)
			return ret;
		copied(o, n);
		addr += n;
		left -= n;
	}
	return 0;
}

static bool vmsplice_refused(int err)
{
	return err == -EPERM || err == -EOPNOTSUPP || err == -ENOSYS || err == -EINVAL ||
	       err == -EACCES;
}

/*
 * Through the page cache the runs are spliced in chunks of SUM_CHUNK bytes
 * when the checksum thread follows: it hashes each from the image's page
 * cache once it is written, on the other CPU, while this one splices the
 * next (pagesum.c). An image whose head only goes through the page cache is
 * spliced in two pieces, O_DIRECT set between them.
 */
#define SUM_CHUNK	(2UL << 20)

/* The next chunk of r[*i..nr), at most max bytes from byte *pos of r[*i], into iov: its
 * iovec count. */
static size_t next_chunk(const struct page_run *r, size_t nr, size_t *i, uint64_t *pos,
			 struct iovec *iov, uint64_t max, uint64_t *bytes)
{
	size_t n = 0;

	*bytes = 0;
	while (*i < nr && *bytes < max) {
		uint64_t run_len = r[*i].nr_pages * PAGE_SIZE;
		uint64_t take = MIN(run_len - *pos, max - *bytes);

		iov[n].iov_base = (void *)(r[*i].start + *pos);
		iov[n++].iov_len = take;
		*bytes += take;
		*pos += take;
		if (*pos == run_len) {
			(*i)++;
			*pos = 0;
		}
	}
	return n;
}

/* A stretch of readable runs through the parasite: in SUM_CHUNKs when the checksum
 * thread follows, else in one piece or two (the switch to O_DIRECT between). */
static int splice_runs(struct dump_ctx *d, struct pages_out *o, const struct page_run *r,
		       size_t nr)
{
	/* a chunk: SUM_CHUNK's pages, or up to every run, each cut once at most */
	struct iovec *iov = calloc(MAX(SUM_CHUNK / PAGE_SIZE, nr) + 1, sizeof(*iov));
	uint64_t pos = 0;
	size_t i = 0;
	int ret = iov ? flush_buffers(o) : -ENOMEM;	/* the image keeps address order */

	while (!ret && i < nr) {
		uint64_t bytes, max;
		size_t n;

		direct_from_here(o);
		/* to a page server: in pieces too, each behind its header */
		max = o->follow || o->remote ? SUM_CHUNK : until_switch(o);
		n = next_chunk(r, nr, &i, &pos, iov, max, &bytes);
		ret = o->remote ? page_xfer_data(d, bytes) : 0;
		if (!ret)
			ret = parasite_vmsplice(&d->in, iov, n, o->fd);
		if (ret)
			break;
		o->written += bytes;
		copied(o, bytes);
		pagesum_written(o->follow, o->written);
		pages_flush_written(o->flush, o->written);
		progress_update(&o->bar, o->written);
	}
	free(iov);
	return ret;
}

/*
 * --encrypt: the runs sealed chunk by chunk (crypt.h), on two threads at
 * once. Each takes the next chunk, reads its bytes from the frozen target
 * into its own buffer, feeds them to the checksums in the chunks' order (one
 * thread at a time, in turn), then seals the buffer in place and writes it
 * at its place in the image, while the other thread reads and sums the next
 * chunk: the copy, the checksums and the cipher share both CPUs.
 */
#define SEAL_THREADS	2

struct seal_share {
	struct dump_ctx *d;
	struct pages_out *o;
	uint64_t nr;		/* chunks */
	uint64_t total;		/* bytes */
	uint64_t *offs;		/* where each run starts in the image's plaintext; [nr_runs]: total */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t next;		/* the next chunk to take */
	uint64_t summed;	/* chunks fed to the checksums, in order */
	bool half_due;		/* half of the bytes written: the first thread's fault point */
	int err;		/* the first failure (fail() called under the lock) */
};

struct seal_worker {
	struct seal_share *sh;
	struct crypt_sealer *sealer;
	uint8_t *buf;		/* a chunk and its tag */
	size_t run;		/* the run the last chunk started in */
	bool first;		/* the calling thread: the fault point is its */
	pthread_t tid;
};

/* The first failure, recorded (err from fail() under the lock) and told to the others. */
static void seal_failed(struct seal_share *sh, int err)
{
	if (!sh->err)
		sh->err = err;
	pthread_cond_broadcast(&sh->cond);
}

/* The plaintext bytes [start, start + len) of the image, from the target into w->buf. */
static int seal_read(struct seal_worker *w, uint64_t start, size_t len)
{
	struct seal_share *sh = w->sh;
	const struct dump_ctx *d = sh->d;
	size_t done = 0;

	while (done < len) {
		uint64_t at = start + done, pos, take;
		const struct page_run *r;
		ssize_t n;

		while (sh->offs[w->run + 1] <= at)
			w->run++;
		r = &d->runs[w->run];
		pos = at - sh->offs[w->run];
		take = MIN((uint64_t)(len - done), sh->offs[w->run + 1] - at);
		n = read_target_mem(d, r->unreadable || d->mode == MODE_MEM, r->start + pos,
				    w->buf + done, take);
		if (n <= 0) {
			int err = n < 0 ? -errno : -EIO;

			pthread_mutex_lock(&sh->lock);
			seal_failed(sh, fail(err, "cannot read memory of process %d at %#lx: %s", d->pid,
					     (unsigned long)(r->start + pos),
					     n < 0 ? strerror(-err) : "short read"));
			pthread_mutex_unlock(&sh->lock);
			return err;
		}
		done += (size_t)n;	/* a short read ends on a page boundary: on from there */
	}
	return 0;
}

/* Chunk i's plaintext to the checksums, after chunk i - 1's; false: another failed. */
static bool seal_sum(struct seal_worker *w, uint64_t i, size_t len)
{
	struct seal_share *sh = w->sh;

	pthread_mutex_lock(&sh->lock);
	while (!sh->err && sh->summed != i)
		pthread_cond_wait(&sh->cond, &sh->lock);
	pthread_mutex_unlock(&sh->lock);
	if (sh->err)
		return false;
	if (sh->o->sum)
		pagesum_feed(sh->o->sum, w->buf, len);
	pthread_mutex_lock(&sh->lock);
	sh->summed++;
	pthread_cond_broadcast(&sh->cond);
	pthread_mutex_unlock(&sh->lock);
	return true;
}

/* The fault "seal-chunk" (with MEMDUMP_FAULT_FAIL=1): the middle chunk's sealing fails,
 * on whichever thread took it. */
static bool seal_fault(const struct seal_share *sh, uint64_t i)
{
	return i == sh->nr / 2 && fault_wanted("seal-chunk") && fault_fails();
}

/* Chunk i sealed and written; counted. */
static int seal_write(struct seal_worker *w, uint64_t i, size_t len)
{
	struct seal_share *sh = w->sh;
	struct pages_out *o = sh->o;
	int ret = seal_fault(sh, i) ? -EIO : crypt_pages_chunk(w->sealer, i, w->buf, len);
	bool half;

	pthread_mutex_lock(&sh->lock);
	if (ret)
		seal_failed(sh, fail(ret, "cannot write the pages image (chunk %" PRIu64 " of %" PRIu64
				     "): %s", i + 1, sh->nr, strerror(-ret)));
	if (!ret && o->copied < o->half && o->copied + len >= o->half)
		sh->half_due = true;
	o->copied += len;
	o->written += len;
	progress_update(&o->bar, o->written);
	half = w->first && sh->half_due;
	if (half)
		sh->half_due = false;
	pthread_mutex_unlock(&sh->lock);
	if (half)		/* the fault point "pages-half": on the thread signals reach */
		fault_point("pages-half");
	return ret;
}

/* The next chunk to take, or false: none left, or a failure. */
static bool seal_take(struct seal_share *sh, uint64_t *i)
{
	bool ok;

	pthread_mutex_lock(&sh->lock);
	if (!sh->err && dump_interrupted)
		seal_failed(sh, fail(-EINTR, "interrupted"));
	ok = !sh->err && sh->next < sh->nr;
	if (ok)
		*i = sh->next++;
	pthread_mutex_unlock(&sh->lock);
	return ok;
}

static void *seal_main(void *arg)
{
	struct seal_worker *w = arg;
	struct seal_share *sh = w->sh;
	uint64_t i;

	while (seal_take(sh, &i)) {
		uint64_t start = i * CRYPT_CHUNK;
		size_t len = (size_t)MIN((uint64_t)CRYPT_CHUNK, sh->total - start);

		if (seal_read(w, start, len) || !seal_sum(w, i, len) || seal_write(w, i, len))
			break;
	}
	return NULL;
}

/* Where each run starts in the image's plaintext; NULL: no memory. */
static uint64_t *run_offsets(const struct dump_ctx *d)
{
	uint64_t *offs = malloc((d->nr_runs + 1) * sizeof(*offs));

	if (!offs)
		return NULL;
	offs[0] = 0;
	for (size_t i = 0; i < d->nr_runs; i++)
		offs[i + 1] = offs[i] + d->runs[i].nr_pages * PAGE_SIZE;
	return offs;
}

static int seal_worker_init(struct seal_worker *w, struct seal_share *sh, bool first)
{
	*w = (struct seal_worker){ .sh = sh, .first = first };
	if (posix_memalign((void **)&w->buf, PAGE_SIZE, CRYPT_CHUNK + CRYPT_TAG))
		return -ENOMEM;
	return crypt_sealer_new(sh->o->seal, &w->sealer);
}

static void seal_worker_free(struct seal_worker *w)
{
	crypt_sealer_free(w->sealer);
	if (w->buf)
		memset(w->buf, 0, CRYPT_CHUNK + CRYPT_TAG);	/* plaintext, or ciphertext */
	free(w->buf);
}

/* A second thread, with every signal blocked: they go to the dumping thread. */
static bool seal_spawn(struct seal_worker *w)
{
	sigset_t all, old;
	bool ok;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ok = !pthread_create(&w->tid, NULL, seal_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ok;
}

static int seal_runs(struct dump_ctx *d, struct pages_out *o)
{
	struct seal_share sh = { .d = d, .o = o, .nr = crypt_pages_nr_chunks(o->seal),
				 .offs = run_offsets(d) };
	struct seal_worker w[SEAL_THREADS];
	int nr = 0, ret = sh.offs ? 0 : -ENOMEM;

	sh.total = sh.offs ? sh.offs[d->nr_runs] : 0;
	if (!ret && sh.total != d->nr_pages * PAGE_SIZE)
		ret = fail(-EIO, "the pages to dump (%" PRIu64 " bytes) are not their runs' %" PRIu64,
			   d->nr_pages * PAGE_SIZE, sh.total);
	pthread_mutex_init(&sh.lock, NULL);
	pthread_cond_init(&sh.cond, NULL);
	for (; nr < SEAL_THREADS && !ret; nr++)
		ret = seal_worker_init(&w[nr], &sh, nr == 0);
	if (!ret && nr > 1 && !seal_spawn(&w[1])) {
		pr_warn("cannot start a second sealing thread: sealing on one");
		seal_worker_free(&w[--nr]);
	}
	if (!ret)
		seal_main(&w[0]);
	for (int t = 1; !ret && t < nr; t++)
		pthread_join(w[t].tid, NULL);
	if (!ret && sh.half_due)	/* the other thread wrote the half, and the rest */
		fault_point("pages-half");
	for (int t = 0; t < nr; t++)
		seal_worker_free(&w[t]);
	free(sh.offs);
	pthread_mutex_destroy(&sh.lock);
	pthread_cond_destroy(&sh.cond);
	return ret ?: sh.err;
}

static int dump_runs(struct dump_ctx *d, struct pages_out *o)
{
	size_t i = 0;
	int ret = 0;

	if (o->seal)
		return seal_runs(d, o);

	while (i < d->nr_runs && !ret) {
		size_t j = i;

		if (d->runs[i].unreadable || d->mode != MODE_SPLICE) {
			ret = copy_run(d, o, &d->runs[i], d->runs[i].unreadable || d->mode == MODE_MEM);
			i++;
			continue;
		}
		while (j < d->nr_runs && !d->runs[j].unreadable)
			j++;
		ret = splice_runs(d, o, &d->runs[i], j - i);
		if (ret && vmsplice_refused(ret) && o->written == 0) {
			pr_warn("vmsplice refused in process %d (%s): using read mode", d->pid,
				strerror(-ret));
			fail_clear();
			d->mode = MODE_READ;
			ret = 0;
			continue;
		}
		i = j;
	}
	return ret;
}

/*
 * O_DIRECT moves the pages from the target's memory to the disk by DMA, at
 * the disk's rate; through the page cache they are copied at memory speed
 * until the dirty limit throttles the copy to the disk's rate. Auto takes
 * the page cache when the image fits under that limit, else its head as far
 * as the flusher leaves it alone and O_DIRECT for the rest (pagecache.c);
 * the cache too where the filesystem refuses O_DIRECT (tmpfs). Either way
 * the image is made durable after the target runs again or is gone
 * (dump.c). The offset from which O_DIRECT is used, or UINT64_MAX.
 */
static uint64_t cache_end(const struct dump_ctx *d)
{
	uint64_t bytes = d->nr_pages * PAGE_SIZE, room;

	if (d->pages_write != PAGES_AUTO)
		return d->pages_write == PAGES_CACHE ? UINT64_MAX : 0;
	room = pages_cache_room(bytes, d->pages_warm_dirty);
	return room >= bytes ? UINT64_MAX : room;
}

/* To a page server (page_xfer.c): the socket, as through the page cache but with no cache. */
static int open_remote(struct dump_ctx *d, struct pages_out *o)
{
	o->fd = page_xfer_open(d);
	o->remote = d;
	o->cache_end = UINT64_MAX;
	o->remote_copy = page_xfer_copies(d);
	if (o->remote_copy && d->mode == MODE_SPLICE) {	/* no splice into a TLS session */
		d->mode = MODE_READ;
		pr_info("pages-1.img: read mode, the pages through TLS");
	}
	pr_info("pages-1.img: to the %s", d->xfer->peer);
	return o->fd < 0 ? o->fd : 0;
}

/*
 * --encrypt: the warmed file (in the real directory: pagewarm.c) or a new
 * one there, sealed as written; through the page cache (the sealed layout is
 * not aligned for O_DIRECT). Listed like a page server's image: not in the
 * staging, crypt_seal() names it.
 */
static int open_sealed(struct dump_ctx *d, struct pages_out *o)
{
	char name[64];
	int ret;

	img_name(IMG_PAGES, 1, name, sizeof(name));
	o->fd = d->pages_fd;
	d->pages_fd = -1;
	ret = crypt_pages_open(d->dir.crypt, name, d->nr_pages * PAGE_SIZE, &o->fd, &o->seal);
	if (!ret)
		ret = img_remember_remote(&d->dir, IMG_PAGES, 1);
	o->cache_end = UINT64_MAX;
	d->stats.pages_cached = true;
	if (d->mode == MODE_SPLICE)	/* the writer seals buffers: read mode */
		d->mode = MODE_READ;
	if (ret && o->fd >= 0) {
		close(o->fd);
		o->fd = -1;
	}
	if (!ret)
		pr_info("%s: sealed as written, through the page cache", name);
	return ret;
}

/*
 * --stream of a killing dump into a pipe (image/streamw.h): the stream's head
 * and pages-1.img's entry head, then the page pipes spliced into it (page
 * references, no copy here, no image staged); the checksums from the frozen
 * target's memory, as for a page server. The reader has the pages before
 * the kill: the rest of the stream is written first (dump.c).
 */
static int open_stream(struct dump_ctx *d, struct pages_out *o)
{
	struct stream_direct *s = d->stream;
	char name[64];
	uint64_t id;
	int ret;

	img_name(IMG_PAGES, 1, name, sizeof(name));
	s->started = true;
	/* a number of its own in the head, which the end's checksum covers: another
	 * stream's entries after this head do not match its end */
	ret = getrandom(&id, sizeof(id), 0) == sizeof(id) ? 0 :
		fail(-EIO, "cannot name the stream: no random number");
	if (!ret)
		ret = stream_w_head(&s->w, STREAM_V_DIRECT, id, 0);
	if (!ret)
		ret = stream_w_entry(&s->w, &s->pages_h, E_FILE, name, d->nr_pages * PAGE_SIZE);
	if (!ret)
		ret = img_remember_remote(&d->dir, IMG_PAGES, 1);
	o->fd = s->w.fd;
	o->stream = s;
	o->cache_end = UINT64_MAX;
	if (!ret)
		pr_info("%s: into the stream", name);
	return ret;
}

/* The stream's pages entry whole: its size as its head said, then its checksum. */
static int close_stream(struct dump_ctx *d, const struct pages_out *o)
{
	if (o->written != d->nr_pages * PAGE_SIZE)
		return fail(-EIO, "%" PRIu64 " bytes of pages written into the stream, %" PRIu64
			    " due", o->written, d->nr_pages * PAGE_SIZE);
	return stream_w_entry_end(&o->stream->w, &o->stream->pages_h);
}

static int open_pages(struct dump_ctx *d, struct pages_out *o)
{
	if (d->xfer)
		return open_remote(d, o);
	if (d->stream)
		return open_stream(d, o);
	if (d->seal_pages && d->dir.crypt)
		return open_sealed(d, o);
	o->fd = pages_image_fd(d);	/* warmed before the freeze, maybe (pagewarm.c) */
	if (o->fd < 0)
		return o->fd;
	o->cache_end = cache_end(d);
	direct_from_here(o);
	d->stats.pages_cached = !o->direct;
	d->stats.pages_direct_tail = !o->direct && o->cache_end != UINT64_MAX;
	if (!o->direct && o->cache_end == UINT64_MAX) {	/* no O_DIRECT tail to wait for */
		pages_flush_start(d, o->fd);
		o->flush = d->pages_flush;
	}
	if (o->cache_end != UINT64_MAX)
		pr_info("pages-1.img: through the page cache for %" PRIu64 " MiB, then O_DIRECT",
			o->cache_end >> 20);
	else
		pr_info("pages-1.img: %s", o->direct ? "O_DIRECT" : "through the page cache");
	return 0;
}

static int start_writer(struct pages_out *o)
{
	if (o->seal)		/* seal_runs() has its own threads */
		return 0;
	pthread_mutex_init(&o->lock, NULL);
	pthread_cond_init(&o->cond, NULL);
	return 0;
}

/*
 * The buffers and the writer thread, at the first buffer copied: a splice
 * dump whose runs are all readable needs neither (a thread less to start,
 * schedule and join while the target is frozen).
 */
static int writer_up(struct pages_out *o)
{
	if (o->writer_up)
		return 0;
	if (o->err)		/* set here only, before the thread exists */
		return o->err;
	for (int i = 0; i < NR_BUFS; i++)
		if (!o->buf[i] && posix_memalign((void **)&o->buf[i], PAGE_SIZE, BUF_SIZE))
			return o->err = fail(-ENOMEM, "no memory for the pages' buffers");
	if (pthread_create(&o->writer, NULL, writer_main, o))
		return o->err = fail(-EAGAIN, "cannot start the pages' writer thread");
	o->writer_up = true;
	return 0;
}

static int stop_writer(struct pages_out *o)
{
	if (o->seal)
		return 0;
	int err = flush_buffers(o);

	pthread_mutex_lock(&o->lock);
	o->stop = true;
	pthread_cond_broadcast(&o->cond);
	pthread_mutex_unlock(&o->lock);
	if (o->writer_up)
		pthread_join(o->writer, NULL);
	o->writer_up = false;
	for (int i = 0; i < NR_BUFS; i++)
		free(o->buf[i]);
	return err;
}

/* The checksums, if all went well, go to d (images.c writes them). */
static int keep_sums(struct dump_ctx *d, struct pagesum *ps, int ret)
{
	int err = pagesum_finish(ps, ret != 0);

	ret = ret ?: err;
	if (ret || ps->src == PAGESUM_LATER) {
		free(ps->sums);
		free(ps->marks);
		return ret;
	}
	d->run_sums = ps->sums;
	d->run_marks = ps->marks;
	d->pages_size = ps->rs.total;
	d->pages_hash = runsum_of_runs(ps->sums, d->nr_runs);	/* the inventory's (runsum.h) */
	return 0;
}

/*
 * Where the checksums come from. read, mem: the writer feeds what it
 * writes. splice: a thread hashes the image's page cache behind the splice,
 * or with O_DIRECT (no page cache) reads the frozen target's memory. When
 * the inventory is written after the target runs again (--leave-running,
 * pre-dump) and the image goes through the page cache, nothing is hashed
 * while it is frozen: the image is complete in the page cache once every
 * pipe is drained (and in read and mem modes once the writer is done), and
 * images.c sums it from there after the resume. With O_DIRECT (for all or
 * the tail of it) that would read it back from the disk: the thread reading
 * the target's memory beside the disk-bound copy costs the frozen target
 * nothing there.
 */
static enum pagesum_src sum_source(const struct dump_ctx *d, const struct pages_out *o)
{
	bool all_cached = !o->direct && o->cache_end == UINT64_MAX;

	if (o->remote || o->stream)	/* nothing to read back here */
		return d->mode == MODE_SPLICE ? PAGESUM_MEMORY : PAGESUM_FED;
	if (o->seal)		/* the image holds ciphertext */
		return PAGESUM_FED;
	if (d->sums_late && all_cached)
		return PAGESUM_LATER;
	if (d->mode != MODE_SPLICE)
		return PAGESUM_FED;
	return all_cached ? PAGESUM_FILE : PAGESUM_MEMORY;
}

static void close_pages(struct pages_out *o)
{
	if (!o->remote && !o->stream)	/* the connection, the stream are the caller's */
		close(o->fd);
}

int write_pages(struct dump_ctx *d)
{
	struct pages_out o = { .fd = -1 };
	struct pagesum ps;
	enum pagesum_src src;
	uint64_t t_written;
	int ret, err;

	ret = open_pages(d, &o);
	if (ret)
		return ret;
	src = sum_source(d, &o);
	o.sum = src == PAGESUM_FED ? &ps : NULL;
	o.follow = src == PAGESUM_FILE ? &ps : NULL;
	/* the blob's start writes memory (rseq): before the checksums read it */
	ret = d->mode == MODE_SPLICE ? parasite_start(&d->in) : 0;
	if (ret) {
		pages_flush_abort(d);
		close_pages(&o);
		return ret;
	}
	ret = pagesum_start(d, &ps, src, o.fd);
	if (!ret)
		ret = start_writer(&o);
	if (ret) {
		keep_sums(d, &ps, ret);
		pages_flush_abort(d);
		close_pages(&o);
		return ret;
	}
	progress_start(&o.bar, "dumping memory", d->nr_pages * PAGE_SIZE, d->progress);
	o.half = d->nr_pages * PAGE_SIZE / 2;
	d->stats.mem_start = now_us();
	ret = dump_runs(d, &o);
	err = stop_writer(&o);
	if (!ret && !err && o.remote)	/* read there before the target runs again */
		ret = page_xfer_sync(d);
	t_written = now_us();
	ret = keep_sums(d, &ps, ret ?: err);
	pr_debug("pages written in %.3f s, their checksums %.3f s after",
		 (t_written - d->stats.mem_start) / 1e6, (now_us() - t_written) / 1e6);
	d->stats.mem_end = now_us();	/* synced with every image, after the release */
	progress_end(&o.bar);
	d->stats.pages_written = o.written / PAGE_SIZE;
	d->stats.bytes_written = o.written;
	if (o.remote)
		return ret ? page_xfer_error(d, ret) : 0;
	if (o.stream && ret == -EPIPE)
		fail_context("the stream's reader is gone: ");
	if (o.stream)
		return ret ?: close_stream(d, &o);
	if (!ret)
		ret = o.seal ? crypt_pages_close(o.seal) : pages_warm_trim(d, o.fd, o.written);
	if (close(o.fd) && !ret)
		ret = fail(-errno, "cannot write the pages image: %s", strerror(errno));
	if (ret)
		pages_flush_abort(d);
	else
		pages_flush_close(o.flush, o.written);	/* on beside the rest of the dump */
	return ret;
}
