/*
 * The process's cgroups recreated from cgroup.img before it joins them
 * (CRIU's --manage-cgroups modes):
 *
 *  - soft (the default): a missing directory is created with its recorded
 *    mode, owner and properties; one that exists is joined as it is;
 *  - full: the properties are set on existing directories too;
 *  - strict: every directory below the hierarchy's root must be missing
 *    and is created with its properties;
 *  - ignore: no cgroup is created or joined (the process stays in memdump's).
 *
 * The process's path in each hierarchy is taken through --cgroup-root like
 * the join (cgroups_join_restore.c): every directory of the path that is missing is made,
 * each with the dumped directory's properties at the same place (a moved
 * path: the dumped leaf's on its new leaf). The directories made are
 * removed again when the restore fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "common.h"
#include "log.h"
#include "proc.h"
#include "cgroup.pb-c.h"
#include "image/image.h"
#include "image/rstcheck.h"
#include "ctx/restore_ctx.h"
#include "ns/cgroups.h"

static const char *const mode_names[] = {
	[CG_MODE_SOFT] = "soft", [CG_MODE_FULL] = "full", [CG_MODE_STRICT] = "strict",
	[CG_MODE_IGNORE] = "ignore",
};

int cg_mode_parse(const char *s)
{
	if (!s || !*s)
		return CG_MODE_SOFT;
	if (!strcmp(s, "none"))
		return CG_MODE_IGNORE;	/* CRIU's older name */
	for (size_t i = 0; i < ARRAY_SIZE(mode_names); i++)
		if (!strcmp(s, mode_names[i]))
			return (int)i;
	return -EINVAL;
}

/* A directory of the dumped chain whose path ("a/b") is rel, or NULL. */
static const CgroupDirEntry *find_dir(CgroupDirEntry **dirs, size_t n, const char *rel)
{
	for (size_t i = 0; i < n; i++) {
		const CgroupDirEntry *d = dirs[i];
		size_t l = strlen(d->dir_name);

		if (!strcmp(d->dir_name, rel))
			return d;
		if (!strncmp(d->dir_name, rel, l) && rel[l] == '/')
			return find_dir(d->children, d->n_children, rel);
	}
	return NULL;
}

/* The dumped directory of a member's cgroup (path "/a/b"), NULL if none. */
static const CgroupDirEntry *leaf_dir(const CgControllerEntry *ce, const char *path)
{
	path += strspn(path, "/");
	return *path ? find_dir(ce->dirs, ce->n_dirs, path) : NULL;
}

/* One property; a multi-line value (net_prio.ifpriomap) is written a line at a time. */
static int set_prop(int dirfd, const char *path, const CgroupPropEntry *p)
{
	char cur[4096];
	size_t n = strlen(p->value);
	int fd;

	if (!read_small_at(dirfd, p->name, cur, sizeof(cur))) {
		size_t l = strlen(cur);

		while (l && cur[l - 1] == '\n')
			cur[--l] = 0;
		if (!strcmp(cur, p->value))
			return 0;
	}
	fd = openat(dirfd, p->name, O_WRONLY | O_CLOEXEC);
	for (const char *v = p->value; fd >= 0 && v < p->value + n;) {
		size_t l = strcspn(v, "\n");

		if (l && write(fd, v, l) != (ssize_t)l)
			break;
		v += l + 1;
		if (v >= p->value + n) {
			close(fd);
			return 0;
		}
	}
	if (n == 0 && fd >= 0) {
		close(fd);
		return 0;
	}
	int err = errno;

	if (fd >= 0)
		close(fd);
	return fail(-err, "cannot set %s of cgroup %s to '%s': %s", p->name, path, p->value,
		    strerror(err));
}

/* A property file's recorded mode and owner, where they differ. */
static int set_perms(int dirfd, const char *path, const CgroupPropEntry *p)
{
	const CgroupPerms *pm = p->perms;
	struct stat st;

	if (!pm || fstatat(dirfd, p->name, &st, 0))
		return 0;	/* none recorded, or no such file here: its value said so */
	if ((st.st_mode & 07777) != (pm->mode & 07777) && fchmodat(dirfd, p->name, pm->mode & 07777, 0))
		return fail(-errno, "cannot give %s of cgroup %s its mode %o: %s", p->name, path,
			    pm->mode & 07777, strerror(errno));
	if ((st.st_uid != pm->uid || st.st_gid != pm->gid) &&
	    fchownat(dirfd, p->name, pm->uid, pm->gid, 0))
		return fail(-errno, "cannot give %s of cgroup %s to %u:%u: %s", p->name, path,
			    pm->uid, pm->gid, strerror(errno));
	return 0;
}

