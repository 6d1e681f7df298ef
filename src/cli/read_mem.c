/*
 * memdump read-mem: the dumped memory at ADDR, LEN bytes, to stdout.
 *
 * Bytes come from pages-N.img where the pagemap has them (for shared
 * anonymous memory and memfds: the object's pagemap-shmem image, by offset);
 * other anonymous pages of a dumped VMA read as zeros; file-backed pages the
 * dump did not store are refused (no path named in an image is opened).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "image/dumpset.h"
#include "log.h"
#include "cli/options.h"
#include "vma_status.h"

#define CHUNK	(1UL << 20)

static int parse_num(const char *s, const char *what, uint64_t *out)
{
	bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	char *end;

	errno = 0;
	*out = strtoull(s, &end, hex ? 16 : 10);
	if (!*s || *s == '-' || *end || errno || (hex && !s[2]))
		return fail(-EINVAL, "bad %s '%s' (hex with 0x, or decimal)", what, s);
	return 0;
}

static int parse_args(const struct options *o, uint64_t *addr, uint64_t *len)
{
	int ret;

	if (o->argc != 2)
		return fail(-EINVAL, "usage: memdump read-mem -D DIR ADDR LEN");
	ret = parse_num(o->argv[0], "address", addr);
	if (!ret)
		ret = parse_num(o->argv[1], "length", len);
	if (!ret && *addr + *len < *addr)
		ret = fail(-EINVAL, "range 0x%" PRIx64 " + 0x%" PRIx64 " overflows", *addr, *len);
	return ret;
}

/* Every byte of [addr, addr + len) must lie in a dumped VMA. */
static int check_range(const struct dumpset *ds, uint64_t addr, uint64_t len)
{
	uint64_t a = addr, end = addr + len;

	while (a < end) {
		const VmaEntry *v = dumpset_vma_at(ds, a);

		if (!v)
			return fail(-EFAULT, "0x%" PRIx64 "-0x%" PRIx64 " is not inside the dumped "
				    "VMAs: nothing at 0x%" PRIx64, addr, end, a);
		a = v->end;
	}
	return 0;
}

static int pread_full(int fd, void *buf, size_t len, uint64_t off, size_t *got)
{
	*got = 0;
	while (*got < len) {
		ssize_t n = pread(fd, (char *)buf + *got, len - *got, off + *got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		*got += n;
	}
	return 0;
}

static int write_full(const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(STDOUT_FILENO, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return fail(n < 0 ? -errno : -EIO, "cannot write to stdout: %s",
				    strerror(n < 0 ? errno : EIO));
		p += n;
		len -= n;
	}
	return 0;
}

static int read_pages(const struct dump_run *r, uint64_t key,
		      void *buf, size_t n)
{
	size_t got;
	int ret = pread_full(r->fd, buf, n, r->off + (key - r->start), &got);

	if (ret)
		return fail(ret, "cannot read pages image: %s", strerror(-ret));
	if (got != n)
		return fail(-EIO, "a pages image is truncated (run at %#" PRIx64 ")", r->start);
	return 0;
}

/*
 * Pages not in the dump: zeros for anonymous memory. The pages of a file
 * mapping the dump did not store are the file's; read-mem never opens a path
 * named inside an image (a crafted mm image would make it print any file).
 */
static int read_unstored(const VmaEntry *v, uint64_t a, void *buf, size_t n)
{
	if (v->status & (VMA_FILE_PRIVATE | VMA_FILE_SHARED))
		return fail(-ENODATA, "the bytes at 0x%" PRIx64 " are not in the dump: they are "
			    "the content of the file mapped there", a);
	memset(buf, 0, n);
	return 0;
}

/* Fill buf with the bytes at a, at most max; *n says how many. */
static int read_chunk(const struct dumpset *ds, uint64_t a, uint64_t max,
		      void *buf, size_t *n)
{
	const VmaEntry *v = dumpset_vma_at(ds, a);
	struct vma_src src;
	uint64_t key, lim = MIN(max, v->end - a);
	const struct dump_run *r;
	size_t i;

	dumpset_vma_src(ds, v, &src);
	key = src.base + (a - v->start);
	i = runs_after(src.runs, src.nr_runs, key);
	r = i < src.nr_runs ? &src.runs[i] : NULL;
	if (r && r->start <= key) {
		*n = MIN(lim, r->end - key);
		if (r->present)
			return read_pages(r, key, buf, *n);
		if (r->tparent)
			return fail(-ENODATA, "the pages at %#" PRIx64 " are its parent process's "
				    "(shared copy-on-write): read them in the parent's set", a);
		memset(buf, 0, *n);
		return 0;
	}
	*n = r ? MIN(lim, r->start - key) : lim;
	return read_unstored(v, a, buf, *n);
}

static int copy_range(const struct dumpset *ds, uint64_t addr, uint64_t len)
{
	char *buf = malloc(CHUNK);
	uint64_t a = addr, end = addr + len;
	size_t n;
	int ret = buf ? 0 : -ENOMEM;

	while (!ret && a < end) {
		ret = read_chunk(ds, a, MIN(end - a, CHUNK), buf, &n);
		if (!ret)
			ret = write_full(buf, n);
		a += n;
	}
	free(buf);
	return ret;
}

int cmd_read_mem(const struct options *o)
{
	struct dumpset ds;
	uint64_t addr, len;
	int ret = parse_args(o, &addr, &len);

	if (ret)
		return ret;
	ret = dumpset_load(o->dir, &ds);
	if (ret)
		return ret;
	ret = check_range(&ds, addr, len);
	if (!ret)
		ret = copy_range(&ds, addr, len);
	dumpset_free(&ds);
	return ret;
}
