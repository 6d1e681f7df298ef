/*
 * Restore, step 1: everything is checked before anything starts. Nothing is
 * created when a file changed since the dump, a PID or TID is taken, the
 * vdso or the CPU's FPU state differ, or an image is inconsistent (a pages
 * image that does not match its pagemap, a VMA with no file, ...).
 */
#include <cpuid.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "proc.h"
#include "files/fd_kinds.h"
#include "image/rstcheck.h"
#include "restore/restore.h"
#include "vma_status.h"
#include "vdso_layout.h"
#include "files/ghost.h"
#include "files/locks.h"
#include "evloop/uffd.h"
#include "evloop/iouring.h"
#include "mem/hugetlb.h"
#include "mem/shmem.h"
#include "mem/vma.h"
#include "ns/cgroups.h"
#include "restore/pipeline.h"
#include "task/task.h"

static const char *vma_desc(const VmaEntry *v, char *buf, size_t len)
{
	snprintf(buf, len, "VMA %#" PRIx64 "-%#" PRIx64 " (%s)", v->start, v->end,
		 v->name && v->name[0] ? v->name : "anonymous");
	return buf;
}

#define NR_MSEAL	462	/* x86-64; not in every libc's headers */
#define ZOMBIE_WAIT_MS	5000

/*
 * A killing dump returns without waiting for the killed process's parent
 * to reap it (on this VM, PID 1 takes 1-2 s for an orphan such as a
 * container's init): a PID still held by a zombie is waited for here, up
 * to ZOMBIE_WAIT_MS; a zombie its parent never reaps is named. 0: the PID
 * is free, 1: a live process has it.
 */
int rst_wait_zombie_gone(pid_t id)
{
	struct proc_stat st;
	char comm[32] = "?";

	for (int ms = 0; ms < ZOMBIE_WAIT_MS; ms += 10) {
		if (proc_read_stat(id, &st))
			return 0;	/* gone */
		if (st.state != 'Z' && st.state != 'X')
			return 1;
		usleep(10000);
	}
	if (proc_read_stat(id, &st))
		return 0;
	proc_comm(st.ppid, comm, sizeof(comm));
	return fail(-EEXIST, "PID %d is held by a zombie: its parent %d (%s) has not reaped it "
		    "in %d s", id, st.ppid, comm, ZOMBIE_WAIT_MS / 1000);
}

static int check_id_free(pid_t id, bool leader)
{
	char path[32];
	int ret;

	snprintf(path, sizeof(path), "/proc/%d", id);
	if (access(path, F_OK))
		return 0;
	ret = rst_wait_zombie_gone(id);
	if (ret <= 0)
		return ret;
	return leader ? fail(-EEXIST, "PID %d is in use", id)
		      : fail(-EEXIST, "TID %d (a thread of the dump) is in use", id);
}

static uint32_t cpu_xstate_size(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid_count(0xd, 0, &a, &b, &c, &d))
		return 0;
	return b;
}

/* Pending signals are raw siginfo_t images: they must be one each. */
static int check_sigqueue(const SignalQueueEntry *q, unsigned tid)
{
	for (size_t i = 0; q && i < q->n_signals; i++) {
		const SiginfoEntry *si = q->signals[i];
		int sig;

		if (!si || si->siginfo.len != RST_SIGINFO_SIZE)
			return fail(-EIO, "core-%u.img: pending signal %zu is not a siginfo", tid, i);
		memcpy(&sig, si->siginfo.data, sizeof(sig));
		if (sig < 1 || sig > RST_NR_SIGS)
			return fail(-EIO, "core-%u.img: pending signal %d is out of range", tid, sig);
	}
	return 0;
}

/*
 * mlockall(MCL_FUTURE[|MCL_ONFAULT]), which the blob calls as memdump's
 * child: it needs CAP_IPC_LOCK or room under RLIMIT_MEMLOCK here.
 */
static int check_mlock_future(const MmEntry *mm, unsigned int pid)
{
	struct rlimit rl;

	if (!mm->has_mlock_future || !mm->mlock_future)
		return 0;
	if (mm->mlock_future != MCL_FUTURE && mm->mlock_future != (MCL_FUTURE | MCL_ONFAULT))
		return fail(-EIO, "mm-%u.img: mlock_future %#x is not mlockall(MCL_FUTURE) flags",
			    pid, mm->mlock_future);
	if (rst_capable(CAP_IPC_LOCK) || (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur))
		return 0;
	return fail(-EPERM, "process %u locks its future mappings (mlockall MCL_FUTURE), which "
		    "needs CAP_IPC_LOCK or a non-zero RLIMIT_MEMLOCK here", pid);
}

