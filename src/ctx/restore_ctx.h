/*
 * struct rst: the state of one process's restore, which the kinds of state
 * (mem/, files/, evloop/, net/, ns/, task/) fill and use and the pipeline
 * (restore/) drives; struct restore_opts, what the caller asked; and what
 * the pipeline gives the kinds (the tree's shared objects, lookups). The
 * area layout shared with the restorer blob is in restorer.h. The kinds
 * include this, never the pipeline's restore/restore.h or restore/pipeline.h;
 * each kind declares its own restore functions in its own headers.
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
	struct veth_ext {		/* --external veth[IN]:OUT[@BRIDGE] or macvlan[IN]:LOWER */
		const char *in, *out, *bridge;
		bool macvlan;
	} veth_ext[8];
	int nr_veth_ext;
	const char *root;		/* --root: where a dumped mount namespace's root is */
	bool sibling;			/* --restore-sibling: memdump's parent's child (detached) */
	int copies;			/* --copies N: N copies, each in its own PID namespace, sharing
					 * the memory copy-on-write (restore/fanout.c); 0: one */
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
	int lazy_daemon;		/* --lazy-socket: the fd + 1 of the connection to the
					 * lazy-pages daemon (told how the filling went), 0 */
	int lazy_remote_sock;		/* the fd + 1 of its page channel when it fetches
					 * pages-1.img from a lazy dump's page server, 0 */
	bool tcp_close;			/* --tcp-close: TCP connections come back closed (CRIU's) */
	struct page_feed *feed;	/* --decrypt: pages-1.img kept sealed (image/feed.h), or NULL */
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
	unsigned int huge;		/* MAP_HUGETLB memory: its VMAs' VMA_MAP_HUGETLB and size bits */
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
	char *top;		/* the outermost of the directories gone too made for it, or NULL */
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
enum { SK_LATE_SEND, SK_LATE_SHUTDOWN, SK_LATE_PEEK_OFF, SK_LATE_CONNECT, SK_LATE_PAIR,
       SK_LATE_ACCEPT, SK_LATE_TREE_PAIR, SK_LATE_TREE_ACCEPT, SK_LATE_LISTEN,
       SK_LATE_FORK_ACCEPT, SK_LATE_FORK_CONNECT };
struct sk_late {
	int op;
	int fd;				/* memdump's fd, inherited by the child */
	int fd2, lfd;			/* PAIR, ACCEPT: the peer's fd; ACCEPT: the listener's;
					 * TREE_*: either may be another process's (memdump's) */
	const UnixSkEntry *u, *p, *l;	/* PAIR, ACCEPT, TREE_* (sk_unix_cred_restore.c) */
	struct rst *lproc;		/* FORK_CONNECT: the listener's process, waited for */
	struct rst *uproc, *pproc;	/* TREE_*: the processes opening u and p */
	bool made;			/* FORK_ACCEPT: a connection put on fd already */
	bool standin;			/* FORK_ACCEPT: lfd stands in for a closed listener */
	int arg;			/* shutdown's how, the peek offset */
	const struct sk_msg *msg;	/* SEND */
	bool dgram;
	bool bind;			/* PAIR: its ends bound to their names once made */
	struct sockaddr_un to;		/* SEND to a name (tolen 0: connected); CONNECT to */
	socklen_t tolen;
	bool covered;			/* to: a name below todir, a directory under the
					 * mount covering it (memdump's O_PATH fd, inherited) */
	int todir;
};

