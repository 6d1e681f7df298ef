/*
 * The mount namespace of a dump (ns/mntns.c wrote mountpoints-1.img):
 * the restoring thread makes a copy of memdump's (unshare), turns every
 * mount of the copy into a slave first (nothing done in it reaches
 * memdump's namespace), finds there every mount the process kept (the same
 * mount on the same parent), unmounts what the copy has more, gives the
 * kept ones their propagation and mounts the process's own (tmpfs with its
 * files, proc, sysfs, mqueue, devpts, bind mounts) in their order. The
 * files and mappings of the process are opened afterwards, in its view. A
 * PID namespace's proc, and what follows it, is mounted by the restored
 * init itself (child.c), the only one that sees that namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <linux/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common.h"
#include "image/image.h"
#include "log.h"
#include "mountinfo.h"
#include "ctx/restore_ctx.h"
#include "mnt.pb-c.h"
#include "tmpfs-file.pb-c.h"
#include "ns/mntns.h"

/* --join-ns mnt:PATH: the mount namespace the process goes into, or NULL. */
static const char *join_path(const struct restore_opts *o)
{
	for (int i = 0; i < o->nr_join_ns; i++)
		if (!strcmp(o->join_ns[i].kind, "mnt"))
			return o->join_ns[i].path;
	return NULL;
}

/* A mount namespace of its own to build (not when it joins one). */
static bool own_mntns(const struct rst *r)
{
	return !join_path(r->o) && r->ds.inv->has_own_ns && (r->ds.inv->own_ns & CLONE_NEWNS);
}

/*
 * --join-ns mnt:PATH: this thread (its fs information its own first, as
 * setns requires) goes into that namespace, at its root; the process is
 * forked there and its files are opened there. Its dumped mounts are not
 * made: they are the namespace's owner's.
 */
static int join_mntns(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return fail(-errno, "--join-ns mnt:%s: %s", path, strerror(errno));
	if (unshare(CLONE_FS) || setns(fd, CLONE_NEWNS) || chdir("/"))
		ret = fail(-errno, "--join-ns mnt:%s: cannot enter it: %s", path, strerror(errno));
	close(fd);
	if (!ret)
		pr_info("mount namespace: %s\n", path);
	return ret;
}

static int load_entries(struct rst *r, unsigned id)
{
	struct image *img;
	void *msg;
	int ret = img_open(r->ds.dirfd, IMG_MNTS, id, &img);

	if (ret)
		return ret;
	while ((ret = img_read_msg(img, &mnt_entry__descriptor, &msg)) == 1) {
		MntEntry **n = realloc(r->mnts, (r->nr_mnts + 1) * sizeof(*n));

		if (!n) {
			img_free(&mnt_entry__descriptor, msg);
			ret = -ENOMEM;
			break;
		}
		r->mnts = n;
		r->mnts[r->nr_mnts++] = msg;
	}
	img_abort(img);
	return ret < 0 ? ret : 0;
}

static int entry_index(const struct rst *r, uint32_t id)
{
	for (size_t i = 0; i < r->nr_mnts; i++)
		if (r->mnts[i]->mnt_id == id)
			return (int)i;
	return -1;
}

static int mount_index(const struct mounts *ms, int id)
{
	for (size_t k = 0; k < ms->n; k++)
		if (ms->m[k].id == id)
			return (int)k;
	return -1;
}

static bool entry_is(const MntEntry *e, const struct mount *m)
{
	return major(e->root_dev) == m->major && minor(e->root_dev) == m->minor &&
	       !strcmp(e->root, m->root) && !strcmp(e->mountpoint, m->mountpoint) &&
	       e->fsname && !strcmp(e->fsname, m->fstype) && !strcmp(e->source, m->source);
}

/*
 * Each kept entry's mount in ms (match[i], -1 for mounted ones); taken[k]: a
 * mount of ms that some entry is. Fails naming the first kept mount missing.
 */
static int match_kept(const struct rst *r, const struct mounts *ms, int *match, bool *taken)
{
	for (size_t i = 0; i < r->nr_mnts; i++) {
		const MntEntry *e = r->mnts[i];
		int ep = entry_index(r, e->parent_mnt_id);

		match[i] = -1;
		if (e->how != HOW_KEPT)
			continue;
		if (ep >= 0 && match[ep] < 0)
			return fail(-ENOENT, "image mountpoints-1.img is corrupt: the kept mount at "
				    "%s is on a mount of the process's own", e->mountpoint);
		for (size_t k = 0; k < ms->n && match[i] < 0; k++) {
			int mp = mount_index(ms, ms->m[k].parent);

			if (taken[k] || !entry_is(e, &ms->m[k]) || (ep < 0) != (mp < 0) ||
			    (ep >= 0 && match[ep] != mp))
				continue;
			match[i] = (int)k;
			taken[k] = true;
		}
		if (match[i] < 0)
			return fail(-ENOENT, "the mount at %s (%s %s) that the process's mount "
				    "namespace had from memdump's is not in memdump's any more",
				    e->mountpoint, e->fsname ? e->fsname : "?", e->source);
	}
	return 0;
}

/* Against the mounts of this thread's namespace now: every kept one is there. */
static int check_kept(const struct rst *r, struct mounts *ms, int **match, bool **taken)
{
	int ret = mounts_read("/proc/thread-self/mountinfo", ms);

	if (ret)
		return fail(ret, "cannot read memdump's mounts: %s", strerror(-ret));
	*match = calloc(r->nr_mnts + 1, sizeof(**match));
	*taken = calloc(ms->n + 1, sizeof(**taken));
	if (!*match || !*taken)
		return -ENOMEM;
	return match_kept(r, ms, *match, *taken);
}

/* The mount at "/" when the process had a root of its own (pivot_root): its entry, or NULL. */
static const MntEntry *own_root(const struct rst *r)
{
	for (size_t i = 0; i < r->nr_mnts; i++)
		if (r->mnts[i]->how == HOW_MOUNTED && !strcmp(r->mnts[i]->mountpoint, "/"))
			return r->mnts[i];
	return NULL;
}

/* A root of its own as restore makes it: bound from a directory of memdump's, or a fresh tmpfs. */
#define FRESH_STAGE_DIR	"/run/memdump"

static bool root_makeable(const MntEntry *root)
{
	return root->bind_from ? root->bind_host :
	       root->fsname && !strcmp(root->fsname, "tmpfs") && !root->has_from_root_mnt &&
	       !root->has_bind_mnt;
}

