/*
 * Turning the collected state into CRIU-format images: core-TID, mm,
 * pstree, ids, fs, stats; then pagemap (with the runs' checksums, once the
 * pages are on disk) and inventory.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "dump/dump.h"
#include "dump/images.h"
#include "evloop/uffd.h"
#include "fault.h"
#include "ns/cgroups.h"
#include "ns/ns.h"
#include "image/compress.h"
#include "image/image.h"
#include "image/runsum.h"
#include "log.h"
#include "restart.h"
#include "task/task.h"
#include "vma_status.h"

#include "core.pb-c.h"
#include "fs.pb-c.h"
#include "inventory.pb-c.h"
#include "mm.pb-c.h"
#include "pagemap.pb-c.h"
#include "pstree.pb-c.h"
#include "ctx/proc_tree.h"
#include "dump/zombies.h"
#include "ns/pidns.h"
#include "seccomp.pb-c.h"
#include "stats.pb-c.h"
#include "mem/pages.h"

static int write_one(struct img_dir *dir, enum img_type t, unsigned id,
		     const ProtobufCMessage *m)
{
	struct image *img;
	int ret = img_create(dir, t, id, &img);

	if (ret)
		return ret;
	ret = img_write_msg(img, m);
	if (ret) {
		img_abort(img);
		return ret;
	}
	return img_close(img);
}

static void fill_gpregs(UserX86RegsEntry *g, const struct user_regs_struct *r)
{
	g->r15 = r->r15; g->r14 = r->r14; g->r13 = r->r13; g->r12 = r->r12;
	g->bp = r->rbp; g->bx = r->rbx; g->r11 = r->r11; g->r10 = r->r10;
	g->r9 = r->r9; g->r8 = r->r8; g->ax = r->rax; g->cx = r->rcx;
	g->dx = r->rdx; g->si = r->rsi; g->di = r->rdi; g->orig_ax = r->orig_rax;
	g->ip = r->rip; g->cs = r->cs; g->flags = r->eflags; g->sp = r->rsp;
	g->ss = r->ss; g->fs_base = r->fs_base; g->gs_base = r->gs_base;
	g->ds = r->ds; g->es = r->es; g->fs = r->fs; g->gs = r->gs;
	g->has_mode = true;
	g->mode = 1;
}

/* CRIU's split fpregs fields come from the legacy area of the XSAVE image. */
static void fill_fpregs(UserX86FpregsEntry *f, UserX86XsaveEntry *x, const struct thread *t)
{
	const uint8_t *a = t->xsave;

	f->cwd = *(uint16_t *)(a + 0);
	f->swd = *(uint16_t *)(a + 2);
	f->twd = *(uint16_t *)(a + 4);
	f->fop = *(uint16_t *)(a + 6);
	f->rip = *(uint64_t *)(a + 8);
	f->rdp = *(uint64_t *)(a + 16);
	f->mxcsr = *(uint32_t *)(a + 24);
	f->mxcsr_mask = *(uint32_t *)(a + 28);
	f->n_st_space = 32;
	f->st_space = (uint32_t *)(a + 32);
	f->n_xmm_space = 64;
	f->xmm_space = (uint32_t *)(a + 160);
	f->n_padding = 24;
	f->padding = (uint32_t *)(a + 416);
	if (t->xsave_len >= 576 + 256) {
		x->xstate_bv = *(uint64_t *)(a + 512);
		x->n_ymmh_space = 64;
		x->ymmh_space = (uint32_t *)(a + 576);
		f->xsave = x;
	}
	f->has_xsave_raw = true;
	f->xsave_raw.data = t->xsave;
	f->xsave_raw.len = t->xsave_len;
}

void fill_creds(CredsEntry *c, const struct creds *cr, uint32_t caps[5][2])
{
	const uint64_t *sets[5] = { &cr->cap_inh, &cr->cap_prm, &cr->cap_eff, &cr->cap_bnd,
				    &cr->cap_amb };

	c->uid = cr->uid[0]; c->euid = cr->uid[1]; c->suid = cr->uid[2]; c->fsuid = cr->uid[3];
	c->gid = cr->gid[0]; c->egid = cr->gid[1]; c->sgid = cr->gid[2]; c->fsgid = cr->gid[3];
	for (int i = 0; i < 5; i++) {
		caps[i][0] = (uint32_t)*sets[i];
		caps[i][1] = (uint32_t)(*sets[i] >> 32);
	}
	c->n_cap_inh = c->n_cap_prm = c->n_cap_eff = c->n_cap_bnd = c->n_cap_amb = 2;
	c->cap_inh = caps[0]; c->cap_prm = caps[1]; c->cap_eff = caps[2];
	c->cap_bnd = caps[3]; c->cap_amb = caps[4];
	c->secbits = cr->secbits;
	c->n_groups = cr->nr_groups;
	c->groups = (uint32_t *)cr->groups;
	c->has_no_new_privs = true;
	c->no_new_privs = cr->no_new_privs;
}

/* Queued signals as CRIU keeps them: raw siginfo_t bytes. One allocation:
 * the queue, then n pointers, then n entries. */
