/*
 * memdump restore: recreate a dumped process with its PID, threads, memory
 * and files, so that it runs on as if it had never stopped.
 *
 *  1. The whole image set is loaded and checked first (restore_check.c
 *     style checks live in check_images()): nothing is started when a file
 *     changed, a PID is taken or an image is inconsistent.
 *  2. Every file the process needs is opened here, in memdump: fds, pipes
 *     refilled with their data, the files behind file mappings, shmem objects
 *     for shared memory, the exe file, pages-1.img.
 *  3. The restorer area (include/restorer.h) is a memfd mapped at an address
 *     free in memdump and in the target: blob code, its arguments, stacks.
 *  4. clone3(set_tid = PID) forks memdump; the child moves the fds to their
 *     numbers, sets cwd, umask, personality and jumps into the blob, which
 *     rebuilds memory and threads (parasite/restorer.c).
 *  5. When every thread is parked before its final rt_sigreturn, memdump
 *     attaches with ptrace, lets them go, stops each right after its
 *     rt_sigreturn, injects one munmap of the restorer area and detaches:
 *     nothing of the restorer remains in the process.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cpuid.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <linux/sched.h>

/* sys/user.h has its own PAGE_SIZE */
#undef PAGE_SIZE
#undef PAGE_MASK
#undef PAGE_SHIFT

#include "blobs.h"
#include "common.h"
#include "dumpset.h"
#include "image.h"
#include "kernel_uapi.h"
#include "log.h"
#include "options.h"
#include "restorer.h"
#include "vma_status.h"

#ifndef F_SETPIPE_SZ
#define F_SETPIPE_SZ	1031
#endif
#ifndef PTRACE_GET_SYSCALL_INFO
#define PTRACE_GET_SYSCALL_INFO	0x420e
#define PTRACE_SYSCALL_INFO_ENTRY	1
#define PTRACE_SYSCALL_INFO_EXIT	2
#endif

/* One fd number of the restored process, or one fd the blob needs. */
struct rfd {
	int src;		/* memdump's fd with the open file description */
	int target;		/* its number in the restored process */
	bool cloexec;
};

/* An open file description prepared for the target, by file id. */
struct rdesc {
	uint32_t id;
	int fd;			/* in memdump, -1 until opened */
};

struct shm_obj {
	uint64_t shmid;
	uint64_t size;
	bool memfd;
	const char *name;
	int fd;
};

struct rst {
	struct dumpset ds;
	pid_t pid;
	const CoreEntry *leader;

	struct rdesc *descs;
	size_t nr_descs;
	struct rfd *fds;	/* target fds */
	size_t nr_fds;
	int *blob_fds;		/* memdump fds handed to the blob (closed by it) */
	size_t nr_blob_fds;
	int max_target_fd;

	struct shm_obj *shms;
	size_t nr_shms;

	int exe_fd;
	const char *cwd, *root;

	/* the restorer area */
	int area_fd;
	char *area;
	size_t area_size;
	struct rst_args *a;
	unsigned long vdso_start, vdso_len;
	bool has_vdso;
};

/* ---------------------------------------------------------------- helpers */

static const FileEntry *file_by_id(struct rst *r, uint32_t id)
{
	return dumpset_file(&r->ds, id);
}

static const char *reg_path(struct rst *r, uint32_t id)
{
	const FileEntry *fe = file_by_id(r, id);

	return fe && fe->type == FD_TYPES__REG && fe->reg ? fe->reg->name : NULL;
}

static int add_blob_fd(struct rst *r, int fd)
{
	int *n = realloc(r->blob_fds, (r->nr_blob_fds + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	r->blob_fds = n;
	n[r->nr_blob_fds] = fd;
	return (int)r->nr_blob_fds++;
}

static void close_prepared(struct rst *r)
{
	for (size_t i = 0; i < r->nr_descs; i++)
		if (r->descs[i].fd >= 0)
			close(r->descs[i].fd);
	for (size_t i = 0; i < r->nr_blob_fds; i++)
		close(r->blob_fds[i]);
	r->nr_blob_fds = 0;
	for (size_t i = 0; i < r->nr_descs; i++)
		r->descs[i].fd = -1;
}

static const char *vma_desc(const VmaEntry *v, char *buf, size_t len)
{
	snprintf(buf, len, "VMA %#" PRIx64 "-%#" PRIx64 " (%s)", v->start, v->end,
		 v->name && v->name[0] ? v->name : "anonymous");
	return buf;
}

/* ---------------------------------------------------------------- checks */

/*
 * How strictly a file must match the dump: CHECK_CONTENT for files memory
 * comes from (private mappings and the exe: their clean pages are not in the
 * image), CHECK_SIZE for files open as fds (their data may have changed, a
 * log truncated back to its size, as CRIU allows), CHECK_INODE for files only
 * mapped shared (the file is the memory: it legitimately changes between two
 * restores of the same images).
 */
enum { CHECK_INODE, CHECK_SIZE, CHECK_CONTENT };

/*
 * A file must be the one dumped: same inode, type and size. Its mtime must
 * match too when memory comes from it (file mappings, the exe): their pages
 * that were not written are not in the image. Files only open as fds may
 * have been touched (a log truncated back to its size), like CRIU allows.
 */
static int check_file_unchanged(const RegFileEntry *re, int level)
{
	const char *why = level == CHECK_CONTENT ? "mapped file" : "file";
	struct stat st;

	if (stat(re->name, &st))
		return fail(-errno, "%s %s: %s", why, re->name, strerror(errno));
	if (re->has_dev && re->has_ino && (st.st_dev != re->dev || st.st_ino != re->ino))
		return fail(-ESTALE, "%s %s was replaced since the dump (other inode)", why,
			    re->name);
	if (re->has_mode && (st.st_mode & S_IFMT) != (re->mode & S_IFMT))
		return fail(-ESTALE, "%s %s changed type since the dump", why, re->name);
	if (S_ISREG(st.st_mode)) {
		uint64_t mt = (uint64_t)st.st_mtim.tv_sec * 1000000000ULL + st.st_mtim.tv_nsec;

		if (level >= CHECK_SIZE && re->has_size && (uint64_t)st.st_size != re->size)
			return fail(-ESTALE, "%s %s changed since the dump (size %lld, was %" PRIu64 ")",
				    why, re->name, (long long)st.st_size, re->size);
		if (level >= CHECK_CONTENT && re->has_mtime_ns && mt != re->mtime_ns)
			return fail(-ESTALE, "%s %s changed since the dump (modified)", why, re->name);
	}
	if (S_ISCHR(st.st_mode) && re->has_rdev && st.st_rdev != re->rdev)
		return fail(-ESTALE, "%s %s is another device than at dump time", why, re->name);
	return 0;
}

static int check_id_free(pid_t id, bool leader)
{
	char path[32];

	snprintf(path, sizeof(path), "/proc/%d", id);
	if (access(path, F_OK) == 0)
		return leader ? fail(-EEXIST, "PID %d is in use", id)
			      : fail(-EEXIST, "TID %d (a thread of the dump) is in use", id);
	return 0;
}

static uint32_t cpu_xstate_size(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid_count(0xd, 0, &a, &b, &c, &d))
		return 0;
	return b;
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
		if (c->thread_core->creds && c->thread_core->creds->n_groups > RST_MAX_GROUPS)
			return fail(-E2BIG, "thread %u has too many groups", tid);
		ret = check_id_free(tid, i == 0);
		if (ret)
			return ret;
	}
	if (r->ds.mm->n_mm_saved_auxv > RST_MAX_AUXV)
		return fail(-E2BIG, "mm-%u.img: auxv too long", pe->pid);
	return 0;
}