/* The stand-in for the closed peer of a socket, or for a datagram's sender: sends, then goes. */
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
	bool unrepaired;		/* out of repair mode, nothing sent yet */
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
	bool late;		/* a /proc file the owner opens once forked, before it forks
				 * this process, which inherits it (tree_open_late) */
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
	uint64_t load_us;		/* rst_load(): the set read and checked (restore_run) */
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

	int *ify_drain;		/* inotify fds watching ghosts: emptied right before resume */
	size_t nr_ify_drain;

	struct rghost *ghosts;
	size_t nr_ghosts;
	int ghost_sweep_fd;	/* the sweeper's pipe (restore/sweep.c), 0: none */
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
	bool net_isolated;	/* its fresh network namespace locked (netns_restore.c) */
	bool lock_kept;		/* a connection its dump locked comes back closed (--tcp-close) */

	int exe_fd;
	const char *cwd, *root;
	int cwd_fd;		/* a deleted cwd: its recreated directory, for fchdir (child.c) */
	struct CgroupEntry *cg;	/* cgroup.img, NULL: none or --manage-cgroups ignore */
	char **cg_made;		/* cgroup directories this restore created (cgroups.c) */
	size_t nr_cg_made;
	bool cg_early;		/* a restore, not a check: cgroups made before the files' checks */
	bool cg_ready;		/* they are made (cgroups_recreate) */
	char **cg_join;		/* cgroup.procs files the child joins (ns/cgroups_join_restore.c) */
	size_t nr_cg_join;
	char **cg_root;		/* a cgroup namespace's root: joined before the unshare */
	size_t nr_cg_root;
	int *cg_fds;		/* cg_root's then cg_join's cgroup.procs, open (cgroups_join_restore.c) */
	size_t nr_cg_fds;

	/* the restorer area */
	int area_fd;
	char *area;
	size_t area_size;
	struct rst_args *a;
	unsigned long vdso_start, vdso_len;
	bool has_vdso;
	struct pagecheck pagecheck;
	struct page_feed *feed;	/* its pages-1.img fed to the blob (o->feed, ds.pages_feed), running */
	int ns_back[3];		/* memdump's own uts, ipc, net namespaces while in the target's */
	int own_oom;		/* memdump's oom_score_adj and loginuid, which it inherits */
	uint32_t own_loginuid;
	struct {		/* its own time namespace (ns/timens_restore.c) */
		bool own;
		long long mono_sec, boot_sec;	/* its clocks at the dump */
		long mono_nsec, boot_nsec;
	} timens;
	int ctty_target;	/* fd number of its controlling terminal + 1, 0: none (files/tty_restore.c) */
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
		bool hung;	/* a hung-up slave's: closed once the processes are forked */
	} orphans[4];
	size_t nr_orphans;

	/* a dumped tree (tree.c): the root holds it, every process points to it */
	struct rst_tree *tree;
	struct rst *tree_parent;	/* the process that forks this one; NULL: memdump */
	const char *tree_cgroup;	/* the tree's root's cgroups (core), NULL: r is the root */
	int tree_sync_fd;		/* in the forked child: tells its parent it is grouped */
	pid_t via_helper;		/* in the forked child: forked by this helper (its PID), 0: by its parent */
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
	/* a tree's process in another mount namespace than the root's (mnt_ns_id N
	 * >= 2): that namespace, built by memdump from mountpoints-N.img; its first
	 * process owns the fd, the others in it share it */
	uint32_t mnt_ns_id;
	int mnt_ns_fd;
	bool mnt_ns_owner;	/* it enters mnt_ns_fd once forked */
	int *mnt_from_fds;	/* per mnts[]: a clone of the root's tmpfs (from_root_mnt), or -1 */
	/* the tree root's: per peer group made so far (its dumped id), a detached
	 * shared clone of its first mount, which every other mount of the group,
	 * in any mount namespace of the tree, joins (a root after its pivot) */
	uint32_t *mnt_anchor_ids;
	int *mnt_anchor_fds;
	size_t nr_mnt_anchors;

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
	bool premap_kept;	/* --copies: the range is the fan-out's, unmapped by it */

	/* --copies (fanout.c): the fan-out it is a copy of, or NULL; once forked, the
	 * init of memdump's that holds its PID namespace (host PID) and its control
	 * pipe (memdump's ends: from the init, to the init); r->pid is then the copy's
	 * host PID, dumped_pid the one it has in its namespace (its threads: fan_tids) */
	struct fanout *fan;
	/* --copies: ds is the fan-out's, loaded and verified once (rst_load_lent(), not
	 * freed with r); memdump's own mappings were checked for seals by the first copy */
	bool ds_lent, own_checked;
	pid_t fan_init, dumped_pid;
	int fan_from, fan_to;
	pid_t *fan_tids;	/* parked: each thread's TID here, by its index in the area */

	int lifeline;		/* memdump's pidfd, the blob's lifeline_fd (restore/abort.c), -1 */
	bool untraced;		/* resume_seize() could not trace it: it runs with its area */
	int lazy_peer;		/* --lazy-pages: the page handler's end of the blob's socket, -1 */
	struct lazy_remote *lazy_remote;	/* migrate --lazy-pages: pages-1.img from the source */
	/* Set by the pipeline: the pty of a bind mount's source /dev/pts/N of a devpts the
	 * restore made, made first (files/tty_restore.c, tty_make_bound_pts); called by
	 * mntns_restore.c while it mounts, so that the source exists. */
	int (*make_bound_pts)(struct rst *r, const char *from);
};

/*
 * What the restore pipeline (restore/) gives the kinds: the objects the
 * processes of a tree share, lookups, the sweeper of recreated names, the
 * blob's fds, a forked child's failure. Each kind's own restore functions
 * are in its headers (files/files.h, net/sockets.h, ...).
 */