static SignalQueueEntry *signal_queue(const siginfo_t *v, int n)
{
	SignalQueueEntry *q = calloc(1, sizeof(*q) + n * (sizeof(SiginfoEntry *) + sizeof(SiginfoEntry)));
	SiginfoEntry **p;
	SiginfoEntry *e;

	if (!q)
		return NULL;
	signal_queue_entry__init(q);
	p = (SiginfoEntry **)(q + 1);
	e = (SiginfoEntry *)(p + n);
	for (int i = 0; i < n; i++) {
		siginfo_entry__init(&e[i]);
		e[i].siginfo.data = (uint8_t *)&v[i];
		e[i].siginfo.len = sizeof(v[i]);
		p[i] = &e[i];
	}
	q->n_signals = n;
	q->signals = p;
	return q;
}

static void fill_itimer(ItimerEntry *e, const struct task_attrs *a, int which)
{
	itimer_entry__init(e);
	e->isec = a->itimer[which].isec;
	e->iusec = a->itimer[which].iusec;
	e->vsec = a->itimer[which].vsec;
	e->vusec = a->itimer[which].vusec;
}

static void fill_posix_timer(PosixTimerEntry *e, const struct posix_timer *t)
{
	posix_timer_entry__init(e);
	e->it_id = t->id;
	e->clock_id = t->clock;
	e->si_signo = t->signo;
	e->it_sigev_notify = t->notify;
	e->sival_ptr = t->sival;
	e->overrun = t->overrun;
	e->isec = t->its.it_interval.tv_sec;
	e->insec = t->its.it_interval.tv_nsec;
	e->vsec = t->its.it_value.tv_sec;
	e->vnsec = t->its.it_value.tv_nsec;
	if (t->tid) {
		e->has_notify_thread_id = true;
		e->notify_thread_id = t->tid;
	}
}

/* oom_score_adj, loginuid, subreaper, interval timers, membarrier, cgroup. */
static void fill_task_attrs(TaskCoreEntry *tc, const struct task_attrs *a, TaskTimersEntry *tt,
			    ItimerEntry it[3])
{
	tc->has_oom_score_adj = true;
	tc->oom_score_adj = a->oom_score_adj;
	tc->has_loginuid = true;
	tc->loginuid = a->loginuid;
	tc->has_child_subreaper = true;
	tc->child_subreaper = a->child_subreaper;
	tc->has_membarrier_registration_mask = true;
	tc->membarrier_registration_mask = a->membarrier_mask;
	tc->cgroup = (char *)a->cgroup;
	tc->has_cg_set = a->cgroup[0] != 0;
	tc->cg_set = CG_SET_ID;
	tc->cgroup_ns = a->cgroup_ns[0] ? (char *)a->cgroup_ns : NULL;
	for (int w = 0; w < 3; w++)
		fill_itimer(&it[w], a, w);
	tt->real = &it[0];
	tt->virt = &it[1];
	tt->prof = &it[2];
	tc->timers = tt;
}

static int write_task_core(struct dump_ctx *d, const struct task_state *ts, CoreEntry *core)
{
	TaskCoreEntry tc = TASK_CORE_ENTRY__INIT;
	TaskTimersEntry tt = TASK_TIMERS_ENTRY__INIT;
	ItimerEntry it[3];
	PosixTimerEntry pt[MAX_POSIX_TIMERS], *ptp[MAX_POSIX_TIMERS];
	TaskRlimitsEntry rl = TASK_RLIMITS_ENTRY__INIT;
	RlimitEntry rle[NR_RLIMITS], *rlp[NR_RLIMITS];
	SaEntry sae[NR_SIGS], *sap[NR_SIGS];
	int ret;

	if (d->nr_ptimers > MAX_POSIX_TIMERS)
		return fail(-E2BIG, "process %d has %d POSIX timers, more than the %d memdump "
			    "restores", d->pid, d->nr_ptimers, MAX_POSIX_TIMERS);
	for (int i = 0; i < d->nr_ptimers; i++) {
		fill_posix_timer(&pt[i], &d->ptimers[i]);
		ptp[i] = &pt[i];
	}
	tt.n_posix = d->nr_ptimers;
	tt.posix = ptp;
	tc.task_state = d->stopped ? TASK_STOPPED : TASK_ALIVE;
	tc.has_stop_signo = d->stopped;
	tc.stop_signo = d->stop_signo;
	tc.personality = ts->personality;
	tc.blk_sigset = d->threads[0].sigmask;
	tc.comm = (char *)ts->stat.comm;
	for (int i = 0; i < NR_RLIMITS; i++) {
		rlimit_entry__init(&rle[i]);
		rle[i].cur = ts->rlim[i].cur;
		rle[i].max = ts->rlim[i].max;
		rlp[i] = &rle[i];
	}
	rl.n_rlimits = NR_RLIMITS;
	rl.rlimits = rlp;
	tc.rlimits = &rl;
	for (int i = 0; i < NR_SIGS; i++) {
		sa_entry__init(&sae[i]);
		sae[i].sigaction = ts->sa[i].handler;
		sae[i].flags = ts->sa[i].flags;
		sae[i].restorer = ts->sa[i].restorer;
		sae[i].mask = ts->sa[i].mask;
		sap[i] = &sae[i];
	}
	tc.n_sigactions = NR_SIGS;
	tc.sigactions = sap;
	tc.has_umask = true;
	tc.umask = ts->umask;
	tc.has_thp_disabled = true;
	tc.thp_disabled = ts->thp_disabled;
	fill_task_attrs(&tc, &ts->attrs, &tt, it);
	tc.signals_s = signal_queue(d->sigpending, d->nr_sigpending);
	if (!tc.signals_s)
		return -ENOMEM;
	core->tc = &tc;
	ret = write_one(&d->dir, IMG_CORE, d->threads[0].tid, &core->base);
	free(tc.signals_s);
	return ret;
}