/* The path --external mnt[KEY]:PATH gives bind mount e (KEY: its key, or its point), or NULL. */
static const char *ext_path(const struct rst *r, const MntEntry *e)
{
	for (int i = 0; i < r->o->nr_mnt_ext; i++)
		if ((e->ext_key && !strcmp(r->o->mnt_ext[i].key, e->ext_key)) ||
		    !strcmp(r->o->mnt_ext[i].key, e->mountpoint))
			return r->o->mnt_ext[i].val;
	return NULL;
}

/* The entry of peer group g made first (its shortest root: it holds the others'), or -1. */
static int group_leader(const struct rst *r, uint32_t g)
{
	int best = -1;

	for (size_t k = 0; g && k < r->nr_mnts; k++)
		if (r->mnts[k]->has_shared_id && r->mnts[k]->shared_id == g &&
		    (best < 0 || strlen(r->mnts[k]->root) < strlen(r->mnts[best]->root)))
			best = (int)k;
	return best;
}

/*
 * e, made by the restored init, shared: its group has no slaves, and its
 * leader is e or a mount memdump makes (the init joins it).
 */
static bool init_shared_ok(const struct rst *r, const MntEntry *e)
{
	int lead = group_leader(r, e->shared_id);

	for (size_t i = 0; i < r->nr_mnts; i++)
		if (r->mnts[i]->has_master_id && r->mnts[i]->master_id == e->shared_id)
			return false;
	return !e->has_master_id && e->has_shared_id && lead >= 0 &&
	       (r->mnts[lead] == e || !(r->mnts[lead]->has_in_child && r->mnts[lead]->in_child));
}

/*
 * Propagation is made again only among the mounts of a root of its own
 * that memdump makes (dump refuses the rest): an image asking more fails.
 */
static int check_propagation(const struct rst *r, const MntEntry *e)
{
	if (e->how != HOW_MOUNTED || (!e->has_shared_id && !e->has_master_id))
		return 0;
	if (!own_root(r) || (e->has_in_child && e->in_child && !init_shared_ok(r, e)))
		return fail(-EINVAL, "the mount at %s is shared or a slave (shared:%u master:%u), "
			    "which memdump makes again only for a mount of a root of its own that "
			    "it mounts itself", e->mountpoint, e->shared_id, e->master_id);
	return 0;
}

/* A mount bound through the fd on an earlier one's root: only in a root of its own that memdump builds. */
static int check_bind_mnt(const struct rst *r, size_t i)
{
	const MntEntry *e = r->mnts[i];
	int under = e->has_bind_mnt ? entry_index(r, e->bind_mnt) : (int)i - 1;

	if (!e->has_bind_mnt)
		return 0;
	if (!own_root(r) || !e->bind_from || under < 0 || under >= (int)i ||
	    r->mnts[under]->how != HOW_MOUNTED || (e->has_in_child && e->in_child) ||
	    (r->mnts[under]->has_in_child && r->mnts[under]->in_child))
		return fail(-EIO, "image mountpoints-1.img is corrupt: the mount at %s is bound "
			    "from mount %u, not one memdump makes before it", e->mountpoint,
			    e->bind_mnt);
	return 0;
}

int mntns_load(struct rst *r)
{
	struct mounts ms = { 0 };
	int *match = NULL, ret;
	bool *taken = NULL;

	if (!own_mntns(r) && r->o->nr_mnt_ext)
		return fail(-EINVAL, "--external mnt[%s]: the dump has no mount namespace of its "
			    "own", r->o->mnt_ext[0].key);
	if (!own_mntns(r))
		return r->o->root ? fail(-EINVAL, "--root %s: the dump has no mount namespace of "
					 "its own", r->o->root) : 0;
	ret = load_entries(r, 1);
	if (!ret && own_root(r) && !root_makeable(own_root(r)))
		ret = fail(-EIO, "image mountpoints-1.img is corrupt: its root is bound from nowhere");
	if (!ret && !own_root(r))
		ret = check_kept(r, &ms, &match, &taken);
	for (size_t i = 0; !ret && i < r->nr_mnts; i++)
		ret = check_propagation(r, r->mnts[i]) ?: check_bind_mnt(r, i);
	for (int k = 0; !ret && k < r->o->nr_mnt_ext; k++) {
		bool found = false;

		for (size_t i = 0; i < r->nr_mnts && !found; i++)
			found = r->mnts[i]->bind_from &&
				((r->mnts[i]->ext_key && !strcmp(r->mnts[i]->ext_key,
								 r->o->mnt_ext[k].key)) ||
				 !strcmp(r->mnts[i]->mountpoint, r->o->mnt_ext[k].key));
		if (!found && r->o->mnt_ext[k].optional)
			pr_debug("ext_mnt %s: no bind mount of the dump, passed over",
				 r->o->mnt_ext[k].key);
		else if (!found)
			ret = fail(-ENOENT, "--external mnt[%s]: the dump has no bind mount with "
				   "that key or at that point", r->o->mnt_ext[k].key);
	}
	for (size_t i = 0; !ret && i < r->nr_mnts; i++)
		if (r->mnts[i]->ext_key && !ext_path(r, r->mnts[i]))
			ret = fail(-EINVAL, "the mount at %s is external (key %s): give it with "
				   "--external mnt[%s]:PATH", r->mnts[i]->mountpoint,
				   r->mnts[i]->ext_key, r->mnts[i]->ext_key);
	if (!ret && r->o->root && !own_root(r))
		ret = fail(-EINVAL, "--root %s: the dump has no root of its own to put there",
			   r->o->root);
	mounts_free(&ms);
	free(match);
	free(taken);
	return ret;
}

/* One file of a tmpfs, at dir + its path. */
static int make_file(int dirfd, const TmpfsFileEntry *f, const char *mp)
{
	mode_t perm = f->mode & 07777;
	int ret = 0, fd;

	if (!f->path[0] || f->path[0] == '/' || strstr(f->path, ".."))
		return fail(-EIO, "image tmpfs of %s is corrupt: a file named \"%s\"", mp, f->path);
	if (S_ISDIR(f->mode)) {
		if (mkdirat(dirfd, f->path, perm) && errno != EEXIST)
			ret = -errno;
	} else if (S_ISREG(f->mode)) {
		fd = openat(dirfd, f->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    perm);
		if (fd < 0)
			ret = -errno;
		else if (f->has_data && write(fd, f->data.data, f->data.len) != (ssize_t)f->data.len)
			ret = -EIO;
		if (fd >= 0)
			close(fd);
	} else if (S_ISLNK(f->mode)) {
		if (symlinkat(f->link ? f->link : "", dirfd, f->path))
			ret = -errno;
	} else if (mknodat(dirfd, f->path, f->mode, f->has_rdev ? (dev_t)f->rdev : 0)) {
		ret = -errno;
	}
	if (!ret && fchownat(dirfd, f->path, f->uid, f->gid, AT_SYMLINK_NOFOLLOW))
		ret = -errno;
	if (!ret && !S_ISLNK(f->mode) && fchmodat(dirfd, f->path, perm, 0))
		ret = -errno;
	if (ret)
		return fail(ret, "cannot make %s/%s on the restored tmpfs: %s", mp, f->path,
			    strerror(-ret));
	return 0;
}

