/*
 * struct rst: the state of one process's restore, which the kinds of state
 * (mem/, files/, evloop/, net/, ns/, task/) fill and use and the pipeline
 * (restore/) drives; struct restore_opts, what the caller asked; and what
 * the parts give each other (the tree's shared objects, lookups). The area
 * layout shared with the restorer blob is in restorer.h. The kinds include
 * this, never the pipeline's restore/restore.h.
 */
#ifndef MEMDUMP_RESTORE_CTX_H
#define MEMDUMP_RESTORE_CTX_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "hooks.h"
#include "mntext.h"
#include "image/dumpset.h"
#include "image/hash.h"
#include "restorer.h"
#include "sk-packet.pb-c.h"
#include "tcp-stream.pb-c.h"
#include "mnt.pb-c.h"

/* What the caller asks of one restore. */
struct restore_opts {
	const char *dir;		/* -D */
	bool detach;			/* -d: print the PID and return */
	const char *pidfile;		/* --pidfile */
	bool shell_job;			/* --shell-job: the dump's terminal becomes memdump's */
	const struct hooks *hooks;	/* pre-restore, post-restore ... (hooks.h), or NULL */
	pid_t *pid_out;			/* -d: the PID goes here instead of stdout */
	struct ns_join {		/* --join-ns KIND:PATH */
		const char *kind, *path;
	} join_ns[4];
	int nr_join_ns;
	struct veth_ext {		/* --external veth[IN]:OUT[@BRIDGE] */
		const char *in, *out, *bridge;
	} veth_ext[8];
	int nr_veth_ext;
	const char *root;		/* --root: where a dumped mount namespace's root is */
	bool sibling;			/* --restore-sibling: memdump's parent's child (detached) */
	const struct mnt_ext *mnt_ext;	/* --external mnt[KEY]:PATH (mntext.h) */
	int nr_mnt_ext;
	struct cg_root_map {		/* --cgroup-root [CTRL:]PATH (RPC cg_root, as CRIU's) */
		const char *ctrl;	/* a controller, "" the v2 hierarchy, NULL every other */
		const char *path;	/* where the tree's root cgroup goes, the rest below it */
	} cg_root_map[16];
	int nr_cg_root_map;
	int cg_mode;			/* --manage-cgroups: enum cg_mode */
	struct inherit_fd {		/* --inherit-fd fd[N]:KEY (RPC inherit_fd, as CRIU's) */
		const char *key;	/* pipe:[INO]: that pipe of the dump is memdump's fd N; */
		int fd;			/* tty[RDEV:DEV]: that pty slave (its master was */
	} inherit_fd[8];		/* outside) is memdump's terminal N */
	int nr_inherit_fd;
	bool orphan_pts;		/* RPC orphan_pts_master: such a slave gets a new pair,
					 * its master handed to the hooks (give_fd) */
	bool empty_net;			/* RPC empty_ns CLONE_NEWNET: a new network namespace with
					 * lo only, a runtime's hook sets up the rest (CRIU's) */
	bool lazy;			/* --lazy-pages: private anon memory filled by a handler */
	bool tcp_close;			/* --tcp-close: TCP connections come back closed (CRIU's) */
};


/* One fd number of the restored process. */
struct rfd {
	uint32_t id;		/* its file entry */
	int src;		/* memdump's fd with the open file description */
	int target;		/* its number in the restored process */
	bool cloexec;
	const PidfdEntry *pidfd;	/* a pidfd of a process of the dump: the child opens it */
	const RegFileEntry *proc_reg;	/* a /proc file of a process of the dump: likewise */
	const NsFileEntry *nsf;		/* a file of one of its namespaces: likewise */
};

/* An open file description prepared for the target, by file id. */
struct rdesc {
	uint32_t id;
	int fd;			/* in memdump, -1 until opened */
};

/* A shared memory object: MAP_SHARED|MAP_ANONYMOUS memory or a memfd. */
struct shm_obj {
	uint64_t shmid;			/* inode at dump time: vma.shmid, memfd inode_id */
	uint64_t size;
	const MemfdInodeEntry *memfd;	/* NULL: anonymous shared memory */
	bool sized;			/* anonymous, its size from memfd.img (anon) */
	bool given;			/* its own description went to an fd (memfd_create's) */
	const struct dump_shmem *content; /* NULL: all zeros */
	int fd;				/* memdump's fd on the object, -1 */
	int blob;			/* index in the blob's fds, -1 until a VMA maps it */
	unsigned int late_seals;	/* for the blob to add, after mapping */
};

