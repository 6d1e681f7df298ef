/*
 * --snapshot: a copy-on-write snapshot of the target's memory, so that a
 * --leave-running dump keeps it frozen for a time that does not grow with
 * its size.
 *
 * While the target is frozen, a userfaultfd is made in it (a remote
 * syscall; memdump takes the fd and the target's copy is closed), every
 * private anonymous VMA that holds dumped pages is registered in
 * write-protect mode and those pages are write-protected. What the
 * snapshot cannot cover (pages of file mappings, shared memory, which
 * write_shmem() saves) is written at once. Then the target runs again.
 *
 * A write to a page not saved yet stops the writing thread in a
 * write-protect fault; a handler thread reads the page (still as it was at
 * the freeze), writes it to its place in pages-1.img, then lifts the
 * protection, which lets the thread go on. Meanwhile the copier goes
 * through every run in order, reads what is still protected and writes it;
 * it lifts nothing (a write to a page it saved is let through by the
 * handler): every lift while the target runs costs the target, so the
 * protection is lifted once, after the copy, a slice at a time
 * (lift_all). A per-page bit says which pages are
 * saved: set under the lock before a protection is lifted, read by the
 * copier after its read, so it never writes a page read after the target
 * could change it.
 *
 * Armed before the freeze (snapshot_prearm): write-protecting gigabytes
 * changes every page table entry, and in a VM with shadow page tables the
 * target pays about as much again the first time it runs after (4 GiB: some
 * 50 ms for the ioctl, 50 ms for the first run). So the userfaultfd is made
 * in a stop of a millisecond or two while the target runs, every private
 * anonymous VMA is registered and protected, and a handler merely lifts the
 * protection of a page the target writes. At the freeze, the page scan
 * (pagescan.c) reports the pages written since (PAGE_IS_WRITTEN: no
 * protection) and only those, with what the handler let go while frozen
 * and the VMAs mapped since, are protected: the frozen part does not grow
 * with the size. Then the handler works as above.
 *
 * The image is exactly the memory at the freeze. Should memdump die, the
 * userfaultfd is closed with it: the kernel unregisters the ranges, lifts
 * the protection and wakes the waiting threads; the target runs on.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "mem/snapshot.h"
#include "fault.h"
#include "image/image.h"
#include "image/runsum.h"
#include "infect/infect.h"
#include "kernel_uapi.h"
#include "log.h"
#include "vma_status.h"
#include "mem/pages.h"

/*
 * The copier's unit: 2 MiB, aligned, so that lifting the protection of a
 * transparent huge page never splits it (a part of a huge PMD would).
 */
#define HUGE_SIZE	(2UL << 20)
#define CHUNK_SIZE	HUGE_SIZE

struct snap_run {
	uint64_t start, end;
	uint64_t off;			/* in pages-1.img */
	uint64_t first_bit;		/* its first page in saved[] */
	bool protected;			/* else written while frozen */
	bool unreadable;
};

/* Pages to protect again at the freeze: written since the pre-arming. */
struct snap_range {
	uint64_t start, end;
};

struct snapshot {
	int uffd;
	int fd;				/* pages-1.img, through the page cache */
	int dfd;			/* the same, O_DIRECT: the copier's (-1: through fd) */
	int rfd;			/* the same, read back for the checksums */
	int stop_fd;			/* eventfd: the handler ends */
	int pm_fd;			/* /proc/PID/pagemap: huge pages (fault_span) */
	struct snap_run *runs;
	size_t nr_runs;
	uint8_t *saved;			/* a bit per page of every run */
	pthread_mutex_t lock;
	pthread_t handler;
	bool handler_started;
	int handler_err;
	struct dump_ctx *d;
	uint64_t faults;		/* pages saved by the handler */
	uint64_t let_through;		/* write faults on pages saved already */
	bool prearmed;			/* protected before the freeze */
	bool copying;			/* the handler saves pages (else only lifts) */
	bool frozen;			/* the handler notes what it lifts in redo[] */
	struct snap_range *redo;
	size_t nr_redo, cap_redo;
	uint64_t prearmed_bytes;
};

static bool bit(const uint8_t *map, uint64_t i)
{
	return map[i / 8] & (1u << (i % 8));
}

static void set_bit(uint8_t *map, uint64_t i)
{
	map[i / 8] |= 1u << (i % 8);
}

static const struct vma *vma_of(const struct dump_ctx *d, uint64_t addr)
{
	for (int i = 0; i < d->nr_vmas; i++)
		if (addr >= d->vmas[i].start && addr < d->vmas[i].end)
			return &d->vmas[i];
	return NULL;
}

