/* Reading and writing CRIU-format image files. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "image/crypt.h"
#include "image/hash.h"
#include "image/image.h"
#include "image/runsum.h"
#include "inventory.pb-c.h"
#include "log.h"

struct img_desc {
	const char *fmt;	/* file name, %u is the id */
	uint32_t magic;		/* 0: raw image, no header */
	uint32_t head;		/* IMG_COMMON_MAGIC, IMG_SERVICE_MAGIC or 0 */
};

static const struct img_desc descs[IMG_NR_TYPES] = {
	[IMG_INVENTORY]  = { "inventory.img",   0x58313116, 0 },
	[IMG_PSTREE]     = { "pstree.img",      0x50273030, IMG_COMMON_MAGIC },
	[IMG_CORE]       = { "core-%u.img",     0x55053847, IMG_COMMON_MAGIC },
	[IMG_IDS]        = { "ids-%u.img",      0x54432030, IMG_COMMON_MAGIC },
	[IMG_MM]         = { "mm-%u.img",       0x57492820, IMG_COMMON_MAGIC },
	[IMG_PAGEMAP]    = { "pagemap-%u.img",  0x56084025, IMG_COMMON_MAGIC },
	[IMG_PAGES]      = { "pages-%u.img",    0, 0 },
	[IMG_FILES]      = { "files.img",       0x56303138, IMG_COMMON_MAGIC },
	[IMG_FDINFO]     = { "fdinfo-%u.img",   0x56213732, IMG_COMMON_MAGIC },
	[IMG_FS]         = { "fs-%u.img",       0x51403912, IMG_COMMON_MAGIC },
	[IMG_PIPES_DATA] = { "pipes-data.img",  0x56453709, IMG_COMMON_MAGIC },
	[IMG_FIFO_DATA]  = { "fifo-data.img",   0x59333054, IMG_COMMON_MAGIC },
	[IMG_STATS]      = { "stats-dump",      0x57093306, IMG_SERVICE_MAGIC },
	[IMG_SHMEM_PAGEMAP] = { "pagemap-shmem-%u.img", 0x56084025, IMG_COMMON_MAGIC },
	[IMG_MEMFD_INODE] = { "memfd.img",      0x48453499, IMG_COMMON_MAGIC },
	[IMG_SECCOMP]    = { "seccomp.img",     0x64413049, IMG_COMMON_MAGIC },
	[IMG_REMAP_FPATH] = { "remap-fpath.img", 0x59133954, IMG_COMMON_MAGIC },
	[IMG_GHOST_FILE] = { "ghost-file-%x.img", 0x52583605, IMG_COMMON_MAGIC },
	[IMG_FILE_LOCKS] = { "filelocks.img",   0x54323616, IMG_COMMON_MAGIC },
	[IMG_SK_QUEUES]  = { "sk-queues.img",   0x56264026, IMG_COMMON_MAGIC },
	[IMG_TCP_STREAM] = { "tcp-stream-%u.img", 0x51465506, IMG_COMMON_MAGIC },
	[IMG_UTSNS]      = { "utsns-%u.img",    0x54473203, IMG_COMMON_MAGIC },
	[IMG_IPC_VAR]    = { "ipcns-var-%u.img", 0x53115007, IMG_COMMON_MAGIC },
	[IMG_IPCNS_SHM]  = { "ipcns-shm-%u.img", 0x46283044, IMG_COMMON_MAGIC },
	[IMG_IPCNS_SEM]  = { "ipcns-sem-%u.img", 0x59573019, IMG_COMMON_MAGIC },
	[IMG_IPCNS_MSG]  = { "ipcns-msg-%u.img", 0x55453737, IMG_COMMON_MAGIC },
	[IMG_NETDEV]     = { "netdev-%u.img",   0x57373951, IMG_COMMON_MAGIC },
	[IMG_TTY_INFO]   = { "tty-info.img",    0x59453036, IMG_COMMON_MAGIC },
	[IMG_TTY_DATA]   = { "tty-data.img",    0x59413026, IMG_COMMON_MAGIC },
	[IMG_IFADDR]     = { "ifaddr-%u.img",   0, 0 },
	[IMG_ROUTE]      = { "route-%u.img",    0, 0 },
	[IMG_ROUTE6]     = { "route6-%u.img",   0, 0 },
	[IMG_NFTABLES]   = { "nftables-%u.img", 0, 0 },
	[IMG_IPTABLES]   = { "iptables-%u.img", 0, 0 },
	[IMG_IP6TABLES]  = { "ip6tables-%u.img", 0, 0 },
	[IMG_MNTS]       = { "mountpoints-%u.img", 0x55563928, IMG_COMMON_MAGIC },
	[IMG_CGROUP]     = { "cgroup.img",      0x59383330, IMG_COMMON_MAGIC },
	[IMG_TIMENS]     = { "timens-%u.img",   0x43114433, IMG_COMMON_MAGIC },
	[IMG_NETNS]      = { "netns-%u.img",    0x55933752, IMG_COMMON_MAGIC },
};

