/*
 * A userfaultfd the target made itself. What it holds is in three places:
 * /proc/PID/fdinfo/FD (faults not yet read, faults read and not yet
 * resolved, the features UFFDIO_API negotiated, the open flags), the
 * VmFlags of the VMAs registered with it (um MISSING, uw WP, ui MINOR: the
 * process's, as smaps does not say which userfaultfd a VMA is registered
 * with) and, in a WP range, the pagemap's bit 57 of each page protected.
 * The common case (one userfaultfd, nothing in flight, MISSING and WP
 * ranges, no event features) is dumped as mm_entry.uffd, with the zero pages
 * of its MISSING ranges (PAGE_IS_PFNZERO, which the page scan leaves out),
 * and made again by the restorer blob (uffd_restore.c); the rest is refused
 * with all of it named, so that a user sees what the process does with it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include "kernel_uapi.h"

#include "evloop/uffd.h"
#include "log.h"
#include "proc.h"
#include "mm.pb-c.h"

#define FEATURE_INITIALIZED	(1UL << 31)	/* the kernel's own bit, shown in fdinfo */
#define PM_UFFD_WP		(1ULL << 57)

struct uffd_info {
	unsigned long pending, total;	/* faults unread; read, not yet resolved */
	unsigned long features;
	unsigned long flags;		/* fdinfo "flags:", octal */
	unsigned ranges[3];		/* VMAs registered: MISSING, WP, MINOR */
	unsigned long pages[3];		/* their pages */
	unsigned long protected;	/* pages of WP ranges write-protected now */
};

static void parse_fdinfo(const char *buf, struct uffd_state *st)
{
	const char *v;

	if ((v = proc_line_after(buf, "pending:")))
		st->pending = strtoul(v, NULL, 10);
	if ((v = proc_line_after(buf, "total:")))
		st->total = strtoul(v, NULL, 10);
	if ((v = proc_line_after(buf, "flags:")))
		st->flags = strtoul(v, NULL, 8);
	if ((v = proc_line_after(buf, "API:")) && (v = strchr(v, ':')))
		st->features = strtoul(v + 1, NULL, 16) & ~FEATURE_INITIALIZED;
}

/* Page a (protected) appended to st's runs: the last one grown when it ends at a. */
static int add_wp(struct uffd_state *st, unsigned long a, unsigned long psz)
{
	struct uffd_span *r;

	if (st->nr_wp && st->wp[st->nr_wp - 1].end == a) {
		st->wp[st->nr_wp - 1].end = a + psz;
		return 0;
	}
	if (!(r = realloc(st->wp, (st->nr_wp + 1) * sizeof(*r))))
		return -ENOMEM;
	st->wp = r;
	st->wp[st->nr_wp++] = (struct uffd_span){ a, a + psz, 0 };
	return 0;
}

/* The pages of [start, end) whose pagemap entry has PM_UFFD_WP, as runs in st. */
static int wp_pages(struct uffd_state *st, int pagemap, unsigned long start, unsigned long end)
{
	unsigned long psz = (unsigned long)sysconf(_SC_PAGESIZE);
	uint64_t e[512];

	for (unsigned long a = start; a < end;) {
		size_t want = (end - a) / psz < 512 ? (end - a) / psz : 512;
		ssize_t got = pread(pagemap, e, want * 8, (off_t)(a / psz * 8));

		if (got <= 0)
			return got < 0 ? -errno : -EIO;
		for (ssize_t i = 0; i < got / 8; i++)
			if ((e[i] & PM_UFFD_WP) && add_wp(st, a + (unsigned long)i * psz, psz))
				return -ENOMEM;
		a += (unsigned long)(got / 8) * psz;
	}
	return 0;
}