/* The running kernel's vdso layout: names, offsets and sizes from the start. */
struct vdso_part {
	char name[64];
	unsigned long off, len;
};

static int own_vdso_layout(struct vdso_part *parts, int max)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	unsigned long base = 0;
	int n = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;
		char name[64] = "";

		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %63s", &s, &e, name) < 2)
			continue;
		if (strcmp(name, "[vdso]") && strncmp(name, "[vvar", 5))
			continue;
		if (n == max)
			break;
		if (!n)
			base = s;
		snprintf(parts[n].name, sizeof(parts[n].name), "%s", name);
		parts[n].off = s - base;
		parts[n].len = e - s;
		n++;
	}
	fclose(f);
	return n;
}

static int check_vdso(struct rst *r)
{
	const MmEntry *mm = r->ds.mm;
	struct vdso_part own[8];
	int n_own = own_vdso_layout(own, 8), k = 0;

	for (size_t i = 0; i < mm->n_vmas; i++) {
		const VmaEntry *v = mm->vmas[i];
		const char *name = v->name ? v->name : "";

		if (!(v->status & (VMA_AREA_VDSO | VMA_AREA_VVAR)))
			continue;
		if (!k) {
			r->vdso_start = v->start;
			r->has_vdso = true;
		}
		if (k >= n_own || strcmp(own[k].name, name) || own[k].off != v->start - r->vdso_start ||
		    own[k].len != v->end - v->start)
			return fail(-EINVAL, "the dumped vdso layout (%s at +%#lx, %#lx bytes) differs "
				    "from this kernel's: dumped on another kernel?", name,
				    (unsigned long)(v->start - r->vdso_start),
				    (unsigned long)(v->end - v->start));
		r->vdso_len = v->end - r->vdso_start;
		k++;
	}
	if (k && k != n_own)
		return fail(-EINVAL, "the dumped vdso has %d parts, this kernel's has %d", k, n_own);
	return 0;
}

static int vma_how(const VmaEntry *v)
{
	if (v->status & (VMA_AREA_VSYSCALL | VMA_AREA_VDSO | VMA_AREA_VVAR))
		return RST_MAP_SKIP;
	if (v->status & (VMA_FILE_PRIVATE | VMA_FILE_SHARED | VMA_ANON_SHARED))
		return RST_MAP_FD;
	return RST_MAP_ANON;
}

static int check_memory(struct rst *r)
{
	const MmEntry *mm = r->ds.mm;
	struct dumpset *ds = &r->ds;
	uint64_t total = 0, prev_end = 0;
	size_t vi = 0;
	struct stat st;
	char buf[256];

	for (size_t i = 0; i < mm->n_vmas; i++) {
		const VmaEntry *v = mm->vmas[i];

		if (v->start >= v->end || (v->start | v->end) & (PAGE_SIZE - 1) || v->start < prev_end)
			return fail(-EIO, "mm-%u.img: %s is bad or out of order", r->pid,
				    vma_desc(v, buf, sizeof(buf)));
		if ((v->status & (VMA_FILE_PRIVATE | VMA_FILE_SHARED)) && !reg_path(r, v->shmid))
			return fail(-EIO, "mm-%u.img: %s names no file in files.img", r->pid,
				    vma_desc(v, buf, sizeof(buf)));
		if ((v->status & (VMA_FILE_PRIVATE | VMA_FILE_SHARED)) && (v->pgoff & (PAGE_SIZE - 1)))
			return fail(-EIO, "mm-%u.img: %s has an unaligned file offset", r->pid,
				    vma_desc(v, buf, sizeof(buf)));
		if (!(v->status & VMA_AREA_VSYSCALL))
			prev_end = v->end;
	}
	for (size_t i = 0; i < ds->nr_runs; i++) {
		const struct dump_run *run = &ds->runs[i];
		const VmaEntry *v;

		if (!run->present)
			return fail(-EIO, "pagemap-%u.img: pages at %#" PRIx64 " are not in the image "
				    "(incremental dumps are not supported)", r->pid, run->start);
		if (i && run->start < ds->runs[i - 1].end)
			return fail(-EIO, "pagemap-%u.img: overlapping runs at %#" PRIx64, r->pid,
				    run->start);
		while (vi < mm->n_vmas && mm->vmas[vi]->end <= run->start)
			vi++;
		v = vi < mm->n_vmas ? mm->vmas[vi] : NULL;
		if (!v || run->start < v->start || run->end > v->end)
			return fail(-EIO, "pagemap-%u.img: pages %#" PRIx64 "-%#" PRIx64 " are outside "
				    "every VMA", r->pid, run->start, run->end);
		if (vma_how(v) == RST_MAP_SKIP || (v->status & VMA_FILE_SHARED))
			return fail(-EIO, "pagemap-%u.img: pages dumped for %s, which cannot take "
				    "them", r->pid, vma_desc(v, buf, sizeof(buf)));
		total += run->end - run->start;
	}
	if (fstat(ds->pages_fd, &st))
		return fail(-errno, "cannot stat pages-1.img: %s", strerror(errno));
	if ((uint64_t)st.st_size != total)
		return fail(-EIO, "pages-1.img holds %lld bytes, the pagemap lists %" PRIu64,
			    (long long)st.st_size, total);
	if (ds->inv->has_pages_bytes && ds->inv->pages_bytes != total)
		return fail(-EIO, "inventory.img says %" PRIu64 " bytes of pages, the pagemap lists %"
			    PRIu64, ds->inv->pages_bytes, total);
	return check_vdso(r);
}

static int check_level(struct rst *r, uint32_t id)
{
	const MmEntry *mm = r->ds.mm;
	int level = CHECK_INODE;

	if (mm->exe_file_id == id)
		return CHECK_CONTENT;
	for (size_t i = 0; i < mm->n_vmas; i++)
		if ((mm->vmas[i]->status & VMA_FILE_PRIVATE) && mm->vmas[i]->shmid == id)
			return CHECK_CONTENT;
	for (size_t i = 0; i < r->ds.nr_fds; i++)
		if (r->ds.fds[i]->id == id)
			level = CHECK_SIZE;
	for (size_t i = 0; i < r->ds.nr_files; i++) {
		const FileEntry *fe = r->ds.files[i];

		if (fe->type == FD_TYPES__FIFO && fe->fifo && fe->fifo->regf_id == id)
			level = CHECK_SIZE;
	}
	if (r->ds.fs && (r->ds.fs->cwd_id == id || r->ds.fs->root_id == id))
		level = MAX(level, CHECK_INODE);
	for (size_t i = 0; i < mm->n_vmas; i++)
		if ((mm->vmas[i]->status & VMA_FILE_SHARED) && mm->vmas[i]->shmid == id)
			return CHECK_INODE;
	return level;
}