/* Every image a dump created, with its checksum once it is closed. */
struct created_img {
	char *name;
	bool summed;		/* size and hash known (pages images: read back) */
	uint64_t size, hash;
	bool of_runs;		/* hash: of the runs' checksums (runsum.h) */
	bool remote;		/* written by a page server, not here (img_remember_remote) */
};

void img_name(enum img_type t, unsigned id, char *buf, size_t len)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(buf, len, descs[t].fmt, id);
#pragma GCC diagnostic pop
}

static struct created_img *find_created(struct img_dir *dir, const char *name);

static int remember(struct img_dir *dir, const char *name)
{
	if (dir->nr_created == dir->max_created) {
		int max = dir->max_created ? 2 * dir->max_created : 64;
		struct created_img *c = realloc(dir->created, max * sizeof(*c));

		if (!c)
			return -ENOMEM;
		dir->created = c;
		dir->max_created = max;
	}
	dir->created[dir->nr_created] = (struct created_img){ .name = strdup(name) };
	return dir->created[dir->nr_created].name ? dir->nr_created++ : -ENOMEM;
}

void img_remove_created(struct img_dir *dir)
{
	for (int i = 0; i < dir->nr_created; i++) {
		if (dir->created[i].name && !dir->created[i].remote)
			unlinkat(dir->fd, dir->created[i].name, 0);
	}
	if (dir->crypt)
		crypt_remove_sealed(dir->crypt);
	img_forget_created(dir);
}

void img_forget_created(struct img_dir *dir)
{
	for (int i = 0; i < dir->nr_subsets; i++)
		free(dir->subsets[i].name);
	free(dir->subsets);
	dir->subsets = NULL;
	dir->nr_subsets = 0;
	for (int i = 0; i < dir->nr_created; i++)
		free(dir->created[i].name);
	free(dir->created);
	dir->created = NULL;
	dir->nr_created = dir->max_created = 0;
}

static int write_header(struct image *img)
{
	const struct img_desc *d = &descs[img->type];
	uint32_t hdr[2];
	int n = 0;

	if (d->head)
		hdr[n++] = d->head;
	if (d->magic)
		hdr[n++] = d->magic;
	return n ? img_write_raw(img, hdr, n * sizeof(hdr[0])) : 0;
}

/* unnamed: an O_TMPFILE file of the directory, remembered as name all the same */
static int create_in(struct img_dir *dir, enum img_type t, const char *name, bool unnamed,
		     struct image **out)
{
	struct image *img = calloc(1, sizeof(*img));
	int ret;

	if (!img)
		return -ENOMEM;
	img->type = t;
	snprintf(img->name, sizeof(img->name), "%s", name);
	img->dir = dir;
	img->fd = unnamed ? openat(dir->fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600) :
			    openat(dir->fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (img->fd < 0) {
		ret = -errno;
		free(img);
		return fail(ret, "cannot create image %s: %s", name, strerror(-ret));
	}
	img->idx = remember(dir, name);
	if (img->idx < 0) {
		ret = img->idx;
		close(img->fd);
		unlinkat(dir->fd, name, 0);
		free(img);
		return ret;
	}
	hash64_init(&img->hash);
	if (t != IMG_PAGES) {
		img->f = fdopen(img->fd, "w");
		if (!img->f) {
			ret = -errno;
			close(img->fd);
			free(img);
			return ret;
		}
		setvbuf(img->f, NULL, _IOFBF, 1 << 16);
	}
	ret = write_header(img);
	if (ret) {
		img_abort(img);
		return ret;
	}
	*out = img;
	return 0;
}

static int create_named(struct img_dir *dir, enum img_type t, const char *name,
			struct image **out)
{
	return create_in(dir, t, name, false, out);
}

int img_create_unnamed_as(struct img_dir *dir, enum img_type t, const char *tmp,
			  struct image **out, int *fd)
{
	int ret = create_in(dir, t, tmp, true, out);