/* One VMA's VmFlags line, with the VMA's bounds: its registration, if any, in st. */
static int add_vma(struct uffd_state *st, bool tracked, int pagemap, const char *vmflags,
		   unsigned long start, unsigned long end)
{
	static const char *const modes[3] = { " um", " uw", " ui" };
	struct uffd_span *r;
	unsigned m = 0;

	for (int i = 0; i < 3; i++)
		if (strstr(vmflags, modes[i]) && !(i == 1 && tracked))
			m |= 1u << i;
	if (!m)
		return 0;
	if (strstr(vmflags, " lo") && !strstr(vmflags, " lf"))
		m |= UFFD_MODE_LOCKED;
	if (!(r = realloc(st->ranges, (st->nr_ranges + 1) * sizeof(*r))))
		return -ENOMEM;
	st->ranges = r;
	st->ranges[st->nr_ranges++] = (struct uffd_span){ start, end, m };
	return (m & UFFD_MODE_WP) && pagemap >= 0 ? wp_pages(st, pagemap, start, end) : 0;
}

static int scan_vmas(pid_t pid, bool tracked, struct uffd_state *st)
{
	char path[64], line[512];
	unsigned long start = 0, end = 0;
	int pagemap, ret = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", pid);
	if (!(f = fopen(path, "re")))
		return -errno;
	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	pagemap = open(path, O_RDONLY | O_CLOEXEC);
	if (pagemap < 0)
		ret = -errno;
	while (!ret && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "VmFlags:", 8))
			ret = add_vma(st, tracked, pagemap, line + 7, start, end);
		else if (strchr("0123456789abcdef", line[0]) && strchr(line, '-'))
			sscanf(line, "%lx-%lx", &start, &end);
	}
	if (pagemap >= 0)
		close(pagemap);
	fclose(f);
	return ret;
}

int uffd_read(pid_t pid, int fd, bool tracked, struct uffd_state *st)
{
	char *buf = NULL;
	int ret;

	memset(st, 0, sizeof(*st));
	st->fd = fd;
	if ((ret = proc_fdinfo(pid, fd, &buf)) < 0)
		return ret;
	parse_fdinfo(buf, st);
	free(buf);
	if ((ret = scan_vmas(pid, tracked, st)) < 0)
		uffd_state_free(st);
	return ret;
}

void uffd_state_free(struct uffd_state *st)
{
	free(st->ranges);
	free(st->wp);
	free(st->zero);
	st->ranges = st->wp = st->zero = NULL;
	st->nr_ranges = st->nr_wp = st->nr_zero = 0;
}

/* What the refusal counts, from the state read. */
static void summarise(const struct uffd_state *st, struct uffd_info *in)
{
	unsigned long psz = (unsigned long)sysconf(_SC_PAGESIZE);

	in->pending = st->pending;
	in->total = st->total;
	in->features = st->features;
	in->flags = st->flags;
	for (size_t i = 0; i < st->nr_ranges; i++)
		for (int m = 0; m < 3; m++)
			if (st->ranges[i].modes & (1u << m)) {
				in->ranges[m]++;
				in->pages[m] += (st->ranges[i].end - st->ranges[i].start) / psz;
			}
	for (size_t i = 0; i < st->nr_wp; i++)
		in->protected += (st->wp[i].end - st->wp[i].start) / psz;
}

const char *uffd_beyond(const struct uffd_state *st, bool tracked)
{
	if (st->pending || st->total)
		return "faults in flight (fdinfo pending/total), which a restore cannot give back";
	if (st->features & UFFD_NONCOOP_FEATURES)
		return "non-cooperative event features (fork, remap, remove, unmap), whose "
		       "queued events fdinfo does not show";
	for (size_t i = 0; i < st->nr_ranges; i++) {
		unsigned m = st->ranges[i].modes;

		if (m & UFFD_MODE_MINOR)
			return "a range registered MINOR, which memdump does not restore";
		if ((m & UFFD_MODE_MISSING) && (m & UFFD_MODE_LOCKED))
			return "a MISSING range locked by mlock (not MLOCK_ONFAULT), whose populate "
			       "would fill its missing pages before the register, or fault to a "
			       "handler not running yet after it";
	}
	if (!st->nr_ranges)
		return "no range of this process registered with it (none yet, or the "
		       "userfaultfd of another process), which memdump does not restore";
	if (tracked)
		return "a userfaultfd while memdump's tracker holds the process, whose WP "
		       "ranges smaps does not tell from the tracker's";
	return NULL;
}