static int check_files(struct rst *r)
{
	struct dumpset *ds = &r->ds;
	int ret;

	for (size_t i = 0; i < ds->nr_files; i++) {
		const FileEntry *fe = ds->files[i];

		switch (fe->type) {
		case FD_TYPES__REG:
			if (!fe->reg || !fe->reg->name || fe->reg->name[0] != '/')
				return fail(-EIO, "files.img: file %u has no path", fe->id);
			ret = check_file_unchanged(fe->reg, check_level(r, fe->id));
			if (ret)
				return ret;
			break;
		case FD_TYPES__PIPE:
			if (!fe->pipe)
				return fail(-EIO, "files.img: pipe %u has no pipe entry", fe->id);
			break;
		case FD_TYPES__FIFO:
			if (!fe->fifo || !fe->fifo->has_regf_id || !reg_path(r, fe->fifo->regf_id))
				return fail(-EIO, "files.img: FIFO %u names no path", fe->id);
			break;
		case FD_TYPES__TTY:
			if (!fe->tty)
				return fail(-EIO, "files.img: terminal %u has no tty entry", fe->id);
			break;
		default:
			return fail(-EOPNOTSUPP, "files.img: file %u has a type (%d) restore does not "
				    "support", fe->id, fe->type);
		}
	}
	for (size_t i = 0; i < ds->nr_fds; i++) {
		const FdinfoEntry *fd = ds->fds[i];

		if (!file_by_id(r, fd->id))
			return fail(-EIO, "fdinfo: fd %u names file %u, not in files.img", fd->fd,
				    fd->id);
		if (fd->fd > 1u << 20)
			return fail(-EIO, "fdinfo: fd %u is out of range", fd->fd);
		for (size_t j = 0; j < i; j++)
			if (ds->fds[j]->fd == fd->fd)
				return fail(-EIO, "fdinfo: fd %u is listed twice", fd->fd);
		r->max_target_fd = MAX(r->max_target_fd, (int)fd->fd);
	}
	if (!reg_path(r, r->ds.mm->exe_file_id))
		return fail(-EIO, "mm-%u.img: the exe file %u is not in files.img", r->pid,
			    r->ds.mm->exe_file_id);
	if (ds->fs) {
		r->cwd = reg_path(r, ds->fs->cwd_id);
		r->root = reg_path(r, ds->fs->root_id);
		if (!r->cwd || !r->root)
			return fail(-EIO, "fs-%u.img names no cwd or root in files.img", r->pid);
	}
	return 0;
}

static int check_images(struct rst *r)
{
	int ret;

	if (!r->ds.mm)
		return fail(-EIO, "no mm image");
	if (r->ds.pages_fd < 0)
		return fail(-EIO, "no pages image");
	ret = check_threads(r);
	if (!ret)
		ret = check_files(r);
	if (!ret)
		ret = check_memory(r);
	return ret;
}

/* ---------------------------------------------------------------- files */

static struct rdesc *desc_of(struct rst *r, uint32_t id)
{
	for (size_t i = 0; i < r->nr_descs; i++)
		if (r->descs[i].id == id)
			return &r->descs[i];
	return NULL;
}

static int open_reg(const RegFileEntry *re)
{
	int flags = re->flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY | O_CLOEXEC);
	int fd = open(re->name, flags | O_CLOEXEC);

	if (fd < 0)
		return fail(-errno, "cannot open %s: %s", re->name, strerror(errno));
	if (re->pos && lseek(fd, re->pos, SEEK_SET) < 0 && errno != ESPIPE) {
		int err = -errno;

		close(fd);
		return fail(err, "cannot seek %s to %" PRIu64 ": %s", re->name, re->pos,
			    strerror(-err));
	}
	return fd;
}

/* Unread data of pipe/FIFO pipe_id: written into wfd. */
static int refill(struct rst *r, enum img_type t, uint32_t pipe_id, int wfd)
{
	struct image *img;
	PipeDataEntry *pde;
	char name[64];
	int ret;

	img_name(t, 0, name, sizeof(name));
	if (faccessat(r->ds.dirfd, name, F_OK, 0))
		return 0;
	ret = img_open(r->ds.dirfd, t, 0, &img);
	if (ret)
		return ret;
	/* one entry per pipe; a repeated entry (one per end) is the same data */
	bool done = false;

	while ((ret = img_read_msg(img, &pipe_data_entry__descriptor, (void **)&pde)) == 1) {
		uint32_t n = pde->bytes, id = pde->pipe_id;
		uint32_t size = pde->has_size ? pde->size : 0;
		char *buf;

		img_free(&pipe_data_entry__descriptor, pde);
		buf = malloc(n ? n : 1);
		if (!buf) {
			ret = -ENOMEM;
			break;
		}
		ret = img_read_raw(img, buf, n);
		if (!ret && id == pipe_id && !done) {
			int fl = fcntl(wfd, F_GETFL);

			done = true;
			if (size || n > 65536)
				fcntl(wfd, F_SETPIPE_SZ, MAX(n, size));

			fcntl(wfd, F_SETFL, fl | O_NONBLOCK);
			if (write(wfd, buf, n) != (ssize_t)n)
				ret = fail(-errno ?: -EIO, "cannot refill pipe %u with %u bytes: %s",
					   pipe_id, n, strerror(errno ?: EIO));
			fcntl(wfd, F_SETFL, fl);
		}
		free(buf);
		if (ret)
			break;
	}
	img_abort(img);
	return ret < 0 ? ret : 0;
}

static int reopen_as(int fd, int flags)
{
	char path[64];
	int n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = open(path, (flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY)) | O_CLOEXEC);
	return n < 0 ? -errno : n;
}

