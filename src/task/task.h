/* The task: what core, mm, pstree and fs images hold; its threads, scheduling, seccomp and
 * POSIX timers collected at dump; its restore (task_restore.c, procattr_restore.c, seccomp_restore.c). */
#ifndef MEMDUMP_TASK_H
#define MEMDUMP_TASK_H

#include <stdbool.h>
#include <stdint.h>

#include "proc.h"
#include "ctx/dump_ctx.h"
#include "ctx/restore_ctx.h"

#define NR_SIGS		64
#define NR_RLIMITS	16

struct ksigaction {
	uint64_t handler, flags, restorer, mask;
};

/* As many supplementary groups as the restorer sets (RST_MAX_GROUPS). */
#define CREDS_MAX_GROUPS	256

struct creds {
	uint32_t uid[4], gid[4];	/* real, effective, saved, fs */
	uint64_t cap_inh, cap_prm, cap_eff, cap_bnd, cap_amb;
	uint32_t secbits;
	uint32_t groups[CREDS_MAX_GROUPS];
	int nr_groups;
	uint32_t no_new_privs;
};

/* What the kernel keeps for the process beside its memory (procattr.c). */
struct task_attrs {
	int32_t oom_score_adj;
	uint32_t loginuid;
	bool child_subreaper;
	struct { uint64_t isec, iusec, vsec, vusec; } itimer[3];	/* REAL, VIRTUAL, PROF */
	uint32_t membarrier_mask;	/* MEMBARRIER_CMD_GET_REGISTRATIONS */
	char cgroup[4096];		/* /proc/PID/cgroup */
	char cgroup_ns[4096];		/* the same from inside its cgroup namespace, or "" */
};

struct task_state {
	struct proc_stat stat;
	uint64_t brk;
	uint64_t auxv[128];
	int nr_auxv;
	int exe_id, cwd_id, root_id;
	int dumpable;
	uint32_t personality, umask;
	bool thp_disabled;
	struct ksigaction sa[NR_SIGS];
	struct { uint64_t cur, max; } rlim[NR_RLIMITS];
	struct creds creds;
	struct task_attrs attrs;
};

struct dump_ctx;
struct parasite_state;
int collect_task(struct dump_ctx *d, struct task_state *ts);
/* The ids, groups, capabilities and no_new_privs /proc/PID/status shows (no securebits);
 * a zombie's too. false: more groups than c holds. */
bool task_proc_creds(pid_t pid, struct creds *c);
/* What the leader itself tells, in one parasite command: after every remote
 * syscall in it (the blob runs in the leader from here on). */
int collect_leader_inside(struct dump_ctx *d, struct task_state *ts);
/* procattr.c */
int collect_task_attrs(struct dump_ctx *d, struct task_attrs *a);
/* the timers, subreaper flag and membarrier registrations the blob read */
int task_attrs_from(struct dump_ctx *d, struct task_attrs *a, const struct parasite_state *st);

/* sched.c: policy, priority, nice, affinity (outside); the timer slack
 * each thread's parasite read goes in by thread_timer_slack() */
int collect_thread_sched(struct dump_ctx *d, int i);
int thread_timer_slack(struct dump_ctx *d, int i, long ret);

/* seccomp.c: every thread's mode and filters (PTRACE_SECCOMP_GET_FILTER) */
int collect_seccomp(struct dump_ctx *d);
void seccomp_free(struct dump_ctx *d);
/* seccomp_check.c: 0, or fail() when t's filters, installed before its
 * credentials, would deny a system call the restorer makes after them */
int seccomp_check_early(const struct dump_ctx *d, const struct thread *t);

/* ptimers.c: POSIX timers, by /proc/PID/timers and remote timer_gettime */
int collect_posix_timers(struct dump_ctx *d);

/* threads.c */
int collect_threads(struct dump_ctx *d);
/* every thread but the leader, by the parasite in each; the leader's from
 * its blob's answer */
int collect_threads_inside(struct dump_ctx *d);
struct parasite_state;
int leader_inside_from(struct dump_ctx *d, const struct parasite_state *st);
int collect_pending_signals(pid_t tid, bool shared, siginfo_t **out, int *nr);
/* A queued SIGSTOP is a stop: out of the queues, into d->stopped. */
void collect_stop_state(struct dump_ctx *d);
/* a remote syscall in thread i (0: the leader) */
int dump_syscall(struct dump_ctx *d, int i, long nr, long *ret, long a1, long a2, long a3,
		 long a4);

/* Restore (its _restore.c files) */

/* task.c */
size_t pending_sigs_count(struct rst *r);
size_t pending_sigs_fill(struct rst *r, struct rst_siginfo *d);
void fill_process(struct rst *r);
int fill_helper_wanted(void);
void fill_threads(struct rst *r, size_t xs_off, size_t stacks_off);
/* A core's creds_entry as the blob (and a zombie) sets them. */
struct CredsEntry;
void creds_from_image(struct rst_creds *d, const struct CredsEntry *c);

/* seccomp.c: seccomp.img checked, then its filters and each thread's chain in the area */
int seccomp_check(struct rst *r);
size_t seccomp_area_size(const struct rst *r);
void seccomp_fill(struct rst *r, size_t off);

/* attrs.c: what the kernel keeps beside memory (scheduling, oom, cgroup, timers ...) */
int attrs_check(struct rst *r);
void attrs_fill(struct rst *r);
/* In the child, before the blob: 0, or -errno with why[] filled. */
int attrs_apply_in_child(struct rst *r, char *why, size_t len);
/* memdump's own oom_score_adj and loginuid, which a forked process inherits (rst_init) */
void attrs_read_own(struct rst *r);
/* In the child, first: its session and process group as dumped. */
void attrs_apply_groups(struct rst *r);
/* The ID thread host_tid of the process sees of itself (its PID namespace's), for the blob. */
unsigned rst_ns_tid(const PstreeEntry *pe, unsigned host_tid);

#endif