static void set_mtime(int dirfd, const TmpfsFileEntry *f)
{
	struct timespec ts[2] = { { 0, UTIME_OMIT },
				  { (time_t)(f->mtime_ns / 1000000000ULL),
				    (long)(f->mtime_ns % 1000000000ULL) } };

	if (f->has_mtime_ns)
		utimensat(dirfd, f->path, ts, AT_SYMLINK_NOFOLLOW);
}

/* The files of tmpfs e (its tmpfs_files, memdump's field 55) into the mount at at. */
static int fill_tmpfs(const MntEntry *e, const char *at)
{
	int ret = 0, dirfd = open(at, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dirfd < 0)
		return fail(-errno, "cannot open the restored tmpfs at %s: %s", e->mountpoint,
			    strerror(errno));
	for (size_t i = 0; !ret && i < e->n_tmpfs_files; i++)
		ret = make_file(dirfd, e->tmpfs_files[i], e->mountpoint);
	for (size_t i = e->n_tmpfs_files; !ret && i-- > 0;)
		set_mtime(dirfd, e->tmpfs_files[i]);	/* children first: a directory's last */
	close(dirfd);
	return ret;
}

#define MOUNT_FLAGS (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | \
		     MS_NODIRATIME | MS_RELATIME | MS_STRICTATIME | MS_NOSYMFOLLOW)

static void note_dev(struct rst *r, const char *at)
{
	struct stat st;
	dev_t *n;

	if (stat(at, &st) || !(n = realloc(r->mnt_devs, (r->nr_mnt_devs + 1) * sizeof(*n))))
		return;
	r->mnt_devs = n;
	n[r->nr_mnt_devs++] = st.st_dev;
}

bool mntns_new_dev(const struct rst *r, dev_t dev)
{
	/* a tree's: those of its namespace's, and of the namespaces above it
	 * (a file of the root's namespace, root_mntns) */
	for (const struct rst *t = r; t; t = t->tree_parent)
		for (size_t i = 0; i < t->nr_mnt_devs; i++)
			if (t->mnt_devs[i] == dev)
				return true;
	return false;
}

/* A tree's other namespace: tmpfs e, a clone of the root's (mnt_from_fds), at at. */
static int attach_root_tmpfs(struct rst *r, const MntEntry *e, const char *at, char *why,
			     size_t len)
{
	unsigned long flags = e->flags & MOUNT_FLAGS;
	int fd = -1, ret = 0;

	for (size_t k = 0; k < r->nr_mnts && r->mnt_from_fds; k++)
		if (r->mnts[k] == e)
			fd = r->mnt_from_fds[k];
	if (fd < 0 || syscall(SYS_move_mount, fd, "", AT_FDCWD, at, MOVE_MOUNT_F_EMPTY_PATH) ||
	    (flags && mount(NULL, at, NULL, MS_REMOUNT | MS_BIND | flags, NULL)))
		ret = fd < 0 ? -EBADF : -errno;
	if (ret)
		snprintf(why, len, "cannot mount the tree root's tmpfs at %s: %s", e->mountpoint,
			 strerror(-ret));
	else
		note_dev(r, at);
	return ret;
}

/* Is e's superblock read-only itself, not only the mount (sb_flags; an image without: as the mount)? */
static bool super_ro(const MntEntry *e)
{
	return e->has_sb_flags ? (e->sb_flags & MS_RDONLY) != 0 : (e->flags & MS_RDONLY) != 0;
}

/*
 * A tmpfs mounted writable and made read-only once filled: one with files,
 * or read-only at the mount only (its superblock writable: a bind remount).
 */
static bool ro_later(const MntEntry *e)
{
	return e->fsname && !strcmp(e->fsname, "tmpfs") && (e->n_tmpfs_files || !super_ro(e));
}

/*
 * One mount the process made, at its point (under stage, where memdump
 * builds a root of the process's own; "" once the init is in it); why into
 * why/len on failure.
 */
static int mount_one(struct rst *r, const MntEntry *e, const char *stage, bool in_child,
		     const int *fds, char *why, size_t len)
{
	int under = e->has_bind_mnt ? entry_index(r, e->bind_mnt) : -1;
	unsigned long flags = e->flags & MOUNT_FLAGS;
	char at[PATH_MAX], from[PATH_MAX];
	int ret = 0;

	snprintf(at, sizeof(at), "%s%s", stage, strcmp(e->mountpoint, "/") || !*stage ?
		 e->mountpoint : "");
	if (e->has_from_root_mnt)	/* the tree root's tmpfs: its clone, attached here */
		return attach_root_tmpfs(r, e, at, why, len);
	if (e->has_bind_mnt && (under < 0 || !fds || fds[under] < 0)) {
		snprintf(why, len, "the mount at %s is bound from one memdump did not make first",
			 e->mountpoint);
		return -EINVAL;
	}
	if (e->has_bind_mnt)	/* hidden by now: through the fd on its root */
		snprintf(from, sizeof(from), "/proc/self/fd/%d%s", fds[under], e->bind_from);
	else if (e->bind_from && ext_path(r, e))	/* --external mnt[KEY]:PATH: a path of memdump's */
		snprintf(from, sizeof(from), "%s", ext_path(r, e));
	else if (e->bind_from && r->o->root && !strcmp(e->mountpoint, "/"))
		snprintf(from, sizeof(from), "%s", r->o->root);	/* --root: the given root, as is */
	else if (e->bind_from)
		snprintf(from, sizeof(from), "%s%s", e->bind_host ? "" : stage, e->bind_from);
	if (e->bind_from && !in_child && r->make_bound_pts)
		ret = r->make_bound_pts(r, from);	/* runc's /dev/console: the new pty */
	if (ret)
		snprintf(why, len, "%s", fail_reason());
	else if (e->bind_from) {
		if (mount(from, at, NULL, MS_BIND, NULL) ||
		    (flags && mount(NULL, at, NULL, MS_REMOUNT | MS_BIND | flags, NULL)))
			ret = -errno;
	} else if (mount(e->source, at, e->fsname, ro_later(e) ? flags & ~MS_RDONLY : flags,
			 e->options[0] ? e->options : NULL)) {
		ret = -errno;	/* a read-only tmpfs with files: made writable, filled, then not */
	}
	if (!ret && !e->bind_from)
		note_dev(r, at);
	if (!ret && e->fsname && !strcmp(e->fsname, "tmpfs") && !e->bind_from) {
		ret = fill_tmpfs(e, at);
		if (ret)
			snprintf(why, len, "%s", fail_reason());
		else if (ro_later(e) && (flags & MS_RDONLY) &&
			 (super_ro(e) ? mount(NULL, at, NULL, MS_REMOUNT | flags,
					      e->options[0] ? e->options : NULL)
				      : mount(NULL, at, NULL, MS_REMOUNT | MS_BIND | flags, NULL)))
			snprintf(why, len, "cannot make the tmpfs at %s read-only: %s", e->mountpoint,
				 strerror(-(ret = -errno)));
		return ret;
	}
	if (ret)
		snprintf(why, len, "cannot mount %s (%s%s%s) at %s: %s", e->fsname ? e->fsname : "?",
			 e->bind_from ? "bound from " : "", e->bind_from ? from : "",
			 e->bind_from ? "" : e->source, e->mountpoint, strerror(-ret));
	return ret;
}