/* Scheduling, parent-death signal and seccomp of one thread. */
static void fill_thread_attrs(ThreadCoreEntry *thc, const struct thread *t)
{
	thc->has_sched_policy = thc->has_sched_prio = thc->has_sched_nice = true;
	thc->sched_policy = t->sched.policy;
	thc->sched_prio = t->sched.prio;
	thc->sched_nice = t->sched.nice;
	thc->n_cpu_affinity = t->sched.nr_affinity;
	thc->cpu_affinity = (uint64_t *)t->sched.affinity;
	thc->has_timer_slack_ns = true;
	thc->timer_slack_ns = t->sched.timer_slack_ns;
	thc->has_pdeath_sig = true;
	thc->pdeath_sig = t->pdeath_sig;
	thc->has_cg_set = t->cg_set != 0;
	thc->cg_set = t->cg_set;
	thc->has_seccomp_mode = true;
	thc->seccomp_mode = t->seccomp.mode;
	if (t->seccomp.top >= 0) {
		thc->has_seccomp_filter = true;
		thc->seccomp_filter = t->seccomp.top;
	}
}

/*
 * A thread's own ids, groups and capabilities (a raw setresuid() changes
 * only the calling thread's): /proc/TID/status. Its securebits, which /proc
 * does not show, the thread read itself in the parasite (a prctl in one
 * thread sets that thread's only).
 */
static int thread_creds(const struct dump_ctx *d, const struct task_state *ts,
			const struct thread *t, struct creds *c)
{
	*c = (struct creds){ 0 };
	if (t == &d->threads[0]) {	/* the leader's: read at collect_task, nothing changed them */
		*c = ts->creds;
		c->secbits = t->secbits;
		return 0;
	}
	if (!task_proc_creds(t->tid, c))
		return fail(-EOPNOTSUPP, "thread %d has more than %d supplementary groups",
			    t->tid, CREDS_MAX_GROUPS);	/* refused at collect */
	c->secbits = t->secbits;
	return 0;
}

static int write_core(struct dump_ctx *d, const struct task_state *ts, const struct thread *t)
{
	CoreEntry core = CORE_ENTRY__INIT;
	ThreadInfoX86 ti = THREAD_INFO_X86__INIT;
	UserX86RegsEntry gp = USER_X86_REGS_ENTRY__INIT;
	UserX86FpregsEntry fp = USER_X86_FPREGS_ENTRY__INIT;
	UserX86XsaveEntry xs = USER_X86_XSAVE_ENTRY__INIT;
	ThreadCoreEntry thc = THREAD_CORE_ENTRY__INIT;
	ThreadSasEntry sas = THREAD_SAS_ENTRY__INIT;
	RseqEntry rseq = RSEQ_ENTRY__INIT;
	CredsEntry cr = CREDS_ENTRY__INIT;
	struct user_regs_struct regs = t->regs;
	struct creds own;
	uint32_t caps[5][2];
	int ret;

	regs_for_image(&regs);
	fill_gpregs(&gp, &regs);
	fill_fpregs(&fp, &xs, t);
	ti.clear_tid_addr = t->tid_address;
	ti.gpregs = &gp;
	ti.fpregs = &fp;
	core.mtype = CORE_ENTRY__MARCH__X86_64;
	core.thread_info = &ti;

	thc.futex_rla = t->robust_head;
	thc.futex_rla_len = t->robust_len;
	thc.has_blk_sigset = true;
	thc.blk_sigset = t->sigmask;
	if (t->ss_size) {
		sas.ss_sp = t->ss_sp;
		sas.ss_size = t->ss_size;
		sas.ss_flags = t->ss_flags;
		thc.sas = &sas;
	}
	if (t->rseq_abi) {
		rseq.rseq_abi_pointer = t->rseq_abi;
		rseq.rseq_abi_size = t->rseq_len;
		rseq.signature = t->rseq_sig;
		thc.rseq_entry = &rseq;
	}
	ret = thread_creds(d, ts, t, &own);
	if (ret)
		return ret;
	fill_creds(&cr, &own, caps);
	thc.creds = &cr;
	thc.comm = (char *)t->comm;
	fill_thread_attrs(&thc, t);
	thc.signals_p = signal_queue(t->sigpending, t->nr_sigpending);
	if (!thc.signals_p)
		return -ENOMEM;
	core.thread_core = &thc;
	if (t == &d->threads[0])
		ret = write_task_core(d, ts, &core);
	else
		ret = write_one(&d->dir, IMG_CORE, t->tid, &core.base);
	free(thc.signals_p);
	return ret;
}