/* A pipe memdump inherited on an fd above 2 (see files.c). */
struct inherited {
	int n;			/* its number in memdump at start */
	int fd;			/* memdump's copy */
	int flags;		/* F_GETFL */
};

/* A deleted file recreated for the restore, deleted again before the process runs. */
struct rghost {
	uint32_t id;		/* remap_id */
	char *path;		/* where it was recreated */
};

/* A timerfd to arm right before the threads resume (timerfd.c). */
struct rtimer {
	int fd;			/* memdump's copy */
	const TimerfdEntry *t;
};

/* A message queued on a UNIX socket (sk-queues.img) and its bytes. */
struct sk_msg {
	SkPacketEntry *e;
	uint8_t *data;
};

/* What the forked child does on UNIX sockets before its fds move (sk_queue.c). */
enum { SK_LATE_SEND, SK_LATE_SHUTDOWN, SK_LATE_PEEK_OFF };
struct sk_late {
	int op;
	int fd;				/* memdump's fd, inherited by the child */
	int arg;			/* shutdown's how, the peek offset */
	const struct sk_msg *msg;	/* SEND */
	bool dgram;
	struct sockaddr_un to;		/* SEND to a name (tolen 0: connected) */
	socklen_t tolen;
};

/* The stand-in for the closed peer of a stream socket: sends its data, then goes. */
struct sk_helper {
	uint32_t for_id;
	int fd;
};

/* An established TCP connection in repair mode until the threads are parked. */
struct rtcp {
	int fd;				/* memdump's copy */
	TcpStreamEntry *t;
	uint8_t *data;			/* inq, then outq */
	int reuseaddr;			/* as dumped: leaving repair mode clears it */
	bool flushed;			/* its unsent data went before its FIN (closing) */
};

/* pagecheck.c: the checksums of the pages, from the memory the blob fills */
struct pagecheck {
	const struct dump_run *runs;		/* ds->runs: the blob's run indexes */
	const struct dump_run **present;	/* the runs with bytes, in file order */
	uint64_t *sums;				/* theirs, as the blob summed them */
	size_t nr_present;
	bool running;				/* the blob sums: compare once parked */
};

/* An fd of a tree's process whose description an earlier process holds (tree.c). */
struct rst_share {
	int fd;			/* its number */
	struct rst *owner;	/* the process first restored with it */
	int owner_fd;
	int src;		/* memdump's copy of the owner's prepared fd, -1 */
};

struct rst_tree;

/* A pidfd of a process that had exited, made for one process of a tree (pidfd_restore.c):
 * another process's pidfd of the same one (ino at dump time) is a copy of it. */
struct dead_pidfd {
	uint32_t ino;
	int fd;
};

struct rst {
	int log_fd;			/* in the forked process: memdump's log (child.c) */
	struct dead_pidfd *dead_pidfds;	/* the root's, for the whole tree */
	size_t nr_dead_pidfds;
	const struct restore_opts *o;
	struct dumpset ds;
	pid_t pid;
	const CoreEntry *leader;

	struct rdesc *descs;
	size_t nr_descs;
	struct rfd *fds;	/* target fds */
	size_t nr_fds;
	int *blob_fds;		/* memdump fds handed to the blob (closed by it) */
	size_t nr_blob_fds;
	int max_target_fd;

	struct shm_obj *shms;
	size_t nr_shms;

	struct inherited *inh;
	size_t nr_inh;

	struct rtimer *timers;
	size_t nr_timers;

	struct rghost *ghosts;
	size_t nr_ghosts;
	int ghost_sweep_fd;	/* the sweeper's pipe (ghost_sweep.c), 0: none */
	pid_t ghost_sweep_pid;
	struct sk_msg *sk_msgs;
	size_t nr_sk_msgs;
	struct sk_late *sk_late;
	size_t nr_sk_late;
	struct sk_helper *sk_helpers;
	size_t nr_sk_helpers;
	struct sk_gone *sk_gone;	/* names of removed files bound again (sk_unix_restore.c) */
	size_t nr_sk_gone;
	struct rtcp *tcp;
	size_t nr_tcp;

