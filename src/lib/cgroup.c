/*
 * Cgroup membership, from /proc/PID/cgroup lines "ID:controllers:path"
 * (v1 hierarchies by their controllers or name=, v2 as "0::path"), and the
 * cgroup.procs file of the same cgroup under a mount of its hierarchy.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/mount.h>

#include "cgroup.h"
#include "common.h"
#include "proc.h"

/* "ID:controllers:" of a line: the hierarchy it names */
static size_t hierarchy_len(const char *line)
{
	const char *c = strchr(line, ':');

	c = c ? strchr(c + 1, ':') : NULL;
	return c ? (size_t)(c - line) + 1 : 0;
}

int cgroup_own_line(const char *own_text, const char *line, char *out, size_t len)
{
	size_t h = hierarchy_len(line);

	for (const char *p = own_text; h && p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, line, h)) {
			snprintf(out, len, "%.*s", (int)strcspn(p, "\n"), p);
			return 0;
		}
	}
	return -ENOENT;
}

/* Every comma-separated item of want is among the mount's super options. */
static bool has_options(const char *opts, const char *want, size_t wlen)
{
	char o[600];

	if (strlen(opts) > sizeof(o) - 3)
		return false;
	snprintf(o, sizeof(o), ",%.512s,", opts);
	for (const char *w = want; w < want + wlen;) {
		size_t n = MIN(strcspn(w, ","), (size_t)(want + wlen - w));
		char item[128];

		if (n >= sizeof(item) - 2)
			return false;
		snprintf(item, sizeof(item), ",%.*s,", (int)n, w);
		if (!strstr(o, item))
			return false;
		w += n + 1;
	}
	return true;
}

/* Is this mountinfo line a mount of the hierarchy's root? Its mount point into mnt. */
static bool hierarchy_root_line(const char *line, const char *ctl, size_t clen, char *mnt,
				size_t len)
{
	char root[256], point[256], fstype[32], opts[512];
	const char *dash = strstr(line, " - ");

	if (!dash || sscanf(line, "%*s %*s %*s %255s %255s", root, point) != 2 ||
	    sscanf(dash + 3, "%31s %*s %511s", fstype, opts) != 2 || strcmp(root, "/"))
		return false;
	if (clen ? !strcmp(fstype, "cgroup") && has_options(opts, ctl, clen)
		 : !strcmp(fstype, "cgroup2")) {
		snprintf(mnt, len, "%s", point);
		return true;
	}
	return false;
}

/*
 * The mount point of the hierarchy's root in mountinfo (memdump's own, read
 * now when NULL): cgroup2 for an empty controller list.
 */
static int mounted_hierarchy(const char *mountinfo, const char *ctl, size_t clen, char *mnt,
			     size_t len)
{
	char *text = NULL, line[2048];
	int ret = -ENOENT;

	if (!mountinfo && proc_read_file("/proc/self/mountinfo", &text) < 0)
		return -EIO;
	for (const char *p = mountinfo ? mountinfo : text; p && *p && ret;
	     p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		size_t n = strcspn(p, "\n");

		if (n < sizeof(line)) {
			memcpy(line, p, n);
			line[n] = 0;
			if (hierarchy_root_line(line, ctl, clen, mnt, len))
				ret = 0;
		}
	}
	free(text);
	return ret;
}

/* memdump is in a cgroup of the v1 hierarchy ctl: this machine has it. */
static bool hierarchy_exists(const char *ctl, size_t clen)
{
	char own[4096];

	if (!clen || read_small_at(AT_FDCWD, "/proc/self/cgroup", own, sizeof(own)))
		return false;
	for (const char *p = own; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		const char *c = strchr(p, ':');

		if (c && !strncmp(c + 1, ctl, clen) && c[clen + 1] == ':')
			return true;
	}
	return false;
}

/* A new detached mount of the v1 hierarchy ctl ("cpu,cpuacct", "name=x"), its fd. */
static int detached_mount(const char *ctl, size_t clen)
{
	int fs = (int)syscall(SYS_fsopen, "cgroup", FSOPEN_CLOEXEC), mfd = -1, ret = 0;
	bool named_only = true;

	if (fs < 0)
		return -errno;
	for (const char *w = ctl; w < ctl + clen && !ret; w += strcspn(w, ",:") + 1) {
		char item[128];
		size_t n = MIN(strcspn(w, ",:"), (size_t)(ctl + clen - w));

		snprintf(item, sizeof(item), "%.*s", (int)n, w);
		if (!strncmp(item, "name=", 5))
			ret = (int)syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "name", item + 5, 0);
		else
			ret = (int)syscall(SYS_fsconfig, fs, FSCONFIG_SET_FLAG, item, NULL, 0);
		named_only &= !strncmp(item, "name=", 5);
	}
	if (!ret && named_only)
		ret = (int)syscall(SYS_fsconfig, fs, FSCONFIG_SET_FLAG, "none", NULL, 0);
	if (!ret)
		ret = (int)syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0);
	if (!ret)
		mfd = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, 0);
	ret = mfd < 0 ? -errno : mfd;
	close(fs);
	return ret;
}