/* Not MAP_HUGETLB memory: write-protect faults and their saving go by 4 KiB or THP pages. */
static bool coverable(const struct vma *v)
{
	return v && (v->status & VMA_ANON_PRIVATE) && !(v->flags & VMA_MAP_HUGETLB) &&
	       !(v->status & (VMA_AREA_VDSO | VMA_AREA_VVAR | VMA_AREA_VSYSCALL));
}

static int write_at(int fd, const void *buf, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, buf, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return fail(n < 0 ? -errno : -EIO, "cannot write the pages image: %s",
				    n < 0 ? strerror(errno) : "short write");
		buf = (const uint8_t *)buf + n;
		len -= n;
		off += n;
	}
	return 0;
}

static int protect(struct snapshot *s, uint64_t start, uint64_t len, bool on)
{
	struct uffdio_writeprotect wp = {
		.range = { .start = start, .len = len },
		.mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	if (ioctl(s->uffd, UFFDIO_WRITEPROTECT, &wp))
		return -errno;
	return 0;
}

/*
 * Changing the write protection of a running target's pages costs it about
 * as much again as the ioctl (in this VM its shadow page tables are synced
 * at its next run), all at once: 1 GiB of 4 KiB pages in one ioctl stopped
 * the target for 300-700 ms at load 16. So the passes made while it runs
 * (arming before the freeze, lifting after the copy) go a slice at a time,
 * 2 MiB aligned (no huge page split), and after a slice that took long
 * memdump pauses as long, so the target pays in pieces between them.
 */
#define SLICE_SIZE	(32UL << 20)
#define PAUSE_MIN_US	200	/* a slice that took less: no pause */

static uint64_t slice_end(uint64_t addr, uint64_t end)
{
	return MIN(end, (addr & ~(SLICE_SIZE - 1)) + SLICE_SIZE);
}

static void let_target_run(uint64_t t0)
{
	uint64_t us = now_us() - t0;
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	if (us >= PAUSE_MIN_US)
		nanosleep(&ts, NULL);
}

/* [start, end) write-protected a slice at a time, the target running. */
static int protect_sliced(struct snapshot *s, uint64_t start, uint64_t end)
{
	int err = 0;

	for (uint64_t a = start; a < end && !err; a = slice_end(a, end)) {
		uint64_t t0 = now_us();

		err = protect(s, a, slice_end(a, end) - a, true);
		let_target_run(t0);
	}
	return err;
}

/*
 * The copy is complete: [start, end) unregistered (which lifts its
 * protection) a slice at a time, rather than all of it when the
 * userfaultfd is closed.
 */
static void unregister_sliced(struct snapshot *s, uint64_t start, uint64_t end)
{
	for (uint64_t a = start; a < end; a = slice_end(a, end)) {
		struct uffdio_range r = { .start = a, .len = slice_end(a, end) - a };
		uint64_t t0 = now_us();

		if (ioctl(s->uffd, UFFDIO_UNREGISTER, &r))
			return;	/* closing the userfaultfd lifts the rest */
		let_target_run(t0);
	}
}

/* The process makes the userfaultfd (it is bound to its mm); we take it. */
static int make_uffd(struct infect_ctx *in, struct snapshot *s)
{
	/* told of discarded, unmapped and moved memory: lost pages fail the dump */
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_EVENT_REMOVE |
				  UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMAP };
	long fd, ret;
	int err;

	err = infect_syscall(in, 0, SYS_userfaultfd, &fd, O_CLOEXEC | O_NONBLOCK, 0, 0, 0, 0, 0);
	if (err)
		return err;
	if (fd < 0)
		return fail((int)fd, "process %d cannot make a userfaultfd: %s", in->pid,
			    strerror((int)-fd));
	s->uffd = syscall(SYS_pidfd_getfd, in->pidfd, (int)fd, 0);
	err = s->uffd < 0 ? -errno : 0;
	infect_syscall(in, 0, SYS_close, &ret, fd, 0, 0, 0, 0, 0);
	if (err)
		return fail(err, "cannot take process %d's userfaultfd: %s", in->pid, strerror(-err));
	if (ioctl(s->uffd, UFFDIO_API, &api))
		return fail(-errno, "userfaultfd API: %s", strerror(errno));
	return 0;
}

