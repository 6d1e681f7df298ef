/*
 * What `memdump restore` and the restorer blob share: the layout of the
 * restorer area, one memfd mapped MAP_SHARED at the same address in memdump
 * (which fills it) and in the restored process (which runs it):
 *
 *   [ blob code | struct rst_args | vmas | runs | uffd spans | io_uring
 *     rings (with their bytes) | threads | groups,
 *     auxv, fds to close, seals, xsave images, pending signals, seccomp
 *     filters and each thread's chain of them | thread stacks | the fill
 *     helpers' two stacks ]
 *
 * Offsets are from the start of the area. Everything is plain data: the blob
 * runs with no libc, in an address space that has nothing else left in it.
 * Only fixed-size types, no pointers into memdump's own memory.
 *
 * Synchronisation words (stage, counters) are futexes in the shared memfd:
 * memdump waits on them (non-private futexes work across processes on a
 * shared mapping).
 */
#ifndef MEMDUMP_RESTORER_H
#define MEMDUMP_RESTORER_H

#include "hash64.h"

#define RST_MAGIC		0x52535452u
#define RST_STACK_SIZE		(64UL << 10)	/* per thread, xsave frame included */
#define RST_NR_SIGS		64
#define RST_NR_RLIMITS		16
#define RST_MAX_GROUPS		256
#define RST_MAX_AUXV		128		/* u64 words */
#define RST_HUGE_SIZE		(2UL << 20)
#define RST_READ_CHUNK		(64UL << 20)	/* read, then summed, at a time */
#define RST_READ_MAX		(256UL << 20)	/* read at once when already present */

/* rst_vma.how: how the blob creates the mapping */
enum {
	RST_MAP_SKIP = 0,	/* vsyscall, vdso, vvar: not mapped by mmap */
	RST_MAP_ANON,		/* MAP_PRIVATE|MAP_ANONYMOUS */
	RST_MAP_FD,		/* mmap of fd (file, or the shmem object of anon shared/memfd) */
	RST_MAP_SYSV,		/* shmat of the System V segment whose id is in fd */
};

struct rst_vma {
	unsigned long start, end, pgoff;
	unsigned long madv;	/* bit N: madvise(N) */
	unsigned int prot, flags, status, how;
	int fd;			/* RST_MAP_FD: fd in the restored process while the blob runs;
				 * RST_MAP_SYSV: the segment's id */
	unsigned int locked;
	unsigned int lock_onfault;	/* with locked: mlock2(MLOCK_ONFAULT), not mlock */
	unsigned int sysv_rdonly;	/* RST_MAP_SYSV: attached SHM_RDONLY (no VM_MAYWRITE) */
	unsigned int sealed;	/* mseal()ed once the process is in place */
	unsigned long first_run, nr_runs;	/* its page runs in the run array */
	unsigned long first_guard, nr_guards;	/* its guard regions in the guard array */
	unsigned int lazy;	/* --lazy-pages: registered with the uffd, filled by the handler */
	unsigned long premap;	/* mapped and filled here before the fork (shared copy-on-write
				 * with its parent or children): moved to start, not read; 0: none */
};

/* Guard pages (MADV_GUARD_INSTALL) to install again once the memory is filled. */
struct rst_guard {
	unsigned long start, end;
};

/*
 * The process's own userfaultfd (evloop/uffd_restore.c): ranges to register
 * (modes UFFDIO_REGISTER_MODE_MISSING 1, WP 2), then runs of pages to
 * write-protect (modes 0), then runs of zero pages (modes 0) of MISSING ranges,
 * in one array.
 */
struct rst_uffd_span {
	unsigned long start, end;
	unsigned int modes, pad;
};

/*
 * An io_uring ring the blob makes again (evloop/iouring_restore.c), after
 * the memory and the fds: io_uring_setup of sq_entries/cq_entries, done
 * NOPs, each mapping (struct rst_iouring_map at maps_off) placed at its
 * address, its bytes copied back, the files (fds, u32 at files_off) and
 * buffers (struct rst_iouring_buf at bufs_off) registered, dup3 to fd.
 */
struct rst_iouring {
	int fd;
	unsigned int fd_flags;		/* O_CLOEXEC */
	unsigned int sq_entries, cq_entries, done;
	unsigned int nr_maps, nr_files, nr_bufs;
	unsigned long maps_off, files_off, bufs_off;
};

struct rst_iouring_map {
	unsigned long start, len, pgoff, prot;
	unsigned long data_off;		/* len bytes */
};

struct rst_iouring_buf {
	unsigned long addr, len;
};

