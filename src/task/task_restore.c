/*
 * What the blob restores of the task, written into the restorer area: the mm
 * fields (prctl PR_SET_MM_MAP) and auxv, signal actions, rlimits, and per
 * thread its registers, FPU state, signal mask, alternate stack, robust
 * list, rseq, name and credentials; the pending signals, process-wide and
 * per thread, that the blob queues again before the final rt_sigreturn.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common.h"
#include "ctx/restore_ctx.h"
#include "task/task.h"

static void regs_from_image(struct rst_gpregs *d, const UserX86RegsEntry *s)
{
	d->r8 = s->r8; d->r9 = s->r9; d->r10 = s->r10; d->r11 = s->r11;
	d->r12 = s->r12; d->r13 = s->r13; d->r14 = s->r14; d->r15 = s->r15;
	d->di = s->di; d->si = s->si; d->bp = s->bp; d->bx = s->bx;
	d->dx = s->dx; d->ax = s->ax; d->cx = s->cx; d->sp = s->sp;
	d->ip = s->ip; d->flags = s->flags;
	d->cs = s->cs ? s->cs : 0x33;
	d->ss = s->ss ? s->ss : 0x2b;
	d->fs_base = s->fs_base;
	d->gs_base = s->gs_base;
}

void creds_from_image(struct rst_creds *d, const CredsEntry *c)
{
	const uint32_t *sets[5] = { c->cap_inh, c->cap_prm, c->cap_eff, c->cap_bnd, c->cap_amb };
	size_t ns[5] = { c->n_cap_inh, c->n_cap_prm, c->n_cap_eff, c->n_cap_bnd, c->n_cap_amb };
	unsigned int *dst[5] = { d->cap_inh, d->cap_prm, d->cap_eff, d->cap_bnd, d->cap_amb };

	d->uid = c->uid; d->euid = c->euid; d->suid = c->suid; d->fsuid = c->fsuid;
	d->gid = c->gid; d->egid = c->egid; d->sgid = c->sgid; d->fsgid = c->fsgid;
	for (int i = 0; i < 5; i++)
		for (size_t k = 0; k < 2; k++)
			dst[i][k] = k < ns[i] ? sets[i][k] : (i == 3 ? ~0u : 0);
	d->has_amb = c->n_cap_amb > 0;
	d->secbits = c->secbits;
	d->no_new_privs = c->has_no_new_privs && c->no_new_privs;
	d->nr_groups = MIN(c->n_groups, (size_t)RST_MAX_GROUPS);
	for (size_t i = 0; i < d->nr_groups; i++)
		d->groups[i] = c->groups[i];
}

size_t pending_sigs_count(struct rst *r)
{
	const SignalQueueEntry *q = r->leader->tc->signals_s;
	size_t n = q ? q->n_signals : 0;

	for (size_t i = 0; i < r->ds.nr_cores; i++) {
		q = r->ds.cores[i]->thread_core->signals_p;
		n += q ? q->n_signals : 0;
	}
	return n;
}

static size_t add_sigs(struct rst_siginfo *d, const SignalQueueEntry *q, unsigned tid)
{
	for (size_t i = 0; q && i < q->n_signals; i++) {
		d[i].tid = tid;
		memcpy(d[i].info, q->signals[i]->siginfo.data, RST_SIGINFO_SIZE);
	}
	return q ? q->n_signals : 0;
}

/* Pending signals, process-wide (tid 0) then per thread, in queue order. */
size_t pending_sigs_fill(struct rst *r, struct rst_siginfo *d)
{
	const PstreeEntry *pe = r->ds.pstree;
	size_t n = add_sigs(d, r->leader->tc->signals_s, 0);

	for (size_t i = 0; i < r->ds.nr_cores; i++)
		n += add_sigs(d + n, r->ds.cores[i]->thread_core->signals_p,
			      pe->n_threads ? pe->threads[i] : pe->pid);
	return n;
}

static void fill_mm(struct rst *r)
{
	const MmEntry *mm = r->ds.mm;
	struct rst_args *a = r->a;

	a->has_mm_map = 1;
	a->mm.start_code = mm->mm_start_code;
	a->mm.end_code = mm->mm_end_code;
	a->mm.start_data = mm->mm_start_data;
	a->mm.end_data = mm->mm_end_data;
	a->mm.start_brk = mm->mm_start_brk;
	a->mm.brk = mm->mm_brk;
	a->mm.start_stack = mm->mm_start_stack;
	a->mm.arg_start = mm->mm_arg_start;
	a->mm.arg_end = mm->mm_arg_end;
	a->mm.env_start = mm->mm_env_start;
	a->mm.env_end = mm->mm_env_end;
	a->mm.auxv_size = mm->n_mm_saved_auxv * 8;
	memcpy(r->area + a->auxv_off, mm->mm_saved_auxv, mm->n_mm_saved_auxv * 8);
	a->has_vdso = r->has_vdso;
	a->vdso_start = r->vdso_start;
	a->vdso_len = r->vdso_len;
	a->dumpable = mm->has_dumpable ? mm->dumpable : 1;
}

/* for benchmarks (scripts/bench-fill): MEMDUMP_FILL=collapse|plain|hugepage (else auto) */
static int fill_mode(void)
{
	const char *fm = getenv("MEMDUMP_FILL");

	if (fm && !strcmp(fm, "plain"))
		return RST_FILL_PLAIN;
	if (fm && !strcmp(fm, "hugepage"))
		return RST_FILL_HUGEPAGE;
	if (fm && !strcmp(fm, "collapse"))
		return RST_FILL_COLLAPSE;
	return RST_FILL_AUTO;
}

