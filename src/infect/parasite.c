/*
 * The dumper's side of the parasite: put it into the target, give it work,
 * take it out again.
 *
 * Infection, by remote system calls in the leader: memfd_create (sized
 * here), mmap (shared, rwx) of the parasite's area, and pipe2 for the
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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/eventfd.h>
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
#include "proc.h"

#define PIPE_SIZE	(32 << 20)

struct parasite {
	uint64_t remote;	/* area in the target */
	uint8_t *local;		/* the same area here */
	size_t len;
	size_t frames_len;	/* page-rounded: the args follow */
	size_t stride;		/* a thread's: its cure frame, then its slot */
	size_t frame_room;	/* the frame's part of it */
	int pipe_wr_remote;	/* page pipe's write end, in the target */
	int pipe_rd;		/* its read end, here */
	int bell_remote;	/* eventfd that wakes the blob for a command, there */
	int bell;		/* the same, here */
	struct infect_rseq rseq;	/* the leader's, unregistered while the blob runs */
	size_t pipe_size;
	bool running;		/* the leader executes the blob */
};

static size_t args_off(const struct parasite *p)
{
	return PARASITE_FRAMES_OFF + p->frames_len;
}

static struct parasite_args *args_of(struct parasite *p)
{
	return (struct parasite_args *)(p->local + args_off(p));
}

uint64_t parasite_scratch(struct infect_ctx *c, void **local)
{
	struct parasite *p = c->parasite;

	*local = p->local + args_off(p) + PARASITE_SCRATCH_OFF;
	return p->remote + args_off(p) + PARASITE_SCRATCH_OFF;
}

