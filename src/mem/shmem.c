/* Dumping shared memory objects by content (see shmem.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "image/image.h"
#include "log.h"
#include "mem/shmem.h"
#include "vma_status.h"

#include "files.pb-c.h"
#include "pagemap.pb-c.h"

#define COPY_BUF	(4UL << 20)

struct shmem {
	uint64_t ino;
	char path[96];		/* /proc/PID/map_files/... or /proc/PID/fd/N */
	char name[256];		/* memfd name, or "" */
	bool memfd;
	bool entry;		/* anonymous, but an fd or a private mapping needs its
				 * memfd.img entry (its size, anon) */
	uint32_t huge;		/* of hugetlbfs: MFD_HUGETLB and log2 of the page size */
};

#ifndef HUGETLBFS_MAGIC
#define HUGETLBFS_MAGIC	0x958458f6
#endif

/*
 * An object of hugetlbfs (MAP_HUGETLB memory, a memfd made with MFD_HUGETLB,
 * mapped or not): its memfd_create flags, as memfd.img keeps them
 * (hugetlb_flag: MFD_HUGETLB | log2 of the page size << 26, CRIU's). 0: not.
 */
static uint32_t huge_flags(int fd)
{
	struct statfs sf;
	unsigned shift = 0;

	if (fstatfs(fd, &sf) || (unsigned long)sf.f_type != HUGETLBFS_MAGIC)
		return 0;
	while (shift < 63 && (1UL << shift) < (unsigned long)sf.f_bsize)
		shift++;
	return MFD_HUGETLB | (shift << VMA_MAP_HUGE_SHIFT);
}

static struct shmem *find(struct shmem_set *set, uint64_t ino)
{
	for (int i = 0; i < set->nr; i++)
		if (set->objs[i].ino == ino)
			return &set->objs[i];
	return NULL;
}

static struct shmem *add(struct shmem_set *set, uint64_t ino)
{
	struct shmem *s = find(set, ino);

	if (s)
		return s;
	s = realloc(set->objs, (set->nr + 1) * sizeof(*s));
	if (!s)
		return NULL;
	set->objs = s;
	s = &set->objs[set->nr++];
	memset(s, 0, sizeof(*s));
	s->ino = ino;
	return s;
}

/* "/memfd:NAME (deleted)" -> NAME */
static void memfd_name(const char *link, char *out, size_t len)
{
	const char *p = link + strlen("/memfd:");
	size_t n = strlen(p);

	if (n > 10 && !strcmp(p + n - 10, " (deleted)"))
		n -= 10;
	snprintf(out, len, "%.*s", (int)n, p);
}

int shmem_add_vma(struct dump_ctx *d, const struct vma *v)
{
	struct shmem *s = add(&d->shmem, v->shmid);

	if (!s)
		return -ENOMEM;
	if (!s->path[0])
		snprintf(s->path, sizeof(s->path), "/proc/%d/map_files/%lx-%lx", d->pid, v->start,
			 v->end);
	if (!strncmp(v->name, "/memfd:", 7)) {
		s->memfd = true;
		memfd_name(v->name, s->name, sizeof(s->name));
	} else if (!(v->flags & MAP_SHARED)) {
		s->entry = true;	/* a private mapping: the object's size matters */
	}
	return 0;
}

/*
 * An fd on MAP_SHARED|MAP_ANONYMOUS memory, opened through its
 * /proc/PID/map_files entry (reads "/dev/zero (deleted)"): the object itself,
 * as for a memfd fd, not a deleted file to copy. Anything else: 0.
 */
int shmem_anon_fd_id(struct dump_ctx *d, int fd, const char *link, const struct stat *st)
{
	struct stat ref;
	struct shmem *s;
	int mfd;

	if (strcmp(link, "/dev/zero (deleted)") || !S_ISREG(st->st_mode))
		return 0;
	mfd = memfd_create("memdump-shmem-dev", MFD_CLOEXEC);	/* the same internal mount */
	if (mfd < 0 || fstat(mfd, &ref)) {
		int err = errno;

		if (mfd >= 0)
			close(mfd);
		return fail(-err, "cannot tell shared memory fds: memfd_create: %s", strerror(err));
	}
	close(mfd);
	if (ref.st_dev != st->st_dev)
		return 0;
	s = add(&d->shmem, st->st_ino);
	if (!s)
		return -ENOMEM;
	snprintf(s->path, sizeof(s->path), "/proc/%d/fd/%d", d->pid, fd);
	s->entry = true;
	return 1;
}

int shmem_add_memfd_fd(struct dump_ctx *d, int fd, const char *link)
{
	char path[96];
	struct stat st;
	struct shmem *s;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", d->pid, fd);
	if (stat(path, &st))
		return -errno;
	s = add(&d->shmem, st.st_ino);
	if (!s)
		return -ENOMEM;
	snprintf(s->path, sizeof(s->path), "%s", path);
	s->memfd = true;
	memfd_name(link, s->name, sizeof(s->name));
	return 0;
}

