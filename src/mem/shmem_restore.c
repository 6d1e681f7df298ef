/*
 * Shared memory objects by content (see shmem.h for the dump side): every
 * MAP_SHARED|MAP_ANONYMOUS object and every memfd is created once, sized,
 * filled from its pagemap-shmem-<shmid>.img / pages-N.img and, for memfds,
 * sealed, before anything else. Every VMA of the object then maps it (the
 * blob, through one fd per object) and every memfd fd reopens it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "ctx/restore_ctx.h"
#include "vma_status.h"
#include "mem/shmem.h"

struct shm_obj *shm_find(struct rst *r, uint64_t shmid)
{
	for (size_t k = 0; k < r->nr_shms; k++)
		if (r->shms[k].shmid == shmid)
			return &r->shms[k];
	return NULL;
}

static struct shm_obj *shm_add(struct rst *r, uint64_t shmid)
{
	struct shm_obj *s = shm_find(r, shmid);

	if (s)
		return s;
	s = realloc(r->shms, (r->nr_shms + 1) * sizeof(*s));
	if (!s)
		return NULL;
	r->shms = s;
	s = &s[r->nr_shms++];
	memset(s, 0, sizeof(*s));
	s->shmid = shmid;
	s->fd = -1;
	s->blob = -1;
	return s;
}

/* The last byte the content of s reaches. */
static uint64_t content_end(const struct shm_obj *s)
{
	const struct dump_shmem *c = s->content;

	return c && c->nr_runs ? c->runs[c->nr_runs - 1].end : 0;
}

/* A private mapping of a shared memory object (a memfd, or anonymous: vma.c of the dump). */
bool vma_shm_private(const VmaEntry *v)
{
	return (v->status & (VMA_FILE_PRIVATE | VMA_AREA_MEMFD)) ==
	       (VMA_FILE_PRIVATE | VMA_AREA_MEMFD);
}

/* Every object the VMAs map or a memfd fd opens, with its content. */
int shm_collect(struct rst *r)
{
	const MmEntry *mm = r->ds.mm;
	struct shm_obj *s;
	int ret;

	for (size_t i = 0; i < mm->n_vmas; i++) {
		const VmaEntry *v = mm->vmas[i];

		if (!(v->status & VMA_ANON_SHARED) && !vma_shm_private(v))
			continue;
		s = shm_add(r, v->shmid);
		if (!s)
			return -ENOMEM;
		if (v->status & VMA_ANON_SHARED)	/* a private one may reach past the end */
			s->size = MAX(s->size, v->pgoff + (v->end - v->start));
		if ((v->status & VMA_ANON_SHARED) && (v->flags & VMA_MAP_HUGETLB))
			s->huge = v->flags & (VMA_MAP_HUGETLB | VMA_MAP_HUGE_MASK);
		ret = dumpset_load_shmem(&r->ds, v->shmid);
		if (ret)
			return ret;
	}
	for (size_t i = 0; i < r->ds.nr_memfds; i++) {
		const MemfdInodeEntry *me = r->ds.memfds[i];

		s = shm_add(r, me->shmid);
		if (!s)
			return -ENOMEM;
		if (me->has_anon && me->anon) {
			s->sized = true;
			s->size = me->size;
			if (me->has_hugetlb_flag && (me->hugetlb_flag & MFD_HUGETLB))
				s->huge = VMA_MAP_HUGETLB | (me->hugetlb_flag & VMA_MAP_HUGE_MASK);
		} else {
			s->memfd = me;
		}
		ret = dumpset_load_shmem(&r->ds, me->shmid);
		if (ret)
			return ret;
	}
	for (size_t k = 0; k < r->nr_shms; k++) {
		s = &r->shms[k];
		s->content = dumpset_shmem(&r->ds, s->shmid);
		if (s->memfd)
			s->size = s->memfd->size;
		else if (!s->sized)
			s->size = MAX(s->size, content_end(s));
	}
	return 0;
}

/* The runs of one object: in the image, in order, in the object, all of pages-N.img. */
static int check_content(const struct shm_obj *s)
{
	const struct dump_shmem *c = s->content;
	uint64_t total = 0, limit = ALIGN_UP(s->size, PAGE_SIZE);
	struct stat st;

	for (size_t i = 0; i < c->nr_runs; i++) {
		const struct dump_run *run = &c->runs[i];

		if (!run->present)
			return fail(-EIO, "pagemap-shmem-%" PRIu64 ".img: pages at offset %#" PRIx64
				    " are not in the image", s->shmid, run->start);
		if (i && run->start < c->runs[i - 1].end)
			return fail(-EIO, "pagemap-shmem-%" PRIu64 ".img: overlapping runs at %#"
				    PRIx64, s->shmid, run->start);
		if (run->end > limit)
			return fail(-EIO, "pagemap-shmem-%" PRIu64 ".img: pages at offset %#" PRIx64
				    " are beyond the object's %" PRIu64 " bytes", s->shmid, run->start,
				    s->size);
		total += run->end - run->start;
	}
	if (fstat(c->pages_fd, &st))
		return fail(-errno, "cannot stat the pages of shared memory %" PRIu64 ": %s",
			    s->shmid, strerror(errno));
	if ((uint64_t)st.st_size != total)
		return fail(-EIO, "the pages image of shared memory %" PRIu64 " holds %lld bytes, "
			    "pagemap-shmem-%" PRIu64 ".img lists %" PRIu64, s->shmid,
			    (long long)st.st_size, s->shmid, total);
	return 0;
}

