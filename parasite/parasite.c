/*
 * The parasite: runs inside the target, on a stack in memory shared with the
 * dumper, and serves commands until the dumper stops it with PTRACE_INTERRUPT
 * (the dumper then puts the thread's registers back; nothing here unwinds).
 *
 * Its main command moves the target's pages into a pipe with vmsplice and
 * SPLICE_F_GIFT: page references, no copy. The dumper drains the pipe into
 * the pages image while the target is still frozen. The other reads the
 * leader's state (signal actions, timers, prctl values) in one go. The
 * other threads run it once each, for their own state (thread_main).
 *
 * If the dumper dies (SIGKILL, say) the kernel detaches the thread, which
 * runs on here. The parasite watches the pipe while it waits; once no
 * reader is left it cures itself (see parasite_abi.h) and the thread goes on
 * from where the dump froze it.
 */
#include "sys.h"
#include "parasite_abi.h"
#include "sigframe.h"

#define UIO_MAXIOV	1024
#define __nr_getitimer	36
#define __nr_membarrier	324
#define PR_GET_PDEATHSIG	2
#define PR_GET_DUMPABLE		3
#define PR_GET_TIMERSLACK	30
#define PR_GET_SECUREBITS	27
#define PR_GET_CHILD_SUBREAPER	37
#define PR_GET_TID_ADDRESS	40
#define MEMBARRIER_CMD_GET_REGISTRATIONS	(1 << 9)
#define __nr_io_uring_register	427
#define IORING_REGISTER_FILES	2
#define IORING_REGISTER_USE_REGISTERED_RING	(1U << 31)
#define IO_RINGFD_REG_MAX	16
#define EFAULT	14
#define EACCES	13
#define EEXIST	17
#define SIGPIPE		13
#define POLLIN		0x001
#define POLLERR		0x008

struct blob_pollfd {
	s32 fd;
	short events;
	short revents;
};

static long vmsplice_all(struct parasite_args *a, struct blob_iovec *iov, u64 nr)
{
	while (nr) {
		u64 batch = nr < UIO_MAXIOV ? nr : UIO_MAXIOV;
		long n = sys_call4(__nr_vmsplice, a->pipe_fd, iov, batch, a->splice_flags);

		if (n < 0)
			return n;
		WRITE_ONCE(a->bytes_done, a->bytes_done + n);
		/* Skip what was taken; a partial write leaves the rest of one iovec. */
		while (nr && (u64)n >= iov->len) {
			n -= iov->len;
			iov++;
			nr--;
		}
		if (nr && n) {
			iov->base = (char *)iov->base + n;
			iov->len -= n;
		}
	}
	return 0;
}

static long prctl_get(long option, void *out)
{
	return sys_call5(__nr_prctl, option, out, 0, 0, 0);
}

/*
 * The io_uring rings this thread registered by index, which no fd may show.
 * IORING_REGISTER_FILES without its array changes nothing: it fails EFAULT
 * once it found a ring at the index (EEXIST: another thread is its only
 * submitter; EACCES: the ring is restricted), EBADF for an empty index,
 * EINVAL when the thread never used io_uring (ENOSYS: no io_uring).
 */
static unsigned long ring_fds(void)
{
	unsigned long mask = 0;

	for (int i = 0; i < IO_RINGFD_REG_MAX; i++) {
		long r = sys_call4(__nr_io_uring_register, i,
				   IORING_REGISTER_FILES | IORING_REGISTER_USE_REGISTERED_RING, 0, 0);

		if (r == -EFAULT || r == -EEXIST || r == -EACCES)
			mask |= 1UL << i;
	}
	return mask;
}

/* What only the calling thread can tell (the leader's, or another thread's). */
static void read_thread(struct parasite_thread_state *s)
{
	s->tid_address_ret = prctl_get(PR_GET_TID_ADDRESS, &s->tid_address);
	s->altstack_ret = sys_call2(__nr_sigaltstack, 0, &s->altstack);
	s->pdeathsig_ret = prctl_get(PR_GET_PDEATHSIG, &s->pdeathsig);
	s->timerslack = prctl_get(PR_GET_TIMERSLACK, 0);
	s->securebits = prctl_get(PR_GET_SECUREBITS, 0);
	s->ring_fds = ring_fds();
}

/* PARASITE_CMD_STATE: the timers first, before the blob's own CPU time counts. */
static long read_state(struct parasite_state *s)
{
	for (int w = 0; w < 3; w++)
		s->itimer_ret[w] = sys_call2(__nr_getitimer, w, &s->itimer[w]);
	for (int sig = 1; sig <= PARASITE_NR_SIGS; sig++)
		s->sa_ret[sig - 1] = sig == 9 || sig == 19 ? -22 :
			sys_call4(__nr_rt_sigaction, sig, 0, &s->sa[sig - 1], 8);
	s->brk = sys_call1(__nr_brk, 0);
	s->dumpable = prctl_get(PR_GET_DUMPABLE, 0);
	s->securebits = prctl_get(PR_GET_SECUREBITS, 0);
	s->subreaper_ret = prctl_get(PR_GET_CHILD_SUBREAPER, &s->subreaper);
	s->membarrier = sys_call3(__nr_membarrier, MEMBARRIER_CMD_GET_REGISTRATIONS, 0, 0);
	read_thread(&s->leader);
	return 0;
}