/* Both ends of pipe_id: a new pipe, refilled, for every description of it. */
static int open_pipe(struct rst *r, uint32_t pipe_id)
{
	struct dumpset *ds = &r->ds;
	int p[2] = { -1, -1 }, ret = 0;
	bool rd_used = false, wr_used = false, has_rd = false, has_wr = false, low = false;

	for (size_t i = 0; i < ds->nr_fds; i++) {
		const FileEntry *fe = file_by_id(r, ds->fds[i]->id);

		if (fe->type != FD_TYPES__PIPE || fe->pipe->pipe_id != pipe_id)
			continue;
		if ((fe->pipe->flags & O_ACCMODE) == O_RDONLY)
			has_rd = true;
		else
			has_wr = true;
		if (ds->fds[i]->fd <= 2)
			low = true;
	}
	if (has_rd != has_wr && low) {
		/*
		 * One end only, on a standard fd: the other end was outside the
		 * process (a shell pipeline, a test harness). Like a terminal, it
		 * becomes memdump's own fd of that number.
		 */
		for (size_t i = 0; i < ds->nr_fds; i++) {
			const FileEntry *fe = file_by_id(r, ds->fds[i]->id);
			struct rdesc *d = desc_of(r, fe->id);
			int n = ds->fds[i]->fd;

			if (fe->type != FD_TYPES__PIPE || fe->pipe->pipe_id != pipe_id || d->fd >= 0)
				continue;
			if (n > 2)
				n = has_rd ? 0 : 1;
			d->fd = fcntl(n, F_DUPFD_CLOEXEC, 3);
			if (d->fd < 0)
				return fail(-errno, "pipe %u: memdump has no fd %d to give: %s", pipe_id,
					    n, strerror(errno));
			pr_info("pipe %u of fd %u: memdump's fd %d\n", pipe_id, ds->fds[i]->fd, n);
		}
		return 0;
	}
	if (pipe2(p, O_CLOEXEC))
		return fail(-errno, "cannot create a pipe: %s", strerror(errno));
	ret = refill(r, IMG_PIPES_DATA, pipe_id, p[1]);
	for (size_t i = 0; !ret && i < ds->nr_files; i++) {
		const FileEntry *fe = ds->files[i];
		struct rdesc *d;
		bool rd;
		int fd;

		if (fe->type != FD_TYPES__PIPE || fe->pipe->pipe_id != pipe_id)
			continue;
		d = desc_of(r, fe->id);
		if (!d)
			continue;	/* no fd uses it */
		rd = (fe->pipe->flags & O_ACCMODE) == O_RDONLY;
		if (rd ? !rd_used : !wr_used) {
			fd = fcntl(rd ? p[0] : p[1], F_DUPFD_CLOEXEC, 3);
			if (rd)
				rd_used = true;
			else
				wr_used = true;
		} else {
			fd = reopen_as(rd ? p[0] : p[1], rd ? O_RDONLY : O_WRONLY);
		}
		if (fd < 0) {
			ret = fail(fd, "cannot open pipe %u: %s", pipe_id, strerror(-fd));
			break;
		}
		d->fd = fd;
		if (fcntl(fd, F_SETFL, fe->pipe->flags & (O_NONBLOCK | O_DIRECT)) < 0)
			ret = fail(-errno, "cannot set the flags of pipe %u: %s", pipe_id,
				   strerror(errno));
	}
	close(p[0]);
	close(p[1]);
	return ret;
}

static int open_fifo(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	const char *path = reg_path(r, fe->fifo->regf_id);
	const FileEntry *re = file_by_id(r, fe->fifo->regf_id);
	int helper, ret;

	/* O_RDWR never blocks: with it open, the real open does not block either */
	helper = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (helper < 0)
		return fail(-errno, "cannot open FIFO %s: %s", path, strerror(errno));
	ret = refill(r, IMG_FIFO_DATA, fe->fifo->pipe_id, helper);
	if (!ret) {
		d->fd = open(path, (re->reg->flags & ~(O_CREAT | O_EXCL | O_TRUNC)) | O_CLOEXEC |
				       O_NONBLOCK);
		if (d->fd < 0)
			ret = fail(-errno, "cannot open FIFO %s: %s", path, strerror(errno));
		else if (fcntl(d->fd, F_SETFL, re->reg->flags & O_NONBLOCK) < 0)
			ret = fail(-errno, "cannot set the flags of FIFO %s: %s", path,
				   strerror(errno));
	}
	close(helper);
	return ret;
}

static int open_tty(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	int n = -1;

	/* like criu --shell-job: memdump's own terminal, same direction */
	for (size_t i = 0; i < r->ds.nr_fds; i++)
		if (r->ds.fds[i]->id == fe->id && r->ds.fds[i]->fd <= 2) {
			n = r->ds.fds[i]->fd;
			break;
		}
	if (n < 0)
		n = (fe->tty->flags & O_ACCMODE) == O_RDONLY ? 0 : 1;
	d->fd = fcntl(n, F_DUPFD_CLOEXEC, 3);
	if (d->fd < 0)
		return fail(-errno, "terminal %s: memdump has no fd %d to give: %s",
			    fe->tty->name ? fe->tty->name : "?", n, strerror(errno));
	return 0;
}

static int open_fds(struct rst *r)
{
	struct dumpset *ds = &r->ds;
	int ret = 0;

	r->descs = calloc(ds->nr_files + 1, sizeof(*r->descs));
	r->fds = calloc(ds->nr_fds + 1, sizeof(*r->fds));
	if (!r->descs || !r->fds)
		return -ENOMEM;
	/* descriptions that some fd uses */
	for (size_t i = 0; i < ds->nr_fds; i++) {
		if (desc_of(r, ds->fds[i]->id))
			continue;
		r->descs[r->nr_descs].id = ds->fds[i]->id;
		r->descs[r->nr_descs++].fd = -1;
	}
	for (size_t i = 0; !ret && i < r->nr_descs; i++) {
		struct rdesc *d = &r->descs[i];
		const FileEntry *fe = file_by_id(r, d->id);

		if (d->fd >= 0)
			continue;
		switch (fe->type) {
		case FD_TYPES__REG:
			d->fd = open_reg(fe->reg);
			ret = d->fd < 0 ? d->fd : 0;
			break;
		case FD_TYPES__PIPE:
			ret = open_pipe(r, fe->pipe->pipe_id);
			break;
		case FD_TYPES__FIFO:
			ret = open_fifo(r, fe, d);
			break;
		case FD_TYPES__TTY:
			ret = open_tty(r, fe, d);
			break;
		default:
			ret = fail(-EOPNOTSUPP, "file %u: unsupported type", fe->id);
		}
	}
	if (ret)
		return ret;
	for (size_t i = 0; i < ds->nr_fds; i++) {
		struct rfd *f = &r->fds[r->nr_fds++];

		f->src = desc_of(r, ds->fds[i]->id)->fd;
		f->target = ds->fds[i]->fd;
		f->cloexec = ds->fds[i]->flags & FD_CLOEXEC;
	}
	return 0;
}

/* Files behind file mappings, shmem objects, the exe file, pages-1.img. */
static int open_blob_files(struct rst *r, struct rst_vma *rv)
{
	const MmEntry *mm = r->ds.mm;
	int ret, fd;

	for (size_t i = 0; i < mm->n_vmas; i++) {
		const VmaEntry *v = mm->vmas[i];

		rv[i].fd = -1;
		if (vma_how(v) != RST_MAP_FD)
			continue;
		if (v->status & VMA_ANON_SHARED) {
			struct shm_obj *s = NULL;

			for (size_t k = 0; k < r->nr_shms; k++)
				if (r->shms[k].shmid == v->shmid)
					s = &r->shms[k];
			rv[i].fd = s->fd;
			continue;
		}
		/* a file: one fd per mapping is simple and fine (closed by the blob) */
		{
			const char *path = reg_path(r, v->shmid);
			int fl = O_RDONLY;

			if (v->status & VMA_FILE_SHARED)
				fl = O_RDWR;
			fd = open(path, fl | O_CLOEXEC);
			if (fd < 0 && fl == O_RDWR && !(v->prot & PROT_WRITE))
				fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				return fail(-errno, "cannot open %s for its mapping at %#" PRIx64 ": %s",
					    path, v->start, strerror(errno));
			ret = add_blob_fd(r, fd);
			if (ret < 0) {
				close(fd);
				return ret;
			}
			rv[i].fd = ret;	/* an index for now: numbers are final in the child */
		}
	}
	return 0;
}

