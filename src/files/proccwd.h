/*
 * A cwd in the /proc/PID directory of a process that exited (zdtm
 * unhashed_proc): the directory is unhashed, /proc/self/cwd reads
 * "/proc/PID (deleted)" and getcwd() fails with ENOENT. Nothing makes such a
 * directory but a process with that PID that exits: the restored process,
 * in its namespaces and root, makes a stand-in of its own with the PID
 * (clone3 set_tid; no exit signal, as every signal is blocked until it
 * runs), changes into /proc/PID (child.c), then kills and reaps it: the
 * directory is unhashed again before the process runs.
 *
 * In the images the cwd's REG entry names /proc/PID and remap-fpath.img
 * remaps it as PROCFS, remap_id the PID (as CRIU writes it).
 *
 * In memdump's PID namespace on memdump's /proc, mount namespace and root
 * (the PID checked free before the restore), or in a PID namespace of its
 * own (the restore makes it new) on that namespace's /proc, which its root
 * shows (zdtm unhashed_proc in the ns flavour). Others are refused.
 */
#ifndef MEMDUMP_PROCCWD_H
#define MEMDUMP_PROCCWD_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "remap-file-path.pb-c.h"

struct rst;

/* The PID of a path "/proc/PID (deleted)" (a /proc link's reading); 0: not one. */
pid_t proccwd_pid(const char *name);
/*
 * Why process pid's cwd st, the /proc directory of a process gone, cannot be
 * made again by a restore; NULL: it can.
 */
const char *proccwd_unsupported(pid_t pid, const char *name, const struct stat *st);

/*
 * An fd on the /proc/PID directory of a process that exited, or a file in
 * it (zdtm remap_dead_pid, remap_dead_pid_root; found by pidns_gone_proc()):
 * its REG entry names /proc/PID or /proc/PID/FILE, remapped as PROCFS to PID.
 * The restored process opens it itself, in its namespaces and root, while a
 * stand-in of its own with that PID exists, then kills and reaps the
 * stand-in (its /proc directory unhashed again) before it opens anything else.
 * The stand-in takes the ids the file showed (a file's are its process's, a
 * directory's root's once the process is gone). Why file link of process
 * gone cannot be made so; NULL: it can.
 */
const char *proccwd_fd_unsupported(pid_t gone, const char *link);

/* Restore (proccwd_restore.c) */

/* remap-fpath.img's PROCFS entry re: the process's cwd, its PID free, in memdump's namespace. */
int proccwd_check(struct rst *r, const RemapFilePathEntry *re);
/* Is fe a file of a PROCFS remap other than the cwd (an fd's: opened by the process)? */
bool proccwd_is_fd(struct rst *r, uint32_t file_id);
/*
 * In the restored process: a stand-in of its own with the PID of file_id's
 * PROCFS remap (-errno: -EEXIST, the PID in use; 0: memdump's stand-in for a
 * cwd has it), and its end, killed and reaped.
 */
pid_t proccwd_fd_stand_in(struct rst *r, uint32_t file_id);
void proccwd_fd_stand_in_end(pid_t s);
/*
 * In the restored process: its cwd, when a PROCFS remap's in a PID namespace
 * of its own (1), else nothing (0); -errno.
 */
int proccwd_chdir_in_child(struct rst *r);

#endif
