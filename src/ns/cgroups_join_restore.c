/*
 * A restored process joins its cgroups (the core's lines, each moved under
 * its --cgroup-root if one is given): checked before anything starts (each
 * cgroup the process was in and memdump is not must be joinable or, with
 * --manage-cgroups, creatable here: cgroups_restore.c makes it); their
 * cgroup.procs files opened before the fork (a root of its own may hide
 * them after); joined by the child first thing, the root of a cgroup
 * namespace of its own before the unshare, every other cgroup after it.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "common.h"
#include "log.h"
#include "proc.h"
#include "ctx/restore_ctx.h"
#include "ns/cgroups.h"

static int add_join(char ***list, size_t *nr, const char *path)
{
	char **n = realloc(*list, (*nr + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	*list = n;
	n[*nr] = strdup(path);
	if (!n[*nr])
		return -ENOMEM;
	(*nr)++;
	return 0;
}

/*
 * The root of the process's cgroup namespace in the hierarchy of line: its
 * path with what it saw from inside (the same hierarchy's line of inside)
 * taken off the end, as a line "ID:controllers:root".
 */
static int cgns_root_line(const char *line, const char *inside, char *out, size_t len)
{
	char in[1024];
	const char *full = strrchr(line, ':'), *rel;
	size_t nf, nr;

	if (!full || cgroup_own_line(inside, line, in, sizeof(in)) || !(rel = strrchr(in, ':')))
		return fail(-EIO, "core image: cgroup %s has no line in the namespace's view", line);
	full++;
	rel++;
	nf = strlen(full);
	nr = strcmp(rel, "/") ? strlen(rel) : 0;
	if (nr > nf || (nr && (strcmp(full + nf - nr, rel) || (nf > nr && full[nf - nr - 1] == '/'))))
		return fail(-EIO, "core image: cgroup %s does not end in %s (its namespace's view)",
			    line, rel);
	snprintf(out, len, "%.*s%.*s", (int)(full - line), line, (int)(nf - nr ? nf - nr : 1),
		 nf - nr ? full : "/");
	return 0;
}

/* The --cgroup-root for line's hierarchy: one naming its controller, else one naming none. */
static const struct cg_root_map *cg_root_for(const struct restore_opts *o, const char *line)
{
	const struct cg_root_map *any = NULL;

	for (int i = 0; i < o->nr_cg_root_map; i++) {
		if (!o->cg_root_map[i].ctrl)
			any = &o->cg_root_map[i];
		else if (cgroup_line_has(line, o->cg_root_map[i].ctrl))
			return &o->cg_root_map[i];
	}
	return any;
}

/* line is memdump's own cgroup in its hierarchy. */
static bool line_is_own(const char *line)
{
	char own[4096], mine[1024];

	return !read_small_at(AT_FDCWD, "/proc/self/cgroup", own, sizeof(own)) &&
	       !cgroup_own_line(own, line, mine, sizeof(mine)) && !strcmp(mine, line);
}

/* line, moved under its --cgroup-root if one is given (the tree's root's cgroup becomes it). */
int cgroups_map_root(const struct rst *r, const char *line, char *out, size_t len)
{
	const struct cg_root_map *m = cg_root_for(r->o, line);
	const char *base = r->tree_cgroup ? r->tree_cgroup : r->leader->tc->cgroup;
	char dir[1024];
	int ret;

	/*
	 * A --cgroup-root for every hierarchy cannot move a process out of
	 * memdump's own cgroup in one that is not mounted here: it stays there.
	 */
	if (m && !m->ctrl && cgroup_dir_path(line, dir, sizeof(dir)) == -ENOENT &&
	    line_is_own(line)) {
		pr_info("cgroup %s: its hierarchy is not mounted here, it stays memdump's", line);
		m = NULL;
	}
	if (!m) {
		snprintf(out, len, "%s", line);
		return 0;
	}
	ret = cgroup_rebase(line, base, m->path, out, len);
	if (ret)
		return fail(ret, "the process was in cgroup %s, not below the tree's root's: "
			    "--cgroup-root %s%s%s cannot place it", line, m->ctrl ? m->ctrl : "",
			    m->ctrl ? ":" : "", m->path);
	pr_info("cgroup %s restored as %s (--cgroup-root)", line, out);
	return 0;
}

/* A cgroup namespace of its own: its root joined first, every cgroup after the unshare. */
static bool is_own(const char *own, const char *line)
{
	char mine[1024];

	return !cgroup_own_line(own, line, mine, sizeof(mine)) && !strcmp(mine, line);
}

/*
 * A cgroup namespace of its own: its root joined first, every cgroup after the
 * unshare; where memdump is in that cgroup already (a hierarchy perhaps not
 * mounted here), the child is too: nothing to join.
 */
static int check_cgroup_ns(struct rst *r, const char *dumped, const char *inside)
{
	char own[4096], *copy = strdup(dumped), *line, *save = NULL;
	int ret = copy ? read_small_at(AT_FDCWD, "/proc/self/cgroup", own, sizeof(own)) : -ENOMEM;

	for (line = copy ? strtok_r(copy, "\n", &save) : NULL; line && !ret;
	     line = strtok_r(NULL, "\n", &save)) {
		char root[1100], procs[1024], mapped[1100];

		ret = cgroups_map_root(r, line, mapped, sizeof(mapped));
		line = mapped;
		if (!ret)
			ret = cgns_root_line(line, inside, root, sizeof(root));
		if (ret || (is_own(own, root) && is_own(own, line)))
			continue;
		if (cgroups_procs(r, root, procs, sizeof(procs)))
			ret = fail(-ENOENT, "the root of the process's cgroup namespace, %s, cannot be "
				   "joined here (not mounted or gone)", root);
		if (!ret)
			ret = add_join(&r->cg_root, &r->nr_cg_root, procs);
		if (!ret && cgroups_procs(r, line, procs, sizeof(procs)))
			ret = fail(-ENOENT, "the process was in cgroup %s, which memdump cannot "
				   "join here (not mounted or gone)", line);
		if (!ret)
			ret = add_join(&r->cg_join, &r->nr_cg_join, procs);
	}
	free(copy);
	return ret;
}