static int open_shms(struct rst *r)
{
	const MmEntry *mm = r->ds.mm;

	r->shms = calloc(mm->n_vmas + 1, sizeof(*r->shms));
	if (!r->shms)
		return -ENOMEM;
	for (size_t i = 0; i < mm->n_vmas; i++) {
		const VmaEntry *v = mm->vmas[i];
		struct shm_obj *s = NULL;

		if (!(v->status & VMA_ANON_SHARED))
			continue;
		for (size_t k = 0; k < r->nr_shms; k++)
			if (r->shms[k].shmid == v->shmid)
				s = &r->shms[k];
		if (!s) {
			s = &r->shms[r->nr_shms++];
			s->shmid = v->shmid;
			s->memfd = v->status & VMA_AREA_MEMFD;
			s->name = v->name;
		}
		s->size = MAX(s->size, v->pgoff + (v->end - v->start));
	}
	for (size_t k = 0; k < r->nr_shms; k++) {
		struct shm_obj *s = &r->shms[k];
		int fd, ret;

		if (s->memfd) {
			char name[256] = "memdump";
			const char *n = s->name && !strncmp(s->name, "/memfd:", 7) ? s->name + 7 : "";

			snprintf(name, sizeof(name), "%s", n);
			name[strcspn(name, " ")] = 0;	/* " (deleted)" */
			fd = memfd_create(name, MFD_CLOEXEC);
			if (fd < 0 || ftruncate(fd, s->size))
				return fail(-errno, "cannot create memfd %s: %s", name, strerror(errno));
		} else {
			/* the same kind of object as MAP_SHARED|MAP_ANONYMOUS: /dev/zero shmem */
			char path[64];
			void *p = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
				       -1, 0);

			if (p == MAP_FAILED)
				return fail(-errno, "cannot create %" PRIu64 " bytes of shared memory: %s",
					    s->size, strerror(errno));
			snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx", (unsigned long)p,
				 (unsigned long)p + s->size);
			fd = open(path, O_RDWR | O_CLOEXEC);
			ret = errno;
			munmap(p, s->size);
			if (fd < 0)
				return fail(-ret, "cannot open shared memory object: %s", strerror(ret));
		}
		ret = add_blob_fd(r, fd);
		if (ret < 0) {
			close(fd);
			return ret;
		}
		s->fd = ret;
	}
	return 0;
}

/* ---------------------------------------------------------------- area */

struct range {
	unsigned long s, e;
};

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->s < y->s ? -1 : x->s > y->s;
}

/* An address where size bytes are free in memdump and in the target. */
static unsigned long find_hole(struct rst *r, size_t size)
{
	const MmEntry *mm = r->ds.mm;
	size_t cap = mm->n_vmas + 256, n = 0;
	struct range *rg = malloc(cap * sizeof(*rg));
	unsigned long best = 0, lo = 1UL << 32, hi = 0x7ff000000000UL, prev;
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];

	if (!rg || !f) {
		free(rg);
		if (f)
			fclose(f);
		return 0;
	}
	for (size_t i = 0; i < mm->n_vmas; i++) {
		rg[n].s = mm->vmas[i]->start;
		rg[n++].e = mm->vmas[i]->end;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if (sscanf(line, "%lx-%lx", &s, &e) != 2)
			continue;
		if (n == cap) {
			struct range *x = realloc(rg, (cap *= 2) * sizeof(*rg));

			if (!x)
				break;
			rg = x;
		}
		rg[n].s = s;
		rg[n++].e = e;
	}
	fclose(f);
	qsort(rg, n, sizeof(*rg), cmp_range);
	/* the highest gap below hi, with a 1 MiB margin on both sides */
	prev = lo;
	for (size_t i = 0; i <= n; i++) {
		unsigned long s = i < n ? rg[i].s : hi, e = i < n ? rg[i].e : hi;

		if (s > hi)
			s = hi;
		if (s > prev && s - prev >= size + (2UL << 20))
			best = ALIGN_UP(prev + (1UL << 20), RST_HUGE_SIZE) + size <= s - (1UL << 20)
				       ? ALIGN_UP(prev + (1UL << 20), RST_HUGE_SIZE) : best;
		if (e > prev)
			prev = e;
		if (prev >= hi)
			break;
	}
	free(rg);
	return best;
}

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

static void creds_from_image(struct rst_creds *d, const CredsEntry *c)
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

