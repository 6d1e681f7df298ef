/* Per-run checksums of a pages image: see runsum.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image/runsum.h"
#include "image/streamread.h"
#include "log.h"

#define READ_BUF	(1u << 20)

uint64_t runsum_buf(const void *buf, size_t len)
{
	struct hash64 h;

	hash64_init(&h);
	hash64_update(&h, buf, len);
	return hash64_final(&h);
}

static void next_span(struct runsum *p)
{
	while (p->i < p->nr && !p->left) {
		p->sums[p->i] = hash64_final(&p->h);
		p->i++;
		hash64_init(&p->h);
		p->left = p->i < p->nr ? p->lens[p->i] : 0;
	}
}

uint64_t runsum_of_runs(const uint64_t *sums, size_t nr)
{
	struct hash64 h;

	hash64_init(&h);
	for (size_t i = 0; i < nr; i++) {
		uint8_t le[8];

		for (int b = 0; b < 8; b++)
			le[b] = (uint8_t)(sums[i] >> (8 * b));
		hash64_update(&h, le, sizeof(le));
	}
	return hash64_final(&h);
}

void runsum_init(struct runsum *p, const uint64_t *lens, uint64_t *sums, size_t nr,
		 bool with_whole)
{
	*p = (struct runsum){ .lens = lens, .sums = sums, .nr = nr, .left = nr ? lens[0] : 0,
			      .with_whole = with_whole };
	hash64_init(&p->h);
	hash64_init(&p->whole);
	next_span(p);		/* empty spans first */
}

void runsum_feed(struct runsum *p, const void *data, size_t n)
{
	const uint8_t *buf = data;

	p->total += n;
	while (n && p->i < p->nr) {
		size_t k = n < p->left ? n : p->left;

		if (p->with_whole)
			hash64_update2(&p->h, &p->whole, buf, k);	/* each byte read once */
		else
			hash64_update(&p->h, buf, k);
		p->left -= k;
		buf += k;
		n -= k;
		next_span(p);
	}
	if (p->with_whole)
		hash64_update(&p->whole, buf, n);	/* past the spans (the caller refuses it) */
}

void runsum_end(struct runsum *p)
{
	for (; p->i < p->nr; p->i++) {	/* short data (the caller compares sizes) */
		p->sums[p->i] = hash64_final(&p->h);
		hash64_init(&p->h);
	}
}

int runsum_read(int fd, const char *name, const uint64_t *lens, size_t nr, uint64_t *sums,
		struct hash64 *whole, bool with_whole)
{
	uint8_t *buf = malloc(READ_BUF);
	struct runsum p;
	uint64_t off = 0;
	int ret = 0;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	runsum_init(&p, lens, sums, nr, with_whole);
	while ((n = pread(fd, buf, READ_BUF, off)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = fail(-errno, "cannot read image %s: %s", name, strerror(errno));
			break;
		}
		runsum_feed(&p, buf, n);
		off += n;
	}
	runsum_end(&p);
	*whole = p.whole;
	whole->total = p.total;
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	free(buf);
	return ret;
}

static void feed_cb(void *arg, const void *buf, size_t n)
{
	runsum_feed(arg, buf, n);
}

int runsum_stream(int fd, const char *name, const uint64_t *lens, size_t nr, uint64_t *sums,
		  struct hash64 *whole, bool with_whole)
{
	struct runsum p;
	int ret;

	runsum_init(&p, lens, sums, nr, with_whole);
	ret = stream_read(fd, name, feed_cb, &p);
	runsum_end(&p);
	*whole = p.whole;
	whole->total = p.total;
	return ret;
}
