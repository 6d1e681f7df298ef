/*
 * Raw x86-64 Linux system calls for the freestanding blobs (parasite and
 * restorer): no libc, no errno; every call returns the kernel's value, a
 * negative errno on failure. Modeled on the kernel's tools/include/nolibc.
 */
#ifndef MEMDUMP_BLOB_SYS_H
#define MEMDUMP_BLOB_SYS_H

typedef unsigned long	u64;
typedef unsigned int	u32;
typedef long		s64;
typedef int		s32;
typedef unsigned char	u8;

#define __nr_read		0
#define __nr_write		1
#define __nr_open		2
#define __nr_close		3
#define __nr_mmap		9
#define __nr_mprotect		10
#define __nr_munmap		11
#define __nr_brk		12
#define __nr_rt_sigaction	13
#define __nr_rt_sigprocmask	14
#define __nr_rt_sigreturn	15
#define __nr_pread64		17
#define __nr_mremap		25
#define __nr_madvise		28
#define __nr_shmat		30
#define __nr_shmctl		31
#define __nr_getpid		39
#define __nr_clone		56
#define __nr_exit		60
#define __nr_kill		62
#define __nr_fcntl		72
#define __nr_prctl		157
#define __nr_arch_prctl		158
#define __nr_gettid		186
#define __nr_futex		202
#define __nr_set_tid_address	218
#define __nr_exit_group		231
#define __nr_tgkill		234
#define __nr_set_robust_list	273
#define __nr_vmsplice		278
#define __nr_sigaltstack	131
#define __nr_rseq		334
#define __nr_clone3		435
#define __nr_userfaultfd	323
#define __nr_ioctl		16
#define __nr_sched_yield	24
#define __nr_nanosleep		35
#define __nr_personality	135
#define __nr_ppoll		271
#define __nr_rt_sigpending	127
#define __nr_rt_sigtimedwait	128

static inline long sys_call6(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

#define sys_call0(n)			sys_call6(n, 0, 0, 0, 0, 0, 0)
#define sys_call1(n, a)			sys_call6(n, (long)(a), 0, 0, 0, 0, 0)
#define sys_call2(n, a, b)		sys_call6(n, (long)(a), (long)(b), 0, 0, 0, 0)
#define sys_call3(n, a, b, c)		sys_call6(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define sys_call4(n, a, b, c, d)	sys_call6(n, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define sys_call5(n, a, b, c, d, e)	sys_call6(n, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)

struct blob_iovec {
	void *base;
	u64 len;
};

#define FUTEX_WAIT	0
#define FUTEX_WAKE	1

static inline long sys_futex_wait(u32 *uaddr, u32 val)
{
	return sys_call4(__nr_futex, uaddr, FUTEX_WAIT, val, 0);
}

struct blob_timespec {
	s64 sec;
	s64 nsec;
};

static inline long sys_futex_wake(u32 *uaddr)
{
	return sys_call3(__nr_futex, uaddr, FUTEX_WAKE, 0x7fffffff);
}

static inline void blob_memset(void *dst, int c, u64 n)
{
	u8 *d = dst;

	while (n--)
		*d++ = (u8)c;
}

static inline void blob_memcpy(void *dst, const void *src, u64 n)
{
	u8 *d = dst;
	const u8 *s = src;

	while (n--)
		*d++ = *s++;
}

#define READ_ONCE(x)		(*(volatile typeof(x) *)&(x))
#define WRITE_ONCE(x, v)	(*(volatile typeof(x) *)&(x) = (v))
#define barrier()		__asm__ volatile("" ::: "memory")

#endif