static int register_range(struct snapshot *s, uint64_t start, uint64_t end)
{
	struct uffdio_register reg = {
		.range = { .start = start, .len = end - start },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	return ioctl(s->uffd, UFFDIO_REGISTER, &reg) ? -errno : 0;
}

static int register_vma(struct snapshot *s, const struct vma *v)
{
	int err = register_range(s, v->start, v->end);

	if (err)
		return fail(err, "cannot register %#lx-%#lx of process %d for the snapshot: %s",
			    v->start, v->end, s->d->pid, strerror(-err));
	return 0;
}

/* Every VMA that holds a protected run, registered once. */
static int register_vmas(struct snapshot *s)
{
	const struct vma *last = NULL;
	int err = 0;

	for (size_t i = 0; i < s->nr_runs && !err; i++) {
		const struct vma *v = vma_of(s->d, s->runs[i].start);

		if (!s->runs[i].protected || v == last)
			continue;
		err = register_vma(s, v);
		last = v;
	}
	return err;
}

static int plan_runs(struct dump_ctx *d, struct snapshot *s)
{
	uint64_t off = 0, bits = 0;

	s->runs = calloc(d->nr_runs + 1, sizeof(*s->runs));
	if (!s->runs)
		return -ENOMEM;
	s->nr_runs = d->nr_runs;
	for (size_t i = 0; i < d->nr_runs; i++) {
		const struct page_run *r = &d->runs[i];
		uint64_t len = r->nr_pages * PAGE_SIZE;

		/* unreadable runs need /proc/PID/mem, open only while frozen */
		s->runs[i] = (struct snap_run){ r->start, r->start + len, off, bits,
						!r->unreadable && coverable(vma_of(d, r->start)),
						r->unreadable };
		off += len;
		bits += r->nr_pages;
	}
	s->saved = calloc(bits / 8 + 1, 1);
	return s->saved ? 0 : -ENOMEM;
}

/* The end of the copier's chunk from addr: the next 2 MiB boundary, or the run's end. */
static uint64_t chunk_end(const struct snap_run *r, uint64_t addr)
{
	return MIN(r->end, (addr & ~(CHUNK_SIZE - 1)) + CHUNK_SIZE);
}

/*
 * The copier's write of pages the handler will not save (their bits set):
 * O_DIRECT where the file takes it, the disk's rate without a copy into
 * fresh page-cache pages (this VM's host faults put those at ~0.3 GB/s);
 * through the page cache where it does not.
 */
static int copier_write(struct snapshot *s, bool direct, const void *buf, size_t len,
			uint64_t off)
{
	if (direct && s->dfd >= 0) {
		ssize_t n = pwrite(s->dfd, buf, len, off);

		if (n == (ssize_t)len)
			return 0;
		if (n >= 0 || errno != EINVAL)
			return n < 0 ? write_at(s->dfd, buf, len, off) :
			       write_at(s->fd, (const uint8_t *)buf + n, len - n, off + n);
		pr_info("snapshot: pages-1.img takes no O_DIRECT write: through the page cache");
		close(s->dfd);
		s->dfd = -1;
	}
	return write_at(s->fd, buf, len, off);
}

/* The spans of pages [0, np) marked in mine[], written from buf to the image at off. */
static int write_mine(struct snapshot *s, bool direct, const uint8_t *mine, uint64_t np,
		      const uint8_t *buf, uint64_t off, uint64_t *saved)
{
	int err = 0;

	for (uint64_t p = 0; p < np && !err; p++) {
		uint64_t q = p;

		if (!mine[p])
			continue;
		while (q + 1 < np && mine[q + 1])
			q++;
		err = copier_write(s, direct, buf + p * PAGE_SIZE, (q - p + 1) * PAGE_SIZE,
				   off + p * PAGE_SIZE);
		if (saved)
			*saved += q - p + 1;
		p = q;
	}
	return err;
}

/*
 * Copy [addr, addr + len) of run r to the image, skipping saved pages. The
 * handler's (direct false) go through the page cache under the lock: a single
 * page costs the waiting thread least, and a page's bit is set only once its
 * bytes are in the file. The copier's (direct: O_DIRECT where it can) get
 * their bits under the lock and are written after it, the handler letting a
 * write to one of them through from then on: buf holds them as they were at
 * the freeze (still protected when read), and a target thread's fault never
 * waits for the disk behind them. The pages the handler saved first are read
 * back into buf from the file then: buf is the chunk as it was at the freeze,
 * for its checksum (snapshot_copy()).
 */
static int copy_range(struct snapshot *s, const struct snap_run *r, uint64_t addr,
		      uint64_t len, uint8_t *buf, uint64_t *saved, bool direct)
{
	ssize_t n = read_target_mem(s->d, r->unreadable, addr, buf, len);
	uint64_t first = r->first_bit + (addr - r->start) / PAGE_SIZE, np = len / PAGE_SIZE;
	uint64_t off = r->off + (addr - r->start);
	uint8_t mine[CHUNK_SIZE / PAGE_SIZE] = { 0 };
	int err = 0;

	if (n != (ssize_t)len)
		return fail(n < 0 ? -errno : -EIO, "cannot read memory of process %d at %#lx: %s",
			    s->d->pid, addr, n < 0 ? strerror(errno) : "short read");
	pthread_mutex_lock(&s->lock);
	for (uint64_t p = 0; p < np && !err; p++) {
		mine[p] = !bit(s->saved, first + p);
		if (mine[p])
			continue;
		if (direct && pread(s->rfd, buf + p * PAGE_SIZE, PAGE_SIZE,
				    (off_t)(off + p * PAGE_SIZE)) != PAGE_SIZE)
			err = fail(-EIO, "cannot read back a page the snapshot saved at %#lx",
				   addr + p * PAGE_SIZE);
	}
	if (!direct && !err)
		err = write_mine(s, false, mine, np, buf, off, saved);
	for (uint64_t p = 0; p < np && !err; p++)
		if (mine[p])
			set_bit(s->saved, first + p);
	pthread_mutex_unlock(&s->lock);
	if (direct && !err)
		err = write_mine(s, true, mine, np, buf, off, saved);
	return err;
}

/* What the snapshot cannot cover, written now, while frozen. */
static int copy_unprotected(struct snapshot *s)
{
	uint8_t *buf = malloc(CHUNK_SIZE);
	int err = buf ? 0 : -ENOMEM;

	for (size_t i = 0; i < s->nr_runs && !err; i++) {
		struct snap_run *r = &s->runs[i];

		for (uint64_t a = r->start; a < r->end && !err && !r->protected; a = chunk_end(r, a))
			err = copy_range(s, r, a, chunk_end(r, a) - a, buf, NULL, false);
	}
	free(buf);
	return err;
}

static struct snap_run *run_of(struct snapshot *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nr_runs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (addr < s->runs[mid].start)
			hi = mid;
		else if (addr >= s->runs[mid].end)
			lo = mid + 1;
		else
			return &s->runs[mid];
	}
	return NULL;
}

