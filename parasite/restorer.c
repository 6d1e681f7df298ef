/*
 * The restorer blob: runs inside the process being restored, with the PID it
 * had, after memdump has put its fds, cwd, ... in place. It owns nothing but
 * the restorer area (see include/restorer.h) and does, with raw syscalls:
 *
 *   1. unmap everything else (memdump's code, heap, stacks, vdso, ...);
 *   2. map every dumped VMA at its address, then fill the dumped pages from
 *      pages-1.img (2 MiB aligned runs as transparent huge pages: populate
 *      one page per PMD, MADV_COLLAPSE, then read; everything else populated
 *      first, then read in large chunks), with two helper threads that
 *      populate ahead of the reads and sum behind them (fill_pages); shared
 *      memory maps its object, which memdump created and filled, then gets
 *      its late memfd seals;
 *      the process's userfaultfd and io_uring rings are made again once every
 *      VMA and fd is in place (a ring's mappings placed at their addresses);
 *   3. put the vdso back where it was, set the mm fields, madvise, mlock,
 *      final protections, personality, membarrier registrations, signal
 *      actions, rlimits; last, mseal() the VMAs that were sealed;
 *   4. create the other threads with their TIDs (clone3 set_tid); every
 *      thread restores its own fs/gs base, clear_tid, robust list, rseq,
 *      name, scheduling (policy, nice, affinity, timer slack), credentials
 *      and parent-death signal; the leader sets the interval timers;
 *   5. every thread queues its pending signals again (the leader also the
 *      process-wide ones), all signals still blocked, so that the mask
 *      rt_sigreturn restores decides their delivery;
 *   6. all threads park on a futex; memdump (the parent) attaches with ptrace
 *      and lets them go; each thread rt_sigreturn()s into its dumped context
 *      with a hand-built frame, its seccomp filters installed just before
 *      (memdump traces it with PTRACE_O_SUSPEND_SECCOMP). memdump then
 *      unmaps this area from outside (a munmap injected with ptrace), so
 *      nothing of the restorer remains.
 */
#include "sys.h"
#include "restorer.h"
#include "vma_status.h"
#include "sigframe.h"
#include "lz4blk.h"

#define __nr_setresuid		117
#define __nr_setresgid		119
#define __nr_setfsuid		122
#define __nr_setfsgid		123
#define __nr_setgroups		116
#define __nr_capget		125
#define __nr_capset		126
#define __nr_mlock		149
#define __nr_mlock2		325
#define __nr_mlockall		151
#define MLOCK_ONFAULT		1
#define __nr_prlimit64		302
#define __nr_rt_sigaction_	13
#define __nr_rt_sigqueueinfo	129
#define __nr_rt_tgsigqueueinfo	297
#define __nr_setitimer		38
#define __nr_timer_create	222
#define __nr_timer_settime	223
#define __nr_timer_delete	226
#define __nr_setpriority	141
#define __nr_sched_setscheduler	144
#define __nr_sched_setaffinity	203
#define __nr_seccomp		317
#define __nr_membarrier		324
#define __nr_mseal		462

#define PROT_READ	1
#define PROT_WRITE	2
#define PROT_EXEC	4
#define MAP_SHARED	0x01
#define MAP_PRIVATE	0x02
#define MAP_DROPPABLE	0x08
#define MAP_FIXED	0x10
#define MREMAP_MAYMOVE	1
#define MREMAP_FIXED	2
#define MAP_ANONYMOUS	0x20
#define MAP_GROWSDOWN	0x100
#define MAP_NORESERVE	0x4000

#define MADV_HUGEPAGE		14
#define MADV_NOHUGEPAGE		15
#define MADV_POPULATE_READ	22
#define MADV_POPULATE_WRITE	23
#define MADV_COLLAPSE		25
#define MADV_GUARD_INSTALL	102

#define ARCH_SET_GS		0x1001
#define ARCH_SET_FS		0x1002
#define ARCH_MAP_VDSO_64	0x2003

#define PR_SET_NAME		15
#define PR_SET_DUMPABLE		4
#define PR_SET_SECUREBITS	28
#define PR_GET_SECUREBITS	27
#define PR_CAPBSET_DROP		24
#define PR_SET_NO_NEW_PRIVS	38
#define PR_SET_THP_DISABLE	41
#define PR_SET_SECCOMP		22
#define SECCOMP_MODE_STRICT	1
#define PR_CAP_AMBIENT		47
#define PR_CAP_AMBIENT_RAISE	2
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#define PR_SET_MM		35
#define PR_SET_MM_MAP		14
#define PR_SET_PDEATHSIG	1
#define PR_SET_TIMERSLACK	29

#define SCHED_FIFO		1
#define SCHED_RR		2
#define SCHED_DEADLINE		6
#define SCHED_RESET_ON_FORK	0x40000000

#define SECCOMP_SET_MODE_FILTER	1
#define SECCOMP_FILTER_FLAG_TSYNC 1
#define SECURE_NO_SETUID_FIXUP	2

#define CLONE_VM		0x00000100
#define CLONE_FS		0x00000200
#define CLONE_FILES		0x00000400
#define CLONE_SIGHAND		0x00000800
#define CLONE_THREAD		0x00010000
#define CLONE_SYSVSEM		0x00040000

#define SA_RESTORER		0x04000000


#define TASK_SIZE_47		0x7ffffffff000UL
#define PAGE			4096UL
#define CAP_LAST_GUESS		63

struct clone_args {
	u64 flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	u64 set_tid, set_tid_size, cgroup;
};

struct k_sigaction {
	u64 handler, flags, restorer, mask;
};

struct cap_header {
	u32 version;
	s32 pid;
};

struct cap_data {
	u32 effective, permitted, inheritable;
};

/* clone3 starting fn(arg) on the new stack in the child. */
long rst_clone3(struct clone_args *ca, u64 size, void (*fn)(void *), void *arg)
	__attribute__((visibility("hidden")));
extern char rst_syscall_insn[] __attribute__((visibility("hidden")));

__asm__(
	"	.text\n"
	"	.globl	rst_clone3\n"
	"	.hidden	rst_clone3\n"
	"rst_clone3:\n"
	"	mov	%rdx, %r8\n"
	"	mov	%rcx, %r9\n"
	"	mov	$435, %eax\n"
	"	syscall\n"
	"	test	%rax, %rax\n"
	"	jnz	1f\n"
	"	xor	%ebp, %ebp\n"
	"	mov	%r9, %rdi\n"
	"	and	$-16, %rsp\n"
	"	call	*%r8\n"
	"	ud2\n"
	"1:	ret\n"
	/* memdump injects its final munmap here through ptrace */
	"	.globl	rst_syscall_insn\n"
	"	.hidden	rst_syscall_insn\n"
	"rst_syscall_insn:\n"
	"	syscall\n"
	"	int3\n");

static struct rst_args *A;

#define __nr_clock_gettime	228

static u64 now_us(void)
{
	struct { long sec, nsec; } ts = { 0, 0 };

	sys_call2(__nr_clock_gettime, 1 /* CLOCK_MONOTONIC */, &ts);
	return ts.sec * 1000000UL + ts.nsec / 1000;
}

static inline char *area(u64 off)
{
	return (char *)A->area_start + off;
}

static void str_append(char **p, char *end, const char *s)
{
	while (*s && *p < end - 1)
		*(*p)++ = *s++;
	**p = 0;
}