/* Copy [off, off + len) of src to dst; *sum: the checksum of what was written. */
static int copy_range(int src, int dst, uint64_t off, uint64_t len, uint8_t *buf, uint64_t *sum)
{
	struct hash64 h;

	hash64_init(&h);
	while (len) {
		ssize_t n = pread(src, buf, MIN(len, COPY_BUF), off);

		if (n < 0)
			return -errno;
		if (n == 0) {	/* the last page past the object's end: zeros */
			n = MIN(len, COPY_BUF);
			memset(buf, 0, n);
		}
		hash64_update(&h, buf, n);
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(dst, buf + done, n - done);

			if (w <= 0)
				return fail(w < 0 ? -errno : -ENOSPC, "cannot write a pages image: %s",
					    strerror(w < 0 ? errno : ENOSPC));
			done += w;
		}
		off += n;
		len -= n;
	}
	*sum = hash64_final(&h);
	return 0;
}

/* Runs of data (SEEK_DATA/SEEK_HOLE), page aligned, into pagemap + pages. */
static int dump_content(int src, uint64_t size, struct image *pm, struct image *pages)
{
	uint8_t *buf = malloc(COPY_BUF);
	off_t off = 0;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	while (!ret && (uint64_t)off < size) {
		off_t data = lseek(src, off, SEEK_DATA), hole;
		PagemapEntry pe = PAGEMAP_ENTRY__INIT;

		if (data < 0)
			break;		/* ENXIO: no more data */
		hole = lseek(src, data, SEEK_HOLE);
		if (hole < 0 || (uint64_t)hole > size)
			hole = size;
		data &= ~(off_t)(PAGE_SIZE - 1);
		hole = ALIGN_UP(hole, (off_t)PAGE_SIZE);
		pe.vaddr = data;
		pe.has_nr_pages = true;
		pe.nr_pages = pe.compat_nr_pages = (hole - data) / PAGE_SIZE;
		pe.has_flags = true;
		pe.flags = PE_PRESENT;
		pe.has_sum = true;
		ret = copy_range(src, pages->fd, data, hole - data, buf, &pe.sum);
		if (!ret)
			ret = img_write_msg(pm, &pe.base);
		off = hole;
	}
	free(buf);
	return ret;
}

static int dump_one(struct dump_ctx *d, struct shmem *s, unsigned pages_id, uint64_t *size)
{
	PagemapHead head = PAGEMAP_HEAD__INIT;
	struct image *pm = NULL, *pages = NULL;
	struct stat st;
	int src, ret;

	src = open(s->path, O_RDONLY | O_CLOEXEC);
	if (src < 0 || fstat(src, &st)) {
		ret = fail(-errno, "cannot open shared memory %s of process %d: %s", s->path,
			   d->pid, strerror(errno));
		if (src >= 0)
			close(src);
		return ret;
	}
	*size = st.st_size;
	s->huge = huge_flags(src);
	head.pages_id = pages_id;
	ret = img_create(&d->dir, IMG_SHMEM_PAGEMAP, s->ino, &pm);
	if (!ret)
		ret = img_write_msg(pm, &head.base);
	if (!ret)
		ret = img_create(&d->dir, IMG_PAGES, pages_id, &pages);
	if (!ret)
		ret = dump_content(src, st.st_size, pm, pages);
	if (!ret && !fstat(pages->fd, &st))	/* raw: its size is its pages */
		d->stats.shpages_written += st.st_size / PAGE_SIZE;
	if (!ret)
		ret = img_close(pm);
	else
		img_abort(pm);
	if (!ret)
		ret = img_close(pages);
	else
		img_abort(pages);
	close(src);
	return ret;
}

static int write_memfd_inode(struct image *img, const struct shmem *s, uint64_t size)
{
	MemfdInodeEntry me = MEMFD_INODE_ENTRY__INIT;
	struct stat st;
	int fd = open(s->path, O_RDONLY | O_CLOEXEC);
	int seals = fd >= 0 ? fcntl(fd, F_GET_SEALS) : 0;

	if (fd >= 0 && !fstat(fd, &st)) {
		me.uid = st.st_uid;
		me.gid = st.st_gid;
		me.has_mode = true;
		me.mode = st.st_mode & 07777;
	}
	if (fd >= 0)
		close(fd);
	me.name = (char *)s->name;
	me.has_anon = me.anon = !s->memfd;
	me.size = size;
	me.shmid = s->ino;
	me.inode_id = s->ino;
	me.seals = seals > 0 ? seals : 0;
	me.has_hugetlb_flag = s->huge != 0;
	me.hugetlb_flag = s->huge;
	return img_write_msg(img, &me.base);
}

int write_shmem(struct dump_ctx *d)
{
	struct image *memfds;
	int ret = img_create(&d->dir, IMG_MEMFD_INODE, 0, &memfds);

	if (ret)
		return ret;
	for (int i = 0; i < d->shmem.nr && !ret; i++) {
		struct shmem *s = &d->shmem.objs[i];
		uint64_t size = 0;

		ret = dump_one(d, s, 2 + i, &size);
		if (!ret && (s->memfd || s->entry))
			ret = write_memfd_inode(memfds, s, size);
	}
	if (ret) {
		img_abort(memfds);
		return ret;
	}
	return img_close(memfds);
}

void shmem_free(struct shmem_set *set)
{
	free(set->objs);
	set->objs = NULL;
	set->nr = 0;
}
