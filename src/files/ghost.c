/*
 * Ghost files (ghost.h): a deleted file the target still has open or
 * mapped. Each deleted inode is read once, while the target is frozen, and
 * written as a ghost; every file entry of it names the ghost in
 * remap-fpath.img.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "files/files.h"
#include "files/ghost.h"
#include "image/image.h"
#include "log.h"

#include "ghost-file.pb-c.h"
#include "remap-file-path.pb-c.h"

static const char deleted[] = " (deleted)";

bool ghost_is_deleted(const char *name)
{
	size_t n = strlen(name), k = sizeof(deleted) - 1;

	return n > k && !strcmp(name + n - k, deleted) && strncmp(name, "/memfd:", 7);
}

/* The directory of a deleted file's name is still there: restore recreates it in it. */
static bool dir_exists(const char *name)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(name, '/');
	struct stat st;

	if (!slash || name[0] != '/')
		return false;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - name), name);
	return !stat(dir[0] ? dir : "/", &st) && S_ISDIR(st.st_mode);
}

bool ghost_unsupported(const char *name, const struct stat *st, uint64_t limit, char *why,
		       size_t len)
{
	if (!dir_exists(name)) {
		snprintf(why, len, "a deleted file whose directory is gone too");
		return true;
	}
	if (S_ISFIFO(st->st_mode))
		return false;
	if (!S_ISREG(st->st_mode)) {
		snprintf(why, len, "a deleted file that is neither a regular file nor a FIFO");
		return true;
	}
	if ((uint64_t)st->st_size > limit) {
		snprintf(why, len, "a deleted file of %lld bytes, above the ghost limit of %" PRIu64
			 " bytes (--ghost-limit)", (long long)st->st_size, limit);
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

/* The whole content of a regular file, read through its /proc link. */
static int read_content(const char *src, struct ghost *g)
{
	size_t size = g->st.st_size, done = 0;
	int fd = open(src, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return fail(-errno, "cannot open the deleted file %s: %s", src, strerror(errno));
	g->data = malloc(size ? size : 1);
	while (g->data && done < size) {
		ssize_t n = pread(fd, g->data + done, size - done, done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = n < 0 ? errno : EIO;

			close(fd);
			return fail(-err, "cannot read the deleted file %s: %s", src,
				    n < 0 ? strerror(err) : "shorter than its size");
		}
		done += n;
	}
	close(fd);
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
	if (S_ISREG(st->st_mode) && read_content(src, g)) {
		free(g->data);
		return NULL;
	}
	gs->nr++;
	return g;
}

int ghost_attach(struct dump_ctx *d, struct file_desc *f, const char *src)
{
	char why[256];
	struct ghost *g;

	if (ghost_unsupported(f->path, &f->st, d->policy.ghost_limit, why, sizeof(why)))
		return fail(-EOPNOTSUPP, "process %d: %s is %s", d->pid, f->path, why);
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
	at.tv_sec = g->st.st_atim.tv_sec;
	at.tv_usec = g->st.st_atim.tv_nsec / 1000;
	mt.tv_sec = g->st.st_mtim.tv_sec;
	mt.tv_usec = g->st.st_mtim.tv_nsec / 1000;
	ge.atim = &at;
	ge.mtim = &mt;
	ret = img_write_msg(img, &ge.base);
	if (!ret && ge.size)
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

		if (!fs->descs[i].ghost_id)
			continue;
		re.orig_id = fs->descs[i].id;
		re.remap_id = fs->descs[i].ghost_id;
		re.has_remap_type = true;
		re.remap_type = REMAP_TYPE__GHOST;
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
	int ret = 0;

	if (!gs->nr)
		return 0;
	for (int i = 0; i < gs->nr && !ret; i++)
		ret = write_ghost(d, &gs->g[i]);
	return ret ? ret : write_remaps(d);
}

void ghosts_free(struct ghost_set *gs)
{
	for (int i = 0; i < gs->nr; i++)
		free(gs->g[i].data);
	free(gs->g);
	gs->g = NULL;
	gs->nr = 0;
}
