/*
 * The dumper's side of the parasite: put it into the target, give it work,
 * take it out again.
 *
 * Infection, all by remote system calls in the leader: memfd_create,
 * ftruncate, mmap (shared, rwx) of the parasite's area, and pipe2 for the
 * page pipe. The dumper takes the memfd and the pipe's read end with
 * pidfd_getfd, maps the same area, copies the blob in, and starts the leader
 * at the blob with a stack in the area. The target's fds used for this are
 * closed again before the parasite runs, except the pipe's write end.
 *
 * Cure: PTRACE_INTERRUPT the leader out of the parasite's futex wait, close
 * the pipe and unmap the area remotely; release_all() puts back registers.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "blobs.h"
#include "common.h"
#include "infect/infect.h"
#include "infect/seize.h"
#include "kernel_uapi.h"
#include "log.h"
#include "parasite_abi.h"

#define SCRATCH_OFF	(PARASITE_ARGS_OFF + 2048)	/* remote syscall buffers */
#define PIPE_SIZE	(32 << 20)

struct parasite {
	uint64_t remote;	/* area in the target */
	uint8_t *local;		/* the same area here */
	int pipe_wr_remote;	/* page pipe's write end, in the target */
	int pipe_rd;		/* its read end, here */
	size_t pipe_size;
	bool running;		/* the leader executes the blob */
};

static struct parasite_args *args_of(struct parasite *p)
{
	return (struct parasite_args *)(p->local + PARASITE_ARGS_OFF);
}

uint64_t parasite_scratch(struct infect_ctx *c, void **local)
{
	*local = c->parasite->local + SCRATCH_OFF;
	return c->parasite->remote + SCRATCH_OFF;
}

static int rsys(struct infect_ctx *c, long nr, long *ret, long a1, long a2, long a3, long a4,
		long a5, long a6)
{
	int err = infect_syscall(c, 0, nr, ret, a1, a2, a3, a4, a5, a6);

	if (!err && *ret < 0 && *ret > -4096)
		return fail(*ret, "remote syscall %ld in process %d failed: %s", nr, c->pid,
			    strerror(-*ret));
	return err;
}

static int take_fd(struct infect_ctx *c, int remote_fd)
{
	int fd = syscall(SYS_pidfd_getfd, c->pidfd, remote_fd, 0);

	if (fd < 0)
		return fail(-errno, "cannot take fd %d from process %d: %s", remote_fd, c->pid,
			    strerror(errno));
	return fd;
}

/* A NUL byte in the target to serve as the memfd's (empty) name. */
static uint64_t empty_string(struct infect_ctx *c)
{
	return c->vdso ? c->vdso + 7 : 0;	/* ELF ident: EI_OSABI = 0 */
}

static int map_area(struct infect_ctx *c, struct parasite *p)
{
	long memfd, addr, ret;
	uint64_t name;
	int err, fd;

	err = infect_syscall(c, 0, SYS_getpid, &ret, 0, 0, 0, 0, 0, 0);	/* finds the vDSO */
	if (err)
		return err;
	name = empty_string(c);
	if (!name)
		return fail(-ENOEXEC, "process %d has no vDSO", c->pid);
	err = rsys(c, SYS_memfd_create, &memfd, name, MFD_CLOEXEC, 0, 0, 0, 0);
	if (err)
		return err;
	err = rsys(c, SYS_ftruncate, &ret, memfd, PARASITE_AREA_SIZE, 0, 0, 0, 0);
	if (!err)
		err = rsys(c, SYS_mmap, &addr, 0, PARASITE_AREA_SIZE,
			   PROT_READ | PROT_WRITE | PROT_EXEC, MAP_SHARED, memfd, 0);
	if (err)
		goto close_remote;
	p->remote = addr;
	fd = take_fd(c, memfd);
	if (fd < 0) {
		err = fd;
		goto close_remote;
	}
	p->local = mmap(NULL, PARASITE_AREA_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p->local == MAP_FAILED) {
		p->local = NULL;
		err = fail(-errno, "cannot map the parasite area: %s", strerror(errno));
	}
close_remote:
	rsys(c, SYS_close, &ret, memfd, 0, 0, 0, 0, 0);
	return err;
}