static int build_area(struct rst *r)
{
	struct dumpset *ds = &r->ds;
	const MmEntry *mm = ds->mm;
	const TaskCoreEntry *tc = r->leader->tc;
	size_t nt = ds->nr_cores, blob = ALIGN_UP((size_t)(restorer_blob_end - restorer_blob), PAGE_SIZE);
	size_t off, vmas_off, runs_off, thr_off, auxv_off, close_off, xs_off, stacks_off;
	struct rst_vma *rv;
	struct rst_run *rr;
	struct rst_thread *rt;
	struct rst_args *a;
	unsigned long addr;
	size_t vi = 0;
	int ret;

	off = blob + ALIGN_UP(sizeof(struct rst_args), 64);
	vmas_off = off;
	off += ALIGN_UP(mm->n_vmas * sizeof(struct rst_vma), 64);
	runs_off = off;
	off += ALIGN_UP(ds->nr_runs * sizeof(struct rst_run), 64);
	thr_off = off;
	off += ALIGN_UP(nt * sizeof(struct rst_thread), 64);
	auxv_off = off;
	off += ALIGN_UP(RST_MAX_AUXV * 8, 64);
	close_off = off;
	/* at most: one fd per VMA (files, shmem objects), pages, exe */
	off += ALIGN_UP((mm->n_vmas + 8) * sizeof(int), 64);
	xs_off = off;
	for (size_t i = 0; i < nt; i++) {
		const UserX86FpregsEntry *fp = ds->cores[i]->thread_info->fpregs;

		if (fp && fp->has_xsave_raw)
			off += ALIGN_UP(fp->xsave_raw.len, 64);
	}
	stacks_off = ALIGN_UP(off, PAGE_SIZE);
	r->area_size = stacks_off + nt * RST_STACK_SIZE;

	addr = find_hole(r, r->area_size);
	if (!addr)
		return fail(-ENOMEM, "no free address range of %zu bytes for the restorer",
			    r->area_size);
	r->area_fd = memfd_create("memdump-restorer", MFD_CLOEXEC);
	if (r->area_fd < 0 || ftruncate(r->area_fd, r->area_size))
		return fail(-errno, "cannot create the restorer area: %s", strerror(errno));
	r->area = mmap((void *)addr, r->area_size, PROT_READ | PROT_WRITE | PROT_EXEC,
		       MAP_SHARED | MAP_FIXED_NOREPLACE, r->area_fd, 0);
	if (r->area == MAP_FAILED) {
		r->area = NULL;
		return fail(-errno, "cannot map the restorer area at %#lx: %s", addr, strerror(errno));
	}
	close(r->area_fd);
	r->area_fd = -1;
	memcpy(r->area, restorer_blob, restorer_blob_end - restorer_blob);

	a = r->a = (struct rst_args *)(r->area + blob);
	a->magic = RST_MAGIC;
	a->area_start = addr;
	a->area_size = r->area_size;
	a->blob_size = blob;
	a->vmas_off = vmas_off;
	a->runs_off = runs_off;
	a->threads_off = thr_off;
	a->auxv_off = auxv_off;
	a->close_off = close_off;
	a->nr_vmas = mm->n_vmas;
	a->nr_runs = ds->nr_runs;
	a->nr_threads = nt;

	/* memory */
	rv = (struct rst_vma *)(r->area + vmas_off);
	rr = (struct rst_run *)(r->area + runs_off);
	for (size_t i = 0; i < ds->nr_runs; i++) {
		rr[i].vaddr = ds->runs[i].start;
		rr[i].nr_pages = (ds->runs[i].end - ds->runs[i].start) / PAGE_SIZE;
		rr[i].file_off = ds->runs[i].off;
	}
	for (size_t i = 0; i < mm->n_vmas; i++) {
		const VmaEntry *v = mm->vmas[i];

		rv[i].start = v->start;
		rv[i].end = v->end;
		rv[i].pgoff = v->pgoff;
		rv[i].madv = v->has_madv ? v->madv : 0;
		rv[i].prot = v->prot;
		rv[i].flags = v->flags;
		rv[i].status = v->status;
		rv[i].how = vma_how(v);
		rv[i].locked = v->has_locked && v->locked;
		while (vi < ds->nr_runs && ds->runs[vi].start < v->start)
			vi++;
		rv[i].first_run = vi;
		while (vi < ds->nr_runs && ds->runs[vi].end <= v->end)
			vi++;
		rv[i].nr_runs = vi - rv[i].first_run;
	}
	ret = open_shms(r);
	if (!ret)
		ret = open_blob_files(r, rv);
	if (ret)
		return ret;

	/* process */
	a->pages_fd = add_blob_fd(r, fcntl(ds->pages_fd, F_DUPFD_CLOEXEC, 3));
	r->exe_fd = open(reg_path(r, mm->exe_file_id), O_RDONLY | O_CLOEXEC);
	if (r->exe_fd < 0)
		return fail(-errno, "cannot open the exe file %s: %s", reg_path(r, mm->exe_file_id),
			    strerror(errno));
	a->mm.exe_fd = add_blob_fd(r, r->exe_fd);
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
	memcpy(r->area + auxv_off, mm->mm_saved_auxv, mm->n_mm_saved_auxv * 8);
	a->has_vdso = r->has_vdso;
	a->vdso_start = r->vdso_start;
	a->vdso_len = r->vdso_len;
	a->dumpable = mm->has_dumpable ? mm->dumpable : 1;
	{
		/* for benchmarks (scripts/bench-fill): MEMDUMP_FILL=collapse|plain|hugepage */
		const char *fm = getenv("MEMDUMP_FILL");

		a->fill_mode = !fm ? RST_FILL_COLLAPSE : !strcmp(fm, "plain") ? RST_FILL_PLAIN :
			       !strcmp(fm, "hugepage") ? RST_FILL_HUGEPAGE : RST_FILL_COLLAPSE;
	}
	a->thp_disabled = (mm->has_thp_disabled && mm->thp_disabled) ||
			  (tc->has_thp_disabled && tc->thp_disabled);
	for (size_t i = 0; i < RST_NR_SIGS && i < tc->n_sigactions; i++) {
		a->sigacts[i].handler = tc->sigactions[i]->sigaction;
		a->sigacts[i].flags = tc->sigactions[i]->flags;
		a->sigacts[i].restorer = tc->sigactions[i]->restorer;
		a->sigacts[i].mask = tc->sigactions[i]->mask;
	}
	if (tc->rlimits && tc->rlimits->n_rlimits) {
		a->has_rlimits = 1;
		for (size_t i = 0; i < RST_NR_RLIMITS; i++) {
			struct rlimit cur;

			getrlimit(i, &cur);
			a->rlimits[i].cur = i < tc->rlimits->n_rlimits ? tc->rlimits->rlimits[i]->cur
								      : cur.rlim_cur;
			a->rlimits[i].max = i < tc->rlimits->n_rlimits ? tc->rlimits->rlimits[i]->max
								      : cur.rlim_max;
		}
	}

	/* threads */
	rt = (struct rst_thread *)(r->area + thr_off);
	for (size_t i = 0; i < nt; i++) {
		const CoreEntry *c = ds->cores[i];
		const ThreadCoreEntry *th = c->thread_core;
		const UserX86FpregsEntry *fp = c->thread_info->fpregs;
		struct rst_thread *t = &rt[i];
		const char *comm = th->comm ? th->comm : (c->tc ? c->tc->comm : NULL);

		t->tid = ds->pstree->n_threads ? ds->pstree->threads[i] : ds->pstree->pid;
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
		if (fp && fp->has_xsave_raw) {
			t->xsave_off = xs_off;
			t->xsave_size = fp->xsave_raw.len;
			memcpy(r->area + xs_off, fp->xsave_raw.data, fp->xsave_raw.len);
			xs_off += ALIGN_UP(fp->xsave_raw.len, 64);
		}
		t->stack_top = stacks_off + (i + 1) * RST_STACK_SIZE;
	}
	return 0;
}

/* ---------------------------------------------------------------- child */

