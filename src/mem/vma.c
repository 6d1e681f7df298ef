/*
 * The target's VMAs, from /proc/PID/smaps: what each one is (status bits as
 * CRIU names them), whether its pages are dumped, and the madvise/mlock
 * state to restore. Mappings memdump cannot restore are refused here, by
 * name.
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "mem/vma.h"
#include "mem/snapshot.h"
#include "ctx/file_desc.h"
#include "log.h"
#include "proc.h"
#include "mem/shmem.h"
#include "infect/infect.h"
#include "vma_status.h"
#include "vdso_layout.h"

/* What smaps names anonymous MAP_HUGETLB memory, private or shared. */
#define ANON_HUGETLB	"/anon_hugepage (deleted)"

static bool has_flag(const struct vma *v, const char *f)
{
	for (const char *p = v->vmflags; (p = strstr(p, f)); p += 2)
		if ((p == v->vmflags || p[-1] == ' ') && (p[2] == ' ' || p[2] == 0))
			return true;
	return false;
}

static void madvise_bits(struct vma *v)
{
	static const struct { const char *flag; int advice; } map[] = {
		{ "hg", MADV_HUGEPAGE }, { "nh", MADV_NOHUGEPAGE }, { "dc", MADV_DONTFORK },
		{ "dd", MADV_DONTDUMP }, { "mg", MADV_MERGEABLE }, { "wf", MADV_WIPEONFORK },
		{ "sr", MADV_SEQUENTIAL }, { "rr", MADV_RANDOM },
	};

	for (size_t i = 0; i < ARRAY_SIZE(map); i++)
		if (has_flag(v, map[i].flag))
			v->madv |= 1ULL << map[i].advice;
	v->locked = has_flag(v, "lo");
	v->sealed = has_flag(v, "sl");
	v->lock_onfault = has_flag(v, "lf");
}

static int refuse(pid_t pid, const struct vma *v, const char *what)
{
	return fail(-EOPNOTSUPP, "process %d has an unsupported mapping %#lx-%#lx %s: %s", pid,
		    v->start, v->end, v->name[0] ? v->name : "(anonymous)", what);
}

/* VMA_MAP_HUGETLB and the page size bits of a hugetlb VMA (VmFlags ht), 0 of another. */
static int hugetlb_bits(const struct dump_ctx *d, const struct vma *v, uint32_t *bits)
{
	uint64_t sz = v->kpagesize;
	unsigned shift = 0;

	*bits = 0;
	if (!has_flag(v, "ht"))
		return 0;
	while (shift < 63 && (1ULL << shift) < sz)
		shift++;
	if (sz <= PAGE_SIZE || (1ULL << shift) != sz || shift > (VMA_MAP_HUGE_MASK >> VMA_MAP_HUGE_SHIFT))
		return refuse(d->pid, v, "MAP_HUGETLB memory whose page size (smaps KernelPageSize) "
			      "is not a huge page's");
	*bits = VMA_MAP_HUGETLB | (shift << VMA_MAP_HUGE_SHIFT);
	return 0;
}

/*
 * Every VmFlags mnemonic is either restored (from the VMA's prot, flags,
 * madvise bits and mlock state) or refused by name: nothing is dropped.
 */
static const char *const restored_flags[] = {
	"rd", "wr", "ex", "sh", "mr", "mw", "me", "ms",	/* prot and sharing */
	"gd", "nr", "ac", "ht",			/* MAP_GROWSDOWN, MAP_NORESERVE, accounted, hugetlb
						 * (anonymous, a hugetlbfs file's, System V's: ns.c;
						 * others refused below) */
	"dc", "dd", "wf", "hg", "nh", "mg", "sr", "rr",	/* madvise bits */
	"lo", "lf", "de", "dw", "sd", "io", "pf",	/* mlock, MLOCK_ONFAULT; kernel-set; io/pf
						 * refused below */
	"gu",					/* guard pages: recorded by pagescan.c, reinstalled */
	"dp",					/* MAP_DROPPABLE: mapped so again, empty */
	"sl",					/* mseal(): sealed again by the restorer, last */
};