/* The copy's mounts the process did not have, children first. */
static int unmount_extra(const struct mounts *ms, const bool *taken)
{
	for (size_t k = ms->n; k-- > 0;)
		if (!taken[k] && umount2(ms->m[k].mountpoint, MNT_DETACH) && errno != EINVAL &&
		    errno != ENOENT)
			return fail(-errno, "cannot unmount %s in the new mount namespace: %s",
				    ms->m[k].mountpoint, strerror(errno));
	return 0;
}

/* The copy's unbindable mounts (a root of its own: prop_one), once all are there. */
static int set_unbindable(const struct rst *r)
{
	for (size_t i = 0; i < r->nr_mnts; i++)
		if ((r->mnts[i]->flags & MS_UNBINDABLE) &&
		    mount(NULL, r->mnts[i]->mountpoint, NULL, MS_UNBINDABLE, NULL))
			return fail(-errno, "cannot make %s unbindable: %s", r->mnts[i]->mountpoint,
				    strerror(errno));
	return 0;
}

static int set_propagation(const struct rst *r, const int *match)
{
	for (size_t i = 0; i < r->nr_mnts; i++) {
		const MntEntry *e = r->mnts[i];

		if (match[i] < 0 || !e->has_propagation || e->propagation != MS_PRIVATE)
			continue;	/* a slave already (MS_SLAVE) or as memdump's */
		if (mount(NULL, e->mountpoint, NULL, MS_PRIVATE, NULL))
			return fail(-errno, "cannot make %s private: %s", e->mountpoint,
				    strerror(errno));
	}
	return 0;
}


static int set_prop(int fd, uint64_t how);
static int join_group(int from, int to);

/*
 * In the restored init, entry i just mounted at at (on top there), shared:
 * the leader of its group, made shared; else joined to its leader, a mount
 * memdump made and no mount covers (mntns_load, the dump checked); private
 * first (bound from a shared mount, it is a peer of that one already).
 */
static int anchor_fd(struct rst *r, uint32_t g);

static int init_share(struct rst *r, size_t i, const char *at)
{
	int lead = group_leader(r, r->mnts[i]->shared_id), from, to, ret;
	int a = anchor_fd(r, r->mnts[i]->shared_id);

	if (lead == (int)i)
		return mount(NULL, at, NULL, MS_SHARED, NULL) ? -errno : 0;
	/* its leader's anchor (memdump made it), or the leader by its point */
	from = a >= 0 ? fcntl(a, F_DUPFD_CLOEXEC, 0) :
	       open(r->mnts[lead]->mountpoint, O_PATH | O_CLOEXEC);
	to = open(at, O_PATH | O_CLOEXEC);
	ret = from < 0 || to < 0 ? -errno : set_prop(to, MS_PRIVATE) ?: join_group(from, to);
	if (from >= 0)
		close(from);
	if (to >= 0)
		close(to);
	return ret;
}

/*
 * The process's own mounts (in_child: those of the restored init), in
 * order; fds (or NULL): an O_PATH fd on each one's root, taken as it is
 * made, before a later mount can cover it.
 */
static int mount_own(struct rst *r, bool in_child, const char *stage, int *fds, char *why,
		     size_t len)
{
	for (size_t i = 0; i < r->nr_mnts; i++) {
		const MntEntry *e = r->mnts[i];
		char at[PATH_MAX];
		int ret;

		if (e->how != HOW_MOUNTED || (e->has_in_child && e->in_child) != in_child)
			continue;
		ret = mount_one(r, e, stage, in_child, fds, why, len);
		if (ret)
			return ret;
		snprintf(at, sizeof(at), "%s%s", stage, strcmp(e->mountpoint, "/") || !*stage ?
			 e->mountpoint : "");
		if (in_child && e->has_shared_id && (ret = init_share(r, i, at))) {
			snprintf(why, len, "cannot make the mount at %s shared: %s", e->mountpoint,
				 strerror(-ret));
			return ret;
		}
		if (fds && (fds[i] = open(at, O_PATH | O_NOFOLLOW | O_CLOEXEC)) < 0) {
			snprintf(why, len, "cannot open the mount at %s: %s", e->mountpoint,
				 strerror(errno));
			return -errno;
		}
	}
	return 0;
}


static int set_prop(int fd, uint64_t how)
{
	struct mount_attr a = { .propagation = how };

	return syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &a, sizeof(a)) ? -errno : 0;
}

/* Mount to joins the peer group of from, and takes its master. */
static int join_group(int from, int to)
{
	return syscall(SYS_move_mount, from, "", to, "", MOVE_MOUNT_SET_GROUP |
		       MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) ? -errno : 0;
}

static struct rst *root_of(struct rst *r);

/* Peer group g's anchor (made by the namespace of the tree that made g first), or -1. */
static int anchor_fd(struct rst *r, uint32_t g)
{
	const struct rst *t = root_of(r);

	for (size_t k = 0; g && k < t->nr_mnt_anchors; k++)
		if (t->mnt_anchor_ids[k] == g)
			return t->mnt_anchor_fds[k];
	return -1;
}