/*
 * What a write fault at addr lifts: the whole transparent huge page it
 * falls in (lifting a part would split it), else the page.
 */
static uint64_t fault_span(struct snapshot *s, uint64_t addr)
{
	struct page_region reg;
	struct pm_scan_arg arg = {
		.size = sizeof(arg), .start = addr, .end = addr + PAGE_SIZE,
		.vec = (uint64_t)&reg, .vec_len = 1, .return_mask = PAGE_IS_HUGE,
	};

	if (s->pm_fd < 0 || ioctl(s->pm_fd, PAGEMAP_SCAN, &arg) != 1 ||
	    !(reg.categories & PAGE_IS_HUGE))
		return PAGE_SIZE;
	return HUGE_SIZE;
}

/* A thread waits to write the page at addr: save it (its huge page), then let it go on. */
static int on_fault(struct snapshot *s, uint64_t addr, uint8_t *buf)
{
	uint64_t len = fault_span(s, addr), base = addr & ~(len - 1);
	struct snap_run *r = run_of(s, addr);
	uint64_t before = s->faults;
	int err = 0;

	if (r && (base < r->start || base + len > r->end))
		base = addr, len = PAGE_SIZE;
	if (r && r->protected)
		err = copy_range(s, r, base, len, buf, &s->faults, false);
	if (s->faults == before)
		s->let_through++;	/* saved by the copier, which lifts nothing */
	protect(s, base, len, false);	/* wakes the thread, whatever happened */
	return err;
}