static const struct { const char *flag, *what; } refused_flags[] = {
	{ "um", "a userfaultfd registration (VmFlags um)" },
	{ "uw", "a userfaultfd write-protect registration (VmFlags uw)" },
	{ "ui", "a userfaultfd minor-fault registration (VmFlags ui)" },
	{ "ss", "a shadow stack (VmFlags ss)" },
	{ "mm", "a mixed PFN mapping (VmFlags mm)" },
	{ "sf", "synchronous page faults, DAX (VmFlags sf)" },
};

#define VMA_RING	1	/* classify: an io_uring ring's mapping, not a VMA */

static bool flag_in(const char *f, const char *const *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strncmp(f, set[i], 2))
			return true;
	return false;
}

/* An io_uring mapping, by its offset (IORING_OFF_*, docs/io_uring.md). */
static const char *iouring_region(uint64_t pgoff)
{
	if (pgoff == 0)
		return "an io_uring instance's SQ ring (and CQ ring) mapped, which memdump does "
		       "not map again yet";
	if (pgoff == 0x8000000)
		return "an io_uring instance's CQ ring mapped, which memdump does not map again yet";
	if (pgoff == 0x10000000)
		return "an io_uring instance's SQE array mapped, which memdump does not map again yet";
	return "an io_uring instance's provided-buffer ring or other region mapped, which "
	       "memdump does not map again yet";
}

/*
 * A mapping of an io_uring ring the process holds by an fd, at the offset of
 * its SQ ring, CQ ring or SQE array: not a VMA of the dump, dumped with its
 * ring (mm_entry.iourings, evloop/iouring.c, which refuses the ring when it
 * is beyond a restore) and mapped again by the restorer blob.
 */
static bool own_iouring_map(pid_t pid, const struct vma *v)
{
	if (v->pgoff != 0 && v->pgoff != 0x8000000 && v->pgoff != 0x10000000)
		return false;
	return proc_fd_of_link(pid, "anon_inode:[io_uring]", v->ino) >= 0;
}

/*
 * A MISSING or WP registration (VmFlags um, uw) of the process's one
 * userfaultfd: dumped with the fd (mm_entry.uffd), which the fd's check
 * refuses when it is beyond a restore (evloop/uffd.c); not with memdump's
 * tracker in the process (its uw is the tracker's, and the fd is refused).
 */
static bool own_uffd(pid_t pid, const struct vma *v, bool tracked)
{
	return !tracked && !v->snap_armed && (has_flag(v, "um") || has_flag(v, "uw")) &&
	       !has_flag(v, "ui") && proc_count_fd_links(pid, "anon_inode:[userfaultfd]") == 1;
}

/*
 * tracked: memdump's tracker is in the process; track_register() decides on
 * uw. Else uw may be the registration of a snapshot armed before the freeze.
 */