	int exe_fd;
	const char *cwd, *root;
	int cwd_fd;		/* a deleted cwd: its recreated directory, for fchdir (child.c) */
	struct CgroupEntry *cg;	/* cgroup.img, NULL: none or --manage-cgroups ignore */
	char **cg_made;		/* cgroup directories this restore created (cgroups.c) */
	size_t nr_cg_made;
	char **cg_join;		/* cgroup.procs files the child joins (attrs.c) */
	size_t nr_cg_join;
	char **cg_root;		/* a cgroup namespace's root: joined before the unshare */
	size_t nr_cg_root;
	int *cg_fds;		/* cg_root's then cg_join's cgroup.procs, open (attrs.c) */
	size_t nr_cg_fds;

	/* the restorer area */
	int area_fd;
	char *area;
	size_t area_size;
	struct rst_args *a;
	unsigned long vdso_start, vdso_len;
	bool has_vdso;
	struct pagecheck pagecheck;
	int ns_back[3];		/* memdump's own uts, ipc, net namespaces while in the target's */
	int ctty_target;	/* fd number of its controlling terminal + 1, 0: none (tty.c) */
	int ctty_src;		/* memdump's fd of it + 1 (taken before a tree's children are
				 * forked, so they have it too), 0: none */
	bool ctty_done;
	bool ctty_lone;		/* ctty_src: memdump's own slave fd (no fd of the process is it) */
	int job_fg;		/* --shell-job: target fd + 1 of the job's terminal, its group
				 * to be the foreground again, 0: none */
	int fg_src;		/* memdump's fd + 1 of the controlling terminal whose foreground
				 * group it leads again (tty_fg_early), 0: none */
	struct rst_orphan {	/* the root's: new masters of slaves whose master was outside */
		uint32_t info_id;
		int fd;
		bool given;	/* set up and handed out (hooks) */
	} orphans[4];
	size_t nr_orphans;

	/* a dumped tree (tree.c): the root holds it, every process points to it */
	struct rst_tree *tree;
	struct rst *tree_parent;	/* the process that forks this one; NULL: memdump */
	const char *tree_cgroup;	/* the tree's root's cgroups (core), NULL: r is the root */
	int tree_sync_fd;		/* in the forked child: tells its parent it is grouped */
	struct rst_share *shares;
	size_t nr_shares;
	unsigned long share_flags;	/* CLONE_FILES, CLONE_FS: its parent's tables (share.c) */
	struct rst *fdt_owner;		/* CLONE_FILES: the first process of its fd table */
	struct share_sync *share_sync;	/* in memory the whole tree shares */

	/* a mount namespace of its own (mntns.c): mountpoints-1.img, memdump's own kept */
	MntEntry **mnts;
	size_t nr_mnts;
	int mnt_back, mnt_cwd;
	char *mnt_stage;	/* a root of its own: where memdump built it (rst_path), or NULL */
	int mnt_go[2];		/* a root of its own: memdump left, the init may pivot_root */
	dev_t *mnt_devs;	/* the filesystems it mounted anew (their files have new inodes) */
	size_t nr_mnt_devs;

	/*
	 * premap_restore.c: memory it shares copy-on-write with its parent or its
	 * children, mapped and filled in its forked process before its children
	 * are forked, at premap[i] (0: VMA i is mapped by the blob as usual) in the
	 * tree's reserved range [premap_lo, premap_hi); inherited[i]: the mapping
	 * comes from its parent, only its own pages are written
	 */
	unsigned long *premap;
	bool *inherited;
	unsigned long premap_lo, premap_hi;

	int lifeline;		/* memdump's pidfd, the blob's lifeline_fd (restore/abort.c), -1 */
	bool untraced;		/* resume_seize() could not trace it: it runs with its area */
	int lazy_peer;		/* --lazy-pages: the page handler's end of the blob's socket, -1 */
};

/* restore.c: the steps of one process's restore, which tree.c takes for each */
void rst_init(struct rst *r, const struct restore_opts *o);
int rst_check_loaded(struct rst *r);	/* r->ds loaded: every check before a start */
int rst_prepare(struct rst *r);
int rst_fork_target(struct rst *r);
int rst_fire_setup_ns(const struct rst *r);	/* the hooks of its namespaces, parked */
/* ns.c: memdump's fd given for KEY by --inherit-fd fd[N]:KEY, or -1 */
int rst_inherit_fd(const struct restore_opts *o, const char *key);
int rst_wait_parked(struct rst *r);
int rst_wait_zombie_gone(pid_t id);	/* check.c: 0 free, 1 a live process has it */

