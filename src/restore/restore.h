/*
 * The restore layer: recreate the process of an image set (restore.c drives
 * it: check, files, shmem, area, fork, resume) and hand it the restorer
 * blob. It may call image/ (loading the set) and lib (include/); never
 * dump/, infect/ or cli/. Below: the state of one restore and what its parts
 * give each other; the area layout shared with the blob is in restorer.h.
 */
#ifndef MEMDUMP_RESTORE_H
#define MEMDUMP_RESTORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "hooks.h"
#include "image/dumpset.h"
#include "image/hash.h"
#include "restorer.h"
#include "sk-packet.pb-c.h"
#include "tcp-stream.pb-c.h"

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
};

/* restore.c: the pipeline; the restored process's exit status, or -d: 0; <0 after fail() */
int restore_run(const struct restore_opts *o);
/* Load the set and make every check restore_run() makes, start nothing (the fuzzer's). */
int restore_check(const struct restore_opts *o);

/* One fd number of the restored process. */
struct rfd {
	int src;		/* memdump's fd with the open file description */
	int target;		/* its number in the restored process */
	bool cloexec;
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
};

/* pagecheck.c: the checksums of the pages, from the memory the blob fills */
struct pagecheck {
	const struct dump_run *runs;		/* ds->runs: the blob's run indexes */
	const struct dump_run **present;	/* the runs with bytes, in file order */
	uint64_t *sums;				/* theirs, as the blob summed them */
	size_t nr_present;
	bool running;				/* the blob sums: compare once parked */
};

struct rst {
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
	struct sk_msg *sk_msgs;
	size_t nr_sk_msgs;
	struct sk_late *sk_late;
	size_t nr_sk_late;
	struct sk_helper *sk_helpers;
	size_t nr_sk_helpers;
	struct rtcp *tcp;
	size_t nr_tcp;

	int exe_fd;
	const char *cwd, *root;
	char **cg_join;		/* cgroup.procs files the child joins (attrs.c) */
	size_t nr_cg_join;
	char **cg_root;		/* a cgroup namespace's root: joined before the unshare */
	size_t nr_cg_root;

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
};

/* restore.c: lookups and cleanup */
const FileEntry *rst_file(struct rst *r, uint32_t id);
/* Path of a regular file entry (a deleted one: where it is recreated), NULL for other types. */
const char *rst_reg_path(struct rst *r, uint32_t id);
/* Close every fd prepared for the target (after the fork, or on failure). */
void rst_close_prepared(struct rst *r);

/* ns.c: the UTS and IPC namespaces, new (from the images) or joined; this
 * thread is in them from enter to leave, the process is forked between. */
int ns_restore_enter(struct rst *r);
void ns_restore_leave(struct rst *r);
int ns_check_join(const struct restore_opts *o);

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

/*
 * tty.c: a pty end (tty_info_id set): its pair opened at its index with
 * every setting and queued byte; checked before anything starts; the
 * controlling terminal taken again in the child, once it leads its session.
 */
int tty_open(struct rst *r, const FileEntry *fe, struct rdesc *d);
int tty_check(struct rst *r, const FileEntry *fe);
int tty_ctty_in_child(struct rst *r, char *why, size_t len);

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
/* Where file id's ghost is recreated; NULL: no ghost, or not created yet. */
const char *ghost_path(struct rst *r, uint32_t file_id);

/* locks.c: flock, POSIX, OFD locks, taken by the child as its last step before the blob */
int locks_check(struct rst *r);
int locks_apply_in_child(struct rst *r, char *why, size_t len);

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

/* sk_inet.c: a TCP, UDP or UDP-lite socket (memdump's fd), or <0 after fail() */
int sk_inet_open(struct rst *r, const InetSkEntry *e);
int inet_addr_of(const InetSkEntry *e, bool dst, struct sockaddr_storage *ss);
int inet_fail(const InetSkEntry *e, int err, const char *what);

/* sk_netlink.c: a netlink socket (memdump's fd), or <0 after fail() */
int sk_netlink_open(const NetlinkSkEntry *e);

/* tcp_repair.c: established connections, released once the threads are parked */
int tcp_repair_open(struct rst *r, int fd, const InetSkEntry *e);
void tcp_release_all(struct rst *r);
void tcp_close_all(struct rst *r);

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

/* zombies.c: the zombie children pstree.img lists after the process */
int zombies_check(struct rst *r);
/* In the child, once in its session and group: 0, or -errno with why[] filled. */
int zombies_make_in_child(struct rst *r, char *why, size_t len);

/* child.c */
void __attribute__((noreturn)) child_main(struct rst *r);
/* restore.c: fork with this PID (clone3 set_tid); 0 in the child, -1 and errno */
pid_t rst_fork_pid(pid_t pid);

/* resume.c: let the parked threads run into their dumped contexts */
int resume_threads(struct rst *r);

/* shmem.c: r->shms */
int shm_collect(struct rst *r);
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