static int check_vmflags(struct dump_ctx *d, struct vma *v, bool tracked)
{
	pid_t pid = d->pid;
	char what[64];
	bool own;

	if (!strncmp(v->name, "socket:[", 8))	/* before its VmFlags (mm): say what it is */
		return refuse(pid, v, "a socket's ring mapped (a packet socket's RX/TX ring, ...), "
			      "which memdump does not map again");
	if (!strcmp(v->name, "anon_inode:[io_uring]"))	/* likewise (mm): which region */
		return own_iouring_map(pid, v) ? VMA_RING : refuse(pid, v, iouring_region(v->pgoff));
	if (has_flag(v, "ht") && strncmp(v->name, "/SYSV", 5) && strstr(v->name, " (deleted)") &&
	    strcmp(v->name, ANON_HUGETLB) && strncmp(v->name, "/memfd:", 7))
		return refuse(pid, v, "MAP_HUGETLB memory of a deleted hugetlbfs file, which "
			      "memdump does not restore yet");
	v->snap_armed = !tracked && has_flag(v, "uw") && snapshot_owns(d, v);
	v->uffd_wp = (tracked || v->snap_armed) && has_flag(v, "uw");
	own = own_uffd(pid, v, tracked);
	for (size_t i = 0; i < ARRAY_SIZE(refused_flags); i++)
		if (has_flag(v, refused_flags[i].flag) &&
		    !(v->uffd_wp && !strcmp(refused_flags[i].flag, "uw")) &&
		    !(own && (!strcmp(refused_flags[i].flag, "uw") ||
			      !strcmp(refused_flags[i].flag, "um"))))
			return refuse(pid, v, refused_flags[i].what);
	for (const char *p = v->vmflags; *p; p++) {
		if (*p == ' ' || flag_in(p, restored_flags, ARRAY_SIZE(restored_flags)) ||
		    ((v->uffd_wp || own) && !strncmp(p, "uw", 2)) || (own && !strncmp(p, "um", 2))) {
			p += *p != ' ';
			continue;
		}
		snprintf(what, sizeof(what), "VmFlags %.2s, which memdump cannot restore", p);
		return refuse(pid, v, what);
	}
	return 0;
}

static int classify_file(struct dump_ctx *d, struct vma *v, bool shared)
{
	char path[128], why[256];
	struct stat st;
	int id;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%lx-%lx", d->pid, v->start, v->end);
	if (stat(path, &st))
		return fail(-errno, "cannot stat the file of mapping %#lx-%#lx (%s): %s", v->start,
			    v->end, v->name, strerror(errno));
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		return refuse(d->pid, v, "a mapping of a device");
	if (ghost_is_deleted(v->name) && ghost_unsupported(d->pid, v->name, &st, d->policy.ghost_limit,
						     why, sizeof(why)))
		return refuse(d->pid, v, why);
	id = files_add_path(d, v->name, &st, shared ? O_RDWR : O_RDONLY, path);
	if (id < 0)
		return id;
	v->shmid = id;
	v->status |= shared ? VMA_FILE_SHARED : VMA_FILE_PRIVATE;
	v->flags |= shared ? MAP_SHARED : MAP_PRIVATE;
	v->dump = !shared;
	v->anon_only = true;
	return 0;
}

/*
 * A private mapping of a shared memory object (a memfd, or MAP_SHARED|
 * MAP_ANONYMOUS memory mapped again through its /proc/PID/map_files entry):
 * its untouched pages are the object's, so the object is dumped (shmem.c)
 * and only the COW copies are the process's own pages. Restore maps the
 * object again, privately, at the same offset (CRIU's status bits for it).
 */
static int classify_shmem_private(struct dump_ctx *d, struct vma *v, uint64_t ino)
{
	uint32_t huge;
	int ret = hugetlb_bits(d, v, &huge);	/* a memfd's (MFD_HUGETLB) */

	if (ret)
		return ret;
	v->shmid = ino;
	v->flags = MAP_PRIVATE | huge;
	v->status |= VMA_FILE_PRIVATE | VMA_AREA_MEMFD;
	v->anon_only = true;
	if (has_flag(v, "nr"))
		v->flags |= MAP_NORESERVE;
	return shmem_add_vma(d, v);
}

/*
 * MAP_DROPPABLE memory (VmFlags dp): the kernel may drop its pages whenever
 * it likes, so its content is no state a program can count on. It is mapped
 * MAP_DROPPABLE again, empty, as if the kernel had dropped it (as CRIU does;
 * zdtm maps11 checks it is empty after a restore).
 */
static void droppable(struct vma *v)
{
	v->flags = MAP_DROPPABLE | MAP_ANONYMOUS;
	v->status |= VMA_ANON_PRIVATE;
	v->dump = false;
}

/*
 * Anonymous MAP_HUGETLB memory (smaps names it ANON_HUGETLB): private, its
 * pages dumped as any anonymous memory's (pagescan.c; vmsplice and the copy
 * modes read huge pages alike); shared, an object of hugetlbfs dumped by
 * content (shmem.c). Either is mapped again with MAP_HUGETLB and the size of
 * its huge pages (KernelPageSize) in the VMA's flags.
 */