static void hex_append(char **p, char *end, u64 v)
{
	char buf[19];
	int i = 18;

	buf[i] = 0;
	do {
		buf[--i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v && i > 2);
	buf[--i] = 'x';
	buf[--i] = '0';
	str_append(p, end, buf + i);
}

static void dec_append(char **p, char *end, long v)
{
	char buf[24];
	int i = 23;
	int neg = v < 0;

	if (neg)
		v = -v;
	buf[i] = 0;
	do {
		buf[--i] = '0' + v % 10;
		v /= 10;
	} while (v);
	if (neg)
		buf[--i] = '-';
	str_append(p, end, buf + i);
}

/* Record why, wake memdump, and end the half-restored process. */
/*
 * Tell memdump what failed (A->msg: what, then the address or number) and
 * the errno (A->err), which memdump names; then die. The first failure
 * wins, other threads just die.
 */
static void __attribute__((noreturn)) rst_die(long err, const char *what, u64 v, int hex)
{
	char *p = A->msg, *end = A->msg + sizeof(A->msg);

	if (__sync_bool_compare_and_swap(&A->err, 0, (int)(err ? err : -1))) {
		str_append(&p, end, what);
		if (v != (u64)-1) {
			str_append(&p, end, " ");
			if (hex)
				hex_append(&p, end, v);
			else
				dec_append(&p, end, (long)v);
		}
		WRITE_ONCE(A->stage, RST_STAGE_FAILED);
		sys_futex_wake((u32 *)&A->stage);
	}
	for (;;)
		sys_call1(__nr_exit_group, 127);
}

/* A message of its own, said as it is (no errno after it). */
static void __attribute__((noreturn)) rst_fail_msg(long err, const char *msg)
{
	char *p = A->msg, *end = A->msg + sizeof(A->msg);

	if (__sync_bool_compare_and_swap(&A->err, 0, (int)err)) {
		str_append(&p, end, msg);
		A->msg_has_errno = 1;
		WRITE_ONCE(A->stage, RST_STAGE_FAILED);
		sys_futex_wake((u32 *)&A->stage);
	}
	for (;;)
		sys_call1(__nr_exit_group, 127);
}

/* ... at an address (hex), or of a thread, signal, limit, ... (decimal) */
static void __attribute__((noreturn)) rst_fail(long err, const char *what, u64 addr)
{
	rst_die(err, what, addr, 1);
}

static void __attribute__((noreturn)) rst_fail_n(long err, const char *what, long n)
{
	rst_die(err, what, (u64)n, 0);
}

static long mmap6(u64 addr, u64 len, long prot, long flags, long fd, u64 off)
{
	return sys_call6(__nr_mmap, addr, len, prot, flags, fd, off);
}


/*
 * Not a MADV_HUGEPAGE VMA (THP "madvise" mode): one page per PMD, then
 * MADV_COLLAPSE turns each into a huge page without changing the VMA's
 * flags. Failure is fine: 4K pages follow. RST_FILL_AUTO goes on with 4K
 * pages once a range took longer than RST_COLLAPSE_SLOW_US per MiB: on this
 * VM a huge page often comes from memory the host took back, and each pays
 * for that under the mmap lock (README, Figures).
 */
static void collapse_range(u64 h0, u64 h1)
{
	u64 t0 = now_us(), mib = (h1 - h0) >> 20;

	for (u64 c = h0; c < h1; c += RST_HUGE_SIZE)
		sys_call3(__nr_madvise, c, PAGE, MADV_POPULATE_WRITE);
	if (sys_call3(__nr_madvise, h0, h1 - h0, MADV_COLLAPSE) == 0)
		A->huge_chunks += (h1 - h0) / RST_HUGE_SIZE;
	if (A->fill_mode == RST_FILL_AUTO && mib >= RST_COLLAPSE_JUDGE_MIB &&
	    now_us() - t0 > mib * RST_COLLAPSE_SLOW_US)
		A->fill_mode = RST_FILL_PLAIN;
}

/*
 * The memory of [a, b), a span of adjacent runs (one run, or the pieces of an
 * incremental chain from several pages images), made present: huge pages
 * where 2 MiB fit, 4K pages for the rest.
 */
static void prep_span(struct rst_vma *v, u64 a, u64 b)
{
	u64 h0 = (a + RST_HUGE_SIZE - 1) & ~(RST_HUGE_SIZE - 1);
	u64 h1 = b & ~(RST_HUGE_SIZE - 1);
	int huge = v->how == RST_MAP_ANON && !(v->madv & (1UL << MADV_NOHUGEPAGE)) &&
		   !(v->flags & VMA_MAP_HUGETLB) && !A->thp_disabled && !A->uffd_nothp;
	long ret;
	u64 t0 = now_us();

	if (huge && h0 < h1 && A->fill_mode != RST_FILL_PLAIN) {
		if (A->fill_mode == RST_FILL_HUGEPAGE) {
			sys_call3(__nr_madvise, h0, h1 - h0, MADV_HUGEPAGE);
			sys_call3(__nr_madvise, h0, h1 - h0, MADV_POPULATE_WRITE);
		} else if (v->madv & (1UL << MADV_HUGEPAGE)) {
			/* a THP VMA: the populate faults in huge pages directly */
			sys_call3(__nr_madvise, h0, h1 - h0, MADV_POPULATE_WRITE);
		} else {
			collapse_range(h0, h1);
		}
	}
	/* the rest (and anything not collapsed) as 4K pages, without user faults */
	ret = sys_call3(__nr_madvise, a, b - a, MADV_POPULATE_WRITE);
	if (ret < 0 && ret != -22)
		rst_fail(ret, "cannot populate memory at", a);
	A->prep_us += now_us() - t0;
}

/*
 * The dumped pages are filled in pieces: a VMA's runs grouped in spans of
 * adjacent runs (one run, or the pieces of an incremental chain from several
 * pages images), each span cut at RST_READ_CHUNK aligned addresses (so every
 * 2 MiB stays in one piece). A piece is made present (prep_span), read
 * (read_piece), then summed (sum_piece). With the fill helpers (two threads
 * that exit before the process's own threads are created) the leader only
 * reads, mostly waiting for the disk: one helper makes the pieces present
 * ahead of it, the other sums those it has read. All walk the pieces in the
 * same order (next_piece) and count them in futex words: A->fill_prepped,
 * A->fill_read.
 */
struct piece {
	struct rst_vma *v;
	u64 a, b;		/* [a, b) */
	u64 r0, r1;		/* the runs it overlaps: runs[r0 .. r1) */
};

struct cursor {
	u32 vi;			/* the VMA */
	u64 k, k_end;		/* its span: its runs [k, k_end), k the piece's first */
	u64 addr, end;		/* the next piece starts at addr, the span ends at end */
};

static struct rst_run *run_at(u64 i)
{
	return &((struct rst_run *)area(A->runs_off))[i];
}

static u64 run_end(const struct rst_run *r)
{
	return r->vaddr + r->nr_pages * PAGE;
}

static int vma_filled(const struct rst_vma *v)
{
	return v->nr_runs && v->how != RST_MAP_SKIP && v->how != RST_MAP_SYSV && !v->lazy;
}

/* The span of adjacent runs from run k of v. */
static void start_span(struct cursor *c, const struct rst_vma *v)
{
	c->addr = run_at(v->first_run + c->k)->vaddr;
	c->end = run_end(run_at(v->first_run + c->k));
	for (c->k_end = c->k + 1; c->k_end < v->nr_runs; c->k_end++) {
		const struct rst_run *r = run_at(v->first_run + c->k_end);

		if (r->vaddr != c->end)
			break;
		c->end = run_end(r);
	}
}

/* Move the cursor to the next span with pages; 0 when there is none. */
static int next_span(struct cursor *c)
{
	struct rst_vma *vmas = (struct rst_vma *)area(A->vmas_off);

	if (c->vi < A->nr_vmas && c->k_end < vmas[c->vi].nr_runs) {
		c->k = c->k_end;
	} else {
		do
			c->vi++;
		while (c->vi < A->nr_vmas && !vma_filled(&vmas[c->vi]));
		if (c->vi >= A->nr_vmas)
			return 0;
		c->k = 0;
	}
	start_span(c, &vmas[c->vi]);
	return 1;
}

static void cursor_init(struct cursor *c)
{
	blob_memset(c, 0, sizeof(*c));
	c->vi = (u32)-1;
}

/* The next piece, in the order both threads take them; 0 at the end. */
static int next_piece(struct cursor *c, struct piece *p)
{
	u64 j;

	while (c->addr >= c->end)
		if (!next_span(c))
			return 0;
	p->v = &((struct rst_vma *)area(A->vmas_off))[c->vi];
	p->a = c->addr;
	p->b = (c->addr & ~(RST_READ_CHUNK - 1)) + RST_READ_CHUNK;
	if (p->b > c->end)
		p->b = c->end;
	while (run_end(run_at(p->v->first_run + c->k)) <= p->a)
		c->k++;
	for (j = c->k; j < c->k_end && run_at(p->v->first_run + j)->vaddr < p->b; j++)
		;
	p->r0 = p->v->first_run + c->k;
	p->r1 = p->v->first_run + j;
	c->addr = p->b;
	return 1;
}

/* The part [*a, *b) of run r in piece p. */
static void piece_part(const struct piece *p, const struct rst_run *r, u64 *a, u64 *b)
{
	*a = r->vaddr > p->a ? r->vaddr : p->a;
	*b = run_end(r) < p->b ? run_end(r) : p->b;
}

/* [a, b) from the pipe memdump feeds pages-1.img into: its bytes from off, in order. */
static void read_fed(int fd, u64 a, u64 b, u64 off)
{
	if (off != A->feed_pos)
		rst_fail(-5, "pages-1.img is fed out of order at", a);
	A->feed_pos = off + (b - a);
	while (a < b) {
		long ret = sys_call3(__nr_read, fd, a, b - a);

		if (ret <= 0)	/* the feed ended: memdump tells why (a chunk refused) */
			rst_fail(ret ? ret : -5, "the pages image ended early, at", a);
		a += ret;
	}
}

/* The bytes of a piece from their pages images, into memory made present. */
static void read_piece(const struct piece *p)
{
	u64 t0 = now_us();

	for (u64 i = p->r0; i < p->r1; i++) {
		const struct rst_run *r = run_at(i);
		u64 a, b, off;

		piece_part(p, r, &a, &b);
		off = r->file_off + (a - r->vaddr);
		A->pages_restored += (b - a) / PAGE;
		if (A->pages_feed && r->fd == A->pages_fd) {
			read_fed(r->fd, a, b, off);
			continue;
		}
		while (a < b) {
			long ret = sys_call4(__nr_pread64, r->fd, a, b - a, off);

			if (ret <= 0)
				rst_fail(ret ? ret : -5, "cannot read a pages image for", a);
			a += ret;
			off += ret;
		}
	}
	A->read_us += now_us() - t0;
}

/*
 * An LZ4 compressed pages-1.img (A->nr_zblocks, docs/images.md): each run's
 * raw bytes [x, x + len) lie in blocks x / RST_ZBLOCK .. (x + len - 1) /
 * RST_ZBLOCK. A piece's tasks are those blocks for each of its runs in
 * order; the leader and the sum helper take them in turn (z_claim). A block
 * wholly inside the run is decoded straight into the run's memory; one that
 * goes only partly into it (a run's or a piece's edge) is decoded into the
 * thread's buffer, kept there for the next part (the run after it), and its
 * part copied. The decoder never writes outside the room it is given (the
 * block's place in the run, or the buffer) nor reads outside the block.
 */
struct zthread {
	u8 *in, *out;
	u64 cached;		/* the block in out, or -1 */
};

static void zthread_init(struct zthread *zt, int i)
{
	zt->in = (u8 *)area(A->zbuf_off + (u64)i * 2 * RST_ZBLOCK);
	zt->out = zt->in + RST_ZBLOCK;
	zt->cached = (u64)-1;
}

static int run_compressed(const struct rst_run *r)
{
	return A->nr_zblocks && r->fd == A->pages_fd;
}

/* image pages-1.img is corrupt: its block K (pages bytes 0xA-0xB) does not decompress */
static void __attribute__((noreturn)) z_corrupt(u64 k, u64 raw0, u64 raw1)
{
	char msg[160], *p = msg, *end = msg + sizeof(msg);

	str_append(&p, end, "image pages-1.img is corrupt: its block ");
	dec_append(&p, end, (long)k);
	str_append(&p, end, " (pages bytes ");
	hex_append(&p, end, raw0);
	str_append(&p, end, "-");
	hex_append(&p, end, raw1);
	str_append(&p, end, ") does not decompress");
	rst_fail_msg(-5, msg);
}

static void pread_all(int fd, u8 *to, u64 len, u64 off, u64 addr)
{
	while (len) {
		long ret = sys_call4(__nr_pread64, fd, to, len, off);

		if (ret <= 0)
			rst_fail(ret ? ret : -5, "cannot read a pages image for", addr);
		to += ret;
		off += ret;
		len -= ret;
	}
}

/* Block k decoded into [to, to + want), its raw bytes [k * RST_ZBLOCK, + want). */
static void z_decode(struct zthread *zt, u64 k, u8 *to, u64 want)
{
	const struct rst_zblock *zb = &((const struct rst_zblock *)area(A->zblocks_off))[k];

	if (zb->stored || zb->len > RST_ZBLOCK)
		z_corrupt(k, k * RST_ZBLOCK, k * RST_ZBLOCK + want);
	pread_all(A->pages_fd, zt->in, zb->len, zb->off, (u64)to);
	if (lz4blk_decode(zt->in, zb->len, to, want) != (long)want)
		z_corrupt(k, k * RST_ZBLOCK, k * RST_ZBLOCK + want);
}

/* The part of block k in memory [a, a + len), whose raw bytes start at x. */
static void z_block(struct zthread *zt, u64 k, u64 a, u64 x, u64 len)
{
	const struct rst_zblock *zb = &((const struct rst_zblock *)area(A->zblocks_off))[k];
	u64 b0 = k * RST_ZBLOCK, blen, lo, hi;

	if (k >= A->nr_zblocks)
		rst_fail(-5, "pages-1.img holds no block for the pages at", a);
	blen = k + 1 < A->nr_zblocks ? RST_ZBLOCK : A->z_raw - b0;
	lo = x > b0 ? x : b0;
	hi = x + len < b0 + blen ? x + len : b0 + blen;
	if (zb->stored) {	/* its raw bytes as they are: read straight in */
		if (zb->len != blen)
			z_corrupt(k, b0, b0 + blen);
		pread_all(A->pages_fd, (u8 *)(a + (lo - x)), hi - lo, zb->off + (lo - b0), a);
	} else if (lo == b0 && hi == b0 + blen) {
		z_decode(zt, k, (u8 *)(a + (lo - x)), blen);
	} else {
		if (zt->cached != k) {
			zt->cached = (u64)-1;
			z_decode(zt, k, zt->out, blen);
			zt->cached = k;
		}
		lz4blk_copy((u8 *)(a + (lo - x)), zt->out + (lo - b0), hi - lo, 0, 0);
	}
}

/* Where a piece's tasks are: run i of the piece, whose first task is number base. */
struct zwalk {
	u64 i, base;
};

/* Run r's part [*a, *b) of piece p, its raw offset *x; its number of tasks. */
static u64 z_run_part(const struct piece *p, const struct rst_run *r, u64 *a, u64 *b, u64 *x)
{
	piece_part(p, r, a, b);
	*x = r->file_off + (*a - r->vaddr);
	if (!run_compressed(r))
		return 1;
	return (*x + (*b - *a) - 1) / RST_ZBLOCK - *x / RST_ZBLOCK + 1;
}

static u32 z_piece_tasks(const struct piece *p)
{
	u64 n = 0, a, b, x;

	for (u64 i = p->r0; i < p->r1; i++)
		n += z_run_part(p, run_at(i), &a, &b, &x);
	return (u32)n;
}

/* Task t of piece p (t only grows from call to call with the same w). */
static void z_task(struct zthread *zt, const struct piece *p, struct zwalk *w, u64 t)
{
	u64 a, b, x, n;
	const struct rst_run *r;

	for (;;) {
		r = run_at(w->i);
		n = z_run_part(p, r, &a, &b, &x);
		if (t < w->base + n)
			break;
		w->base += n;
		w->i++;
	}
	if (!run_compressed(r)) {	/* a run of another image: read as it is */
		pread_all(r->fd, (u8 *)a, b - a, x, a);
		return;
	}
	z_block(zt, x / RST_ZBLOCK + (t - w->base), a, x, b - a);
}

/* A task below end not taken yet: taken, 1; 0 when there is none. */
static int z_claim(u32 end, u32 *t)
{
	u32 c = READ_ONCE(A->z_claimed);

	while (c < end) {
		if (__sync_bool_compare_and_swap(&A->z_claimed, c, c + 1)) {
			*t = c;
			return 1;
		}
		c = READ_ONCE(A->z_claimed);
	}
	return 0;
}

/* Tasks [base, base + n) of piece p, those this thread takes; how many it did. */
static u64 z_work(struct zthread *zt, const struct piece *p, u32 base, u32 n)
{
	struct zwalk w = { p->r0, 0 };
	u64 done = 0;
	u32 t;

	while (z_claim(base + n, &t)) {
		z_task(zt, p, &w, t - base);
		__atomic_add_fetch(&A->z_done, 1, __ATOMIC_RELEASE);
		sys_futex_wake((u32 *)&A->z_done);
		done++;
	}
	return done;
}

/* The leader: piece p decoded, with the sum helper's blocks, once all are done. */
static void z_read_piece(struct zthread *zt, const struct piece *p, u32 base)
{
	u32 n = z_piece_tasks(p), d;
	u64 t0 = now_us();

	z_work(zt, p, base, n);
	while ((d = __atomic_load_n(&A->z_done, __ATOMIC_ACQUIRE)) < base + n)
		sys_futex_wait((u32 *)&A->z_done, d);
	A->pages_restored += (p->b - p->a) / PAGE;
	A->read_us += now_us() - t0;
}

/*
 * A piece read, summed (sum_pages) into its runs of pages-1.img: each run's
 * checksum, h carrying it from piece to piece, and the whole file's in the
 * same pass (memdump compares them once the process is parked: pagecheck.c).
 */
static void sum_piece(const struct piece *p, struct hash64 *h)
{
	u64 t0 = now_us();

	for (u64 i = p->r0; i < p->r1; i++) {
		struct rst_run *r = run_at(i);
		u64 a, b;

		if (!A->sum_pages || r->fd != A->pages_fd)
			continue;
		piece_part(p, r, &a, &b);
		if (a == r->vaddr)
			h64_init(h);
		if (A->sum_pages == RST_SUM_WHOLE)
			h64_update2(h, &A->pages_whole, (const void *)a, b - a);
		else
			h64_update(h, (const void *)a, b - a);
		if (b == run_end(r))
			r->sum = h64_final(h);
	}
	A->sum_us += now_us() - t0;
}

static void fill_alone(void)
{
	struct cursor c;
	struct piece p;
	struct hash64 h;
	struct zthread zt;
	u32 base = 0;

	cursor_init(&c);
	zthread_init(&zt, 0);
	while (next_piece(&c, &p)) {
		prep_span(p.v, p.a, p.b);
		if (A->nr_zblocks) {
			z_read_piece(&zt, &p, base);
			base += z_piece_tasks(&p);
		} else {
			read_piece(&p);
		}
		sum_piece(&p, &h);
	}
}

static void publish(volatile u32 *word, u32 v)
{
	WRITE_ONCE(*word, v);
	sys_futex_wake((u32 *)word);
}

/* Wait until *word > n; the time waited into *us. */
static void wait_above(volatile u32 *word, u32 n, unsigned long *us)
{
	u64 t0 = now_us();
	u32 v;

	while ((v = READ_ONCE(*word)) <= n)
		sys_futex_wait((u32 *)word, v);
	*us += now_us() - t0;
}

/* The populate helper: every piece made present, ahead of the reader. */
static void prep_helper(void *arg)
{
	struct cursor c;
	struct piece p;
	u32 n = 0;

	(void)arg;
	cursor_init(&c);
	while (next_piece(&c, &p)) {
		prep_span(p.v, p.a, p.b);
		publish(&A->fill_prepped, ++n);
	}
	sys_call1(__nr_exit, 0);
}

/*
 * The checksum helper: every piece summed once the reader has read it. With
 * a compressed image it first decodes blocks of the piece beside the leader
 * (once the piece is present), then sums it when all its blocks are in.
 */
static void sum_helper(void *arg)
{
	struct cursor c;
	struct piece p;
	struct hash64 h;
	struct zthread zt;
	unsigned long waited = 0;
	u32 base = 0;

	(void)arg;
	cursor_init(&c);
	zthread_init(&zt, 1);
	for (u32 n = 0; next_piece(&c, &p); n++) {
		if (A->nr_zblocks) {
			u32 tasks = z_piece_tasks(&p);

			wait_above(&A->fill_prepped, n, &waited);
			A->z_blocks_helped += z_work(&zt, &p, base, tasks);
			base += tasks;
		}
		wait_above(&A->fill_read, n, &waited);
		sum_piece(&p, &h);
	}
	sys_call1(__nr_exit, 0);
}

#define CLONE_PARENT_SETTID	0x00100000
#define CLONE_CHILD_CLEARTID	0x00200000
#define ESRCH			3

/* A fill helper on the i-th helper stack at the top of the area; its TID or < 0. */
static long start_helper(int i, void (*fn)(void *))
{
	struct clone_args ca;

	blob_memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
		   CLONE_SYSVSEM | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
	ca.parent_tid = ca.child_tid = (u64)&A->fill_tid[i];
	ca.stack = (u64)area(A->fill_stack_top) - (i + 1) * RST_STACK_SIZE;
	ca.stack_size = RST_STACK_SIZE;
	return rst_clone3(&ca, sizeof(ca), fn, 0);
}

/*
 * A helper gone, its TID free again (a thread to create may want it): the
 * kernel clears fill_tid[i] before it releases the TID.
 */
static void join_helper(int i, long tid)
{
	long pid = sys_call0(__nr_getpid);
	int t;

	if (tid <= 0)
		return;
	while ((t = READ_ONCE(A->fill_tid[i])) != 0)
		sys_futex_wait((u32 *)&A->fill_tid[i], (u32)t);
	while (sys_call3(__nr_tgkill, pid, tid, 0) != -ESRCH)
		sys_call0(__nr_sched_yield);
}

/*
 * q, the piece after p, read with it: it continues p in the same VMA, is
 * already present (the piece numbered idx) and the read stays within
 * RST_READ_MAX (more requests in flight: the disk reads faster).
 */
static int joins(const struct piece *p, const struct piece *q, u32 idx)
{
	return q->v == p->v && q->a == p->b && q->b - p->a <= RST_READ_MAX &&
	       READ_ONCE(A->fill_prepped) > idx;
}

/*
 * The leader reads each piece once the populate helper has made it present
 * (with the next ones when they are too), and sums it too when the checksum
 * helper could not start.
 */
static void fill_with_helpers(long prep_tid, long sum_tid)
{
	struct cursor c;
	struct piece p, q;
	struct hash64 h;
	u32 n = 0, k;
	int more;

	struct zthread zt;
	u32 base = 0;

	cursor_init(&c);
	zthread_init(&zt, 0);
	more = next_piece(&c, &p);
	while (more) {
		if (prep_tid > 0) {
			wait_above(&A->fill_prepped, n, &A->wait_us);
		} else {
			prep_span(p.v, p.a, p.b);
			publish(&A->fill_prepped, n + 1);	/* the sum helper decodes it too */
		}
		if (A->nr_zblocks) {	/* decoded piece by piece, with the sum helper */
			more = next_piece(&c, &q);
			z_read_piece(&zt, &p, base);
			base += z_piece_tasks(&p);
			if (sum_tid <= 0)
				sum_piece(&p, &h);
			publish(&A->fill_read, ++n);
			p = q;
			continue;
		}
		for (k = 1; (more = next_piece(&c, &q)) && prep_tid > 0 && joins(&p, &q, n + k); k++) {
			p.b = q.b;
			p.r1 = q.r1;
		}
		read_piece(&p);
		if (sum_tid <= 0)
			sum_piece(&p, &h);
		n += k;
		publish(&A->fill_read, n);
		p = q;
	}
}

static void fill_pages(void)
{
	long prep_tid = A->fill_helper == RST_HELP_BOTH ? start_helper(0, prep_helper) : -1;
	long sum_tid = A->fill_helper ? start_helper(1, sum_helper) : -1;
	u64 t0;

	A->fill_threads = 1 + (prep_tid > 0) + (sum_tid > 0);
	if (A->fill_threads == 1) {	/* no helper (or none could start): all here */
		fill_alone();
		return;
	}
	fill_with_helpers(prep_tid, sum_tid);
	t0 = now_us();
	join_helper(0, prep_tid);
	join_helper(1, sum_tid);
	A->wait_us += now_us() - t0;
}

static const unsigned int madv_after[] = { 1, 2, 10, 12, 15, 16, 18 };

/* Guard pages again, once the memory is filled and before mlock (which refuses them). */
static void install_guards(const struct rst_vma *v)
{
	const struct rst_guard *g = (const struct rst_guard *)area(A->guards_off);

	for (u64 k = 0; k < v->nr_guards; k++) {
		const struct rst_guard *r = &g[v->first_guard + k];
		long ret = sys_call3(__nr_madvise, r->start, r->end - r->start, MADV_GUARD_INSTALL);

		if (ret < 0)
			rst_fail(ret, "cannot install guard pages at", r->start);
	}
}

#define SHM_RDONLY	010000
#define SHM_REMAP	040000
#define SHM_EXEC	0100000

#define IPC_STAT_	2

/* The size of System V segment id, rounded up to pages; 0 if shmctl fails. */
static u64 sysv_size(long id)
{
	u64 ds[16];	/* struct shmid64_ds (112 bytes): shm_segsz at 48 */

	if (sys_call3(__nr_shmctl, id, IPC_STAT_, (long)ds) < 0)
		return 0;
	return (ds[6] + PAGE - 1) & ~(PAGE - 1);
}

/* The mprotect that gives a System V VMA its protection, if its attach did not. */
static void sysv_protect(const struct rst_vma *v)
{
	long natural = PROT_READ | (v->sysv_rdonly ? 0 : PROT_WRITE) | (v->prot & PROT_EXEC);
	long ret;

	if (natural == (long)v->prot)
		return;
	ret = sys_call3(__nr_mprotect, v->start, v->end - v->start, v->prot);
	if (ret < 0)
		rst_fail(ret, "cannot mprotect System V shm at", v->start);
}

/* w is a piece of the attach v begins: the same segment at the same base. */
static int sysv_same_attach(const struct rst_vma *v, const struct rst_vma *w)
{
	return w->how == RST_MAP_SYSV && w->fd == v->fd && w->start - w->pgoff == v->start - v->pgoff;
}

/*
 * The pieces of one System V attach (an mprotect or munmap of a part split
 * it), vmas[i] the first: one attach of the whole where the kernel likes
 * (one attach, so shmdt of its base detaches every piece), each piece moved
 * to its place over a placeholder that kept the kernel from attaching there,
 * the rest detached.
 */
static void map_sysv_pieces(struct rst_vma *vmas, u32 i, u64 size, long fl)
{
	long tmp, ret;

	for (u32 k = i; k < A->nr_vmas; k++)
		if (sysv_same_attach(&vmas[i], &vmas[k]) &&
		    mmap6(vmas[k].start, vmas[k].end - vmas[k].start, 0 /* PROT_NONE */,
			  MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != (long)vmas[k].start)
			rst_fail(-12, "cannot hold the place of System V shm at", vmas[k].start);
	tmp = sys_call3(__nr_shmat, vmas[i].fd, 0, fl);
	if (tmp < 0 && tmp > -4096)
		rst_fail(tmp, "cannot attach System V shm for its piece at", vmas[i].start);
	for (u32 k = i; k < A->nr_vmas; k++) {
		const struct rst_vma *w = &vmas[k];
		u64 len = w->end - w->start;

		if (!sysv_same_attach(&vmas[i], w))
			continue;
		if (w->pgoff + len > size)
			rst_fail(-22, "System V shm piece beyond its segment at", w->start);
		ret = sys_call5(__nr_mremap, tmp + w->pgoff, len, len,
				MREMAP_MAYMOVE | MREMAP_FIXED, w->start);
		if (ret != (long)w->start)
			rst_fail(ret, "cannot move a piece of System V shm to", w->start);
		sysv_protect(w);
	}
	sys_call2(__nr_munmap, tmp, size);	/* what no piece took */
}

/* A System V attach, whole or in pieces, in its mode, then its protection. */
static void map_sysv(struct rst_vma *vmas, u32 i)
{
	const struct rst_vma *v = &vmas[i];
	long fl = (v->sysv_rdonly ? SHM_RDONLY : 0) | (v->prot & PROT_EXEC ? SHM_EXEC : 0);
	u64 size;
	long ret;

	for (u32 k = 0; k < i; k++)
		if (sysv_same_attach(v, &vmas[k]))
			return;		/* mapped with the first piece */
	size = sysv_size(v->fd);
	if (v->pgoff || v->end - v->start < size) {	/* huge pages: whole, rounded up more */
		map_sysv_pieces(vmas, i, size, fl);
		return;
	}
	ret = sys_call3(__nr_shmat, v->fd, v->start, fl | SHM_REMAP);
	if (ret != (long)v->start)
		rst_fail(ret, "cannot attach System V shm at", v->start);
	sysv_protect(v);
}

/*
 * --lazy-pages: the lazy VMAs (private anonymous memory, mapped, not filled)
 * registered with a userfaultfd for missing pages, with the events that let
 * the handler follow a fork, mremap, madvise(DONTNEED) or munmap of the
 * process; the uffd sent to the handler (SCM_RIGHTS over A->lazy_sock) and
 * closed here: from now on a touch of those pages waits for the handler,
 * which serves it from the pages images (src/mem/lazy_handler.c). Created
 * while the blob still has memdump's credentials (EVENT_FORK wants
 * CAP_SYS_PTRACE); not UFFD_USER_MODE_ONLY: the kernel's own accesses (a
 * read() into the memory, the rseq area) must wait for the handler too.
 */
#define UFFDIO_API_IOC		0xc018aa3fUL
#define UFFDIO_REGISTER_IOC	0xc020aa00UL
#define UFFD_API_V		0xaaUL
#define UFFD_EVENTS		((1UL << 1) | (1UL << 2) | (1UL << 3) | (1UL << 6))	/* FORK REMAP REMOVE UNMAP */
#define UFFD_MODE_MISSING	1UL
#define O_CLOEXEC_NONBLOCK	(02000000 | 04000)
#define SOL_SOCKET_		1
#define SCM_RIGHTS_		1

struct blob_msghdr {
	void *name; u32 namelen; u32 pad0;
	struct blob_iovec *iov; u64 iovlen;
	void *control; u64 controllen;
	int flags; int pad1;
};
struct blob_cmsg_fd { u64 len; int level, type; int fd; int pad; };

static void lazy_send(long uffd)
{
	u32 nr = A->nr_lazy;
	struct blob_iovec iov = { &nr, sizeof(nr) };
	struct blob_cmsg_fd cm = { 20, SOL_SOCKET_, SCM_RIGHTS_, (int)uffd, 0 };
	struct blob_msghdr mh;
	long ret;

	blob_memset(&mh, 0, sizeof(mh));
	mh.iov = &iov;
	mh.iovlen = 1;
	mh.control = &cm;
	mh.controllen = 24;	/* CMSG_SPACE(sizeof(int)) */
	ret = sys_call3(46 /* sendmsg */, A->lazy_sock, &mh, 0x4000 /* MSG_NOSIGNAL */);
	if (ret < 0)
		rst_fail(ret, "cannot hand the userfaultfd to the page handler", (u64)-1);
	sys_call1(__nr_close, uffd);
}

static void lazy_register(void)
{
	struct rst_vma *vmas = (struct rst_vma *)area(A->vmas_off);
	struct { u64 api, features, ioctls; } api = { UFFD_API_V, UFFD_EVENTS, 0 };
	long uffd, ret;

	if (A->lazy_sock < 0)
		return;
	uffd = sys_call1(__nr_userfaultfd, O_CLOEXEC_NONBLOCK);
	if (uffd < 0)
		rst_fail(uffd, "cannot create a userfaultfd for --lazy-pages", (u64)-1);
	ret = sys_call3(__nr_ioctl, uffd, UFFDIO_API_IOC, &api);
	if (ret < 0)
		rst_fail(ret, "UFFDIO_API with fork, remap, remove and unmap events failed", (u64)-1);
	A->nr_lazy = 0;
	for (u32 i = 0; i < A->nr_vmas; i++) {
		struct rst_vma *v = &vmas[i];
		struct { u64 start, len, mode, ioctls; } reg = { v->start, v->end - v->start,
								 UFFD_MODE_MISSING, 0 };

		if (!v->lazy)
			continue;
		ret = sys_call3(__nr_ioctl, uffd, UFFDIO_REGISTER_IOC, &reg);
		if (ret < 0)
			rst_fail(ret, "cannot register a lazy VMA with the userfaultfd at", v->start);
		A->nr_lazy++;
	}
	lazy_send(uffd);
}

/*
 * The process's own userfaultfd, once the memory is in place: the zero pages
 * of its MISSING ranges mapped again by a read populate (THP off: no huge zero
 * page over their never-populated neighbours), then the fd made with its
 * flags and features at its number (the blob's fds are above it), its ranges
 * registered (pages never populated stay absent, and fault to the process's
 * handler once its threads run), its protected pages write-protected.
 */
#define UFFDIO_WRITEPROTECT_IOC	0xc018aa06UL
#define __nr_dup3		292

static void uffd_call(long fd, unsigned long ioc, void *arg, const char *what, u64 addr)
{
	long ret = sys_call3(__nr_ioctl, fd, ioc, arg);

	if (ret < 0)
		rst_fail(ret, what, addr);
}

static void restore_uffd(void)
{
	struct rst_uffd_span *s = (struct rst_uffd_span *)area(A->uffd_off);
	struct rst_uffd_span *wp = s + A->nr_uffd_ranges, *zero = wp + A->nr_uffd_wp;
	struct { u64 api, features, ioctls; } api = { UFFD_API_V, A->uffd_features, 0 };
	long fd, ret;

	if (A->uffd_fd < 0)
		return;
	for (u32 i = 0; i < A->nr_uffd_zero; i++) {
		ret = sys_call3(__nr_madvise, zero[i].start, zero[i].end - zero[i].start,
				MADV_POPULATE_READ);
		if (ret < 0)
			rst_fail(ret, "cannot map the zero pages of a userfaultfd range at",
				 zero[i].start);
	}
	if (A->uffd_nothp)
		sys_call5(__nr_prctl, PR_SET_THP_DISABLE, A->thp_disabled ? 1 : 0, 0, 0, 0);
	fd = sys_call1(__nr_userfaultfd, A->uffd_flags);
	if (fd < 0)
		rst_fail_n(fd, "cannot make the process's userfaultfd", A->uffd_fd);
	uffd_call(fd, UFFDIO_API_IOC, &api, "UFFDIO_API of the process's userfaultfd failed, "
		  "features", A->uffd_features);
	if (fd != A->uffd_fd) {
		ret = sys_call3(__nr_dup3, fd, A->uffd_fd, A->uffd_flags & 02000000);
		if (ret < 0)
			rst_fail_n(ret, "cannot move the process's userfaultfd to fd", A->uffd_fd);
		sys_call1(__nr_close, fd);
	}
	for (u32 i = 0; i < A->nr_uffd_ranges; i++) {
		struct { u64 start, len, mode, ioctls; } reg = { s[i].start, s[i].end - s[i].start,
								 s[i].modes, 0 };

		uffd_call(A->uffd_fd, UFFDIO_REGISTER_IOC, &reg,
			  "cannot register a range with the process's userfaultfd at", s[i].start);
	}
	for (u32 i = 0; i < A->nr_uffd_wp; i++) {
		struct { u64 start, len, mode; } w = { wp[i].start, wp[i].end - wp[i].start, 1 };

		uffd_call(A->uffd_fd, UFFDIO_WRITEPROTECT_IOC, &w,
			  "cannot write-protect pages of the process's userfaultfd at", wp[i].start);
	}
}

/*
 * io_uring rings (evloop/iouring_restore.c, docs/io_uring.md), once every
 * VMA and fd is in place: a new ring of the old size, brought by NOPs to the
 * requests the old one had done (the kernel's own cached counters are not in
 * the shared memory), each mapping placed at its old address (mmap of a ring
 * takes no address: every other gap it could choose is filled first), its
 * bytes copied back, its files and buffers registered, its fd number.
 */
#define __nr_io_uring_setup	425
#define __nr_io_uring_enter	426
#define __nr_io_uring_register	427
#define MAP_POPULATE		0x8000
#define MAP_FIXED_NOREPLACE	0x100000
#define IORING_SETUP_CQSIZE	(1U << 3)
#define IORING_ENTER_GETEVENTS	1
#define IORING_OFF_SQES		0x10000000UL
#define RING_MAX_HOLES		256
#define RING_LOW		0x10000UL
#define RING_TOP		((1UL << 47) - 4096)

struct uring_params {
	u32 sq_entries, cq_entries, flags, sq_thread_cpu, sq_thread_idle, features, wq_fd, resv[3];
	struct { u32 head, tail, ring_mask, ring_entries, flags, dropped, array, resv1; u64 addr; } sq;
	struct { u32 head, tail, ring_mask, ring_entries, overflow, cqes, flags, resv1; u64 addr; } cq;
};

static volatile u32 *ring_u32(long base, u32 off)
{
	return (volatile u32 *)(base + off);
}

/* done NOPs through fd, a ring's worth per io_uring_enter, each batch reaped. */
static void ring_nops(long fd, const struct uring_params *p, u32 done)
{
	u64 rlen = p->sq.array + p->sq_entries * 4UL;
	long ring, sqes;
	u32 tail, left = done;

	if (rlen < p->cq.cqes + p->cq_entries * 16UL)
		rlen = p->cq.cqes + p->cq_entries * 16UL;
	ring = mmap6(0, rlen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	sqes = mmap6(0, p->sq_entries * 64UL, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
		     IORING_OFF_SQES);
	if (ring < 0 || sqes < 0)
		rst_fail(ring < 0 ? ring : sqes, "cannot map a new io_uring ring for its NOPs, entries",
			 p->sq_entries);
	tail = *ring_u32(ring, p->sq.tail);
	while (left) {
		u32 k = left < p->sq_entries ? left : p->sq_entries;
		long ret;

		for (u32 i = 0; i < k; i++) {
			u32 idx = (tail + i) & (p->sq_entries - 1);

			blob_memset((char *)sqes + idx * 64UL, 0, 64);	/* IORING_OP_NOP */
			*ring_u32(ring, p->sq.array + idx * 4) = idx;
		}
		tail += k;
		__atomic_store_n(ring_u32(ring, p->sq.tail), tail, __ATOMIC_RELEASE);
		ret = sys_call6(__nr_io_uring_enter, fd, k, k, IORING_ENTER_GETEVENTS, 0, 0);
		if (ret != (long)k)
			rst_fail(ret < 0 ? ret : -5, "io_uring NOPs to bring a new ring to the old "
				 "one's counters failed, done", done - left);
		__atomic_store_n(ring_u32(ring, p->cq.head), *ring_u32(ring, p->cq.tail),
				 __ATOMIC_RELEASE);
		left -= k;
	}
	if (*ring_u32(ring, p->sq.head) != done || *ring_u32(ring, p->cq.tail) != done)
		rst_fail(-5, "a new io_uring ring's counters did not reach", done);
	sys_call2(__nr_munmap, ring, rlen);
	sys_call2(__nr_munmap, sqes, p->sq_entries * 64UL);
}

/* An inaccessible placeholder at [a, a + len), where nothing is: 1, else 0. */
static int placeholder(u64 a, u64 len)
{
	long r = mmap6(a, len, 0 /* PROT_NONE */, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
		       MAP_FIXED_NOREPLACE, -1, 0);

	if (r >= 0 && (u64)r != a)
		sys_call2(__nr_munmap, r, len);
	return r >= 0 && (u64)r == a;
}

/* The free range below lo, down to floor, filled with placeholders: its start. */
static u64 fill_down(u64 lo, u64 floor)
{
	u64 step = 4096;
	int grow = 1;

	while (step >= 4096) {
		if (lo >= floor + step && placeholder(lo - step, step)) {
			lo -= step;
			step = grow && step < (1UL << 45) ? step << 1 : step;
		} else {
			grow = 0;
			step >>= 1;
		}
	}
	return lo;
}

/* The free range above hi, up to ceil, filled likewise: its end. */
static u64 fill_up(u64 hi, u64 ceil)
{
	u64 step = 4096;
	int grow = 1;

	while (step >= 4096) {
		if (hi + step <= ceil && placeholder(hi, step)) {
			hi += step;
			step = grow && step < (1UL << 45) ? step << 1 : step;
		} else {
			grow = 0;
			step >>= 1;
		}
	}
	return hi;
}

/*
 * Mapping m of ring fd at its address. The kernel picks the address of a
 * ring's mapping itself (any address given is refused): each gap it picks
 * instead is filled, but never the wanted range, until it picks that one;
 * then the placeholders go.
 */
static void place_ring_map(long fd, const struct rst_iouring_map *m)
{
	struct { u64 s, e; } holes[RING_MAX_HOLES];
	u32 n = 0;
	long p;

	for (;;) {
		p = mmap6(0, m->len, m->prot, MAP_SHARED, fd, m->pgoff);
		if (p < 0)
			rst_fail(p, "cannot map an io_uring ring again at", m->start);
		if ((u64)p == m->start)
			break;
		sys_call2(__nr_munmap, p, m->len);
		if (((u64)p < m->start + m->len && m->start < (u64)p + m->len) ||
		    n == RING_MAX_HOLES || !placeholder(p, m->len))
			rst_fail(-16, "cannot place an io_uring ring's mapping back (its range taken, "
				 "or too many gaps before it) at", m->start);
		holes[n].s = fill_down(p, (u64)p > m->start ? m->start + m->len : RING_LOW);
		holes[n].e = fill_up(p + m->len, (u64)p < m->start ? m->start : RING_TOP);
		n++;
	}
	for (u32 i = 0; i < n; i++)
		sys_call2(__nr_munmap, holes[i].s, holes[i].e - holes[i].s);
}

/* The bytes of m back in its mapping (made writable for the copy if it is not). */
static void ring_bytes(const struct rst_iouring_map *m)
{
	long ret = 0;

	if (!(m->prot & PROT_WRITE))
		ret = sys_call3(__nr_mprotect, m->start, m->len, m->prot | PROT_WRITE);
	if (ret < 0)
		rst_fail(ret, "cannot make an io_uring ring writable for its bytes at", m->start);
	blob_memcpy((void *)m->start, area(m->data_off), m->len);
	if (!(m->prot & PROT_WRITE))
		ret = sys_call3(__nr_mprotect, m->start, m->len, m->prot);
	if (ret < 0)
		rst_fail(ret, "cannot protect an io_uring ring again at", m->start);
}

/*
 * The SQ index array as identity, through a mapping of the whole SQ ring: a
 * ring made with IORING_SETUP_NO_SQARRAY (liburing's default since 2.6: no
 * setup flag shows) reads SQE tail & mask, as the new ring, which has the
 * array, then does; liburing fills it so once; a program that writes its
 * array writes each slot before it submits it. Its bytes (the app's mapping)
 * may not reach the array, or hold zeros there.
 */
static void ring_sq_identity(long fd, const struct uring_params *p)
{
	u64 rlen = p->sq.array + p->sq_entries * 4UL;
	long ring = mmap6(0, rlen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (ring < 0)
		rst_fail(ring, "cannot map a new io_uring ring for its SQ array, entries",
			 p->sq_entries);
	for (u32 i = 0; i < p->sq_entries; i++)
		*ring_u32(ring, p->sq.array + i * 4) = i;
	sys_call2(__nr_munmap, ring, rlen);
}

static void ring_register(long fd, const struct rst_iouring *g)
{
	long ret = 0;

	if (g->nr_files)
		ret = sys_call4(__nr_io_uring_register, fd, 2 /* IORING_REGISTER_FILES */,
				area(g->files_off), g->nr_files);
	if (ret < 0)
		rst_fail_n(ret, "cannot register the files of the io_uring ring of fd", g->fd);
	if (g->nr_bufs)
		ret = sys_call4(__nr_io_uring_register, fd, 0 /* IORING_REGISTER_BUFFERS */,
				area(g->bufs_off), g->nr_bufs);
	if (ret < 0)
		rst_fail_n(ret, "cannot register the buffers of the io_uring ring of fd", g->fd);
}

static void restore_iouring(const struct rst_iouring *g)
{
	struct rst_iouring_map *m = (struct rst_iouring_map *)area(g->maps_off);
	struct uring_params p;
	long fd, ret;

	blob_memset(&p, 0, sizeof(p));
	p.cq_entries = g->cq_entries;
	p.flags = g->cq_entries != 2 * g->sq_entries ? IORING_SETUP_CQSIZE : 0;
	fd = sys_call2(__nr_io_uring_setup, g->sq_entries, &p);
	if (fd < 0)
		rst_fail_n(fd, "cannot make the io_uring ring of fd", g->fd);
	if (p.sq_entries != g->sq_entries || p.cq_entries != g->cq_entries)
		rst_fail_n(-22, "a new io_uring ring has not the old size, fd", g->fd);
	ring_nops(fd, &p, g->done);
	for (u32 i = 0; i < g->nr_maps; i++)
		place_ring_map(fd, &m[i]);
	for (u32 i = 0; i < g->nr_maps; i++)
		ring_bytes(&m[i]);
	ring_sq_identity(fd, &p);	/* after the bytes, which may cover it */
	ring_register(fd, g);
	if (fd != g->fd) {
		ret = sys_call3(__nr_dup3, fd, g->fd, g->fd_flags);
		if (ret < 0)
			rst_fail_n(ret, "cannot move an io_uring ring to fd", g->fd);
		sys_call1(__nr_close, fd);
	} else if (!g->fd_flags) {
		sys_call3(__nr_fcntl, fd, 2 /* F_SETFD */, 0);
	}
}

static void restore_iourings(void)
{
	struct rst_iouring *g = (struct rst_iouring *)area(A->iourings_off);

	for (u32 i = 0; i < A->nr_iourings; i++)
		restore_iouring(&g[i]);
}

static void restore_memory(void)
{
	struct rst_vma *vmas = (struct rst_vma *)area(A->vmas_off);
	long ret;

	h64_init(&A->pages_whole);
	if (A->uffd_nothp)	/* until restore_uffd: see there */
		sys_call5(__nr_prctl, PR_SET_THP_DISABLE, 1, 0, 0, 0);
	for (u32 i = 0; i < A->nr_vmas; i++) {
		struct rst_vma *v = &vmas[i];
		u64 len = v->end - v->start;
		long prot = v->prot, flags;

		if (v->how == RST_MAP_SKIP)
			continue;
		if (v->premap) {	/* filled before the fork: its pages stay shared */
			ret = sys_call5(__nr_mremap, v->premap, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
					v->start);
			if (ret != (long)v->start)
				rst_fail(ret, "cannot move premapped memory to", v->start);
			continue;
		}
		if (v->nr_runs)
			prot |= PROT_READ | PROT_WRITE;
		flags = MAP_FIXED | (v->flags & (MAP_SHARED | MAP_PRIVATE | MAP_DROPPABLE |
						 MAP_GROWSDOWN | MAP_NORESERVE));
		if (v->how == RST_MAP_ANON)	/* its huge pages, of their size */
			flags |= v->flags & (VMA_MAP_HUGETLB | VMA_MAP_HUGE_MASK);
		if (v->how == RST_MAP_SYSV) {
			map_sysv(vmas, i);
			continue;
		}
		if (v->how == RST_MAP_ANON)
			ret = mmap6(v->start, len, prot, flags | MAP_ANONYMOUS, -1, 0);
		else
			ret = mmap6(v->start, len, prot, flags & ~MAP_ANONYMOUS, v->fd, v->pgoff);
		if (ret != (long)v->start)
			rst_fail(ret, "cannot map VMA at", v->start);
		if (v->madv & (1UL << MADV_HUGEPAGE))
			sys_call3(__nr_madvise, v->start, len, MADV_HUGEPAGE);
	}
	if (A->premap_hi) {	/* the slots of other processes, the reservation's rest */
		ret = sys_call2(__nr_munmap, A->premap_lo, A->premap_hi - A->premap_lo);
		if (ret < 0)
			rst_fail(ret, "cannot unmap the premapped range at", A->premap_lo);
	}
	fill_pages();	/* every VMA is in place: nothing maps over the helper's work */

	for (u32 i = 0; i < A->nr_vmas; i++) {
		struct rst_vma *v = &vmas[i];
		u64 len = v->end - v->start;

		if (v->how == RST_MAP_SKIP)
			continue;
		for (u32 k = 0; k < sizeof(madv_after) / sizeof(madv_after[0]); k++) {
			if (!(v->madv & (1UL << madv_after[k])))
				continue;
			ret = sys_call3(__nr_madvise, v->start, len, madv_after[k]);
			if (ret < 0)
				rst_fail(ret, "cannot madvise VMA at", v->start);
		}
		install_guards(v);
		if ((v->nr_runs || v->premap) &&
		    (v->prot & (PROT_READ | PROT_WRITE)) != (PROT_READ | PROT_WRITE)) {
			ret = sys_call3(__nr_mprotect, v->start, len, v->prot);
			if (ret < 0)
				rst_fail(ret, "cannot mprotect VMA at", v->start);
		}
		if (v->locked) {	/* MLOCK_ONFAULT: locked as faulted in, not populated now */
			ret = v->lock_onfault ? sys_call3(__nr_mlock2, v->start, len, MLOCK_ONFAULT) :
						sys_call2(__nr_mlock, v->start, len);
			if (ret < 0)
				rst_fail(ret, "cannot mlock VMA at", v->start);
		}
	}
	lazy_register();	/* after the madvise and mlock calls: they do not touch lazy VMAs */
	restore_uffd();		/* likewise: a MISSING range locked is refused */
	restore_iourings();	/* every VMA and fd in place: the gaps are the only free room */
}

#define F_ADD_SEALS	1033

static void add_seals(void)
{
	struct rst_seal *s = (struct rst_seal *)area(A->seals_off);

	for (u32 i = 0; i < A->nr_seals; i++) {
		long ret = sys_call3(__nr_fcntl, s[i].fd, F_ADD_SEALS, s[i].seals);

		if (ret < 0)
			rst_fail(ret, "cannot seal memfd with", s[i].seals);
	}
}

/* membarrier(MEMBARRIER_CMD_REGISTER_*) for every registration the process had. */
static void restore_membarrier(void)
{
	for (int bit = 0; bit < 32; bit++) {
		long ret;

		if (!(A->membarrier_mask & (1u << bit)))
			continue;
		ret = sys_call3(__nr_membarrier, 1UL << bit, 0, 0);
		if (ret < 0)
			rst_fail(ret, "cannot register membarrier command", 1UL << bit);
	}
}

/*
 * The process's POSIX locks, after the blob's own fds are closed: closing any
 * fd of a file drops every POSIX lock the process holds on it (SQLite's WAL
 * index is both mapped and locked). Non-blocking: a lock another process took
 * meanwhile fails the restore by name.
 */
static void take_posix_locks(void)
{
	for (u32 i = 0; i < A->nr_locks; i++) {
		struct rst_lock *l = &A->locks[i];
		struct {
			short type, whence;
			long long start, len;
			int pid;
		} fl = { (short)l->type, 0 /* SEEK_SET */, l->start, l->len, 0 };
		long ret = sys_call3(__nr_fcntl, l->fd, 6 /* F_SETLK */, &fl);

		if (ret < 0)
			rst_fail_n(ret, "cannot take back the POSIX lock of fd", l->fd);
	}
}

static void restore_process(void)
{
	long ret;

	/* after the mappings: READ_IMPLIES_EXEC would have made them executable */
	ret = sys_call1(__nr_personality, A->personality);
	if (ret < 0)
		rst_fail(ret, "cannot set personality", A->personality);
	restore_membarrier();

	if (A->has_vdso) {
		ret = sys_call2(__nr_arch_prctl, ARCH_MAP_VDSO_64, A->vdso_start);
		if (ret < 0)
			rst_fail(ret, "cannot map the vdso at", A->vdso_start);
	}
	if (A->has_mm_map) {
		A->mm.auxv = (u64)area(A->auxv_off);
		ret = sys_call5(__nr_prctl, PR_SET_MM, PR_SET_MM_MAP, &A->mm, sizeof(A->mm), 0);
		if (ret < 0)
			rst_fail(ret, "prctl(PR_SET_MM_MAP) failed", (u64)-1);
	}
	for (int sig = 1; sig <= RST_NR_SIGS; sig++) {
		struct rst_sigact *s = &A->sigacts[sig - 1];
		struct k_sigaction ka = { s->handler, s->flags, s->restorer, s->mask };

		if (sig == 9 || sig == 19)
			continue;
		ret = sys_call4(__nr_rt_sigaction, sig, &ka, 0, 8);
		if (ret < 0 && !(ret == -22 && (sig == 32 || sig == 33)))
			rst_fail_n(ret, "cannot restore the action of signal", sig);
	}
	if (A->thp_disabled)
		sys_call5(__nr_prctl, PR_SET_THP_DISABLE, 1, 0, 0, 0);
	/*
	 * mlockall(MCL_FUTURE): every mapping is made (the vdso's too), and only
	 * the mm's default flags change (no MCL_CURRENT). Before the rlimits and
	 * the credentials: root here needs no room under RLIMIT_MEMLOCK.
	 */
	if (A->mlock_future) {
		ret = sys_call1(__nr_mlockall, A->mlock_future);
		if (ret < 0)
			rst_fail(ret, "cannot restore mlockall() flags", A->mlock_future);
	}
	if (A->has_rlimits) {
		for (int i = 0; i < RST_NR_RLIMITS; i++) {
			ret = sys_call4(__nr_prlimit64, 0, i, &A->rlimits[i], 0);
			if (ret < 0)
				rst_fail_n(ret, "cannot restore rlimit", i);
		}
	}
	/* the fds the blob needed: file mappings, exe, pages */
	int *fds = (int *)area(A->close_off);
	for (u32 i = 0; i < A->nr_close; i++)
		sys_call1(__nr_close, fds[i]);
	take_posix_locks();
}

/*
 * The mseal()ed VMAs sealed again: the very last change to the mappings
 * (after the vdso, PR_SET_MM_MAP, madvise, mlock, mprotect), since a sealed
 * VMA can no longer be unmapped, moved, reprotected or madvised away. The
 * restorer area itself is never sealed: memdump unmaps it afterwards.
 */
static void seal_memory(void)
{
	struct rst_vma *vmas = (struct rst_vma *)area(A->vmas_off);

	for (u32 i = 0; i < A->nr_vmas; i++) {
		struct rst_vma *v = &vmas[i];
		long ret;

		if (!v->sealed)
			continue;
		ret = sys_call3(__nr_mseal, v->start, v->end - v->start, 0);
		if (ret < 0)
			rst_fail(ret, "cannot mseal VMA at", v->start);
	}
}

/*
 * A thread with neither no_new_privs nor CAP_SYS_ADMIN in its restored
 * credentials could not install its seccomp filters once they are back: it
 * installs them in the middle of restore_creds(), once its uids and gids are
 * set but while it still has CAP_SYS_ADMIN, and its calls from there on go
 * through them (the dump checked that they are allowed:
 * src/task/seccomp_check.c lists them; keep the two in step).
 */
static int seccomp_before_creds(const struct rst_thread *t)
{
	return t->nr_chain && t->has_creds && !t->creds.no_new_privs &&
	       !(t->creds.cap_eff[0] & (1u << 21 /* CAP_SYS_ADMIN */));
}

static void restore_seccomp(struct rst_thread *t);

static void restore_creds(struct rst_thread *t)
{
	struct rst_creds *c = &t->creds;
	struct cap_header hdr = { 0x20080522, 0 };
	struct cap_data data[2];
	long ret;

	if (!t->has_creds)
		return;
	ret = sys_call2(__nr_setgroups, c->nr_groups, c->groups);
	if (ret < 0)
		rst_fail_n(ret, "setgroups failed for thread", t->tid);
	/* keep the capabilities across the uid change */
	sys_call5(__nr_prctl, PR_SET_SECUREBITS, 1 << SECURE_NO_SETUID_FIXUP, 0, 0, 0);
	ret = sys_call3(__nr_setresgid, c->gid, c->egid, c->sgid);
	if (ret < 0)
		rst_fail_n(ret, "setresgid failed for thread", t->tid);
	sys_call1(__nr_setfsgid, c->fsgid);
	ret = sys_call3(__nr_setresuid, c->uid, c->euid, c->suid);
	if (ret < 0)
		rst_fail_n(ret, "setresuid failed for thread", t->tid);
	sys_call1(__nr_setfsuid, c->fsuid);
	/* the ids are back, CAP_SYS_ADMIN still effective (SECURE_NO_SETUID_FIXUP) */
	if (seccomp_before_creds(t))
		restore_seccomp(t);
	if (sys_call5(__nr_prctl, PR_GET_SECUREBITS, 0, 0, 0, 0) != (long)c->secbits) {
		ret = sys_call5(__nr_prctl, PR_SET_SECUREBITS, c->secbits, 0, 0, 0);
		if (ret < 0)
			rst_fail_n(ret, "cannot restore securebits of thread", t->tid);
	}
	for (int b = 0; b <= CAP_LAST_GUESS; b++) {
		if (c->cap_bnd[b / 32] & (1u << (b % 32)))
			continue;
		ret = sys_call5(__nr_prctl, PR_CAPBSET_DROP, b, 0, 0, 0);
		if (ret < 0 && ret != -22)
			rst_fail_n(ret, "cannot drop bounding capability", b);
	}
	for (int i = 0; i < 2; i++) {
		data[i].effective = c->cap_eff[i];
		data[i].permitted = c->cap_prm[i];
		data[i].inheritable = c->cap_inh[i];
	}
	ret = sys_call2(__nr_capset, &hdr, data);
	if (ret < 0)
		rst_fail_n(ret, "capset failed for thread", t->tid);
	if (c->has_amb) {
		sys_call5(__nr_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
		for (int b = 0; b <= CAP_LAST_GUESS; b++) {
			if (!(c->cap_amb[b / 32] & (1u << (b % 32))))
				continue;
			ret = sys_call5(__nr_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, b, 0, 0);
			if (ret < 0)
				rst_fail_n(ret, "cannot raise ambient capability", b);
		}
	}
	if (c->no_new_privs)
		sys_call5(__nr_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

/* Build the rt_sigframe at the bottom of the thread's stack. */
static struct rt_sigframe *build_frame(struct rst_thread *t)
{
	u64 base = (u64)area(t->stack_top) - RST_STACK_SIZE;
	struct rt_sigframe *f = (struct rt_sigframe *)((base + 63) & ~63UL);
	u8 *fp = (u8 *)(((u64)(f + 1) + 63) & ~63UL);
	struct frame_sigcontext *mc = &f->uc.mc;
	struct rst_gpregs *r = &t->regs;

	blob_memset(f, 0, sizeof(*f));
	f->uc.uc_flags = UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS;
	if (t->has_sas) {
		f->uc.ss_sp = t->sas_sp;
		f->uc.ss_size = t->sas_size;
		f->uc.ss_flags = (s32)t->sas_flags;
	} else {
		f->uc.ss_flags = SIGFRAME_SS_DISABLE;
	}
	mc->r8 = r->r8; mc->r9 = r->r9; mc->r10 = r->r10; mc->r11 = r->r11;
	mc->r12 = r->r12; mc->r13 = r->r13; mc->r14 = r->r14; mc->r15 = r->r15;
	mc->di = r->di; mc->si = r->si; mc->bp = r->bp; mc->bx = r->bx;
	mc->dx = r->dx; mc->ax = r->ax; mc->cx = r->cx; mc->sp = r->sp;
	mc->ip = r->ip; mc->flags = r->flags;
	mc->cs = (unsigned short)r->cs;
	mc->ss = (unsigned short)r->ss;
	f->uc.sigmask = t->blk_sigset;

	if (t->xsave_size >= FP_XSTATE_MIN) {
		blob_memcpy(fp, area(t->xsave_off), t->xsave_size);
		sigframe_xstate_magic(fp, t->xsave_size, sigframe_xgetbv0());
		mc->fpstate = (u64)fp;
		f->uc.uc_flags |= UC_FP_XSTATE;
	}
	return f;
}

/*
 * Policy, priority and nice need CAP_SYS_NICE to go up: set before the
 * credentials. Timer slack after the policy (real-time threads have none).
 */
static void restore_sched(struct rst_thread *t)
{
	struct rst_sched *s = &t->sched;
	unsigned int policy = s->policy & ~SCHED_RESET_ON_FORK;
	int prio = s->prio;
	long ret;

	if (t->has_sched) {
		ret = sys_call3(__nr_setpriority, 0 /* PRIO_PROCESS */, 0, s->nice);
		if (ret < 0)
			rst_fail_n(ret, "cannot set the nice value of thread", t->tid);
		ret = sys_call3(__nr_sched_setscheduler, 0, s->policy, &prio);
		if (ret < 0)
			rst_fail_n(ret, "cannot set the scheduling policy of thread", t->tid);
	}
	if (s->nr_affinity) {
		ret = sys_call3(__nr_sched_setaffinity, 0, s->nr_affinity * 8, s->affinity);
		if (ret < 0)
			rst_fail_n(ret, "cannot set the CPU affinity of thread", t->tid);
	}
	if (s->timer_slack && policy != SCHED_FIFO && policy != SCHED_RR &&
	    policy != SCHED_DEADLINE) {
		ret = sys_call5(__nr_prctl, PR_SET_TIMERSLACK, s->timer_slack, 0, 0, 0);
		if (ret < 0)
			rst_fail_n(ret, "cannot set the timer slack of thread", t->tid);
	}
}

/* The thread's seccomp filters, oldest first; the very last thing before
 * rt_sigreturn, or before its credentials (seccomp_before_creds()). */
static void restore_seccomp(struct rst_thread *t)
{
	struct rst_filter *f = (struct rst_filter *)area(A->filters_off);
	u32 *chain = (u32 *)area(t->chain_off);

	for (u32 k = 0; k < t->nr_chain; k++) {
		struct {
			unsigned short len;
			void *filter;
		} prog = { (unsigned short)f[chain[k]].nr, area(f[chain[k]].insns_off) };
		long flags = f[chain[k]].flags | (t->seccomp_tsync ? SECCOMP_FILTER_FLAG_TSYNC : 0);
		long ret = sys_call3(__nr_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);

		if (ret < 0)
			rst_fail_n(ret, "cannot install a seccomp filter in thread", t->tid);
		if (ret > 0)	/* TSYNC: the tid of a thread that could not take it */
			rst_fail_n(-1, "seccomp TSYNC refused by thread", ret);
	}
}

/*
 * ITIMER_REAL, VIRTUAL, PROF with what was left of them; signals are still
 * blocked. A periodic timer whose signal was pending at the dump reads no
 * time left: the dump stored one interval for it (procattr.c), since a
 * setitimer() with no time left disarms the timer whatever its interval.
 */
static void restore_itimers(void)
{
	for (int w = 0; w < 3 && A->has_itimers; w++) {
		long ret;

		if (!A->itimers[w].vsec && !A->itimers[w].vusec && !A->itimers[w].isec &&
		    !A->itimers[w].iusec)
			continue;
		ret = sys_call3(__nr_setitimer, w, &A->itimers[w], 0);
		if (ret < 0)
			rst_fail_n(ret, "cannot set interval timer", w);
	}
}

/* The kernel's struct sigevent (64 bytes). */
struct k_sigevent {
	u64 value;
	int signo, notify;
	int tid;
	int pad[11];
};

/*
 * POSIX timers, by id: the kernel hands ids out in increasing order, so a
 * timer whose id is still ahead is reached by creating and deleting
 * stand-ins, as CRIU does. Then each is armed with what was left of it.
 */
static void restore_posix_timers(void)
{
	for (u32 i = 0; i < A->nr_ptimers; i++) {
		struct rst_ptimer *p = &A->ptimers[i];
		struct k_sigevent sev;
		int id = -1, steps = 0;
		long ret;

		blob_memset(&sev, 0, sizeof(sev));
		sev.value = p->sival;
		sev.signo = p->signo;
		sev.notify = p->notify;
		sev.tid = p->tid;
		for (;;) {
			ret = sys_call3(__nr_timer_create, p->clock, &sev, &id);
			if (ret < 0)
				rst_fail_n(ret, "cannot create POSIX timer", p->id);
			if (id == p->id)
				break;
			if (id > p->id || ++steps > (1 << 20))
				rst_fail_n(-22, "POSIX timer ids went past timer", p->id);
			sys_call1(__nr_timer_delete, id);
		}
		if (!p->its.vsec && !p->its.vnsec)
			continue;	/* disarmed */
		ret = sys_call4(__nr_timer_settime, id, 0, &p->its, 0);
		if (ret < 0)
			rst_fail_n(ret, "cannot arm POSIX timer", p->id);
	}
}

static void restore_thread(struct rst_thread *t)
{
	long ret;

	sys_call5(__nr_prctl, PR_SET_NAME, t->comm, 0, 0, 0);
	ret = sys_call1(__nr_set_tid_address, t->clear_tid);
	(void)ret;
	if (t->has_robust) {
		ret = sys_call2(__nr_set_robust_list, t->robust, t->robust_len);
		if (ret < 0)
			rst_fail_n(ret, "cannot set the robust list of thread", t->tid);
	}
	if (t->has_rseq) {
		ret = sys_call4(__nr_rseq, t->rseq_ptr, t->rseq_size, 0, t->rseq_sig);
		if (ret < 0)
			rst_fail_n(ret, "cannot register rseq of thread", t->tid);
	}
	restore_sched(t);
	restore_creds(t);	/* seccomp_before_creds(): its filters too */
	/*
	 * a credential change clears the parent-death signal: set it after; the
	 * leader's memdump set (SIGKILL, child.c) goes then, the lifeline watches
	 */
	ret = sys_call5(__nr_prctl, PR_SET_PDEATHSIG, t->pdeath_sig, 0, 0, 0);
	if (ret < 0)
		rst_fail_n(ret, "cannot set the parent-death signal of thread", t->tid);
	__sync_fetch_and_add(&A->nr_creds, 1);
}

/*
 * Queue the pending signals this thread owns: its own, and the process-wide
 * ones for the leader. Every signal is blocked here (memdump forked us so):
 * they are delivered, or stay pending, as the mask rt_sigreturn restores says.
 */
static void queue_signals(struct rst_thread *t, int leader)
{
	struct rst_siginfo *s = (struct rst_siginfo *)area(A->sigs_off);
	struct rst_thread *l = (struct rst_thread *)area(A->threads_off);
	u64 pid = l->ns_tid ? l->ns_tid : l->tid;	/* as the process sees itself */
	u64 self = t->ns_tid ? t->ns_tid : t->tid;
	long ret;

	for (u32 i = 0; i < A->nr_sigs; i++) {
		int sig = *(int *)s[i].info;	/* si_signo */

		if (s[i].tid == 0 && leader)
			ret = sys_call3(__nr_rt_sigqueueinfo, pid, sig, s[i].info);
		else if (s[i].tid == t->tid)
			ret = sys_call4(__nr_rt_tgsigqueueinfo, pid, self, sig, s[i].info);
		else
			continue;
		if (ret < 0)
			rst_fail_n(ret, "cannot queue pending signal", sig);
	}
}

struct blob_pollfd {
	int fd;
	short events, revents;
};

#define POLLIN		1

/* memdump's pidfd (A->lifeline_fd) is readable: memdump is gone. */
static int memdump_gone(void)
{
	struct blob_pollfd p = { A->lifeline_fd, POLLIN, 0 };
	struct blob_timespec now = { 0, 0 };

	if (A->lifeline_fd < 0)
		return 0;
	return sys_call5(__nr_ppoll, &p, 1, &now, 0, 8) == 1 && (p.revents & POLLIN);
}

/*
 * Wait for memdump to let the threads go (A->go). The leader (watch) looks
 * at memdump's pidfd every 100 ms: memdump gone before it let them go (killed,
 * or it failed and could not kill us), no code of the process may run half
 * restored: the process exits (src/restore/abort.c).
 */
static void wait_go(int watch)
{
	struct blob_timespec t = { 0, 100 * 1000 * 1000 };

	while (!READ_ONCE(A->go)) {
		if (watch && memdump_gone())
			for (;;)
				sys_call1(__nr_exit_group, 127);
		sys_call4(__nr_futex, (u32 *)&A->go, FUTEX_WAIT, 0, watch ? &t : 0);
	}
}

/* The tests' fault point rst-fill (memory filled): fail there, or stall there. */
static void fault_point_fill(void)
{
	if (A->fault == RST_BLOB_FAULT_FAIL)
		rst_fail(-5 /* EIO */, "fault injected at rst-fill (MEMDUMP_FAULT_FAIL)", (u64)-1);
	if (A->fault == RST_BLOB_FAULT_STALL) {
		wait_go(1);
		sys_call1(__nr_exit_group, 127);	/* memdump gave up */
	}
}

static void __attribute__((noreturn)) finish_thread(struct rst_thread *t, int leader)
{
	struct rt_sigframe *f;
	long ret;

	queue_signals(t, leader);
	if (leader) {
		/* creds of other threads reset dumpable: set it after all of them */
		while (READ_ONCE(A->nr_creds) < A->nr_threads)
			sys_call0(__nr_sched_yield);
		sys_call5(__nr_prctl, PR_SET_DUMPABLE, A->dumpable, 0, 0, 0);
		restore_itimers();
		restore_posix_timers();
	}
	f = build_frame(t);
	if (__sync_add_and_fetch(&A->nr_parked, 1) == A->nr_threads) {
		WRITE_ONCE(A->stage, RST_STAGE_PARKED);
		sys_futex_wake((u32 *)&A->stage);
	}
	wait_go(leader);
	if (READ_ONCE(A->go) != 1)
		sys_call1(__nr_exit, 0);	/* memdump gave up: it kills us */

	ret = sys_call2(__nr_arch_prctl, ARCH_SET_FS, t->regs.fs_base);
	if (ret < 0)
		rst_fail_n(ret, "cannot set fs_base of thread", t->tid);
	ret = sys_call2(__nr_arch_prctl, ARCH_SET_GS, t->regs.gs_base);
	if (ret < 0)
		rst_fail_n(ret, "cannot set gs_base of thread", t->tid);
	if (!seccomp_before_creds(t))
		restore_seccomp(t);
	if (t->seccomp_strict) {	/* read, write, exit and rt_sigreturn from here on */
		ret = sys_call5(__nr_prctl, PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0);
		if (ret < 0)
			rst_fail_n(ret, "cannot enter seccomp strict mode in thread", t->tid);
	}
	__asm__ volatile(
		"mov	%0, %%rsp\n"
		"mov	$15, %%eax\n"
		"syscall\n"
		"ud2\n"
		: : "r"((u64)f + 8) : "memory");
	__builtin_unreachable();
}

static void thread_main(void *arg)
{
	struct rst_thread *t = arg;

	restore_thread(t);
	finish_thread(t, 0);
}

/* [a, b) unmapped, but what lies in [k0, k1). */
static void unmap_but(u64 a, u64 b, u64 k0, u64 k1)
{
	long ret;

	if (k0 < k1 && k0 < b && k1 > a) {
		unmap_but(a, k0 > a ? k0 : a, 0, 0);
		unmap_but(k1 < b ? k1 : b, b, 0, 0);
		return;
	}
	if (a >= b)
		return;
	ret = sys_call2(__nr_munmap, a, b - a);
	if (ret < 0)
		rst_fail(ret, "cannot unmap memdump at", a);
}

/* Everything but the area and the premapped range. */
static void unmap_memdump(void)
{
	unmap_but(0, A->area_start, A->premap_lo, A->premap_hi);
	unmap_but(A->area_start + A->area_size, TASK_SIZE_47, A->premap_lo, A->premap_hi);
}

void blob_main(void *arg);
void blob_main(void *arg)
{
	struct rst_thread *threads;
	long ret;

	A = arg;
	threads = (struct rst_thread *)area(A->threads_off);
	A->syscall_insn = (u64)rst_syscall_insn;
	WRITE_ONCE(A->stage, RST_STAGE_BLOB);

	/* Nothing of memdump is needed any more (but the premapped memory). */
	unmap_memdump();

	A->fill_us = now_us();
	restore_memory();
	add_seals();
	A->fill_us = now_us() - A->fill_us;
	fault_point_fill();
	restore_process();
	seal_memory();

	for (u32 i = 1; i < A->nr_threads; i++) {
		struct rst_thread *t = &threads[i];
		u32 tid[2] = { t->ns_tid ? t->ns_tid : t->tid, t->tid };	/* pid_t, innermost first */
		struct clone_args ca;

		blob_memset(&ca, 0, sizeof(ca));
		ca.flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
			   CLONE_SYSVSEM;
		ca.stack = (u64)area(t->stack_top) - RST_STACK_SIZE;
		ca.stack_size = RST_STACK_SIZE;
		ca.set_tid = (u64)&tid;
		ca.set_tid_size = t->ns_tid ? 2 : 1;
		ret = rst_clone3(&ca, sizeof(ca), thread_main, t);
		if (ret < 0)
			rst_fail_n(ret, "cannot create thread", t->tid);
	}
	restore_thread(&threads[0]);
	finish_thread(&threads[0], 1);
}
