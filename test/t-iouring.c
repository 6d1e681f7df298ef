/* t-iouring: an io_uring instance driven with raw syscalls (no liburing).
 *   fd 10: a ring of 64 SQEs (128 CQEs) mapped at IORING_OFF_SQ_RING (the CQ ring
 *          shares it: IORING_FEAT_SINGLE_MMAP) and IORING_OFF_SQES; file DIR/iou
 *          registered as fixed file 0, a 4 KiB buffer as fixed buffer 0.
 *   Before READY: a write and a read of DIR/iou through the fixed file and
 *   buffer, then 300 NOPs, all submitted and reaped: the counters are not 0.
 * Modes (argv[2]):
 *   pending      one CQE left unreaped (user_data 77): CqHead != CqTail
 *   unsubmitted  one SQE queued, never submitted: SqHead != SqTail
 *   restore      both, and a 1 MiB gap above the ring's mappings (the rings
 *                were mapped below a mapping since removed): one CQE pending
 *                and one SQE queued (a dump restores
 *                these three and plain: after SIGUSR1 the kernel's cached
 *                counters in fdinfo equal the shared ones too)
 *   nosqarray    the ring made with IORING_SETUP_NO_SQARRAY (liburing's
 *                default since 2.6): no SQ index array written
 *   sqpoll       the ring has an SQPOLL thread
 *   small        a ring of 8 SQEs (16 CQEs): its mappings are a page each
 *                whatever its entries' sizes (SQE128, CQE32)
 *   shared       a child (forked after the NOPs, killed with the program)
 *                holds the ring too
 *   closed       fd 10 closed, the ring still mapped
 *   inflight     a poll of an empty pipe in the kernel (completed on SIGUSR1)
 *   hidden       only a ring made with IORING_SETUP_NO_MMAP in the program's
 *                own memory, its fd registered (IORING_REGISTER_RING_FDS) and
 *                closed: no fd, no io_uring mapping shows it; on SIGUSR1 a NOP
 *                through its registered index
 * After SIGUSR1: the counters as left, the pending CQE (pending), then a
 * write and a read through the fixed file and buffer: their results, the
 * file's bytes, and each counter advanced by exactly what was submitted.
 * READY <pid> <sq head> <cq tail> */
#include "tlib.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <stdbool.h>
#include <linux/io_uring.h>

#define RING_FD 10
static unsigned entries = 64;	/* small: 8 */
#define NOPS 300

struct ring {
	int fd;
	struct io_uring_params p;
	char *sq;			/* SQ and CQ ring */
	struct io_uring_sqe *sqes;
	unsigned sq_head, cq_tail;	/* what this program expects */
};

static char buf[4096] __attribute__((aligned(4096)));

/* The uapi headers of an older build host may lack these (6.5+). */
#ifndef IORING_SETUP_NO_MMAP
#define IORING_SETUP_NO_MMAP (1U << 14)
#endif
#ifndef IORING_SETUP_NO_SQARRAY
#define IORING_SETUP_NO_SQARRAY (1U << 16)
#endif

/* The hidden ring: its memory is the program's (rings, then SQEs). */
struct hidden {
	char *mem;
	struct io_uring_params p;
	unsigned idx;			/* its registered index */
};

