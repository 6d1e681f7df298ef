/*
 * Restore of deleted files (ghosts, see remap-fpath.img): each ghost is
 * recreated from ghost-file-ID.img at the path the file had, or beside it
 * when that name is taken again; every fd and mapping of it is opened from
 * there (rst_reg_path gives the ghost's path), then the file is deleted
 * again before the process runs, so that it shows "PATH (deleted)" as it did.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common.h"
#include "image/image.h"
#include "log.h"
#include "mountinfo.h"
#include "proc.h"
#include "ctx/restore_ctx.h"

#include "ghost-file.pb-c.h"
#include "files/ghost.h"
#include "files/proccwd.h"

/* The ghost entry of ghost-file-ID.img, the image left open at its content. */
static int open_ghost(struct rst *r, uint32_t id, struct image **img, GhostFileEntry **ge)
{
	int ret = img_open(r->ds.dirfd, IMG_GHOST_FILE, id, img);

	if (ret)
		return ret;
	ret = img_read_msg(*img, &ghost_file_entry__descriptor, (void **)ge);
	if (ret == 0)
		ret = fail(-EIO, "image %s is empty", (*img)->name);
	if (ret < 0) {
		img_abort(*img);
		return ret;
	}
	return 0;
}

/*
 * The chunks after a chunked entry: in order, inside the file's size, each
 * followed by its bytes, and nothing after the last one.
 */
static int check_chunks(struct image *img, const GhostFileEntry *ge, uint32_t id)
{
	uint64_t end = 0;
	struct stat st;
	int ret;

	if (fstat(img->fd, &st))
		return -errno;
	for (;;) {
		GhostChunkEntry *ce;
		off_t at;

		ret = img_read_msg(img, &ghost_chunk_entry__descriptor, (void **)&ce);
		if (ret <= 0)
			return ret;
		ret = 0;
		if (ce->off < end || ce->len > ge->size || ce->off > ge->size - ce->len)
			ret = fail(-EIO, "ghost-file-%x.img is corrupt: a chunk of %" PRIu64
				   " bytes at %" PRIu64 " is out of order or beyond the file's %"
				   PRIu64 " bytes", id, ce->len, ce->off, ge->size);
		end = ce->off + ce->len;
		at = lseek(img->fd, 0, SEEK_CUR);
		if (!ret && (at < 0 || ce->len > (uint64_t)(st.st_size - at)))
			ret = fail(-EIO, "ghost-file-%x.img is truncated in its chunk at %" PRIu64,
				   id, ce->off);
		if (!ret && lseek(img->fd, ce->len, SEEK_CUR) < 0)
			ret = -errno;
		img_free(&ghost_chunk_entry__descriptor, ce);
		if (ret)
			return ret;
	}
}

/* The content after the entry: chunks, or size raw bytes. */
static int check_content(struct image *img, const GhostFileEntry *ge, uint32_t id,
			 const char *name)
{
	struct stat st;

	if (!S_ISREG(ge->mode))
		return 0;	/* no content */
	if (!ge->has_size)
		return fail(-EIO, "ghost-file-%x.img is corrupt: no size for %s", id, name);
	if (ge->chunks)
		return check_chunks(img, ge, id);
	if (!fstat(img->fd, &st) && lseek(img->fd, 0, SEEK_CUR) + (off_t)ge->size != st.st_size)
		return fail(-EIO, "ghost-file-%x.img is corrupt: it does not hold the %" PRIu64
			    " bytes of %s", id, ge->size, name);
	return 0;
}

/*
 * The nearest directory of name still there, into dir: its directories gone
 * too are made again in it (make_parents); false: a file where one was.
 */
static bool nearest_dir(const char *name, char *dir, size_t len, struct stat *st)
{
	char *slash;

	snprintf(dir, len, "%s", name);
	while ((slash = strrchr(dir, '/'))) {
		slash[slash == dir] = 0;	/* "/" stays "/" */
		if (!stat(dir, st))
			return S_ISDIR(st->st_mode);
		if (errno != ENOENT || slash == dir)
			return false;
	}
	return false;
}