static int classify_hugetlb(struct dump_ctx *d, struct vma *v, bool shared, uint64_t ino)
{
	uint32_t bits;
	int ret = hugetlb_bits(d, v, &bits);

	if (ret)
		return ret;
	v->flags = (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS | bits;
	if (has_flag(v, "nr"))
		v->flags |= MAP_NORESERVE;
	if (!shared) {
		v->status |= VMA_ANON_PRIVATE;
		return 0;
	}
	v->shmid = ino;
	v->status |= VMA_ANON_SHARED;
	v->dump = false;	/* dumped by content: shmem.c */
	return shmem_add_vma(d, v);
}

static int classify(struct dump_ctx *d, struct vma *v, bool shared, uint64_t ino)
{
	int ret = check_vmflags(d, v, d->track.fd >= 0);

	if (ret)
		return ret;
	v->status = VMA_AREA_REGULAR;
	v->dump = true;
	if (!strcmp(v->name, "[vsyscall]")) {
		v->status = VMA_AREA_VSYSCALL;
		v->dump = false;
	} else if (!strcmp(v->name, "[vdso]")) {
		v->status |= VMA_AREA_VDSO;
		v->flags = MAP_PRIVATE | MAP_ANONYMOUS;
		v->dump = false;
	} else if (!strncmp(v->name, "[vvar", 5)) {
		v->status |= VMA_AREA_VVAR;
		v->flags = MAP_PRIVATE | MAP_ANONYMOUS;
		v->dump = false;
	} else if (has_flag(v, "io") || has_flag(v, "pf")) {
		return refuse(d->pid, v, "VM_IO/VM_PFNMAP (device memory)");
	} else if (!strcmp(v->name, "[uprobes]") || !strncmp(v->name, "/[aio]", 6)) {
		return refuse(d->pid, v, "a kernel-owned mapping");
	} else if (has_flag(v, "ht") && !strcmp(v->name, ANON_HUGETLB)) {
		return classify_hugetlb(d, v, shared, ino);
	} else if (!strncmp(v->name, "/SYSV", 5) && (d->own_ns & CLONE_NEWIPC)) {
		/* the segment is saved with its namespace (ns.c); the inode is its id */
		v->shmid = ino;
		v->flags = MAP_SHARED;
		v->status |= VMA_AREA_SYSVIPC;
		v->sysv_rdonly = !has_flag(v, "mw");	/* attached SHM_RDONLY */
		v->dump = false;
	} else if (!strncmp(v->name, "/secretmem", 10) || !strncmp(v->name, "/SYSV", 5)) {
		return refuse(d->pid, v, v->name[1] == 's' ? "memfd_secret memory" :
			      "System V shared memory outside an IPC namespace of its own "
			      "(start the program in one, e.g. with `unshare --ipc`, to dump it)");
	} else if (!shared && (!strncmp(v->name, "/dev/zero (deleted)", 19) ||
			       !strncmp(v->name, "/memfd:", 7))) {
		/* a plain private /dev/zero mapping keeps the name without "(deleted)" */
		return classify_shmem_private(d, v, ino);
	} else if (!strncmp(v->name, "/memfd:", 7) || !strncmp(v->name, "/dev/zero", 9) ||
		   (!v->name[0] && shared)) {
		/* Shared anonymous memory is shmem: its content is dumped. */
		uint32_t huge;

		ret = hugetlb_bits(d, v, &huge);	/* a memfd's (MFD_HUGETLB) */
		if (ret)
			return ret;
		v->shmid = ino;
		v->flags = (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS | huge;
		v->status |= shared ? VMA_ANON_SHARED : VMA_ANON_PRIVATE;
		if (v->name[1] == 'm')
			v->status |= VMA_AREA_MEMFD;
		if (shared) {
			v->dump = false;	/* dumped by content: shmem.c */
			return shmem_add_vma(d, v);
		}
	} else if (v->name[0] == '/') {
		return classify_file(d, v, shared);
	} else if (has_flag(v, "dp")) {
		droppable(v);
	} else {
		v->flags = MAP_PRIVATE | MAP_ANONYMOUS;
		v->status |= VMA_ANON_PRIVATE;
		if (!strcmp(v->name, "[heap]"))
			v->status |= VMA_AREA_HEAP;
		if (!strcmp(v->name, "[stack]"))
			v->status |= VMA_AREA_STACK;
	}
	if (has_flag(v, "gd"))
		v->flags |= MAP_GROWSDOWN;
	if (has_flag(v, "nr"))
		v->flags |= MAP_NORESERVE;
	return 0;
}

static int parse_header(const char *line, struct vma *v, bool *shared, uint64_t *ino)
{
	char perms[8];
	unsigned long long start, end, off, inode;
	unsigned maj, min;
	int pos = 0;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj,
		   &min, &inode, &pos) < 7)
		return -EINVAL;
	memset(v, 0, sizeof(*v));
	v->start = start;
	v->end = end;
	v->pgoff = off;
	v->dev = makedev(maj, min);
	v->ino = inode;
	*ino = inode;
	v->prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
		  (perms[2] == 'x' ? PROT_EXEC : 0);
	*shared = perms[3] == 's';
	snprintf(v->name, sizeof(v->name), "%s", line + pos);
	v->name[strcspn(v->name, "\n")] = 0;
	return 0;
}

