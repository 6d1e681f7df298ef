/*
 * Restore of an inotify instance: every watch added again on its path with
 * its mask and the same wd. The kernel hands out wds in increasing order
 * (cyclic, from 1): a watch whose wd is still ahead is added and removed
 * until the next one is it, as CRIU does. The IN_IGNORED events those
 * removals queue are read away before the process gets the fd; events
 * queued at the dump are lost (docs/restore.md). A watch on a deleted file
 * ("PATH (deleted)") is added on the ghost the restore made of it, by the
 * path the caller gives (fd_kinds.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "log.h"
#include "ctx/restore_ctx.h"
#include "ctx/file_desc.h"
#include "evloop/evloop.h"

#define MAX_WD_STEPS	(1 << 20)

static const char *watch_path(const InotifyWdEntry *w)
{
	return w->f_handle && w->f_handle->path ? w->f_handle->path : NULL;
}

/* Where memdump finds a watched file: under the root it built for the process (rst_path). */
static const char *host_path(const struct rst *r, const InotifyWdEntry *w, char *buf, size_t len)
{
	const char *path = watch_path(w);

	return path && !ghost_is_deleted(path) ? rst_path(r, path, buf, len) : path;
}

/* The watched file is the one dumped: same inode, same filesystem. */
static int check_watch(const struct rst *r, uint32_t id, const InotifyWdEntry *w)
{
	char buf[PATH_MAX];
	const char *path = host_path(r, w, buf, sizeof(buf));
	struct stat st;

	if (!path || path[0] != '/')
		return fail(-EIO, "files.img: inotify %u: watch %u has no path", id, w->wd);
	if (ghost_is_deleted(path))
		;	/* a ghost: new inode, made later (its file is checked by fd_kinds.c) */
	else if (lstat(path, &st))
		return fail(-errno, "inotify %u: watched file %s: %s", id, path, strerror(errno));
	else if (st.st_ino != w->i_ino ||
		 ((major(st.st_dev) << 20) | minor(st.st_dev)) != w->s_dev)
		return fail(-ESTALE, "inotify %u: watched file %s was replaced since the dump", id,
			    path);
	if (!w->wd || w->wd > MAX_WD_STEPS)
		return fail(-EIO, "files.img: inotify %u: watch descriptor %u is out of range", id,
			    w->wd);
	return 0;
}

int inotify_check(const struct rst *r, const InotifyFileEntry *e)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < e->n_wd; i++) {
		ret = check_watch(r, e->id, e->wd[i]);
		for (size_t j = 0; !ret && j < i; j++)
			if (e->wd[j]->wd == e->wd[i]->wd)
				ret = fail(-EIO, "files.img: inotify %u: wd %u is listed twice",
					   e->id, e->wd[i]->wd);
	}
	return ret;
}

struct watch_at {
	const InotifyWdEntry *w;
	const char *path;	/* where it is added */
};

static int cmp_wd(const void *a, const void *b)
{
	const InotifyWdEntry *x = ((const struct watch_at *)a)->w, *y = ((const struct watch_at *)b)->w;

	return x->wd < y->wd ? -1 : x->wd > y->wd;
}

/* Add w on fd, at path, until the kernel gives it its dumped wd. */
static int add_watch(int fd, uint32_t id, const InotifyWdEntry *w, const char *path)
{
	uint32_t mask = w->mask;
	struct stat st;

	if (!lstat(path, &st) && S_ISLNK(st.st_mode))
		mask |= IN_DONT_FOLLOW;		/* the watch was on the link itself */
	for (int step = 0; step < MAX_WD_STEPS; step++) {
		int wd = inotify_add_watch(fd, path, mask);

		if (wd < 0)
			return fail(-errno, "inotify %u: cannot watch %s: %s", id, path,
				    strerror(errno));
		if ((uint32_t)wd == w->wd)
			return 0;
		if ((uint32_t)wd > w->wd)
			return fail(-EINVAL, "inotify %u: %s got wd %d, past its wd %u", id, path, wd,
				    w->wd);
		inotify_rm_watch(fd, wd);
	}
	return fail(-EINVAL, "inotify %u: cannot reach wd %u", id, w->wd);
}

/* The IN_IGNORED events of the removed stand-ins. */
static void drain(int fd)
{
	char buf[4096];
	int fl = fcntl(fd, F_GETFL);

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	fcntl(fd, F_SETFL, fl);
}

int inotify_drain_later(struct rst *r, int fd)
{
	int *n = realloc(r->ify_drain, (r->nr_ify_drain + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	r->ify_drain = n;
	n[r->nr_ify_drain] = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (n[r->nr_ify_drain] < 0)
		return fail(-errno, "cannot keep an inotify fd: %s", strerror(errno));
	r->nr_ify_drain++;
	return 0;
}

static bool is_fanotify(int fd)
{
	char proc[64], link[64];
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, link, sizeof(link) - 1);
	link[n < 0 ? 0 : n] = 0;
	return !strcmp(link, "anon_inode:[fanotify]");
}

void inotify_drain_all(struct rst *r)
{
	for (size_t i = 0; i < r->nr_ify_drain; i++)
		is_fanotify(r->ify_drain[i]) ? fanotify_drain(r->ify_drain[i])
					     : drain(r->ify_drain[i]);
	inotify_drain_close(r);
}

void inotify_drain_close(struct rst *r)
{
	for (size_t i = 0; i < r->nr_ify_drain; i++)
		close(r->ify_drain[i]);
	free(r->ify_drain);
	r->ify_drain = NULL;
	r->nr_ify_drain = 0;
}

int inotify_open(const struct rst *r, const InotifyFileEntry *e, const char *const *ghosts)
{
	struct watch_at *sorted = calloc(e->n_wd + 1, sizeof(*sorted));
	char (*bufs)[PATH_MAX] = calloc(e->n_wd + 1, sizeof(*bufs));
	int fd = inotify_init1(IN_CLOEXEC | (e->flags & O_NONBLOCK ? IN_NONBLOCK : 0)), ret = 0;

	if (fd < 0 || !sorted || !bufs) {
		ret = fd < 0 ? fail(-errno, "cannot create inotify %u: %s", e->id, strerror(errno))
			     : -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < e->n_wd; i++)
		sorted[i] = (struct watch_at){ e->wd[i], ghosts && ghosts[i] ? ghosts[i] :
				host_path(r, e->wd[i], bufs[i], sizeof(bufs[i])) };
	qsort(sorted, e->n_wd, sizeof(*sorted), cmp_wd);
	for (size_t i = 0; !ret && i < e->n_wd; i++)
		ret = add_watch(fd, e->id, sorted[i].w, sorted[i].path);
	drain(fd);
out:
	free(bufs);
	free(sorted);
	if (ret && fd >= 0)
		close(fd);
	return ret ? ret : fd;
}