static int check_threads(struct rst *r)
{
	const PstreeEntry *pe = r->ds.pstree;
	uint32_t xsize = cpu_xstate_size();
	int ret;

	if (!r->ds.nr_cores || !r->ds.cores[0]->tc)
		return fail(-EIO, "core-%u.img has no task state", pe->pid);
	if (pe->n_threads && pe->threads[0] != pe->pid)
		return fail(-EIO, "pstree.img: the first thread is not the leader");
	if (pe->n_threads > 4096)
		return fail(-E2BIG, "too many threads (%zu)", pe->n_threads);
	for (size_t i = 0; i < r->ds.nr_cores; i++) {
		const CoreEntry *c = r->ds.cores[i];
		unsigned tid = pe->n_threads ? pe->threads[i] : pe->pid;

		if (c->mtype != CORE_ENTRY__MARCH__X86_64 || !c->thread_info ||
		    !c->thread_info->gpregs || !c->thread_core)
			return fail(-EIO, "core-%u.img is not an x86-64 thread image", tid);
		if (c->thread_info->gpregs->has_mode && c->thread_info->gpregs->mode != 1)
			return fail(-EOPNOTSUPP, "thread %u is a 32-bit (compat) thread", tid);
		if (c->thread_info->fpregs && c->thread_info->fpregs->has_xsave_raw) {
			size_t n = c->thread_info->fpregs->xsave_raw.len;

			if (n < 576 || (xsize && n > xsize))
				return fail(-EINVAL, "thread %u: its FPU state (%zu bytes) does not fit "
					    "this CPU (%u bytes of XSAVE state)", tid, n, xsize);
		}
		ret = check_sigqueue(c->thread_core->signals_p, tid);
		if (ret)
			return ret;
		if (c->thread_core->creds && c->thread_core->creds->n_groups > RST_MAX_GROUPS)
			return fail(-E2BIG, "thread %u has too many groups", tid);
		/* --copies: each in a new PID namespace, where every ID is free */
		ret = r->o->copies ? 0 : check_id_free(tid, i == 0);
		if (ret)
			return ret;
	}
	ret = check_sigqueue(r->ds.cores[0]->tc->signals_s, pe->pid);
	if (ret)
		return ret;
	if (r->ds.mm->n_mm_saved_auxv > RST_MAX_AUXV)
		return fail(-E2BIG, "mm-%u.img: auxv too long", pe->pid);
	return check_mlock_future(r->ds.mm, pe->pid);
}

/* The dumped vDSO is where the restore maps this kernel's: laid out the same. */
static int check_vdso(struct rst *r)
{
	const MmEntry *mm = r->ds.mm;
	struct vdso_part parts[8] = { 0 };	/* gcc 12 warns it maybe-uninitialized */
	size_t n = 0;
	char why[160];

	for (size_t i = 0; i < mm->n_vmas; i++) {
		const VmaEntry *v = mm->vmas[i];

		if (!(v->status & (VMA_AREA_VDSO | VMA_AREA_VVAR)))
			continue;
		if (n == 8)
			return fail(-EINVAL, "the dumped vdso has more than 8 parts");
		parts[n++] = (struct vdso_part){ v->name ? v->name : "", v->start, v->end };
	}
	if (vdso_layout_check(parts, n, why, sizeof(why)))
		return fail(-EINVAL, "the dumped process cannot have its vdso back: %s%s", why,
			    " (dumped on another kernel?)");
	r->has_vdso = n > 0;
	if (n) {
		r->vdso_start = parts[0].start;
		r->vdso_len = parts[n - 1].end - parts[0].start;
	}
	return 0;
}

/*
 * Sealed VMAs are sealed again by the restorer, last: refused before
 * anything runs on a kernel without mseal() (Linux < 6.10), which
 * mseal(0, 0, 0) tells (0 there, ENOSYS or EINVAL before).
 */
static int check_seal(struct rst *r)
{
	const MmEntry *mm = r->ds.mm;
	char buf[256];
	int err;

	for (size_t i = 0; i < mm->n_vmas; i++) {
		const VmaEntry *v = mm->vmas[i];

		if (!v->has_sealed || !v->sealed)
			continue;
		if (!syscall(NR_MSEAL, 0UL, 0UL, 0UL))
			return 0;
		err = errno;
		return fail(-err, "mm-%u.img: %s is sealed (mseal), which this kernel cannot "
			    "do: %s", r->pid, vma_desc(v, buf, sizeof(buf)), strerror(err));
	}
	return 0;
}