static int add_redo(struct snapshot *s, uint64_t start, uint64_t end)
{
	struct snap_range *last = s->nr_redo ? &s->redo[s->nr_redo - 1] : NULL;

	if (last && last->end == start) {
		last->end = end;
		return 0;
	}
	if (s->nr_redo == s->cap_redo) {
		size_t cap = s->cap_redo ? s->cap_redo * 2 : 64;
		struct snap_range *n = realloc(s->redo, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->redo = n;
		s->cap_redo = cap;
	}
	s->redo[s->nr_redo++] = (struct snap_range){ start, end };
	return 0;
}

/*
 * Armed, not frozen yet: the write is before the instant, let it go. Once
 * frozen (only memdump's own remote calls run, the kernel writing rseq
 * fields on their way back) the page is noted, to be protected again.
 */
static int on_early_fault(struct snapshot *s, uint64_t addr)
{
	uint64_t len = fault_span(s, addr), base = addr & ~(len - 1);
	int err = 0;

	pthread_mutex_lock(&s->lock);
	protect(s, base, len, false);
	if (s->frozen)
		err = add_redo(s, base, base + len);
	pthread_mutex_unlock(&s->lock);
	return err;
}

/*
 * The process discarded, unmapped or moved [start, end) (madvise, munmap,
 * mremap): the kernel goes on with it once we have read the event, so pages
 * not saved yet are lost. Such a dump cannot be the memory of its instant:
 * it fails (the target runs on).
 */
static int check_lost(struct snapshot *s, uint64_t start, uint64_t end)
{
	int err = 0;

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->nr_runs && !err; i++) {
		const struct snap_run *r = &s->runs[i];
		uint64_t a = MAX(start, r->start), b = MIN(end, r->end);

		for (; r->protected && a < b && !err; a += PAGE_SIZE)
			if (!bit(s->saved, r->first_bit + (a - r->start) / PAGE_SIZE))
				err = fail(-EAGAIN, "process %d discarded its memory at %#lx-%#lx "
					   "before the snapshot had saved it; dump it frozen (without "
					   "--snapshot)", s->d->pid, start, end);
	}
	pthread_mutex_unlock(&s->lock);
	return err;
}

static int handle_events(struct snapshot *s, uint8_t *buf)
{
	struct uffd_msg msg[16];
	ssize_t n = read(s->uffd, msg, sizeof(msg));
	int err = 0;

	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	for (size_t i = 0; i < n / sizeof(msg[0]); i++) {
		const struct uffd_msg *m = &msg[i];
		int e = 0;

		if (m->event == UFFD_EVENT_PAGEFAULT && !s->copying)
			e = on_early_fault(s, m->arg.pagefault.address & PAGE_MASK);
		else if (m->event == UFFD_EVENT_PAGEFAULT)
			e = on_fault(s, m->arg.pagefault.address & PAGE_MASK, buf);
		else if (!s->copying)
			continue;	/* before the freeze: the scan sees what is left */
		else if (m->event == UFFD_EVENT_REMOVE || m->event == UFFD_EVENT_UNMAP)
			e = check_lost(s, m->arg.remove.start, m->arg.remove.end);
		else if (m->event == UFFD_EVENT_REMAP)
			e = check_lost(s, m->arg.remap.from, m->arg.remap.from + m->arg.remap.len);
		err = err ?: e;
	}
	return err;
}

static void *handler_main(void *arg)
{
	struct snapshot *s = arg;
	uint8_t *page = malloc(HUGE_SIZE);

	for (;;) {
		struct pollfd p[2] = { { s->uffd, POLLIN, 0 }, { s->stop_fd, POLLIN, 0 } };

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents & POLLIN) {
			int err = page ? handle_events(s, page) : -ENOMEM;

			if (err && !s->handler_err)
				s->handler_err = err;
		}
		if (p[1].revents & POLLIN)
			break;
	}
	free(page);
	return NULL;
}

static int start_handler(struct snapshot *s)
{
	int err;

	if (s->stop_fd < 0)
		s->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (s->stop_fd < 0)
		return fail(-errno, "cannot start the snapshot handler: %s", strerror(errno));
	err = pthread_create(&s->handler, NULL, handler_main, s);
	if (err)
		return fail(-err, "cannot start the snapshot handler: %s", strerror(err));
	s->handler_started = true;
	return 0;
}

/* The handler ends once it has dealt with what it read. */
static void stop_handler(struct snapshot *s)
{
	uint64_t one = 1;

	if (!s->handler_started)
		return;
	if (write(s->stop_fd, &one, sizeof(one)) != sizeof(one))
		pr_debug("cannot stop the snapshot handler");
	pthread_join(s->handler, NULL);
	s->handler_started = false;
	if (read(s->stop_fd, &one, sizeof(one)) != sizeof(one))
		pr_debug("the snapshot handler's stop was not read back");
}

static void snapshot_free(struct snapshot *s)
{
	stop_handler(s);
	if (s->uffd >= 0)
		close(s->uffd);	/* unregisters, lifts every protection, wakes every thread */
	if (s->stop_fd >= 0)
		close(s->stop_fd);
	if (s->pm_fd >= 0)
		close(s->pm_fd);
	if (s->fd >= 0)
		close(s->fd);
	if (s->dfd >= 0)
		close(s->dfd);
	if (s->rfd >= 0)
		close(s->rfd);
	pthread_mutex_destroy(&s->lock);
	free(s->runs);
	free(s->saved);
	free(s->redo);
	free(s);
}

