/*
 * The page handler of `memdump restore --lazy-pages` (lazy.h): a process
 * memdump forks before the restored processes. Each blob sends it the
 * userfaultfd of its lazy VMAs; the handler then
 *
 *  - serves each missing-page fault with UFFDIO_COPY from the pages images
 *    (the faulting page and up to LAZY_FAULT_PAGES dumped pages after it),
 *    or UFFDIO_ZEROPAGE where nothing was dumped (or the page was removed);
 *  - follows the process: FORK (a child gets its own uffd and the pages its
 *    parent had not got yet), REMAP (mremap moves the pages still to come),
 *    REMOVE (madvise(DONTNEED): those pages read zeros now, not the dump),
 *    UNMAP (nothing to fill there any more);
 *  - fills everything else in the background, in LAZY_FILL_PAGES pieces
 *    between faults: the hot pages first (LAZY_HOT: written since the
 *    chain's last pre-dump, the process's working set), then the rest in
 *    address order;
 *    a 2 MiB filled whole in a VMA that may have huge pages is collapsed
 *    into one (process_madvise(MADV_COLLAPSE)), as the eager fill does;
 *  - closes each uffd once everything of it is filled (the process then no
 *    longer depends on memdump) and exits when every one is closed.
 *
 * The keeper. When the last reference to a uffd goes, the kernel wakes the
 * faults waiting on it and retries them without it: they get zero pages,
 * wrong memory. So a second process, the keeper, shares the handler's fd
 * table (CLONE_FILES: every uffd the handler receives or reads from a FORK
 * event is the keeper's at the same instant) and watches the handler's
 * pidfd. The handler gone before it said it was done (killed, crashed):
 * the uffds stay open, so the faults wait instead of reading zeros, and the
 * keeper kills every restored process and its descendants with one line in
 * memdump's log. The keeper gone first, the handler starts another. Only
 * both killed within the same instant leaves the zero-page hazard (each
 * runs in the handler's own session, out of memdump's process group).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/sched.h>
#include <linux/userfaultfd.h>

#include "common.h"
#include "hash64.h"
#include "image/runsum.h"
#include "log.h"
#include "mem/lazy.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE	25
#endif

#define LAZY_DONE		(UINT64_MAX - 1)	/* filled: present in the process */
#define LAZY_FAULT_PAGES	16			/* served at once from a fault */
#define LAZY_FILL_PAGES		64			/* a background piece (256 KiB: four blocks) */
#define HUGE_PAGES		512
#define MAX_RETRY		256
#define MAX_SAMPLES		65536

static bool pending(uint64_t p)
{
	return p != LAZY_NONE && p != LAZY_DONE;
}

/* One userfaultfd: a restored process's lazy memory, or a child's forked since. */
struct lz_mm {
	int uffd;		/* -1: closed */
	pid_t pid;		/* 0: a child forked after the restore */
	int pidfd;		/* -1 without a pid */
	struct lazy_seg *segs;	/* sorted by start */
	size_t nr, cap;
	uint64_t left;		/* pages still to fill */
	size_t cur_seg;		/* the background fill's cursor */
	uint64_t cur_pg;
	bool hot_done;		/* the hot pass over (the cursor then goes in address order) */
	uint64_t retry[MAX_RETRY];	/* faults met with EAGAIN (mm changing): again later */
	size_t nr_retry;
};

/* What the keeper and the handler share (a MAP_SHARED page). */
struct keeper_shared {
	volatile int done;		/* the handler finished, or failed and killed them itself */
	volatile uint64_t left;		/* pages not yet filled, for the keeper's message */
	pid_t handler;
	unsigned int nr_pids;
	pid_t pids[256];		/* the restored processes */
};

struct handler {
	struct lazy_proc *procs;
	size_t nr_procs;
	bool *received;			/* procs[i]'s socket done with */
	struct lz_mm **mms;
	size_t nr_mms;
	struct lazy_source *src;
	struct keeper_shared *ks;
	pid_t keeper;
	int keeper_pidfd;
	bool thp;
	int pace_ms;			/* MEMDUMP_LAZY_PACE_MS: between background pieces (tests) */
	/* MEMDUMP_LAZY_CHECK=late: the lazy runs' checksums, taken before the background fill */
	size_t check_proc, check_run;	/* the next run to check: procs[check_proc].checks[check_run] */
	uint64_t check_done;		/* its bytes hashed so far */
	struct hash64 check_h;
	/* the runs checked block by block as served, of every process, by image and offset */
	const struct lazy_check **blocks;
	size_t nr_blocks;
	/* figures */
	uint64_t t0, filled, faults, fault_pages, zero_faults, collapsed, bg_us, bg_pages;
	uint64_t events[4];		/* FORK, REMAP, REMOVE, UNMAP met */
	uint32_t *samples;		/* fault service times, ns */
	size_t nr_samples;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- killing the restored processes ---- */

static void kill_below(pid_t pid, int depth)
{
	char path[64];
	DIR *d;
	struct dirent *e;

	if (depth > 64)
		return;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		char cpath[320], buf[4096];
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(cpath, sizeof(cpath), "/proc/%d/task/%s/children", pid, e->d_name);
		f = fopen(cpath, "r");
		if (!f)
			continue;
		while (fscanf(f, "%4095s", buf) == 1) {
			pid_t c = atoi(buf);

			if (c > 0) {
				kill(c, SIGSTOP);
				kill_below(c, depth + 1);
				kill(c, SIGKILL);
			}
		}
		fclose(f);
	}
	closedir(d);
}