/*
 * Peer group g's anchor, kept by the tree's root: a detached clone of its
 * first mount (fd, its propagation made: a peer of it), which every other
 * mount of g joins, in whichever mount namespace of the tree it is (a
 * clone's root is its mount's: it holds theirs).
 */
static int anchor_add(struct rst *r, uint32_t g, int fd)
{
	struct rst *t = root_of(r);
	size_t n = t->nr_mnt_anchors;
	uint32_t *ids = realloc(t->mnt_anchor_ids, (n + 1) * sizeof(*ids));
	int *fds = ids ? realloc(t->mnt_anchor_fds, (n + 1) * sizeof(*fds)) : NULL, a;

	if (ids)
		t->mnt_anchor_ids = ids;
	if (!fds)
		return -ENOMEM;
	t->mnt_anchor_fds = fds;
	a = (int)syscall(SYS_open_tree, fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	if (a < 0)
		return -errno;
	ids[n] = g;
	fds[n] = a;
	t->nr_mnt_anchors = n + 1;
	return 0;
}

/* The tree's anchors, once its processes are forked (each has its copies). */
static void anchors_close(struct rst *r)
{
	for (size_t k = 0; k < r->nr_mnt_anchors; k++)
		close(r->mnt_anchor_fds[k]);
	free(r->mnt_anchor_ids);
	free(r->mnt_anchor_fds);
	r->mnt_anchor_ids = NULL;
	r->mnt_anchor_fds = NULL;
	r->nr_mnt_anchors = 0;
}

/*
 * Entry i's propagation, its master's group made: private; a slave (joined
 * to its master's group, then made a slave of it); the leader of its peer
 * group made shared (after that) and anchored, another joined to the anchor
 * (an earlier namespace of the tree may have made it). A root stays private
 * through the pivot, and joins its group after (mntns_mount_in_child).
 */
static int prop_one(struct rst *r, const int *fds, size_t i)
{
	const MntEntry *e = r->mnts[i];
	bool root = e == own_root(r);
	uint32_t g = e->has_shared_id ? e->shared_id : 0;
	uint32_t m = e->has_master_id ? e->master_id : 0;
	int lead = group_leader(r, g), mlead = group_leader(r, m), ret;

	if (g && anchor_fd(r, g) < 0 && lead != (int)i)
		return -EAGAIN;
	if (g && anchor_fd(r, g) >= 0)	/* a mount bound from a slave is one: private first */
		return set_prop(fds[i], MS_PRIVATE) ?: root ? 0 : join_group(anchor_fd(r, g), fds[i]);
	if (m && !g && mlead < 0 && anchor_fd(r, m) < 0 && e->bind_host)
		return 0;	/* bound from memdump's copy of its master: a slave of it already */
	if (m && anchor_fd(r, m) < 0 && (mlead < 0 || mlead == (int)i))
		return -EINVAL;	/* dump refuses it: a master outside the tree's namespaces */
	if (m && anchor_fd(r, m) < 0)
		return -EAGAIN;
	ret = set_prop(fds[i], MS_PRIVATE);
	if (!ret && m)
		ret = join_group(anchor_fd(r, m), fds[i]);
	if (!ret && m)
		ret = set_prop(fds[i], MS_SLAVE);
	if (!ret && g)
		ret = set_prop(fds[i], MS_SHARED);
	if (!ret && g)
		ret = anchor_add(r, g, fds[i]);
	if (!ret && g && root)	/* pivot_root takes no shared root */
		ret = set_prop(fds[i], MS_PRIVATE);
	if (!ret && !g && (e->flags & MS_UNBINDABLE))	/* a slave may be unbindable too */
		ret = set_prop(fds[i], MS_UNBINDABLE);
	return ret;
}

/*
 * The propagation of the mounts of a root of its own (made private as
 * bound): peer groups and masters among them, made again from each group's
 * leader, masters' groups first.
 */
static int set_own_propagation(struct rst *r, const int *fds)
{
	bool *done = calloc(r->nr_mnts + 1, sizeof(*done)), progress = true;
	int ret = 0;

	if (!done)
		return -ENOMEM;
	while (progress && !ret) {
		progress = false;
		for (size_t i = 0; i < r->nr_mnts && !ret; i++) {
			if (done[i] || fds[i] < 0)
				continue;
			ret = prop_one(r, fds, i);
			if (ret == -EAGAIN)
				ret = 0;
			else if (!ret)
				done[i] = progress = true;
			else
				ret = fail(ret, "cannot give the mount at %s its propagation (shared:%u "
					   "master:%u): %s", r->mnts[i]->mountpoint,
					   r->mnts[i]->shared_id, r->mnts[i]->master_id,
					   strerror(-ret));
		}
	}
	for (size_t i = 0; i < r->nr_mnts && !ret; i++)
		if (fds[i] >= 0 && !done[i])
			ret = fail(-EINVAL, "image mountpoints-1.img is corrupt: the mount at %s "
				   "has a master or peers it does not list", r->mnts[i]->mountpoint);
	free(done);
	return ret;
}

/* From memdump's copy: its kept mounts, the rest unmounted, its own mounted. */
static int build_from_copy(struct rst *r)
{
	struct mounts ms = { 0 };
	int *match = NULL, ret;
	bool *taken = NULL;
	char why[512];

	ret = check_kept(r, &ms, &match, &taken);
	if (!ret)
		ret = unmount_extra(&ms, taken);
	if (!ret)
		ret = set_propagation(r, match);
	if (!ret && mount_own(r, false, "", NULL, why, sizeof(why)))
		ret = fail(-EIO, "%s", why);
	if (!ret)
		ret = set_unbindable(r);
	mounts_free(&ms);
	free(match);
	free(taken);
	return ret;
}

/*
 * A root of its own (pivot_root): built where its root is bound from, every
 * mount under it; the restored init pivots into it (mntns_mount_in_child)
 * once memdump has left the namespace, which the pivot would move too.
 */
/*
 * Where a root that is a fresh tmpfs (pivot_root into a mount of its own:
 * zdtm mntns_pivot_root) is made: an empty directory of memdump's run
 * directory, which the tmpfs covers in this namespace only; removed once
 * the restore is over (mntns_free), when the init has pivoted away from it.
 */
static char *fresh_stage(const struct rst *r)
{
	char path[96];

	snprintf(path, sizeof(path), "%s/root-%d-%u", FRESH_STAGE_DIR, (int)getpid(), r->mnt_ns_id);
	if ((mkdir(FRESH_STAGE_DIR, 0700) && errno != EEXIST) || mkdir(path, 0700)) {
		fail(-errno, "cannot make %s for a root of the process's own: %s", path,
		     strerror(errno));
		return NULL;
	}
	return strdup(path);
}

static bool fresh_stage_of(const char *stage)
{
	return stage && !strncmp(stage, FRESH_STAGE_DIR "/root-", strlen(FRESH_STAGE_DIR) + 6);
}

static int build_root(struct rst *r, const MntEntry *root)
{
	int *fds = malloc((r->nr_mnts + 1) * sizeof(*fds)), ret = 0;
	char why[512];

	if (r->o->root || root->bind_from)	/* --root, or where it is bound from */
		r->mnt_stage = strdup(r->o->root ? r->o->root : root->bind_from);
	else if (!(r->mnt_stage = fresh_stage(r)))
		ret = -EIO;
	if (!r->mnt_stage || !fds) {
		free(fds);
		return ret ? ret : -ENOMEM;
	}
	for (size_t i = 0; i < r->nr_mnts; i++)
		fds[i] = -1;
	if (pipe2(r->mnt_go, O_CLOEXEC))
		ret = fail(-errno, "cannot create a pipe: %s", strerror(errno));
	if (!ret && mount_own(r, false, r->mnt_stage, fds, why, sizeof(why)))
		ret = fail(-EIO, "%s", why);
	if (!ret)
		ret = set_own_propagation(r, fds);
	for (size_t i = 0; i < r->nr_mnts; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	return ret;
}

static int build(struct rst *r)
{
	const MntEntry *root = own_root(r);

	/* first of all: nothing done here propagates to memdump's namespace */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL))
		return fail(-errno, "cannot make the new mount namespace a slave: %s", strerror(errno));
	return root ? build_root(r, root) : build_from_copy(r);
}

