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
 * Should the dumper die while the blob runs, the blob cures itself through
 * a frame built here before it starts (selfcure.c).
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
#include "fault.h"
#include "infect/infect.h"
#include "infect/seize.h"
#include "infect/selfcure.h"
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
	if (c->trace) {
		c->trace->pid = c->pid;
		c->trace->area = addr;
	}
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

#define ALIVE_NS	(50 * 1000 * 1000)	/* the parasite looks for us this often */
#define RED_ZONE	128

/*
 * Where the frame can go on the thread's stack, and the gadget the parasite
 * jumps to, if the process's code has both gadgets (parasite_abi.h).
 */
static uint64_t find_gadgets(struct infect_ctx *c, uint64_t *syscall_ret)
{
	static const uint8_t sys_ret[] = { 0x0f, 0x05, 0xc3 };
	static const uint8_t rt_rax[] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 };
	static const uint8_t rt_eax[] = { 0xb8, 0x0f, 0, 0, 0, 0x0f, 0x05 };
	uint64_t restore_rt;

	*syscall_ret = infect_find_code(c, sys_ret, sizeof(sys_ret));
	restore_rt = infect_find_code(c, rt_rax, sizeof(rt_rax));
	if (!restore_rt)
		restore_rt = infect_find_code(c, rt_eax, sizeof(rt_eax));
	return *syscall_ret ? restore_rt : 0;
}

/* What the parasite needs to cure itself, should we die (parasite_abi.h). */
static int prepare_selfcure(struct infect_ctx *c, struct parasite *p)
{
	struct parasite_args *a = args_of(p);
	struct infect_thread *t = &c->threads[0];
	uint8_t *frame = p->local + PARASITE_FRAME_OFF;
	uint64_t restore_rt, syscall_ret;
	size_t len;
	int err;

	err = selfcure_frame(t, frame, PARASITE_ARGS_OFF - PARASITE_FRAME_OFF, &len);
	if (err)
		return fail(err, "cannot save thread %d's state for the parasite: %s", t->tid,
			    strerror(-err));
	a->area = p->remote;
	a->frame_len = len;
	a->alive_ns = ALIVE_NS;
	restore_rt = find_gadgets(c, &syscall_ret);
	if (restore_rt) {
		a->stack_frame = (t->regs.rsp - RED_ZONE - len) & ~63UL;
		a->syscall_ret = syscall_ret;
		selfcure_place(frame, a->stack_frame, restore_rt);
	} else {
		pr_debug("no rt_sigreturn gadget in process %d: a dead dumper's parasite "
			 "would leave its code mapped", c->pid);
		selfcure_place(frame, p->remote + PARASITE_FRAME_OFF, 0);
	}
	return 0;
}

/* The blob runs with every signal blocked: none can interrupt it, and a
 * SIGPIPE from a dead dumper's pipe stays pending for it to take back. */
static int start_blob(struct infect_ctx *c, struct parasite *p)
{
	size_t len = parasite_blob_end - parasite_blob;
	struct infect_thread *t = &c->threads[0];
	struct user_regs_struct r = t->regs;
	uint64_t all = ~0ULL;
	int err;

	if (len > PARASITE_FRAME_OFF)
		return fail(-E2BIG, "parasite blob too large");
	memcpy(p->local, parasite_blob, len);
	memset(args_of(p), 0, sizeof(struct parasite_args));
	args_of(p)->pipe_fd = p->pipe_wr_remote;
	err = prepare_selfcure(c, p);
	if (err)
		return err;
	r.rip = p->remote;
	r.rsp = p->remote + PARASITE_AREA_SIZE;
	r.rdi = p->remote + PARASITE_ARGS_OFF;
	r.orig_rax = -1;
	t->regs_dirty = true;
	if (c->trace)
		c->trace->blob_started = 1;	/* from here the blob would run if we died */
	if (ptrace(PTRACE_SETSIGMASK, t->tid, sizeof(all), &all) ||
	    ptrace(PTRACE_SETREGS, t->tid, 0, &r) || ptrace(PTRACE_CONT, t->tid, 0, 0))
		return fail(-errno, "cannot start the parasite: %s", strerror(errno));
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
	if (!err)
		fault_point("infected");
	return err;
}

/* The pipe and the running blob are only needed by splice mode. */
static int parasite_start(struct infect_ctx *c)
{
	struct parasite *p = c->parasite;
	int err;

	if (p->running)
		return 0;
	err = make_pipe(c, p);
	if (!err)
		err = start_blob(c, p);
	if (!err)
		fault_point("parasite-running");
	return err;
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

		if (c->stop && *c->stop)
			return fail(-EINTR, "interrupted");
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
	if (p->remote && !rsys(c, SYS_munmap, &ret, p->remote, PARASITE_AREA_SIZE, 0, 0, 0, 0) &&
	    c->trace)
		c->trace->area = 0;
	if (p->pipe_rd >= 0)
		close(p->pipe_rd);
	if (p->local)
		munmap(p->local, PARASITE_AREA_SIZE);
	free(p);
	c->parasite = NULL;
}

/* Is the mapping at addr exactly a parasite area (a whole, deleted memfd)? */
static bool is_area(pid_t pid, uint64_t addr)
{
	char path[64], line[512], want[64];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	snprintf(want, sizeof(want), "%lx-%lx rwxs ", addr, addr + PARASITE_AREA_SIZE);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = !strncmp(line, want, strlen(want)) && strstr(line, "/memfd: (deleted)");
	fclose(f);
	return found;
}

int infect_reclaim(const struct infect_trace *tr)
{
	struct infect_ctx c = { .pidfd = -1, .mem_fd = -1 };
	pid_t pid = (pid_t)tr->pid;
	uint64_t area = tr->area;
	long ret;
	int err;

	if (!pid || !area || tr->blob_started)
		return 0;
	err = infect_prepare(&c, pid, NULL);
	if (!err && is_area(pid, area)) {
		err = infect_syscall(&c, 0, SYS_munmap, &ret, area, PARASITE_AREA_SIZE, 0, 0, 0, 0);
		if (!err && ret)
			err = fail(ret, "cannot unmap the parasite area in process %d: %s", pid,
				   strerror(-ret));
		if (!err)
			pr_info("removed the parasite area the dead worker left in process %d", pid);
	}
	infect_release(&c, false);
	return err;
}
