/*
 * Ghost files (ghost.h): a deleted file the target still has open or
 * mapped. Each deleted inode is read once, while the target is frozen, and
 * written as a ghost; every file entry of it names the ghost in
 * remap-fpath.img.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <sys/sysmacros.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <sys/statvfs.h>
#include <sys/stat.h>
#include <linux/magic.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "files/files.h"
#include "files/ghost.h"
#include "image/image.h"
#include "log.h"
#include "mountinfo.h"
#include "proc.h"

#include "ghost-file.pb-c.h"
#include "remap-file-path.pb-c.h"

static const char deleted[] = " (deleted)";

bool ghost_is_deleted(const char *name)
{
	size_t n = strlen(name), k = sizeof(deleted) - 1;

	return n > k && !strcmp(name + n - k, deleted) && strncmp(name, "/memfd:", 7);
}

/*
 * The nearest directory of a deleted file's name still there, as process pid
 * sees it (under its root), opened into *dirfd (O_PATH), its path into dir:
 * restore recreates the file in its directory, made again with those
 * between if they are gone too (ghost_restore.c); false: none (a name
 * that is no absolute path, or a file where a directory was).
 */
static bool nearest_dir(pid_t pid, const char *name, char *dir, size_t len, int *at)
{
	struct stat st;
	char *slash;

	if (name[0] != '/')
		return false;
	snprintf(dir, len, "%s", name);
	while ((slash = strrchr(dir, '/'))) {
		int fd;

		slash[slash == dir] = 0;	/* "/" stays "/" */
		fd = proc_root_open(pid, dir, O_PATH);
		if (fd >= 0 && !fstat(fd, &st) && S_ISDIR(st.st_mode)) {
			*at = fd;
			return true;
		}
		if (fd >= 0)
			close(fd);
		if (fd != -ENOENT || slash == dir)
			return false;
	}
	return false;
}

/* name without its " (deleted)" into buf */
static void undeleted(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%.*s", (int)(strlen(name) - (sizeof(deleted) - 1)), name);
}

/*
 * The directory to look for another name of name in, opened (O_DIRECTORY) and its
 * path into dir ("" for "/"): its own, or, that one removed too (zdtm
 * unlink_regular00: a file linked into the parent of its directory, then the
 * name and its directory removed), the nearest one still there (*own false).
 */
static int search_dir(pid_t pid, const char *name, char *dir, size_t len, bool *own)
{
	char *slash;
	int fd, at;

	undeleted(name, dir, len);
	slash = strrchr(dir, '/');
	if (!slash)
		return -ENOENT;
	*slash = 0;
	*own = true;
	fd = proc_root_open(pid, dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY);
	if (fd != -ENOENT)
		return fd;
	*own = false;
	if (!nearest_dir(pid, name, dir, len, &at))
		return -ENOENT;
	close(at);
	fd = proc_root_open(pid, dir, O_RDONLY | O_DIRECTORY);
	if (!strcmp(dir, "/"))
		dir[0] = 0;
	return fd;
}

int ghost_other_link(pid_t pid, const char *name, const struct stat *st, char *out, size_t len)
{
	char path[PATH_MAX], base[PATH_MAX];
	struct dirent *de;
	int ret = -ENOENT, fd;
	bool own;
	DIR *dir;

	undeleted(name, base, sizeof(base));
	fd = search_dir(pid, name, path, sizeof(path), &own);
	if (fd < 0)
		return fd;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -errno;
	}
	while (ret && (de = readdir(dir))) {
		struct stat ls;

		if (de->d_ino != st->st_ino || (own && !strcmp(de->d_name, strrchr(base, '/') + 1)) ||
		    fstatat(dirfd(dir), de->d_name, &ls, AT_SYMLINK_NOFOLLOW) ||
		    ls.st_dev != st->st_dev || ls.st_ino != st->st_ino)
			continue;
		ret = snprintf(out, len, "%s/%s", path, de->d_name) < (int)len ? 0 : -ENAMETOOLONG;
	}
	closedir(dir);
	return ret;
}

/* Is the directory of the deleted name name gone too? */
static bool own_dir_gone(pid_t pid, const char *name)
{
	char dir[PATH_MAX];
	bool own = true;
	int fd = search_dir(pid, name, dir, sizeof(dir), &own);

	if (fd >= 0)
		close(fd);
	return !own;
}