	if (ret)
		return ret;
	*fd = fcntl((*out)->fd, F_DUPFD_CLOEXEC, 3);
	if (*fd < 0) {
		ret = fail(-errno, "cannot create image %s: %s", tmp, strerror(errno));
		img_abort(*out);
		*out = NULL;
	}
	return ret;
}

int img_create(struct img_dir *dir, enum img_type t, unsigned id, struct image **out)
{
	char name[64];

	img_name(t, id, name, sizeof(name));
	return create_named(dir, t, name, out);
}

int img_write_raw(struct image *img, const void *buf, size_t len)
{
	const char *p = buf;

	hash64_update(&img->hash, buf, len);
	if (img->f) {
		if (fwrite(buf, 1, len, img->f) != len)
			return fail(-errno ?: -EIO, "cannot write image %s: %s", img->name,
				    strerror(errno ?: EIO));
		return 0;
	}
	while (len) {
		ssize_t n = write(img->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return fail(n < 0 ? -errno : -ENOSPC, "cannot write image %s: %s", img->name,
				    strerror(n < 0 ? errno : ENOSPC));
		p += n;
		len -= n;
	}
	return 0;
}

int img_write_msg(struct image *img, const ProtobufCMessage *msg)
{
	size_t len = protobuf_c_message_get_packed_size(msg);
	uint8_t stackbuf[4096], *buf = stackbuf;
	uint32_t len32 = len;
	int ret;

	if (len > sizeof(stackbuf)) {
		buf = malloc(len);
		if (!buf)
			return -ENOMEM;
	}
	protobuf_c_message_pack(msg, buf);
	ret = img_write_raw(img, &len32, sizeof(len32));
	if (!ret)
		ret = img_write_raw(img, buf, len);
	if (buf != stackbuf)
		free(buf);
	return ret;
}

int img_create_fd(struct img_dir *dir, enum img_type t, unsigned id)
{
	struct image *img;
	int ret = img_create(dir, t, id, &img), fd;

	if (ret)
		return ret;
	fd = dup(img->fd);
	ret = fd < 0 ? -errno : fd;
	img_abort(img);
	return ret;
}

int img_remember_remote(struct img_dir *dir, enum img_type t, unsigned id)
{
	char name[64];
	int idx;

	img_name(t, id, name, sizeof(name));
	idx = remember(dir, name);
	if (idx < 0)
		return idx;
	dir->created[idx].remote = true;
	return 0;
}

int img_create_unnamed(int dirfd)
{
	int fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	return fd < 0 ? -errno : fd;
}

int img_link_fd(struct img_dir *dir, enum img_type t, unsigned id, int fd)
{
	char name[64], path[64];
	int idx;

	img_name(t, id, name, sizeof(name));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, path, dir->fd, name, AT_SYMLINK_FOLLOW))
		return fail(-errno, "cannot create image %s: %s", name, strerror(errno));
	idx = remember(dir, name);
	if (idx < 0)
		unlinkat(dir->fd, name, 0);
	return idx < 0 ? idx : 0;
}

int img_replace_fd(struct img_dir *dir, const char *name, int fd)
{
	char tmp[80], path[64];
	int ret = 0;

	snprintf(tmp, sizeof(tmp), ".%s.new", name);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	unlinkat(dir->fd, tmp, 0);
	if (linkat(AT_FDCWD, path, dir->fd, tmp, AT_SYMLINK_FOLLOW) ||
	    renameat(dir->fd, tmp, dir->fd, name))
		ret = fail(-errno, "cannot replace image %s: %s", name, strerror(errno));
	if (ret)
		unlinkat(dir->fd, tmp, 0);
	return ret;
}

int img_create_as(struct img_dir *dir, enum img_type t, const char *tmp, struct image **out)
{
	unlinkat(dir->fd, tmp, 0);
	return create_named(dir, t, tmp, out);
}

int img_adopt_created(struct img_dir *dir, const char *tmp, const char *name)
{
	struct created_img *from = find_created(dir, tmp), *to = find_created(dir, name);

	if (!from || !to || !from->summed)
		return fail(-ENOENT, "image %s was not written", tmp);
	*to = (struct created_img){ to->name, true, from->size, from->hash, from->of_runs, false };
	free(from->name);
	from->name = NULL;
	return 0;
}