static void fill_vma(VmaEntry *e, const struct vma *v)
{
	e->start = v->start;
	e->end = v->end;
	e->pgoff = v->pgoff;
	e->shmid = v->shmid;
	e->prot = v->prot;
	e->flags = v->flags;
	e->status = v->status;
	e->fd = -1;
	e->has_madv = v->madv != 0;
	e->madv = v->madv;
	e->name = (char *)v->name;
	e->has_locked = true;
	e->locked = v->locked;
	e->has_sealed = v->sealed;
	e->sealed = v->sealed;
	e->has_lock_onfault = v->lock_onfault;
	e->lock_onfault = v->lock_onfault;
	if (v->status & VMA_AREA_SYSVIPC) {	/* the attach's mode, as a file's open mode */
		e->has_fdflags = true;
		e->fdflags = v->sysv_rdonly ? O_RDONLY : O_RDWR;
	}
}

/* mm_entry.guards (field 50): the guard pages, which have no content. */
static int fill_guards(MmEntry *mm, const struct dump_ctx *d, GuardRegionEntry **g)
{
	*g = calloc(d->nr_guards + 1, sizeof(**g));
	mm->guards = calloc(d->nr_guards + 1, sizeof(*mm->guards));
	if (!*g || !mm->guards)
		return -ENOMEM;
	for (size_t i = 0; i < d->nr_guards; i++) {
		guard_region_entry__init(&(*g)[i]);
		(*g)[i].start = d->guards[i].start;
		(*g)[i].end = d->guards[i].end;
		mm->guards[i] = &(*g)[i];
	}
	mm->n_guards = d->nr_guards;
	return 0;
}

static int write_mm(struct dump_ctx *d, const struct task_state *ts)
{
	MmEntry mm = MM_ENTRY__INIT;
	VmaEntry *ve = calloc(d->nr_vmas, sizeof(*ve));
	VmaEntry **vp = calloc(d->nr_vmas, sizeof(*vp));
	const struct proc_stat *s = &ts->stat;
	GuardRegionEntry *ge = NULL;
	UffdEntry ue;
	int ret;

	if (!ve || !vp) {
		free(ve);
		free(vp);
		return -ENOMEM;
	}
	mm.mm_start_code = s->start_code;
	mm.mm_end_code = s->end_code;
	mm.mm_start_data = s->start_data;
	mm.mm_end_data = s->end_data;
	mm.mm_start_stack = s->start_stack;
	mm.mm_start_brk = s->start_brk;
	mm.mm_brk = ts->brk;
	mm.mm_arg_start = s->arg_start;
	mm.mm_arg_end = s->arg_end;
	mm.mm_env_start = s->env_start;
	mm.mm_env_end = s->env_end;
	mm.exe_file_id = ts->exe_id;
	mm.n_mm_saved_auxv = ts->nr_auxv;
	mm.mm_saved_auxv = (uint64_t *)ts->auxv;
	mm.has_dumpable = true;
	mm.dumpable = ts->dumpable;
	mm.has_thp_disabled = true;
	mm.thp_disabled = ts->thp_disabled;
	mm.has_mlock_future = d->mlock_future != 0;
	mm.mlock_future = d->mlock_future;
	for (int i = 0; i < d->nr_vmas; i++) {
		vma_entry__init(&ve[i]);
		fill_vma(&ve[i], &d->vmas[i]);
		vp[i] = &ve[i];
	}
	mm.n_vmas = d->nr_vmas;
	mm.vmas = vp;
	ret = fill_guards(&mm, d, &ge);
	if (!ret && d->uffd && !(ret = uffd_fill_entry(d->uffd, &ue)))
		mm.uffd = &ue;
	mm.n_iourings = d->nr_iourings;
	mm.iourings = d->iourings;
	if (!ret)
		ret = write_one(&d->dir, IMG_MM, d->pid, &mm.base);
	if (mm.uffd)
		uffd_entry_release(&ue);
	free(ve);
	free(vp);
	free(ge);
	free(mm.guards);
	return ret;
}

/* A run's kind in the pagemap: in pages-1.img, in the previous set, in the tree parent's. */
enum run_kind { RUN_OWN, RUN_PREV, RUN_TPARENT };