/* The restore maps this kernel's vDSO where the target's was: it must be laid out alike. */
static int check_vdso(const struct dump_ctx *d)
{
	struct vdso_part parts[8];
	size_t n = 0;
	char why[160];

	for (int i = 0; i < d->nr_vmas; i++) {
		const struct vma *v = &d->vmas[i];

		if (!(v->status & (VMA_AREA_VDSO | VMA_AREA_VVAR)))
			continue;
		if (n == 8)
			return fail(-EOPNOTSUPP, "process %d has more than 8 vDSO mappings", d->pid);
		parts[n++] = (struct vdso_part){ v->name, v->start, v->end };
	}
	if (!vdso_layout_check(parts, n, why, sizeof(why)))
		return 0;
	return fail(-EOPNOTSUPP, "process %d: %s (moved apart with mremap?), which memdump cannot "
		    "map again", d->pid, why);
}

#define SMAPS_BUF	(64 << 10)

int collect_vmas(struct dump_ctx *d)
{
	char path[64], *line = NULL, *fbuf;
	size_t cap = 0, nalloc = 0;
	struct vma *cur = NULL;
	bool shared = false;
	uint64_t ino = 0;
	int ret = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", d->pid);
	f = fopen(path, "re");
	if (!f)
		return fail(-errno, "cannot read %s: %s", path, strerror(errno));
	/* a VMA's entry is ~1.1 KiB: stdio's 1 KiB for /proc (st_blksize) took
	 * more reads than VMAs, while the target is frozen (glibc sizes a
	 * buffer only when given one) */
	if ((fbuf = malloc(SMAPS_BUF)))
		setvbuf(f, fbuf, _IOFBF, SMAPS_BUF);
	while (getline(&line, &cap, f) > 0 && !ret) {
		if (cur && !strncmp(line, "KernelPageSize:", 15)) {
			cur->kpagesize = strtoull(line + 15, NULL, 10) << 10;	/* kB */
			continue;
		}
		if (!strncmp(line, "VmFlags:", 8)) {
			if (!cur)
				continue;
			snprintf(cur->vmflags, sizeof(cur->vmflags), "%s", line + 9);
			cur->vmflags[strcspn(cur->vmflags, "\n")] = 0;
			madvise_bits(cur);
			ret = classify(d, cur, shared, ino);
			if (ret == VMA_RING) {	/* dumped with its ring */
				d->nr_vmas--;
				cur = NULL;
				ret = 0;
			}
			continue;
		}
		/* A header line starts with a hex range; field lines with "Name:". */
		if (line[strcspn(line, " ")] == ' ' && strchr(line, '-') &&
		    strchr(line, '-') < strchr(line, ' ')) {
			if ((size_t)d->nr_vmas == nalloc) {
				struct vma *nv = realloc(d->vmas, (nalloc = nalloc ? nalloc * 2 : 64) *
								  sizeof(*nv));

				if (!nv) {
					ret = -ENOMEM;
					break;
				}
				d->vmas = nv;
			}
			cur = &d->vmas[d->nr_vmas];
			if (parse_header(line, cur, &shared, &ino)) {
				cur = NULL;
				continue;
			}
			d->nr_vmas++;
		}
	}
	free(line);
	fclose(f);
	free(fbuf);
	if (ret)
		return ret;
	if (!d->nr_vmas)
		return fail(-ESRCH, "process %d has no memory (exited?)", d->pid);
	pr_info("process %d: %d VMAs", d->pid, d->nr_vmas);
	return check_vdso(d);
}