int img_rename_created(struct img_dir *dir, const char *tmp, const char *name)
{
	struct created_img *from = find_created(dir, tmp), *to = find_created(dir, name);

	if (!from || !to || !from->summed)
		return fail(-ENOENT, "image %s was not written", tmp);
	if (renameat(dir->fd, tmp, dir->fd, name))
		return fail(-errno, "cannot rename image %s: %s", tmp, strerror(errno));
	return img_adopt_created(dir, tmp, name);
}

int img_close(struct image *img)
{
	int ret = 0;

	if (img->f && fflush(img->f))
		ret = fail(-errno, "cannot write image %s: %s", img->name, strerror(errno));
	if (img->f) {
		if (fclose(img->f) && !ret)
			ret = fail(-errno, "cannot close image %s: %s", img->name, strerror(errno));
	} else if (img->fd >= 0) {
		close(img->fd);
	}
	if (!ret && img->type != IMG_PAGES)	/* pages may bypass img_write_raw */
		img->dir->created[img->idx] = (struct created_img){ img->dir->created[img->idx].name, true,
							  img->hash.total, hash64_final(&img->hash), false, false };
	free(img);
	return ret;
}

void img_abort(struct image *img)
{
	if (!img)
		return;
	if (img->f)
		fclose(img->f);
	else if (img->fd >= 0)
		close(img->fd);
	free(img);
}

int img_sum_file(int dirfd, const char *name, uint64_t *size, uint64_t *hash)
{
	size_t len = 1 << 20;
	char *buf = malloc(len);
	struct hash64 h;
	int fd, ret = 0;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	fd = img_open_file(dirfd, name, 0);
	if (fd < 0) {
		free(buf);
		return fd;
	}
	hash64_init(&h);
	while ((n = read(fd, buf, len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = fail(-errno, "cannot read image %s: %s", name, strerror(errno));
			break;
		}
		hash64_update(&h, buf, n);
	}
	close(fd);	/* its pages stay cached: the reader of the set reads it again next */
	free(buf);
	*size = h.total;
	*hash = hash64_final(&h);
	return ret;
}

static struct created_img *find_created(struct img_dir *dir, const char *name)
{
	for (int i = 0; i < dir->nr_created; i++)
		if (dir->created[i].name && !strcmp(dir->created[i].name, name))
			return &dir->created[i];
	return NULL;
}

int img_set_sum(struct img_dir *dir, enum img_type type, unsigned id, uint64_t size,
		uint64_t hash, bool of_runs)
{
	char name[64];
	struct created_img *c;

	img_name(type, id, name, sizeof(name));
	c = find_created(dir, name);
	if (!c)
		return fail(-ENOENT, "image %s was not created", name);
	*c = (struct created_img){ c->name, true, size, hash, of_runs, c->remote };
	return 0;
}

int img_sum_runs(struct img_dir *dir, unsigned pages_id, const uint64_t *lens, size_t nr,
		 uint64_t *sums, uint64_t *marks)
{
	struct created_img *c;
	struct hash64 whole;
	char name[64];
	int fd, ret;

	img_name(IMG_PAGES, pages_id, name, sizeof(name));
	c = find_created(dir, name);
	fd = img_open_file(dir->fd, name, 0);
	if (fd < 0)
		return fd;
	sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);	/* the disk works while we hash */
	ret = runsum_read_marks(fd, name, lens, nr, sums, &whole, marks);
	close(fd);
	if (!ret && c)
		*c = (struct created_img){ c->name, true, whole.total, runsum_of_runs(sums, nr), true, false };
	return ret;
}

static bool created_here(void *dir, const char *name)
{
	return find_created(dir, name) != NULL;
}

static void add_sum(InventoryEntry *inv, ImageSumEntry *sums, ImageSumEntry **ptrs,
		    const char *name, uint64_t size, uint64_t hash, bool of_runs)
{
	ImageSumEntry *e = &sums[inv->n_images];

	image_sum_entry__init(e);
	e->name = (char *)name;
	e->size = size;
	e->hash = hash;
	e->has_of_runs = e->of_runs = of_runs;
	ptrs[inv->n_images++] = e;
}

