/*
 * The infect layer, after CRIU's compel: take hold of a process's threads,
 * run system calls inside it, load the parasite blob into it, run parasite
 * commands and cure it again. It holds no dump policy: what to collect and
 * what to write is dump/'s. It may call only lib (include/).
 *
 * The verbs, in the order a user calls them:
 *
 *   infect_prepare  open the process, PTRACE_SEIZE + interrupt every thread
 *                   until the thread list is stable, save each one's
 *                   registers and signal mask
 *   infect_syscall  run one system call in a frozen thread
 *   infect_parasite map the parasite area into the process
 *   parasite_*      the parasite's commands (vmsplice pages into a pipe)
 *   infect_cure     remove the parasite: area, pipe, registers as they were
 *   infect_release  detach every thread (or kill the process), free the context
 *   infect_reclaim  for a supervisor, once the dumper is dead: unmap the area
 *                   it left (struct infect_trace)
 */
#ifndef MEMDUMP_INFECT_H
#define MEMDUMP_INFECT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/user.h>

/* PTRACE_GET_RSEQ_CONFIGURATION: the thread's registered rseq area (len 0: none). */
struct infect_rseq {
	uint64_t ptr;
	uint32_t len, sig;
};

struct infect_thread {
	pid_t tid;
	bool seized;			/* PTRACE_SEIZE done */
	bool regs_dirty;		/* changed by remote execution */
	bool exited;			/* reaped by us: gone */
	struct user_regs_struct regs;	/* as at the freeze */
	uint64_t sigmask;		/* as at the freeze */
	struct infect_rseq rseq;	/* as at the freeze */
	uint64_t cure_sp;		/* its frame in the parasite area, + 8 */
	int stop_sig;			/* the signal of its group-stop at the seize, or 0 */
	bool sigstop_private;		/* a SIGSTOP queued for it alone at the seize */
	int sigstops_taken;		/* SIGSTOPs it dequeued during remote syscalls */
	uint64_t stack_lo;		/* start of the writable mapping at regs.rsp, 0: not read yet */
};

struct parasite;

/*
 * What a supervisor needs to undo an infection whose dumper was killed, kept
 * up to date by the verbs in memory the caller shares with it (MAP_SHARED).
 * Threads go home by themselves (parasite_abi.h); the area's head they
 * leave is for infect_reclaim().
 */
struct infect_trace {
	volatile int64_t pid;
	volatile uint64_t area;		/* the parasite area in the process, or 0 */
	volatile uint64_t area_len;
	volatile int32_t memfd;		/* the area's memfd in the process, while open */
	volatile int32_t has_memfd;	/* (told before memfd_create runs) */
};

struct infect_ctx {
	pid_t pid;
	int pidfd;			/* pidfd_open(pid) */
	int mem_fd;			/* /proc/PID/mem, read-only */
	struct infect_thread *threads;	/* leader first */
	int nr_threads;
	uint64_t syscall_insn;		/* a `syscall` instruction in the process */
	uint64_t sigreturn_insn;	/* `mov $15, %rax; syscall` there, or 0 */
	unsigned int sigreturn_len;	/* its length */
	uint64_t tramp;			/* the parasite area's trampoline, or 0 */
	uint64_t vdso;			/* start of its [vdso], or 0 (unmapped) */
	uint64_t nul_byte;		/* a NUL byte in its code: the memfd's empty name */
	struct parasite *parasite;
	/* Set by the caller's signal handler: waits give up with -EINTR. */
	const volatile sig_atomic_t *stop;
	struct infect_trace *trace;	/* or NULL */
	bool seccomp_unsuspended;	/* its filters apply to our syscalls */
	bool sigstop_shared;		/* a SIGSTOP queued for the process at the seize */
};

/* seize.c */
int infect_prepare(struct infect_ctx *c, pid_t pid, const volatile sig_atomic_t *stop);
/*
 * Under a frozen cgroup (seize.c): every thread of pid seized and asked to
 * stop, not waiting (it stops once thawed, before it runs its own code);
 * after the thaw, every stop taken. infect_prepare() then finds them ours.
 */
struct preseized {
	pid_t *tids;
	int n;
};
int infect_preseize(pid_t pid, struct preseized *ps);
int infect_preseize_wait(struct preseized *ps);
void infect_preseized_free(struct preseized *ps);
/* target.c: 0, or fail() when pid is no process memdump may trace. */
int target_check(pid_t pid);
/* SIGKILL sent: the process never runs again; infect_release(c, true) reaps it.
 * Its parasite, if still in, dies with it: nothing left for a supervisor to reclaim. */
void infect_doom(struct infect_ctx *c);
void infect_release(struct infect_ctx *c, bool kill_process);
/* Not killed: neither gone nor a zombie. */
bool infect_alive(const struct infect_ctx *c);

/* remote.c: where remote syscalls run, looked for once (infect_syscall does) */
int infect_remote_init(struct infect_ctx *c);
/* system calls executed by frozen thread number `thread` */
int infect_syscall(struct infect_ctx *c, int thread, long nr, long *ret,
		   long a1, long a2, long a3, long a4, long a5, long a6);

/* parasite.c */
int infect_parasite(struct infect_ctx *c);
/* A scratch buffer of 2 KiB shared with the process: *local here, the
 * returned address there (for remote syscalls' in and out arguments). */
uint64_t parasite_scratch(struct infect_ctx *c, void **local);
/* The area's start in the process, 0 before infect_parasite: a mapping the
 * process did not make, that the process's mm made as it makes its own. */
uint64_t parasite_area(const struct infect_ctx *c);
/* Start the blob (parasite_vmsplice does it if need be); from here on the
 * process's memory does not change until infect_cure. */
int parasite_start(struct infect_ctx *c);
/* The leader out of the blob again (a remote syscall in it): parasite_start
 * starts it again. Done by infect_syscall() when it needs the leader. */
int parasite_pause(struct infect_ctx *c);
/* The leader's state read by the blob in one command (parasite_abi.h). */
struct parasite_state;
int parasite_state(struct infect_ctx *c, struct parasite_state *out);
/* Every other thread's own state at once, out[i] for thread i (out[0]
 * untouched): each runs the blob briefly (parasite_abi.h). */
struct parasite_thread_state;
int parasite_threads_state(struct infect_ctx *c, struct parasite_thread_state *out);
/* vmsplice the ranges (page-aligned) into out_fd, SPLICE_F_GIFT. */
int parasite_vmsplice(struct infect_ctx *c, const struct iovec *iov, size_t nr, int out_fd);
void infect_cure(struct infect_ctx *c);
/* The process is dead (killed with its parasite in): the dumper's side of
 * the parasite goes, nothing is asked of the process. */
void infect_forget(struct infect_ctx *c);

/* reclaim.c: after the dumper that kept tr died, unmap what it left. */
int infect_reclaim(const struct infect_trace *tr);

#endif