int mntns_restore_enter(struct rst *r)
{
	int ret;

	if (!own_mntns(r) && !join_path(r->o))
		return 0;
	r->mnt_back = open("/proc/thread-self/ns/mnt", O_RDONLY | O_CLOEXEC);
	r->mnt_cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (r->mnt_back < 0 || r->mnt_cwd < 0)
		return fail(-errno, "cannot keep memdump's mount namespace: %s", strerror(errno));
	if (join_path(r->o))
		return join_mntns(join_path(r->o));
	if (unshare(CLONE_NEWNS))
		return fail(-errno, "cannot create a mount namespace: %s", strerror(errno));
	ret = build(r);
	if (!ret)
		pr_info("mount namespace: new, %zu mounts%s%s\n", r->nr_mnts,
			r->mnt_stage ? ", its root built at " : "", r->mnt_stage ? r->mnt_stage : "");
	return ret;
}

void mntns_restore_leave(struct rst *r)
{
	char go = 1;

	if (r->mnt_back >= 0) {
		if (setns(r->mnt_back, CLONE_NEWNS))
			pr_warn("cannot go back to memdump's mount namespace: %m\n");
		close(r->mnt_back);
	}
	if (r->mnt_cwd >= 0) {
		if (fchdir(r->mnt_cwd))
			pr_warn("cannot go back to memdump's directory: %m\n");
		close(r->mnt_cwd);
	}
	r->mnt_back = r->mnt_cwd = -1;
	if (!r->tree_parent)	/* its processes forked: each has its copies */
		anchors_close(r);
	if (r->mnt_go[1] >= 0 && write(r->mnt_go[1], &go, 1) != 1)
		pr_warn("cannot tell the restored init to enter its root: %m\n");
	if (r->mnt_go[1] >= 0)
		close(r->mnt_go[1]);
	if (r->mnt_go[0] >= 0)
		close(r->mnt_go[0]);
	r->mnt_go[0] = r->mnt_go[1] = -1;
}

/* In the restored init: memdump gone from the namespace, into the root built for it. */
static int enter_root(struct rst *r, char *why, size_t len)
{
	char go;

	if (r->mnt_go[0] >= 0) {	/* a tree's other namespace: memdump left it before */
		close(r->mnt_go[1]);
		if (read(r->mnt_go[0], &go, 1) != 1) {
			snprintf(why, len, "memdump did not leave the new mount namespace");
			return -EIO;
		}
		close(r->mnt_go[0]);
	}
	if (chdir(r->mnt_stage) || syscall(SYS_pivot_root, ".", ".") ||
	    umount2(".", MNT_DETACH) || chdir("/")) {
		snprintf(why, len, "cannot make %s the process's root (pivot_root): %s",
			 r->mnt_stage, strerror(errno));
		return -errno;
	}
	return 0;
}

/*
 * In the restored process, pivoted and its own mounts made (on a private
 * root: nothing propagated): a root in a peer group (pivot_root takes no
 * shared root) joins it, by the anchor its copy of memdump kept.
 */
static int root_join(struct rst *r, char *why, size_t len)
{
	const MntEntry *e = own_root(r);
	int a = e && e->has_shared_id ? anchor_fd(r, e->shared_id) : -1, fd, ret;

	if (!e || !e->has_shared_id)
		return 0;
	fd = open("/", O_PATH | O_CLOEXEC);
	ret = a < 0 ? -ENOENT : fd < 0 ? -errno : join_group(a, fd);
	if (fd >= 0)
		close(fd);
	if (ret)
		snprintf(why, len, "cannot give the root its peer group (shared:%u): %s",
			 e->shared_id, strerror(-ret));
	return ret;
}

int mntns_mount_in_child(struct rst *r, char *why, size_t len)
{
	int ret = 0;

	/* a tree's process enters its own namespace, if it is the first in it */
	if (r->tree_parent && !r->mnt_ns_owner)
		return 0;
	if (r->tree_parent && setns(r->mnt_ns_fd, CLONE_NEWNS)) {
		ret = -errno;
		snprintf(why, len, "cannot enter its mount namespace: %s", strerror(-ret));
		return ret;
	}
	if (r->tree_parent && !r->mnts)
		return 0;	/* the root's again, which the root has made whole */
	if (!r->tree_parent && !own_mntns(r))
		return 0;
	if (r->mnt_stage)
		ret = enter_root(r, why, len);
	if (!ret)
		ret = mount_own(r, true, "", NULL, why, len);
	return ret ? ret : root_join(r, why, len);
}

/* The mount namespace of an earlier process of the tree numbered id, or NULL. */
static const struct rst *member_with(struct rst *root, const struct rst *m, uint32_t id)
{
	for (size_t i = 0; i < tree_size(root); i++) {
		const struct rst *o = tree_member(root, i);

		if (o == m)
			break;
		if (o->mnt_ns_id == id)
			return o;
	}
	return NULL;
}