/*
 * devices.list is the result of devices.deny and devices.allow: everything
 * denied, then each recorded rule allowed.
 */
static int set_devices(int dirfd, const char *path, const CgroupPropEntry *p)
{
	CgroupPropEntry deny = *p, allow = *p;
	char cur[16384];

	if (!read_small_at(dirfd, p->name, cur, sizeof(cur)) &&
	    !strncmp(cur, p->value, strlen(p->value)) && !strcmp(cur + strlen(p->value),
								 *p->value ? "\n" : ""))
		return 0;
	deny.name = "devices.deny";
	deny.value = "a";
	allow.name = "devices.allow";
	return set_prop(dirfd, path, &deny) ?: set_prop(dirfd, path, &allow);
}

static int set_props(const char *path, const CgroupDirEntry *d)
{
	int dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret = 0;

	if (dirfd < 0)
		return fail(-errno, "cannot open cgroup %s: %s", path, strerror(errno));
	for (size_t i = 0; i < d->n_properties && !ret; i++) {
		const CgroupPropEntry *p = d->properties[i];

		if (!strcmp(p->name, "devices.list"))
			ret = set_devices(dirfd, path, p);
		else if (strcmp(p->name, "cgroup.procs") && strcmp(p->name, "tasks"))
			ret = set_prop(dirfd, path, p);
		if (!ret)
			ret = set_perms(dirfd, path, p);
	}
	close(dirfd);
	return ret;
}