static void add(char *held, size_t len, bool on, const char *fmt, unsigned long n)
{
	size_t used = strlen(held);

	if (on && used < len) {
		snprintf(held + used, len - used, ", ");
		used = strlen(held);
		snprintf(held + used, len - used, fmt, n);
	}
}

static void describe(const struct uffd_info *in, char *held, size_t len)
{
	static const char *const fmt[3] = { "%lu MISSING ranges", "%lu WP ranges",
					    "%lu MINOR ranges" };

	add(held, len, in->flags & O_NONBLOCK, "O_NONBLOCK", 0);
	add(held, len, in->flags & O_CLOEXEC, "O_CLOEXEC", 0);
	add(held, len, in->pending, "%lu faults pending, not read by its handler", in->pending);
	add(held, len, in->total > in->pending,
	    "%lu faults read by its handler, not yet resolved", in->total - in->pending);
	for (int m = 0; m < 3; m++)
		add(held, len, in->ranges[m], fmt[m], in->ranges[m]);
	add(held, len, in->protected, "%lu pages write-protected", in->protected);
}

static void refusal(const struct uffd_state *st, bool tracked, const char *what, char *why,
		    size_t len)
{
	struct uffd_info in = { 0 };
	char held[320] = "";

	summarise(st, &in);
	describe(&in, held, sizeof(held));
	snprintf(why, len, "a userfaultfd (features %#lx%s; %s) with %s", in.features, held,
		 tracked ? "the ranges are the process's but WP ones, memdump's tracker's too" :
		 "the ranges are the process's, of every userfaultfd it has", what);
}

bool uffd_unsupported(pid_t pid, int fd, bool tracked, char *why, size_t len)
{
	struct uffd_state st;
	const char *what;
	int n = tracked ? 1 : proc_count_fd_links(pid, "anon_inode:[userfaultfd]");

	/* tracked: one of them is memdump's tracker's, and uffd_beyond refuses */
	if (n > 1) {
		snprintf(why, len, "one of %d userfaultfd fds, which memdump does not restore "
			 "(one per process, not shared by fds)", n);
		return true;
	}
	if (n < 0 || uffd_read(pid, fd, tracked, &st) < 0) {
		snprintf(why, len, "a userfaultfd whose state memdump cannot read");
		return true;
	}
	what = uffd_beyond(&st, tracked);
	if (what)
		refusal(&st, tracked, what, why, len);
	uffd_state_free(&st);
	return what != NULL;
}

/* Page-aligned [a, b) appended to *s (a run of n), the last run grown when it ends at a. */
static int add_run(struct uffd_span **s, size_t *n, unsigned long a, unsigned long b)
{
	struct uffd_span *r;

	if (*n && (*s)[*n - 1].end == a) {
		(*s)[*n - 1].end = b;
		return 0;
	}
	if (!(r = realloc(*s, (*n + 1) * sizeof(*r))))
		return -ENOMEM;
	*s = r;
	(*s)[(*n)++] = (struct uffd_span){ a, b, 0 };
	return 0;
}

/*
 * The pages of [start, end) that map the shared zero page (served with
 * UFFDIO_ZEROPAGE, or read before the register): absent from the pages the
 * dump writes, made again by the blob with a read populate before it registers.
 */
static int zero_pages(struct uffd_state *st, int pm, unsigned long start, unsigned long end)
{
	struct page_region vec[64];
	struct pm_scan_arg arg = {
		.size = sizeof(arg), .start = start, .end = end,
		.vec = (uintptr_t)vec, .vec_len = 64,
		.category_mask = PAGE_IS_PFNZERO, .return_mask = PAGE_IS_PFNZERO,
	};

	while (arg.start < end) {
		long n = ioctl(pm, PAGEMAP_SCAN, &arg);

		if (n < 0)
			return -errno;
		for (long i = 0; i < n; i++)
			if (add_run(&st->zero, &st->nr_zero, vec[i].start, vec[i].end))
				return -ENOMEM;
		if (n < 64 && arg.walk_end >= end)
			break;
		arg.start = n > 0 && vec[n - 1].end > arg.walk_end ? vec[n - 1].end : arg.walk_end;
	}
	return 0;
}