/* A run of dumped pages: in pages-1.img, or in a parent set's pages image. */
struct rst_run {
	unsigned long vaddr, nr_pages;
	unsigned long file_off;	/* offset in that pages image */
	int fd;			/* the pages image, an fd while the blob runs */
	unsigned long sum;	/* sum_pages, a run of pages_fd: the checksum of its bytes */
	unsigned int pad;
};

/*
 * A block of an LZ4 compressed pages image (docs/images.md, "Compressed
 * pages"): raw bytes [b * RST_ZBLOCK, ...) of the image, len bytes at off in
 * the file, an LZ4 block or (stored) those raw bytes as they are.
 */
#define RST_ZBLOCK		(256UL << 10)
#define RST_ZTHREADS		2	/* threads that decode: the leader and the sum helper */

struct rst_zblock {
	unsigned long off;
	unsigned int len;
	unsigned int stored;
};

/*
 * A pending signal, as the raw siginfo the dump saved. tid 0: queued for the
 * process (rt_sigqueueinfo by the leader); otherwise for that thread only
 * (rt_tgsigqueueinfo by the thread itself: the kernel lets only the target
 * queue a siginfo with si_code >= 0 or SI_TKILL).
 */
#define RST_SIGINFO_SIZE	128

struct rst_siginfo {
	unsigned int tid;
	unsigned int pad;
	unsigned char info[RST_SIGINFO_SIZE];
};

/*
 * Seals the blob adds to a memfd once its VMAs are mapped: F_SEAL_FUTURE_WRITE
 * (and F_SEAL_SEAL after it) would forbid mapping it writable.
 */
struct rst_seal {
	int fd;
	unsigned int seals;
};

/* A POSIX timer to create with its id and arm (the leader, after the other threads exist). */
#define RST_MAX_PTIMERS	64
#define RST_MAX_LOCKS		128

/* A POSIX lock the blob takes back once it has closed its own fds (struct flock's). */
struct rst_lock {
	int fd;
	int type;			/* F_RDLCK, F_WRLCK */
	long long start, len;		/* from the file's start; len 0: to its end */
};
struct rst_ptimer {
	int id, clock, signo, notify, tid;
	unsigned long sival;
	struct { long isec, insec, vsec, vnsec; } its;	/* interval, then time left */
};

struct rst_sigact {
	unsigned long handler, flags, restorer, mask;
};

struct rst_rlimit {
	unsigned long cur, max;
};

struct rst_creds {
	unsigned int uid, gid, euid, egid, suid, sgid, fsuid, fsgid;
	unsigned int cap_inh[2], cap_prm[2], cap_eff[2], cap_bnd[2], cap_amb[2];
	unsigned int secbits, no_new_privs, has_amb;
	unsigned int nr_groups;
	unsigned int groups[RST_MAX_GROUPS];
};

/* Registers in struct sigcontext order (r8 first). */
struct rst_gpregs {
	unsigned long r8, r9, r10, r11, r12, r13, r14, r15;
	unsigned long di, si, bp, bx, dx, ax, cx, sp, ip, flags;
	unsigned long cs, ss, fs_base, gs_base;
};

/* How a thread is scheduled; the blob sets it before the credentials (CAP_SYS_NICE). */
#define RST_AFFINITY_WORDS	16
struct rst_sched {
	unsigned int policy, prio;	/* policy with SCHED_RESET_ON_FORK */
	int nice;
	unsigned int nr_affinity;	/* words of affinity, 0: leave it */
	unsigned long affinity[RST_AFFINITY_WORDS];
	unsigned long timer_slack;	/* 0: leave it */
};

/* A seccomp filter program in the area: nr struct sock_filter at insns_off. */
struct rst_filter {
	unsigned long insns_off;
	unsigned int nr, flags;
};

struct rst_thread {
	unsigned int tid;
	unsigned int ns_tid;		/* as the process sees it, in its PID namespace; 0: tid */
	unsigned int has_sched, pdeath_sig;
	struct rst_sched sched;
	/* seccomp filters to install, oldest first: indexes into the filter array */
	unsigned long chain_off;
	unsigned int nr_chain;
	unsigned int seccomp_tsync;	/* the leader installs for every thread */
	unsigned int seccomp_strict;	/* enters SECCOMP_MODE_STRICT last, before rt_sigreturn */
	unsigned int has_sas, has_rseq, has_creds, has_robust;
	struct rst_gpregs regs;
	unsigned long clear_tid;
	unsigned long blk_sigset;
	unsigned long sas_sp, sas_size;
	unsigned int sas_flags;
	unsigned long robust, robust_len;
	unsigned long rseq_ptr;
	unsigned int rseq_size, rseq_sig;
	unsigned long xsave_off;	/* raw NT_X86_XSTATE image in the area */
	unsigned int xsave_size;
	unsigned long stack_top;	/* offset of this thread's stack top */
	char comm[16];
	struct rst_creds creds;
};

