/*
 * Per-thread state for the images, read from outside with ptrace:
 * registers, XSAVE area, signal mask, robust futex list, rseq; and from
 * inside, by the parasite in each thread: set_tid_address value,
 * sigaltstack, parent-death signal and timer slack.
 */
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "infect/infect.h"
#include "log.h"
#include "task/task.h"
#include "parasite_abi.h"

#define XSAVE_MAX	(16 << 10)

static int get_xsave(struct thread *t)
{
	struct iovec iov;

	t->xsave = calloc(1, XSAVE_MAX);
	if (!t->xsave)
		return -ENOMEM;
	iov.iov_base = t->xsave;
	iov.iov_len = XSAVE_MAX;
	if (ptrace(PTRACE_GETREGSET, t->tid, NT_X86_XSTATE, &iov))
		return fail(-errno, "thread %d: cannot read XSAVE state: %s", t->tid,
			    strerror(errno));
	t->xsave_len = iov.iov_len;
	return 0;
}

static void get_comm(struct dump_ctx *d, struct thread *t)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", d->pid, t->tid);
	f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(t->comm, sizeof(t->comm), f))
		t->comm[strcspn(t->comm, "\n")] = 0;
	fclose(f);
}

/*
 * Signals queued but not delivered (blocked, or arrived during the freeze),
 * read without dequeuing them: PTRACE_PEEKSIGINFO, per thread or, with
 * shared, for the whole process.
 */
int collect_pending_signals(pid_t tid, bool shared, siginfo_t **out, int *nr)
{
	struct {
		uint64_t off;
		uint32_t flags;
		int32_t nr;
	} arg = { 0, shared ? 1 : 0, 32 };
	siginfo_t *v = NULL;
	int n = 0;

	for (;;) {
		siginfo_t *nv = realloc(v, (n + 32) * sizeof(*v));
		long got;

		if (!nv) {
			free(v);
			return -ENOMEM;
		}
		v = nv;
		arg.off = n;
		got = ptrace(PTRACE_PEEKSIGINFO, tid, &arg, &v[n]);
		if (got < 0) {
			free(v);
			return fail(-errno, "thread %d: cannot read pending signals: %s", tid,
				    strerror(errno));
		}
		n += got;
		if (got < 32)
			break;
	}
	*out = v;
	*nr = n;
	return 0;
}

/* Remove SIGSTOP from the queue v (at most one: it is not a real-time signal). */
static bool drop_sigstop(siginfo_t *v, int *nr)
{
	for (int i = 0; i < *nr; i++) {
		if (v[i].si_signo != SIGSTOP)
			continue;
		memmove(&v[i], &v[i + 1], (*nr - i - 1) * sizeof(*v));
		(*nr)--;
		return true;
	}
	return false;
}

/*
 * The stop state goes into the image as a task state and the signal of the
 * stop, never as a queued SIGSTOP: the restored threads would dequeue it
 * while memdump still traces them. A process with one queued (it was sent
 * again to a stopped process, or is on its way) is one about to stop, so
 * it is dumped as stopped; a SIGCONT would have dropped the queued one.
 */
void collect_stop_state(struct dump_ctx *d)
{
	bool queued = drop_sigstop(d->sigpending, &d->nr_sigpending);

	for (int i = 0; i < d->nr_threads; i++)
		queued |= drop_sigstop(d->threads[i].sigpending, &d->threads[i].nr_sigpending);
	d->stop_signo = d->in.nr_threads ? d->in.threads[0].stop_sig : 0;
	if (!d->stopped && !queued)
		return;
	d->stopped = true;
	if (!d->stop_signo)
		d->stop_signo = SIGSTOP;
	pr_info("process %d is stopped (signal %d)%s", d->pid, d->stop_signo,
		queued ? ", a SIGSTOP queued" : "");
}

int dump_syscall(struct dump_ctx *d, int i, long nr, long *ret, long a1, long a2, long a3,
		 long a4)
{
	return infect_syscall(&d->in, i, nr, ret, a1, a2, a3, a4, 0, 0);
}

/* What the thread's own calls answered, judged alike by both ways of asking. */
static void take_altstack(struct thread *t, long ret, const stack_t *ss)
{
	if (ret == 0 && !(ss->ss_flags & SS_DISABLE)) {
		t->ss_sp = (uint64_t)ss->ss_sp;
		t->ss_size = ss->ss_size;
		t->ss_flags = ss->ss_flags & ~SS_ONSTACK;
	}
}