/* stall.c: what a restored process has done so far, as its area tells */
struct rst_progress {
	unsigned int stage, prepped, read, creds, parked;
	unsigned long pages;
};
long rst_stall_limit_ms(void);
void rst_progress_take(const struct rst *r, struct rst_progress *p);
bool rst_progress_same(const struct rst_progress *x, const struct rst_progress *y);
int  rst_stall_fail(const struct rst *r, const struct rst_progress *p, long ms);
void rst_kill(struct rst *r);
int rst_area_error(const struct rst *r);
void rst_report(struct rst *r, uint64_t t0, uint64_t t1, uint64_t t2);
int rst_write_pidfile(const char *pidfile, pid_t pid);
int rst_detached(struct rst *r);
int rst_wait_restored(pid_t pid);
void rst_free(struct rst *r);

/*
 * tree.c: a dumped tree's other processes (DIR/proc-PID), loaded and checked;
 * restored with the root; in each forked process, its group then its children.
 */
int tree_load(struct rst *root);
int restore_tree(struct rst *root);
void tree_free_members(struct rst *r);
void tree_fork_children(struct rst *r);
/* The member i of root's tree (pstree order, the root not counted), and how many. */
struct rst *tree_member(struct rst *root, size_t i);
size_t tree_size(const struct rst *root);
/*
 * share.c: the fd table and fs a process shares with its parent (ids-PID.img),
 * loaded after tree_load(); its clone flags; in the forked processes, the
 * owner of a shared fd table and its followers wait for each other.
 */
int share_load(struct rst *root);
void share_free(struct rst *root);
unsigned long share_clone_flags(const struct rst *m);
size_t share_followers(struct rst *owner, struct rst **g, size_t max);
void share_follower_wait(struct rst *m);
void share_owner_wait(struct rst *owner, struct rst *const *g, size_t n);
void share_owner_done(struct rst *const *g, size_t n);
/* files.c's pipes: one made for an earlier process of the tree (copies), or made now */
/* A pty pair (index idx) made for a process of the tree: memdump's fd of its master, which
 * the tree keeps (not to close), or -1; put: a copy kept until the tree is forked. */
int tree_pty_get(struct rst *r, uint32_t idx);
int tree_pty_put(struct rst *r, uint32_t idx, int fd);
bool tree_pipe_get(struct rst *r, uint32_t id, int p[2]);
int tree_pipe_put(struct rst *r, uint32_t id, const int p[2]);
/* shmem.c's objects: memdump's copy of one an earlier process made (-1: none), or made now */
int tree_shm_get(struct rst *r, uint64_t shmid);
int tree_shm_put(struct rst *r, uint64_t shmid, int fd);
bool tree_shm_give(struct rst *r, uint64_t shmid);
/* sk_unix_tree.c's sockets made for the process of the tree that opens socket ino: taken
 * by it (-1: none made), kept for it, looked at */
int tree_sock_get(struct rst *r, uint32_t ino);
int tree_sock_put(struct rst *r, uint32_t ino, int fd);
/* the fd kept for socket ino, left for its process (sk_unix_tree.c), or -1 */
int tree_sock_peek(struct rst *r, uint32_t ino);
/* process i of r's tree: 0 the root, then the others in pstree order; NULL past them */
struct rst *tree_proc(struct rst *r, size_t i);
/* ghost.c's files: where an earlier process of the tree recreated deleted file dev:ino */
const char *tree_ghost_get(struct rst *r, uint32_t dev, uint64_t ino);
int tree_ghost_put(struct rst *r, uint32_t dev, uint64_t ino, const char *path);
/* Is r the first process of its tree to open FIFO id (its data goes in then)? Marks it. */
bool tree_fifo_first(struct rst *r, uint32_t id);
/* Does another process of r's tree hold an end of pipe id? */
bool tree_has_pipe(struct rst *r, uint32_t id);
/* memdump's copy of the description fd shares with an earlier process, or -1 */
int rst_share_src(const struct rst *r, int fd);
void rst_close_shares(struct rst *r);

/* restore.c: lookups and cleanup */
const FileEntry *rst_file(struct rst *r, uint32_t id);
/* Path of a regular file entry (a deleted one: where it is recreated), NULL for other types. */
const char *rst_reg_path(struct rst *r, uint32_t id);
/* A path of the process as memdump opens it: under the root memdump built for it (mntns.c). */
const char *rst_path(const struct rst *r, const char *path, char *buf, size_t len);
/* Close every fd prepared for the target (after the fork, or on failure). */
void rst_close_prepared(struct rst *r);

