/*
 * The parasite: runs inside the target, on a stack in memory shared with the
 * dumper, and serves commands until the dumper stops it with PTRACE_INTERRUPT
 * (the dumper then puts the thread's registers back; nothing here unwinds).
 *
 * Its one command moves the target's pages into a pipe with vmsplice and
 * SPLICE_F_GIFT: page references, no copy. The dumper drains the pipe into
 * the pages image while the target is still frozen.
 *
 * If the dumper dies (SIGKILL, say) the kernel detaches the thread, which
 * runs on here. The parasite looks at the pipe between commands; once no
 * reader is left it cures itself (see parasite_abi.h) and the thread goes on
 * from where the dump froze it.
 */
#include "sys.h"
#include "parasite_abi.h"
#include "sigframe.h"

#define UIO_MAXIOV	1024
#define SIGPIPE		13
#define POLLOUT		0x004
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

static long run(struct parasite_args *a)
{
	struct blob_iovec *iov = (struct blob_iovec *)((char *)a - PARASITE_ARGS_OFF +
						       PARASITE_IOV_OFF);

	switch (a->cmd) {
	case PARASITE_CMD_VMSPLICE:
		a->bytes_done = 0;
		return vmsplice_all(a, iov, a->nr_iov);
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

/* The dumper holds the only read end of the page pipe. */
static int dumper_gone(struct parasite_args *a)
{
	struct blob_pollfd p = { a->pipe_fd, POLLOUT, 0 };

	return sys_call3(__nr_poll, &p, 1, 0) == 1 && (p.revents & POLLERR);
}

static struct rt_sigframe *cure_frame(struct parasite_args *a)
{
	return (struct rt_sigframe *)((char *)a - PARASITE_ARGS_OFF + PARASITE_FRAME_OFF);
}

/* Unmap the whole area through the syscall_ret gadget; its ret pops the
 * frame's pretcode, the rt_sigreturn gadget. */
static __attribute__((noreturn)) void return_from_stack(struct parasite_args *a)
{
	blob_memcpy((void *)a->stack_frame, cure_frame(a), a->frame_len);
	{
		register long area asm("rdi") = (long)a->area;
		register long len asm("rsi") = (long)PARASITE_AREA_SIZE;
		register long sp asm("rdx") = (long)a->stack_frame;
		register long gadget asm("r8") = (long)a->syscall_ret;

		__asm__ volatile(
			"mov	%%rdx, %%rsp\n"
			"mov	$11, %%eax\n"	/* munmap(area, len) */
			"jmp	*%%r8\n"
			: : "r"(area), "r"(len), "r"(sp), "r"(gadget) : "memory");
	}
	__builtin_unreachable();
}

/* Unmap the area but its head, which holds this code and the frame. */
static __attribute__((noreturn)) void return_from_area(struct parasite_args *a)
{
	u64 keep = (PARASITE_FRAME_OFF + a->frame_len + 4095) & ~4095UL;
	register long rest asm("rdi") = (long)(a->area + keep);
	register long len asm("rsi") = (long)(PARASITE_AREA_SIZE - keep);
	register long sp asm("rdx") = (long)cure_frame(a) + 8;

	__asm__ volatile(
		"mov	$11, %%eax\n"	/* munmap(rest, len) */
		"syscall\n"
		"mov	%%rdx, %%rsp\n"
		"mov	$15, %%eax\n"	/* rt_sigreturn */
		"syscall\n"
		"ud2\n"
		: : "r"(rest), "r"(len), "r"(sp) : "memory", "rax", "rcx", "r11");
	__builtin_unreachable();
}

/*
 * Close the pipe, take back the SIGPIPE a write into it raised (unless the
 * thread had one pending already) and return into the thread (see
 * parasite_abi.h). Nothing after the munmap touches the area.
 */
static __attribute__((noreturn)) void self_cure(struct parasite_args *a, u64 pending_before)
{
	u64 set = sigpipe_bit();
	struct blob_timespec now = { 0, 0 };

	sys_call1(__nr_close, a->pipe_fd);
	if (!(pending_before & set) && (pending_signals() & set))
		sys_call4(__nr_rt_sigtimedwait, &set, 0, &now, sizeof(set));
	if (a->stack_frame)
		return_from_stack(a);
	return_from_area(a);
}

/* The thread's alternate signal stack goes into the cure frame as it is. */
static void frame_altstack(struct parasite_args *a)
{
	sys_call2(__nr_sigaltstack, 0, &cure_frame(a)->uc.ss_sp);
}

void blob_main(struct parasite_args *a)
{
	u64 pending_before = pending_signals();

	frame_altstack(a);
	for (;;) {
		u32 seq = READ_ONCE(a->cmd_seq);

		if (seq == READ_ONCE(a->ack_seq)) {
			sys_futex_wait_ns(&a->cmd_seq, seq, a->alive_ns);
			if (dumper_gone(a))
				self_cure(a, pending_before);
			continue;
		}
		a->ret = (int)run(a);
		barrier();
		WRITE_ONCE(a->ack_seq, seq);
		sys_futex_wake(&a->ack_seq);
	}
}
