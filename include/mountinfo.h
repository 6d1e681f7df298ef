/*
 * /proc/.../mountinfo, parsed: one entry per mount, in the kernel's order
 * (a mount namespace copied from another keeps its order; new mounts come
 * after). Used by the dump (what a mount namespace of the target's own
 * holds) and the restore (the namespace it builds from memdump's copy).
 */
#ifndef MEMDUMP_MOUNTINFO_H
#define MEMDUMP_MOUNTINFO_H

#include <stdbool.h>
#include <stddef.h>

struct mount {
	int id, parent;
	unsigned int major, minor;
	char *root;		/* the path inside its filesystem that is mounted */
	char *mountpoint;	/* as the reader of mountinfo sees it */
	char *opts;		/* per mount: rw,nosuid,... */
	int shared, master;	/* peer group ids (shared:N, master:N), 0: none */
	char *fstype;
	char *source;
	char *super;		/* per superblock options */
	unsigned long flags;	/* opts as MS_* mount flags, and MS_UNBINDABLE */
};

struct mounts {
	struct mount *m;
	size_t n;
};

/* mnt_entry.how in mountpoints-ID.img (ns/mntns.c writes it, ns/mntns_restore.c reads it). */
enum { HOW_KEPT, HOW_MOUNTED };

/* Parse path (e.g. /proc/PID/mountinfo); 0 or -errno. */
int mounts_read(const char *path, struct mounts *out);
/* The same, path relative to directory dirfd (a /proc/PID/task/TID opened before a chroot). */
int mounts_read_at(int dirfd, const char *path, struct mounts *out);
void mounts_free(struct mounts *ms);
/* The same mount: mount point, device, root, type and source alike. */
bool mount_same(const struct mount *a, const struct mount *b);

/*
 * A clone (open_tree) of the mount dir is on, rooted at dir, detached, its
 * read-only flag cleared: a file can be made or removed through it on a
 * read-only bind of a writable filesystem. An O_PATH fd, or -errno (-EROFS:
 * the filesystem itself is read-only).
 */
int mount_rw_clone(const char *dir);
/* path (a file, or an empty directory) removed through such a clone of its directory's mount */
int mount_rw_remove(const char *path);

#endif