/* Each hierarchy where the process was in another cgroup than memdump: joinable. */
static int check_cgroups(struct rst *r, const char *dumped)
{
	char own[4096], *copy, *line, *save = NULL;
	int ret = read_small_at(AT_FDCWD, "/proc/self/cgroup", own, sizeof(own));

	if (ret)
		return fail(ret, "cannot read /proc/self/cgroup: %s", strerror(-ret));
	copy = strdup(dumped);
	if (!copy)
		return -ENOMEM;
	for (line = strtok_r(copy, "\n", &save); line && !ret; line = strtok_r(NULL, "\n", &save)) {
		char mine[1024], procs[1024], mapped[1100];

		ret = cgroups_map_root(r, line, mapped, sizeof(mapped));
		line = mapped;
		if (ret)
			break;
		if (cgroup_own_line(own, line, mine, sizeof(mine)))
			ret = fail(-ENOENT, "the process was in cgroup %s, a hierarchy this host "
				   "does not have", line);
		else if (strcmp(mine, line) && cgroups_procs(r, line, procs, sizeof(procs)))
			ret = fail(-ENOENT, "the process was in cgroup %s, which memdump cannot "
				   "join here (not mounted or gone)", line);
		else if (strcmp(mine, line))
			ret = add_join(&r->cg_join, &r->nr_cg_join, procs);
	}
	free(copy);
	return ret;
}

/* Its cgroup.procs files, opened before the fork: its root of its own may hide them after. */
int cgroups_open_join(struct rst *r)
{
	size_t n = r->nr_cg_root + r->nr_cg_join;
	int ret = cgroups_recreate(r);

	if (ret)
		return ret;

	r->cg_fds = calloc(n + 1, sizeof(*r->cg_fds));
	if (!r->cg_fds)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *path = i < r->nr_cg_root ? r->cg_root[i] : r->cg_join[i - r->nr_cg_root];

		r->cg_fds[i] = open(path, O_WRONLY | O_CLOEXEC);
		if (r->cg_fds[i] < 0) {
			int err = -errno;

			r->nr_cg_fds = i;
			return fail(err, "cannot open %s: %s", path, strerror(-err));
		}
	}
	r->nr_cg_fds = n;
	return 0;
}

void cgroups_close_join(struct rst *r)
{
	for (size_t i = 0; i < r->nr_cg_fds; i++)
		close(r->cg_fds[i]);
	free(r->cg_fds);
	r->cg_fds = NULL;
	r->nr_cg_fds = 0;
}

static int join_fd(int fd, const char *path, char *why, size_t len)
{
	if (write(fd, "0", 1) == 1)
		return 0;
	snprintf(why, len, "cannot write '0' to %s: %s", path, strerror(errno));
	return -errno;
}

int cgroups_join_in_child(struct rst *r, char *why, size_t len)
{
	int ret = 0;

	if (r->nr_cg_fds != r->nr_cg_root + r->nr_cg_join)
		return 0;	/* not opened: nothing to join */
	for (size_t i = 0; i < r->nr_cg_root && !ret; i++)
		ret = join_fd(r->cg_fds[i], r->cg_root[i], why, len);
	if (!ret && r->nr_cg_root && unshare(CLONE_NEWCGROUP)) {
		ret = -errno;
		snprintf(why, len, "cannot create a cgroup namespace: %s", strerror(errno));
	}
	for (size_t i = 0; i < r->nr_cg_join && !ret; i++)
		ret = join_fd(r->cg_fds[r->nr_cg_root + i], r->cg_join[i], why, len);
	return ret;
}


/* Before anything starts: cgroup.img loaded, each cgroup of the process joinable here. */
int cgroups_check_join(struct rst *r)
{
	const TaskCoreEntry *tc = r->leader->tc;
	int ret = cgroups_load(r);

	if (ret || r->o->cg_mode == CG_MODE_IGNORE)
		return ret;	/* --manage-cgroups ignore: it stays in memdump's cgroups */
	if (tc->cgroup && tc->cgroup_ns)
		ret = check_cgroup_ns(r, tc->cgroup, tc->cgroup_ns);
	else if (tc->cgroup)
		ret = check_cgroups(r, tc->cgroup);
	/* before the files are checked: one may be a cgroup it makes again */
	if (!ret && r->cg_early)
		ret = cgroups_recreate(r);
	return ret;
}

static void free_list(char ***list, size_t *nr)
{
	for (size_t i = 0; i < *nr; i++)
		free((*list)[i]);
	free(*list);
	*list = NULL;
	*nr = 0;
}

void cgroups_join_free(struct rst *r)
{
	cgroups_close_join(r);
	cgroups_forget(r);
	free_list(&r->cg_join, &r->nr_cg_join);
	free_list(&r->cg_root, &r->nr_cg_root);
}