static void hidden_setup(struct hidden *h)
{
	struct io_uring_rsrc_update up = { .offset = -1U };
	int fd;

	h->mem = mmap(NULL, 2 * T_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (h->mem == MAP_FAILED)
		exit(2);
	memset(h->mem, 0, 2 * T_PAGE);
	memset(&h->p, 0, sizeof(h->p));
	h->p.flags = IORING_SETUP_NO_MMAP;
	h->p.cq_off.resv2 = (uintptr_t)h->mem;		/* user_addr: the rings */
	h->p.sq_off.resv2 = (uintptr_t)h->mem + T_PAGE;	/* user_addr: the SQEs */
	fd = (int)syscall(__NR_io_uring_setup, 4, &h->p);
	if (fd < 0)
		t_fail("IORING_SETUP_NO_MMAP: %s", strerror(errno));
	up.data = (uint64_t)fd;
	if (syscall(__NR_io_uring_register, fd, IORING_REGISTER_RING_FDS, &up, 1) != 1)
		t_fail("IORING_REGISTER_RING_FDS: %s", strerror(errno));
	h->idx = up.offset;
	close(fd);
}

/* A NOP through the registered index: the ring is still there. */
static void hidden_check(struct hidden *h)
{
	unsigned *tail = (unsigned *)(h->mem + h->p.sq_off.tail);
	unsigned *array = (unsigned *)(h->mem + h->p.sq_off.array);
	struct io_uring_sqe *e = (struct io_uring_sqe *)(h->mem + T_PAGE);
	long ret;

	memset(e, 0, sizeof(*e));
	e->opcode = IORING_OP_NOP;
	array[0] = 0;
	__atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
	ret = syscall(__NR_io_uring_enter, h->idx, 1, 1,
		      IORING_ENTER_GETEVENTS | IORING_ENTER_REGISTERED_RING, NULL, 0);
	if (ret != 1)
		t_fail("the hidden ring's NOP: %ld (%s)", ret, strerror(errno));
	if (*(unsigned *)(h->mem + h->p.cq_off.tail) != 1)
		t_fail("the hidden ring's CQ tail is %u, want 1",
		       *(unsigned *)(h->mem + h->p.cq_off.tail));
}

static volatile unsigned *at(struct ring *r, unsigned off)
{
	return (volatile unsigned *)(r->sq + off);
}

static void setup(struct ring *r, unsigned flags)
{
	size_t sz;
	int fd;

	memset(&r->p, 0, sizeof(r->p));
	r->p.flags = flags;
	r->p.sq_thread_idle = 60000;
	fd = (int)syscall(__NR_io_uring_setup, entries, &r->p);
	if (fd < 0) {
		printf("NOURING %d\n", errno);
		fflush(stdout);
		exit(3);
	}
	if (dup2(fd, RING_FD) != RING_FD)
		exit(2);
	close(fd);
	r->fd = RING_FD;
	sz = r->p.cq_off.cqes + r->p.cq_entries * sizeof(struct io_uring_cqe);
	if (sz < r->p.sq_off.array + r->p.sq_entries * 4)
		sz = r->p.sq_off.array + r->p.sq_entries * 4;
	r->sq = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
		     IORING_OFF_SQ_RING);
	r->sqes = mmap(NULL, r->p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (r->sq == MAP_FAILED || r->sqes == MAP_FAILED)
		exit(2);
}

/* The next SQE, cleared, queued at the tail (not submitted yet). */
static struct io_uring_sqe *queue(struct ring *r, int op, uint64_t data)
{
	unsigned tail = *at(r, r->p.sq_off.tail), idx = tail & (r->p.sq_entries - 1);
	struct io_uring_sqe *e = &r->sqes[idx];

	memset(e, 0, sizeof(*e));
	e->opcode = (uint8_t)op;
	e->user_data = data;
	if (!(r->p.flags & IORING_SETUP_NO_SQARRAY))
		((unsigned *)(r->sq + r->p.sq_off.array))[idx] = idx;
	__atomic_store_n((unsigned *)at(r, r->p.sq_off.tail), tail + 1, __ATOMIC_RELEASE);
	return e;
}

static void submit(struct ring *r, unsigned n, unsigned wait)
{
	unsigned fl = IORING_ENTER_GETEVENTS |
		      (r->p.flags & IORING_SETUP_SQPOLL ? IORING_ENTER_SQ_WAKEUP : 0);
	long ret = syscall(__NR_io_uring_enter, r->fd, n, wait, fl, NULL, 0);

	if (ret != (long)n)
		t_fail("io_uring_enter submitted %ld of %u: %s", ret, n, strerror(errno));
	r->sq_head += n;
	r->cq_tail += n;
}

/* The next CQE (waited for): its result, checked against data. */
static int reap(struct ring *r, uint64_t data)
{
	unsigned head = *at(r, r->p.cq_off.head);
	struct io_uring_cqe *c;
	int res;

	for (int i = 0; i < 5000 && __atomic_load_n((unsigned *)at(r, r->p.cq_off.tail),
						    __ATOMIC_ACQUIRE) == head; i++)
		t_sleep_ms(1);
	if (*at(r, r->p.cq_off.tail) == head)
		t_fail("no CQE for user_data %llu", (unsigned long long)data);
	c = (struct io_uring_cqe *)(r->sq + r->p.cq_off.cqes) + (head & (r->p.cq_entries - 1));
	if (c->user_data != data)
		t_fail("CQE user_data %llu, want %llu", (unsigned long long)c->user_data,
		       (unsigned long long)data);
	res = c->res;
	__atomic_store_n((unsigned *)at(r, r->p.cq_off.head), head + 1, __ATOMIC_RELEASE);
	return res;
}

/* One 4 KiB op (WRITE_FIXED, READ_FIXED) at off through fixed file 0 and fixed buffer 0. */
static void fixed_io(struct ring *r, uint8_t op, uint64_t data, off_t off, const char *what)
{
	struct io_uring_sqe *e = queue(r, op, data);
	int res;

	e->flags = IOSQE_FIXED_FILE;
	e->fd = 0;
	e->addr = (uintptr_t)buf;
	e->len = sizeof(buf);
	e->off = (uint64_t)off;
	submit(r, 1, 1);
	if ((res = reap(r, data)) != (int)sizeof(buf))
		t_fail("%s: %d", what, res);
}

/* A write then a read of 4 KiB at off through fixed file 0 and fixed buffer 0. */
static void write_read(struct ring *r, uint64_t seed, off_t off)
{
	t_fill(buf, sizeof(buf), seed);
	fixed_io(r, IORING_OP_WRITE_FIXED, 1, off, "fixed write");
	memset(buf, 0, sizeof(buf));
	fixed_io(r, IORING_OP_READ_FIXED, 2, off, "fixed read");
	if (t_verify(buf, sizeof(buf), seed))
		t_fail("the bytes read back through the ring differ at %lld", (long long)off);
}

static void nops(struct ring *r, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		queue(r, IORING_OP_NOP, 1000 + i);
		submit(r, 1, 1);
		if (reap(r, 1000 + i))
			t_fail("NOP %u failed", i);
	}
}