/*
 * mntns.c: the mount namespace, made from memdump's copy: checked at load,
 * entered (built) before anything is opened, left after the fork; its PID
 * namespace's proc mounted by the restored init (child.c).
 */
int mntns_load(struct rst *r);
int mntns_restore_enter(struct rst *r);
/* Is dev a filesystem the restore mounted anew (a tmpfs, a devpts)? */
bool mntns_new_dev(const struct rst *r, dev_t dev);
void mntns_restore_leave(struct rst *r);
int mntns_mount_in_child(struct rst *r, char *why, size_t len);
void mntns_free(struct rst *r);

/* ns.c: the UTS and IPC namespaces, new (from the images) or joined; this
 * thread is in them from enter to leave, the process is forked between. */
int ns_restore_enter(struct rst *r);
void ns_restore_leave(struct rst *r);
int ns_check_join(const struct restore_opts *o);
/* mqueue.c: an IPC namespace's POSIX message queues made in the fresh one this thread is in;
 * an fd on one checked at load, opened (memdump's fd, or <0 after fail()). */
int mqueue_restore_ns(struct rst *r);
int mqueue_check(const struct rst *r, const MqueueFileEntry *m);
int mqueue_open(const MqueueFileEntry *m);
/* netns.c: the dumped devices, addresses and routes in the new network namespace this
 * thread is in; the veth pairs' other ends in host_netns (memdump's, open). */
int netns_restore(struct rst *r, int host_netns);

/* check.c */
int check_images(struct rst *r);
/* memdump holds capability cap (CAP_*) in its effective set */
bool rst_capable(int cap);
/* RST_MAP_*: how the blob maps v */
int vma_how(const VmaEntry *v);

/* files.c: r->descs and r->fds */
struct rdesc *rst_desc(struct rst *r, uint32_t id);
int scan_inherited(struct rst *r);
void close_inherited(struct rst *r);
int open_fds(struct rst *r);
/* The files kind's own, for the table of fd kinds (files/fd_kinds.c): checked before
 * anything starts; opened in memdump (d->fd; a pipe: every description at once). */
int reg_check(struct rst *r, const FileEntry *fe);
int reg_open(struct rst *r, const FileEntry *fe, struct rdesc *d);
/* A /proc/PID/... file of a process the set restores: its entry, or NULL. The fd's
 * owner opens it once that PID exists (child.c): the fd or -errno. */
const RegFileEntry *reg_proc_of_set(struct rst *r, const FileEntry *fe);
int reg_proc_open_in_child(struct rst *r, const RegFileEntry *re);
int pipe_open(struct rst *r, const FileEntry *fe, struct rdesc *d);
int fifo_check(struct rst *r, const FileEntry *fe);
int fifo_open(struct rst *r, const FileEntry *fe, struct rdesc *d);
int term_check(struct rst *r, const FileEntry *fe);
int term_open(struct rst *r, const FileEntry *fe, struct rdesc *d);

/*
 * tty.c: a pty end (tty_info_id set): its pair opened at its index with
 * every setting and queued byte; checked before anything starts; the
 * controlling terminal taken again in the child, once it leads its session.
 */
int tty_open(struct rst *r, const FileEntry *fe, struct rdesc *d);
int tty_check(struct rst *r, const FileEntry *fe);
int tty_ctty_in_child(struct rst *r, char *why, size_t len);
/* Its fds on /dev/tty opened again, its session's terminal made (after tty_ctty_in_child). */
int tty_devtty_in_child(struct rst *r, char *why, size_t len);
/* --shell-job: memdump's terminal n given for the job's (fe): the job's termios and window
 * size on it; in the child, its group made the foreground again if it was. */
int tty_job_open(struct rst *r, const FileEntry *fe, int n);
int tty_job_fg_in_child(struct rst *r);
/* In a forked process leading its session: before it forks its children (tree.c). */
int tty_ctty_early(struct rst *r, char *why, size_t len);
/* Every --inherit-fd tty[..] key names a slave of the dump whose master was outside. */
int tty_check_keys(struct rst *r);
void tty_close_orphans(struct rst *r);
/* Its controlling terminal's foreground group is its group: memdump's fd of it (open_fds);
 * in the forked process, once in its group, the group made the foreground again. */
