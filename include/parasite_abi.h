/*
 * What the dumper and the parasite share: the layout of the parasite's area,
 * a memfd mapped both in the target and in the dumper.
 *
 *   [ blob code ... trampoline | a cure frame per thread |
 *     struct parasite_args + scratch | iovec array | stack ]
 *
 * The dumper writes a command, bumps cmd_seq and rings bell_fd (an eventfd);
 * the parasite runs it, stores ret, copies cmd_seq into ack_seq and wakes it
 * (a futex). Addresses in the iovec array are the target's own. The parasite
 * sleeps in ppoll, not in a futex wait with a timeout, which would replace
 * the thread's syscall restart block (a frozen nanosleep would resume
 * wrong).
 *
 * Cure frames: an rt_sigframe per thread holding the thread's own registers
 * (as at the freeze), signal mask and FPU state, so that a thread can always
 * go home, whenever the dumper dies:
 *  - A remote syscall runs on the trampoline: `syscall`, then rt_sigreturn
 *    with %rsp at the frame (%r12 + 8). The dumper stops the thread at the
 *    syscall's exit and never lets it reach the sigreturn; if the dumper
 *    died, the kernel detaches the thread and it returns home.
 *  - The blob waits for commands in ppoll on the bell and the page pipe, whose
 *    read end closes when the dumper dies (POLLERR). The blob then closes the pipe, takes back
 *    the SIGPIPE a write into it raised, unmaps the area but its head (code
 *    and frames, which other threads may still be returning through) and
 *    returns home through the leader's frame.
 * What is left (the head) memdump's parent process unmaps once no thread
 * runs in it (infect_reclaim).
 */
#ifndef MEMDUMP_PARASITE_ABI_H
#define MEMDUMP_PARASITE_ABI_H

#define PARASITE_CMD_VMSPLICE	1	/* vmsplice iovecs into pipe_fd, GIFT */
#define PARASITE_CMD_STATE	2	/* the leader's state into struct parasite_state at iov */

#define PARASITE_CODE_SIZE	4096UL		/* blob code and the trampoline */
#define PARASITE_TRAMPOLINE_OFF	(PARASITE_CODE_SIZE - 16)
#define PARASITE_GONE_OFF	(PARASITE_TRAMPOLINE_OFF - 16)	/* u32: the dumper is gone */
#define PARASITE_FRAMES_OFF	PARASITE_CODE_SIZE
#define PARASITE_ARGS_SIZE	4096UL		/* struct parasite_args, then scratch */
#define PARASITE_SCRATCH_OFF	2048UL		/* from the args */
#define PARASITE_IOV_MAX	(256UL << 10)	/* iovecs per command */
#define PARASITE_STACK_SIZE	(64UL << 10)
/* The area's size past the frames (frames_len: page-rounded, see infect/). */
#define PARASITE_TAIL_SIZE	(PARASITE_ARGS_SIZE + PARASITE_IOV_MAX * 16 + PARASITE_STACK_SIZE)

struct parasite_args {
	unsigned int	cmd_seq;
	unsigned int	ack_seq;
	unsigned int	cmd;
	int		ret;		/* 0 or -errno */
	int		pipe_fd;	/* in the target */
	int		bell_fd;	/* in the target */
	unsigned int	splice_flags;
	unsigned long	nr_iov;		/* at iov */
	unsigned long	bytes_done;	/* progress of the current command */
	unsigned long	iov;		/* the iovec array, in the target */
	unsigned long	tail;		/* args and what follows, in the target */
	unsigned long	tail_len;	/* what self-cure unmaps */
	unsigned long	cure_sp;	/* the leader's frame + 8 */
	unsigned long	rseq;		/* the leader's rseq area, unregistered while */
	unsigned int	rseq_len;	/* the blob runs (the kernel would write it), */
	unsigned int	rseq_sig;	/* registered again on the way home */
	unsigned long	gone;		/* at PARASITE_GONE_OFF: set, woken, by self-cure */
};

/*
 * What PARASITE_CMD_STATE reads in the leader, one system call each, in
 * one command instead of one remote call each (some 75 round trips through
 * ptrace while the target is frozen). Every value comes with what its call
 * returned: the dumper judges them as it judged its remote calls. Written
 * at iov (the iovec array is free while no vmsplice runs).
 */
#define PARASITE_NR_SIGS	64

struct parasite_sigact {
	unsigned long	handler, flags, restorer, mask;
};

struct parasite_itimer {
	long		isec, iusec, vsec, vusec;	/* struct itimerval */
};

struct parasite_stack {
	unsigned long	sp;
	int		flags;
	unsigned long	size;				/* stack_t */
};

/* What only a thread itself can tell: each thread's, the leader's too. */
struct parasite_thread_state {
	long			tid_address_ret;	/* PR_GET_TID_ADDRESS */
	unsigned long		tid_address;
	long			altstack_ret;		/* sigaltstack(NULL, &ss) */
	struct parasite_stack	altstack;
	long			pdeathsig_ret;		/* PR_GET_PDEATHSIG */
	int			pdeathsig;
	long			timerslack;		/* PR_GET_TIMERSLACK */
	long			securebits;		/* PR_GET_SECUREBITS: a thread's own
							 * (creds are per thread) */
	unsigned long		ring_fds;		/* io_uring rings registered by index
							 * (IORING_REGISTER_RING_FDS): a bit each */
};

struct parasite_state {
	/* the process's */
	long			itimer_ret[3];		/* getitimer: REAL, VIRTUAL, PROF */
	struct parasite_itimer	itimer[3];
	long			sa_ret[PARASITE_NR_SIGS];	/* rt_sigaction(sig, NULL, &sa) */
	struct parasite_sigact	sa[PARASITE_NR_SIGS];
	long			brk;			/* brk(0) */
	long			dumpable;		/* PR_GET_DUMPABLE */
	long			securebits;		/* PR_GET_SECUREBITS */
	long			subreaper_ret;		/* PR_GET_CHILD_SUBREAPER */
	int			subreaper;
	long			membarrier;		/* MEMBARRIER_CMD_GET_REGISTRATIONS */
	struct parasite_thread_state	leader;		/* the leader thread's */
};

/*
 * The other threads' state, all of them at once: each runs the blob from
 * its entry with %rsi at its slot, which follows its cure frame in the
 * area's head (self-cure never unmaps it) and ends with the thread's stack.
 * The thread reads its state, sets done and wakes the dumper, then sleeps
 * in a futex wait without a timeout (its restart block stays its own) on
 * the word at PARASITE_GONE_OFF until the dumper interrupts it; should the
 * dumper die, the leader's self-cure sets that word and wakes it, and it
 * returns home through its frame.
 */
#define PARASITE_THREAD_SLOT	2048UL

struct parasite_thread {
	unsigned int			done;		/* futex: 1 once st is read */
	unsigned int			pad;
	unsigned long			gone;		/* PARASITE_GONE_OFF, in the target */
	unsigned long			cure_sp;	/* this thread's frame + 8 */
	struct parasite_thread_state	st;
};

#endif
