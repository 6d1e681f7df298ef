/*
 * Restore of a cwd in the /proc directory of a process that exited
 * (proccwd.h): a stand-in with its PID (one for the processes of a tree in
 * the same one) lives from before the process is forked until every process
 * is parked; the process changes into its /proc
 * directory by the fd memdump opened (child.c), then the stand-in is killed
 * and reaped, which unhashes the directory again.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/sched.h>

#include "ctx/restore_ctx.h"
#include "files/proccwd.h"
#include "log.h"

int proccwd_check(struct rst *r, const RemapFilePathEntry *re)
{
	const FileEntry *fe = rst_file(r, re->orig_id);
	char want[32];

	snprintf(want, sizeof(want), "/proc/%u", re->remap_id);
	if (!fe || fe->type != FD_TYPES__REG || !fe->reg || !fe->reg->name ||
	    strcmp(fe->reg->name, want) || !re->remap_id || re->remap_id > (uint32_t)INT32_MAX)
		return fail(-EIO, "remap-fpath.img: file %u, remapped to the /proc directory of "
			    "process %u, is not its REG entry %s", re->orig_id, re->remap_id, want);
	if (!r->ds.fs || r->ds.fs->cwd_id != re->orig_id)
		return fail(-EOPNOTSUPP, "file %s, the /proc directory of a process that exited, is "
			    "not the cwd: memdump makes only a cwd of that kind again", want);
	if (r->ds.pstree && r->ds.pstree->n_ns_threads)
		return fail(-EOPNOTSUPP, "the cwd %s, the /proc directory of a process that "
			    "exited, in a PID namespace of its own: memdump cannot make it again",
			    want);
	if (!kill((pid_t)re->remap_id, 0) || errno != ESRCH)
		return fail(-EEXIST, "the cwd %s (deleted), the /proc directory of process %u that "
			    "exited, needs its PID for a moment, and PID %u is in use", want,
			    re->remap_id, re->remap_id);
	return 0;
}

/* The stand-in: nothing but its PID, until memdump kills it (or dies). */
static void __attribute__((noreturn)) stand_in(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	syscall(SYS_close_range, 0, ~0U, 0);	/* no copy of memdump's files */
	for (;;)
		pause();
}

static pid_t fork_stand_in(pid_t pid)
{
	struct clone_args ca = { .exit_signal = SIGCHLD, .set_tid = (uintptr_t)&pid,
				 .set_tid_size = 1 };
	pid_t parent = getpid(), s = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));

	if (s == 0)
		stand_in(parent);
	return s;
}

/* Has another process of r's tree (prepared before it) a stand-in with PID gone? */
static bool tree_has_stand_in(struct rst *r, pid_t gone)
{
	struct rst *root = r;

	while (root->tree_parent)
		root = root->tree_parent;
	if (root != r && root->cwd_standin == gone)
		return true;
	for (size_t i = 0; i < tree_size(root); i++)
		if (tree_member(root, i) != r && tree_member(root, i)->cwd_standin == gone)
			return true;
	return false;
}

int proccwd_open(struct rst *r)
{
	const RemapFilePathEntry *re = r->ds.fs ? dumpset_remap(&r->ds, r->ds.fs->cwd_id) : NULL;
	char path[32];
	pid_t s;

	if (!re || !re->has_remap_type || re->remap_type != REMAP_TYPE__PROCFS)
		return 0;
	s = (pid_t)re->remap_id;
	if (!tree_has_stand_in(r, s)) {		/* the tree's processes share one */
		s = fork_stand_in(s);
		if (s < 0)
			return fail(-errno, "cannot make a stand-in with PID %u for the cwd "
				    "/proc/%u (deleted): %s", re->remap_id, re->remap_id,
				    strerror(errno));
		r->cwd_standin = s;
	}
	snprintf(path, sizeof(path), "/proc/%d", s);
	r->cwd_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (r->cwd_fd < 0)
		return fail(-errno, "cannot open %s, the cwd to be: %s", path, strerror(errno));
	pr_debug("cwd %s: stand-in %d until the process is parked", path, s);
	return 0;
}

void proccwd_end(struct rst *r)
{
	if (r->cwd_standin <= 0)
		return;
	kill(r->cwd_standin, SIGKILL);
	while (waitpid(r->cwd_standin, NULL, 0) < 0 && errno == EINTR)
		;
	r->cwd_standin = 0;
}
