/* Process-wide state of the target: what core, mm, pstree and fs images hold. */
#ifndef MEMDUMP_TASK_H
#define MEMDUMP_TASK_H

#include <stdbool.h>
#include <stdint.h>

#include "proc.h"

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
struct parasite_state;
int collect_task(struct dump_ctx *d, struct task_state *ts);
/* What the leader itself tells, in one parasite command: after every remote
 * syscall in it (the blob runs in the leader from here on). */
int collect_leader_inside(struct dump_ctx *d, struct task_state *ts);
/* procattr.c */
int collect_task_attrs(struct dump_ctx *d, struct task_attrs *a);
/* the timers, subreaper flag and membarrier registrations the blob read */
int task_attrs_from(struct dump_ctx *d, struct task_attrs *a, const struct parasite_state *st);

#endif