/* A deleted name of a file still linked: another name of it in the same directory, else why. */
static bool linked_unsupported(pid_t pid, const char *name, const struct stat *st, char *why,
			       size_t len)
{
	char other[PATH_MAX];

	if (!ghost_other_link(pid, name, st, other, sizeof(other)))
		return false;
	snprintf(why, len, "a deleted name of a file still linked %lu time(s) elsewhere, with no "
		 "other name in its directory%s", (unsigned long)st->st_nlink,
		 own_dir_gone(pid, name) ? " (removed too) or the nearest one left" : "");
	return true;
}

/* A filesystem no file can be made on (procfs: the /proc/PID of an exited process). */
static bool kernel_fs(int at)
{
	struct statfs fs;

	return !fstatfs(at, &fs) && (fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC);
}

/*
 * The mount (a read-only one) that at (a directory of pid's) is on cannot be
 * written through a writable clone of it: its filesystem is read-only too, it
 * is unbindable (no clone of it can be made), or its mountinfo does not list it.
 */
static bool no_rw_clone(pid_t pid, int at)
{
	struct statx stx;
	struct mounts ms = { 0 };
	char path[64];
	bool no = true;

	if (statx(at, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) || !(stx.stx_mask & STATX_MNT_ID))
		return true;
	snprintf(path, sizeof(path), "/proc/%d/mountinfo", pid);
	if (mounts_read(path, &ms))
		return true;
	for (size_t i = 0; i < ms.n; i++)
		if ((uint64_t)ms.m[i].id == stx.stx_mnt_id)
			no = (!strncmp(ms.m[i].super, "ro", 2) &&
			      (!ms.m[i].super[2] || ms.m[i].super[2] == ',')) ||
			     (ms.m[i].flags & MS_UNBINDABLE);
	mounts_free(&ms);
	return no;
}

/*
 * A deleted file name on a read-only mount (at: its nearest directory, dir its
 * path): restore makes it through a writable clone of that mount, in its own
 * directory, a file of its own; what it cannot make so, into why.
 */
static bool ro_unsupported(pid_t pid, const char *name, const char *dir, int at,
			   const struct stat *st, char *why, size_t len)
{
	char own[PATH_MAX], *slash;
	struct statvfs vfs;

	if (fstatvfs(at, &vfs) || !(vfs.f_flag & ST_RDONLY))
		return false;
	undeleted(name, own, sizeof(own));
	slash = strrchr(own, '/');
	if (slash)
		slash[slash == own] = 0;
	if (no_rw_clone(pid, at))
		snprintf(why, len, "a deleted file on a read-only mount of a filesystem read-only "
			 "too, or an unbindable one (or one its mountinfo does not list), where it "
			 "cannot be made again");
	else if (strcmp(own, dir))
		snprintf(why, len, "a deleted file on a read-only mount, whose directory is gone too");
	else if (S_ISREG(st->st_mode) && st->st_nlink > 0)
		snprintf(why, len, "a deleted name of a file still linked, on a read-only mount");
	else
		return false;
	return true;
}

bool ghost_unsupported(pid_t pid, const char *name, const struct stat *st, uint64_t limit,
		       char *why, size_t len)
{
	char dir[PATH_MAX];
	bool kfs, ro;
	int at;

	if (!nearest_dir(pid, name, dir, sizeof(dir), &at)) {
		snprintf(why, len, "a deleted file whose directory is gone too, with no "
			 "directory left to make it in again");
		return true;
	}
	kfs = kernel_fs(at);
	ro = !kfs && ro_unsupported(pid, name, dir, at, st, why, len);
	close(at);
	if (ro)
		return true;
	if (kfs) {
		snprintf(why, len, "a deleted file of procfs or sysfs (of a process that exited), "
			 "which cannot be made again");
		return true;
	}
	if (S_ISREG(st->st_mode) && st->st_nlink > 0)
		return linked_unsupported(pid, name, st, why, len);
	if (S_ISFIFO(st->st_mode) || S_ISDIR(st->st_mode) || S_ISCHR(st->st_mode) ||
	    S_ISBLK(st->st_mode) || S_ISLNK(st->st_mode))
		return false;	/* a deleted directory is empty: only its attributes */
	if (!S_ISREG(st->st_mode)) {
		snprintf(why, len, "a deleted socket file");
		return true;
	}
	/* its data, not its size: only the data extents are saved (a sparse file's holes
	 * come back as holes), as CRIU counts it */
	if ((uint64_t)st->st_blocks * 512 > limit) {
		snprintf(why, len, "a deleted file with %llu bytes of data, above the ghost limit "
			 "of %" PRIu64 " bytes: dump with --ghost-limit %lluK or more",
			 (unsigned long long)st->st_blocks * 512, limit,
			 ((unsigned long long)st->st_blocks * 512 + 1023) / 1024);
		return true;
	}
	return false;
}