int tty_prepare_fg(struct rst *r);
int tty_fg_early(struct rst *r, char *why, size_t len);
void tty_close_fg(struct rst *r);
/* A bind mount's source that is /dev/pts/N of a devpts the restore made: the pty made
 * first (kept for the slave of index N, whose master was outside), so that it exists. */
int tty_make_bound_pts(struct rst *r, const char *from);

/* pidfd_restore.c: a pidfd of a process of the set (opened by the restored process, in
 * child.c: the fd or -errno), or of an exited one (made in memdump) */
int pidfd_check(struct rst *r, const FileEntry *fe);
int pidfd_open_desc(struct rst *r, const FileEntry *fe, struct rdesc *d);
int pidfd_open_in_child(const PidfdEntry *e);
/* pid is a process the set restores: its root, or one of the tree's */
bool pidfd_restored_here(struct rst *r, pid_t pid);
void pidfd_close_all(struct rst *r);

/* eventfd.c, signalfd.c: the new fd in memdump, or <0 after fail() */
int eventfd_open(const EventfdFileEntry *e);
int signalfd_open(const SignalfdEntry *s);

/* timerfd.c: created disarmed, kept in r->timers; armed once the threads are parked */
int timerfd_open(struct rst *r, const TimerfdEntry *t);
int timerfd_arm_all(struct rst *r);
void timerfd_close_all(struct rst *r);

/* epoll.c: the set is created with the files, filled in the child (fds at their numbers) */
int epoll_open(const EventpollFileEntry *e);
int epoll_check(const struct dumpset *ds, const EventpollFileEntry *e);
/* In the child: every set's registrations; <0 with what failed in msg. */
int epoll_fill_all(const struct dumpset *ds, char *msg, size_t len);

/* ghost.c: deleted files, recreated before the fds are opened, deleted once they are */
int ghost_check(struct rst *r);
int ghost_create_all(struct rst *r);
void ghost_unlink_all(struct rst *r);
/*
 * ghost_sweep.c: the process that removes the ghosts' names should the restore
 * be killed (SIGKILL) before it removed them itself: told each name, with the
 * inode it will name (0: a directory or FIFO made next), before the name
 * exists; _end: every name removed, it exits (the tree's root holds it).
 */
int ghost_sweep_tell(struct rst *r, const char *path, dev_t dev, ino_t ino);
void ghost_sweep_end(struct rst *r);
/* Where file id's ghost is recreated; NULL: no ghost, or not created yet. */
const char *ghost_path(struct rst *r, uint32_t file_id);
/*
 * The owner of each fd's SIGIO (F_SETOWN_EX, with the uid/euid that set it) and its
 * signal (F_SETSIG), in the child once its fds have their numbers and the tree's
 * processes exist. 0 or -errno with msg.
 */
int files_fown_in_child(struct rst *r, char *msg, size_t len);
/* A REG whose own name was deleted (re->deleted_name) opened by it again; the fd or -errno. */
int ghost_open_linked(struct rst *r, const RegFileEntry *re, int flags);

/* locks.c: flock, POSIX, OFD locks, taken by the child as its last step before the blob */
int locks_check(struct rst *r);
int locks_apply_in_child(struct rst *r, char *why, size_t len);
/* The POSIX ones into the area, for the blob to take after its own fds are closed. */
void locks_fill(struct rst *r);

/* inotify.c: every watch on its path, with its mask and wd */
int inotify_check(const InotifyFileEntry *e);
int inotify_open(const InotifyFileEntry *e);

/* sk_opts.c: the common options of a new socket; <0 with what failed in why */
int sk_opts_apply(int fd, const SkOptsEntry *o, bool reuseaddr, char *why, size_t len);

/* sk_unix.c: every UNIX socket, at once; sk_queue.c: their queued data */
int sk_unix_open_all(struct rst *r);
int sk_queue_plan(struct rst *r);
/* In the child, before its fds move: the queues, shutdowns, peek offsets. */
int sk_child_finish(struct rst *r, char *msg, size_t len);
void sk_queue_free(struct rst *r);
void sk_helpers_close(struct rst *r);
/* sk_unix.c, for sk_unix_tree.c: a socket of u's type; bound to u's name; listening */
int sk_unix_new(const UnixSkEntry *u);
int sk_unix_bind(struct rst *r, int fd, const UnixSkEntry *u);
int sk_unix_listen(struct rst *r, const UnixSkEntry *u);
/* The address to connect or send to u's name from anywhere (a relative name: made whole). */
socklen_t sk_unix_conn_addr(struct rst *r, const UnixSkEntry *u, struct sockaddr_un *a);
/* The aliases of names whose file the process had removed, once every socket that
 * connects to one is made (sk_unix_restore.c). */