/*
 * Write-protecting walks every page table entry while the target is frozen
 * (4 GiB of 4 KiB pages: 64-120 ms here; a second thread on half of the
 * runs gained nothing on this loaded 2-CPU machine, so it is one walk).
 */
static int protect_all(struct snapshot *s)
{
	uint64_t total = 0, t0 = now_us();
	int err = 0;

	for (size_t i = 0; i < s->nr_runs && !err; i++)
		if (s->runs[i].protected) {
			total += s->runs[i].end - s->runs[i].start;
			err = protect(s, s->runs[i].start, s->runs[i].end - s->runs[i].start, true);
		}
	pr_info("snapshot: %" PRIu64 " MiB write-protected in %.1f ms", total >> 20,
		(now_us() - t0) / 1000.0);
	return err;
}

/* Write-protect what the snapshot covers. */
static int cover(struct dump_ctx *d, struct snapshot *s)
{
	int err = make_uffd(&d->in, s);

	if (!err)
		err = register_vmas(s);
	return err ?: protect_all(s);
}

/*
 * Armed before the freeze: protect again what was written since (the scan's
 * PAGE_IS_WRITTEN, the handler's redo[]), and whole the VMAs mapped since.
 */
static int cover_prearmed(struct snapshot *s)
{
	const struct vma *last = NULL;
	uint64_t t0 = now_us(), again = 0;
	int err = 0;

	for (size_t i = 0; i < s->nr_runs && !err; i++) {
		const struct snap_run *r = &s->runs[i];
		const struct vma *v = vma_of(s->d, r->start);

		if (!r->protected || v->snap_armed)
			continue;
		if (v != last && register_vma(s, v))
			return -EBUSY;	/* said why */
		last = v;
		again += r->end - r->start;
		err = protect(s, r->start, r->end - r->start, true);
	}
	for (size_t i = 0; i < s->nr_redo && !err; i++) {
		again += s->redo[i].end - s->redo[i].start;
		err = protect(s, s->redo[i].start, s->redo[i].end - s->redo[i].start, true);
	}
	if (err)
		return fail(err, "cannot write-protect the memory of process %d: %s", s->d->pid,
			    strerror(-err));
	pr_info("snapshot: %" PRIu64 " MiB protected before the freeze, %" PRIu64 " KiB written "
		"since protected again in %.1f ms", s->prearmed_bytes >> 20, again >> 10,
		(now_us() - t0) / 1000.0);
	return 0;
}

/* fd opened again with flags (O_DIRECT: -1 where the file takes none). */
static int reopen(int fd, int flags)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return open(path, flags | O_CLOEXEC);
}

static int start(struct dump_ctx *d, struct snapshot *s)
{
	int err;

	s->fd = pages_image_fd(d);
	if (s->fd < 0)
		return s->fd;
	s->rfd = reopen(s->fd, O_RDONLY);
	if (s->rfd < 0)
		return fail(-errno, "cannot open the pages image again: %s", strerror(errno));
	if (d->pages_write != PAGES_CACHE)
		s->dfd = reopen(s->fd, O_WRONLY | O_DIRECT);
	pr_info("snapshot: pages-1.img written by the copier %s", s->dfd >= 0 ?
		"with O_DIRECT" : "through the page cache");
	s->copying = true;
	err = start_handler(s);
	if (err)
		return err;
	d->stats.pages_written = d->nr_pages;
	d->stats.bytes_written = d->nr_pages * PAGE_SIZE;
	d->stats.pages_cached = true;
	return copy_unprotected(s);
}

static struct snapshot *snapshot_new(struct dump_ctx *d)
{
	struct snapshot *s = calloc(1, sizeof(*s));
	char path[64];

	if (!s)
		return NULL;
	s->d = d;
	s->uffd = s->fd = s->dfd = s->rfd = s->stop_fd = -1;
	snprintf(path, sizeof(path), "/proc/%d/pagemap", d->pid);
	s->pm_fd = open(path, O_RDONLY | O_CLOEXEC);	/* -1: every fault lifts a page */
	pthread_mutex_init(&s->lock, NULL);
	return s;
}