static void register_all(struct ring *r, int file)
{
	struct iovec iov = { buf, sizeof(buf) };

	if (syscall(__NR_io_uring_register, r->fd, IORING_REGISTER_FILES, &file, 1))
		t_fail("IORING_REGISTER_FILES: %s", strerror(errno));
	if (syscall(__NR_io_uring_register, r->fd, IORING_REGISTER_BUFFERS, &iov, 1))
		t_fail("IORING_REGISTER_BUFFERS: %s", strerror(errno));
}

static void check_counters(struct ring *r, bool pending, bool unsubmitted)
{
	unsigned sh = *at(r, r->p.sq_off.head), st = *at(r, r->p.sq_off.tail);
	unsigned ch = *at(r, r->p.cq_off.head), ct = *at(r, r->p.cq_off.tail);

	if (sh != r->sq_head || st != r->sq_head + unsubmitted)
		t_fail("SQ head/tail %u/%u, want %u/%u", sh, st, r->sq_head,
		       r->sq_head + unsubmitted);
	if (ct != r->cq_tail || ch != r->cq_tail - pending)
		t_fail("CQ head/tail %u/%u, want %u/%u", ch, ct, r->cq_tail - pending, r->cq_tail);
}

/*
 * A 1 MiB mapping, with every smaller gap above it filled (inaccessible
 * pages kept), so that the next mappings (the ring's) go just below it.
 */