/* marks: the run's block marks (RUN_OWN of a set with them), else NULL */
static int write_pagemap_entry(struct image *img, const struct page_run *r, enum run_kind k,
			       uint64_t sum, const uint64_t *marks)
{
	PagemapEntry pe = PAGEMAP_ENTRY__INIT;

	if (marks) {
		pe.n_block_lanes = runsum_marks(r->nr_pages * PAGE_SIZE, RUNSUM_BLOCK_SHIFT) *
				   RUNSUM_LANES;
		pe.block_lanes = (uint64_t *)marks;
	}

	pe.vaddr = r->start;
	pe.compat_nr_pages = r->nr_pages;
	pe.has_nr_pages = true;
	pe.nr_pages = r->nr_pages;
	pe.has_flags = true;
	pe.flags = k == RUN_PREV ? PE_PARENT : k == RUN_OWN ? PE_PRESENT : 0;
	pe.has_in_parent = k == RUN_PREV;
	pe.in_parent = k == RUN_PREV;
	pe.has_in_tree_parent = k == RUN_TPARENT;
	pe.in_tree_parent = k == RUN_TPARENT;
	pe.has_sum = k == RUN_OWN;	/* the other sets' own pagemaps have those */
	pe.sum = sum;
	return img_write_msg(img, &pe.base);
}

/* The list whose next run comes first; i[k]: the next of each. */
static enum run_kind next_kind(const struct dump_ctx *d, const size_t i[3])
{
	const struct page_run *l[3] = { d->runs, d->parent_runs, d->tparent_runs };
	const size_t n[3] = { d->nr_runs, d->nr_parent_runs, d->nr_tparent_runs };
	int best = -1;

	for (int k = 0; k < 3; k++)
		if (i[k] < n[k] && (best < 0 || l[k][i[k]].start < l[best][i[best]].start))
			best = k;
	return (enum run_kind)best;
}

/*
 * pagemap-PID.img, with each run's checksum (sums[i]): the runs of pages-1.img,
 * of the parent set and of the tree parent's set, merged in address order as
 * CRIU lists them.
 */
/*
 * tmp: an unnamed file remembered as tmp, kept in *fd (dump_compress_late).
 * marks: the own runs' block marks, in order (runsum.h), or NULL (none).
 */
static int write_pagemap(struct dump_ctx *d, const uint64_t *sums, const uint64_t *marks,
			 const char *tmp, int *fd)
{
	size_t at = 0;
	PagemapHead head = PAGEMAP_HEAD__INIT;
	struct image *img;
	size_t i[3] = { 0, 0, 0 };
	size_t total = d->nr_runs + d->nr_parent_runs + d->nr_tparent_runs;
	int ret = tmp ? img_create_unnamed_as(&d->dir, IMG_PAGEMAP, tmp, &img, fd) :
			img_create(&d->dir, IMG_PAGEMAP, d->pid, &img);

	if (ret)
		return ret;
	head.pages_id = 1;
	head.has_compress = d->pages_compressed;
	head.compress = d->pages_compressed ? d->compress.algo : PZ_NONE;
	head.has_block_shift = marks != NULL;
	head.block_shift = RUNSUM_BLOCK_SHIFT;
	ret = img_write_msg(img, &head.base);
	for (size_t done = 0; !ret && done < total; done++) {
		enum run_kind k = next_kind(d, i);

		if (k == RUN_OWN) {
			ret = write_pagemap_entry(img, &d->runs[i[k]], k, sums[i[k]],
						  marks ? marks + at : NULL);
			at += runsum_marks(d->runs[i[k]].nr_pages * PAGE_SIZE,
					   RUNSUM_BLOCK_SHIFT) * RUNSUM_LANES;
		} else if (k == RUN_PREV) {
			ret = write_pagemap_entry(img, &d->parent_runs[i[k]], k, 0, NULL);
		} else {
			ret = write_pagemap_entry(img, &d->tparent_runs[i[k]], k, 0, NULL);
		}
		i[k]++;
	}
	if (ret) {
		img_abort(img);
		return ret;
	}
	return img_close(img);
}

static void compress_note(const struct dump_ctx *d, const char *name, uint64_t t0, uint64_t packed)
{
	pr_info("%s: %" PRIu64 " bytes compressed to %" PRIu64 " (%s) in %.3f s", name,
		d->stats.bytes_written, packed, pz_name(d->compress.algo), (now_us() - t0) / 1e6);
}

/*
 * --compress: pages-1.img, summed, replaced by its compressed form. Here, in
 * the inventory's writing: after the target runs again when it does
 * (--leave-running, pre-dump); a killing dump's (compress_late) comes after
 * its kill, in dump_compress_late(), but with hooks, encryption or in a tree
 * dump, where it is still frozen.
 */
static int compress_pages(struct dump_ctx *d)
{
	uint64_t t0 = now_us(), packed = 0;
	char name[64];
	int ret;

	if (d->compress.algo == PZ_NONE || d->compress_late)
		return 0;
	img_name(IMG_PAGES, 1, name, sizeof(name));
	ret = pz_compress_image(d->dir.fd, name, &d->compress, &packed);
	d->pages_compressed = !ret;
	if (!ret)
		compress_note(d, name, t0, packed);
	return ret;
}

/*
 * The checksum of every run for the pagemap, and of those for the inventory:
 * taken while the pages were written (pagesum.c), or, when they were not
 * (pages.c, sum_source), read back once from the image (the page cache, the
 * target running again).
 */
