/*
 * Restore of a cwd in the /proc directory of a process that exited, or of an
 * fd on it or a file in it (proccwd.h): the restored process, in its
 * namespaces and root, makes a stand-in of its own with that PID (one after
 * the other when processes of a tree want the same), changes into its /proc
 * directory or opens the file, then kills and reaps it, which unhashes the
 * directory again.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>
#include <linux/sched.h>

#include "ctx/restore_ctx.h"
#include "files/proccwd.h"
#include "log.h"

/* Is name /proc/PID or a path in it (no . or .. step), the REG entry of a PROCFS remap to PID? */
static bool names_pid_dir(const char *name, uint32_t pid)
{
	char want[32];
	int n = snprintf(want, sizeof(want), "/proc/%u", pid);

	return name && !strncmp(name, want, n) && (!name[n] || (name[n] == '/' && name[n + 1] &&
							       !strstr(name + n, "/.")));
}

/* An fd's (not the cwd's): its PID free where the process is restored. */
static int check_fd(struct rst *r, const RemapFilePathEntry *re, const char *name)
{
	if (r->ds.pstree && r->ds.pstree->n_ns_threads)
		return 0;	/* a PID namespace the restore makes: nothing but the tree in it */
	if (!kill((pid_t)re->remap_id, 0) || errno != ESRCH)
		return fail(-EEXIST, "file %s, of process %u that exited, needs PID %u for a "
			    "moment, and PID %u is in use", name, re->remap_id, re->remap_id,
			    re->remap_id);
	return 0;
}

int proccwd_check(struct rst *r, const RemapFilePathEntry *re)
{
	const FileEntry *fe = rst_file(r, re->orig_id);
	char want[32];

	snprintf(want, sizeof(want), "/proc/%u", re->remap_id);
	if (!fe || fe->type != FD_TYPES__REG || !fe->reg ||
	    !names_pid_dir(fe->reg->name, re->remap_id) || fe->reg->deleted_name ||
	    !re->remap_id || re->remap_id > (uint32_t)INT32_MAX)
		return fail(-EIO, "remap-fpath.img: file %u, remapped to the /proc directory of "
			    "process %u, is not its REG entry %s", re->orig_id, re->remap_id, want);
	if (!r->ds.fs || r->ds.fs->cwd_id != re->orig_id)
		return check_fd(r, re, fe->reg->name);
	if (strcmp(fe->reg->name, want))
		return fail(-EIO, "remap-fpath.img: the cwd %s is remapped to the /proc directory "
			    "of process %u", fe->reg->name, re->remap_id);
	if (r->ds.pstree && r->ds.pstree->n_ns_threads)
		return 0;	/* a PID namespace the restore makes: the process's own stand-in */
	if (!kill((pid_t)re->remap_id, 0) || errno != ESRCH)
		return fail(-EEXIST, "the cwd %s (deleted), the /proc directory of process %u that "
			    "exited, needs its PID for a moment, and PID %u is in use", want,
			    re->remap_id, re->remap_id);
	return 0;
}

bool proccwd_is_fd(struct rst *r, uint32_t file_id)
{
	const RemapFilePathEntry *re = dumpset_remap(&r->ds, file_id);

	return re && re->has_remap_type && re->remap_type == REMAP_TYPE__PROCFS &&
	       !(r->ds.fs && r->ds.fs->cwd_id == file_id);
}

/*
 * The restored process's own stand-in: the ids re's file showed, dumpable
 * (else /proc shows its files root's), then ready (a byte on ready).
 */
static void __attribute__((noreturn)) own_stand_in(const RemapFilePathEntry *re, int ready)
{
	uid_t uid = re->has_proc_uid ? re->proc_uid : 0;
	gid_t gid = re->has_proc_gid ? re->proc_gid : 0;

	if (setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid) ||
	    prctl(PR_SET_DUMPABLE, 1) || write(ready, "", 1) != 1)
		_exit(1);
	close(ready);
	for (;;)
		pause();
}

/* No signal when it dies: the process blocks every signal until it runs, one would stay pending. */
static pid_t fork_own_stand_in(const RemapFilePathEntry *re)
{
	pid_t pid = (pid_t)re->remap_id;
	struct clone_args ca = { .exit_signal = 0, .set_tid = (uintptr_t)&pid, .set_tid_size = 1 };
	int p[2], err;
	char c;
	pid_t s;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	s = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (s == 0) {
		close(p[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		own_stand_in(re, p[1]);
	}
	err = s < 0 ? -errno : 0;
	close(p[1]);
	if (!err && read(p[0], &c, 1) != 1) {	/* it died before it was ready */
		proccwd_fd_stand_in_end(s);
		err = -ECHILD;
	}
	close(p[0]);
	return err ? err : s;
}

/*
 * In a tree, two processes may want the same PID at once (each its own
 * stand-in): the second waits a little for the first's to be reaped.
 */
pid_t proccwd_fd_stand_in(struct rst *r, uint32_t file_id)
{
	const RemapFilePathEntry *rm = dumpset_remap(&r->ds, file_id);
	struct timespec ms = { 0, 1000000 };
	pid_t s = -EEXIST;

	for (int i = 0; rm && s == -EEXIST && i < 1000; i++) {
		s = fork_own_stand_in(rm);
		if (s == -EEXIST && r->tree_parent == NULL && !r->tree)
			break;	/* no other process of a tree: the PID is taken */
		if (s == -EEXIST)
			nanosleep(&ms, NULL);
	}
	return rm ? s : -EIO;
}

int proccwd_chdir_in_child(struct rst *r)
{
	uint32_t id = r->ds.fs ? r->ds.fs->cwd_id : 0;
	const RemapFilePathEntry *re = id ? dumpset_remap(&r->ds, id) : NULL;
	const FileEntry *fe = re ? rst_file(r, id) : NULL;
	pid_t s;
	int err;

	if (!re || !re->has_remap_type || re->remap_type != REMAP_TYPE__PROCFS || !fe || !fe->reg)
		return 0;
	s = proccwd_fd_stand_in(r, id);
	if (s < 0)
		return s;
	err = chdir(fe->reg->name) ? -errno : 1;
	proccwd_fd_stand_in_end(s);	/* /proc/PID unhashed again: the cwd reads "(deleted)" */
	return err;
}

void proccwd_fd_stand_in_end(pid_t s)
{
	kill(s, SIGKILL);
	while (waitpid(s, NULL, __WALL) < 0 && errno == EINTR)
		;
}