static int remember_made(struct rst *r, const char *path)
{
	char **n = realloc(r->cg_made, (r->nr_cg_made + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	r->cg_made = n;
	n[r->nr_cg_made] = strdup(path);
	if (!n[r->nr_cg_made])
		return -ENOMEM;
	r->nr_cg_made++;
	return 0;
}

/* path is a directory this restore made (two sets share a chain). */
static bool made_here(const struct rst *r, const char *path)
{
	for (size_t i = 0; i < r->nr_cg_made; i++)
		if (!strcmp(r->cg_made[i], path))
			return true;
	return false;
}

bool cgroups_made_inode(const struct rst *r, dev_t dev, ino_t ino)
{
	struct stat st;

	for (size_t i = 0; i < r->nr_cg_made; i++)
		if (!stat(r->cg_made[i], &st) && st.st_dev == dev && st.st_ino == ino)
			return true;
	return false;
}

/*
 * A v1 cpuset made without clone_children has no CPUs and nodes, and nothing
 * can join it: its parent's, as a start (recorded values are set after).
 */
static int inherit_cpuset(const char *path)
{
	static const char *const files[] = { "cpuset.cpus", "cpuset.mems" };
	char parent[1400], v[4096], cur[4096];

	snprintf(parent, sizeof(parent), "%s", path);
	*strrchr(parent, '/') = 0;
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		char f[1500];
		int fd, n;

		snprintf(f, sizeof(f), "%s/%s", path, files[i]);
		if (read_small_at(AT_FDCWD, f, cur, sizeof(cur)) || (cur[0] && cur[0] != '\n'))
			continue;	/* no cpuset here, or set already */
		snprintf(f, sizeof(f), "%s/%s", parent, files[i]);
		if (read_small_at(AT_FDCWD, f, v, sizeof(v)))
			continue;
		snprintf(f, sizeof(f), "%s/%s", path, files[i]);
		fd = open(f, O_WRONLY | O_CLOEXEC);
		n = (int)strcspn(v, "\n");
		if (fd < 0 || (n && write(fd, v, n) != n)) {
			int err = errno;

			if (fd >= 0)
				close(fd);
			return fail(-err, "cannot give cgroup %s its parent's %s: %s", path,
				    files[i], strerror(err));
		}
		close(fd);
	}
	return 0;
}

/* path made if missing (mode and owner of d), its properties set as the mode says. */
static int make_one(struct rst *r, const char *path, const char *ctl, const char *rel,
		    const CgroupDirEntry *d)
{
	mode_t mode = d && d->dir_perms ? d->dir_perms->mode & 07777 : 0755;
	bool made = !mkdir(path, mode);
	int ret = 0;

	if (!made && errno != EEXIST)
		return fail(-errno, "cannot create cgroup %s: %s", path, strerror(errno));
	if (!made && r->o->cg_mode == CG_MODE_STRICT && !cgroup_own_or_above(ctl, rel) &&
	    !made_here(r, path))
		return fail(-EEXIST, "cgroup %s exists already (--manage-cgroups strict creates "
			    "every cgroup of the process)", path);
	if (made) {
		pr_info("cgroup %s created", path);
		ret = remember_made(r, path);
	}
	if (!ret && made)
		ret = inherit_cpuset(path);
	if (!ret && made && d && d->dir_perms &&
	    chown(path, d->dir_perms->uid, d->dir_perms->gid))
		ret = fail(-errno, "cannot give cgroup %s to %u:%u: %s", path, d->dir_perms->uid,
			   d->dir_perms->gid, strerror(errno));
	if (!ret && made && chmod(path, mode))	/* mkdir's was under the umask */
		ret = fail(-errno, "cannot give cgroup %s its mode %o: %s", path, mode,
			   strerror(errno));
	if (!ret && d && (made || r->o->cg_mode != CG_MODE_SOFT))
		ret = set_props(path, d);
	return ret;
}

/* Every directory of one hierarchy's (mapped) path, from its root down. */
static int make_path(struct rst *r, const CgControllerEntry *ce, const CgroupDirEntry *leaf,
		     const char *ctl, const char *mnt, const char *path, bool moved)
{
	const char *p = path;
	int ret = 0;

	while (*p == '/')
		p++;
	while (*p && !ret) {
		size_t n = strcspn(p, "/");
		char rel[1024], full[1400];
		const CgroupDirEntry *d;
		bool last;

		snprintf(rel, sizeof(rel), "%.*s", (int)(p + n - path), path);
		p += n;
		while (*p == '/')
			p++;
		last = !*p;
		d = moved ? (last ? leaf : NULL) : find_dir(ce->dirs, ce->n_dirs, rel + 1);
		if ((size_t)snprintf(full, sizeof(full), "%s%s", mnt, rel) >= sizeof(full))
			return -ENAMETOOLONG;
		ret = make_one(r, full, ctl, rel, d);
	}
	return ret;
}

/* "cpu,cpuacct" from CRIU's cnames. */
static void join_cnames(const CgControllerEntry *ce, char *out, size_t len)
{
	size_t o = 0;

	out[0] = 0;
	for (size_t i = 0; i < ce->n_cnames && o < len; i++)
		o += snprintf(out + o, len - o, "%s%s", i ? "," : "", ce->cnames[i]);
}

/* The path of set's member for ctl, NULL if none. */
static const char *member_path(const CgroupEntry *cg, uint32_t set, const char *ctl)
{
	for (size_t i = 0; i < cg->n_sets; i++)
		for (size_t j = 0; cg->sets[i]->id == set && j < cg->sets[i]->n_ctls; j++)
			if (!strcmp(cg->sets[i]->ctls[j]->name, ctl))
				return cg->sets[i]->ctls[j]->path;
	return NULL;
}

/* The hierarchy's entry of cg for ctl, NULL if none. */
static const CgControllerEntry *controller_of(const CgroupEntry *cg, const char *ctl)
{
	for (size_t i = 0; i < cg->n_controllers; i++) {
		char name[256];

		join_cnames(cg->controllers[i], name, sizeof(name));
		if (!strcmp(name, ctl))
			return cg->controllers[i];
	}
	return NULL;
}

/* The hierarchy ID of ctl in the leader's /proc/PID/cgroup as dumped (lines match by it). */
static unsigned hierarchy_id(const struct rst *r, const char *ctl)
{
	const char *text = r->leader->tc->cgroup;
	size_t n = strlen(ctl);

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		const char *c = strchr(p, ':');

		if (c && !strncmp(c + 1, ctl, n) && c[n + 1] == ':')
			return (unsigned)strtoul(p, NULL, 10);
	}
	return 0;
}