static void __attribute__((noreturn)) child_fail(struct rst *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void child_fail(struct rst *r, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->a->msg, sizeof(r->a->msg), fmt, ap);
	va_end(ap);
	r->a->err = err ? err : -EINVAL;
	__atomic_store_n(&r->a->stage, RST_STAGE_FAILED, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &r->a->stage, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	_exit(127);
}

static void unregister_rseq(void)
{
#ifdef RSEQ_SIG
#else
#define RSEQ_SIG 0x53053053
#endif
	extern const ptrdiff_t __rseq_offset __attribute__((weak));
	extern const unsigned int __rseq_size __attribute__((weak));
	char *tp;

	if (!&__rseq_offset || !&__rseq_size || !__rseq_size)
		return;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	if (syscall(SYS_rseq, tp + __rseq_offset, 32, 1, RSEQ_SIG) &&
	    syscall(SYS_rseq, tp + __rseq_offset, __rseq_size, 1, RSEQ_SIG))
		return;
}

/* Install the fds at their numbers, the blob's fds right above them. */
static void child_fds(struct rst *r)
{
	int high = r->max_target_fd + 1;
	int base2 = high + (int)r->nr_blob_fds + 64;
	int *tmp_fd = calloc(r->nr_fds + 1, sizeof(int)), *tmp_blob = calloc(r->nr_blob_fds + 1, sizeof(int));
	struct rlimit rl;
	int *close_fds = (int *)((char *)r->area + r->a->close_off);

	if (!tmp_fd || !tmp_blob)
		child_fail(r, -ENOMEM, "out of memory");
	if (r->nr_blob_fds > r->ds.mm->n_vmas + 8)	/* the room build_area() made */
		child_fail(r, -E2BIG, "too many fds for the restorer (%zu)", r->nr_blob_fds);
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < (rlim_t)base2 + r->nr_fds + r->nr_blob_fds + 64) {
		rl.rlim_cur = rl.rlim_max;
		if (rl.rlim_cur < (rlim_t)base2 + r->nr_fds + r->nr_blob_fds + 64)
			rl.rlim_cur = rl.rlim_max = base2 + r->nr_fds + r->nr_blob_fds + 64;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			child_fail(r, -errno, "cannot raise RLIMIT_NOFILE for fd %d: %m", base2);
	}
	for (size_t i = 0; i < r->nr_fds; i++) {
		tmp_fd[i] = fcntl(r->fds[i].src, F_DUPFD_CLOEXEC, base2);
		if (tmp_fd[i] < 0)
			child_fail(r, -errno, "cannot move fd %d: %m", r->fds[i].src);
	}
	for (size_t i = 0; i < r->nr_blob_fds; i++) {
		tmp_blob[i] = fcntl(r->blob_fds[i], F_DUPFD_CLOEXEC, base2);
		if (tmp_blob[i] < 0)
			child_fail(r, -errno, "cannot move fd %d: %m", r->blob_fds[i]);
	}
	syscall(SYS_close_range, 0, base2 - 1, 0);
	for (size_t i = 0; i < r->nr_fds; i++) {
		if (dup3(tmp_fd[i], r->fds[i].target, r->fds[i].cloexec ? O_CLOEXEC : 0) < 0)
			child_fail(r, -errno, "cannot install fd %d: %m", r->fds[i].target);
	}
	for (size_t i = 0; i < r->nr_blob_fds; i++) {
		if (dup3(tmp_blob[i], high + (int)i, O_CLOEXEC) < 0)
			child_fail(r, -errno, "cannot install fd %d: %m", high + (int)i);
		close_fds[i] = high + (int)i;
	}
	r->a->nr_close = r->nr_blob_fds;
	syscall(SYS_close_range, high + r->nr_blob_fds, ~0U, 0);

	/* indexes into the blob fd list become fd numbers */
	{
		struct rst_vma *rv = (struct rst_vma *)(r->area + r->a->vmas_off);

		for (size_t i = 0; i < r->a->nr_vmas; i++)
			if (rv[i].how == RST_MAP_FD)
				rv[i].fd += high;
		r->a->pages_fd += high;
		r->a->mm.exe_fd += high;
	}
}

static void __attribute__((noreturn)) child_main(struct rst *r)
{
	const TaskCoreEntry *tc = r->leader->tc;
	unsigned long sp = r->a->area_start + ((struct rst_thread *)(r->area + r->a->threads_off))[0].stack_top;
	unsigned long entry = r->a->area_start;

	unregister_rseq();
	child_fds(r);
	if (r->root && strcmp(r->root, "/") && chroot(r->root))
		child_fail(r, -errno, "cannot chroot to %s: %m", r->root);
	if (r->cwd && chdir(r->cwd))
		child_fail(r, -errno, "cannot change directory to %s: %m", r->cwd);
	if (r->ds.fs && r->ds.fs->has_umask)
		umask(r->ds.fs->umask);
	else if (tc->has_umask)
		umask(tc->umask);
	if (personality(tc->personality) < 0)
		child_fail(r, -errno, "cannot set personality %#x: %m", tc->personality);
	prctl(PR_SET_PDEATHSIG, 0);

	__asm__ volatile(
		"mov	%0, %%rsp\n"
		"xor	%%ebp, %%ebp\n"
		"jmp	*%1\n"
		: : "r"(sp), "r"(entry), "D"(r->a) : "memory");
	__builtin_unreachable();
}

/* ---------------------------------------------------------------- parent */

static int futex_wait_ms(volatile unsigned int *w, unsigned int val, long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	return syscall(SYS_futex, w, FUTEX_WAIT, val, &ts, NULL, 0);
}

static int child_gone(struct rst *r, int status)
{
	if (r->a->err)
		return fail(r->a->err, "%s", r->a->msg);
	if (WIFSIGNALED(status))
		return fail(-ECHILD, "the restored process was killed by signal %d during restore%s",
			    WTERMSIG(status), WCOREDUMP(status) ? " (core dumped)" : "");
	return fail(-ECHILD, "the restored process exited with %d during restore",
		    WEXITSTATUS(status));
}

/* Wait until every thread is parked, or the restore failed. */
static int wait_parked(struct rst *r)
{
	for (;;) {
		unsigned int st = __atomic_load_n(&r->a->stage, __ATOMIC_SEQ_CST);
		int status;
		pid_t w;

		if (st == RST_STAGE_PARKED)
			return 0;
		if (st == RST_STAGE_FAILED) {
			kill(r->pid, SIGKILL);
			waitpid(r->pid, &status, __WALL);
			return fail(r->a->err ? r->a->err : -EIO, "%s", r->a->msg);
		}
		w = waitpid(r->pid, &status, WNOHANG | __WALL);
		if (w == r->pid && (WIFEXITED(status) || WIFSIGNALED(status)))
			return child_gone(r, status);
		futex_wait_ms(&r->a->stage, st, 20);
	}
}

struct ptrace_syscall_info_min {
	uint8_t op;
	uint8_t pad[3];
	uint32_t arch;
	uint64_t instruction_pointer;
	uint64_t stack_pointer;
	union {
		struct { uint64_t nr; uint64_t args[6]; } entry;
		struct { int64_t rval; uint8_t is_error; } exit;
	};
};

/* Run tid until it has returned from rt_sigreturn; leave it stopped there. */
static int run_to_sigreturn(pid_t tid)
{
	bool in_sigreturn = false;
	int status;

	for (;;) {
		struct ptrace_syscall_info_min info;
		int sig = 0;

		if (waitpid(tid, &status, __WALL) != tid)
			return -errno;
		if (WIFEXITED(status) || WIFSIGNALED(status))
			return -ECHILD;
		if (WSTOPSIG(status) == (SIGTRAP | 0x80)) {
			memset(&info, 0, sizeof(info));
			if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, sizeof(info), &info) <= 0)
				return -errno;
			if (info.op == PTRACE_SYSCALL_INFO_ENTRY)
				in_sigreturn = info.entry.nr == SYS_rt_sigreturn;
			else if (info.op == PTRACE_SYSCALL_INFO_EXIT && in_sigreturn)
				return 0;
		} else if (status >> 16) {
			/* PTRACE_EVENT_STOP and friends */
		} else if (WSTOPSIG(status) != SIGTRAP) {
			sig = WSTOPSIG(status);
		}
		if (ptrace(PTRACE_SYSCALL, tid, 0, sig))
			return -errno;
	}
}