/* prctl(PR_SET_MM, PR_SET_MM_MAP) argument, as the kernel wants it. */
struct rst_mm_map {
	unsigned long start_code, end_code, start_data, end_data;
	unsigned long start_brk, brk, start_stack;
	unsigned long arg_start, arg_end, env_start, env_end;
	unsigned long auxv;		/* pointer: filled in by the blob */
	unsigned int auxv_size;
	unsigned int exe_fd;
};

/* how the blob fills 2 MiB aligned runs of anonymous memory */
enum {
	RST_FILL_COLLAPSE = 0,	/* one page per PMD, MADV_COLLAPSE, read: THP, VMA flags kept */
	RST_FILL_PLAIN,		/* MADV_POPULATE_WRITE + read, 4K pages */
	RST_FILL_HUGEPAGE,	/* MADV_HUGEPAGE + populate + read (benchmark only: leaves VM_HUGEPAGE) */
	RST_FILL_AUTO,		/* COLLAPSE, then PLAIN once collapsing runs slow */
};

#define RST_COLLAPSE_JUDGE_MIB	16	/* a collapse this large is timed */
#define RST_COLLAPSE_SLOW_US	1500	/* per MiB: slower than 4K pages here */

/* rst_args.fill_helper: the blob's helper threads for the fill */
enum {
	RST_HELP_NONE = 0,	/* the leader does it all */
	RST_HELP_SUM,		/* a thread sums behind the leader's reads */
	RST_HELP_BOTH,		/* and one populates ahead of them */
};

/* rst_args.sum_pages */
enum {
	RST_SUM_NONE = 0,	/* the pages were checked before the restore */
	RST_SUM_RUNS,		/* each run's checksum (every run has one in the pagemap) */
	RST_SUM_WHOLE,		/* and the whole file's (some run has none) */
};

/* rst_args.fault: at the fault point rst-fill (memory filled), the blob ... */
enum {
	RST_BLOB_FAULT_NONE = 0,
	RST_BLOB_FAULT_FAIL,	/* fails the restore */
	RST_BLOB_FAULT_STALL,	/* waits for memdump to let it go, or to die */
};

/* stages, in rst_args.stage */
enum {
	RST_STAGE_DRIVER = 0,	/* the forked memdump prepares fds, fs, ... */
	RST_STAGE_BLOB,		/* the blob rebuilds memory and threads */
	RST_STAGE_PARKED,	/* every thread is ready for its rt_sigreturn, waiting for go */
	RST_STAGE_FAILED,	/* err/msg tell why; the process exits */
};

struct rst_args {
	unsigned int magic;
	unsigned int nr_vmas, nr_runs, nr_threads;
	unsigned long area_start, area_size;
	unsigned long blob_size;
	unsigned long vmas_off, runs_off, threads_off, auxv_off;
	unsigned long close_off;	/* int array of fds the blob closes */
	unsigned int nr_close;
	unsigned long sigs_off;		/* struct rst_siginfo array */
	unsigned int nr_sigs;
	unsigned long seals_off;	/* struct rst_seal array */
	unsigned int nr_seals;
	unsigned long guards_off;	/* struct rst_guard array, sorted */
	unsigned int nr_guards;
	unsigned long premap_lo, premap_hi;	/* the tree's premapped memory: kept until
						 * its VMAs are moved, then unmapped; 0, 0: none */

	int pages_fd;
	int has_mm_map, has_vdso, has_rlimits;
	unsigned long vdso_start;	/* dumped [vvar] (first vdso-related VMA) start */
	unsigned long vdso_len;		/* from vdso_start to the end of [vdso] */
	int dumpable, thp_disabled;
	unsigned int mlock_future;	/* mlockall() flags once the mappings are made, or 0 */
	unsigned int personality;
	unsigned int membarrier_mask;	/* MEMBARRIER_CMD_REGISTER_* to issue */
	int has_itimers;
	struct { unsigned long isec, iusec, vsec, vusec; } itimers[3];	/* REAL, VIRTUAL, PROF */
	unsigned int nr_ptimers;
	struct rst_ptimer ptimers[RST_MAX_PTIMERS];	/* sorted by id */
	unsigned int nr_locks;
	struct rst_lock locks[RST_MAX_LOCKS];	/* POSIX: a close of any fd of a file drops them */
	unsigned long filters_off;	/* struct rst_filter array */
	unsigned int nr_filters;
	int fill_mode;			/* RST_FILL_* */
	int fill_helper;		/* fill with helper threads (not in a tree: their TIDs) */
	int lifeline_fd;		/* memdump's pidfd: gone before go, the process exits; -1 */
	int fault;			/* RST_FAULT_*: the tests' fault point rst-fill */
	unsigned long fill_stack_top;	/* offset of the helpers' stacks' top */
	struct rst_mm_map mm;
	struct rst_sigact sigacts[RST_NR_SIGS];	/* [i] is signal i+1 */
	struct rst_rlimit rlimits[RST_NR_RLIMITS];

