/*
 * Kernel interfaces newer than the build machine's headers (Debian 12 ships
 * 6.1 uapi headers; memdump runs on 6.18). Each is defined only when missing.
 */
#ifndef MEMDUMP_KERNEL_UAPI_H
#define MEMDUMP_KERNEL_UAPI_H

#include <stdint.h>
#include <linux/fs.h>
#include <sys/ioctl.h>

#ifndef PAGEMAP_SCAN
#define PAGE_IS_WPALLOWED	(1 << 0)
#define PAGE_IS_WRITTEN		(1 << 1)
#define PAGE_IS_FILE		(1 << 2)
#define PAGE_IS_PRESENT		(1 << 3)
#define PAGE_IS_SWAPPED		(1 << 4)
#define PAGE_IS_PFNZERO		(1 << 5)
#define PAGE_IS_HUGE		(1 << 6)
#define PAGE_IS_SOFT_DIRTY	(1 << 7)
#define PAGE_IS_GUARD		(1 << 8)	/* MADV_GUARD_INSTALL marker (6.14+) */

struct page_region {
	uint64_t start;
	uint64_t end;
	uint64_t categories;
};

#define PM_SCAN_WP_MATCHING	(1 << 0)
#define PM_SCAN_CHECK_WPASYNC	(1 << 1)

struct pm_scan_arg {
	uint64_t size;
	uint64_t flags;
	uint64_t start;
	uint64_t end;
	uint64_t walk_end;
	uint64_t vec;
	uint64_t vec_len;
	uint64_t max_pages;
	uint64_t category_inverted;
	uint64_t category_mask;
	uint64_t category_anyof_mask;
	uint64_t return_mask;
};

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL	102	/* 6.13+ */
#endif

#define PAGEMAP_SCAN	_IOWR('f', 16, struct pm_scan_arg)
#endif

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_READ	22
#define MADV_POPULATE_WRITE	23
#endif

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE		25
#endif

#ifndef ARCH_MAP_VDSO_64
#define ARCH_MAP_VDSO_64	0x2003
#endif

#ifndef PR_GET_THP_DISABLE
#define PR_GET_THP_DISABLE	42
#endif

#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC	(1 << 15)
#endif

#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED	(1 << 13)
#endif
#ifndef UFFD_FEATURE_WP_HUGETLBFS_SHMEM
#define UFFD_FEATURE_WP_HUGETLBFS_SHMEM	(1 << 12)
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY	1
#endif

#ifndef SYS_pidfd_open
#define SYS_pidfd_open		434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd		438
#endif
#ifndef SYS_clone3
#define SYS_clone3		435
#endif

/* pidfd ioctls (Linux 6.11): an fd of the pidfd's process's namespace of a kind */
#ifndef PIDFD_GET_CGROUP_NAMESPACE
#define PIDFS_IOCTL_MAGIC		0xFF
#define PIDFD_GET_CGROUP_NAMESPACE	_IO(PIDFS_IOCTL_MAGIC, 1)
#define PIDFD_GET_IPC_NAMESPACE		_IO(PIDFS_IOCTL_MAGIC, 2)
#define PIDFD_GET_MNT_NAMESPACE		_IO(PIDFS_IOCTL_MAGIC, 3)
#define PIDFD_GET_NET_NAMESPACE		_IO(PIDFS_IOCTL_MAGIC, 4)
#define PIDFD_GET_PID_NAMESPACE		_IO(PIDFS_IOCTL_MAGIC, 5)
#define PIDFD_GET_TIME_NAMESPACE	_IO(PIDFS_IOCTL_MAGIC, 7)
#define PIDFD_GET_USER_NAMESPACE	_IO(PIDFS_IOCTL_MAGIC, 9)
#define PIDFD_GET_UTS_NAMESPACE		_IO(PIDFS_IOCTL_MAGIC, 10)
#endif

/* Kernel-internal syscall restart codes seen in rax at a ptrace stop. */
#define ERESTARTSYS		512
#define ERESTARTNOINTR		513
#define ERESTARTNOHAND		514
#define ERESTART_RESTARTBLOCK	516

/* UDP-lite's options (linux/udp.h; glibc's headers have neither) */
#ifndef SOL_UDPLITE
#define SOL_UDPLITE		136
#endif
#ifndef UDPLITE_SEND_CSCOV
#define UDPLITE_SEND_CSCOV	10
#define UDPLITE_RECV_CSCOV	11
#endif

#endif