/* The list of images with their checksums, into inv->images; then a runtime's files. */
static int list_images(struct img_dir *dir, InventoryEntry *inv, ImageSumEntry *sums,
		       ImageSumEntry **ptrs, struct runtime_file *rt)
{
	int ret = 0, nrt;

	inv->n_images = 0;
	inv->images = ptrs;
	for (int i = 0; i < dir->nr_created && !ret; i++) {
		struct created_img *c = &dir->created[i];

		if (!c->name || c->name[0] == '.')
			continue;
		if (!c->summed)
			ret = img_sum_file(dir->fd, c->name, &c->size, &c->hash);
		c->summed = !ret;
		add_sum(inv, sums, ptrs, c->name, c->size, c->hash, c->of_runs);
	}
	for (int i = 0; i < dir->nr_subsets && !ret; i++)
		add_sum(inv, sums, ptrs, dir->subsets[i].name, dir->subsets[i].size,
			dir->subsets[i].hash, false);
	nrt = ret ? 0 : img_runtime_files(dir->fd, created_here, dir, rt, RUNTIME_FILES_MAX);
	for (int i = 0; i < nrt; i++)
		add_sum(inv, sums, ptrs, rt[i].name, rt[i].size, rt[i].hash, false);
	return ret ? ret : nrt < 0 ? nrt : 0;
}

bool img_is_subset(const char *name, unsigned *pid)
{
	char again[32];

	if (sscanf(name, "proc-%u", pid) != 1 || !*pid)
		return false;
	snprintf(again, sizeof(again), "proc-%u", *pid);
	return !strcmp(again, name);
}

int img_open_subset(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return fail(-errno, "image set %s: %s", name,
			    errno == ENOTDIR || errno == ELOOP ? "not a directory" : strerror(errno));
	return fd;
}

/*
 * A tree's other processes keep their images in proc-PID/; their core-PID.img is
 * also linked (a hard link, listed and summed like any image) beside the root's,
 * where CRIU's tools look for it: `crit x DIR ps` reads pstree.img, then the
 * core of every process it lists.
 */
static int link_member_core(struct img_dir *dir, int subfd, const char *subset)
{
	unsigned pid;
	char name[32];
	int ret;

	if (!img_is_subset(subset, &pid))
		return 0;
	snprintf(name, sizeof(name), "core-%u.img", pid);
	if (faccessat(subfd, name, F_OK, AT_SYMLINK_NOFOLLOW) && errno == ENOENT)
		return 0;	/* a pre-dump's set: pages only */
	if (linkat(subfd, name, dir->fd, name, 0))
		return fail(-errno, "cannot link %s/%s into the image directory: %s", subset, name,
			    strerror(errno));
	ret = remember(dir, name);
	return ret < 0 ? ret : 0;
}

int img_add_subset(struct img_dir *dir, const char *name)
{
	struct created_img *c = realloc(dir->subsets, (dir->nr_subsets + 1) * sizeof(*c));
	int fd, ret;

	if (!c)
		return -ENOMEM;
	dir->subsets = c;
	c += dir->nr_subsets;
	*c = (struct created_img){ .name = strdup(name), .summed = true };
	if (!c->name)
		return -ENOMEM;
	fd = img_open_subset(dir->fd, name);
	ret = fd < 0 ? fd : img_sum_file(fd, "inventory.img", &c->size, &c->hash);
	if (!ret)
		ret = link_member_core(dir, fd, name);
	if (fd >= 0)
		close(fd);
	if (ret) {
		free(c->name);
		return ret;
	}
	dir->nr_subsets++;
	return 0;
}

static int write_inventory_file(struct img_dir *dir, const ProtobufCMessage *msg);

int img_write_inventory(struct img_dir *dir, InventoryEntry *inv)
{
	size_t max = dir->nr_created + dir->nr_subsets + RUNTIME_FILES_MAX + 1;
	ImageSumEntry *sums = calloc(max, sizeof(*sums));
	ImageSumEntry **ptrs = calloc(max, sizeof(*ptrs));
	struct runtime_file rt[RUNTIME_FILES_MAX];
	int ret = sums && ptrs ? list_images(dir, inv, sums, ptrs, rt) : -ENOMEM;

	if (!ret)
		ret = write_inventory_file(dir, &inv->base);
	if (!ret && dir->crypt)
		ret = crypt_seal(dir->crypt);	/* the staging into the directory, sealed */
	inv->images = NULL;
	inv->n_images = 0;
	free(sums);
	free(ptrs);
	return ret;
}