/* Its entries as the image of another mount namespace of the tree must be. */
static int check_member_entries(const struct rst *root, const struct rst *m, uint32_t id)
{
	const MntEntry *mine = own_root(m), *theirs = own_root(root);

	if (!m->nr_mnts || (mine && !root_makeable(mine)))
		return fail(-EIO, "image mountpoints-%u.img of process %d is corrupt: no mount, "
			    "or a root bound from nowhere", id, m->pid);
	/* (a fresh tmpfs is its own whatever --root says) */
	if (mine && mine->bind_from && root->o->root &&
	    (!theirs || !theirs->bind_from || strcmp(theirs->bind_from, mine->bind_from)))
		return fail(-EINVAL, "--root %s: process %d has a root of its own other than the "
			    "tree's root's (%s)", root->o->root, m->pid, mine->bind_from);
	for (size_t i = 0; i < m->nr_mnts; i++)
		if (check_propagation(m, m->mnts[i]))
			return -EINVAL;
	return 0;
}

/* memdump's thread into memdump's own namespace, a copy of it built for m. */
static int build_member(const struct rst *root, struct rst *m)
{
	int ret;

	if (root->mnt_back >= 0 && setns(root->mnt_back, CLONE_NEWNS))
		return fail(-errno, "cannot go back to memdump's mount namespace: %s",
			    strerror(errno));
	if (unshare(CLONE_NEWNS))
		return fail(-errno, "cannot create a mount namespace: %s", strerror(errno));
	ret = build(m);
	for (int i = 0; i < 2; i++)	/* no memdump to wait for at the pivot */
		if (m->mnt_go[i] >= 0)
			close(m->mnt_go[i]);
	m->mnt_go[0] = m->mnt_go[1] = -1;
	if (!ret) {
		m->mnt_ns_fd = open("/proc/thread-self/ns/mnt", O_RDONLY | O_CLOEXEC);
		if (m->mnt_ns_fd < 0)
			ret = fail(-errno, "cannot keep a mount namespace: %s", strerror(errno));
	}
	m->mnt_ns_owner = m->mnt_ns_fd >= 0;
	return ret;
}