static int check_vmas(struct rst *r)
{
	const MmEntry *mm = r->ds.mm;
	uint64_t prev_end = 0;
	char buf[256];

	for (size_t i = 0; i < mm->n_vmas; i++) {
		const VmaEntry *v = mm->vmas[i];
		bool file = (v->status & (VMA_FILE_PRIVATE | VMA_FILE_SHARED)) && !vma_shm_private(v);

		if (v->start >= v->end || (v->start | v->end) & (PAGE_SIZE - 1) || v->start < prev_end)
			return fail(-EIO, "mm-%u.img: %s is bad or out of order", r->pid,
				    vma_desc(v, buf, sizeof(buf)));
		if (file && !rst_reg_path(r, v->shmid))
			return fail(-EIO, "mm-%u.img: %s names no file in files.img", r->pid,
				    vma_desc(v, buf, sizeof(buf)));
		if (vma_shm_private(v) && !shm_find(r, v->shmid))
			return fail(-EIO, "mm-%u.img: %s maps shared memory %" PRIu64 ", which is not "
				    "in the images", r->pid, vma_desc(v, buf, sizeof(buf)), v->shmid);
		if ((file || vma_shm_private(v)) && (v->pgoff & (PAGE_SIZE - 1)))
			return fail(-EIO, "mm-%u.img: %s has an unaligned file offset", r->pid,
				    vma_desc(v, buf, sizeof(buf)));
		if (v->has_lock_onfault && v->lock_onfault && !(v->has_locked && v->locked))
			return fail(-EIO, "mm-%u.img: %s is locked on fault but not locked", r->pid,
				    vma_desc(v, buf, sizeof(buf)));
		if (!(v->status & VMA_AREA_VSYSCALL))
			prev_end = v->end;
	}
	return check_seal(r);
}

/*
 * The restorer, forked from memdump, unmaps every mapping of memdump's
 * first: none may be sealed (a kernel built with CONFIG_MSEAL_SYSTEM_MAPPINGS
 * seals the vDSO of every process, glibc.rtld.seal the loader's mappings).
 */
static int check_own_seals(void)
{
	char what[320];
	int ret = self_sealed_mapping(what, sizeof(what));

	if (ret < 0)
		return fail(ret, "cannot read memdump's own smaps: %s", strerror(-ret));
	if (ret)
		return fail(-EOPNOTSUPP, "memdump's own mapping %s is sealed (mseal: "
			    "CONFIG_MSEAL_SYSTEM_MAPPINGS or glibc.rtld.seal): the restorer could "
			    "not unmap it", what);
	return 0;
}

/*
 * The runs of pagemap-PID.img: present, in order, each inside a VMA that
 * takes them (shared memory has its own pagemap-shmem images); *total: bytes.
 */
static int check_runs(struct rst *r, uint64_t *total)
{
	const MmEntry *mm = r->ds.mm;
	struct dumpset *ds = &r->ds;
	size_t vi = 0;
	char buf[256];

	*total = 0;
	for (size_t i = 0; i < ds->nr_runs; i++) {
		const struct dump_run *run = &ds->runs[i];
		const VmaEntry *v;

		if (!run->present)
			return fail(-EIO, "pagemap-%u.img: pages at %#" PRIx64 " are in no image of "
				    "the chain", r->pid, run->start);
		if (i && run->start < ds->runs[i - 1].end)
			return fail(-EIO, "pagemap-%u.img: overlapping runs at %#" PRIx64, r->pid,
				    run->start);
		while (vi < mm->n_vmas && mm->vmas[vi]->end <= run->start)
			vi++;
		v = vi < mm->n_vmas ? mm->vmas[vi] : NULL;
		if (!v || run->start < v->start || run->end > v->end)
			return fail(-EIO, "pagemap-%u.img: pages %#" PRIx64 "-%#" PRIx64 " are outside "
				    "every VMA", r->pid, run->start, run->end);
		if (vma_how(v) == RST_MAP_SKIP || vma_how(v) == RST_MAP_SYSV || (v->status & (VMA_FILE_SHARED | VMA_ANON_SHARED)))
			return fail(-EIO, "pagemap-%u.img: pages dumped for %s, which cannot take "
				    "them", r->pid, vma_desc(v, buf, sizeof(buf)));
		if (run->fd == ds->pages_fd)	/* not a parent set's */
			*total += run->end - run->start;
	}
	return 0;
}