static int sum_and_write_pagemap(struct dump_ctx *d)
{
	uint64_t *lens = calloc(d->nr_runs + 1, sizeof(*lens));
	uint64_t *sums = calloc(d->nr_runs + 1, sizeof(*sums));
	uint64_t *marks = NULL;
	int ret = lens && sums ? 0 : -ENOMEM;

	for (size_t i = 0; !ret && i < d->nr_runs; i++)
		lens[i] = d->runs[i].nr_pages * PAGE_SIZE;
	if (!ret)
		marks = calloc(runsum_marks_size(lens, d->nr_runs) + 1, sizeof(*marks));
	if (!ret && !marks)
		ret = -ENOMEM;
	if (!ret && d->run_sums) {	/* taken from memory while written: no read-back */
		memcpy(sums, d->run_sums, d->nr_runs * sizeof(*sums));
		memcpy(marks, d->run_marks, runsum_marks_size(lens, d->nr_runs) * sizeof(*marks));
		ret = img_set_sum(&d->dir, IMG_PAGES, 1, d->pages_size, d->pages_hash, true);
	} else if (!ret) {
		ret = img_sum_runs(&d->dir, 1, lens, d->nr_runs, sums, marks);
	}
	if (!ret)
		ret = compress_pages(d);
	if (!ret)
		ret = write_pagemap(d, sums, marks, NULL, NULL);
	free(lens);
	if (!ret && d->compress_late) {
		free(d->late_sums);
		free(d->late_marks);
		d->late_sums = sums;	/* for the pagemap of the compressed pages */
		d->late_marks = marks;
		return 0;
	}
	free(sums);
	free(marks);
	return ret;
}

/* A process in the PID namespace of its tree (pidns.c): the IDs it sees there, into pe. */
static int fill_ns_ids(PstreeEntry *pe, uint32_t *ns_tids)
{
	int ret = pidns_ids((pid_t)pe->pid, (const pid_t *)pe->threads, (int)pe->n_threads, ns_tids,
			    &pe->ns_pgid, &pe->ns_sid);

	if (ret)
		return fail(ret, "cannot read the PID namespace IDs of process %u", pe->pid);
	pe->n_ns_threads = pe->n_threads;
	pe->ns_threads = ns_tids;
	pe->has_ns_pgid = pe->has_ns_sid = true;
	return 0;
}

/* The tree's other live processes after the root's zombies (treedump.c). */
static int write_below(struct dump_ctx *d, struct image *img, bool pid_ns)
{
	int ret = 0;

	for (int i = 0; i < d->nr_below && !ret; i++) {
		PstreeEntry be = PSTREE_ENTRY__INIT;
		uint32_t *ns_tids = calloc(d->below[i].nr_tids + 1, sizeof(*ns_tids));

		if (!ns_tids)
			return -ENOMEM;
		be.pid = d->below[i].pid;
		be.ppid = d->below[i].ppid;
		be.pgid = d->below[i].pgid;
		be.sid = d->below[i].sid;
		be.n_threads = d->below[i].nr_tids;
		be.threads = (uint32_t *)d->below[i].tids;
		if (pid_ns)
			ret = fill_ns_ids(&be, ns_tids);
		if (!ret)
			ret = img_write_msg(img, &be.base);
		free(ns_tids);
	}
	return ret;
}

static int write_pstree(struct dump_ctx *d, const struct task_state *ts)
{
	PstreeEntry pe = PSTREE_ENTRY__INIT;
	uint32_t *tids = calloc(d->nr_threads, sizeof(*tids));
	uint32_t *ns_tids = calloc(d->nr_threads, sizeof(*ns_tids));
	bool pid_ns = d->tree && pidns_own(d->pid);
	struct image *img = NULL;
	int ret = 0;

	if (!tids || !ns_tids) {
		free(tids);
		free(ns_tids);
		return -ENOMEM;
	}
	pe.pid = d->pid;
	/* the dump's root has no parent in the set: 0, as CRIU writes (crit x ps builds on
	 * it); a member of a tree (its subset) names its parent in the tree */
	pe.ppid = !d->tree || d->tree->procs[0].pid == d->pid ? 0 : ts->stat.ppid;
	pe.pgid = ts->stat.pgid;
	pe.sid = ts->stat.sid;
	for (int i = 0; i < d->nr_threads; i++)
		tids[i] = d->threads[i].tid;
	pe.n_threads = d->nr_threads;
	pe.threads = tids;
	if (pid_ns)
		ret = fill_ns_ids(&pe, ns_tids);
	if (!ret)
		ret = img_create(&d->dir, IMG_PSTREE, 0, &img);
	if (!ret)
		ret = img_write_msg(img, &pe.base);
	if (!ret)
		ret = write_zombies(d, ts, img);	/* after their parent, as CRIU orders them */
	if (!ret)
		ret = write_below(d, img, pid_ns);
	if (img && ret)
		img_abort(img);
	else if (img)
		ret = img_close(img);
	free(tids);
	free(ns_tids);
	return ret;
}