static char *above_gap(void)
{
	char *gap = mmap(NULL, 1 << 20, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (gap == MAP_FAILED)
		exit(2);
	for (int i = 0; i < 4096; i++) {
		char *p = mmap(NULL, T_PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			exit(2);
		if (p < gap) {
			munmap(p, T_PAGE);
			return gap;
		}
	}
	t_fail("no room below the gap");
	return NULL;
}

/* fdinfo's CachedSqHead and CachedCqTail (the kernel's own) equal SqHead and CqTail. */
static void check_cached(struct ring *r)
{
	char path[64], line[128];
	unsigned v[4] = { 0 }, seen = 0;
	const char *keys[4] = { "SqHead:", "CachedSqHead:", "CqTail:", "CachedCqTail:" };
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", r->fd);
	if (!(f = fopen(path, "re")))
		t_fail("cannot read %s", path);
	while (fgets(line, sizeof(line), f))
		for (int i = 0; i < 4; i++)
			if (!strncmp(line, keys[i], strlen(keys[i]))) {
				v[i] = (unsigned)strtoul(line + strlen(keys[i]), NULL, 10);
				seen |= 1u << i;
			}
	fclose(f);
	if (seen != 15 || v[0] != v[1] || v[2] != v[3] || v[0] != r->sq_head || v[2] != r->cq_tail)
		t_fail("fdinfo: SqHead %u CachedSqHead %u CqTail %u CachedCqTail %u, want %u and %u",
		       v[0], v[1], v[2], v[3], r->sq_head, r->cq_tail);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "";
	bool both = !strcmp(mode, "restore");
	bool pending = both || !strcmp(mode, "pending");
	bool unsubmitted = both || !strcmp(mode, "unsubmitted");
	bool inflight = !strcmp(mode, "inflight"), hidden = !strcmp(mode, "hidden");
	struct hidden h;
	int pfd[2];
	struct ring r = { 0 };
	char path[4096];
	int file;

	t_init(argc, argv, SA_RESTART);
	if (!strcmp(mode, "small"))
		entries = 8;
	if (hidden) {
		hidden_setup(&h);
		t_ready("0 0");
		t_wait_usr1();
		t_check_common();
		hidden_check(&h);
		t_pass(mode);
	}
	snprintf(path, sizeof(path), "%s/iou", t_dir);
	if ((file = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600)) < 0)
		exit(2);
	if (both) {	/* a 1 MiB gap just above the ring: a restore fills it to place the ring */
		char *gap = above_gap();

		setup(&r, 0);
		if (r.sq > gap || (char *)r.sqes > gap)
			t_fail("the ring is not below the gap");
		if (munmap(gap, 1 << 20))
			exit(2);
	} else {
		setup(&r, !strcmp(mode, "sqpoll") ? IORING_SETUP_SQPOLL :
			  !strcmp(mode, "nosqarray") ? IORING_SETUP_NO_SQARRAY : 0);
	}
	register_all(&r, file);
	write_read(&r, 1, 0);
	nops(&r, NOPS);
	if (pending) {
		queue(&r, IORING_OP_NOP, 77);
		submit(&r, 1, 1);
	}
	if (unsubmitted)
		queue(&r, IORING_OP_NOP, 78);
	if (inflight) {
		struct io_uring_sqe *e;

		if (pipe(pfd))
			exit(2);
		e = queue(&r, IORING_OP_POLL_ADD, 79);
		e->fd = pfd[0];
		e->poll32_events = POLLIN;
		submit(&r, 1, 0);
		r.cq_tail--;		/* not completed yet */
	}
	if (!strcmp(mode, "closed"))
		close(RING_FD);
	if (!strcmp(mode, "shared") && fork() == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	t_ready("%u %u", r.sq_head, r.cq_tail);
	t_wait_usr1();
	t_check_common();
	check_counters(&r, pending, unsubmitted);
	if (!strcmp(mode, "closed"))
		t_pass("closed: the ring's memory intact");
	if (pending && reap(&r, 77))
		t_fail("the pending NOP's CQE has an error");
	if (inflight) {
		if (write(pfd[1], "x", 1) != 1)
			exit(2);
		r.cq_tail++;
		if (!(reap(&r, 79) & POLLIN))
			t_fail("the poll in flight did not complete with POLLIN");
	}
	if (unsubmitted) {
		submit(&r, 1, 1);
		if (reap(&r, 78))
			t_fail("the queued NOP failed");
	}
	write_read(&r, 2, 4096);
	check_counters(&r, false, false);
	if (strcmp(mode, "sqpoll"))
		check_cached(&r);
	t_pass(mode);
}