/* tree.c: the member i of root's tree (pstree order, the root not counted), and how many. */
struct rst *tree_member(struct rst *root, size_t i);
size_t tree_size(const struct rst *root);
/* A pty pair (index idx) made for a process of the tree: memdump's fd of its master, which
 * the tree keeps (not to close), or -1; put: a copy kept until the tree is forked. */
int tree_pty_get(struct rst *r, uint32_t idx);
int tree_pty_put(struct rst *r, uint32_t idx, int fd);
/* files_restore.c's pipes: one made for an earlier process of the tree (copies), or made now */
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
/* Is fd a description an earlier process opens once forked (a late /proc file)? */
bool rst_share_late(const struct rst *r, int fd);
/*
 * In forked process r, before it forks its children: the /proc files its
 * descendants share with it, opened now (they inherit them); 0 or -errno
 * with why.
 */
int tree_open_late(struct rst *r, char *why, size_t len);
/*
 * share.c: in forked process self, the wait until process lis of the tree
 * listened to its listeners again under their dumped ids (its
 * sk_cred_remake_tree(), before it forks its children: what it waits for
 * later never waits for self); fails self (child_exit_fail) when lis fails.
 */
void tree_wait_listened(struct rst *self, const struct rst *lis);

/* restore.c: lookups and cleanup */
const FileEntry *rst_file(struct rst *r, uint32_t id);
/* Path of a regular file entry (a deleted one: where it is recreated), NULL for other types. */
const char *rst_reg_path(struct rst *r, uint32_t id);
/* The same file as memdump opens it: under the restored root (rst_path) unless a ghost,
 * whose path is already where memdump made it. */
const char *rst_reg_host_path(struct rst *r, uint32_t id, char *buf, size_t len);
/* Opens that file (flags, O_CLOEXEC added): there, or in the tree root's mount namespace
 * for a file of it (root_mntns: a program run before a pivot_root); an fd or -errno. */
int rst_reg_open(struct rst *r, uint32_t id, int flags);
/* A path of the process as memdump opens it: under the root memdump built for it (mntns.c). */
const char *rst_path(const struct rst *r, const char *path, char *buf, size_t len);
/* memdump holds capability cap (CAP_*) in its effective set */
bool rst_capable(int cap);

/* The description of file id prepared for the process (files_restore.c opens them), or NULL. */
static inline struct rdesc *rst_desc(struct rst *r, uint32_t id)
{
	for (size_t i = 0; i < r->nr_descs; i++)
		if (r->descs[i].id == id)
			return &r->descs[i];
	return NULL;
}

/*
 * sweep.c: the process that removes the ghosts' names should the restore
 * be killed (SIGKILL) before it removed them itself: told each name, with the
 * inode it will name (0: a directory or FIFO made next), before the name
 * exists; _end: every name removed, it exits (the tree's root holds it).
 */
int ghost_sweep_tell(struct rst *r, const char *path, dev_t dev, ino_t ino);

/* The fds the area has room for, at most: one per VMA (files, shmem objects), the pages
 * images (one per set), the exe, and a few more. */
static inline size_t blob_fd_room(const struct dumpset *ds)
{
	return ds->mm->n_vmas + dumpset_other_pages(ds) + 8;
}

/* area.c: hand fd to the blob: returns its index in the blob's fd list. */
int add_blob_fd(struct rst *r, int fd);
/* In the child: the failure told through its area, then _exit. */
void __attribute__((noreturn, format(printf, 3, 4))) child_exit_fail(struct rst *r, int err,
								       const char *fmt, ...);

/* The restore's fault points (fault.h's fault_step, MEMDUMP_FAULT=<point>) */
#define RST_FAULT_MOUNTS	"rst-mounts"	/* in its namespaces and mounts, nothing made */
#define RST_FAULT_GHOSTS	"rst-ghosts"	/* its deleted files recreated */
#define RST_FAULT_PREPARED	"rst-prepared"	/* every fd and area ready, nothing forked */
#define RST_FAULT_FORKED	"rst-forked"	/* the processes forked, not yet parked */
#define RST_FAULT_CHILD		"rst-child-files" /* in each forked process: its fds installed */
#define RST_FAULT_FILL		"rst-fill"	/* in the blob: its memory filled */
#define RST_FAULT_COMMIT	"rst-commit"	/* every process parked, before they go */
#define RST_FAULT_GOLIVE	"rst-golive"	/* gone, their connections not yet live (golive.c) */
#define RST_FAULT_COPY		"rst-copy"	/* --copies: a copy running, before the next one */

#endif