static int write_ids_fs(struct dump_ctx *d, const struct task_state *ts)
{
	TaskKobjIdsEntry ids = TASK_KOBJ_IDS_ENTRY__INIT;
	FsEntry fs = FS_ENTRY__INIT;
	int ret;

	ids.vm_id = ids.files_id = ids.fs_id = ids.sighand_id = 1;
	if (d->kobj.self)	/* a tree's process: one id per table (share.c) */
		ids.vm_id = ids.sighand_id = d->kobj.self;	/* never shared: its own */
	ids.files_id = d->kobj.files ? d->kobj.files : 1;
	ids.fs_id = d->kobj.fs ? d->kobj.fs : 1;
	ns_fill_ids(d->own_ns, &ids);
	ids.has_mnt_ns_id = d->mnt_ns_id != 0;	/* another mount namespace than its root's */
	ids.mnt_ns_id = d->mnt_ns_id;
	ret = write_one(&d->dir, IMG_IDS, d->pid, &ids.base);
	if (ret)
		return ret;
	fs.cwd_id = ts->cwd_id;
	fs.root_id = ts->root_id;
	fs.has_umask = true;
	fs.umask = ts->umask;
	return write_one(&d->dir, IMG_FS, d->pid, &fs.base);
}

/* seccomp.img, when a thread has filters: every filter once, prev links as in CRIU. */
static int write_seccomp(struct dump_ctx *d)
{
	SeccompEntry se = SECCOMP_ENTRY__INIT;
	SeccompFilter *f, **fp;
	int ret;

	if (!d->nr_filters)
		return 0;
	f = calloc(d->nr_filters, sizeof(*f));
	fp = calloc(d->nr_filters, sizeof(*fp));
	if (!f || !fp) {
		free(f);
		free(fp);
		return -ENOMEM;
	}
	for (int i = 0; i < d->nr_filters; i++) {
		seccomp_filter__init(&f[i]);
		f[i].filter.data = d->filters[i].insns;
		f[i].filter.len = d->filters[i].len;
		f[i].has_prev = d->filters[i].prev >= 0;
		f[i].prev = d->filters[i].prev;
		f[i].has_flags = true;
		f[i].flags = d->filters[i].flags;
		fp[i] = &f[i];
	}
	se.n_seccomp_filters = d->nr_filters;
	se.seccomp_filters = fp;
	ret = write_one(&d->dir, IMG_SECCOMP, 0, &se.base);
	free(f);
	free(fp);
	return ret;
}

int write_task_images(struct dump_ctx *d, const struct task_state *ts)
{
	int ret = 0;

	if (ts->attrs.cgroup[0])	/* first: each thread's set goes in its core */
		ret = write_cgroups(d, ts->attrs.cgroup);
	for (int i = 0; i < d->nr_threads && !ret; i++)
		ret = write_core(d, ts, &d->threads[i]);
	if (!ret)
		ret = write_mm(d, ts);
	if (!ret)
		ret = write_pstree(d, ts);
	if (!ret)
		ret = write_ids_fs(d, ts);
	if (!ret)
		ret = write_seccomp(d);
	return ret;
}

int write_stats(struct dump_ctx *d)
{
	StatsEntry se = STATS_ENTRY__INIT;
	DumpStatsEntry ds = DUMP_STATS_ENTRY__INIT;
	const struct dump_stats *s = &d->stats;

	ds.freezing_time = s->frozen_at - s->freeze_start;
	ds.frozen_time = (s->unfrozen_at ?: now_us()) - s->frozen_at;	/* a pre-dump's late pages after */
	ds.memdump_time = s->mem_end - s->mem_start;
	ds.memwrite_time = ds.memdump_time;
	ds.pages_scanned = s->pages_scanned;
	ds.pages_written = s->pages_written;
	ds.pages_skipped_parent = s->pages_in_parent;
	ds.has_shpages_scanned = ds.has_shpages_skipped_parent = ds.has_shpages_written = true;
	ds.shpages_scanned = ds.shpages_written = s->shpages_written;	/* all of it, always */
	ds.shpages_skipped_parent = 0;
	ds.mode = (char *)mode_name(d->mode);
	ds.has_bytes_written = true;
	ds.bytes_written = s->bytes_written;
	se.dump = &ds;
	return write_one(&d->dir, IMG_STATS, 0, &se.base);
}

static int inventory(struct dump_ctx *d, bool pagemap, int *unnamed);

int write_inventory(struct dump_ctx *d)
{
	return inventory(d, true, NULL);
}

/* The unnamed files' data on the disk before their names replace the raw set's. */
static int sync_unnamed(const int fds[3])
{
	for (int i = 0; i < 3; i++)
		if (fdatasync(fds[i]) && errno != EINVAL)
			return fail(-errno, "cannot sync the compressed images: %s", strerror(errno));
	return 0;
}

/*
 * The compressed set written whole beside the raw one, nothing of it named:
 * pages-1.img (zfd), its pagemap and the inventory that lists the new
 * pagemap, each an unnamed file, synced. A memdump killed, or a disk full,
 * until then leaves the raw set as it was, complete (compress-killed-late,
 * compress-late-fail).
 */