static int make_pipe(struct infect_ctx *c, struct parasite *p)
{
	int *fds = (int *)(p->local + SCRATCH_OFF);
	long ret;
	int err;

	err = rsys(c, SYS_pipe2, &ret, p->remote + SCRATCH_OFF, O_CLOEXEC, 0, 0, 0, 0);
	if (err)
		return err;
	p->pipe_wr_remote = fds[1];
	p->pipe_rd = take_fd(c, fds[0]);
	rsys(c, SYS_close, &ret, fds[0], 0, 0, 0, 0, 0);
	if (p->pipe_rd < 0)
		return p->pipe_rd;
	/* Resized from here: the limits are the dumper's, not the target's. */
	for (size_t sz = PIPE_SIZE; sz >= PAGE_SIZE * 16; sz /= 2) {
		if (fcntl(p->pipe_rd, F_SETPIPE_SZ, sz) >= 0) {
			p->pipe_size = sz;
			break;
		}
	}
	pr_debug("page pipe: %zu bytes", p->pipe_size);
	return 0;
}

static int start_blob(struct infect_ctx *c, struct parasite *p)
{
	size_t len = parasite_blob_end - parasite_blob;
	struct infect_thread *t = &c->threads[0];
	struct user_regs_struct r = t->regs;

	if (len > PARASITE_ARGS_OFF)
		return fail(-E2BIG, "parasite blob too large");
	memcpy(p->local, parasite_blob, len);
	memset(args_of(p), 0, sizeof(struct parasite_args));
	args_of(p)->pipe_fd = p->pipe_wr_remote;
	r.rip = p->remote;
	r.rsp = p->remote + PARASITE_AREA_SIZE;
	r.rdi = p->remote + PARASITE_ARGS_OFF;
	r.orig_rax = -1;
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) || ptrace(PTRACE_CONT, t->tid, 0, 0))
		return fail(-errno, "cannot start the parasite: %s", strerror(errno));
	t->regs_dirty = true;
	p->running = true;
	return 0;
}

int infect_parasite(struct infect_ctx *c)
{
	struct parasite *p = calloc(1, sizeof(*p));
	int err;

	if (!p)
		return -ENOMEM;
	p->pipe_rd = -1;
	p->pipe_wr_remote = -1;
	c->parasite = p;
	err = map_area(c, p);
	if (err)
		return err;
	return 0;
}

/* The pipe and the running blob are only needed by splice mode. */
static int parasite_start(struct infect_ctx *c)
{
	struct parasite *p = c->parasite;
	int err;

	if (p->running)
		return 0;
	err = make_pipe(c, p);
	if (err)
		return err;
	return start_blob(c, p);
}

static void futex_wake(unsigned int *addr)
{
	syscall(SYS_futex, addr, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/*
 * Did the parasite stop (a fault) or the process die? Only the leader runs;
 * every other thread sits in a ptrace stop, so any exit means SIGKILL. All
 * tracees are polled: a killed leader is reported only after the others.
 */
static int check_target(struct infect_ctx *c)
{
	int status;
	pid_t r;

	while ((r = waitpid(-1, &status, WNOHANG | __WALL)) > 0) {
		if (WIFEXITED(status) || WIFSIGNALED(status))
			return fail(-ESRCH, "process %d died during the dump", c->pid);
		if (r == c->pid && WIFSTOPPED(status)) {
			c->parasite->running = false;
			return fail(-EFAULT, "the parasite stopped with signal %d in process %d",
				    WSTOPSIG(status), c->pid);
		}
	}
	if (r < 0 && errno != EINTR)
		return fail(-ESRCH, "process %d is gone", c->pid);
	return c->stop && *c->stop ? fail(-EINTR, "interrupted") : 0;
}

/* Move `bytes` from the page pipe into out_fd. */
static int drain(struct infect_ctx *c, int out_fd, uint64_t bytes)
{
	struct parasite *p = c->parasite;
	struct parasite_args *a = args_of(p);

	while (bytes) {
		struct pollfd pfd = { .fd = p->pipe_rd, .events = POLLIN };
		ssize_t n;
		int err;

		if (poll(&pfd, 1, 10) <= 0) {
			err = check_target(c);
			if (err)
				return err;
			if (__atomic_load_n(&a->ack_seq, __ATOMIC_ACQUIRE) == a->cmd_seq && a->ret)
				return a->ret;	/* vmsplice failed: no more data comes */
			continue;
		}
		n = splice(p->pipe_rd, NULL, out_fd, NULL, MIN(bytes, (uint64_t)p->pipe_size),
			   SPLICE_F_MOVE | SPLICE_F_MORE);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EINVAL && (fcntl(out_fd, F_GETFL) & O_DIRECT)) {
			/* This filesystem takes no O_DIRECT writes: buffered then. */
			fcntl(out_fd, F_SETFL, fcntl(out_fd, F_GETFL) & ~O_DIRECT);
			continue;
		}
		if (n < 0)
			return fail(-errno, "cannot write the pages image: %s", strerror(errno));
		if (n == 0)
			return fail(-ESRCH, "process %d died during the dump", c->pid);
		bytes -= n;
	}
	return 0;
}

static int wait_ack(struct infect_ctx *c, unsigned int seq)
{
	struct parasite_args *a = args_of(c->parasite);

	while (__atomic_load_n(&a->ack_seq, __ATOMIC_ACQUIRE) != seq) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		int err;

		syscall(SYS_futex, &a->ack_seq, FUTEX_WAIT, a->ack_seq, &ts, NULL, 0);
		err = check_target(c);
		if (err)
			return err;
	}
	return a->ret;
}

