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
#include <dirent.h>
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
#include "ctx/dump_ctx.h"
#include "ns/cgroups.h"

static const char *const v1_props[] = {
	"cpuset.cpus", "cpuset.mems", "cpu.shares", "cpu.cfs_period_us", "cpu.cfs_quota_us",
	"memory.limit_in_bytes", "memory.soft_limit_in_bytes", "memory.swappiness",
	"pids.max", "net_prio.ifpriomap", "notify_on_release", "devices.list",
	"cgroup.procs", "tasks",
};
static const char *const v2_props[] = {
	"cpuset.cpus", "cpuset.mems", "cpu.weight", "cpu.max", "memory.max", "memory.high",
	"memory.low", "memory.min", "pids.max", "cgroup.procs",
};

/* Everything a dump allocates for the image, freed at once. */
struct cg_build {
	void **mem;
	size_t nr, max;
	size_t nr_below;	/* directories recorded below the process's cgroups */
	const char *mountinfo;	/* memdump's, read once for every hierarchy (NULL: each time) */
};

/* Cgroups below the process's own recorded at most (more: the dump refuses). */
#define CG_MAX_BELOW	512

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

/* cgroup.procs, tasks: their perms are restored, their members are the processes'. */
static bool cg_prop_perms_only(const char *name)
{
	return !strcmp(name, "cgroup.procs") || !strcmp(name, "tasks");
}

/* One property of dir (its value, its file's perms) in *out; 1: it has none. */
static int read_prop(struct cg_build *b, int dirfd, const char *name, CgroupPropEntry **out)
{
	char val[16384] = "";
	CgroupPropEntry *pe;
	struct stat st;
	size_t len;

	if (fstatat(dirfd, name, &st, 0) || faccessat(dirfd, name, R_OK, 0) ||
	    (!cg_prop_perms_only(name) && read_small_at(dirfd, name, val, sizeof(val))))
		return 1;
	len = strlen(val);
	while (len && val[len - 1] == '\n')
		val[--len] = 0;
	pe = cg_keep(b, malloc(sizeof(*pe)));
	if (!pe)
		return -ENOMEM;
	cgroup_prop_entry__init(pe);
	pe->name = (char *)name;
	pe->value = cg_keep(b, strdup(val));
	pe->perms = perms_of(b, &st);
	*out = pe;
	return pe->value && pe->perms ? 0 : -ENOMEM;
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
		CgroupPropEntry *pe;
		int ret = read_prop(b, dirfd, names[i], &pe);

		if (ret < 0)
			return ret;
		if (!ret)
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

/* The directory named rel among list[0..n), NULL if none. */
static CgroupDirEntry *find_dir(CgroupDirEntry **list, size_t n, const char *rel)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i]->dir_name, rel))
			return list[i];
	return NULL;
}

/*
 * The directories from the mount's root down to path ("/a/b") added to the
 * hierarchy's tree where missing; each list holds at most cap (the number of
 * sets: each adds one branch at most).
 */
static int insert_chain(struct cg_build *b, const char *mnt, const char *path, bool v2,
			CgControllerEntry *ce, size_t cap)
{
	CgroupDirEntry ***list = &ce->dirs;
	size_t *n = &ce->n_dirs;
	const char *p = path;
	int ret = 0;

	while (*p == '/')
		p++;
	while (*p && !ret) {
		size_t len = strcspn(p, "/");
		char rel[1024];
		CgroupDirEntry *de;

		snprintf(rel, sizeof(rel), "%.*s", (int)(p - path + len - 1), path + 1);
		de = *list ? find_dir(*list, *n, rel) : NULL;
		if (!de) {
			if (!*list)
				*list = cg_keep(b, calloc(cap, sizeof(**list)));
			if (!*list || *n >= cap)
				return -ENOMEM;
			ret = dir_entry(b, mnt, rel, v2, &de);
			if (ret)
				break;
			(*list)[(*n)++] = de;
		}
		list = &de->children;
		n = &de->n_children;
		p += len;
		while (*p == '/')
			p++;
	}
	return ret;
}

/* The recorded directory rel ("a/b") of a hierarchy, NULL if none. */
static CgroupDirEntry *find_path(CgroupDirEntry **list, size_t n, const char *rel)
{
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(list[i]->dir_name);

		if (!strcmp(list[i]->dir_name, rel))
			return list[i];
		if (!strncmp(list[i]->dir_name, rel, l) && rel[l] == '/')
			return find_path(list[i]->children, list[i]->n_children, rel);
	}
	return NULL;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* The names of dir's subdirectories (its child cgroups), malloc'ed. */