/* No snapshot after all: the caller writes the pages while frozen. */
static int no_snapshot(struct dump_ctx *d)
{
	pr_warn("no snapshot of process %d (%s): its pages are written while it is frozen",
		d->pid, fail_reason());
	fail_clear();
	snapshot_end(d);	/* unregisters: nothing stays protected */
	return 1;
}

/* Armed before the freeze: the handler stops lifting, the protection is completed. */
static int arm_prearmed(struct dump_ctx *d, struct snapshot *s)
{
	int err;

	stop_handler(s);
	err = plan_runs(d, s);
	if (!err && cover_prearmed(s))
		return no_snapshot(d);
	if (!err)
		err = start(d, s);
	if (err)
		snapshot_end(d);
	return err;
}

int snapshot_arm(struct dump_ctx *d)
{
	struct snapshot *s = d->snap;
	int err;

	if (s)
		return arm_prearmed(d, s);
	s = snapshot_new(d);
	if (!s)
		return -ENOMEM;
	d->snap = s;
	err = plan_runs(d, s);
	if (!err && cover(d, s))	/* no userfaultfd here (no CAP_SYS_PTRACE, one of its own) */
		return no_snapshot(d);
	if (!err)
		err = start(d, s);
	if (err)
		snapshot_end(d);
	return err;
}

/* The process makes its userfaultfd in a stop of its own, a millisecond or two. */
static int make_uffd_running(struct dump_ctx *d, struct snapshot *s)
{
	struct infect_ctx in;
	int err = infect_prepare(&in, d->pid, &dump_interrupted);
	uint64_t t0 = now_us();		/* stopped */

	if (!err)
		err = make_uffd(&in, s);
	infect_release(&in, false);
	if (!err)
		pr_info("snapshot: process %d made its userfaultfd, stopped for %.1f ms", d->pid,
			(now_us() - t0) / 1000.0);
	return err;
}

static bool anon_private(const char *perms, uint64_t ino, const char *name)
{
	return perms[3] == 'p' && !ino && strncmp(name, "[v", 2);	/* not [vdso], [vvar]... */
}

/*
 * Every private anonymous VMA, from /proc/PID/maps (no page walk, unlike
 * smaps), registered and protected. One that cannot be (another
 * userfaultfd's) is left to the freeze, which decides.
 */
static int protect_anon(struct snapshot *s)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	uint64_t t0 = now_us();
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", s->d->pid);
	f = fopen(path, "re");
	if (!f)
		return fail(-errno, "cannot read %s: %s", path, strerror(errno));
	while (getline(&line, &cap, f) > 0) {
		unsigned long long start, end, off, ino;
		unsigned int maj, min;
		char perms[8];
		int pos = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off,
			   &maj, &min, &ino, &pos) < 7 || !anon_private(perms, ino, line + pos))
			continue;
		if (register_range(s, start, end) || protect_sliced(s, start, end))
			continue;
		s->prearmed_bytes += end - start;
	}
	free(line);
	fclose(f);
	pr_info("snapshot: %" PRIu64 " MiB of process %d write-protected in %.1f ms before the "
		"freeze", s->prearmed_bytes >> 20, s->d->pid, (now_us() - t0) / 1000.0);
	return 0;
}

int snapshot_prearm(struct dump_ctx *d)
{
	struct snapshot *s = snapshot_new(d);
	int err;

	if (!s)
		return -ENOMEM;
	err = make_uffd_running(d, s);
	if (!err)
		err = start_handler(s);	/* lifts what the target writes until the freeze */
	if (!err)
		err = protect_anon(s);
	if (err) {
		pr_info("snapshot of process %d not armed before the freeze (%s)", d->pid,
			fail_reason());
		fail_clear();
		snapshot_free(s);
		return dump_interrupted ? fail(-EINTR, "interrupted before process %d was frozen",
					       d->pid) : 0;
	}
	s->prearmed = true;
	d->snap = s;
	fault_point("snapshot-prearmed");
	return 0;
}

void snapshot_frozen(struct dump_ctx *d)
{
	struct snapshot *s = d->snap;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->frozen = true;
	pthread_mutex_unlock(&s->lock);
}

bool snapshot_owns(struct dump_ctx *d, const struct vma *v)
{
	/* registering it again with our userfaultfd: a no-op if ours, EBUSY if another's */
	return d->snap && d->snap->prearmed && !register_range(d->snap, v->start, v->end);
}

int snapshot_written(struct dump_ctx *d, uint64_t start, uint64_t end)
{
	struct snapshot *s = d->snap;
	int err;

	pthread_mutex_lock(&s->lock);	/* the handler adds to redo[] too */
	err = add_redo(s, start, end);
	pthread_mutex_unlock(&s->lock);
	return err;
}