	/* filled by the blob */
	unsigned long syscall_insn;	/* address of a `syscall` instruction */
	unsigned long pages_restored, huge_chunks;
	unsigned long fill_us;		/* time the blob spent on memory */
	unsigned long prep_us, read_us;	/* of which populating, reading */
	unsigned long sum_us;		/* and summing (sum_pages) */
	unsigned long wait_us;		/* the reader waiting for the helper */
	unsigned int fill_threads;	/* with the helpers that ran */

	/*
	 * sum_pages (RST_SUM_*): the blob hashes each run of pages_fd as it
	 * reads it into memory, into its rst_run.sum and (RST_SUM_WHOLE, whose
	 * runs are in file order) into pages_whole (pagecheck.c compares).
	 */
	int sum_pages;
	struct hash64 pages_whole;

	/*
	 * nr_zblocks: pages_fd is an LZ4 compressed pages image, its runs'
	 * file_off offsets in its raw bytes (z_raw of them), its blocks at
	 * zblocks_off. The blob decodes each block straight into the memory it
	 * fills, the leader and the sum helper taking a piece's blocks in turn
	 * (z_claimed: blocks handed out, z_done: decoded, counted over every
	 * piece); each decoding thread i has two RST_ZBLOCK buffers at
	 * zbuf_off + i * 2 * RST_ZBLOCK (the block read, the block decoded
	 * when only part of it goes into this piece).
	 */
	unsigned long zblocks_off, nr_zblocks, z_raw, zbuf_off;

	/*
	 * pages_feed: pages_fd is a pipe memdump writes pages-1.img into, in
	 * file order, as it decrypts or decompresses it (image/feed.h): its
	 * runs are read in address order, which is their file order, the
	 * leader alone reading; feed_pos the bytes read so far.
	 */
	int pages_feed;
	unsigned long feed_pos;
	volatile unsigned int z_claimed, z_done;
	unsigned long z_blocks_helped;	/* blocks the sum helper decoded */

	/* synchronisation (futex words) */
	volatile unsigned int stage;
	volatile unsigned int nr_parked;	/* threads at their final barrier */
	volatile unsigned int go;		/* memdump lets the threads run */
	volatile unsigned int nr_creds;		/* threads done with creds */
	volatile unsigned int fill_prepped;	/* pieces the helper made present */
	volatile unsigned int fill_read;	/* pieces the leader read */
	volatile int fill_tid[2];		/* the fill helpers' TIDs while they run */
	int err;			/* -errno */
	char msg[200];			/* what failed; the blob leaves the errno */
	int msg_has_errno;		/* to memdump to name, the child does not */

	/*
	 * --lazy-pages (src/mem/lazy_restore.c): the blob registers the lazy
	 * VMAs with a userfaultfd and sends it over lazy_sock (a blob fd, a
	 * SOCK_SEQPACKET whose peer is the page handler) before anything of
	 * the process can touch them; -1: every page filled here.
	 */
	int lazy_sock;
	unsigned int nr_lazy;		/* VMAs registered (by the blob) */

	/*
	 * The process's own userfaultfd (uffd_fd -1: none), made by the blob
	 * once the memory is in place: userfaultfd(uffd_flags), UFFDIO_API with
	 * uffd_features, dup3 to uffd_fd, the zero pages mapped again, the
	 * ranges registered, the runs write-protected (struct rst_uffd_span at
	 * uffd_off). uffd_nothp: a MISSING range, so THP stays off while the
	 * memory is filled (a huge page would fill its never-populated pages).
	 */
	int uffd_fd;
	unsigned int uffd_flags, uffd_nothp;
	unsigned long uffd_features, uffd_off;
	unsigned int nr_uffd_ranges, nr_uffd_wp, nr_uffd_zero;

	/* io_uring rings (struct rst_iouring at iourings_off), after the userfaultfd */
	unsigned long iourings_off;
	unsigned int nr_iourings;
};

#endif