/* In tid, stopped after its rt_sigreturn: munmap the restorer area. */
static int inject_munmap(struct rst *r, pid_t tid)
{
	struct user_regs_struct saved, regs;
	int status, ret = 0;

	if (ptrace(PTRACE_GETREGS, tid, 0, &saved))
		return -errno;
	regs = saved;
	regs.rax = SYS_munmap;
	regs.orig_rax = -1;
	regs.rdi = r->a->area_start;
	regs.rsi = r->a->area_size;
	regs.rip = r->a->syscall_insn;
	if (ptrace(PTRACE_SETREGS, tid, 0, &regs))
		return -errno;
	for (int stops = 0; stops < 2; stops++) {
		if (ptrace(PTRACE_SYSCALL, tid, 0, 0) || waitpid(tid, &status, __WALL) != tid)
			return -errno;
		if (!WIFSTOPPED(status) || WSTOPSIG(status) != (SIGTRAP | 0x80))
			return -EIO;
	}
	if (ptrace(PTRACE_GETREGS, tid, 0, &regs))
		return -errno;
	if ((long)regs.rax < 0)
		ret = (int)regs.rax;
	if (ptrace(PTRACE_SETREGS, tid, 0, &saved))
		return -errno;
	return ret;
}

static void release(struct rst *r, unsigned int go)
{
	__atomic_store_n(&r->a->go, go, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &r->a->go, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Let the parked threads run into their dumped contexts. */
static int finish(struct rst *r)
{
	const struct rst_thread *rt = (const struct rst_thread *)(r->area + r->a->threads_off);
	size_t n = r->a->nr_threads, seized = 0;
	int ret = 0, status;

	for (; seized < n; seized++) {
		pid_t tid = rt[seized].tid;

		if (ptrace(PTRACE_SEIZE, tid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL) ||
		    ptrace(PTRACE_INTERRUPT, tid, 0, 0) || waitpid(tid, &status, __WALL) != tid) {
			ret = -errno;
			break;
		}
	}
	if (ret) {
		/* no ptrace: the threads run, the restorer area stays mapped */
		pr_warn("cannot trace the restored threads (%s): the restorer area stays mapped at "
			"%#lx\n", strerror(-ret), r->a->area_start);
		for (size_t i = 0; i < seized; i++)
			ptrace(PTRACE_DETACH, rt[i].tid, 0, 0);
		release(r, 1);
		return 0;
	}
	release(r, 1);
	for (size_t i = 0; i < n && !ret; i++) {
		if (ptrace(PTRACE_SYSCALL, rt[i].tid, 0, 0))
			ret = -errno;
	}
	for (size_t i = 0; i < n && !ret; i++)
		ret = run_to_sigreturn(rt[i].tid);
	if (!ret)
		ret = inject_munmap(r, rt[0].tid);
	if (ret) {
		kill(r->pid, SIGKILL);
		waitpid(r->pid, &status, __WALL);
		return r->a->err ? fail(r->a->err, "%s", r->a->msg)
				 : fail(ret, "the restored threads did not resume: %s", strerror(-ret));
	}
	/* MEMDUMP_RESTORE_STOP=1: leave it group-stopped, to attach a debugger */
	for (size_t i = 0; i < n; i++)
		ptrace(PTRACE_DETACH, rt[i].tid, 0,
		       i == 0 && getenv("MEMDUMP_RESTORE_STOP") ? SIGSTOP : 0);
	return 0;
}

static int write_pidfile(pid_t pid)
{
	FILE *f;

	if (!opts.pidfile)
		return 0;
	f = fopen(opts.pidfile, "we");
	if (!f || fprintf(f, "%d\n", pid) < 0 || fclose(f))
		return fail(-errno, "cannot write the pid file %s: %s", opts.pidfile, strerror(errno));
	return 0;
}

static int wait_restored(pid_t pid)
{
	int status;

	for (;;) {
		pid_t w = waitpid(pid, &status, 0);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return fail(-errno, "cannot wait for %d: %s", pid, strerror(errno));
		if (WIFEXITED(status))
			return WEXITSTATUS(status);
		if (WIFSIGNALED(status))
			return 128 + WTERMSIG(status);
	}
}

static int restore(struct rst *r)
{
	struct clone_args ca;
	sigset_t all, old;
	pid_t set_tid = r->pid, child;
	uint64_t t0 = now_us(), t1, t2;
	int ret;

	ret = open_fds(r);
	if (!ret)
		ret = build_area(r);
	if (ret)
		return ret;

	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	memset(&ca, 0, sizeof(ca));
	ca.exit_signal = SIGCHLD;
	ca.set_tid = (uintptr_t)&set_tid;
	ca.set_tid_size = 1;
	child = syscall(SYS_clone3, &ca, sizeof(ca));
	if (child == 0)
		child_main(r);
	ret = child < 0 ? -errno : 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	close_prepared(r);
	if (ret == -EEXIST)
		return fail(ret, "PID %d is in use", r->pid);
	if (ret)
		return fail(ret, "cannot create process %d: %s", r->pid, strerror(-ret));

	t1 = now_us();
	ret = wait_parked(r);
	t2 = now_us();
	if (!ret)
		ret = finish(r);
	if (ret)
		return ret;
	pr_info("restored %d in %.3f s: prepare %.3f s, rebuild %.3f s (memory: %lu pages, %lu as "
		"huge pages, in %.3f s, %.0f MB/s; populate %.3f s, read %.3f s), resume %.3f s\n", r->pid, (now_us() - t0) / 1e6,
		(t1 - t0) / 1e6, (t2 - t1) / 1e6, r->a->pages_restored, r->a->huge_chunks * 512,
		r->a->fill_us / 1e6,
		r->a->fill_us ? r->a->pages_restored * 4096.0 / r->a->fill_us : 0.0,
		r->a->prep_us / 1e6, r->a->read_us / 1e6,
		(now_us() - t2) / 1e6);
	ret = write_pidfile(r->pid);
	if (ret)
		return ret;
	if (opts.detach) {
		printf("%d\n", r->pid);
		fflush(stdout);
		return 0;
	}
	return wait_restored(r->pid);
}

int cmd_restore(void)
{
	struct rst r;
	int ret;

	memset(&r, 0, sizeof(r));
	r.area_fd = -1;
	r.exe_fd = -1;
	ret = dumpset_load(opts.dir, &r.ds);
	if (ret)
		return ret;
	r.pid = dumpset_pid(&r.ds);
	r.leader = r.ds.cores[0];
	ret = check_images(&r);
	if (!ret)
		ret = restore(&r);
	close_prepared(&r);
	if (r.area)
		munmap(r.area, r.area_size);
	free(r.descs);
	free(r.fds);
	free(r.blob_fds);
	free(r.shms);
	dumpset_free(&r.ds);
	return ret;
}