/*
 * A v1 hierarchy this machine has but no mount shows (zdtm's tests umount
 * theirs once they joined): a detached mount of it, kept open for the rest
 * of memdump's run (not in any mount namespace: nothing to clean up), seen
 * through /proc/self/fd. One per hierarchy, reused.
 */
static int unmounted_hierarchy(const char *ctl, size_t clen, char *mnt, size_t len)
{
	static struct { char ctl[128]; int fd; } kept[16];
	static int nr_kept;
	int i, fd;

	if (clen >= sizeof(kept[0].ctl) || !hierarchy_exists(ctl, clen))
		return -ENOENT;
	for (i = 0; i < nr_kept; i++)
		if (strlen(kept[i].ctl) == clen && !strncmp(kept[i].ctl, ctl, clen))
			break;
	if (i == nr_kept) {
		if (nr_kept == (int)ARRAY_SIZE(kept) || (fd = detached_mount(ctl, clen)) < 0)
			return -ENOENT;
		snprintf(kept[i].ctl, sizeof(kept[i].ctl), "%.*s", (int)clen, ctl);
		kept[i].fd = fd;
		nr_kept++;
	}
	snprintf(mnt, len, "/proc/self/fd/%d", kept[i].fd);
	return 0;
}

static int hierarchy_mount(const char *mountinfo, const char *ctl, size_t clen, char *mnt,
			   size_t len)
{
	int ret = mounted_hierarchy(mountinfo, ctl, clen, mnt, len);

	return ret == -ENOENT ? unmounted_hierarchy(ctl, clen, mnt, len) : ret;
}

int cgroup_mount_of(const char *ctl, char *mnt, size_t len)
{
	return hierarchy_mount(NULL, ctl, strlen(ctl), mnt, len);
}

int cgroup_mount_in(const char *mountinfo, const char *ctl, char *mnt, size_t len)
{
	return hierarchy_mount(mountinfo, ctl, strlen(ctl), mnt, len);
}

int cgroup_dir_path(const char *line, char *out, size_t len)
{
	const char *ctl = strchr(line, ':'), *path;
	char mnt[256];
	int ret;

	path = ctl ? strchr(ctl + 1, ':') : NULL;
	if (!path)
		return -EINVAL;
	ctl++;
	ret = hierarchy_mount(NULL, ctl, path - ctl, mnt, sizeof(mnt));
	if (ret)
		return ret;
	path++;
	if ((size_t)snprintf(out, len, "%s%.*s", mnt, (int)strcspn(path, "\n"), path) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int cgroup_procs_path(const char *line, char *out, size_t len)
{
	char dir[1024];
	int ret = cgroup_dir_path(line, dir, sizeof(dir));

	if (ret)
		return ret;
	if ((size_t)snprintf(out, len, "%s/cgroup.procs", dir) >= len)
		return -ENAMETOOLONG;
	return access(out, W_OK) ? -errno : 0;
}

bool cgroup_line_has(const char *line, const char *ctrl)
{
	const char *ctl = strchr(line, ':'), *end;
	size_t n = strlen(ctrl);

	end = ctl ? strchr(ctl + 1, ':') : NULL;
	if (!end)
		return false;
	ctl++;
	if (!n)
		return ctl == end;
	for (const char *c = ctl; c < end; c += strcspn(c, ",:") + 1)
		if ((size_t)(MIN(strcspn(c, ",:"), (size_t)(end - c))) == n && !strncmp(c, ctrl, n))
			return true;
	return false;
}

int cgroup_rebase(const char *line, const char *base_text, const char *newroot, char *out,
		  size_t len)
{
	char base[1024];
	size_t h = hierarchy_len(line), nb;
	const char *path, *bpath, *rest;

	if (!h || cgroup_own_line(base_text, line, base, sizeof(base)))
		return -EINVAL;
	path = line + h;
	bpath = base + h;
	nb = strcmp(bpath, "/") ? strlen(bpath) : 0;
	if (strncmp(path, bpath, nb) || (path[nb] && path[nb] != '/' && path[nb] != '\n'))
		return -EINVAL;
	rest = path + nb;
	if (!*rest || *rest == '\n')
		rest = "";
	if ((size_t)snprintf(out, len, "%.*s%s%.*s", (int)h, line,
			     strcmp(newroot, "/") || !*rest ? newroot : "", (int)strcspn(rest, "\n"),
			     rest) >= len)
		return -ENAMETOOLONG;
	return 0;
}

bool cgroup_own_or_above(const char *ctl, const char *path)
{
	char own[4096], *p, *c;
	size_t n = strlen(ctl), l = strlen(path);

	if (read_small_at(AT_FDCWD, "/proc/self/cgroup", own, sizeof(own)))
		return false;
	for (p = own; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		c = strchr(p, ':');
		if (!c || strncmp(c + 1, ctl, n) || c[n + 1] != ':')
			continue;
		c += n + 2;
		c[strcspn(c, "\n")] = 0;
		if (!strcmp(path, "/"))
			return true;
		return !strncmp(c, path, l) && (c[l] == 0 || c[l] == '/');
	}
	return false;
}