/*
 * The blob fills memory with two helper threads (the leader reads, one
 * populates ahead of it, one sums behind it) in a single process's restore;
 * a tree's is left alone: a helper's TID could be one of a process created
 * meanwhile. MEMDUMP_FILL_HELPER=0 turns them off (benchmarks).
 */
int fill_helper_wanted(void)
{
	const char *h = getenv("MEMDUMP_FILL_HELPER");

	if (h && !strcmp(h, "0"))
		return RST_HELP_NONE;
	if (h && !strcmp(h, "sum"))
		return RST_HELP_SUM;
	return RST_HELP_BOTH;
}

static void fill_rlimits(struct rst_args *a, const TaskRlimitsEntry *rl)
{
	if (!rl || !rl->n_rlimits)
		return;
	a->has_rlimits = 1;
	for (size_t i = 0; i < RST_NR_RLIMITS; i++) {
		struct rlimit cur;

		getrlimit(i, &cur);
		a->rlimits[i].cur = i < rl->n_rlimits ? rl->rlimits[i]->cur : cur.rlim_cur;
		a->rlimits[i].max = i < rl->n_rlimits ? rl->rlimits[i]->max : cur.rlim_max;
	}
}

/* The process-wide state: mm, THP, signal actions, rlimits. */
void fill_process(struct rst *r)
{
	const TaskCoreEntry *tc = r->leader->tc;
	const MmEntry *mm = r->ds.mm;
	struct rst_args *a = r->a;

	fill_mm(r);
	a->fill_mode = fill_mode();
	a->thp_disabled = (mm->has_thp_disabled && mm->thp_disabled) ||
			  (tc->has_thp_disabled && tc->thp_disabled);
	a->mlock_future = mm->has_mlock_future ? mm->mlock_future : 0;	/* check.c checked it */
	for (size_t i = 0; i < RST_NR_SIGS && i < tc->n_sigactions; i++) {
		a->sigacts[i].handler = tc->sigactions[i]->sigaction;
		a->sigacts[i].flags = tc->sigactions[i]->flags;
		a->sigacts[i].restorer = tc->sigactions[i]->restorer;
		a->sigacts[i].mask = tc->sigactions[i]->mask;
	}
	fill_rlimits(a, tc->rlimits);
}

static void fill_thread_core(struct rst_thread *t, const CoreEntry *c)
{
	const ThreadCoreEntry *th = c->thread_core;
	const char *comm = th->comm ? th->comm : (c->tc ? c->tc->comm : NULL);

	regs_from_image(&t->regs, c->thread_info->gpregs);
	t->clear_tid = c->thread_info->clear_tid_addr;
	t->blk_sigset = th->has_blk_sigset ? th->blk_sigset : (c->tc ? c->tc->blk_sigset : 0);
	if (th->sas) {
		t->has_sas = 1;
		t->sas_sp = th->sas->ss_sp;
		t->sas_size = th->sas->ss_size;
		t->sas_flags = th->sas->ss_flags;
	}
	if (th->futex_rla) {
		t->has_robust = 1;
		t->robust = th->futex_rla;
		t->robust_len = th->futex_rla_len;
	}
	if (th->rseq_entry && th->rseq_entry->rseq_abi_pointer) {
		t->has_rseq = 1;
		t->rseq_ptr = th->rseq_entry->rseq_abi_pointer;
		t->rseq_size = th->rseq_entry->rseq_abi_size;
		t->rseq_sig = th->rseq_entry->signature;
	}
	if (th->creds) {
		t->has_creds = 1;
		creds_from_image(&t->creds, th->creds);
	}
	snprintf(t->comm, sizeof(t->comm), "%s", comm ? comm : "");
}

unsigned rst_ns_tid(const PstreeEntry *pe, unsigned host_tid)
{
	for (size_t i = 0; i < pe->n_threads && i < pe->n_ns_threads; i++)
		if (pe->threads[i] == host_tid)
			return pe->ns_threads[i];
	return host_tid;
}

/* Every thread, its xsave image from xs_off on, its stack from stacks_off on. */
void fill_threads(struct rst *r, size_t xs_off, size_t stacks_off)
{
	struct dumpset *ds = &r->ds;
	struct rst_thread *rt = (struct rst_thread *)(r->area + r->a->threads_off);

	for (size_t i = 0; i < ds->nr_cores; i++) {
		const UserX86FpregsEntry *fp = ds->cores[i]->thread_info->fpregs;
		struct rst_thread *t = &rt[i];

		t->tid = ds->pstree->n_threads ? ds->pstree->threads[i] : ds->pstree->pid;
		t->ns_tid = ds->pstree->n_ns_threads > i ? ds->pstree->ns_threads[i] : 0;
		fill_thread_core(t, ds->cores[i]);
		if (fp && fp->has_xsave_raw) {
			t->xsave_off = xs_off;
			t->xsave_size = fp->xsave_raw.len;
			memcpy(r->area + xs_off, fp->xsave_raw.data, fp->xsave_raw.len);
			xs_off += ALIGN_UP(fp->xsave_raw.len, 64);
		}
		t->stack_top = stacks_off + (i + 1) * RST_STACK_SIZE;
	}
}
