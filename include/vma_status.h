/* vma_entry.status bits, pagemap_entry.flags and task_core_entry.task_state, with CRIU's values. */
#ifndef MEMDUMP_VMA_STATUS_H
#define MEMDUMP_VMA_STATUS_H

/* task_core_entry.task_state */
#define TASK_ALIVE		1
#define TASK_STOPPED		3

#define VMA_AREA_REGULAR	(1u << 0)	/* its pages are dumped */
#define VMA_AREA_STACK		(1u << 1)
#define VMA_AREA_VSYSCALL	(1u << 2)
#define VMA_AREA_VDSO		(1u << 3)
#define VMA_AREA_HEAP		(1u << 5)
#define VMA_FILE_PRIVATE	(1u << 6)
#define VMA_FILE_SHARED		(1u << 7)
#define VMA_ANON_SHARED		(1u << 8)
#define VMA_ANON_PRIVATE	(1u << 9)
#define VMA_AREA_SYSVIPC	(1u << 10)	/* a System V shm attach (shmid: its id) */
#define VMA_AREA_VVAR		(1u << 12)
#define VMA_AREA_MEMFD		(1u << 14)

#define PE_PARENT		(1u << 0)	/* pagemap entry: pages are in the parent set */
#define PE_PRESENT		(1u << 2)	/* pagemap entry: pages are in pages-N.img */

/*
 * vma_entry.flags of MAP_HUGETLB memory (VmFlags ht; CRIU's encoding, mmap's):
 * MAP_HUGETLB and log2 of the huge page size (smaps KernelPageSize) in bits 26-31.
 */
#define VMA_MAP_HUGETLB		0x40000u
#define VMA_MAP_HUGE_SHIFT	26
#define VMA_MAP_HUGE_MASK	(0x3fu << VMA_MAP_HUGE_SHIFT)
#define VMA_HUGE_SIZE(flags)	(1ULL << (((flags) & VMA_MAP_HUGE_MASK) >> VMA_MAP_HUGE_SHIFT))

/* vma_entry.madv: bit N set means madvise(N) applies to the whole VMA. */

#endif