static int check_one(struct rst *r, const RemapFilePathEntry *re)
{
	const char *name = dumpset_file_path(rst_file(r, re->orig_id));
	char dir[PATH_MAX], buf[PATH_MAX];
	GhostFileEntry *ge;
	struct image *img;
	struct stat st;
	int ret;

	if (re->has_remap_type && re->remap_type == REMAP_TYPE__PROCFS)
		return proccwd_check(r, re);	/* a cwd in /proc of a process gone */
	if (!re->has_remap_type || re->remap_type != REMAP_TYPE__GHOST)
		return fail(-EOPNOTSUPP, "remap-fpath.img: file %u is remapped in a way restore "
			    "does not support", re->orig_id);
	if (!name || name[0] != '/')
		return fail(-EIO, "remap-fpath.img: file %u is no regular file entry", re->orig_id);
	ret = open_ghost(r, re->remap_id, &img, &ge);
	if (ret)
		return ret;
	if (S_ISSOCK(ge->mode) || (S_ISLNK(ge->mode) && !ge->symlnk_target) ||
	    ((S_ISCHR(ge->mode) || S_ISBLK(ge->mode)) && !ge->has_rdev))
		ret = fail(-EIO, "ghost-file-%x.img: deleted file %s is a socket, a symlink without "
			   "its target or a device node without its number", re->remap_id, name);
	else
		ret = check_content(img, ge, re->remap_id, name);
	img_free(&ghost_file_entry__descriptor, ge);
	img_abort(img);
	if (!ret && !nearest_dir(rst_path(r, name, buf, sizeof(buf)), dir, sizeof(dir), &st))
		ret = fail(-ENOTDIR, "deleted file %s: no directory is left on its path to make it "
			   "in again", name);
	return ret;
}

int ghost_check(struct rst *r)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < r->ds.nr_remaps; i++)
		ret = check_one(r, r->ds.remaps[i]);
	return ret;
}

/* A ghost's remap (not a /proc directory's: proccwd.h)? */
static bool is_ghost(const RemapFilePathEntry *re)
{
	return re && re->has_remap_type && re->remap_type == REMAP_TYPE__GHOST;
}

static struct rghost *find(struct rst *r, uint32_t remap_id)
{
	for (size_t i = 0; i < r->nr_ghosts; i++)
		if (r->ghosts[i].id == remap_id)
			return &r->ghosts[i];
	return NULL;
}

const char *ghost_path(struct rst *r, uint32_t file_id)
{
	const RemapFilePathEntry *re = dumpset_remap(&r->ds, file_id);
	struct rghost *g = is_ghost(re) ? find(r, re->remap_id) : NULL;

	return g ? g->path : NULL;
}

/*
 * All of buf into fd. A full filesystem first takes part of a write (no
 * errno then), and the write of the rest tells why: ENOSPC, not whatever
 * errno an earlier call left.
 */
static int write_all(int fd, const char *buf, size_t n, const char *path)
{
	while (n) {
		ssize_t w = write(fd, buf, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int err = w < 0 ? errno : EIO;

			return fail(-err, "cannot write the deleted file %s: %s", path,
				    strerror(err));
		}
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

static int copy_content(struct image *img, int fd, uint64_t size, const char *path)
{
	char buf[65536];

	while (size) {
		size_t n = MIN(size, sizeof(buf));
		int ret = img_read_raw(img, buf, n);

		if (!ret)
			ret = write_all(fd, buf, n, path);
		if (ret)
			return ret;
		size -= n;
	}
	return 0;
}

/* A sparse file: its size, then each chunk's bytes at its offset; the rest stays holes. */
static int copy_chunks(struct image *img, int fd, uint64_t size, const char *path)
{
	int ret;

	if (ftruncate(fd, size))
		return fail(-errno, "cannot size the deleted file %s: %s", path, strerror(errno));
	for (;;) {
		GhostChunkEntry *ce;

		ret = img_read_msg(img, &ghost_chunk_entry__descriptor, (void **)&ce);
		if (ret <= 0)
			return ret;
		if (lseek(fd, ce->off, SEEK_SET) < 0)
			ret = fail(-errno, "cannot seek in the deleted file %s: %s", path,
				   strerror(errno));
		else
			ret = copy_content(img, fd, ce->len, path);
		img_free(&ghost_chunk_entry__descriptor, ce);
		if (ret)
			return ret;
	}
}

/* A recreated deleted file or directory deleted again. */
/* path removed; on a read-only bind of a writable filesystem, through a writable clone of it */
static int remove_ghost(const char *path)
{
	int ret = unlink(path);

	if (ret && errno == EISDIR)
		ret = rmdir(path);
	if (ret && errno == EROFS) {
		int err = mount_rw_remove(path);

		errno = -err;
		ret = err ? -1 : 0;
	}
	return ret;
}

/*
 * A regular file written unnamed (O_TMPFILE) in path's directory; -EOPNOTSUPP:
 * the filesystem has no unnamed files.
 */
static int open_unnamed(const char *path, mode_t mode)
{
	char dir[PATH_MAX];
	int fd;

	snprintf(dir, sizeof(dir), "%s", path);
	fd = open(dirname(dir), O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR))
		return -EOPNOTSUPP;
	return fd < 0 ? -errno : fd;
}

/* The unnamed file fd named path (made at mk), the sweeper told first (ghost_sweep.c). */
static int name_unnamed(struct rst *r, int fd, const char *path, const char *mk)
{
	char proc[64];
	struct stat st;
	int ret;

	if (fstat(fd, &st))
		return -errno;
	ret = ghost_sweep_tell(r, path, st.st_dev, st.st_ino);
	if (ret)
		return ret;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, AT_FDCWD, mk, AT_SYMLINK_FOLLOW))
		return fail(-errno, "cannot recreate the deleted file %s: %s", path, strerror(errno));
	return 0;
}

