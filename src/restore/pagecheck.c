/*
 * The checksums of the process's pages, taken from its memory while the
 * blob fills it. The restore loads the set without reading pages-1.img
 * (dumpset_load_for_restore): the blob reads it once, with O_DIRECT, into
 * the process, and a thread of memdump follows it on the other CPU, reading
 * each filled piece back through /proc/PID/mem (which also reads pages the
 * blob already made PROT_NONE) and hashing it. The process never runs
 * before the verdict: a damaged run fails the restore with the same line as
 * `verify` (imgset_check_run_sums) and the process is killed while parked.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>

#include "common.h"
#include "image/runsum.h"
#include "image/verify.h"
#include "log.h"
#include "restore/restore.h"

#define CHECK_BUF	(4UL << 20)

/* Wait until the blob has filled run idx up to byte end of it; -ECANCELED if it stopped. */
static int wait_filled(struct pagecheck *pc, size_t idx, uint64_t end)
{
	struct rst_args *a = pc->a;
	uint64_t want = ((uint64_t)idx << RST_FILL_RUN_SHIFT) | end;

	for (;;) {
		unsigned int gen = __atomic_load_n(&a->fill_gen, __ATOMIC_ACQUIRE);
		uint64_t pos = __atomic_load_n(&a->fill_pos, __ATOMIC_ACQUIRE);
		unsigned int st = __atomic_load_n(&a->stage, __ATOMIC_ACQUIRE);
		struct timespec ts = { 0, 20 * 1000000L };

		if (pos >= want || st == RST_STAGE_PARKED)
			return 0;
		if (st == RST_STAGE_FAILED || __atomic_load_n(&pc->stop, __ATOMIC_ACQUIRE))
			return -ECANCELED;
		syscall(SYS_futex, &a->fill_gen, FUTEX_WAIT, gen, &ts, NULL, 0);
	}
}

/* Hash one run as the blob fills it. */
static int check_run(struct pagecheck *pc, struct runsum *rs, size_t idx, void *buf)
{
	const struct dump_run *run = &pc->runs[idx];
	uint64_t len = run->end - run->start;

	for (uint64_t done = 0; done < len;) {
		uint64_t n = len - done < CHECK_BUF ? len - done : CHECK_BUF;
		ssize_t got;
		int ret = wait_filled(pc, idx, done + n);

		if (ret)
			return ret;
		got = pread(pc->mem_fd, buf, n, (off_t)(run->start + done));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return fail(got ? -errno : -EIO, "cannot read back the restored memory at %#" PRIx64
				    ": %s", run->start + done, got ? strerror(errno) : "short read");
		runsum_feed(rs, buf, (size_t)got);
		done += (uint64_t)got;
	}
	return 0;
}

/* The runs in file order (the order of the runs' bytes in pages-1.img). */
static int check_all(struct pagecheck *pc)
{
	struct runsum rs;
	void *buf = malloc(CHECK_BUF);
	int ret = buf ? 0 : -ENOMEM;

	runsum_init(&rs, pc->lens, pc->sums, pc->nr_present);
	for (size_t i = 0; !ret && i < pc->nr_present; i++)
		ret = check_run(pc, &rs, (size_t)(pc->present[i] - pc->runs), buf);
	runsum_end(&rs);
	pc->whole = rs.whole;
	free(buf);
	return ret;
}

static void *check_main(void *arg)
{
	struct pagecheck *pc = arg;

	pc->ret = check_all(pc);
	/* the blob goes on (a failure kills the process before it runs) */
	__atomic_store_n(&pc->a->pages_read, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &pc->a->pages_read, FUTEX_WAKE, 1, NULL, NULL, 0);
	return NULL;
}

static int cmp_off(const void *a, const void *b)
{
	const struct dump_run *x = *(const struct dump_run *const *)a;
	const struct dump_run *y = *(const struct dump_run *const *)b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* The present runs, sorted by their offset in the pages image. */
static int collect_present(struct pagecheck *pc, const struct dumpset *ds)
{
	size_t n = 0;

	pc->present = calloc(ds->nr_runs + 1, sizeof(*pc->present));
	pc->lens = calloc(ds->nr_runs + 1, sizeof(*pc->lens));
	pc->sums = calloc(ds->nr_runs + 1, sizeof(*pc->sums));
	if (!pc->present || !pc->lens || !pc->sums)
		return -ENOMEM;
	for (size_t i = 0; i < ds->nr_runs; i++)
		if (ds->runs[i].present)
			pc->present[n++] = &ds->runs[i];
	qsort(pc->present, n, sizeof(*pc->present), cmp_off);
	for (size_t i = 0; i < n; i++)
		pc->lens[i] = pc->present[i]->end - pc->present[i]->start;
	pc->nr_present = n;
	pc->runs = ds->runs;
	return 0;
}

int pagecheck_start(struct rst *r)
{
	struct pagecheck *pc = &r->pagecheck;
	char path[64];
	int ret;

	pc->mem_fd = -1;
	if (!r->ds.pages_sums_deferred)
		return 0;
	ret = collect_present(pc, &r->ds);
	if (ret)
		return fail(ret, "cannot check the restored pages: %s", strerror(-ret));
	pc->a = r->a;
	snprintf(path, sizeof(path), "/proc/%d/mem", r->pid);
	pc->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (pc->mem_fd < 0)
		return fail(-errno, "cannot open %s to check the restored pages: %s", path,
			    strerror(errno));
	ret = -pthread_create(&pc->thread, NULL, check_main, pc);
	if (ret)
		return fail(ret, "cannot start the thread that checks the restored pages: %s",
			    strerror(-ret));
	pc->running = true;
	return 0;
}

int pagecheck_finish(struct rst *r, bool ok)
{
	struct pagecheck *pc = &r->pagecheck;
	int ret = 0;

	if (!pc->running)
		return 0;
	if (!ok)
		__atomic_store_n(&pc->stop, true, __ATOMIC_RELEASE);
	pthread_join(pc->thread, NULL);
	pc->running = false;
	if (!ok)
		return 0;
	ret = pc->ret;
	if (!ret)
		ret = imgset_check_run_sums(r->ds.inv, "pages-1.img", pc->present, pc->nr_present,
					    pc->sums, &pc->whole);
	return ret;
}

void pagecheck_free(struct rst *r)
{
	struct pagecheck *pc = &r->pagecheck;

	pagecheck_finish(r, false);
	if (pc->mem_fd >= 0)
		close(pc->mem_fd);
	pc->mem_fd = -1;
	free(pc->present);
	free(pc->lens);
	free(pc->sums);
}