static int take_pdeathsig(struct thread *t, long ret, uint32_t sig)
{
	if (ret)
		return fail((int)ret, "thread %d: cannot read its parent-death signal: %s", t->tid,
			    strerror((int)-ret));
	t->pdeath_sig = sig;
	return 0;
}

/*
 * set_tid_address, sigaltstack, securebits, the parent-death signal and the
 * timer slack of thread i, as the thread itself read them in the parasite.
 */
static int thread_inside_from(struct dump_ctx *d, int i, const struct parasite_thread_state *st)
{
	struct thread *t = &d->threads[i];
	stack_t ss = { .ss_sp = (void *)st->altstack.sp, .ss_flags = st->altstack.flags,
		       .ss_size = st->altstack.size };
	int err;

	if (st->ring_fds)	/* docs/io_uring.md */
		return fail(-EOPNOTSUPP, "thread %d of process %d holds io_uring instances registered "
			    "by index (IORING_REGISTER_RING_FDS, indexes %#lx), which memdump does "
			    "not restore yet", t->tid, d->pid, st->ring_fds);
	if (st->tid_address_ret == 0)
		t->tid_address = st->tid_address;
	take_altstack(t, st->altstack_ret, &ss);
	if (st->securebits < 0)
		return fail((int)st->securebits, "thread %d: cannot read its securebits: %s", t->tid,
			    strerror((int)-st->securebits));
	t->secbits = (uint32_t)st->securebits;
	err = take_pdeathsig(t, st->pdeathsig_ret, st->pdeathsig);
	return err ?: thread_timer_slack(d, i, st->timerslack);
}

/*
 * Every thread but the leader: all of them run the parasite at once, each
 * for its own state (the leader's comes with parasite_state), instead of
 * four remote syscalls each.
 */
int collect_threads_inside(struct dump_ctx *d)
{
	struct parasite_thread_state *st;
	int err = 0;

	if (d->nr_threads < 2)
		return 0;
	st = calloc(d->nr_threads, sizeof(*st));
	if (!st)
		return -ENOMEM;
	pr_debug("%d thread(s) to read their state in the parasite", d->nr_threads - 1);
	err = parasite_threads_state(&d->in, st);
	for (int i = 1; i < d->nr_threads && !err; i++)
		err = thread_inside_from(d, i, &st[i]);
	free(st);
	if (!err)
		pr_debug("the threads' state read");
	return err;
}

/* The same for the leader, from what its blob read (parasite_state). */
int leader_inside_from(struct dump_ctx *d, const struct parasite_state *st)
{
	return thread_inside_from(d, 0, &st->leader);
}

/*
 * What ptrace tells from outside, before any remote execution: registers,
 * signal mask and rseq as infect saved them at the freeze, then XSAVE and
 * the robust list.
 */
static int collect_thread_regs(struct dump_ctx *d, struct thread *t,
			       const struct infect_thread *it)
{
	long head_len;
	void *head;
	int ret;

	t->regs = it->regs;
	t->sigmask = it->sigmask;
	t->rseq_abi = it->rseq.ptr;
	t->rseq_len = it->rseq.len;
	t->rseq_sig = it->rseq.sig;
	ret = get_xsave(t);
	if (ret)
		return ret;
	if (syscall(SYS_get_robust_list, t->tid, &head, &head_len) == 0) {
		t->robust_head = (uint64_t)head;
		t->robust_len = head_len;
	}
	get_comm(d, t);
	return collect_pending_signals(t->tid, false, &t->sigpending, &t->nr_sigpending);
}

/* One struct thread for each frozen thread, in infect's order (leader first). */
int collect_threads(struct dump_ctx *d)
{
	int ret = 0;

	d->threads = calloc(d->in.nr_threads, sizeof(*d->threads));
	if (!d->threads)
		return -ENOMEM;
	d->nr_threads = d->in.nr_threads;
	for (int i = 0; i < d->nr_threads && !ret; i++) {
		d->threads[i].tid = d->in.threads[i].tid;
		ret = collect_thread_regs(d, &d->threads[i], &d->in.threads[i]);
	}
	return ret;
}