static int collect_zero(pid_t pid, struct uffd_state *st)
{
	char path[64];
	int pm, ret = 0;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	if ((pm = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	for (size_t i = 0; !ret && i < st->nr_ranges; i++)
		if (st->ranges[i].modes & UFFD_MODE_MISSING)
			ret = zero_pages(st, pm, st->ranges[i].start, st->ranges[i].end);
	close(pm);
	return ret;
}

int uffd_collect(pid_t pid, int fd, bool tracked, struct uffd_state **out)
{
	struct uffd_state *st = calloc(1, sizeof(*st));
	char why[512];
	int ret;

	if (!st)
		return -ENOMEM;
	if (uffd_unsupported(pid, fd, tracked, why, sizeof(why))) {
		free(st);
		return fail(-EOPNOTSUPP, "process %d: fd %d (anon_inode:[userfaultfd]) is %s, which "
			    "memdump cannot dump yet (seen frozen)", pid, fd, why);
	}
	ret = uffd_read(pid, fd, false, st);
	if (!ret && (ret = collect_zero(pid, st)) < 0)
		fail(ret, "process %d: cannot scan the zero pages of its userfaultfd's ranges: %s",
		     pid, strerror(-ret));
	else if (ret < 0)
		fail(ret, "process %d: cannot read its userfaultfd %d: %s", pid, fd, strerror(-ret));
	if (ret < 0) {
		uffd_state_free(st);
		free(st);
		return ret;
	}
	*out = st;
	return 0;
}

/* The registered ranges into e, one array of entries behind e->ranges. */
static int fill_spans(const struct uffd_span *s, size_t n, UffdEntry *e)
{
	UffdRangeEntry *r;

	if (!n)
		return 0;
	r = calloc(n, sizeof(*r));
	e->ranges = calloc(n + 1, sizeof(*e->ranges));
	if (!r || !e->ranges) {
		free(r);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		uffd_range_entry__init(&r[i]);
		r[i].start = s[i].start;
		r[i].end = s[i].end;
		r[i].modes = s[i].modes & (UFFD_MODE_MISSING | UFFD_MODE_WP);
		e->ranges[i] = &r[i];
	}
	e->n_ranges = n;
	return 0;
}

/* Runs of pages into *to (n_to of them), the same way. */
static int fill_runs(const struct uffd_span *s, size_t n, UffdWpEntry ***to, size_t *n_to)
{
	UffdWpEntry *w;

	if (!n)
		return 0;
	w = calloc(n, sizeof(*w));
	*to = calloc(n + 1, sizeof(**to));
	if (!w || !*to) {
		free(w);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		uffd_wp_entry__init(&w[i]);
		w[i].start = s[i].start;
		w[i].end = s[i].end;
		(*to)[i] = &w[i];
	}
	*n_to = n;
	return 0;
}

/* The protected runs, and the zero pages of the MISSING ranges. */
static int fill_wp(const struct uffd_span *s, size_t n, UffdEntry *e)
{
	return fill_runs(s, n, &e->protected_, &e->n_protected_);
}

static int fill_zero(const struct uffd_span *s, size_t n, UffdEntry *e)
{
	return fill_runs(s, n, &e->zero, &e->n_zero);
}

int uffd_fill_entry(const struct uffd_state *st, UffdEntry *e)
{
	uffd_entry__init(e);
	e->fd = (uint32_t)st->fd;
	e->flags = (uint32_t)st->flags & (O_CLOEXEC | O_NONBLOCK);
	e->features = st->features;
	if (fill_spans(st->ranges, st->nr_ranges, e) || fill_wp(st->wp, st->nr_wp, e) ||
	    fill_zero(st->zero, st->nr_zero, e)) {
		uffd_entry_release(e);
		return -ENOMEM;
	}
	return 0;
}

void uffd_entry_release(UffdEntry *e)
{
	if (e->ranges)
		free(e->ranges[0]);	/* the array fill_spans made */
	if (e->protected_)
		free(e->protected_[0]);
	if (e->zero)
		free(e->zero[0]);
	free(e->ranges);
	free(e->protected_);
	free(e->zero);
	e->ranges = NULL;
	e->protected_ = e->zero = NULL;
	e->n_ranges = e->n_protected_ = e->n_zero = 0;
}