/* Every restored process and whatever it forked since: SIGKILL. */
static void kill_restored(const struct keeper_shared *ks)
{
	for (unsigned int i = 0; i < ks->nr_pids; i++)
		kill(ks->pids[i], SIGSTOP);	/* no more forks while the tree is walked */
	for (unsigned int i = 0; i < ks->nr_pids; i++) {
		kill_below(ks->pids[i], 0);
		kill(ks->pids[i], SIGKILL);
	}
}

static void pids_text(const struct keeper_shared *ks, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = 0;
	for (unsigned int i = 0; i < ks->nr_pids && o + 12 < len; i++)
		o += snprintf(buf + o, len - o, "%s%d", i ? " " : "", ks->pids[i]);
}

/* The handler cannot serve a page: nothing may run on with wrong memory. */
static void __attribute__((noreturn)) fatal(struct handler *h, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void fatal(struct handler *h, const char *fmt, ...)
{
	char why[512], pids[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	kill_restored(h->ks);
	pids_text(h->ks, pids, sizeof(pids));
	pr_err("lazy-pages: %s: killed the restored processes %s (their memory cannot be "
	       "completed)", why, pids);
	h->ks->done = 1;
	_exit(1);
}

/* ---- the keeper ---- */

static int pidfd_of(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static void __attribute__((noreturn)) keeper_main(struct keeper_shared *ks)
{
	int fd = pidfd_of(ks->handler);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char pids[1024];

	prctl(PR_SET_NAME, "memdump-lazy-k", 0, 0, 0);
	if (fd >= 0)
		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
	if (ks->done)
		_exit(0);
	kill_restored(ks);
	pids_text(ks, pids, sizeof(pids));
	pr_err("lazy-pages: the page handler %d died with %" PRIu64 " pages not filled: killed "
	       "the restored processes %s (their memory cannot be completed)", ks->handler,
	       ks->left, pids);
	_exit(1);
}

/* A keeper sharing this fd table; it watches this process. */
static int start_keeper(struct handler *h)
{
	pid_t k = (pid_t)syscall(SYS_clone, CLONE_FILES | SIGCHLD, 0, 0, 0, 0);

	if (k < 0)
		return -errno;
	if (k == 0)
		keeper_main(h->ks);
	h->keeper = k;
	h->keeper_pidfd = pidfd_of(k);	/* an fd the keeper holds too: harmless */
	return 0;
}

static void keeper_gone(struct handler *h)
{
	waitpid(h->keeper, NULL, 0);
	close(h->keeper_pidfd);
	h->keeper_pidfd = -1;
	if (start_keeper(h))
		fatal(h, "cannot start a new keeper for the page handler");
	pr_warn("lazy-pages: the page handler's keeper died: started %d", h->keeper);
}

/* ---- the lazy ranges of one uffd ---- */

static struct lazy_seg *seg_at(struct lz_mm *m, uint64_t addr)
{
	size_t lo = 0, hi = m->nr;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (addr < m->segs[mid].start)
			hi = mid;
		else if (addr >= m->segs[mid].end)
			lo = mid + 1;
		else
			return &m->segs[mid];
	}
	return NULL;
}

static int seg_room(struct lz_mm *m)
{
	struct lazy_seg *n;

	if (m->nr < m->cap)
		return 0;
	n = realloc(m->segs, (m->cap * 2 + 8) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	m->segs = n;
	m->cap = m->cap * 2 + 8;
	return 0;
}

/* A segment boundary at addr (a segment across it is cut in two). */
static int seg_split(struct lz_mm *m, uint64_t addr)
{
	struct lazy_seg *s = seg_at(m, addr);
	size_t i;

	if (!s || s->start == addr)
		return 0;
	i = (size_t)(s - m->segs);
	if (seg_room(m))
		return -ENOMEM;
	s = &m->segs[i];
	memmove(s + 2, s + 1, (m->nr - i - 1) * sizeof(*s));
	s[1] = *s;
	s[1].start = addr;
	s[1].pg = s->pg + (addr - s->start) / PAGE_SIZE;
	s->end = addr;
	m->nr++;
	return 0;
}

static uint64_t seg_pending(const struct lazy_seg *s)
{
	uint64_t n = 0;

	for (uint64_t i = 0; i < (s->end - s->start) / PAGE_SIZE; i++)
		n += pending(s->pg[i]);
	return n;
}

/* [a, b) gone from the process: nothing to fill there. */
static int segs_drop(struct lz_mm *m, uint64_t a, uint64_t b)
{
	size_t w = 0;

	if (seg_split(m, a) || seg_split(m, b))
		return -ENOMEM;
	for (size_t i = 0; i < m->nr; i++) {
		if (m->segs[i].start >= a && m->segs[i].end <= b) {
			m->left -= seg_pending(&m->segs[i]);
			continue;
		}
		m->segs[w++] = m->segs[i];
	}
	m->nr = w;
	m->cur_seg = 0;
	m->cur_pg = 0;
	return 0;
}

/* madvise(DONTNEED) and the like: [a, b) reads zeros from now on. */
static void segs_remove(struct lz_mm *m, uint64_t a, uint64_t b)
{
	for (size_t i = 0; i < m->nr; i++) {
		struct lazy_seg *s = &m->segs[i];
		uint64_t x = s->start > a ? s->start : a, y = s->end < b ? s->end : b;

		for (; x < y; x += PAGE_SIZE) {
			uint64_t *p = &s->pg[(x - s->start) / PAGE_SIZE];

			m->left -= pending(*p);
			*p = LAZY_NONE;
		}
	}
}

static int cmp_seg(const void *a, const void *b)
{
	const struct lazy_seg *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* mremap moved [from, from + len) to `to`: so do the pages still to come. */
static int segs_move(struct lz_mm *m, uint64_t from, uint64_t to, uint64_t len)
{
	if (segs_drop(m, to, to + len) || seg_split(m, from) || seg_split(m, from + len))
		return -ENOMEM;
	for (size_t i = 0; i < m->nr; i++) {
		struct lazy_seg *s = &m->segs[i];

		if (s->start >= from && s->end <= from + len) {
			s->start = s->start - from + to;
			s->end = s->end - from + to;
		}
	}
	qsort(m->segs, m->nr, sizeof(*m->segs), cmp_seg);
	m->cur_seg = 0;
	m->cur_pg = 0;
	return 0;
}

static struct lz_mm *mm_new(struct handler *h, int uffd, pid_t pid)
{
	struct lz_mm *m = calloc(1, sizeof(*m)), **n;

	if (!m)
		return NULL;
	n = realloc(h->mms, (h->nr_mms + 1) * sizeof(*n));
	if (!n) {
		free(m);
		return NULL;
	}
	h->mms = n;
	h->mms[h->nr_mms++] = m;
	m->uffd = uffd;
	m->pid = pid;
	m->pidfd = pid > 0 ? pidfd_of(pid) : -1;
	return m;
}

/* The uffd of restored process p arrived: its segments, as planned. */
static int mm_of_proc(struct handler *h, const struct lazy_proc *p, int uffd)
{
	struct lz_mm *m = mm_new(h, uffd, p->pid);

	if (!m)
		return -ENOMEM;
	m->segs = p->segs;
	m->nr = m->cap = p->nr_segs;
	for (size_t i = 0; i < m->nr; i++)
		m->left += seg_pending(&m->segs[i]);
	m->hot_done = !p->hot_pages;
	if (p->hot_pages)
		pr_info("lazy-pages: %d: %" PRIu64 " hot pages first (written since the parent set)",
			p->pid, p->hot_pages);
	return 0;
}

/* A FORK event: the child has the pages its parent had, the rest is to come for it too. */
static int mm_of_fork(struct handler *h, const struct lz_mm *parent, int uffd)
{
	struct lz_mm *m = mm_new(h, uffd, 0);

	if (!m)
		return -ENOMEM;
	m->segs = calloc(parent->nr + 1, sizeof(*m->segs));
	if (!m->segs)
		return -ENOMEM;
	m->nr = m->cap = parent->nr;
	for (size_t i = 0; i < parent->nr; i++) {
		const struct lazy_seg *s = &parent->segs[i];
		size_t n = (s->end - s->start) / PAGE_SIZE;

		m->segs[i] = *s;
		m->segs[i].pg = malloc(n * sizeof(uint64_t));
		if (!m->segs[i].pg)
			return -ENOMEM;
		memcpy(m->segs[i].pg, s->pg, n * sizeof(uint64_t));
	}
	m->left = parent->left;
	m->hot_done = parent->hot_done;
	return 0;
}

/* Everything of m filled, or its process gone: the uffd closed. */
static void mm_close(struct lz_mm *m)
{
	if (m->uffd >= 0)
		close(m->uffd);
	if (m->pidfd >= 0)
		close(m->pidfd);
	m->uffd = m->pidfd = -1;
	m->nr_retry = 0;
}

/* ---- filling ---- */

static void sample(struct handler *h, uint64_t t0)
{
	if (h->nr_samples < MAX_SAMPLES)
		h->samples[h->nr_samples++] = (uint32_t)(now_ns() - t0);
}

static void wake(struct lz_mm *m, uint64_t addr)
{
	struct uffdio_range r = { addr, PAGE_SIZE };

	ioctl(m->uffd, UFFDIO_WAKE, &r);
}

static uint64_t copyable(const struct lazy_seg *s, uint64_t i, uint64_t max);

/* ---- the blocks checked as served ---- */

static int cmp_block(const void *a, const void *b)
{
	const struct lazy_check *x = *(const struct lazy_check *const *)a;
	const struct lazy_check *y = *(const struct lazy_check *const *)b;

	if (x->img != y->img)
		return x->img < y->img ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static int index_blocks(struct handler *h)
{
	size_t n = 0;

	for (size_t i = 0; i < h->nr_procs; i++)
		n += h->procs[i].nr_blocks;
	h->blocks = calloc(n + 1, sizeof(*h->blocks));
	if (!h->blocks)
		return -ENOMEM;
	for (size_t i = 0; i < h->nr_procs; i++)
		for (size_t k = 0; k < h->procs[i].nr_blocks; k++)
			h->blocks[h->nr_blocks++] = &h->procs[i].blocks[k];
	qsort(h->blocks, h->nr_blocks, sizeof(*h->blocks), cmp_block);
	return 0;
}

/* The run checked block by block that holds byte off of image img, or NULL. */
static const struct lazy_check *block_run(const struct handler *h, unsigned int img, uint64_t off)
{
	size_t lo = 0, hi = h->nr_blocks;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct lazy_check *c = h->blocks[mid];

		if (c->img < img || (c->img == img && c->off + c->len <= off))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < h->nr_blocks && h->blocks[lo]->img == img && h->blocks[lo]->off <= off &&
	    off < h->blocks[lo]->off + h->blocks[lo]->len)
		return h->blocks[lo];
	return NULL;
}

static const void *get_bytes(struct handler *h, unsigned int img, uint64_t off, uint64_t len,
			     uint64_t addr)
{
	const void *src = h->src->get(h->src, img, off, len);

	if (!src && h->src->why)
		fatal(h, "%s, for the page at %#" PRIx64, h->src->why, addr);
	if (!src)
		fatal(h, "the pages of %#" PRIx64 " are not in their image any more", addr);
	return src;
}

/*
 * The bytes of pages [i, i + *n) of s, checked: where their run has block
 * marks, the whole blocks that hold them are read and each checked before
 * any of it is given (a damaged one kills the processes, nothing of it
 * copied); *n then grows to the end of those blocks (the pages there still
 * to come), or shrinks to the run's end.
 */
static const void *get_checked(struct handler *h, struct lazy_seg *s, uint64_t i, uint64_t *n)
{
	unsigned int img = LAZY_PAGE_IMG(s->pg[i]);
	uint64_t off = LAZY_PAGE_OFF(s->pg[i]), addr = s->start + i * PAGE_SIZE;
	const struct lazy_check *c = block_run(h, img, off);
	uint64_t lo, hi, bs;
	const uint8_t *buf;

	if (!c)
		return get_bytes(h, img, off, *n * PAGE_SIZE, addr);
	bs = 1ULL << c->shift;
	*n = MIN(*n, (c->off + c->len - off) / PAGE_SIZE);
	lo = (off - c->off) & ~(bs - 1);
	hi = MIN(c->len, ((off - c->off + *n * PAGE_SIZE) + bs - 1) & ~(bs - 1));
	buf = get_bytes(h, img, c->off + lo, hi - lo, addr);
	for (uint64_t b = lo; b < hi; b += bs) {
		uint64_t len = MIN(bs, hi - b);

		if (!runsum_block_ok(c->marks, c->nr_marks, c->shift, b >> c->shift, buf + (b - lo),
				     len, c->sum))
			fatal(h, "image %s is corrupt: the pages at %#" PRIx64 " (%" PRIu64 " pages, "
			      "block %" PRIu64 " of the run at %#" PRIx64 ", %" PRIu64 " pages) do not "
			      "match their checksum", c->name, c->vaddr + b, len / PAGE_SIZE,
			      b >> c->shift, c->vaddr, c->len / PAGE_SIZE);
	}
	*n = copyable(s, i, (c->off + hi - off) / PAGE_SIZE);
	return buf + (off - c->off - lo);
}

/*
 * Pages [i, i + *n) of s (dumped, adjacent in their image) copied into the
 * process, *n as get_checked() made it. 0, -EAGAIN (the process's mappings
 * are changing: its event first), -ESRCH (the process is gone).
 */
static int copy_pages(struct handler *h, struct lz_mm *m, struct lazy_seg *s, uint64_t i,
		      uint64_t *np)
{
	const void *src = get_checked(h, s, i, np);
	uint64_t n = *np;

	while (n) {
		struct uffdio_copy c = { s->start + i * PAGE_SIZE, (uint64_t)src, n * PAGE_SIZE,
					 0, 0 };
		int err = ioctl(m->uffd, UFFDIO_COPY, &c) ? errno : 0;
		uint64_t done = c.copy > 0 ? (uint64_t)c.copy / PAGE_SIZE : 0;

		if (!err)
			done = n;
		else if (err == EEXIST)
			done++;		/* that page is there already: the process's own */
		for (uint64_t k = 0; k < done && k < n; k++) {
			m->left -= pending(s->pg[i + k]);
			s->pg[i + k] = LAZY_DONE;
		}
		h->filled += done;
		if (done >= n)
			return 0;
		i += done;
		n -= done;
		src = (const char *)src + done * PAGE_SIZE;
		if (err == EAGAIN || err == ESRCH)
			return -err;
		if (err == EFAULT)	/* the source: the image shrank under its mapping */
			fatal(h, "cannot read the pages of %#" PRIx64 " from their image",
			      s->start + i * PAGE_SIZE);
		if (err == ENOENT) {	/* not mapped there any more */
			segs_remove(m, s->start + i * PAGE_SIZE, s->start + (i + n) * PAGE_SIZE);
			return 0;
		}
		if (err && err != EEXIST)
			fatal(h, "UFFDIO_COPY at %#" PRIx64 " failed: %s",
			      s->start + i * PAGE_SIZE, strerror(err));
	}
	return 0;
}

/* Pages from i of s that copy together (dumped, adjacent in one image): at most max. */
static uint64_t copyable(const struct lazy_seg *s, uint64_t i, uint64_t max)
{
	uint64_t n = 1, np = (s->end - s->start) / PAGE_SIZE;

	while (n < max && i + n < np && pending(s->pg[i + n]) &&
	       s->pg[i + n] == s->pg[i] + n * PAGE_SIZE)
		n++;
	return n;
}

/* A missing page at addr: its dumped bytes (and those after it), or zeros. */
static int serve_fault(struct handler *h, struct lz_mm *m, uint64_t addr)
{
	struct lazy_seg *s = seg_at(m, addr);
	uint64_t i = s ? (addr - s->start) / PAGE_SIZE : 0;
	int ret;

	if (s && pending(s->pg[i])) {
		uint64_t n = copyable(s, i, LAZY_FAULT_PAGES);

		ret = copy_pages(h, m, s, i, &n);
		if (ret == -EAGAIN)
			return ret;
		h->fault_pages++;
		if (ret == 0)
			wake(m, addr);	/* a page a partial copy skipped (EEXIST) */
		return 0;
	}
	struct uffdio_zeropage z = { { addr, PAGE_SIZE }, 0, 0 };

	h->zero_faults++;
	if (ioctl(m->uffd, UFFDIO_ZEROPAGE, &z)) {
		if (errno == EAGAIN)
			return -EAGAIN;
		wake(m, addr);	/* there already, or not mapped any more: the fault retries */
	}
	return 0;
}

static void fault(struct handler *h, struct lz_mm *m, uint64_t addr)
{
	uint64_t t0 = now_ns();

	addr &= ~(PAGE_SIZE - 1);
	h->faults++;
	if (serve_fault(h, m, addr) == -EAGAIN) {
		if (m->nr_retry < MAX_RETRY)
			m->retry[m->nr_retry++] = addr;
		else
			wake(m, addr);	/* it faults again */
		return;
	}
	sample(h, t0);
}

static void retry_faults(struct handler *h, struct lz_mm *m)
{
	size_t n = m->nr_retry;
	uint64_t addrs[MAX_RETRY];

	memcpy(addrs, m->retry, n * sizeof(addrs[0]));
	m->nr_retry = 0;
	for (size_t i = 0; i < n && m->uffd >= 0; i++)
		if (serve_fault(h, m, addrs[i]) == -EAGAIN && m->nr_retry < MAX_RETRY)
			m->retry[m->nr_retry++] = addrs[i];
}

static void event(struct handler *h, size_t mi, const struct uffd_msg *msg)
{
	struct lz_mm *m = h->mms[mi];
	int ret = 0;

	switch (msg->event) {
	case UFFD_EVENT_PAGEFAULT:
		fault(h, m, msg->arg.pagefault.address);
		return;
	case UFFD_EVENT_FORK:
		h->events[0]++;
		ret = mm_of_fork(h, m, (int)msg->arg.fork.ufd);
		break;
	case UFFD_EVENT_REMAP:
		h->events[1]++;
		ret = segs_move(m, msg->arg.remap.from, msg->arg.remap.to, msg->arg.remap.len);
		break;
	case UFFD_EVENT_REMOVE:
		h->events[2]++;
		segs_remove(m, msg->arg.remove.start, msg->arg.remove.end);
		break;
	case UFFD_EVENT_UNMAP:
		h->events[3]++;
		ret = segs_drop(m, msg->arg.remove.start, msg->arg.remove.end);
		break;
	default:
		break;
	}
	if (ret)
		fatal(h, "out of memory following the restored processes' mappings");
}

/* Every message waiting on mms[mi]; 0 when there was none. */
static int drain(struct handler *h, size_t mi)
{
	struct uffd_msg msgs[64];
	int got = 0;

	for (;;) {
		struct lz_mm *m = h->mms[mi];	/* a FORK event may move h->mms */
		ssize_t n = read(m->uffd, msgs, sizeof(msgs));

		if (n <= 0) {
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				fatal(h, "cannot read the userfaultfd: %s", strerror(errno));
			break;
		}
		got = 1;
		for (size_t k = 0; k < (size_t)n / sizeof(msgs[0]); k++)
			event(h, mi, &msgs[k]);
	}
	if (h->mms[mi]->nr_retry)
		retry_faults(h, h->mms[mi]);
	return got;
}

/* A 2 MiB filled whole in a VMA that may have huge pages: one huge page, as dumped. */
static void collapse(struct handler *h, struct lz_mm *m, const struct lazy_seg *s, uint64_t i)
{
	uint64_t blk = (s->start + i * PAGE_SIZE) & ~(HUGE_PAGES * PAGE_SIZE - 1);
	struct iovec iov = { (void *)blk, HUGE_PAGES * PAGE_SIZE };

	if (!h->thp || !s->huge || m->pidfd < 0 || blk < s->start ||
	    blk + HUGE_PAGES * PAGE_SIZE > s->end)
		return;
	for (uint64_t k = (blk - s->start) / PAGE_SIZE, e = k + HUGE_PAGES; k < e; k++)
		if (s->pg[k] != LAZY_DONE)
			return;
	if (syscall(SYS_process_madvise, m->pidfd, &iov, 1, MADV_COLLAPSE, 0) >= 0)
		h->collapsed++;
}

/* The next hot page still to fill from (seg, i) on, the cursor moved there: false at the end. */
static bool next_hot(struct lz_mm *m)
{
	for (; m->cur_seg < m->nr; m->cur_seg++, m->cur_pg = 0) {
		const struct lazy_seg *s = &m->segs[m->cur_seg];
		uint64_t np = (s->end - s->start) / PAGE_SIZE;

		while (m->cur_pg < np && !(pending(s->pg[m->cur_pg]) && LAZY_PAGE_HOT(s->pg[m->cur_pg])))
			m->cur_pg++;
		if (m->cur_pg < np)
			return true;
	}
	return false;
}

/*
 * One background piece of the hot pass: up to LAZY_FILL_PAGES hot pages
 * (runs scattered over the address space, taken together). At the end of
 * the segments the pass is over, and the cursor starts again for the rest.
 */
static void hot_step(struct handler *h, struct lz_mm *m)
{
	uint64_t budget = LAZY_FILL_PAGES;

	while (budget && next_hot(m)) {
		struct lazy_seg *s = &m->segs[m->cur_seg];
		uint64_t i = m->cur_pg, n = copyable(s, i, budget);
		int ret = copy_pages(h, m, s, i, &n);

		if (ret == -ESRCH) {
			mm_close(m);
			return;
		}
		pr_debug("lazy-pages: %d: hot %#" PRIx64 " %" PRIu64 " pages", m->pid,
			 s->start + i * PAGE_SIZE, n);
		if (ret)
			return;		/* the process's mappings are changing: its event first */
		budget -= MIN(n, budget);
	}
	if (m->cur_seg < m->nr)
		return;
	m->hot_done = true;
	m->cur_seg = 0;
	m->cur_pg = 0;
	pr_info("lazy-pages: %d: the hot pages are in (%" PRIu64 " pages left, in address order)",
		m->pid, m->left);
}

/*
 * One background piece of m, from its cursor: 0 when nothing is left. The
 * cursor stays on a piece not copied whole (the process's mappings were
 * changing: its event first), and goes round again once at the end (pages
 * left behind it so).
 */
static int fill_step(struct handler *h, struct lz_mm *m)
{
	int rounds = 0;

	for (;;) {
		if (m->cur_seg >= m->nr) {
			if (!m->left || rounds++)
				break;
			m->cur_seg = 0;
			m->cur_pg = 0;
			continue;
		}
		struct lazy_seg *s = &m->segs[m->cur_seg];
		uint64_t np = (s->end - s->start) / PAGE_SIZE, i = m->cur_pg, n, room;
		int ret;

		while (i < np && !pending(s->pg[i]))
			i++;
		if (i == np) {
			m->cur_seg++;
			m->cur_pg = 0;
			continue;
		}
		room = LAZY_FILL_PAGES - ((s->start / PAGE_SIZE + i) % LAZY_FILL_PAGES);
		n = copyable(s, i, room);
		ret = copy_pages(h, m, s, i, &n);
		pr_debug("lazy-pages: %d: fill %#" PRIx64 " %" PRIu64 " pages", m->pid,
			 s->start + i * PAGE_SIZE, n);
		if (ret == -ESRCH) {
			mm_close(m);
			return 0;
		}
		m->cur_pg = i;		/* the next scan passes over what is in */
		if (!ret && (s->start / PAGE_SIZE + i + n) % HUGE_PAGES == 0)
			collapse(h, m, s, i);
		return 1;
	}
	if (m->left) {	/* counted but found nowhere: not to wait for forever */
		pr_warn("lazy-pages: %" PRIu64 " pages counted but not found in a process's ranges",
			m->left);
		m->left = 0;
	}
	return 0;
}

/* ---- the late checksums ---- */

static const struct lazy_check *next_check(struct handler *h)
{
	while (h->check_proc < h->nr_procs) {
		const struct lazy_proc *p = &h->procs[h->check_proc];

		if (h->check_run < p->nr_checks)
			return &p->checks[h->check_run];
		h->check_proc++;
		h->check_run = 0;
	}
	return NULL;
}

/* One piece of the next run to check: 0 when every run is checked. */
static int check_step(struct handler *h)
{
	const struct lazy_check *c = next_check(h);
	uint64_t n;
	const void *src;

	if (!c)
		return 0;
	if (!h->check_done)
		h64_init(&h->check_h);
	n = c->len - h->check_done < LAZY_FILL_PAGES * PAGE_SIZE * 8 ?
		c->len - h->check_done : LAZY_FILL_PAGES * PAGE_SIZE * 8;
	src = h->src->get(h->src, c->img, c->off + h->check_done, n);
	if (!src && h->src->why)
		fatal(h, "%s, for the pages at %#" PRIx64 " (pid %d)", h->src->why,
		      c->vaddr + h->check_done, h->procs[h->check_proc].pid);
	if (!src)
		fatal(h, "the pages of the run at %#" PRIx64 " are not in %s any more",
		      c->vaddr, c->name);
	h64_update(&h->check_h, src, n);
	h->check_done += n;
	if (h->check_done < c->len)
		return 1;
	if (!c->no_sum && h64_final(&h->check_h) != c->sum)
		fatal(h, "image %s is corrupt: the pages of the run at %#" PRIx64
		      " (%" PRIu64 " pages) do not match their checksum", c->name, c->vaddr,
		      c->len / PAGE_SIZE);
	h->check_run++;
	h->check_done = 0;
	return 1;
}

/* ---- the loop ---- */

static int recv_uffd(int sock)
{
	char data[16], ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { data, sizeof(data) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			     .msg_controllen = sizeof(ctl) };
	struct cmsghdr *c;
	int fd;
	ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);

	if (n < 0 && errno == EAGAIN)
		return -EAGAIN;
	c = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL;
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -ENOENT;		/* the socket closed: that process never got here */
	memcpy(&fd, CMSG_DATA(c), sizeof(fd));
	return fd;
}

static void proc_message(struct handler *h, size_t i)
{
	int uffd = recv_uffd(h->procs[i].sock);

	if (uffd == -EAGAIN)
		return;
	close(h->procs[i].sock);
	h->received[i] = true;
	if (uffd >= 0 && mm_of_proc(h, &h->procs[i], uffd))
		fatal(h, "out of memory");
}

static bool busy(struct handler *h)
{
	if (next_check(h))
		return true;
	for (size_t i = 0; i < h->nr_procs; i++)
		if (!h->received[i])
			return true;
	for (size_t i = 0; i < h->nr_mms; i++)
		if (h->mms[i]->uffd >= 0)
			return true;
	return false;
}

static uint64_t left(const struct handler *h)
{
	uint64_t n = 0;

	for (size_t i = 0; i < h->nr_mms; i++)
		if (h->mms[i]->uffd >= 0)
			n += h->mms[i]->left;
	return n;
}

/* The uffds whose pages are all in: their last messages answered, closed. */
static void close_complete(struct handler *h)
{
	for (size_t i = 0; i < h->nr_mms; i++) {
		if (h->mms[i]->uffd < 0 || h->mms[i]->left)
			continue;
		drain(h, i);
		if (!h->mms[i]->left && !h->mms[i]->nr_retry)
			mm_close(h->mms[i]);
	}
}

/* One round: every socket, uffd and pidfd polled, waiting up to ms. */
static void poll_all(struct handler *h, int ms)
{
	size_t n = h->nr_procs + 2 * h->nr_mms + 1, k = 0;
	struct pollfd p[n];
	int who[n];	/* >= 0: a proc's socket; -1 - i: mm i's uffd; -1000000 - i: its pidfd */

	for (size_t i = 0; i < h->nr_procs; i++)
		if (!h->received[i]) {
			p[k] = (struct pollfd){ h->procs[i].sock, POLLIN, 0 };
			who[k++] = (int)i;
		}
	for (size_t i = 0; i < h->nr_mms; i++) {
		if (h->mms[i]->uffd < 0)
			continue;
		p[k] = (struct pollfd){ h->mms[i]->uffd, POLLIN, 0 };
		who[k++] = -1 - (int)i;
		if (h->mms[i]->pidfd >= 0) {
			p[k] = (struct pollfd){ h->mms[i]->pidfd, POLLIN, 0 };
			who[k++] = -1000000 - (int)i;
		}
	}
	p[k] = (struct pollfd){ h->keeper_pidfd, POLLIN, 0 };
	who[k++] = INT32_MIN;
	if (poll(p, k, ms) <= 0)
		return;
	for (size_t j = 0; j < k; j++) {
		if (!p[j].revents)
			continue;
		if (who[j] == INT32_MIN)
			keeper_gone(h);
		else if (who[j] >= 0)
			proc_message(h, (size_t)who[j]);
		else if (who[j] > -1000000)
			drain(h, (size_t)(-1 - who[j]));
		else if (h->mms[-1000000 - who[j]]->uffd >= 0)
			mm_close(h->mms[-1000000 - who[j]]);	/* the process exited */
	}
}

/* Between two background pieces: every message waiting answered first. */
static void drain_all(struct handler *h)
{
	for (size_t i = 0; i < h->nr_mms; i++)
		if (h->mms[i]->uffd >= 0)
			drain(h, i);
}

static struct lz_mm *next_to_fill(const struct handler *h)
{
	for (size_t i = 0; i < h->nr_mms; i++)
		if (h->mms[i]->uffd >= 0 && h->mms[i]->left)
			return h->mms[i];
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void report(struct handler *h)
{
	double s = (now_ns() - h->t0) / 1e9;
	double med = 0;

	if (h->nr_samples) {
		qsort(h->samples, h->nr_samples, sizeof(uint32_t), cmp_u32);
		med = h->samples[h->nr_samples / 2] / 1e3;
	}
	pr_info("lazy-pages: done: %" PRIu64 " pages filled in %.3f s (background: %" PRIu64
		" in %.3f s, %.0f MB/s), %" PRIu64 " faults (%" PRIu64 " from the images, %" PRIu64
		" zero), median service %.1f us, %" PRIu64 " huge pages; events: %" PRIu64 " fork, %"
		PRIu64 " remap, %" PRIu64 " remove, %" PRIu64 " unmap",
		h->filled, s, h->bg_pages, h->bg_us / 1e6,
		h->bg_us ? h->bg_pages * 4096.0 / h->bg_us : 0.0, h->faults, h->fault_pages,
		h->zero_faults, med, h->collapsed, h->events[0], h->events[1], h->events[2],
		h->events[3]);
}

/* One piece between faults: a run's checksum first (a damaged image found before it is
 * all in; from a migration's source, the fetch), else memory filled. */
static void background_step(struct handler *h, struct lz_mm *m)
{
	uint64_t t0, f0;

	if (check_step(h) || !m)
		return;
	t0 = now_ns();
	f0 = h->filled;
	if (!m->hot_done)
		hot_step(h, m);
	else
		fill_step(h, m);
	h->bg_us += (now_ns() - t0) / 1000;
	h->bg_pages += h->filled - f0;
}

int lazy_handler_run(struct lazy_proc *procs, size_t n, struct lazy_source *src)
{
	struct handler h = { .procs = procs, .nr_procs = n, .src = src, .keeper_pidfd = -1 };
	const char *thp = getenv("MEMDUMP_LAZY_THP");
	uint64_t next_bg = 0;	/* MEMDUMP_LAZY_PACE_MS: when the next background piece is due */

	prctl(PR_SET_NAME, "memdump-lazy", 0, 0, 0);
	h.t0 = now_ns();
	h.thp = !thp || strcmp(thp, "0");
	h.pace_ms = getenv("MEMDUMP_LAZY_PACE_MS") ? atoi(getenv("MEMDUMP_LAZY_PACE_MS")) : 0;
	h.received = calloc(n + 1, sizeof(bool));
	h.samples = malloc(MAX_SAMPLES * sizeof(uint32_t));
	h.ks = mmap(NULL, sizeof(*h.ks), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!h.received || !h.samples || h.ks == MAP_FAILED) {
		pr_err("lazy-pages: out of memory");
		return 1;
	}
	h.ks->handler = getpid();
	for (size_t i = 0; i < n && i < sizeof(h.ks->pids) / sizeof(pid_t); i++)
		h.ks->pids[h.ks->nr_pids++] = procs[i].pid;
	if (index_blocks(&h)) {
		pr_err("lazy-pages: out of memory");
		return 1;
	}
	if (start_keeper(&h)) {
		pr_err("lazy-pages: cannot start the keeper: %s", strerror(errno));
		return 1;
	}
	while (busy(&h)) {
		struct lz_mm *m = next_to_fill(&h);
		uint64_t now = now_ns();

		poll_all(&h, !m && !next_check(&h) ? 1000 :
			     next_bg > now ? (int)((next_bg - now) / 1000000 + 1) : 0);
		drain_all(&h);
		m = next_to_fill(&h);
		if (now_ns() >= next_bg) {	/* paced: faults only until the next piece is due */
			next_bg = now_ns() + (uint64_t)h.pace_ms * 1000000;
			background_step(&h, m);
		}
		close_complete(&h);
		h.ks->left = left(&h);
	}
	h.ks->done = 1;
	report(&h);
	return 0;
}
