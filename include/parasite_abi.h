/*
 * What the dumper and the parasite share: the layout of the parasite's area,
 * a memfd mapped both in the target and in the dumper.
 *
 *   [ blob code | struct parasite_args | iovec array ... | stack ]
 *
 * The dumper writes a command and bumps cmd_seq (a futex); the parasite runs
 * it, stores ret, copies cmd_seq into ack_seq and wakes it. Addresses in the
 * iovec array are the target's own.
 */
#ifndef MEMDUMP_PARASITE_ABI_H
#define MEMDUMP_PARASITE_ABI_H

#define PARASITE_CMD_VMSPLICE	1	/* vmsplice iovecs into pipe_fd, GIFT */

#define PARASITE_ARGS_OFF	(64UL << 10)	/* blob code fits below */
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
};

#endif