/* Member m enters the tree root's namespace once forked (its parent is in another). */
static int enter_root_ns(struct rst *root, struct rst *m)
{
	if (root->mnt_ns_fd < 0)	/* this thread is in it (or in memdump's, the root's) */
		root->mnt_ns_fd = open("/proc/thread-self/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (root->mnt_ns_fd < 0)
		return fail(-errno, "cannot keep the tree's mount namespace: %s", strerror(errno));
	m->mnt_ns_fd = root->mnt_ns_fd;
	m->mnt_ns_owner = true;
	return 0;
}

/*
 * While this thread is in the tree root's namespace: a clone (open_tree) of
 * each of its tmpfs m's namespace has too (from_root_mnt), which
 * build_member attaches there.
 */
static int clone_root_tmpfs(const struct rst *root, struct rst *m)
{
	for (size_t i = 0; i < m->nr_mnts; i++) {
		const MntEntry *e = m->mnts[i];
		int k = e->has_from_root_mnt ? entry_index(root, e->from_root_mnt) : -1;
		const char *stage = root->mnt_stage ? root->mnt_stage : "";
		char at[PATH_MAX];
		struct stat st;
		int fd;

		if (!e->has_from_root_mnt)
			continue;
		if (!m->mnt_from_fds) {
			m->mnt_from_fds = malloc(m->nr_mnts * sizeof(int));
			if (!m->mnt_from_fds)
				return -ENOMEM;
			for (size_t j = 0; j < m->nr_mnts; j++)
				m->mnt_from_fds[j] = -1;
		}
		if (k < 0 || root->mnts[k]->how != HOW_MOUNTED ||
		    (root->mnts[k]->has_in_child && root->mnts[k]->in_child))
			return fail(-EIO, "image mountpoints-%u.img of process %d is corrupt: the "
				    "tmpfs at %s is from no mount the tree's root has", m->mnt_ns_id,
				    m->pid, e->mountpoint);
		snprintf(at, sizeof(at), "%s%s", stage, strcmp(root->mnts[k]->mountpoint, "/") ||
			 !*stage ? root->mnts[k]->mountpoint : "");
		fd = (int)syscall(SYS_open_tree, AT_FDCWD, at, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (fd < 0)
			return fail(-errno, "cannot clone the tmpfs at %s of the tree's root: %s",
				    root->mnts[k]->mountpoint, strerror(errno));
		m->mnt_from_fds[i] = fd;
		if (set_prop(fd, MS_PRIVATE))	/* a peer of it: nothing propagates while m's are made */
			return fail(-errno, "cannot make the clone of the tmpfs at %s private: %s",
				    root->mnts[k]->mountpoint, strerror(errno));
		if (fstat(fd, &st) || !mntns_new_dev(root, st.st_dev))
			return fail(-EIO, "the tmpfs at %s of the tree's root is covered: process "
				    "%d's namespace cannot have it", root->mnts[k]->mountpoint, m->pid);
	}
	return 0;
}

int mntns_member_load(struct rst *root, struct rst *m)
{
	const TaskKobjIdsEntry *ids = m->ds.ids;
	uint32_t id = ids && ids->has_mnt_ns_id ? ids->mnt_ns_id : 0;
	const struct rst *o;
	struct mnt_back b;
	int ret;

	m->mnt_ns_id = id;
	o = id ? member_with(root, m, id) : NULL;
	if (id == 1 || (o && m->tree_parent->mnt_ns_id != id))
		return fail(-EIO, "image set proc-%d is corrupt: its mount namespace %u is not "
			    "its parent's (%u), or is the tree's root's", m->pid, id,
			    m->tree_parent->mnt_ns_id);
	if (!id && m->tree_parent->mnt_ns_id)
		return enter_root_ns(root, m);	/* the root's, under a parent in another */
	if (!id)
		return 0;	/* the root's */
	m->mnt_stage = o ? o->mnt_stage : NULL;
	m->mnt_devs = o ? o->mnt_devs : NULL;
	m->nr_mnt_devs = o ? o->nr_mnt_devs : 0;
	if (o) {	/* forked by its parent in it: it shares its first process's */
		m->mnt_ns_fd = o->mnt_ns_fd;
		return 0;
	}
	if (join_path(root->o))
		return fail(-EINVAL, "process %d is in a mount namespace of its own, which memdump "
			    "does not make with --join-ns mnt", m->pid);
	if (root->mnt_ns_fd < 0)	/* its files of the root's namespace are opened there */
		root->mnt_ns_fd = open("/proc/thread-self/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (root->mnt_ns_fd < 0)
		return fail(-errno, "cannot keep the tree's mount namespace: %s", strerror(errno));
	ret = load_entries(m, id);
	if (ret)
		return fail(ret, "cannot read mountpoints-%u.img of process %d: %s", id, m->pid,
			    strerror(-ret));
	ret = check_member_entries(root, m, id);
	if (ret)
		return ret;
	b.ns = open("/proc/thread-self/ns/mnt", O_RDONLY | O_CLOEXEC);
	b.cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (b.ns < 0 || b.cwd < 0)
		ret = fail(-errno, "cannot keep memdump's mount namespace: %s", strerror(errno));
	if (!ret)
		ret = clone_root_tmpfs(root, m);
	if (!ret)
		ret = build_member(root, m);
	if (!ret)
		pr_info("mount namespace of process %d: new, %zu mounts\n", m->pid, m->nr_mnts);
	mntns_member_leave(&b);
	return ret;
}

static struct rst *root_of(struct rst *r)
{
	while (r->tree_parent)
		r = r->tree_parent;
	return r;
}

/* memdump's thread into the tree root's namespace, from r's; path: name there. */
static int to_root_ns(struct rst *r, const char *name, char *path, size_t len)
{
	const struct rst *root = root_of(r);

	if (!r->mnt_ns_id || r->mnt_ns_fd < 0 || root->mnt_ns_fd < 0)
		return fail(-EIO, "image set proc-%d is corrupt: %s is of the tree root's mount "
			    "namespace, and it is in that one", r->pid, name);
	snprintf(path, len, "%s%s", root->mnt_stage ? root->mnt_stage : "", name);
	if (setns(root->mnt_ns_fd, CLONE_NEWNS))
		return fail(-errno, "cannot enter the tree's mount namespace: %s", strerror(errno));
	return 0;
}

static void back_from_root_ns(const struct rst *r)
{
	if (setns(r->mnt_ns_fd, CLONE_NEWNS))
		pr_warn("cannot go back to the mount namespace of process %d: %m\n", r->pid);
}

/* The process whose entries describe r's mount namespace: r, its first process, or the root. */
static const struct rst *mnts_of(struct rst *r)
{
	struct rst *root = root_of(r);
	const struct rst *o;

	if (!r->mnt_ns_id || r->mnts)
		return r->mnt_ns_id ? r : root;
	o = member_with(root, r, r->mnt_ns_id);
	return o ? o : r;
}

bool mntns_by_init(struct rst *r, const char *name)
{
	const struct rst *h = mnts_of(r);
	const MntEntry *best = NULL;
	size_t best_len = 0;

	if (!own_mntns(root_of(r)))
		return false;
	for (size_t i = 0; i < h->nr_mnts; i++) {
		const char *at = h->mnts[i]->mountpoint;
		size_t n = strcmp(at, "/") ? strlen(at) : 0;

		if (strncmp(name, at, n) || (name[n] != '/' && name[n]) || (best && n < best_len))
			continue;
		best = h->mnts[i];
		best_len = n;
	}
	return best && best->has_in_child && best->in_child;
}

int mntns_root_open(struct rst *r, const char *name, int flags)
{
	char path[PATH_MAX];
	int ret = to_root_ns(r, name, path, sizeof(path)), fd;

	if (ret)
		return ret;
	fd = open(path, flags | O_CLOEXEC);
	ret = fd < 0 ? -errno : fd;
	back_from_root_ns(r);
	if (ret < 0)
		return fail(ret, "cannot open %s in the tree's mount namespace: %s", name,
			    strerror(-ret));
	return ret;
}

int mntns_root_stat(struct rst *r, const char *name, struct stat *st)
{
	char path[PATH_MAX];
	int ret = to_root_ns(r, name, path, sizeof(path));

	if (ret)
		return ret;
	ret = stat(path, st) ? -errno : 0;
	back_from_root_ns(r);
	return ret;
}

int mntns_member_enter(const struct rst *m, struct mnt_back *b)
{
	b->ns = b->cwd = -1;
	if (m->mnt_ns_fd < 0 || !m->mnt_ns_id)
		return 0;	/* the root's: this thread is in it */
	b->ns = open("/proc/thread-self/ns/mnt", O_RDONLY | O_CLOEXEC);
	b->cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (b->ns < 0 || b->cwd < 0 || setns(m->mnt_ns_fd, CLONE_NEWNS)) {
		int ret = -errno;

		mntns_member_leave(b);
		return fail(ret, "cannot enter the mount namespace of process %d: %s", m->pid,
			    strerror(-ret));
	}
	return 0;
}

void mntns_member_leave(struct mnt_back *b)
{
	if (b->ns >= 0 && setns(b->ns, CLONE_NEWNS))
		pr_warn("cannot go back to the tree's mount namespace: %m\n");
	if (b->cwd >= 0 && fchdir(b->cwd))
		pr_warn("cannot go back to memdump's directory: %m\n");
	if (b->ns >= 0)
		close(b->ns);
	if (b->cwd >= 0)
		close(b->cwd);
	b->ns = b->cwd = -1;
}

void mntns_free(struct rst *r)
{
	if (!r->tree_parent)
		anchors_close(r);
	for (size_t i = 0; r->mnt_from_fds && i < r->nr_mnts; i++)
		if (r->mnt_from_fds[i] >= 0)
			close(r->mnt_from_fds[i]);
	free(r->mnt_from_fds);
	r->mnt_from_fds = NULL;
	/* the root's (entered again by a member), or a namespace a member built */
	if (r->mnt_ns_fd >= 0 && (!r->tree_parent || r->mnts))
		close(r->mnt_ns_fd);
	r->mnt_ns_fd = -1;
	r->mnt_ns_owner = false;
	if (r->mnts) {		/* the root's: the tree's other processes point to them */
		if (fresh_stage_of(r->mnt_stage) && rmdir(r->mnt_stage))
			pr_warn("cannot remove %s: %m\n", r->mnt_stage);
		free(r->mnt_stage);
		free(r->mnt_devs);
	}
	r->mnt_stage = NULL;
	r->mnt_devs = NULL;
	r->nr_mnt_devs = 0;
	for (size_t i = 0; i < r->nr_mnts; i++)
		img_free(&mnt_entry__descriptor, r->mnts[i]);
	free(r->mnts);
	r->mnts = NULL;
	r->nr_mnts = 0;
}
