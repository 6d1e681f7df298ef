/* Per-run checksums of a pages image: see runsum.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image/runsum.h"
#include "log.h"

#define READ_BUF	(1u << 20)

uint64_t runsum_buf(const void *buf, size_t len)
{
	struct hash64 h;

	hash64_init(&h);
	hash64_update(&h, buf, len);
	return hash64_final(&h);
}

/* Where the read is: which span, and how much of it is left. */
struct span_pos {
	const uint64_t *lens;
	uint64_t *sums;
	size_t nr, i;
	uint64_t left;
	struct hash64 h;
};

static void next_span(struct span_pos *p)
{
	while (p->i < p->nr && !p->left) {
		p->sums[p->i] = hash64_final(&p->h);
		p->i++;
		hash64_init(&p->h);
		p->left = p->i < p->nr ? p->lens[p->i] : 0;
	}
}

static void feed_spans(struct span_pos *p, const uint8_t *buf, size_t n)
{
	while (n && p->i < p->nr) {
		size_t k = n < p->left ? n : p->left;

		hash64_update(&p->h, buf, k);
		p->left -= k;
		buf += k;
		n -= k;
		next_span(p);
	}
}

int runsum_read(int fd, const char *name, const uint64_t *lens, size_t nr, uint64_t *sums,
		struct hash64 *whole)
{
	struct span_pos p = { .lens = lens, .sums = sums, .nr = nr, .left = nr ? lens[0] : 0 };
	uint8_t *buf = malloc(READ_BUF);
	uint64_t off = 0;
	int ret = 0;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	hash64_init(&p.h);
	hash64_init(whole);
	next_span(&p);		/* empty spans first */
	while ((n = pread(fd, buf, READ_BUF, off)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = fail(-errno, "cannot read image %s: %s", name, strerror(errno));
			break;
		}
		hash64_update(whole, buf, n);
		feed_spans(&p, buf, n);
		off += n;
	}
	for (; p.i < p.nr; p.i++) {	/* a short file (the caller compares sizes) */
		sums[p.i] = hash64_final(&p.h);
		hash64_init(&p.h);
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	free(buf);
	return ret;
}
