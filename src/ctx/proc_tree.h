/*
 * The process tree under a dump's target: the target and every descendant,
 * read from /proc/PID/task/TID/children until two passes agree.
 */
#ifndef MEMDUMP_PROC_TREE_H
#define MEMDUMP_PROC_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct tree_proc {
	pid_t pid, ppid, pgid, sid;
	pid_t tracer;		/* TracerPid, 0: untraced */
	char state;		/* /proc/PID/stat state ('Z': zombie) */
	int exit_signal;	/* what its parent gets when it exits */
	int exit_code;		/* a zombie's wait status, else 0 */
	int nr_threads;		/* in /proc/PID/task: a dead leader's live threads too */
	char comm[32];
};

/* A socket a process of the tree holds (one per fd table entry's inode and process). */
struct tree_sk {
	uint64_t ino;
	pid_t pid;
};

struct proc_tree {
	struct tree_proc *procs;	/* the root first, every parent before its children */
	int n;
	/* the socket inodes its live processes hold, sorted by inode: read once the tree
	 * is frozen (files/sockets.c, sk_tree_index), NULL until then */
	struct tree_sk *sk;
	size_t nr_sk;
};

/* A live process of a dumped tree as the root's pstree.img lists it (treedump.c). */
struct tree_pstree {
	pid_t pid, ppid, pgid, sid;
	pid_t *tids;
	int nr_tids;
};

#define TREE_MAX_PROCS	4096
#define TREE_MAX_PASSES	16

/* A zombie proper: 'Z', and no thread of it alive (a leader that exited alone shows 'Z'). */
static inline bool tree_is_zombie(const struct tree_proc *p)
{
	return p->state == 'Z' && p->nr_threads <= 1;
}

/*
 * 0 with the tree under root (root alone when it has no child), or -errno,
 * nothing recorded with fail() (the caller words it): -ESRCH root is gone,
 * -E2BIG more than TREE_MAX_PROCS, -EAGAIN still changing after
 * TREE_MAX_PASSES passes, -ENOMEM.
 */
int tree_collect(pid_t root, struct proc_tree *t);
void tree_free(struct proc_tree *t);
/* The same processes, parents and zombies in both? */
bool tree_same(const struct proc_tree *a, const struct proc_tree *b);
/* True, with the tree in t, when pid has a live process below it (a tree dump). */
bool tree_live_below(pid_t pid, struct proc_tree *t);

#endif