static int subdirs_of(const char *path, char ***out, size_t *nr)
{
	DIR *dir = opendir(path);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0;

	if (!dir)
		return fail(-errno, "cannot list cgroup %s: %s", path, strerror(errno));
	while ((e = readdir(dir))) {
		char **m;

		if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		m = realloc(names, (n + 1) * sizeof(*m));
		if (m)
			names = m;
		if (!m || !(names[n] = strdup(e->d_name))) {
			closedir(dir);
			free_names(names, n);
			return -ENOMEM;
		}
		n++;
	}
	closedir(dir);
	*out = names;
	*nr = n;
	return 0;
}

/* The names of ce's controllers joined ("cpu,cpuacct") are name. */
static bool controller_has_name(const CgControllerEntry *ce, const char *name)
{
	char s[256] = "";
	size_t o = 0;

	for (size_t j = 0; j < ce->n_cnames && o < sizeof(s); j++)
		o += snprintf(s + o, sizeof(s) - o, "%s%s", j ? "," : "", ce->cnames[j]);
	return !strcmp(s, name);
}

/*
 * Every cgroup below de (the process's own, "a/b" below mnt), recorded as its
 * children: the restore makes them again with their properties (CRIU's
 * --manage-cgroups). Never from a hierarchy's root: a process there would
 * record every cgroup of the host.
 */
static int add_below(struct cg_build *b, const char *mnt, CgroupDirEntry *de, bool v2)
{
	char path[1400], **names = NULL, rel[1100];
	CgroupDirEntry **list;
	size_t n = 0;
	int ret;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", mnt, de->dir_name) >= sizeof(path))
		return fail(-ENAMETOOLONG, "cgroup %s: path too long", path);
	ret = subdirs_of(path, &names, &n);
	if (ret || !n)
		return ret;
	list = cg_keep(b, calloc(de->n_children + n, sizeof(*list)));
	if (!list) {
		free_names(names, n);
		return -ENOMEM;
	}
	if (de->n_children)
		memcpy(list, de->children, de->n_children * sizeof(*list));
	de->children = list;
	for (size_t i = 0; i < n && !ret; i++) {
		CgroupDirEntry *c;

		if ((size_t)snprintf(rel, sizeof(rel), "%s/%s", de->dir_name, names[i]) >= sizeof(rel))
			ret = fail(-ENAMETOOLONG, "cgroup %s/%s: path too long", path, names[i]);
		else if (find_path(de->children, de->n_children, rel))
			continue;	/* on the chain of another thread's cgroup */
		else if (++b->nr_below > CG_MAX_BELOW)
			ret = fail(-E2BIG, "cgroup %s has more than %d cgroups below it, which "
				   "memdump does not record", path, CG_MAX_BELOW);
		else
			ret = dir_entry(b, mnt, rel, v2, &c);
		if (!ret) {
			de->children[de->n_children++] = c;
			ret = add_below(b, mnt, c, v2);
		}
	}
	free_names(names, n);
	return ret;
}