static int check_memory(struct rst *r)
{
	struct dumpset *ds = &r->ds;
	uint64_t total;
	int64_t size;
	int ret = check_vmas(r);

	if (!ret)
		ret = check_runs(r, &total);
	if (ret)
		return ret;
	size = dumpset_pages_size(ds);	/* a compressed one's raw bytes */
	if (size < 0)
		return (int)size;
	if ((uint64_t)size != total)
		return fail(-EIO, "pages-1.img holds %lld bytes, the pagemap lists %" PRIu64,
			    (long long)size, total);
	if (ds->inv->has_pages_bytes && ds->inv->pages_bytes != total)
		return fail(-EIO, "inventory.img says %" PRIu64 " bytes of pages, the pagemap lists %"
			    PRIu64, ds->inv->pages_bytes, total);
	ret = check_vdso(r);
	/* memdump's, not the set's: once for a fan-out (its template makes smaps long) */
	return ret || r->own_checked ? ret : check_own_seals();
}

/* Every entry of files.img of a kind memdump restores, and what its kind checks. */
static int check_file_entry(struct rst *r, const FileEntry *fe)
{
	const struct fd_kind *k = fd_kind_of_entry(fe);

	if (!k)
		return fail(-EOPNOTSUPP, "files.img: file %u has a type (%d) restore does not "
			    "support, or no entry for it", fe->id, fe->type);
	return k->check ? k->check(r, fe) : 0;
}

static int check_fdinfo(struct rst *r)
{
	struct dumpset *ds = &r->ds;

	for (size_t i = 0; i < ds->nr_fds; i++) {
		const FdinfoEntry *fd = ds->fds[i];

		if (!rst_file(r, fd->id))
			return fail(-EIO, "fdinfo: fd %u names file %u, not in files.img", fd->fd,
				    fd->id);
		if (fd->fd > 1u << 20)
			return fail(-EIO, "fdinfo: fd %u is out of range", fd->fd);
		for (size_t j = 0; j < i; j++)
			if (ds->fds[j]->fd == fd->fd)
				return fail(-EIO, "fdinfo: fd %u is listed twice", fd->fd);
		r->max_target_fd = MAX(r->max_target_fd, (int)fd->fd);
	}
	return 0;
}

static int check_files(struct rst *r)
{
	struct dumpset *ds = &r->ds;
	int ret = 0;

	for (size_t i = 0; !ret && i < ds->nr_files; i++)
		ret = check_file_entry(r, ds->files[i]);
	if (!ret)
		ret = check_fdinfo(r);
	if (ret)
		return ret;
	if (!rst_reg_path(r, r->ds.mm->exe_file_id))
		return fail(-EIO, "mm-%u.img: the exe file %u is not in files.img", r->pid,
			    r->ds.mm->exe_file_id);
	if (ds->fs) {
		r->cwd = rst_reg_path(r, ds->fs->cwd_id);
		r->root = rst_reg_path(r, ds->fs->root_id);
		if (!r->cwd || !r->root)
			return fail(-EIO, "fs-%u.img names no cwd or root in files.img", r->pid);
	}
	return 0;
}

bool rst_capable(int cap)
{
	return self_capable(cap);
}

/* Limits the blob cannot set here are refused before anything starts (image/rstcheck.c). */
static int check_rlimits(struct rst *r)
{
	return rstcheck_rlimits(r->leader->tc ? r->leader->tc->rlimits : NULL,
				rst_capable(CAP_SYS_RESOURCE));
}

/* The huge pages its MAP_HUGETLB memory needs are there to take (mem/hugetlb.c). */
static int check_hugetlb(struct rst *r)
{
	struct hugetlb_need n = { 0 };
	int ret = hugetlb_need_mm(&n, r->ds.mm, r->ds.runs, r->ds.nr_runs);

	if (!ret)
		ret = hugetlb_need_check(&n, false);
	hugetlb_need_free(&n);
	if (ret)
		fail_context("process %d: ", r->pid);
	return ret;
}

int check_images(struct rst *r)
{
	int ret;

	if (!r->ds.mm)
		return fail(-EIO, "no mm image");
	if (r->ds.pages_fd < 0)
		return fail(-EIO, "no pages image");
	ret = check_threads(r);
	if (!ret)
		ret = check_rlimits(r);
	if (!ret)
		ret = seccomp_check(r);
	if (!ret)
		ret = attrs_check(r);
	if (!ret)
		ret = cgroups_check_join(r);
	if (!ret)
		ret = ghost_check(r);
	if (!ret)
		ret = check_files(r);
	if (!ret)
		ret = locks_check(r);
	if (!ret)
		ret = check_memory(r);
	if (!ret)
		ret = uffd_check(r);	/* after the fds: its own is kept free */
	if (!ret)
		ret = iouring_check(r);	/* likewise */
	if (!ret)
		ret = shm_check(r);
	if (!ret)
		ret = check_hugetlb(r);
	return ret;
}