void sk_unix_unlink_gone(struct rst *r);

/*
 * sk_unix_tree.c: UNIX sockets whose peer or listener another process of the
 * tree opens. u's connection to p (another process's), u's end for this one,
 * p's kept for its process; the entry and memdump's fd of socket ino anywhere
 * in the tree; the queues of every process planned once all are made; in the
 * forked child, a sender's credentials' process of the tree waited for.
 */
int sk_tree_connect(struct rst *r, const UnixSkEntry *u, const UnixSkEntry *p);
const UnixSkEntry *sk_tree_entry(struct rst *r, uint32_t ino);
int sk_tree_fd(struct rst *r, uint32_t ino);
/* the tree's listener with u's name in *lfd (made ahead if need be): 0; 1 none; <0 */
int sk_tree_listener(struct rst *r, const UnixSkEntry *u, int *lfd);
int sk_tree_plan_queues(struct rst *root);
void sk_tree_wait_pid(struct rst *r, pid_t pid);

/* sk_inet.c: a TCP, UDP or UDP-lite socket (memdump's fd), or <0 after fail() */
int sk_inet_open(struct rst *r, const InetSkEntry *e);
int inet_addr_of(const InetSkEntry *e, bool dst, struct sockaddr_storage *ss);
int inet_fail(const InetSkEntry *e, int err, const char *what);

/* sk_netlink.c: a netlink socket (memdump's fd), or <0 after fail() */
int sk_netlink_open(const NetlinkSkEntry *e);

/* tcp_repair.c: connections (established, opening, closing), released once the threads are parked */
int tcp_repair_open(struct rst *r, int fd, const InetSkEntry *e);
void tcp_release_all(struct rst *r);
void tcp_close_all(struct rst *r);

/*
 * premap_restore.c: a tree's memory shared copy-on-write between parent and
 * child (pages dumped with in_tree_parent, the VMA the same in both): plan
 * (memdump, every area built), fill (each forked process, before it forks
 * its children), free.
 */
int premap_plan(struct rst *root);
void premap_fill(struct rst *r);
void premap_free(struct rst *r);

/* The fds the area has room for, at most: one per VMA (files, shmem objects), the pages
 * images (one per set), the exe, and a few more. */
static inline size_t blob_fd_room(const struct dumpset *ds)
{
	return ds->mm->n_vmas + dumpset_other_pages(ds) + 8;
}

/* area.c */
/* Hand fd to the blob: returns its index in the blob's fd list. */
int add_blob_fd(struct rst *r, int fd);
int build_area(struct rst *r);

/*
 * pagecheck.c: the blob hashes the pages as it fills them (when the set was
 * loaded with its pages' sums deferred: rst_args.sum_pages); finish (ok: the
 * process is parked) compares its sums with the set's and gives the verdict.
 */
int pagecheck_mode(const struct dumpset *ds);	/* rst_args.sum_pages, before the fork */
int pagecheck_start(struct rst *r);
int pagecheck_finish(struct rst *r, bool ok);
void pagecheck_free(struct rst *r);

/* task.c */
size_t pending_sigs_count(struct rst *r);
size_t pending_sigs_fill(struct rst *r, struct rst_siginfo *d);
void fill_process(struct rst *r);
int fill_helper_wanted(void);
void fill_threads(struct rst *r, size_t xs_off, size_t stacks_off);

/* seccomp.c: seccomp.img checked, then its filters and each thread's chain in the area */
int seccomp_check(struct rst *r);
size_t seccomp_area_size(const struct rst *r);
void seccomp_fill(struct rst *r, size_t off);

/* attrs.c: what the kernel keeps beside memory (scheduling, oom, cgroup, timers ...) */
int attrs_check(struct rst *r);
void attrs_fill(struct rst *r);
void attrs_free(struct rst *r);
/* In the child, before the blob: 0, or -errno with why[] filled. */
int attrs_apply_in_child(struct rst *r, char *why, size_t len);
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
/* After a failed restore: the directories it made removed again. */
void cgroups_undo(struct rst *r);
void cgroups_forget(struct rst *r);
/* line, moved under its --cgroup-root if one is given (attrs.c). */
int attrs_map_cg_root(const struct rst *r, const char *line, char *out, size_t len);
/* Before the fork: its cgroup.procs files opened, for the child to join them by fd. */
int attrs_open_cgroups(struct rst *r);
void attrs_close_cgroups(struct rst *r);
/* In the child, first: its cgroups, its cgroup namespace. */
int attrs_join_cgroups(struct rst *r, char *why, size_t len);
/* In the child, first: its session and process group as dumped. */
void attrs_apply_groups(struct rst *r);

