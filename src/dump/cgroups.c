/*
 * cgroup.img (CRIU's CgroupEntry): the process's cgroup in every hierarchy
 * (one set, the leader's /proc/PID/cgroup) and, per hierarchy, the chain of
 * directories from the hierarchy's root down to that cgroup with their mode,
 * owner and the properties a restore sets when it recreates them.
 *
 * The properties are CRIU's default set for soft/full modes, those that
 * exist here: cpu.shares, cpu.cfs_period_us, cpu.cfs_quota_us,
 * memory.limit_in_bytes, memory.soft_limit_in_bytes, memory.swappiness,
 * cpuset.cpus, cpuset.mems, pids.max, net_prio.ifpriomap, and for v2
 * cpu.weight, cpu.max, memory.max, memory.high, memory.low, memory.min,
 * pids.max, cpuset.cpus, cpuset.mems. Order matters (a period before its
 * quota, the hard memory limit before the soft one, cpuset before a join).
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
#include "dump/dump.h"
#include "dump/cgroups.h"

static const char *const v1_props[] = {
	"cpuset.cpus", "cpuset.mems", "cpu.shares", "cpu.cfs_period_us", "cpu.cfs_quota_us",
	"memory.limit_in_bytes", "memory.soft_limit_in_bytes", "memory.swappiness",
	"pids.max", "net_prio.ifpriomap",
};
static const char *const v2_props[] = {
	"cpuset.cpus", "cpuset.mems", "cpu.weight", "cpu.max", "memory.max", "memory.high",
	"memory.low", "memory.min", "pids.max",
};

/* Everything a dump allocates for the image, freed at once. */
struct cg_build {
	void **mem;
	size_t nr, max;
};

static void *cg_keep(struct cg_build *b, void *p)
{
	if (!p)
		return NULL;
	if (b->nr == b->max) {
		size_t m = b->max ? 2 * b->max : 64;
		void **n = realloc(b->mem, m * sizeof(*n));

		if (!n) {
			free(p);
			return NULL;
		}
		b->mem = n;
		b->max = m;
	}
	b->mem[b->nr++] = p;
	return p;
}

static void cg_build_free(struct cg_build *b)
{
	for (size_t i = 0; i < b->nr; i++)
		free(b->mem[i]);
	free(b->mem);
}

static CgroupPerms *perms_of(struct cg_build *b, const struct stat *st)
{
	CgroupPerms *p = cg_keep(b, malloc(sizeof(*p)));

	if (p) {
		cgroup_perms__init(p);
		p->mode = st->st_mode;
		p->uid = st->st_uid;
		p->gid = st->st_gid;
	}
	return p;
}

/* The properties of the list that dir has, with their values as read. */
static int read_props(struct cg_build *b, int dirfd, bool v2, CgroupDirEntry *de)
{
	const char *const *names = v2 ? v2_props : v1_props;
	size_t n = v2 ? ARRAY_SIZE(v2_props) : ARRAY_SIZE(v1_props);

	de->properties = cg_keep(b, calloc(n, sizeof(*de->properties)));
	if (!de->properties)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char val[4096];
		CgroupPropEntry *pe;
		size_t len;

		if (faccessat(dirfd, names[i], R_OK, 0) ||
		    read_small_at(dirfd, names[i], val, sizeof(val)))
			continue;
		len = strlen(val);
		while (len && val[len - 1] == '\n')
			val[--len] = 0;
		pe = cg_keep(b, malloc(sizeof(*pe)));
		if (!pe)
			return -ENOMEM;
		cgroup_prop_entry__init(pe);
		pe->name = (char *)names[i];
		pe->value = cg_keep(b, strdup(val));
		if (!pe->value)
			return -ENOMEM;
		de->properties[de->n_properties++] = pe;
	}
	return 0;
}

/* One directory of the chain, "a/b" below the mount mnt. */
static int dir_entry(struct cg_build *b, const char *mnt, const char *rel, bool v2,
		     CgroupDirEntry **out)
{
	char path[1400];
	CgroupDirEntry *de = cg_keep(b, malloc(sizeof(*de)));
	struct stat st;
	int fd, ret;

	if (!de)
		return -ENOMEM;
	cgroup_dir_entry__init(de);
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", mnt, rel) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		return fail(ret, "cannot read cgroup %s: %s", path, strerror(-ret));
	}
	de->dir_name = cg_keep(b, strdup(rel));
	de->dir_perms = perms_of(b, &st);
	ret = de->dir_name && de->dir_perms ? read_props(b, fd, v2, de) : -ENOMEM;
	close(fd);
	*out = de;
	return ret;
}

