/*
 * The parasite: runs inside the target, on a stack in memory shared with the
 * dumper, and serves commands until the dumper stops it with PTRACE_INTERRUPT
 * (the dumper then puts the thread's registers back; nothing here unwinds).
 *
 * Its one command moves the target's pages into a pipe with vmsplice and
 * SPLICE_F_GIFT: page references, no copy. The dumper drains the pipe into
 * the pages image while the target is still frozen.
 */
#include "sys.h"
#include "parasite_abi.h"

#define UIO_MAXIOV	1024

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

void blob_main(struct parasite_args *a)
{
	for (;;) {
		u32 seq = READ_ONCE(a->cmd_seq);

		if (seq == READ_ONCE(a->ack_seq)) {
			sys_futex_wait(&a->cmd_seq, seq);
			continue;
		}
		a->ret = (int)run(a);
		barrier();
		WRITE_ONCE(a->ack_seq, seq);
		sys_futex_wake(&a->ack_seq);
	}
}
