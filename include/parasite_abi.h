/*
 * What the dumper and the parasite share: the layout of the parasite's area,
 * a memfd mapped both in the target and in the dumper.
 *
 *   [ blob code | cure frame | struct parasite_args | iovec array ... | stack ]
 *
 * The dumper writes a command and bumps cmd_seq (a futex); the parasite runs
 * it, stores ret, copies cmd_seq into ack_seq and wakes it. Addresses in the
 * iovec array are the target's own.
 *
 * Self-cure: the cure frame is an rt_sigframe holding the thread's own
 * registers, signal mask and FPU state. Should the dumper die, its end of the
 * page pipe closes; the parasite sees that, closes the pipe and returns into
 * the thread through rt_sigreturn. Where the process's code has the two
 * gadgets `syscall; ret` and `mov $15, %rax; syscall` (glibc and musl have
 * both), the frame is first copied to stack_frame, below the thread's red
 * zone as the kernel places a signal frame, and the parasite unmaps all of
 * its area by jumping to the first gadget with %rsp at the frame, whose
 * pretcode is the second. Without them, the first keep_len bytes (the code
 * running and the frame) stay mapped.
 */
#ifndef MEMDUMP_PARASITE_ABI_H
#define MEMDUMP_PARASITE_ABI_H

#define PARASITE_CMD_VMSPLICE	1	/* vmsplice iovecs into pipe_fd, GIFT */

#define PARASITE_FRAME_OFF	4096UL		/* blob code fits below */
#define PARASITE_ARGS_OFF	(64UL << 10)	/* the cure frame fits below */
#define PARASITE_IOV_OFF	(PARASITE_ARGS_OFF + 4096)
#define PARASITE_IOV_MAX	(256UL << 10)	/* iovecs per command */
#define PARASITE_STACK_SIZE	(64UL << 10)
#define PARASITE_AREA_SIZE	(PARASITE_IOV_OFF + PARASITE_IOV_MAX * 16 + PARASITE_STACK_SIZE)

struct parasite_args {
	unsigned int	cmd_seq;
	unsigned int	ack_seq;
	unsigned int	cmd;
	int		ret;		/* 0 or -errno */
	int		pipe_fd;	/* in the target */
	unsigned int	splice_flags;
	unsigned long	nr_iov;		/* at PARASITE_IOV_OFF */
	unsigned long	bytes_done;	/* progress of the current command */
	unsigned long	alive_ns;	/* how often to look for the dumper */
	unsigned long	area;		/* the area's address in the target */
	unsigned long	frame_len;	/* of the cure frame, at PARASITE_FRAME_OFF */
	unsigned long	stack_frame;	/* where it goes on the stack, or 0 */
	unsigned long	syscall_ret;	/* gadget addresses in the target */
};

#endif