/* One command: vmsplice nr runs (at most PARASITE_IOV_MAX) and drain them. */
static int vmsplice_batch(struct infect_ctx *c, const struct iovec *runs, size_t nr,
			  int out_fd)
{
	struct parasite *p = c->parasite;
	struct parasite_args *a = args_of(p);
	uint64_t *iov = (uint64_t *)(p->local + PARASITE_IOV_OFF);
	uint64_t bytes = 0;
	unsigned int seq;
	int err;

	for (size_t i = 0; i < nr; i++) {
		iov[2 * i] = (uint64_t)runs[i].iov_base;
		iov[2 * i + 1] = runs[i].iov_len;
		bytes += runs[i].iov_len;
	}
	a->cmd = PARASITE_CMD_VMSPLICE;
	a->nr_iov = nr;
	a->splice_flags = SPLICE_F_GIFT;
	a->ret = 0;
	seq = a->cmd_seq + 1;
	__atomic_store_n(&a->cmd_seq, seq, __ATOMIC_RELEASE);
	futex_wake(&a->cmd_seq);
	err = drain(c, out_fd, bytes);
	if (!err)
		err = wait_ack(c, seq);
	if (err && a->ret)
		return fail(err, "vmsplice in process %d failed: %s", c->pid, strerror(-err));
	return err;
}

int parasite_vmsplice(struct infect_ctx *c, const struct iovec *runs, size_t nr, int out_fd)
{
	int err = parasite_start(c);

	if (err)
		return err;
	while (nr) {
		size_t batch = MIN(nr, (size_t)PARASITE_IOV_MAX);

		err = vmsplice_batch(c, runs, batch, out_fd);
		if (err)
			return err;
		runs += batch;
		nr -= batch;
	}
	return 0;
}

void infect_cure(struct infect_ctx *c)
{
	struct parasite *p = c->parasite;
	long ret;

	if (!p)
		return;
	/* Out of the blob's futex wait into a ptrace stop; signals are blocked,
	 * so only a fault of the blob could come first. */
	if (p->running && interrupt_thread(c, c->threads[0].tid, false))
		pr_debug("cannot stop the parasite in process %d", c->pid);
	p->running = false;
	if (p->pipe_wr_remote >= 0)
		rsys(c, SYS_close, &ret, p->pipe_wr_remote, 0, 0, 0, 0, 0);
	if (p->remote)
		rsys(c, SYS_munmap, &ret, p->remote, PARASITE_AREA_SIZE, 0, 0, 0, 0);
	if (p->pipe_rd >= 0)
		close(p->pipe_rd);
	if (p->local)
		munmap(p->local, PARASITE_AREA_SIZE);
	free(p);
	c->parasite = NULL;
}