static long run(struct parasite_args *a)
{
	struct blob_iovec *iov = (struct blob_iovec *)a->iov;

	switch (a->cmd) {
	case PARASITE_CMD_VMSPLICE:
		a->bytes_done = 0;
		return vmsplice_all(a, iov, a->nr_iov);
	case PARASITE_CMD_STATE:
		blob_memset((void *)a->iov, 0, sizeof(struct parasite_state));
		return read_state((struct parasite_state *)a->iov);
	}
	return -22; /* EINVAL */
}

static u64 sigpipe_bit(void)
{
	return 1UL << (SIGPIPE - 1);
}

static u64 pending_signals(void)
{
	u64 set = 0;

	sys_call2(__nr_rt_sigpending, &set, sizeof(set));
	return set;
}

/*
 * Sleep until the bell rings (a command) or the dumper is gone: it holds the
 * only read end of the page pipe, whose write end then polls POLLERR. ppoll
 * without a timeout leaves the thread's syscall restart block alone.
 * Returns 1 if the dumper is gone.
 */
static int wait_bell(struct parasite_args *a)
{
	struct blob_pollfd p[2] = { { a->bell_fd, POLLIN, 0 }, { a->pipe_fd, 0, 0 } };
	u64 count;

	if (sys_call5(__nr_ppoll, p, 2, 0, 0, 8) < 0)
		return 0;
	if (p[1].revents & POLLERR)
		return 1;
	if (p[0].revents & POLLIN)
		sys_call3(__nr_read, a->bell_fd, &count, sizeof(count));
	return 0;
}

/*
 * Close the pipe, take back the SIGPIPE a write into it raised (unless the
 * thread had one pending already), unmap the area's tail, which holds this
 * stack, and return home through the leader's frame (parasite_abi.h).
 */
static __attribute__((noreturn)) void self_cure(struct parasite_args *a, u64 pending_before)
{
	u64 set = sigpipe_bit();
	struct blob_timespec now = { 0, 0 };

	WRITE_ONCE(*(u32 *)a->gone, 1);		/* the other threads home first */
	sys_futex_wake((u32 *)a->gone);
	sys_call1(__nr_close, a->pipe_fd);
	sys_call1(__nr_close, a->bell_fd);
	if (a->rseq_len)
		sys_call4(__nr_rseq, a->rseq, a->rseq_len, 0, a->rseq_sig);
	if (!(pending_before & set) && (pending_signals() & set))
		sys_call4(__nr_rt_sigtimedwait, &set, 0, &now, sizeof(set));
	{
		register long tail asm("rdi") = (long)a->tail;
		register long len asm("rsi") = (long)a->tail_len;
		register long sp asm("rdx") = (long)a->cure_sp;

		__asm__ volatile(
			"mov	$11, %%eax\n"	/* munmap(tail, len) */
			"syscall\n"
			"mov	%%rdx, %%rsp\n"
			"mov	$15, %%eax\n"	/* rt_sigreturn */
			"syscall\n"
			"ud2\n"
			: : "r"(tail), "r"(len), "r"(sp) : "memory", "rax", "rcx", "r11");
	}
	__builtin_unreachable();
}

/* Home through the thread's own frame: rt_sigreturn with %rsp at it + 8. */
static __attribute__((noreturn)) void go_home(unsigned long cure_sp)
{
	register long sp asm("rdx") = (long)cure_sp;

	__asm__ volatile(
		"mov	%%rdx, %%rsp\n"
		"mov	$15, %%eax\n"	/* rt_sigreturn */
		"syscall\n"
		"ud2\n"
		: : "r"(sp) : "memory", "rax", "rcx", "r11");
	__builtin_unreachable();
}

/* A thread but the leader (parasite_abi.h): its state, then wait to be taken back. */
static __attribute__((noreturn)) void thread_main(struct parasite_thread *t)
{
	u32 *gone = (u32 *)t->gone;

	read_thread(&t->st);
	barrier();
	WRITE_ONCE(t->done, 1);
	sys_futex_wake(&t->done);
	while (!READ_ONCE(*gone))
		sys_futex_wait(gone, 0);
	go_home(t->cure_sp);
}

void blob_main(struct parasite_args *a, struct parasite_thread *t)
{
	u64 pending_before;

	if (t)
		thread_main(t);
	pending_before = pending_signals();

	for (;;) {
		u32 seq = READ_ONCE(a->cmd_seq);

		if (seq == READ_ONCE(a->ack_seq)) {
			if (wait_bell(a))
				self_cure(a, pending_before);
			continue;
		}
		a->ret = (int)run(a);
		barrier();
		WRITE_ONCE(a->ack_seq, seq);
		sys_futex_wake(&a->ack_seq);
	}
}