/* Where the area is in the process (0: not mapped). */
uint64_t parasite_area(const struct infect_ctx *c)
{
	return c->parasite ? c->parasite->remote : 0;
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

/* A NUL byte in the target to serve as the memfd's (empty) name (remote.c). */
static uint64_t empty_string(struct infect_ctx *c)
{
	return c->nul_byte;
}

/*
 * `syscall`, then rt_sigreturn through the frame at %r12 + 8: where remote
 * syscalls run once the area is there (parasite_abi.h).
 */
static const uint8_t trampoline[] = {
	0x0f, 0x05,			/* syscall */
	0x4c, 0x89, 0xe4,		/* mov %r12, %rsp */
	0xb8, 0x0f, 0x00, 0x00, 0x00,	/* mov $15, %eax */
	0x0f, 0x05,			/* syscall */
	0x0f, 0x0b,			/* ud2 */
};

/* A cure frame for every thread, then the trampoline that uses them. */
static int write_frames(struct infect_ctx *c, struct parasite *p)
{
	size_t stride = p->stride;

	for (int i = 0; i < c->nr_threads; i++) {
		struct infect_thread *t = &c->threads[i];
		size_t off = PARASITE_FRAMES_OFF + i * stride, len;
		int err;

		if (t->exited)
			continue;
		err = selfcure_frame(t, p->local + off, p->remote + off, p->frame_room, &len);
		if (err)
			return fail(err, "cannot save thread %d's state in the parasite area: %s",
				    t->tid, strerror(-err));
		t->cure_sp = p->remote + off + 8;
	}
	memcpy(p->local + PARASITE_TRAMPOLINE_OFF, trampoline, sizeof(trampoline));
	c->tramp = p->remote + PARASITE_TRAMPOLINE_OFF;
	return 0;
}

static int map_local(struct parasite *p, int fd)
{
	p->local = mmap(NULL, p->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p->local == MAP_FAILED) {
		p->local = NULL;
		return fail(-errno, "cannot map the parasite area: %s", strerror(errno));
	}
	return 0;
}

/*
 * The area's size: as many frames as threads, each as big as the FPU state
 * wants, each followed by the thread's slot (parasite_abi.h).
 */
static int area_size(struct infect_ctx *c, struct parasite *p)
{
	int err = selfcure_frame_len(c->threads[0].tid, &p->frame_room);

	if (err)
		return fail(err, "cannot read thread %d's FPU state: %s", c->threads[0].tid,
			    strerror(-err));
	p->frame_room = (p->frame_room + 63) & ~63UL;
	p->stride = p->frame_room + PARASITE_THREAD_SLOT;
	p->frames_len = (c->nr_threads * p->stride + PAGE_SIZE - 1) & PAGE_MASK;
	p->len = PARASITE_CODE_SIZE + p->frames_len + PARASITE_TAIL_SIZE;
	return 0;
}

/* The fd the process's next new file gets (the lowest free): it is frozen. */
static int lowest_free_fd(pid_t pid)
{
	char path[64];
	struct dirent *e;
	uint8_t used[1024] = { 0 };
	DIR *dir;
	int fd = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	dir = opendir(path);
	if (!dir)
		return -1;
	while ((e = readdir(dir))) {
		int n = atoi(e->d_name);

		if (e->d_name[0] != '.' && n >= 0 && n < (int)sizeof(used))
			used[n] = 1;
	}
	closedir(dir);
	while (fd < (int)sizeof(used) && used[fd])
		fd++;
	return fd < (int)sizeof(used) ? fd : -1;
}

/*
 * The supervisor is told which fd the area's memfd is (or will be, before
 * memfd_create runs), so that it can close it after a killed dumper.
 */
static void trace_memfd(struct infect_ctx *c, int fd, bool open)
{
	if (!c->trace)
		return;
	c->trace->pid = c->pid;
	c->trace->memfd = fd;
	c->trace->has_memfd = open && fd >= 0;
}

/*
 * A free range of len bytes for the area: the highest gap under the
 * mappings below the stack (not the one under the stack, which it grows
 * into), a page kept free on each side; 0 if there is none.
 */
static uint64_t free_range(struct infect_ctx *c, size_t len)
{
	char path[64], *maps, *line, *save;
	uint64_t prev_hi = 1 << 20, best = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", c->pid);
	if (proc_read_file(path, &maps) < 0)
		return 0;
	for (line = strtok_r(maps, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		uint64_t lo, hi;

		if (sscanf(line, "%lx-%lx", &lo, &hi) != 2 || strstr(line, "[stack]"))
			break;
		if (lo >= prev_hi + len + 2 * PAGE_SIZE)
			best = lo - PAGE_SIZE - len;
		prev_hi = hi > prev_hi ? hi : prev_hi;
	}
	free(maps);
	return best;
}

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE	0x100000
#endif

/*
 * mmap's EAGAIN: the process's mappings are locked as they are made
 * (mlockall(MCL_FUTURE)) and the area does not fit under its RLIMIT_MEMLOCK
 * (no CAP_IPC_LOCK). Nothing was mapped.
 */
static int refuse_locked_area(struct infect_ctx *c, const struct parasite *p)
{
	char path[64], *limits = NULL, *l, lim[32] = "?";

	snprintf(path, sizeof(path), "/proc/%d/limits", c->pid);	/* prlimit() needs
									 * CAP_SYS_RESOURCE */
	if (proc_read_file(path, &limits) >= 0 && (l = strstr(limits, "Max locked memory")))
		sscanf(l + strlen("Max locked memory"), "%31s", lim);
	free(limits);
	return fail(-EOPNOTSUPP, "process %d locks its future mappings (mlockall MCL_FUTURE) and "
		    "its RLIMIT_MEMLOCK (%s bytes) leaves no room for memdump's %zu KiB parasite "
		    "area", c->pid, lim, p->len >> 10);
}

/*
 * The memfd mapped in the target where the supervisor is told before the
 * mmap runs: were the dumper killed at any moment of it, infect_reclaim()
 * finds the area, or nothing there.
 */
static int map_remote(struct infect_ctx *c, struct parasite *p, long memfd, long *addr)
{
	uint64_t want = free_range(c, p->len);
	int err;

	if (c->trace) {
		c->trace->pid = c->pid;
		c->trace->area_len = p->len;
		c->trace->area = want;
	}
	*addr = -ENOMEM;
	err = want ? infect_syscall(c, 0, SYS_mmap, addr, want, p->len,
				    PROT_READ | PROT_WRITE | PROT_EXEC,
				    MAP_SHARED | MAP_FIXED_NOREPLACE, memfd, 0) : 0;
	if (!err && *addr < 0 && *addr > -4096 && *addr != -EAGAIN) {	/* no room after all:
									 * where the kernel likes */
		if (want)
			pr_debug("cannot map the parasite area at %#lx (%ld): anywhere", want, *addr);
		err = infect_syscall(c, 0, SYS_mmap, addr, 0, p->len,
				     PROT_READ | PROT_WRITE | PROT_EXEC, MAP_SHARED, memfd, 0);
	}
	if (!err && *addr == -EAGAIN)
		err = refuse_locked_area(c, p);
	else if (!err && *addr < 0 && *addr > -4096)
		err = fail((int)*addr, "remote syscall %d in process %d failed: %s", SYS_mmap,
			   c->pid, strerror((int)-*addr));
	if (c->trace)
		c->trace->area = err ? 0 : *addr;
	return err;
}

static int map_area(struct infect_ctx *c, struct parasite *p)
{
	long memfd, addr, ret;
	uint64_t name;
	int err, fd;

	err = infect_remote_init(c);	/* finds the vDSO */
	if (!err)
		err = area_size(c, p);
	if (err)
		return err;
	name = empty_string(c);
	if (!name)
		return fail(-ENOEXEC, "process %d has no NUL byte in its code", c->pid);
	trace_memfd(c, lowest_free_fd(c->pid), true);
	err = rsys(c, SYS_memfd_create, &memfd, name, MFD_CLOEXEC, 0, 0, 0, 0);
	trace_memfd(c, (int)memfd, !err);
	if (err)
		return err;
	/* sized from here: the same file, one remote syscall less */
	fd = take_fd(c, (int)memfd);
	err = fd < 0 ? fd : ftruncate(fd, p->len) ? fail(-errno, "cannot size the parasite area: "
							  "%s", strerror(errno)) : 0;
	if (!err)
		err = map_remote(c, p, memfd, &addr);
	if (!err) {
		p->remote = addr;
		err = map_local(p, fd);
	}
	if (fd >= 0)
		close(fd);
	if (!err)
		err = write_frames(c, p);
	if (!rsys(c, SYS_close, &ret, memfd, 0, 0, 0, 0, 0))
		trace_memfd(c, -1, false);
	return err;
}

static int make_pipe(struct infect_ctx *c, struct parasite *p)
{
	void *local;
	uint64_t remote = parasite_scratch(c, &local);
	int *fds = local;
	long ret;
	int err;

	err = rsys(c, SYS_pipe2, &ret, remote, O_CLOEXEC, 0, 0, 0, 0);
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

/* The blob sleeps in ppoll on this and on the pipe (parasite/parasite.c). */
static int make_bell(struct infect_ctx *c, struct parasite *p)
{
	long fd;
	int err = rsys(c, SYS_eventfd2, &fd, 0, EFD_CLOEXEC | EFD_NONBLOCK, 0, 0, 0, 0);

	if (err)
		return err;
	p->bell_remote = (int)fd;
	p->bell = take_fd(c, p->bell_remote);
	return p->bell < 0 ? p->bell : 0;
}

#define RSEQ_FLAG_UNREGISTER		1

/*
 * The kernel writes a thread's rseq area (cpu_id, ...) whenever it returns
 * to user space after a move: the leader, running the blob, would change its
 * own memory while its pages are written. Its registration is taken off for
 * that time and put back by the cure (or the blob's self-cure).
 */
static int rseq_off(struct infect_ctx *c, struct parasite *p)
{
	const struct infect_rseq *rs = &c->threads[0].rseq;
	long ret;
	int err;

	if (!rs->len)
		return 0;
	err = rsys(c, SYS_rseq, &ret, rs->ptr, rs->len, RSEQ_FLAG_UNREGISTER, rs->sig, 0, 0);
	if (!err)
		p->rseq = *rs;
	return err;
}

static void rseq_on(struct infect_ctx *c, struct parasite *p)
{
	long ret;

	int err = 0;

	if (p->rseq.len)
		err = rsys(c, SYS_rseq, &ret, p->rseq.ptr, p->rseq.len, 0, p->rseq.sig, 0, 0);
	if (err && err != -ESRCH)
		pr_warn("thread %d: cannot register its rseq area again", c->threads[0].tid);
	p->rseq.len = 0;
}

/* The blob runs with every signal blocked: none can interrupt it, and a
 * SIGPIPE from a dead dumper's pipe stays pending for it to take back. */
static int start_blob(struct infect_ctx *c, struct parasite *p)
{
	size_t len = parasite_blob_end - parasite_blob;
	struct infect_thread *t = &c->threads[0];
	struct user_regs_struct r = t->regs;
	struct parasite_args *a = args_of(p);
	uint64_t tail = p->remote + args_off(p), all = ~0ULL;

	if (len > PARASITE_GONE_OFF)
		return fail(-E2BIG, "parasite blob too large");
	memcpy(p->local, parasite_blob, len);
	*(uint32_t *)(p->local + PARASITE_GONE_OFF) = 0;
	memset(a, 0, sizeof(*a));
	a->pipe_fd = p->pipe_wr_remote;
	a->bell_fd = p->bell_remote;
	a->iov = tail + PARASITE_ARGS_SIZE;
	a->tail = tail;
	a->tail_len = p->len - args_off(p);
	a->cure_sp = t->cure_sp;
	a->rseq = p->rseq.ptr;
	a->rseq_len = p->rseq.len;
	a->rseq_sig = p->rseq.sig;
	a->gone = p->remote + PARASITE_GONE_OFF;
	r.rip = p->remote;
	r.rsp = p->remote + p->len;
	r.rdi = tail;
	r.rsi = 0;			/* the leader's blob, no thread slot */
	r.orig_rax = -1;
	t->regs_dirty = true;
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
	p->pipe_rd = p->bell = -1;
	p->pipe_wr_remote = p->bell_remote = -1;
	c->parasite = p;
	err = map_area(c, p);
	if (!err)
		fault_point("infected");
	return err;
}

/*
 * The blob runs in the leader for its commands: the leader's state
 * (parasite_state) and splice mode's pages. The pipe, the bell and the
 * rseq registration are made once; after a pause (a remote syscall in the
 * leader) only the blob is started again.
 */
int parasite_start(struct infect_ctx *c)
{
	struct parasite *p = c->parasite;
	int err = 0;

	if (p->running)
		return 0;
	if (p->pipe_rd < 0)
		err = make_pipe(c, p);
	if (!err && p->bell < 0)
		err = make_bell(c, p);
	if (!err && !p->rseq.len)
		err = rseq_off(c, p);
	if (!err)
		err = start_blob(c, p);
	if (!err)
		fault_point("parasite-running");
	return err;
}

/* The leader out of the blob, back in a ptrace stop for remote syscalls. */
int parasite_pause(struct infect_ctx *c)
{
	struct parasite *p = c->parasite;
	int err;

	if (!p || !p->running)
		return 0;
	err = interrupt_thread(c, c->threads[0].tid, false);
	if (err)
		return fail(err, "cannot stop the parasite in process %d: %s", c->pid,
			    strerror(-err));
	p->running = false;
	err = put_thread_regs(&c->threads[0]);
	if (!err)
		rseq_on(c, p);	/* a memdump killed while paused leaves it registered */
	return err;
}

static void ring(struct parasite *p)
{
	uint64_t one = 1;

	if (write(p->bell, &one, sizeof(one)) != sizeof(one))
		pr_debug("cannot wake the parasite: %s", strerror(errno));
}

/*
 * A thread that runs the blob for its own state stopped: a SIGSTOP it
 * dequeued (it cannot be blocked) is suppressed and sent again at the
 * release, as during a remote syscall; anything else is a fault.
 */
static int thread_stopped(struct infect_ctx *c, pid_t tid, int status)
{
	for (int i = 1; i < c->nr_threads; i++) {
		if (c->threads[i].tid != tid)
			continue;
		if (status >> 16 == 0 && WSTOPSIG(status) == SIGSTOP) {
			c->threads[i].sigstops_taken++;
			return ptrace(PTRACE_CONT, tid, 0, 0) ? -errno : 0;
		}
		break;
	}
	return fail(-EFAULT, "the parasite stopped with signal %d in thread %d", WSTOPSIG(status),
		    tid);
}

/*
 * Did the parasite stop (a fault) or the process die? Only the leader runs
 * (and, for their state, the other threads); every thread else sits in a
 * ptrace stop, so any exit means SIGKILL. All tracees are polled: a killed
 * leader is reported only after the others.
 */
static int check_target(struct infect_ctx *c)
{
	int status, err;
	pid_t r;

	while ((r = waitpid(-1, &status, WNOHANG | __WALL)) > 0) {
		if (WIFEXITED(status) || WIFSIGNALED(status))	/* r: this one, or another tracee */
			return fail(-ESRCH, "process %d died during the dump", r);
		if (r == c->pid && WIFSTOPPED(status)) {
			c->parasite->running = false;
			return fail(-EFAULT, "the parasite stopped with signal %d in process %d",
				    WSTOPSIG(status), c->pid);
		}
		if (WIFSTOPPED(status)) {
			err = thread_stopped(c, r, status);
			if (err)
				return err;
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
	uint64_t *iov = (uint64_t *)((uint8_t *)a + PARASITE_ARGS_SIZE);
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
	ring(p);
	err = drain(c, out_fd, bytes);
	if (!err)
		err = wait_ack(c, seq);
	if (err && a->ret)
		return fail(err, "vmsplice in process %d failed: %s", c->pid, strerror(-err));
	return err;
}

/* One command without pages: run it, wait for its answer. */
static int command(struct infect_ctx *c, unsigned int cmd)
{
	struct parasite_args *a = args_of(c->parasite);
	unsigned int seq;

	a->cmd = cmd;
	a->ret = 0;
	seq = a->cmd_seq + 1;
	__atomic_store_n(&a->cmd_seq, seq, __ATOMIC_RELEASE);
	ring(c->parasite);
	return wait_ack(c, seq);
}

int parasite_state(struct infect_ctx *c, struct parasite_state *out)
{
	int err = parasite_start(c);

	if (!err)
		err = command(c, PARASITE_CMD_STATE);
	if (err)
		return fail(err, "cannot read the state of process %d in the parasite: %s", c->pid,
			    strerror(-err));
	memcpy(out, (uint8_t *)args_of(c->parasite) + PARASITE_ARGS_SIZE, sizeof(*out));
	return 0;
}

/* Thread i's slot (parasite_abi.h), here and in the target. */
static struct parasite_thread *slot_of(struct parasite *p, int i, uint64_t *remote)
{
	size_t off = PARASITE_FRAMES_OFF + i * p->stride + p->frame_room;

	*remote = p->remote + off;
	return (struct parasite_thread *)(p->local + off);
}

/* Thread i off into the blob for its state, every signal blocked. */
static int start_thread(struct infect_ctx *c, struct parasite *p, int i)
{
	struct infect_thread *t = &c->threads[i];
	struct user_regs_struct r = t->regs;
	uint64_t remote, all = ~0ULL;
	struct parasite_thread *s = slot_of(p, i, &remote);

	if (t->exited)
		return fail(-ESRCH, "thread %d is gone", t->tid);
	memset(s, 0, sizeof(*s));
	s->gone = p->remote + PARASITE_GONE_OFF;
	s->cure_sp = t->cure_sp;
	r.rip = p->remote;
	r.rsp = remote + PARASITE_THREAD_SLOT;
	r.rdi = 0;
	r.rsi = remote;
	r.orig_rax = -1;
	t->regs_dirty = true;
	if (ptrace(PTRACE_SETSIGMASK, t->tid, sizeof(all), &all) ||
	    ptrace(PTRACE_SETREGS, t->tid, 0, &r) || ptrace(PTRACE_CONT, t->tid, 0, 0))
		return fail(-errno, "cannot start the parasite in thread %d: %s", t->tid,
			    strerror(errno));
	return 0;
}

/* Until every started thread (1 .. nr - 1) has read its state. */
static int wait_threads(struct infect_ctx *c, struct parasite *p, int nr)
{
	for (int i = 1; i < nr; i++) {
		uint64_t remote;
		struct parasite_thread *s = slot_of(p, i, &remote);

		while (!__atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) {
			struct timespec ts = { 0, 100 * 1000 * 1000 };
			int err;

			syscall(SYS_futex, &s->done, FUTEX_WAIT, 0, &ts, NULL, 0);
			err = check_target(c);
			if (err)
				return err;
		}
	}
	return 0;
}

/* Threads 1 .. nr - 1 out of the blob, their own registers back. */
static int stop_threads(struct infect_ctx *c, int nr)
{
	int first = 0;

	for (int i = 1; i < nr; i++) {
		struct infect_thread *t = &c->threads[i];
		int err = interrupt_thread(c, t->tid, false);

		if (!err)
			err = put_thread_regs(t);
		if (err && !first)
			first = fail(err, "cannot take thread %d out of the parasite: %s", t->tid,
				     strerror(-err));
	}
	return first;
}

int parasite_threads_state(struct infect_ctx *c, struct parasite_thread_state *out)
{
	struct parasite *p = c->parasite;
	int err = parasite_start(c), stop, i;

	for (i = 1; i < c->nr_threads && !err; i++)
		err = start_thread(c, p, i);
	if (!err)
		fault_point("threads-in-parasite");
	if (!err)
		err = wait_threads(c, p, i);
	stop = stop_threads(c, err ? i - 1 : i);
	if (err || stop)
		return err ?: stop;
	for (i = 1; i < c->nr_threads; i++) {
		uint64_t remote;

		out[i] = slot_of(p, i, &remote)->st;
	}
	return 0;
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

/* The dumper's own side of the parasite: its pipe's read end, its view of the area. */
static void parasite_free_local(struct infect_ctx *c)
{
	struct parasite *p = c->parasite;

	if (p->pipe_rd >= 0)
		close(p->pipe_rd);
	if (p->local)
		munmap(p->local, p->len);
	free(p);
	c->parasite = NULL;
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
	rseq_on(c, p);
	if (p->pipe_wr_remote >= 0)
		rsys(c, SYS_close, &ret, p->pipe_wr_remote, 0, 0, 0, 0, 0);
	if (p->bell_remote >= 0)
		rsys(c, SYS_close, &ret, p->bell_remote, 0, 0, 0, 0, 0);
	if (p->bell >= 0)
		close(p->bell);
	/* The last call cannot return into the area it removes: the vDSO's
	 * syscall instruction it is, the one call a killed dumper can hurt. */
	c->tramp = 0;
	if (p->remote && !rsys(c, SYS_munmap, &ret, p->remote, p->len, 0, 0, 0, 0) && c->trace)
		c->trace->area = 0;
	parasite_free_local(c);
}

void infect_forget(struct infect_ctx *c)
{
	struct parasite *p = c->parasite;

	if (!p)
		return;
	if (p->bell >= 0)
		close(p->bell);
	if (c->trace)
		c->trace->area = 0;
	parasite_free_local(c);
}