/* The VmFlags line of the VMA that starts at start, into buf ("" when none). */
static int vmflags_at(pid_t pid, uint64_t start, char *buf, size_t len)
{
	char path[64], *line = NULL;
	bool here = false;
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", pid);
	f = fopen(path, "re");
	if (!f)
		return fail(-errno, "cannot read %s: %s", path, strerror(errno));
	buf[0] = 0;
	while (getline(&line, &cap, f) > 0) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
			here = lo == start;
		else if (here && !strncmp(line, "VmFlags:", 8)) {
			snprintf(buf, len, "%s", line + 9);
			break;
		}
	}
	free(line);
	fclose(f);
	return 0;
}

/*
 * Fast path: VmLck (the mm's locked_vm) no more than the locked VMAs
 * collect_vmas saw, while frozen since: the area was not locked. Anything
 * else (a VMA whose lock is not counted so, an unreadable status) reads the
 * area's own VmFlags.
 */
static bool area_not_locked(const struct dump_ctx *d)
{
	uint64_t seen = 0;
	char v[32];

	/* read again, not collect_task's: it must see the area, mapped since */
	if (proc_status_field(d->pid, "VmLck", v, sizeof(v)))
		return false;
	for (int i = 0; i < d->nr_vmas; i++)
		if (d->vmas[i].locked)
			seen += (d->vmas[i].end - d->vmas[i].start) >> 10;
	return strtoull(v, NULL, 10) == seen;	/* "123 kB" */
}

/*
 * mlockall(MCL_FUTURE) leaves no trace in /proc but in the mappings made
 * after it: the mm's default flags lock each new one (lo), on fault with
 * MCL_ONFAULT (lf). The parasite's area is such a mapping, made by the
 * process itself while it was frozen.
 */
int collect_mlock_future(struct dump_ctx *d)
{
	struct vma area = { .start = parasite_area(&d->in) };
	int ret;

	d->mlock_future = 0;
	if (!area.start)
		return fail(-EINVAL, "process %d: no parasite area to read the mlockall state from",
			    d->pid);
	if (area_not_locked(d))
		return 0;
	ret = vmflags_at(d->pid, area.start, area.vmflags, sizeof(area.vmflags));
	if (ret)
		return ret;
	if (!area.vmflags[0])
		return fail(-ESRCH, "process %d: the parasite area %#lx is not in its smaps", d->pid,
			    area.start);
	area.vmflags[strcspn(area.vmflags, "\n")] = 0;
	if (has_flag(&area, "lo"))
		d->mlock_future = MCL_FUTURE | (has_flag(&area, "lf") ? MCL_ONFAULT : 0);
	if (d->mlock_future)
		pr_info("process %d: mlockall(MCL_FUTURE%s) in force", d->pid,
			d->mlock_future & MCL_ONFAULT ? "|MCL_ONFAULT" : "");
	return 0;
}