static int write_compressed_set(struct dump_ctx *d, int fds[3])
{
	char pagemap[64], tmp[80];
	int ret;

	img_name(IMG_PAGEMAP, d->pid, pagemap, sizeof(pagemap));
	snprintf(tmp, sizeof(tmp), ".%s.z", pagemap);
	d->pages_compressed = true;
	ret = write_pagemap(d, d->late_sums, d->late_marks, tmp, &fds[1]);
	if (!ret)
		ret = img_adopt_created(&d->dir, tmp, pagemap);
	if (!ret)
		ret = inventory(d, false, &fds[2]);
	if (!ret)
		ret = sync_unnamed(fds);
	if (!ret)
		ret = fault_step("pages-compressed");
	if (ret)
		d->pages_compressed = false;
	return ret;
}

/*
 * Then its three names over the raw ones, inventory.img last: a few renames
 * in which a kill leaves a set the checks refuse (the pagemap's size or
 * checksum does not match), never one restored wrong.
 */
static int swap_compressed(struct dump_ctx *d, const int fds[3], const char *pages)
{
	char pagemap[64];
	int ret;

	img_name(IMG_PAGEMAP, d->pid, pagemap, sizeof(pagemap));
	ret = img_replace_fd(&d->dir, pages, fds[0]);
	if (!ret)
		ret = img_replace_fd(&d->dir, pagemap, fds[1]);
	if (!ret)
		ret = img_replace_fd(&d->dir, "inventory.img", fds[2]);
	if (ret)
		fail_context("process %d was killed, but its compressed images are not complete: ",
			     d->pid);
	return ret;
}

int dump_compress_late(struct dump_ctx *d)
{
	uint64_t t0 = now_us(), packed = 0;
	char pages[64];
	int fds[3] = { -1, -1, -1 }, ret;

	if (!d->compress_late)
		return 0;
	d->compress_late = false;
	img_name(IMG_PAGES, 1, pages, sizeof(pages));
	fds[0] = img_create_unnamed(d->dir.fd);
	ret = fds[0] < 0 ? fail(fds[0], "cannot create the compressed %s: %s", pages,
				strerror(-fds[0])) :
			   pz_compress_fd(d->dir.fd, pages, fds[0], &d->compress, &packed);
	if (!ret)
		ret = write_compressed_set(d, fds);
	if (ret) {	/* the raw set is complete: the process is in it */
		pr_warn("%s; %s is left uncompressed", fail_reason(), pages);
		fail_clear();
		ret = 0;
	} else {
		compress_note(d, pages, t0, packed);
		ret = swap_compressed(d, fds, pages);
	}
	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return ret;
}

/* unnamed: inventory.img's content into an unnamed file, *unnamed (dump_compress_late) */
static int inventory(struct dump_ctx *d, bool pagemap, int *unnamed)
{
	InventoryEntry inv = INVENTORY_ENTRY__INIT;
	TaskKobjIdsEntry ids = TASK_KOBJ_IDS_ENTRY__INIT;
	struct utsname u;
	struct timespec ts;
	char tool[32];
	int ret;

	uname(&u);
	clock_gettime(CLOCK_BOOTTIME, &ts);
	ids.vm_id = ids.files_id = ids.fs_id = ids.sighand_id = 1;
	inv.img_version = 2;	/* CRIU's CRTOOLS_IMAGES_V1_1 */
	inv.has_fdinfo_per_id = true;
	inv.fdinfo_per_id = true;
	ns_fill_ids(d->own_ns, &ids);
	inv.root_ids = &ids;
	inv.has_own_ns = d->own_ns != 0;
	inv.own_ns = d->own_ns;
	inv.ext_net_key = (char *)d->ext_net_key;
	inv.has_dump_uptime = true;
	inv.dump_uptime = ts.tv_sec * 1000000ULL + ts.tv_nsec / 1000;
	snprintf(tool, sizeof(tool), "memdump %s", MEMDUMP_VERSION);
	inv.tool = tool;
	inv.kernel = u.release;
	inv.has_pages_bytes = true;
	inv.pages_bytes = d->stats.bytes_written;
	inv.has_tcp_close = inv.tcp_close = d->sockets.tcp_close;
	inv.has_pre_dump_mode = d->pre_dump;
	inv.pre_dump_mode = d->mode == MODE_SPLICE ? 1 : 2;	/* CRIU: SPLICE, READ */
	inv.has_parent_inventory = d->nr_parent_runs > 0;
	inv.parent_inventory = d->parent.inventory_hash;
	ret = pagemap ? sum_and_write_pagemap(d) : 0;
	if (!ret && pagemap && d->xfer)	/* the page server holds its images first */
		ret = page_xfer_commit(d);
	if (ret)
		return ret;
	return unnamed ? img_write_inventory_unnamed(&d->dir, &inv, unnamed) :
			 img_write_inventory(&d->dir, &inv);
}