/* A member (ctl, path) as a line, moved by --cgroup-root: its directory path in mpath. */
static int mapped_member(struct rst *r, const CgMemberEntry *m, char *mapped, size_t len,
			 const char **mpath)
{
	char line[1400];
	int ret;

	snprintf(line, sizeof(line), "%u:%s:%s", hierarchy_id(r, m->name), m->name, m->path);
	ret = cgroups_map_root(r, line, mapped, len);
	if (!ret)
		*mpath = strchr(strchr(mapped, ':') + 1, ':') + 1;
	return ret;
}

/*
 * The cgroups recorded below the process's (d, made again at dir, its path
 * in the hierarchy rel): each with its mode, owner and properties.
 */
static int make_below(struct rst *r, const char *ctl, const char *dir, const char *rel,
		      const CgroupDirEntry *d)
{
	int ret = 0;

	for (size_t i = 0; i < d->n_children && !ret; i++) {
		const CgroupDirEntry *c = d->children[i];
		const char *name = strrchr(c->dir_name, '/');
		char cdir[1700], crel[1400];

		name = name ? name + 1 : c->dir_name;
		if ((size_t)snprintf(cdir, sizeof(cdir), "%s/%s", dir, name) >= sizeof(cdir) ||
		    (size_t)snprintf(crel, sizeof(crel), "%s/%s", rel, name) >= sizeof(crel))
			return -ENAMETOOLONG;
		ret = make_one(r, cdir, ctl, crel, c);
		if (!ret)
			ret = make_below(r, ctl, cdir, crel, c);
	}
	return ret;
}

/* Every directory of one member's (mapped) path. */
static int make_member(struct rst *r, const CgroupEntry *cg, const CgMemberEntry *m)
{
	const CgControllerEntry *ce = controller_of(cg, m->name);
	char mapped[1400], mnt[256], dir[1700];
	const CgroupDirEntry *leaf;
	const char *mpath;
	int ret;

	if (!ce)
		return 0;
	ret = mapped_member(r, m, mapped, sizeof(mapped), &mpath);
	if (ret || !mpath[strspn(mpath, "/")])
		return ret;	/* a hierarchy's root is there */
	if (cgroup_mount_of(m->name, mnt, sizeof(mnt)))
		return fail(-ENOENT, "the process was in cgroup %s of hierarchy '%s', which is not "
			    "mounted here: it cannot be recreated", m->path, m->name);
	leaf = leaf_dir(ce, m->path);
	ret = make_path(r, ce, leaf, m->name, mnt, mpath, strcmp(mpath, m->path) != 0);
	if (!ret && leaf && (size_t)snprintf(dir, sizeof(dir), "%s%s", mnt, mpath) >= sizeof(dir))
		ret = -ENAMETOOLONG;
	return ret || !leaf ? ret : make_below(r, m->name, dir, mpath, leaf);
}

/* A thread's cgroup: joinable or creatable here. */
static int check_member(struct rst *r, const CgMemberEntry *m)
{
	char mapped[1400];
	const char *mpath;
	int ret = mapped_member(r, m, mapped, sizeof(mapped), &mpath);

	return ret ? ret : rstcheck_cgroup_path(m->name, mpath,
						r->o->cg_mode == CG_MODE_STRICT);
}

int cgroups_load(struct rst *r)
{
	char name[64];
	int ret;

	img_name(IMG_CGROUP, 0, name, sizeof(name));
	if (r->o->cg_mode == CG_MODE_IGNORE || !r->leader->tc->has_cg_set ||
	    faccessat(r->ds.dirfd, name, F_OK, 0))
		return 0;	/* a dump before cgroup.img: its cgroups are joined as they are */
	ret = img_read_one(r->ds.dirfd, IMG_CGROUP, 0, &cgroup_entry__descriptor,
			   (void **)&r->cg);
	for (size_t i = 0; !ret && i < r->cg->n_sets; i++)	/* the leader's: attrs.c */
		for (size_t j = 0; r->cg->sets[i]->id != r->leader->tc->cg_set &&
				   j < r->cg->sets[i]->n_ctls && !ret; j++)
			ret = check_member(r, r->cg->sets[i]->ctls[j]);
	return ret;
}