/* zombies.c: the zombie children pstree.img lists after the process */
int zombies_check(struct rst *r);
/* In the child, once in its session and group: 0, or -errno with why[] filled. */
int zombies_make_in_child(struct rst *r, char *why, size_t len);

/* child.c */
void __attribute__((noreturn)) child_main(struct rst *r);
/* In the child: the failure told through its area, then _exit. */
void __attribute__((noreturn, format(printf, 3, 4))) child_exit_fail(struct rst *r, int err,
								       const char *fmt, ...);
/* restore.c: fork with this PID (clone3 set_tid); 0 in the child, -1 and errno */
pid_t rst_fork_pid(pid_t pid);
/* The same in a PID namespace (ns_pid there too, 0: none), with clone flags (CLONE_NEWPID, CLONE_PARENT). */
pid_t rst_fork_pid_ns(pid_t pid, pid_t ns_pid, unsigned long flags);
/* Is the restored process not memdump's child (a tree's, or --restore-sibling)? */
bool rst_not_child(const struct rst *r);
/* The PID the process sees of itself in its tree's PID namespace, 0: none. */
pid_t rst_ns_pid(const PstreeEntry *pe);
/* The ID thread host_tid of the process sees of itself (its PID namespace's), for the blob. */
unsigned rst_ns_tid(const PstreeEntry *pe, unsigned host_tid);

/* resume.c: let the parked threads run into their dumped contexts */
int resume_threads(struct rst *r);
/* resume_threads() in three: trace the parked threads; let them go (the commit point);
 * run each to its dumped context, the lifeline closed and the area unmapped */
void resume_seize(struct rst *r);
void resume_go(struct rst *r);
int resume_finish(struct rst *r);

/*
 * abort.c: the commit point. Before it SIGINT, SIGTERM, SIGHUP fail the
 * restore (rst_interrupted(): -EINTR after fail(), or 0) and a dead memdump
 * takes the processes with it (their lifeline); after it they run on.
 */
void rst_catch_signals(void);
int rst_interrupted(void);
void rst_commit(struct rst *const *all, size_t n);	/* resume_go() each, seized */
void rst_default_signals(void);		/* past the commit: memdump's own again, a signal
					 * that came meanwhile delivered */
void rst_release_signals(void);		/* the restore done: memdump's own again */
/* The area built: memdump's pidfd for the blob (r->lifeline), the blob's fault point */
int rst_arm_abort(struct rst *r);

/* The restore's fault points (fault.h's fault_step, MEMDUMP_FAULT=<point>) */
#define RST_FAULT_MOUNTS	"rst-mounts"	/* in its namespaces and mounts, nothing made */
#define RST_FAULT_GHOSTS	"rst-ghosts"	/* its deleted files recreated */
#define RST_FAULT_PREPARED	"rst-prepared"	/* every fd and area ready, nothing forked */
#define RST_FAULT_FORKED	"rst-forked"	/* the processes forked, not yet parked */
#define RST_FAULT_CHILD		"rst-child-files" /* in each forked process: its fds installed */
#define RST_FAULT_FILL		"rst-fill"	/* in the blob: its memory filled */
#define RST_FAULT_COMMIT	"rst-commit"	/* every process parked, before they go */

/* shmem.c: r->shms */
int shm_collect(struct rst *r);
bool vma_shm_private(const VmaEntry *v);
int shm_check(struct rst *r);
int shm_create_all(struct rst *r);
struct shm_obj *shm_find(struct rst *r, uint64_t shmid);
int shm_blob_fd(struct rst *r, struct shm_obj *s);
/* The seals left for the blob to add once mapped; returns how many. */
size_t shm_blob_seals(struct rst *r, struct rst_seal *d);
struct shm_obj *shm_of_memfd(struct rst *r, const MemfdFileEntry *mf);
int shm_open_memfd(struct rst *r, const FileEntry *fe);
void shm_close_all(struct rst *r);

/* restore.c: the failure the restorer blob or the child reported, named. */
int rst_area_error(const struct rst *r);

#endif
