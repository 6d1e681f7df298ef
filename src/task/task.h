/* Process-wide state of the target: what core, mm, pstree and fs images hold. */
#ifndef MEMDUMP_TASK_H
#define MEMDUMP_TASK_H

#include <stdbool.h>
#include <stdint.h>

#include "proc.h"
#include "ctx/restore_ctx.h"

#define NR_SIGS		64
#define NR_RLIMITS	16

struct ksigaction {
	uint64_t handler, flags, restorer, mask;
};

struct creds {
	uint32_t uid[4], gid[4];	/* real, effective, saved, fs */
	uint64_t cap_inh, cap_prm, cap_eff, cap_bnd, cap_amb;
	uint32_t secbits;
	uint32_t groups[64];
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
int collect_task(struct dump_ctx *d, struct task_state *ts);
/* procattr.c */
int collect_task_attrs(struct dump_ctx *d, struct task_attrs *a);

/* Restore (its _restore.c files) */

/* task.c */
size_t pending_sigs_count(struct rst *r);
size_t pending_sigs_fill(struct rst *r, struct rst_siginfo *d);
void fill_process(struct rst *r);
int fill_helper_wanted(void);
void fill_threads(struct rst *r, size_t xs_off, size_t stacks_off);

/* seccomp.c: seccomp.img checked, then its filters and each thread's chain in the area */
int seccomp_check(struct rst *r);
size_t seccomp_area_size(const struct rst *r);
void seccomp_fill(struct rst *r, size_t off);

/* attrs.c: what the kernel keeps beside memory (scheduling, oom, cgroup, timers ...) */
int attrs_check(struct rst *r);
void attrs_fill(struct rst *r);
/* In the child, before the blob: 0, or -errno with why[] filled. */
int attrs_apply_in_child(struct rst *r, char *why, size_t len);
/* In the child, first: its session and process group as dumped. */
void attrs_apply_groups(struct rst *r);
/* The ID thread host_tid of the process sees of itself (its PID namespace's), for the blob. */
unsigned rst_ns_tid(const PstreeEntry *pe, unsigned host_tid);

#endif
