/*
 * Page data: the selected runs, in address order, into pages-1.img.
 *
 *   splice  the parasite vmsplices the pages into a pipe (SPLICE_F_GIFT: page
 *           references, no copy) and we splice the pipe into the image; with
 *           O_DIRECT the pages go from the target's memory to the disk without
 *           a copy. SPLICE_F_GIFT does not copy-on-write: a page in the pipe
 *           shows what the target writes after it resumes, so every byte is
 *           in the image before the target runs again.
 *   read    process_vm_readv into a buffer, then write.
 *   mem     pread of /proc/PID/mem into a buffer, then write.
 *
 * Runs in VMAs without PROT_READ always go through /proc/PID/mem (the only
 * way that may read them). When vmsplice is refused (EPERM, EOPNOTSUPP, a
 * seccomp filter, ...) before any byte was moved, splice mode falls back to
 * read mode, and says so.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common.h"
#include "dump.h"
#include "image.h"
#include "log.h"
#include "progress.h"

#define BUF_SIZE	(8UL << 20)

struct pages_out {
	int fd;
	bool direct;
	uint8_t *buf;		/* aligned, for read and mem */
	uint64_t written;
};

static int write_buf(struct pages_out *o, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = write(o->fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EINVAL && o->direct) {
			/* This filesystem takes no O_DIRECT writes: buffered then. */
			fcntl(o->fd, F_SETFL, fcntl(o->fd, F_GETFL) & ~O_DIRECT);
			o->direct = false;
			continue;
		}
		if (n <= 0)
			return fail(n < 0 ? -errno : -ENOSPC, "cannot write the pages image: %s",
				    strerror(n < 0 ? errno : ENOSPC));
		buf += n;
		len -= n;
		o->written += n;
		progress_update(o->written);
	}
	return 0;
}

/* Copy one run with a reader: process_vm_readv or pread of /proc/PID/mem. */
static int copy_run(struct dump_ctx *d, struct pages_out *o, const struct page_run *r,
		    bool use_mem)
{
	uint64_t addr = r->start, left = r->nr_pages * PAGE_SIZE;

	while (left) {
		size_t len = MIN(left, BUF_SIZE);
		ssize_t n;

		if (dump_interrupted)
			return fail(-EINTR, "interrupted");
		if (use_mem) {
			n = pread(d->mem_fd, o->buf, len, addr);
		} else {
			struct iovec local = { o->buf, len }, remote = { (void *)addr, len };

			n = process_vm_readv(d->pid, &local, 1, &remote, 1, 0);
		}
		if (n <= 0)
			return fail(n < 0 ? -errno : -EIO, "cannot read memory of process %d at %#lx: %s",
				    d->pid, addr, n < 0 ? strerror(errno) : "short read");
		/* A short read ends on a page boundary; go on from there. */
		int ret = write_buf(o, o->buf, n);

		if (ret)
			return ret;
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

/* A stretch of readable runs through the parasite. */
static int splice_runs(struct dump_ctx *d, struct pages_out *o, const struct page_run *r,
		       size_t nr)
{
	uint64_t bytes = 0;
	int ret;

	for (size_t i = 0; i < nr; i++)
		bytes += r[i].nr_pages * PAGE_SIZE;
	ret = parasite_vmsplice(d, r, nr, o->fd, bytes);
	if (ret)
		return ret;
	o->written += bytes;
	progress_update(o->written);
	return 0;
}

static int dump_runs(struct dump_ctx *d, struct pages_out *o)
{
	size_t i = 0;
	int ret = 0;

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
		if (ret && vmsplice_refused(ret) && o->written == 0 && !opts.mode_forced) {
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

static int open_pages(struct dump_ctx *d, struct pages_out *o)
{
	struct image *img;
	int ret = img_create(d->dirfd, IMG_PAGES, 1, &img);

	if (ret)
		return ret;
	o->fd = dup(img->fd);
	img_abort(img);
	if (o->fd < 0)
		return -errno;
	o->direct = fcntl(o->fd, F_SETFL, fcntl(o->fd, F_GETFL) | O_DIRECT) == 0;
	return 0;
}

int write_pages(struct dump_ctx *d)
{
	struct pages_out o = { .fd = -1 };
	int ret;

	ret = open_pages(d, &o);
	if (ret)
		return ret;
	if (posix_memalign((void **)&o.buf, PAGE_SIZE, BUF_SIZE)) {
		close(o.fd);
		return -ENOMEM;
	}
	progress_start("dumping memory", d->nr_pages * PAGE_SIZE);
	d->stats.mem_start = now_us();
	ret = dump_runs(d, &o);
	if (!ret && fdatasync(o.fd) && errno != EINVAL)
		ret = fail(-errno, "cannot sync the pages image: %s", strerror(errno));
	d->stats.mem_end = now_us();
	progress_end();
	d->stats.pages_written = o.written / PAGE_SIZE;
	d->stats.bytes_written = o.written;
	free(o.buf);
	if (close(o.fd) && !ret)
		ret = fail(-errno, "cannot write the pages image: %s", strerror(errno));
	return ret;
}
