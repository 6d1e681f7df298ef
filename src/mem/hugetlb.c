/*
 * Huge pages a restore needs (MAP_HUGETLB memory, vma.c): counted by page
 * size over a process's VMAs, and checked against what the system's pools
 * can give (/sys/kernel/mm/hugepages/hugepages-<kB>kB). A private VMA
 * reserves all its pages when it is mapped again (MAP_NORESERVE: takes those
 * filled); a shared object holds all
 * its pages, once however many VMAs map it. The restore checks before it
 * starts anything (restore/check.c); a killing dump's dry run checks before
 * the kill (dump/dryrun.c), counting the pages the killed process gives back
 * to the pool (not the surplus ones: those go back to the kernel).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common.h"
#include "log.h"
#include "mem/hugetlb.h"
#include "vma_status.h"

/* Count len bytes of huge pages of the size flags names; shmid 0: private. */
int hugetlb_need_add(struct hugetlb_need *n, uint32_t flags, uint64_t shmid, uint64_t len)
{
	uint64_t size = VMA_HUGE_SIZE(flags);
	size_t i;

	if (!(flags & VMA_MAP_HUGETLB))
		return 0;
	for (size_t k = 0; shmid && k < n->nr_objs; k++)
		if (n->objs[k] == shmid)
			return 0;
	if (shmid) {
		uint64_t *o = realloc(n->objs, (n->nr_objs + 1) * sizeof(*o));

		if (!o)
			return -ENOMEM;
		n->objs = o;
		o[n->nr_objs++] = shmid;
	}
	for (i = 0; i < n->nr && n->by[i].size != size; i++)
		;
	if (i == HUGETLB_SIZES)
		return fail(-EOPNOTSUPP, "MAP_HUGETLB memory of more than %d page sizes",
			    HUGETLB_SIZES);
	if (i == n->nr) {
		n->by[i].size = size;
		n->by[i].pages = 0;
		n->nr++;
	}
	n->by[i].pages += (len + size - 1) / size;
	return 0;
}

/* The bytes of runs (sorted by address) in [start, end). */
static uint64_t run_bytes(const struct dump_run *runs, size_t nr, uint64_t start, uint64_t end)
{
	uint64_t sum = 0;

	for (size_t k = 0; k < nr && runs[k].start < end; k++)
		if (runs[k].end > start)
			sum += MIN(runs[k].end, end) - MAX(runs[k].start, start);
	return sum;
}

uint64_t hugetlb_vma_bytes(uint32_t flags, uint64_t len, uint64_t dumped)
{
	/* MAP_NORESERVE reserves nothing: only the pages filled are taken */
	return (flags & MAP_NORESERVE) && !(flags & MAP_SHARED) ? dumped : len;
}

int hugetlb_need_mm(struct hugetlb_need *n, const MmEntry *mm, const struct dump_run *runs,
		    size_t nr_runs)
{
	int ret = 0;

	for (size_t i = 0; mm && i < mm->n_vmas && !ret; i++) {
		const VmaEntry *v = mm->vmas[i];
		bool shared = v->status & VMA_ANON_SHARED;
		uint64_t len = hugetlb_vma_bytes(v->flags, v->end - v->start,
						 run_bytes(runs, nr_runs, v->start, v->end));

		ret = hugetlb_need_add(n, v->flags, shared ? v->shmid : 0,
				       (shared ? v->pgoff : 0) + len);
	}
	return ret;
}

/* A counter of the pool of huge pages of kb kB; -errno. */
static int64_t pool_value(uint64_t kb, const char *name)
{
	char path[128];
	unsigned long long v;
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/hugepages-%" PRIu64 "kB/%s", kb,
		 name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	ok = fscanf(f, "%llu", &v) == 1;
	fclose(f);
	return ok ? (int64_t)v : -EIO;
}

/* What the pool of kb kB pages can give a restore now; -errno if there is none. */
static int64_t pool_room(uint64_t kb)
{
	int64_t free_ = pool_value(kb, "free_hugepages"), resv = pool_value(kb, "resv_hugepages");
	int64_t over = pool_value(kb, "nr_overcommit_hugepages");
	int64_t surplus = pool_value(kb, "surplus_hugepages");

	if (free_ < 0 || resv < 0 || over < 0 || surplus < 0)
		return free_ < 0 ? free_ : -EIO;
	return MAX(free_ - resv, (int64_t)0) + MAX(over - surplus, (int64_t)0);
}

/* released: the pages were counted from a process a killing dump ends. */
int hugetlb_need_check(const struct hugetlb_need *n, bool released)
{
	for (size_t i = 0; i < n->nr; i++) {
		uint64_t kb = n->by[i].size >> 10, want = n->by[i].pages;
		int64_t room = pool_room(kb), surplus = pool_value(kb, "surplus_hugepages");

		if (room == -ENOENT)
			return fail(-EOPNOTSUPP, "%" PRIu64 " huge pages of %" PRIu64 " kB (MAP_HUGETLB "
				    "memory) are needed, and this system has no huge pages of that "
				    "size", want, kb);
		if (room < 0)
			return fail((int)room, "cannot read the pool of huge pages of %" PRIu64
				    " kB: %s", kb, strerror((int)-room));
		if (released)	/* the process's own, back in the pool once it is killed */
			room += MAX((int64_t)want - MAX(surplus, (int64_t)0), (int64_t)0);
		if ((uint64_t)room < want)
			return fail(-ENOMEM, "%" PRIu64 " huge pages of %" PRIu64 " kB (MAP_HUGETLB "
				    "memory) are needed, and the pool can give %" PRId64
				    " (/sys/kernel/mm/hugepages/hugepages-%" PRIu64 "kB)", want, kb,
				    room, kb);
	}
	return 0;
}

void hugetlb_need_free(struct hugetlb_need *n)
{
	free(n->objs);
	n->objs = NULL;
	n->nr_objs = 0;
	n->nr = 0;
}