/*
 * Every page is saved. The copier lifted nothing: each lift while the
 * target runs costs it a pass over those entries (a write to a saved page
 * is let through by the handler). Now the VMAs that held protected runs
 * are unregistered, a slice at a time (a VMA is split in two at most).
 */
static void lift_all(struct snapshot *s, uint64_t t0)
{
	const struct vma *last = NULL;
	uint64_t t1 = now_us();

	for (size_t i = 0; i < s->nr_runs; i++) {
		const struct vma *v = vma_of(s->d, s->runs[i].start);

		if (!s->runs[i].protected || v == last)
			continue;
		unregister_sliced(s, v->start, v->end);
		last = v;
	}
	pr_info("snapshot: copied in %.1f ms, protection lifted in %.1f ms", (t1 - t0) / 1000.0,
		(now_us() - t1) / 1000.0);
}

/* The bytes of run r that were written while frozen (copy_unprotected), for its checksum. */
static int feed_written(struct snapshot *s, const struct snap_run *r, uint8_t *buf,
			struct runsum *rs)
{
	for (uint64_t a = r->start; a < r->end; a = chunk_end(r, a)) {
		uint64_t len = chunk_end(r, a) - a;

		if (pread(s->rfd, buf, len, (off_t)(r->off + (a - r->start))) != (ssize_t)len)
			return fail(-EIO, "cannot read back the pages of %#lx written while frozen", a);
		runsum_feed(rs, buf, len);
	}
	return 0;
}

/* Every run in the image's order, copied (the protected ones) and summed, block marks too. */
static int copy_and_sum(struct snapshot *s, uint8_t *buf, struct runsum *rs)
{
	int err = 0;

	for (size_t i = 0; i < s->nr_runs && !err; i++) {
		struct snap_run *r = &s->runs[i];

		if (!r->protected) {
			err = feed_written(s, r, buf, rs);
			continue;
		}
		for (uint64_t a = r->start; a < r->end && !err; a = chunk_end(r, a)) {
			err = copy_range(s, r, a, chunk_end(r, a) - a, buf, NULL, true);
			if (!err)
				runsum_feed(rs, buf, chunk_end(r, a) - a);
		}
	}
	return err;
}

/* The checksums taken in the copy go to d, as a frozen dump's (images.c: no read-back). */
static void keep_sums(struct dump_ctx *d, struct runsum *rs, uint64_t *sums, uint64_t *marks)
{
	runsum_end(rs);
	free(d->run_sums);
	free(d->run_marks);
	d->run_sums = sums;
	d->run_marks = marks;
	d->pages_size = rs->total;
	d->pages_hash = runsum_of_runs(sums, d->nr_runs);
}

int snapshot_copy(struct dump_ctx *d)
{
	struct snapshot *s = d->snap;
	uint8_t *buf = aligned_alloc(PAGE_SIZE, CHUNK_SIZE);	/* O_DIRECT's */
	uint64_t *lens = calloc(d->nr_runs + 1, sizeof(*lens)), *sums = NULL, *marks = NULL;
	int err = buf && lens ? 0 : -ENOMEM;
	uint64_t t0 = now_us();
	struct runsum rs;

	fault_point("snapshot-copy");
	for (size_t i = 0; !err && i < d->nr_runs; i++)
		lens[i] = d->runs[i].nr_pages * PAGE_SIZE;
	if (!err) {
		sums = calloc(d->nr_runs + 1, sizeof(*sums));
		marks = calloc(runsum_marks_size(lens, d->nr_runs) + 1, sizeof(*marks));
		err = sums && marks ? 0 : -ENOMEM;
	}
	if (!err) {
		runsum_init(&rs, lens, sums, d->nr_runs, false);
		runsum_set_marks(&rs, marks);
		err = copy_and_sum(s, buf, &rs);
	}
	free(buf);
	err = err ?: s->handler_err;
	if (err) {
		free(sums);
		free(marks);
	} else {
		lift_all(s, t0);
		keep_sums(d, &rs, sums, marks);	/* its end reads lens */
		pr_info("snapshot: %lu of %lu pages saved on a write fault, %lu writes to saved "
			"pages let through", s->faults, d->nr_pages, s->let_through);
		d->stats.snapshot = true;
		d->stats.snap_fault_pages = s->faults;
	}
	free(lens);
	return err;
}

void snapshot_end(struct dump_ctx *d)
{
	if (d->snap)
		snapshot_free(d->snap);
	d->snap = NULL;
}
