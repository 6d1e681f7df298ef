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

size_t runsum_marks_size(const uint64_t *lens, size_t nr)
{
	size_t n = 0;

	for (size_t i = 0; i < nr; i++)
		n += runsum_marks(lens[i], RUNSUM_BLOCK_SHIFT) * RUNSUM_LANES;
	return n;
}

bool runsum_block_ok(const uint64_t *marks, uint64_t nr_marks, unsigned int shift, uint64_t k,
		     const void *buf, size_t len, uint64_t sum)
{
	struct hash64 h;

	if (k > nr_marks)
		return false;
	hash64_init(&h);
	if (k) {
		memcpy(h.lane, marks + (k - 1) * RUNSUM_LANES, sizeof(h.lane));
		h.total = k << shift;
	}
	hash64_update(&h, buf, len);
	if (k == nr_marks)
		return hash64_final(&h) == sum;
	return len == (1ULL << shift) &&
	       !memcmp(h.lane, marks + k * RUNSUM_LANES, sizeof(h.lane));
}

void runsum_set_marks(struct runsum *p, uint64_t *marks)
{
	p->marks = marks;
	p->at = 0;
}

/* How much of the span may be fed before its next block mark is taken. */
static size_t to_mark(const struct runsum *p, size_t k)
{
	uint64_t done = p->lens[p->i] - p->left;
	uint64_t room = RUNSUM_BLOCK - (done & (RUNSUM_BLOCK - 1));

	return p->marks && room < k ? room : k;
}

/* After a feed: the span's state at a block boundary inside it kept. */
static void take_mark(struct runsum *p)
{
	uint64_t done = p->lens[p->i] - p->left;

	if (!p->marks || !p->left || (done & (RUNSUM_BLOCK - 1)))
		return;
	memcpy(p->marks + p->at, p->h.lane, sizeof(p->h.lane));
	p->at += RUNSUM_LANES;
}

void runsum_feed(struct runsum *p, const void *data, size_t n)
{
	const uint8_t *buf = data;

	p->total += n;
	while (n && p->i < p->nr) {
		size_t k = to_mark(p, n < p->left ? n : p->left);

		if (p->with_whole)
			hash64_update2(&p->h, &p->whole, buf, k);	/* each byte read once */
		else
			hash64_update(&p->h, buf, k);
		p->left -= k;
		take_mark(p);
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

static int read_all(int fd, const char *name, const uint64_t *lens, size_t nr, uint64_t *sums,
		    struct hash64 *whole, bool with_whole, uint64_t *marks)
{
	uint8_t *buf = malloc(READ_BUF);
	struct runsum p;
	uint64_t off = 0;
	int ret = 0;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	runsum_init(&p, lens, sums, nr, with_whole);
	runsum_set_marks(&p, marks);
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

int runsum_read(int fd, const char *name, const uint64_t *lens, size_t nr, uint64_t *sums,
		struct hash64 *whole, bool with_whole)
{
	return read_all(fd, name, lens, nr, sums, whole, with_whole, NULL);
}

int runsum_read_marks(int fd, const char *name, const uint64_t *lens, size_t nr, uint64_t *sums,
		      struct hash64 *whole, uint64_t *marks)
{
	return read_all(fd, name, lens, nr, sums, whole, false, marks);
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
