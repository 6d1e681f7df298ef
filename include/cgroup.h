/* Cgroup membership: the lines of /proc/PID/cgroup, and where to join one. */
#ifndef MEMDUMP_CGROUP_H
#define MEMDUMP_CGROUP_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The line of own_text (memdump's /proc/self/cgroup) for the same hierarchy
 * as line ("ID:controllers:path"), copied into out; -ENOENT if none.
 */
int cgroup_own_line(const char *own_text, const char *line, char *out, size_t len);
/*
 * The cgroup.procs file that puts a process into the cgroup of line, found
 * through /proc/self/mountinfo (a mount of that hierarchy's root);
 * -ENOENT when the hierarchy is not mounted here or the cgroup is gone.
 */
int cgroup_procs_path(const char *line, char *out, size_t len);
/* The mount point of the hierarchy of ctl ("cpu,cpuacct", "name=x", "" for v2); -ENOENT: none. */
int cgroup_mount_of(const char *ctl, char *mnt, size_t len);
/* The same from mountinfo, memdump's /proc/self/mountinfo read once for many (NULL: read now). */
int cgroup_mount_in(const char *mountinfo, const char *ctl, char *mnt, size_t len);
/* The directory of line's cgroup under a mount of its hierarchy (it may not exist). */
int cgroup_dir_path(const char *line, char *out, size_t len);
/* Is path ("/a/b") memdump's own cgroup in the hierarchy of ctl, or above it? */
bool cgroup_own_or_above(const char *ctl, const char *path);
/* Is ctrl one of line's controllers? "" names the v2 hierarchy (no controllers). */
bool cgroup_line_has(const char *line, const char *ctrl);
/*
 * line with its path moved from under base (the path of the same hierarchy
 * in base_text, another process's /proc/PID/cgroup) to under newroot, into
 * out; -EINVAL when line's path is not base's or below it.
 */
int cgroup_rebase(const char *line, const char *base_text, const char *newroot, char *out,
		  size_t len);

#endif