/* Each set's cgroup in each mounted hierarchy (not a root): the cgroups below it. */
static int add_all_below(struct cg_build *b, CgroupEntry *cg)
{
	int ret = 0;

	for (size_t i = 0; i < cg->n_sets && !ret; i++)
		for (size_t j = 0; j < cg->sets[i]->n_ctls && !ret; j++) {
			const CgMemberEntry *m = cg->sets[i]->ctls[j];
			CgControllerEntry *ce = NULL;
			CgroupDirEntry *de;
			const char *rel = m->path + strspn(m->path, "/");
			char mnt[256];

			for (size_t k = 0; k < cg->n_controllers && !ce; k++)
				if (controller_has_name(cg->controllers[k], m->name))
					ce = cg->controllers[k];
			if (!*rel || !ce || cgroup_mount_in(b->mountinfo, m->name, mnt, sizeof(mnt)))
				continue;
			de = find_path(ce->dirs, ce->n_dirs, rel);
			if (de)		/* again for a second set: nothing new */
				ret = add_below(b, mnt, de, !*m->name);
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

/* The hierarchy's entry among cg's controllers, a new one if none. */
static CgControllerEntry *controller_of(struct cg_build *b, CgroupEntry *cg, const char *ctl)
{
	CgControllerEntry *ce;

	for (size_t i = 0; i < cg->n_controllers; i++) {
		char name[256] = "";
		size_t o = 0;

		for (size_t j = 0; j < cg->controllers[i]->n_cnames && o < sizeof(name); j++)
			o += snprintf(name + o, sizeof(name) - o, "%s%s", j ? "," : "",
				      cg->controllers[i]->cnames[j]);
		if (!strcmp(name, ctl))
			return cg->controllers[i];
	}
	ce = cg_keep(b, malloc(sizeof(*ce)));
	if (!ce)
		return NULL;
	cg_controller_entry__init(ce);
	if (split_cnames(b, ctl, ce))
		return NULL;
	cg->controllers[cg->n_controllers++] = ce;
	return ce;
}

/* One line "ID:controllers:/path" of /proc/PID/cgroup: a member of set, its directories. */
static int add_line(struct cg_build *b, const char *line, CgSetEntry *set, CgroupEntry *cg,
		    size_t cap)
{
	const char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	char ctl[256], mnt[256];
	CgMemberEntry *me;
	CgControllerEntry *ce;

	if (!c2 || (size_t)(c2 - c1) > sizeof(ctl))
		return fail(-EIO, "cannot parse the cgroup line '%s'", line);
	snprintf(ctl, sizeof(ctl), "%.*s", (int)(c2 - c1 - 1), c1 + 1);
	me = cg_keep(b, malloc(sizeof(*me)));
	if (!me)
		return -ENOMEM;
	cg_member_entry__init(me);
	me->name = cg_keep(b, strdup(ctl));
	me->path = cg_keep(b, strdup(c2 + 1));
	if (!me->name || !me->path)
		return -ENOMEM;
	set->ctls[set->n_ctls++] = me;
	ce = controller_of(b, cg, ctl);
	if (!ce)
		return -ENOMEM;
	if (cgroup_mount_in(b->mountinfo, ctl, mnt, sizeof(mnt)))
		return 0;	/* not mounted here: no properties to read */
	return insert_chain(b, mnt, c2 + 1, !*ctl, ce, cap);
}

/* A set of id for the cgroups in text ("ID:controllers:path" lines). */
static int add_set(struct cg_build *b, CgroupEntry *cg, uint32_t id, const char *text, size_t cap)
{
	size_t n = 1;
	char *copy = cg_keep(b, strdup(text)), *save = NULL, *line;
	CgSetEntry *set = cg_keep(b, malloc(sizeof(*set)));
	int ret = 0;

	for (const char *p = text; *p; p++)
		n += *p == '\n';
	if (!copy || !set)
		return -ENOMEM;
	cg_set_entry__init(set);
	set->id = id;
	set->ctls = cg_keep(b, calloc(n, sizeof(*set->ctls)));
	if (!set->ctls)
		return -ENOMEM;
	if (!cg->controllers)
		cg->controllers = cg_keep(b, calloc(n, sizeof(*cg->controllers)));
	if (!cg->controllers)
		return -ENOMEM;
	cg->sets[cg->n_sets++] = set;
	for (line = strtok_r(copy, "\n", &save); line && !ret; line = strtok_r(NULL, "\n", &save))
		ret = add_line(b, line, set, cg, cap);
	return ret;
}

/* Each thread's set: its leader's, one of an earlier thread's, or a new one. */
static int thread_sets(struct cg_build *b, struct dump_ctx *d, CgroupEntry *cg, const char *lead,
		       char **texts)
{
	int ret = 0;

	texts[0] = (char *)lead;
	for (int i = 0; i < d->nr_threads && !ret; i++) {
		char path[64], *text = NULL;
		size_t k;

		d->threads[i].cg_set = CG_SET_ID;
		if (i == 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/cgroup", d->pid, d->threads[i].tid);
		if (proc_read_file(path, &text) < 0)
			return fail(-EIO, "cannot read %s", path);
		cg_keep(b, text);
		for (k = 0; k < cg->n_sets && strcmp(texts[k], text); k++)
			;
		if (k == cg->n_sets) {
			texts[k] = text;
			ret = add_set(b, cg, CG_SET_ID + k, text, d->nr_threads + 1);
		}
		d->threads[i].cg_set = CG_SET_ID + k;
	}
	return ret;
}

int write_cgroups(struct dump_ctx *d, const char *cgroup_text)
{
	CgroupEntry cg = CGROUP_ENTRY__INIT;
	struct cg_build b = { 0 };
	char **texts = cg_keep(&b, calloc(d->nr_threads + 1, sizeof(*texts)));
	struct image *img;
	char *mountinfo = NULL;
	int ret;

	if (proc_read_file("/proc/self/mountinfo", &mountinfo) >= 0)
		b.mountinfo = cg_keep(&b, mountinfo);	/* else each look reads it (and fails) */
	cg.sets = cg_keep(&b, calloc(d->nr_threads + 1, sizeof(*cg.sets)));
	ret = texts && cg.sets ? add_set(&b, &cg, CG_SET_ID, cgroup_text, d->nr_threads + 1)
			       : -ENOMEM;
	if (!ret)
		ret = thread_sets(&b, d, &cg, cgroup_text, texts);
	if (!ret)
		ret = add_all_below(&b, &cg);
	if (!ret)
		ret = img_create(&d->dir, IMG_CGROUP, 0, &img);
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