/* The chain of directories from the mount's root down to path ("/a/b"), nested. */
static int dir_chain(struct cg_build *b, const char *mnt, const char *path, bool v2,
		     CgControllerEntry *ce)
{
	CgroupDirEntry *up = NULL;
	const char *p = path;
	int ret = 0;

	while (*p == '/')
		p++;
	while (*p && !ret) {
		size_t n = strcspn(p, "/");
		char rel[1024];
		CgroupDirEntry *de = NULL;

		snprintf(rel, sizeof(rel), "%.*s", (int)(p - path + n - 1), path + 1);
		ret = dir_entry(b, mnt, rel, v2, &de);
		if (ret)
			break;
		if (up) {
			up->children = cg_keep(b, malloc(sizeof(*up->children)));
			if (!up->children)
				return -ENOMEM;
			up->children[0] = de;
			up->n_children = 1;
		} else {
			ce->dirs = cg_keep(b, malloc(sizeof(*ce->dirs)));
			if (!ce->dirs)
				return -ENOMEM;
			ce->dirs[0] = de;
			ce->n_dirs = 1;
		}
		up = de;
		p += n;
		while (*p == '/')
			p++;
	}
	return ret;
}

/* "cpu,cpuacct" as CRIU's cnames: each controller; v2 has none. */
static int split_cnames(struct cg_build *b, const char *ctl, CgControllerEntry *ce)
{
	char *copy = cg_keep(b, strdup(ctl)), *save = NULL, *c;

	if (!copy)
		return -ENOMEM;
	ce->cnames = cg_keep(b, calloc(strlen(ctl) / 2 + 2, sizeof(*ce->cnames)));
	if (!ce->cnames)
		return -ENOMEM;
	for (c = strtok_r(copy, ",", &save); c; c = strtok_r(NULL, ",", &save))
		ce->cnames[ce->n_cnames++] = c;
	return 0;
}

/* One line "ID:controllers:/path" of /proc/PID/cgroup: its member and its controller. */
static int add_hierarchy(struct cg_build *b, const char *line, CgSetEntry *set, CgroupEntry *cg)
{
	const char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	char ctl[256], mnt[256];
	CgMemberEntry *me;
	CgControllerEntry *ce;
	int ret;

	if (!c2 || (size_t)(c2 - c1) > sizeof(ctl))
		return fail(-EIO, "cannot parse the cgroup line '%s'", line);
	snprintf(ctl, sizeof(ctl), "%.*s", (int)(c2 - c1 - 1), c1 + 1);
	me = cg_keep(b, malloc(sizeof(*me)));
	ce = cg_keep(b, malloc(sizeof(*ce)));
	if (!me || !ce)
		return -ENOMEM;
	cg_member_entry__init(me);
	cg_controller_entry__init(ce);
	me->name = cg_keep(b, strdup(ctl));
	me->path = cg_keep(b, strdup(c2 + 1));
	if (!me->name || !me->path)
		return -ENOMEM;
	set->ctls[set->n_ctls++] = me;
	ret = split_cnames(b, ctl, ce);
	if (!ret && !cgroup_mount_of(ctl, mnt, sizeof(mnt)))	/* else: no properties to read */
		ret = dir_chain(b, mnt, c2 + 1, !*ctl, ce);
	cg->controllers[cg->n_controllers++] = ce;
	return ret;
}

static int build_entry(struct cg_build *b, const char *text, CgroupEntry *cg, CgSetEntry *set)
{
	size_t n = 1;
	char *copy = cg_keep(b, strdup(text)), *save = NULL, *line;
	int ret = 0;

	for (const char *p = text; *p; p++)
		n += *p == '\n';
	set->ctls = cg_keep(b, calloc(n, sizeof(*set->ctls)));
	cg->controllers = cg_keep(b, calloc(n, sizeof(*cg->controllers)));
	if (!copy || !set->ctls || !cg->controllers)
		return -ENOMEM;
	for (line = strtok_r(copy, "\n", &save); line && !ret; line = strtok_r(NULL, "\n", &save))
		ret = add_hierarchy(b, line, set, cg);
	return ret;
}

int write_cgroups(struct img_dir *dir, const char *cgroup_text)
{
	CgroupEntry cg = CGROUP_ENTRY__INIT;
	CgSetEntry set = CG_SET_ENTRY__INIT, *sets[1] = { &set };
	struct cg_build b = { 0 };
	struct image *img;
	int ret;

	set.id = CG_SET_ID;
	cg.sets = sets;
	cg.n_sets = 1;
	ret = build_entry(&b, cgroup_text, &cg, &set);
	if (!ret)
		ret = img_create(dir, IMG_CGROUP, 0, &img);
	if (!ret) {
		ret = img_write_msg(img, &cg.base);
		if (ret)
			img_abort(img);
		else
			ret = img_close(img);
	}
	cg_build_free(&b);
	return ret;
}