int img_write_inventory_unnamed(struct img_dir *dir, InventoryEntry *inv, int *fd)
{
	size_t max = dir->nr_created + dir->nr_subsets + RUNTIME_FILES_MAX + 1;
	ImageSumEntry *sums = calloc(max, sizeof(*sums));
	ImageSumEntry **ptrs = calloc(max, sizeof(*ptrs));
	struct runtime_file rt[RUNTIME_FILES_MAX];
	struct image *img = NULL;
	int ret = sums && ptrs ? list_images(dir, inv, sums, ptrs, rt) : -ENOMEM;

	*fd = -1;
	if (!ret && dir->crypt)
		ret = fail(-EINVAL, "an unnamed inventory.img cannot be sealed");
	if (!ret)
		ret = img_create_unnamed_as(dir, IMG_INVENTORY, ".inventory.img.u", &img, fd);
	if (!ret) {
		ret = img_write_msg(img, &inv->base);
		if (ret)
			img_abort(img);
		else
			ret = img_close(img);
	}
	if (ret && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	inv->images = NULL;
	inv->n_images = 0;
	free(sums);
	free(ptrs);
	return ret;
}

static int write_inventory_file(struct img_dir *dir, const ProtobufCMessage *msg)
{
	static const char tmp[] = ".inventory.img.tmp";
	int dirfd = dir->fd;
	struct image *img;
	int ret;

	unlinkat(dirfd, tmp, 0);
	ret = create_named(dir, IMG_INVENTORY, tmp, &img);
	if (ret)
		return ret;
	ret = img_write_msg(img, msg);
	if (ret) {
		img_abort(img);
		return ret;
	}
	ret = img_close(img);
	if (ret)
		return ret;
	if (renameat(dirfd, tmp, dirfd, "inventory.img"))
		return fail(-errno, "cannot rename inventory image: %s", strerror(errno));
	return 0;
}

/* A created image of this directory that it syncs (not a dot name, not a page server's). */
static bool synced_here(const struct created_img *c)
{
	return c->name && c->name[0] != '.' && !c->remote;
}

/*
 * The set's files synced on several threads at once (img_sync_all): each
 * fdatasync ends with a flush of the disk's write cache, and on this VM's
 * virtio disk a flush takes milliseconds; the block layer merges flushes
 * that wait at the same time, and the journal commits the files' blocks
 * once. 15 small files, one after the other: 55-140 ms at load 8; on 4
 * threads: 5-25 ms.
 */
#define SYNC_THREADS	4

struct sync_batch {
	int dirfd;
	const char **names;	/* NULL: the directory itself */
	int n;
	pthread_mutex_t lock;
	int next;		/* the next to take */
	int bad;		/* the first that failed, or -1 */
	int err;		/* its errno */
};

/* One file (or the directory) to the disk: 0 or an errno. */
static int sync_one(int dirfd, const char *name)
{
	int fd = name ? openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) :
			dirfd, err = 0;

	if (fd < 0)
		return errno;
	if (name ? fdatasync(fd) && errno != EINVAL : fsync(fd) != 0)
		err = errno;
	if (name)
		close(fd);
	return err;
}

static void *sync_main(void *arg)
{
	struct sync_batch *b = arg;

	for (;;) {
		int i, err;

		pthread_mutex_lock(&b->lock);
		i = b->bad < 0 ? b->next++ : b->n;
		pthread_mutex_unlock(&b->lock);
		if (i >= b->n)
			return NULL;
		err = sync_one(b->dirfd, b->names[i]);
		pthread_mutex_lock(&b->lock);
		if (err && b->bad < 0) {
			b->bad = i;
			b->err = err;
		}
		pthread_mutex_unlock(&b->lock);
	}
}

/* Every name of b synced, on up to SYNC_THREADS threads (this one too). */
static int sync_batch_run(struct sync_batch *b)
{
	pthread_t t[SYNC_THREADS - 1];
	int nt = 0;

	pthread_mutex_init(&b->lock, NULL);
	b->bad = -1;
	while (nt < SYNC_THREADS - 1 && nt + 1 < b->n && !pthread_create(&t[nt], NULL, sync_main, b))
		nt++;
	sync_main(b);
	for (int i = 0; i < nt; i++)
		pthread_join(t[i], NULL);
	pthread_mutex_destroy(&b->lock);
	if (b->bad < 0)
		return 0;
	if (!b->names[b->bad])
		return fail(-b->err, "cannot sync the dump directory: %s", strerror(b->err));
	return fail(-b->err, "cannot sync image %s: %s", b->names[b->bad], strerror(b->err));
}

