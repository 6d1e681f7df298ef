/* Huge pages a restore needs, by page size, and whether the system can give them (hugetlb.c). */
#ifndef MEMDUMP_MEM_HUGETLB_H
#define MEMDUMP_MEM_HUGETLB_H

#include <stdbool.h>
#include <stdint.h>

#include "image/dumpset.h"
#include "mm.pb-c.h"

#define HUGETLB_SIZES	4

struct hugetlb_need {
	size_t nr;
	struct { uint64_t size, pages; } by[HUGETLB_SIZES];
	uint64_t *objs;		/* the shared objects counted (their shmid) */
	size_t nr_objs;
};

/* len bytes of a VMA with these vma_entry.flags; shmid: a shared object's, 0: private */
int hugetlb_need_add(struct hugetlb_need *n, uint32_t flags, uint64_t shmid, uint64_t len);
/* Every VMA of mm; runs: its dumped pages (for MAP_NORESERVE VMAs), by address */
int hugetlb_need_mm(struct hugetlb_need *n, const MmEntry *mm, const struct dump_run *runs,
		    size_t nr_runs);
/* What a VMA of len bytes with these flags takes of huge pages, dumped bytes filled */
uint64_t hugetlb_vma_bytes(uint32_t flags, uint64_t len, uint64_t dumped);
/* released: counted from a process a killing dump ends (its pages come back) */
int hugetlb_need_check(const struct hugetlb_need *n, bool released);
void hugetlb_need_free(struct hugetlb_need *n);

#endif