int shm_check(struct rst *r)
{
	for (size_t k = 0; k < r->nr_shms; k++) {
		const struct shm_obj *s = &r->shms[k];
		int ret;

		if (!s->size && !s->memfd)
			return fail(-EIO, "shared memory %" PRIu64 " has no size", s->shmid);
		if (s->memfd && (!s->memfd->name || strlen(s->memfd->name) > 249))
			return fail(-EIO, "memfd.img: memfd %" PRIu64 " has a bad name", s->shmid);
		if (s->content) {
			ret = check_content(s);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/*
 * An anonymous shared memory object, as MAP_SHARED|MAP_ANONYMOUS makes it
 * (with MAP_HUGETLB and its page size: a hugetlbfs object, as it was).
 */
static int create_anon(struct shm_obj *s)
{
	char path[64];
	void *p = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | s->huge,
		       -1, 0);
	int err;

	if (p == MAP_FAILED && s->huge)
		return fail(-errno, "cannot create %" PRIu64 " bytes of shared memory in huge pages "
			    "of %llu kB: %s", s->size, VMA_HUGE_SIZE(s->huge) >> 10, strerror(errno));
	if (p == MAP_FAILED)
		return fail(-errno, "cannot create %" PRIu64 " bytes of shared memory: %s", s->size,
			    strerror(errno));
	snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx", (unsigned long)p,
		 (unsigned long)p + ALIGN_UP(s->size, PAGE_SIZE));
	s->fd = open(path, O_RDWR | O_CLOEXEC);
	err = errno;
	munmap(p, s->size);
	if (s->fd < 0)
		return fail(-err, "cannot open shared memory object: %s", strerror(err));
	/* its size as dumped, not rounded to pages (an fd may have truncated it) */
	if (s->sized && !s->huge && ftruncate(s->fd, s->size))
		return fail(-errno, "cannot size shared memory %" PRIu64 " to %" PRIu64 " bytes: %s",
			    s->shmid, s->size, strerror(errno));
	return 0;
}

static int create_memfd(struct shm_obj *s)
{
	const MemfdInodeEntry *me = s->memfd;

	unsigned int huge = me->has_hugetlb_flag ? me->hugetlb_flag : 0;

	/* MFD_HUGETLB and the page size: of huge pages, as it was */
	s->fd = memfd_create(me->name, MFD_CLOEXEC | MFD_ALLOW_SEALING | huge);
	if ((s->fd < 0 || ftruncate(s->fd, s->size)) && (huge & MFD_HUGETLB))
		return fail(-errno, "cannot create memfd %s of %" PRIu64 " bytes in huge pages of "
			    "%llu kB: %s", me->name, s->size, VMA_HUGE_SIZE(huge) >> 10,
			    strerror(errno));
	if (s->fd < 0 || ftruncate(s->fd, s->size))
		return fail(-errno, "cannot create memfd %s of %" PRIu64 " bytes: %s", me->name,
			    s->size, strerror(errno));
	if ((me->has_mode && fchmod(s->fd, me->mode)) || fchown(s->fd, me->uid, me->gid))
		return fail(-errno, "cannot set the owner or mode of memfd %s: %s", me->name,
			    strerror(errno));
	return 0;
}

/* The dumped pages, read straight into a mapping of the object. */
static int fill(struct shm_obj *s)
{
	const struct dump_shmem *c = s->content;
	size_t len = ALIGN_UP(s->size, PAGE_SIZE);
	char *p;
	int ret = 0;

	if (!c || !c->nr_runs)
		return 0;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (p == MAP_FAILED)
		return fail(-errno, "cannot map shared memory %" PRIu64 " to fill it: %s", s->shmid,
			    strerror(errno));
	for (size_t i = 0; !ret && i < c->nr_runs; i++) {
		const struct dump_run *run = &c->runs[i];
		uint64_t done = 0, n = run->end - run->start;

		while (done < n) {
			ssize_t got = pread(c->pages_fd, p + run->start + done, n - done,
					    run->off + done);

			if (got <= 0) {
				ret = fail(got ? -errno : -EIO, "cannot read the pages of shared memory %"
					   PRIu64 ": %s", s->shmid, got ? strerror(errno) : "short file");
				break;
			}
			done += got;
		}
	}
	munmap(p, len);
	return ret;
}

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE	0x0010
#endif

/* Is s mapped shared and writable by some VMA? */
static bool mapped_writable(struct rst *r, const struct shm_obj *s)
{
	const MmEntry *mm = r->ds.mm;

	for (size_t i = 0; i < mm->n_vmas; i++) {
		const VmaEntry *v = mm->vmas[i];

		if ((v->status & VMA_ANON_SHARED) && v->shmid == s->shmid && (v->prot & PROT_WRITE))
			return true;
	}
	return false;
}

/*
 * Seals last: F_SEAL_WRITE would forbid the filling. F_SEAL_FUTURE_WRITE
 * (which writable mappings made before it survive) and F_SEAL_SEAL after it
 * are the blob's to add, once it has mapped the object.
 */
static int seal(struct rst *r, struct shm_obj *s)
{
	unsigned int seals = s->memfd ? s->memfd->seals : 0;

	if ((seals & F_SEAL_FUTURE_WRITE) && mapped_writable(r, s)) {
		s->late_seals = seals & (F_SEAL_FUTURE_WRITE | F_SEAL_SEAL);
		seals &= ~s->late_seals;
	}
	if (seals && fcntl(s->fd, F_ADD_SEALS, seals))
		return fail(-errno, "cannot seal memfd %s (%#x): %s", s->memfd->name, seals,
			    strerror(errno));
	return 0;
}

size_t shm_blob_seals(struct rst *r, struct rst_seal *d)
{
	size_t n = 0;

	for (size_t k = 0; k < r->nr_shms; k++) {
		if (!r->shms[k].late_seals || r->shms[k].blob < 0)
			continue;
		d[n].fd = r->shms[k].blob;
		d[n++].seals = r->shms[k].late_seals;
	}
	return n;
}

int shm_create_all(struct rst *r)
{
	for (size_t k = 0; k < r->nr_shms; k++) {
		struct shm_obj *s = &r->shms[k];
		int ret;

		s->fd = tree_shm_get(r, s->shmid);
		if (s->fd >= 0)
			continue;	/* an earlier process of the tree made and filled it */
		ret = s->memfd ? create_memfd(s) : create_anon(s);
		if (!ret)
			ret = fill(s);
		if (!ret)
			ret = seal(r, s);
		if (!ret)
			ret = tree_shm_put(r, s->shmid, s->fd);
		if (ret)
			return ret;
	}
	return 0;
}

/* The blob's fd (an index in its list) for mapping s: one per object. */
int shm_blob_fd(struct rst *r, struct shm_obj *s)
{
	int fd, ret;

	if (s->blob >= 0)
		return s->blob;
	fd = fcntl(s->fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return fail(-errno, "cannot duplicate the fd of shared memory %" PRIu64 ": %s",
			    s->shmid, strerror(errno));
	ret = add_blob_fd(r, fd);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return s->blob = ret;
}

/* The object a memfd fd opens: memfd_file_entry.inode_id names a memfd.img entry. */
struct shm_obj *shm_of_memfd(struct rst *r, const MemfdFileEntry *mf)
{
	const MemfdInodeEntry *me = mf ? dumpset_memfd(&r->ds, mf->inode_id) : NULL;

	return me ? shm_find(r, me->shmid) : NULL;
}

/*
 * The object's own description, from memfd_create, for the first read-write
 * memfd fd (once in a tree): a reopen through /proc for writing counts as a
 * writer of the inode, which makes execveat() of the memfd fail with
 * ETXTBSY (zdtm memfd04), while memfd_create's description does not. The
 * process's memfd_create fd was its only one where exec worked.
 * 0: not this fd, else the fd or -errno.
 */
static int give_own(struct rst *r, struct shm_obj *s, const MemfdFileEntry *mf)
{
	int fd;

	if (!s->memfd || s->given || (mf->flags & O_ACCMODE) != O_RDWR ||
	    !tree_shm_give(r, s->shmid))
		return 0;
	s->given = true;
	fd = fcntl(s->fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return fail(-errno, "cannot duplicate memfd %u: %s", mf->id, strerror(errno));
	if (fcntl(fd, F_SETFL, mf->flags & ~O_ACCMODE)) {
		int err = errno;

		close(fd);
		return fail(-err, "cannot set the flags of memfd %u: %s", mf->id, strerror(err));
	}
	return fd;
}

/* A memfd fd: its own open file description of the object, flags and position. */
int shm_open_memfd(struct rst *r, const FileEntry *fe)
{
	const MemfdFileEntry *mf = fe->memfd;
	struct shm_obj *s = shm_of_memfd(r, mf);
	char path[64];
	int fd, err;

	if (!s || s->fd < 0)
		return fail(-EIO, "memfd %u: its object %u was not created", mf->id, mf->inode_id);
	fd = give_own(r, s, mf);
	if (fd < 0)
		return fd;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", s->fd);
	if (!fd)
		fd = open(path, (mf->flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY)) | O_CLOEXEC);
	if (fd < 0)
		return fail(-errno, "cannot reopen memfd %u: %s", mf->id, strerror(errno));
	if (mf->pos && lseek(fd, mf->pos, SEEK_SET) < 0) {
		err = errno;
		close(fd);
		return fail(-err, "cannot seek memfd %u to %" PRIu64 ": %s", mf->id, mf->pos,
			    strerror(err));
	}
	return fd;
}

void shm_close_all(struct rst *r)
{
	for (size_t k = 0; k < r->nr_shms; k++) {
		if (r->shms[k].fd >= 0)
			close(r->shms[k].fd);
		r->shms[k].fd = -1;
		r->shms[k].blob = -1;
	}
}