static struct ghost *find(struct ghost_set *gs, const struct stat *st)
{
	for (int i = 0; i < gs->nr; i++)
		if (gs->g[i].st.st_dev == st->st_dev && gs->g[i].st.st_ino == st->st_ino)
			return &gs->g[i];
	return NULL;
}

/* n bytes at off of fd into buf */
static int read_at(int fd, char *buf, size_t n, off_t off, const char *src)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = pread(fd, buf + done, n - done, off + done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return fail(r < 0 ? -errno : -EIO, "cannot read the deleted file %s: %s", src,
				    r < 0 ? strerror(errno) : "shorter than its size");
		done += r;
	}
	return 0;
}

/*
 * The data extents of fd below size (SEEK_DATA/SEEK_HOLE), appended to g->chunks;
 * one extent of the whole file where the file system cannot tell its holes.
 */
static int find_extents(int fd, struct ghost *g, const char *src)
{
	off_t size = g->st.st_size, data, hole = 0;

	while (hole < size) {
		struct ghost_chunk *c;

		data = lseek(fd, hole, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			break;
		if (data < 0 && hole)
			return fail(-errno, "cannot find the data of the deleted file %s: %s", src,
				    strerror(errno));
		hole = data < 0 ? size : lseek(fd, data, SEEK_HOLE);
		if (data < 0)
			data = 0;
		if (hole < 0)
			return fail(-errno, "cannot find the holes of the deleted file %s: %s", src,
				    strerror(errno));
		hole = MIN(hole, size);
		if (hole <= data)
			break;
		c = realloc(g->chunks, (g->nr_chunks + 1) * sizeof(*c));
		if (!c)
			return -ENOMEM;
		g->chunks = c;
		c[g->nr_chunks].off = data;
		c[g->nr_chunks++].len = hole - data;
	}
	return 0;
}

/* Does a write lease (or one being broken) sit on st's inode? Any open would break it. */
static bool write_leased(const struct stat *st)
{
	FILE *f = fopen("/proc/locks", "re");
	char line[256], kind[16], mode[16], rw[16];
	unsigned int maj, min;
	unsigned long ino;
	bool leased = false;

	while (f && !leased && fgets(line, sizeof(line), f))
		leased = sscanf(line, "%*d: %15s %15s %15s %*d %x:%x:%lu", kind, mode, rw, &maj,
				&min, &ino) == 6 && !strcmp(kind, "LEASE") && strcmp(rw, "READ") &&
			 ino == st->st_ino && makedev(maj, min) == st->st_dev;
	if (f)
		fclose(f);
	return leased;
}

/* The data extents of a regular file and their bytes, read through its /proc link. */
static int read_content(const char *src, struct ghost *g, uint64_t limit)
{
	int fd, ret;
	size_t total = 0, at = 0;

	if (write_leased(&g->st))
		return fail(-EOPNOTSUPP, "the deleted file %s holds a write lease, which reading "
			    "its content would break", src);
	fd = open(src, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(-errno, "cannot open the deleted file %s: %s", src, strerror(errno));
	ret = find_extents(fd, g, src);
	for (int i = 0; !ret && i < g->nr_chunks; i++)
		total += g->chunks[i].len;
	if (!ret && total > limit)	/* a file system that cannot tell its holes */
		ret = fail(-EFBIG, "the deleted file %s has %zu bytes of data, above the ghost "
			   "limit of %" PRIu64 " bytes: dump with --ghost-limit %zuK or more", src,
			   total, limit, (total + 1023) / 1024);
	if (!ret && !(g->data = malloc(total ? total : 1)))
		ret = -ENOMEM;
	for (int i = 0; !ret && i < g->nr_chunks; i++) {
		ret = read_at(fd, g->data + at, g->chunks[i].len, g->chunks[i].off, src);
		at += g->chunks[i].len;
	}
	close(fd);
	return ret;
}

/* A symlink's target, read through its /proc link (an O_PATH fd on the link itself). */
static int read_target(const char *src, struct ghost *g)
{
	char target[PATH_MAX];
	int fd = open(src, O_PATH | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : readlinkat(fd, "", target, sizeof(target) - 1);
	int err = n < 0 ? -errno : 0;

	if (fd >= 0)
		close(fd);
	if (err)
		return fail(err, "cannot read the deleted symlink %s: %s", src, strerror(-err));
	target[n] = 0;
	g->data = strdup(target);
	return g->data ? 0 : -ENOMEM;
}

static struct ghost *add(struct dump_ctx *d, const struct stat *st, const char *src)
{
	struct ghost_set *gs = &d->files.ghosts;
	struct ghost *g = realloc(gs->g, (gs->nr + 1) * sizeof(*g));

	if (!g)
		return NULL;
	gs->g = g;
	g = &gs->g[gs->nr];
	memset(g, 0, sizeof(*g));
	g->id = gs->nr + 1;
	g->st = *st;
	if ((S_ISREG(st->st_mode) && read_content(src, g, d->policy.ghost_limit)) ||
	    (S_ISLNK(st->st_mode) && read_target(src, g))) {
		free(g->data);
		free(g->chunks);
		return NULL;
	}
	gs->nr++;
	return g;
}

/* f, open by a deleted name of a file still linked: by another name, and its own */
static int attach_linked(struct dump_ctx *d, struct file_desc *f)
{
	char other[PATH_MAX], name[PATH_MAX];
	char *p;

	undeleted(f->path, name, sizeof(name));
	if (ghost_other_link(d->pid, f->path, &f->st, other, sizeof(other)))
		return fail(-EOPNOTSUPP, "process %d: %s is a deleted name of a file still linked "
			    "elsewhere, with no other name in its directory or the nearest one left",
			    d->pid, f->path);
	if (!(p = strdup(other)) || !(f->deleted_name = strdup(name))) {
		free(p);
		return -ENOMEM;
	}
	free(f->path);
	f->path = p;
	pr_debug("%s: deleted name of %s (%lu links)", name, other, (unsigned long)f->st.st_nlink);
	return 0;
}

int ghost_attach(struct dump_ctx *d, struct file_desc *f, const char *src)
{
	char why[256];
	struct ghost *g;

	if (ghost_unsupported(d->pid, f->path, &f->st, d->policy.ghost_limit, why, sizeof(why)))
		return fail(-EOPNOTSUPP, "process %d: %s is %s", d->pid, f->path, why);
	if (S_ISREG(f->st.st_mode) && f->st.st_nlink > 0)
		return attach_linked(d, f);
	f->path[strlen(f->path) - (sizeof(deleted) - 1)] = 0;
	g = find(&d->files.ghosts, &f->st);
	if (!g)
		g = add(d, &f->st, src);
	if (!g)
		return -ENOMEM;
	f->ghost_id = g->id;
	pr_debug("%s: deleted, ghost %d (%lld bytes)", f->path, g->id, (long long)g->st.st_size);
	return 0;
}

/* Only data, no hole: the content is written whole, without chunks. */
static bool is_dense(const struct ghost *g)
{
	return !g->st.st_size || (g->nr_chunks == 1 && g->chunks[0].off == 0 &&
				  g->chunks[0].len == (uint64_t)g->st.st_size);
}

/* Each data extent as a ghost_chunk_entry followed by its bytes (CRIU's chunks). */
static int write_chunks(struct image *img, const struct ghost *g)
{
	const char *at = g->data;
	int ret = 0;

	for (int i = 0; !ret && i < g->nr_chunks; i++) {
		GhostChunkEntry ce = GHOST_CHUNK_ENTRY__INIT;

		ce.off = g->chunks[i].off;
		ce.len = g->chunks[i].len;
		ret = img_write_msg(img, &ce.base);
		if (!ret)
			ret = img_write_raw(img, at, ce.len);
		at += ce.len;
	}
	return ret;
}

static int write_ghost(struct dump_ctx *d, const struct ghost *g)
{
	GhostFileEntry ge = GHOST_FILE_ENTRY__INIT;
	Timeval at = TIMEVAL__INIT, mt = TIMEVAL__INIT;
	struct image *img;
	int ret = img_create(&d->dir, IMG_GHOST_FILE, g->id, &img);

	if (ret)
		return ret;
	ge.uid = g->st.st_uid;
	ge.gid = g->st.st_gid;
	ge.mode = g->st.st_mode;
	ge.has_dev = ge.has_ino = ge.has_size = ge.has_chunks = true;
	ge.dev = g->st.st_dev;
	ge.ino = g->st.st_ino;
	ge.size = S_ISREG(g->st.st_mode) ? g->st.st_size : 0;
	ge.has_rdev = S_ISCHR(g->st.st_mode) || S_ISBLK(g->st.st_mode);
	ge.rdev = ge.has_rdev ? (uint32_t)g->st.st_rdev : 0;
	ge.symlnk_target = S_ISLNK(g->st.st_mode) ? g->data : NULL;
	ge.chunks = S_ISREG(g->st.st_mode) && !is_dense(g);
	at.tv_sec = g->st.st_atim.tv_sec;
	at.tv_usec = g->st.st_atim.tv_nsec / 1000;
	mt.tv_sec = g->st.st_mtim.tv_sec;
	mt.tv_usec = g->st.st_mtim.tv_nsec / 1000;
	ge.atim = &at;
	ge.mtim = &mt;
	ret = img_write_msg(img, &ge.base);
	if (!ret && ge.chunks)
		ret = write_chunks(img, g);
	else if (!ret && ge.size)
		ret = img_write_raw(img, g->data, ge.size);
	if (ret) {
		img_abort(img);
		return ret;
	}
	return img_close(img);
}

static int write_remaps(struct dump_ctx *d)
{
	struct file_set *fs = &d->files;
	struct image *img;
	int ret = img_create(&d->dir, IMG_REMAP_FPATH, 0, &img);

	if (ret)
		return ret;
	for (int i = 0; i < fs->nr_descs && !ret; i++) {
		RemapFilePathEntry re = REMAP_FILE_PATH_ENTRY__INIT;

		if (!fs->descs[i].ghost_id && !fs->descs[i].gone_pid)
			continue;
		re.orig_id = fs->descs[i].id;
		re.has_remap_type = true;
		if (fs->descs[i].gone_pid) {	/* a /proc directory of a process gone: proccwd.h */
			re.remap_id = (uint32_t)fs->descs[i].gone_pid;
			re.remap_type = REMAP_TYPE__PROCFS;
			re.has_proc_uid = re.has_proc_gid = true;	/* its stand-in's */
			re.proc_uid = fs->descs[i].st.st_uid;
			re.proc_gid = fs->descs[i].st.st_gid;
		} else {
			re.remap_id = fs->descs[i].ghost_id;
			re.remap_type = REMAP_TYPE__GHOST;
		}
		ret = img_write_msg(img, &re.base);
	}
	if (ret) {
		img_abort(img);
		return ret;
	}
	return img_close(img);
}

int write_ghosts(struct dump_ctx *d)
{
	struct ghost_set *gs = &d->files.ghosts;
	bool gone = false;	/* a /proc directory of a process gone: its remap (proccwd.h) */
	int ret = 0;

	for (int i = 0; i < d->files.nr_descs; i++)
		gone |= d->files.descs[i].gone_pid != 0;
	if (!gs->nr && !gone)
		return 0;
	for (int i = 0; i < gs->nr && !ret; i++)
		ret = write_ghost(d, &gs->g[i]);
	return ret ? ret : write_remaps(d);
}

void ghosts_free(struct ghost_set *gs)
{
	for (int i = 0; i < gs->nr; i++) {
		free(gs->g[i].data);
		free(gs->g[i].chunks);
	}
	free(gs->g);
	gs->g = NULL;
	gs->nr = 0;
}
