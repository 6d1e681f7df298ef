/*
 * The process tree under a dump's target: the target and every descendant,
 * read from /proc/PID/task/TID/children until two passes agree.
 */
#ifndef MEMDUMP_TREE_H
#define MEMDUMP_TREE_H

#include <sys/types.h>

struct tree_proc {
	pid_t pid, ppid, pgid, sid;
	pid_t tracer;		/* TracerPid, 0: untraced */
	char state;		/* /proc/PID/stat state ('Z': zombie) */
	char comm[32];
};

struct proc_tree {
	struct tree_proc *procs;	/* the root first, every parent before its children */
	int n;
};

#define TREE_MAX_PROCS	4096
#define TREE_MAX_PASSES	16

/*
 * 0 with the tree under root (root alone when it has no child), or -errno,
 * nothing recorded with fail() (the caller words it): -ESRCH root is gone,
 * -E2BIG more than TREE_MAX_PROCS, -EAGAIN still changing after
 * TREE_MAX_PASSES passes, -ENOMEM.
 */
int tree_collect(pid_t root, struct proc_tree *t);
void tree_free(struct proc_tree *t);

#endif