/* A device node or a symlink made at path: an O_PATH fd of it, or -errno. */
static int make_node(const GhostFileEntry *ge, const char *path)
{
	int fd;

	if (S_ISLNK(ge->mode) ? symlink(ge->symlnk_target, path) :
	    mknod(path, ge->mode & (S_IFMT | 07777), ge->rdev))
		return -errno;
	fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* A directory, FIFO, device node, symlink or (no O_TMPFILE) regular file named
 * path, made at mk (path, or the same through a writable clone of its mount), the
 * sweeper told. */
static int open_named(struct rst *r, const GhostFileEntry *ge, const char *path, const char *mk)
{
	int fd, ret = ghost_sweep_tell(r, path, 0, 0);
	struct stat st;

	if (ret)
		return ret;
	if (S_ISDIR(ge->mode)) {	/* empty, as rmdir left it */
		if (mkdir(mk, ge->mode & 07777))
			return fail(-errno, "cannot recreate the deleted directory %s: %s", path,
				    strerror(errno));
		fd = open(mk, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	} else if (S_ISFIFO(ge->mode)) {
		if (mknod(mk, S_IFIFO | (ge->mode & 07777), 0))
			return fail(-errno, "cannot recreate the deleted FIFO %s: %s", path,
				    strerror(errno));
		fd = open(mk, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	} else if (!S_ISREG(ge->mode)) {
		fd = make_node(ge, mk);
		if (fd < 0)
			return fail(fd, "cannot recreate the deleted %s %s: %s", S_ISLNK(ge->mode) ?
				    "symlink" : "device node", path, strerror(-fd));
	} else {
		fd = open(mk, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			  ge->mode & 07777);
	}
	if (fd < 0)
		return fail(-errno, "cannot recreate the deleted file %s: %s", path, strerror(errno));
	ret = fstat(fd, &st) ? -errno : ghost_sweep_tell(r, path, st.st_dev, st.st_ino);
	if (ret) {
		close(fd);
		remove_ghost(mk);
		return ret;
	}
	return fd;
}

/* Owner, mode and times; of a device node or symlink (fd O_PATH) by its path, unfollowed. */
static int set_attrs(int fd, const char *path, const GhostFileEntry *ge,
		     const struct timespec ts[2])
{
	if (S_ISREG(ge->mode) || S_ISDIR(ge->mode) || S_ISFIFO(ge->mode))
		return fchown(fd, ge->uid, ge->gid) || fchmod(fd, ge->mode & 07777) ||
		       futimens(fd, ts) ? -errno : 0;
	return fchownat(fd, "", ge->uid, ge->gid, AT_EMPTY_PATH) ||
	       (!S_ISLNK(ge->mode) && fchmodat(AT_FDCWD, path, ge->mode & 07777, AT_SYMLINK_NOFOLLOW)) ||
	       utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
}

/*
 * Whether an inotify watch of the dump is on the deleted file name ("NAME
 * (deleted)", zdtm inotify00). Such a ghost is made by its name, not
 * unnamed: an O_TMPFILE file's own dentry is a second one of the inode, and
 * should anything hold it past the ghost's deletion (a path walk through
 * /proc/PID/fd of memdump by any process reading fd links), its end then
 * removes the inode, which takes every watch off it (IN_DELETE_SELF).
 */
static bool inotify_watched(struct rst *r, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < r->ds.nr_files; i++) {
		const FileEntry *fe = r->ds.files[i];

		for (size_t k = 0; fe->type == FD_TYPES__INOTIFY && fe->ify && k < fe->ify->n_wd; k++) {
			const FhEntry *fh = fe->ify->wd[k]->f_handle;

			if (fh && fh->path && !strncmp(fh->path, name, n) &&
			    !strcmp(fh->path + n, " (deleted)"))
				return true;
		}
	}
	return false;
}

/*
 * The file itself, with its content, owner, mode and times. A regular file
 * is written unnamed and named once complete: a restore killed before that
 * leaves nothing; after it, the sweeper removes the name. One an inotify
 * watch is on (by_name) is made at its name, told to the sweeper first.
 */
static int make_file(struct rst *r, struct image *img, const GhostFileEntry *ge,
		     const char *path, const char *mk, bool by_name)
{
	struct timespec ts[2] = {
		{ ge->atim ? ge->atim->tv_sec : 0, ge->atim ? ge->atim->tv_usec * 1000 : UTIME_OMIT },
		{ ge->mtim ? ge->mtim->tv_sec : 0, ge->mtim ? ge->mtim->tv_usec * 1000 : UTIME_OMIT },
	};
	bool reg = S_ISREG(ge->mode);
	int fd = reg && !by_name ? open_unnamed(mk, ge->mode & 07777) : -EOPNOTSUPP, ret = 0;
	bool unnamed = fd >= 0;

	if (fd < 0 && fd != -EOPNOTSUPP)
		return fail(fd, "cannot recreate the deleted file %s: %s", path, strerror(-fd));
	if (fd == -EOPNOTSUPP)
		fd = open_named(r, ge, path, mk);
	if (fd < 0)
		return fd;
	if (reg)
		ret = ge->chunks ? copy_chunks(img, fd, ge->size, path)
				 : copy_content(img, fd, ge->size, path);
	if (!ret && set_attrs(fd, mk, ge, ts))
		ret = fail(-errno, "cannot set the owner, mode or times of %s: %s", path,
			   strerror(errno));
	if (!ret && unnamed)
		ret = name_unnamed(r, fd, path, mk);
	close(fd);
	if (ret && !unnamed)
		remove_ghost(mk);
	return ret;
}

/* The dumped path when it is free again, else a name beside it. */
static char *pick_path(const char *name, uint32_t id)
{
	struct stat st;
	char *p;

	if (lstat(name, &st) && errno == ENOENT)
		return strdup(name);
	if (asprintf(&p, "%s.memdump-ghost.%d.%u", name, getpid(), id) < 0)
		return NULL;
	pr_warn("deleted file %s: the name is taken again, recreated as %s\n", name, p);
	return p;
}

/*
 * The directories of path that are gone too (zdtm rmdir_open: a directory
 * removed with its parent) made again, outermost first, each told to the
 * sweeper before it is made; top: the outermost one made, or NULL.
 */
static int make_parents(struct rst *r, const char *path, char **top)
{
	char dir[PATH_MAX];
	struct stat st;
	int ret = 0;

	*top = NULL;
	snprintf(dir, sizeof(dir), "%s", path);
	for (char *p = dir + 1; !ret && *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (stat(dir, &st) && errno == ENOENT) {
			ret = ghost_sweep_tell(r, dir, 0, 0);
			if (!ret && mkdir(dir, 0700))
				ret = fail(-errno, "cannot make the removed directory %s again for the "
					   "deleted file %s: %s", dir, path, strerror(errno));
			if (!ret && !*top && !(*top = strdup(dir)))
				ret = -ENOMEM;
		}
		*p = '/';
	}
	return ret;
}

/* The directories make_parents made, innermost first: removed, or told again with their inodes. */
static int walk_parents(struct rst *r, const char *path, const char *top, bool remove)
{
	char dir[PATH_MAX], *slash;
	struct stat st;
	int ret = 0;

	snprintf(dir, sizeof(dir), "%s", path);
	while (!ret && top && (slash = strrchr(dir, '/')) && slash > dir &&
	       strlen(dir) > strlen(top)) {
		*slash = 0;
		if (remove && rmdir(dir) && errno != ENOENT)
			pr_warn("cannot remove %s again: %s\n", dir, strerror(errno));
		else if (!remove)	/* after what is in it: the sweeper removes it after them */
			ret = stat(dir, &st) ? -errno : ghost_sweep_tell(r, dir, st.st_dev, st.st_ino);
	}
	return ret;
}

/*
 * A ghost's path under the root restore builds (r->mnt_stage): its nearest
 * directory must be the one the process will see there, not one a symlink
 * of that tree (absolute, or with "..") leads memdump to outside it.
 */
static int check_in_stage(const struct rst *r, const char *path)
{
	size_t n = r->mnt_stage ? strlen(r->mnt_stage) : 0;
	char dir[PATH_MAX];
	struct stat host, in;
	int root, fd;

	if (!n || strncmp(path, r->mnt_stage, n) || path[n] != '/' ||
	    !nearest_dir(path, dir, sizeof(dir), &host) || strlen(dir) < n)
		return 0;	/* not under it; or no directory: make_parents tells */
	root = open(r->mnt_stage, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return fail(-errno, "cannot open the restored root %s: %s", r->mnt_stage,
			    strerror(errno));
	fd = root_open_at(root, dir[n] ? dir + n : "/", O_PATH | O_DIRECTORY);
	close(root);
	if (fd >= 0 && !fstat(fd, &in) && in.st_dev == host.st_dev && in.st_ino == host.st_ino) {
		close(fd);
		return 0;
	}
	if (fd >= 0)
		close(fd);
	return fail(-EXDEV, "deleted file %s: its directory %s leads out of the restored root "
		    "(a symlink)", path + n, dir + n);
}

/*
 * Where the ghost named path is made, into mk: path itself, or, its directory
 * on a read-only bind of a writable filesystem (zdtm ghost_on_rofs, the host's
 * view), the same name through a writable clone of that mount (*clone; the
 * fds are opened by path after, on the read-only mount as they were).
 */
static int make_at(const char *path, char *mk, size_t len, int *clone)
{
	char dir[PATH_MAX];
	struct statvfs vfs;

	*clone = -1;
	snprintf(dir, sizeof(dir), "%s", path);
	if (statvfs(dirname(dir), &vfs) || !(vfs.f_flag & ST_RDONLY)) {
		snprintf(mk, len, "%s", path);
		return 0;
	}
	*clone = mount_rw_clone(dir);
	if (*clone < 0)
		return fail(*clone, "deleted file %s: its read-only mount cannot be written through "
			    "a clone of it: %s", path, strerror(-*clone));
	if (snprintf(mk, len, "/proc/self/fd/%d/%s", *clone, strrchr(path, '/') + 1) >= (int)len)
		return fail(-ENAMETOOLONG, "deleted file %s: its name is too long", path);
	return 0;
}

/* The ghost made at g->path, through a writable clone of its mount when it is read-only. */
static int make_ghost(struct rst *r, struct image *img, const GhostFileEntry *ge,
		      const struct rghost *g, const char *name)
{
	char mk[PATH_MAX];
	int clone, ret = make_at(g->path, mk, sizeof(mk), &clone);

	if (!ret)
		ret = make_file(r, img, ge, g->path, mk, inotify_watched(r, name));
	if (clone >= 0)
		close(clone);
	return ret;
}

static int create_one(struct rst *r, const RemapFilePathEntry *re)
{
	const char *name = dumpset_file_path(rst_file(r, re->orig_id)), *made;
	struct rghost *g = realloc(r->ghosts, (r->nr_ghosts + 1) * sizeof(*g));
	GhostFileEntry *ge;
	struct image *img;
	char buf[PATH_MAX];
	int ret;

	if (!g)
		return -ENOMEM;
	r->ghosts = g;
	g = &g[r->nr_ghosts];
	g->id = re->remap_id;
	ret = open_ghost(r, re->remap_id, &img, &ge);
	if (ret)
		return ret;
	/* a deleted file another process of the tree holds too: one file for both */
	made = ge->has_dev && ge->has_ino ? tree_ghost_get(r, ge->dev, ge->ino) : NULL;
	g->path = made ? strdup(made) : pick_path(rst_path(r, name, buf, sizeof(buf)),
						  re->remap_id);
	g->top = NULL;
	if (!g->path)
		ret = -ENOMEM;
	if (!ret && !made)
		ret = check_in_stage(r, g->path);
	if (!ret && !made)
		ret = make_parents(r, g->path, &g->top);
	if (!ret && !made)
		ret = make_ghost(r, img, ge, g, name);
	if (!ret && g->top)
		ret = walk_parents(r, g->path, g->top, false);
	if (!ret && !made && ge->has_dev && ge->has_ino)
		ret = tree_ghost_put(r, ge->dev, ge->ino, g->path);
	img_free(&ghost_file_entry__descriptor, ge);
	img_abort(img);
	if (ret) {
		if (g->path && g->top) {
			remove_ghost(g->path);
			walk_parents(r, g->path, g->top, true);
		}
		free(g->top);
		free(g->path);
		return ret;
	}
	r->nr_ghosts++;
	pr_info("deleted file %s %s for the restore\n", g->path, made ? "shared" : "recreated");
	return 0;
}

/*
 * The deleted name at linked again to other (its directories removed too made
 * again first, *top the outermost, each told to the sweeper), the sweeper told.
 */
static int link_again(struct rst *r, const RegFileEntry *re, const char *other,
		      const char *at, char **top)
{
	struct stat st;
	int err = stat(other, &st) ? -errno : make_parents(r, at, top);

	if (!err)
		err = ghost_sweep_tell(r, at, st.st_dev, st.st_ino);
	if (!err && link(other, at))
		err = fail(-errno, "cannot link %s again as its deleted name %s: %s", re->name,
			   re->deleted_name, strerror(errno));
	return err;
}

/*
 * A file open by a deleted name while still linked (deleted_name): linked again
 * under that name (beside it when the name is taken; in its directories made
 * again when they were removed too), opened there and the name (and those
 * directories) deleted again, so that the fd is on the same inode and shows
 * "NAME (deleted)".
 */
int ghost_open_linked(struct rst *r, const RegFileEntry *re, int flags)
{
	char buf[PATH_MAX], dbuf[PATH_MAX];
	const char *other = rst_path(r, re->name, buf, sizeof(buf));
	char *at = pick_path(rst_path(r, re->deleted_name, dbuf, sizeof(dbuf)), re->id);
	char *top = NULL;
	int fd = -1, err;

	if (!at)
		return -ENOMEM;
	err = link_again(r, re, other, at, &top);
	if (!err) {
		fd = open(at, flags | O_CLOEXEC);
		err = fd < 0 ? -errno : 0;
		if (unlink(at))
			pr_warn("cannot delete %s again: %s\n", at, strerror(errno));
		if (err)
			fail(err, "cannot open %s (as %s): %s", re->name, re->deleted_name,
			     strerror(-err));
	}
	walk_parents(r, at, top, true);
	free(top);
	free(at);
	return err ? err : fd;
}

int ghost_create_all(struct rst *r)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < r->ds.nr_remaps; i++)
		if (is_ghost(r->ds.remaps[i]) && !find(r, r->ds.remaps[i]->remap_id))
			ret = create_one(r, r->ds.remaps[i]);
	return ret;
}

void ghost_unlink_all(struct rst *r)
{
	for (size_t i = 0; i < r->nr_ghosts; i++) {
		if (remove_ghost(r->ghosts[i].path) && errno != ENOENT)
			pr_warn("cannot delete %s again: %s\n", r->ghosts[i].path, strerror(errno));
	}
	for (size_t i = r->nr_ghosts; i-- > 0; ) {	/* the directories made for them: emptied now */
		walk_parents(r, r->ghosts[i].path, r->ghosts[i].top, true);
		free(r->ghosts[i].top);
		free(r->ghosts[i].path);
	}
	free(r->ghosts);
	r->ghosts = NULL;
	r->nr_ghosts = 0;
}