int img_sync_all(struct img_dir *dir)
{
	struct sync_batch b = { .dirfd = dir->fd };
	int ret;

	if (dir->crypt)
		return crypt_sync(dir->crypt);	/* the staging is memory */
	b.names = calloc(dir->nr_created + 2, sizeof(*b.names));
	if (!b.names)
		return -ENOMEM;
	for (int i = 0; i < dir->nr_created; i++)
		if (synced_here(&dir->created[i]))
			b.names[b.n++] = dir->created[i].name;
	b.names[b.n++] = "inventory.img";
	b.names[b.n++] = NULL;		/* the directory: the names */
	ret = sync_batch_run(&b);
	free(b.names);
	return ret;
}

static int read_exact(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, p + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += n;
	}
	return done;
}

int img_open_file(int dirfd, const char *name, int flags)
{
	struct stat st;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | flags);

	if (fd < 0)
		return fail(-errno, "cannot open image %s: %s", name,
			    errno == ELOOP ? "it is a symbolic link" : strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return fail(-EIO, "image %s is not a regular file", name);
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

int img_open(int dirfd, enum img_type t, unsigned id, struct image **out)
{
	const struct img_desc *d = &descs[t];
	struct image *img = calloc(1, sizeof(*img));
	uint32_t m;
	int ret;

	if (!img)
		return -ENOMEM;
	img->type = t;
	img_name(t, id, img->name, sizeof(img->name));
	img->fd = img_open_file(dirfd, img->name, 0);
	if (img->fd < 0) {
		ret = img->fd;
		free(img);
		return ret;
	}
	if (d->head) {
		ret = read_exact(img->fd, &m, sizeof(m));
		if (ret != sizeof(m) || m != d->head)
			goto bad_magic;
	}
	if (d->magic) {
		ret = read_exact(img->fd, &m, sizeof(m));
		if (ret != sizeof(m) || m != d->magic)
			goto bad_magic;
	}
	*out = img;
	return 0;
bad_magic:
	ret = fail(-EIO, "image %s is corrupt: bad magic", img->name);
	close(img->fd);
	free(img);
	return ret;
}

int img_read_msg(struct image *img, const ProtobufCMessageDescriptor *desc, void **msg)
{
	uint8_t stackbuf[4096], *buf = stackbuf;
	uint32_t len;
	int ret;

	ret = read_exact(img->fd, &len, sizeof(len));
	if (ret == 0)
		return 0;
	if (ret != sizeof(len))
		return fail(-EIO, "image %s is truncated", img->name);
	if (len > IMG_MAX_ENTRY)
		return fail(-EIO, "image %s is corrupt: entry of %u bytes", img->name, len);
	if (len > sizeof(stackbuf) && !(buf = malloc(len)))
		return -ENOMEM;
	ret = read_exact(img->fd, buf, len);
	if (ret != (int)len) {
		ret = fail(-EIO, "image %s is truncated", img->name);
		goto out;
	}
	*msg = protobuf_c_message_unpack(desc, NULL, len, buf);
	ret = *msg ? 1 : fail(-EIO, "image %s is corrupt: %s does not unpack", img->name,
			      desc->name);
out:
	if (buf != stackbuf)
		free(buf);
	return ret;
}

int img_read_one(int dirfd, enum img_type t, unsigned id,
		 const ProtobufCMessageDescriptor *desc, void **msg)
{
	struct image *img;
	int ret = img_open(dirfd, t, id, &img);

	if (ret)
		return ret;
	ret = img_read_msg(img, desc, msg);
	if (ret == 0)
		ret = fail(-EIO, "image %s is empty", img->name);
	img_abort(img);
	return ret < 0 ? ret : 0;
}

int img_read_raw(struct image *img, void *buf, size_t len)
{
	int ret = read_exact(img->fd, buf, len);

	if (ret < 0)
		return fail(ret, "cannot read image %s: %s", img->name, strerror(-ret));
	if ((size_t)ret != len)
		return fail(-EIO, "image %s is truncated", img->name);
	return 0;
}

void img_free(const ProtobufCMessageDescriptor *desc, void *msg)
{
	(void)desc;
	if (msg)
		protobuf_c_message_free_unpacked(msg, NULL);
}
