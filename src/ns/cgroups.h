/* cgroup.img: the process's cgroups and their properties (cgroups.c). */
#ifndef MEMDUMP_DUMP_CGROUPS_H
#define MEMDUMP_DUMP_CGROUPS_H

#include "ctx/dump_ctx.h"
#include "ctx/restore_ctx.h"

#define CG_SET_ID	1	/* the one set of a process: TaskCoreEntry.cg_set */

/*
 * Written from the process's /proc/PID/cgroup text and each thread's (a
 * thread in other cgroups gets a set of its own: d->threads[i].cg_set).
 */
int write_cgroups(struct dump_ctx *d, const char *cgroup_text);

/* Restore (its _restore.c files) */

/* cgroups.c: the process's cgroups recreated from cgroup.img (--manage-cgroups) */
enum cg_mode { CG_MODE_SOFT, CG_MODE_FULL, CG_MODE_STRICT, CG_MODE_IGNORE };
/* CRIU's mode names (none: ignore; NULL or "": soft); -EINVAL if unknown. */
int cg_mode_parse(const char *s);
int cgroups_load(struct rst *r);
/*
 * The cgroup.procs file of line's cgroup: an existing one, or one the restore
 * will create (its hierarchy is in cgroup.img and the path creatable here).
 */
int cgroups_procs(struct rst *r, const char *line, char *procs, size_t len);
/* Before the fork: every missing directory of its cgroups made, properties set. */
int cgroups_recreate(struct rst *r);
/* Parked, before they run: each thread in other cgroups than its leader moved there. */
int cgroups_move_threads(struct rst *r);
/* The directory (dev, ino) is one this restore made (a file on it is not "replaced"). */
bool cgroups_made_inode(const struct rst *r, dev_t dev, ino_t ino);
/* After a failed restore: the directories it made removed again. */
void cgroups_undo(struct rst *r);
void cgroups_forget(struct rst *r);
/*
 * cgroups_join_restore.c: each cgroup of the process joinable here (checked
 * before anything starts); line moved under its --cgroup-root if one is
 * given; its cgroup.procs files opened before the fork; joined by the child
 * first (its cgroup namespace's root, the unshare, the others).
 */
int cgroups_check_join(struct rst *r);
int cgroups_map_root(const struct rst *r, const char *line, char *out, size_t len);
int cgroups_open_join(struct rst *r);
void cgroups_close_join(struct rst *r);
int cgroups_join_in_child(struct rst *r, char *why, size_t len);
void cgroups_join_free(struct rst *r);

#endif