int cgroups_procs(struct rst *r, const char *line, char *procs, size_t len)
{
	const char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	bool strict = r->o->cg_mode == CG_MODE_STRICT;
	char ctl[256], dir[1200];
	int ret = cgroup_procs_path(line, procs, len);

	if ((!ret && !strict) || !r->cg || !c2 || (size_t)(c2 - c1) > sizeof(ctl))
		return ret;
	snprintf(ctl, sizeof(ctl), "%.*s", (int)(c2 - c1 - 1), c1 + 1);
	ret = rstcheck_cgroup_path(ctl, c2 + 1, strict);	/* made before the fork */
	if (!ret)
		ret = cgroup_dir_path(line, dir, sizeof(dir));
	if (!ret && (size_t)snprintf(procs, len, "%s/cgroup.procs", dir) >= len)
		ret = -ENAMETOOLONG;
	return ret;
}

int cgroups_recreate(struct rst *r)
{
	const CgroupEntry *cg = r->cg;
	int ret = 0;

	if (r->cg_ready)
		return 0;	/* made before the files' checks already */
	for (size_t i = 0; cg && i < cg->n_sets && !ret; i++)
		for (size_t j = 0; j < cg->sets[i]->n_ctls && !ret; j++)
			ret = make_member(r, cg, cg->sets[i]->ctls[j]);
	r->cg_ready = !ret;
	return ret;
}

/* The file that moves one thread into a cgroup: v1's tasks, v2's cgroup.threads. */
static int move_thread(struct rst *r, const CgMemberEntry *m, pid_t tid)
{
	char mapped[1400], mnt[256], file[1700], v[16];
	const char *mpath;
	int fd, n = snprintf(v, sizeof(v), "%d", tid);
	int ret = mapped_member(r, m, mapped, sizeof(mapped), &mpath);

	if (!ret && cgroup_mount_of(m->name, mnt, sizeof(mnt)))
		ret = -ENOENT;
	if (ret)
		return fail(ret, "thread %d cannot join cgroup %s of hierarchy '%s'", tid, m->path,
			    m->name);
	snprintf(file, sizeof(file), "%s%s/%s", mnt, mpath, *m->name ? "tasks" : "cgroup.threads");
	fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, v, n) != n) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		return fail(ret, "thread %d cannot join its cgroup: %s: %s", tid, file,
			    strerror(-ret));
	}
	close(fd);
	return 0;
}

int cgroups_move_threads(struct rst *r)
{
	const CgroupEntry *cg = r->cg;
	uint32_t lead = r->leader->tc ? r->leader->tc->cg_set : 0;
	int ret = 0;

	for (size_t i = 0; cg && i < r->ds.nr_cores && !ret; i++) {
		const ThreadCoreEntry *th = r->ds.cores[i]->thread_core;
		pid_t tid = r->ds.pstree->n_threads ? (pid_t)r->ds.pstree->threads[i] : r->pid;

		if (!th || !th->has_cg_set || th->cg_set == lead)
			continue;
		for (size_t s = 0; s < cg->n_sets && !ret; s++)
			for (size_t j = 0; cg->sets[s]->id == th->cg_set &&
					   j < cg->sets[s]->n_ctls && !ret; j++) {
				const CgMemberEntry *m = cg->sets[s]->ctls[j];
				const char *lp = member_path(cg, lead, m->name);

				if (!lp || strcmp(lp, m->path))
					ret = move_thread(r, m, tid);
			}
	}
	return ret;
}

void cgroups_undo(struct rst *r)
{
	while (r->nr_cg_made) {
		char *p = r->cg_made[--r->nr_cg_made];

		if (rmdir(p))
			pr_warn("cgroup %s made by the restore cannot be removed: %m", p);
		free(p);
	}
	free(r->cg_made);
	r->cg_made = NULL;
}

void cgroups_forget(struct rst *r)
{
	if (r->cg)
		img_free(&cgroup_entry__descriptor, r->cg);
	r->cg = NULL;
	for (size_t i = 0; i < r->nr_cg_made; i++)
		free(r->cg_made[i]);
	free(r->cg_made);
	r->cg_made = NULL;
	r->nr_cg_made = 0;
}
