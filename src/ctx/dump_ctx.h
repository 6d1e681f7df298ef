/*
 * struct dump_ctx: the dumper's picture of its target, which the kinds of
 * state (mem/, files/, evloop/, net/, ns/, task/) fill step by step and the
 * pipeline (dump/) writes out at the end; struct dump_opts, what the caller
 * asked. The kinds include this, never the pipeline's dump/dump.h.
 */
#ifndef MEMDUMP_DUMP_CTX_H
#define MEMDUMP_DUMP_CTX_H

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>
#include <time.h>

#include "files/ghost.h"
#include "image/compress.h"
#include "files/locks.h"
#include "image/image.h"
#include "image/streamw.h"
#include "hooks.h"
#include "mntext.h"
#include "infect/infect.h"
#include "net/sock.h"
#include "track/track.h"
#include "xfer.h"

#define AFFINITY_WORDS	16	/* 1024 CPUs */

/* How a thread is scheduled: policy (with SCHED_RESET_ON_FORK), priority, nice, CPUs, slack. */
struct uffd_state;

struct thread_sched {
	uint32_t policy, prio;
	int32_t nice;
	uint64_t affinity[AFFINITY_WORDS];
	int nr_affinity;		/* words the kernel filled */
	uint64_t timer_slack_ns;
};

/* A thread's seccomp mode and its filters, newest last (indexes into dump_ctx.seccomp). */
struct thread_seccomp {
	uint32_t mode;
	int top;			/* index of its newest filter, -1: none */
};

/* One seccomp filter program; prev is the one installed before it (-1: none). */
struct seccomp_prog {
	void *insns;			/* struct sock_filter[] */
	size_t len;			/* bytes */
	uint32_t flags;
	int prev;
};

/* A thread as the images describe it; threads[i] is infect's threads[i]. */
struct thread {
	pid_t tid;
	struct user_regs_struct regs;	/* as at the freeze */
	uint8_t *xsave;			/* NT_X86_XSTATE */
	size_t xsave_len;
	uint64_t sigmask;		/* blocked signals at the freeze */
	uint64_t tid_address;		/* set_tid_address() */
	uint64_t robust_head;
	uint64_t robust_len;
	uint64_t rseq_abi, rseq_sig;
	uint32_t rseq_len;
	uint64_t ss_sp, ss_size;	/* sigaltstack */
	uint32_t ss_flags;
	char comm[32];
	siginfo_t *sigpending;		/* queued for this thread only */
	int nr_sigpending;
	struct thread_sched sched;	/* sched.c */
	uint32_t pdeath_sig;		/* PR_GET_PDEATHSIG */
	uint32_t secbits;		/* PR_GET_SECUREBITS, its own (a thread's cred) */
	struct thread_seccomp seccomp;	/* seccomp.c */
	uint32_t cg_set;		/* its set in cgroup.img (cgroups.c) */
};

/*
 * Pty slaves whose master a runtime holds outside the dump (tty.c): any one
 * (CRIU's orphan_pts_master, which runc sends) or the one of --external
 * tty[RDEV:DEV] (CRIU's key: st_rdev and st_dev of the slave, in hex).
 */
struct tty_ext {
	bool any;
	bool one;
	uint32_t rdev, dev;
};

/* What the user allowed for the target's fds (files.c): --ghost-limit, --shell-job. */
struct fd_policy {
	uint64_t ghost_limit;
	bool shell_job;
	pid_t pid;		/* the target */
	const struct proc_tree *tree;	/* a tree dump: its processes, or NULL */
	struct tty_ext ext_tty;	/* orphan_pts_master, --external tty[..] */
	bool tracked;		/* memdump's tracker holds VMAs of the target (track/) */
};

/* A POSIX timer (ptimers.c). */
struct posix_timer {
	int id;
	int clock;
	int signo;
	int notify;			/* SIGEV_SIGNAL, SIGEV_NONE, SIGEV_THREAD_ID */
	pid_t tid;			/* SIGEV_THREAD_ID: the thread */
	uint64_t sival;
	int overrun;			/* timer_getoverrun */
	struct itimerspec its;		/* timer_gettime: interval, time left */
};

#define MAX_POSIX_TIMERS	64	/* as many as the restorer takes */

struct vma {
	uint64_t start, end;
	uint64_t pgoff;			/* bytes */
	uint32_t prot, flags, status;
	uint64_t shmid;			/* file id (file maps) or shmem inode */
	uint64_t dev, ino;
	uint64_t madv;
	bool locked;
	bool sealed;			/* mseal() (VmFlags sl): sealed again on restore */
	bool lock_onfault;		/* mlock2(MLOCK_ONFAULT) (VmFlags lf), with locked */
	bool sysv_rdonly;		/* a System V attach without VmFlags mw (SHM_RDONLY) */
	bool dump;			/* its pages go to the image */
	bool anon_only;			/* dump only anonymous (COW) pages */
	bool uffd_wp;			/* VmFlags uw: registered with the tracker, or refused */
	bool tracked;			/* registered with the tracker (track.c) */
	bool snap_armed;		/* registered with the snapshot's userfaultfd before
					 * the freeze (snapshot.c) */
	uint64_t nr_pages;		/* dumped */
	uint64_t kpagesize;		/* smaps KernelPageSize, bytes */
	char vmflags[128];
	char name[PATH_MAX];
};

/* Guard pages (MADV_GUARD_INSTALL): no content, installed again on restore. */
struct guard_region {
	uint64_t start, end;
};

/* A run of pages to dump: [start, start + nr_pages * PAGE_SIZE). */
struct page_run {
	uint64_t start;
	uint64_t nr_pages;
	bool unreadable;		/* in a VMA without PROT_READ: via /proc/PID/mem */
};

struct dump_stats {
	uint64_t freeze_start, frozen_at, unfrozen_at, durable_at;
	uint64_t mem_start, mem_end;
	uint64_t pages_scanned, pages_written;
	uint64_t pages_in_parent;	/* listed, their bytes in the parent set */
	uint64_t shpages_written;	/* shared memory's, in its own pages images */
	int threads;			/* frozen */
	uint64_t bytes_written;
	bool pages_cached;		/* written through the page cache */
	bool pages_direct_tail;		/* its head only, the rest with O_DIRECT */
	bool snapshot;			/* the pages copied after the thaw (snapshot.c) */
	uint64_t snap_fault_pages;	/* of them, saved while a target thread waited */
	uint64_t pages_gone;		/* a pre-dump's read after the thaw: unmapped since */
};

enum dump_mode { MODE_SPLICE, MODE_READ, MODE_MEM };

/* How pages-1.img is written: O_DIRECT or through the page cache; auto:
 * the page cache when the image fits under the dirty limit, else its head
 * through it and the rest with O_DIRECT (pagecache.c). */
enum pages_write { PAGES_AUTO, PAGES_CACHE, PAGES_DIRECT };
/* pagecache.c: how many of an image's bytes go through the page cache (all: it fits);
 * own_dirty: bytes of it already dirty in the cache (warmed by writing: pagewarm.c) */
uint64_t pages_cache_room(uint64_t bytes, uint64_t own_dirty);
/* Dirty bytes the kernel's flusher would still leave alone (its background threshold) */
uint64_t pages_background_room(void);

/* What the caller (the CLI, later an RPC server) asks of one dump. */
struct img_key;
struct dump_opts {
	pid_t pid;			/* -t */
	const char *dir;		/* -D */
	enum dump_mode mode;		/* --mode */
	bool leave_running;		/* --leave-running */
	bool tcp_established;		/* --tcp-established */
	bool tcp_close;			/* --tcp-close: connections dumped as closed */
	bool skip_in_flight;		/* --skip-in-flight: a listener's connections not yet
					 * accepted are dropped, not refused */
	bool ext_unix_sk;		/* --ext-unix-sk: a datagram socket connected to a named
					 * socket outside the dump is connected to its name again */
	bool progress;			/* draw a progress bar on stderr */
	uint64_t ghost_limit;		/* --ghost-limit: largest deleted file saved, bytes */
	bool shell_job;			/* --shell-job: the job's terminal is given back */
	enum pages_write pages_write;	/* --pages-write */
	bool staged;			/* --stream: the set is staged for the stream, then removed:
					 * through the page cache, never synced */
	struct stream_direct *stream;	/* --stream of a killing dump into a pipe: the pages
					 * spliced into it while frozen (image/streamw.h), or NULL */
	struct pz_opts compress;	/* --compress: pages-1.img compressed (compress.h) */
	bool snapshot;			/* --snapshot (with leave_running) */
	bool no_snapshot;		/* --no-snapshot: leave_running without one */
	struct dump_trace *trace;	/* shared with a supervisor, or NULL */
	const struct hooks *hooks;	/* pre-dump, post-dump ... (hooks.h), or NULL */
	bool quiet;			/* the summary goes to the log, not to stdout */
	bool pre_dump;			/* memdump pre-dump: memory only, left running, tracked */
	bool track_mem;			/* --track-mem: keep tracking after this dump */
	const char *prev_dir;		/* --prev-images-dir (relative to dir, as CRIU) */
	int host_netns;			/* dump_run(): memdump's network namespace, open, or -1 */
	const struct proc_tree *tree;	/* a tree dump: its processes (treedump.c), or NULL */
	const struct mnt_ext *mnt_ext;	/* --external mnt[POINT]:KEY (mntext.h) */
	int nr_mnt_ext;
	const char *freeze_cgroup;	/* --freeze-cgroup: frozen by it while seized (freezer.c) */
	uint64_t ext_net_ino;		/* --external net[INO]:KEY: that network namespace is */
	const char *ext_net_key;	/* a runtime's, not saved; restore joins it by KEY */
	struct tty_ext ext_tty;		/* orphan_pts_master, --external tty[RDEV:DEV] */
	bool overwrite;			/* --overwrite, RPC: a dump dir already holds goes */
	struct xfer *xfer;		/* --page-server: pages and pagemap go there, or NULL */
	const struct img_key *key;	/* --encrypt: the set sealed with it (crypt.h), or NULL */
	uint64_t *pages_written;	/* or NULL: set to the pages the dump wrote (a tree's
					 * processes' together), for migrate's pre-dumps */
};

/*
 * What a supervisor (memdump's parent) needs to undo a dump whose worker was
 * killed, kept up to date in memory shared with it: the infection, and TCP
 * connections left in repair mode behind the network lock.
 */
#define DUMP_TRACE_REPAIRS	128
#define DUMP_TRACE_NETS		32
struct dump_trace {
	struct infect_trace in;
	volatile int nr_net;			/* processes whose connections are locked: in a */
	struct {				/* tree, each with its own lock (sockets.c) */
		volatile int64_t pid;
		volatile int locked;		/* its network lock is (being) put on */
	} net[DUMP_TRACE_NETS];
	volatile int nr_repair;			/* sockets in TCP repair mode */
	struct {
		volatile uint64_t ino;
		volatile int64_t pid;		/* whose fd it is */
		volatile int reuseaddr;
	} repair[DUMP_TRACE_REPAIRS];
	volatile int cg_frozen;			/* the dump froze the cgroup at cg_path */
	char cg_path[256];			/* (freezer.c): thawed by the supervisor */
};


const char *mode_name(enum dump_mode m);

/* The open files met in fds, mappings, exe, cwd and root (files.c). */
struct file_set {
	struct file_desc *descs;	/* id = index + 1 */
	int nr_descs;
	struct fd_entry *fds;
	int nr_fds;
	struct ghost_set ghosts;	/* deleted files (ghost.c) */
	struct lock_set locks;		/* flock, POSIX, OFD locks (locks.c) */
};

/* Shared memory objects met in VMAs and fds (shmem.c). */
struct shmem_set {
	struct shmem *objs;
	int nr;
};

/* The image set of the previous iteration (parent.c). */
struct parent_set {
	const char *path;		/* as given: the `parent` link's target */
	int dirfd;			/* -1: no parent */
	uint64_t inventory_hash;	/* of its inventory.img */
	struct page_run *cover;		/* the pages its pagemap lists, sorted */
	size_t nr_cover;
	bool linked;			/* this dump made the `parent` link */
};


/*
 * share.c: the fd table and fs information a process of a tree shares with
 * others (kcmp), as CRIU's ids-PID.img numbers them: the same id, the same
 * table; 0: ids of its own (one process). Shared with its parent, restore
 * forks it with CLONE_FILES / CLONE_FS; anything else is refused by name.
 */
struct kobj_ids {
	uint32_t self;			/* its own number in the tree: vm and sighand ids */
	uint32_t files, fs;
	bool files_shared;		/* its parent's fd table: fdinfo written empty */
};

/* The page scan, on a thread of its own beside the remote calls (pagescan.c). */
struct page_scan {
	pthread_t thread;
	int fd;				/* /proc/PID/pagemap */
	int err;
	bool opened, running;
};

struct dump_ctx {
	pid_t pid;
	struct img_dir dir;		/* -D, and the images created in it */
	bool pre_dump;
	bool keep_tracking;		/* the tracker stays after this dump */
	/*
	 * A killing dump of one process: its tracker is not removed once the
	 * pages are written (unregistering write-protection walks every page
	 * table entry: ~90 ms a GiB, inside the freeze) but goes with the
	 * killed target; only a dump that fails after (dump_undo: the target
	 * runs on) removes it. track_dropped: track_finish() left it so.
	 */
	bool track_drop_late, track_dropped;
	struct tracker track;		/* track.c */
	struct parent_set parent;
	bool incremental;		/* unwritten pages go to parent_runs */
	struct page_run *parent_runs;	/* listed with PE_PARENT, sorted */
	size_t nr_parent_runs;
	struct infect_ctx in;		/* the frozen, infected process */
	struct file_set files;
	enum dump_mode mode;
	enum pages_write pages_write;
	bool staged;			/* dump_opts.staged: no writeback thread, no sync */
	struct stream_direct *stream;	/* dump_opts.stream: pages-1.img into it, not staged */
	struct pz_opts compress;	/* pages-1.img compressed before the pagemap is written */
	bool compress_late;		/* a killing dump: compressed after the kill (images.c) */
	bool pages_late;		/* a pre-dump's pages read after the thaw (pagelate.c) */
	bool cure_late;			/* a killing dump: the parasite stays until the kill,
					 * cured only if the dump fails (dump.c) */
	bool pages_compressed;		/* pages-1.img is compressed: the pagemap says so */
	uint64_t *late_sums;		/* compress_late: the runs' checksums, for the new pagemap */
	uint64_t *late_marks;		/* and their block marks */
	struct snapshot *snap;		/* --snapshot: armed (snapshot.c) */
	struct page_scan scan;
	struct dump_trace *trace;	/* or NULL */
	bool progress;
	struct fd_policy policy;	/* from dump_opts: ghost limit, shell job */
	bool stopped;			/* group-stopped (SIGSTOP) before the dump */
	int stop_signo;			/* the signal it stopped with (stopped) */
	struct thread *threads;		/* leader first */
	int nr_threads;
	struct vma *vmas;
	int nr_vmas;
	uint32_t mlock_future;		/* mlockall(MCL_FUTURE[|MCL_ONFAULT]) in force, or 0 */
	struct page_run *runs;
	size_t nr_runs;
	/* a tree's process: its parent, dumped before it and still frozen (treedump.c),
	 * and the pages it shares with it, listed as its parent's (cowpages.c) */
	const struct dump_ctx *tree_parent;
	/* the processes of its tree dumped before it, while it is (treedump.c): the
	 * files in flight on their sockets (sk_scm_tree.c) */
	const struct dump_ctx *const *tree_prev;
	int nr_tree_prev;
	struct page_run *tparent_runs;	/* sorted, none in runs */
	size_t nr_tparent_runs;
	uint64_t *run_sums;		/* their checksums, once written (pagesum.c) */
	uint64_t *run_marks;		/* their block marks (image/runsum.h) */
	bool sums_late;			/* the inventory is written once the target runs
					 * again: the page cache is summed then (pages.c) */
	uint64_t pages_size, pages_hash;	/* of pages-1.img, with run_sums */
	int pages_fd;			/* pages-1.img made before the freeze, or -1 */
	bool seal_pages;		/* --encrypt: pages-1.img sealed as written, in the
					 * real directory (crypt.h), not staged */
	uint64_t pages_warm;		/* the bytes of it in the page cache (pagewarm.c) */
	uint64_t pages_warm_dirty;	/* of them, dirty (zeros written, not read) */
	struct pages_flush *pages_flush;	/* its writeback, started as it is written
						 * (pageflush.c), or NULL */
	uint64_t nr_pages;
	struct guard_region *guards;	/* sorted */
	size_t nr_guards;
	struct uffd_state *uffd;	/* its own userfaultfd (evloop/uffd.h), or NULL */
	struct IouringEntry **iourings;	/* its io_uring rings (evloop/iouring.h) */
	size_t nr_iourings;
	struct dump_stats stats;
	siginfo_t *sigpending;		/* queued for the whole process */
	int nr_sigpending;
	struct shmem_set shmem;
	struct seccomp_prog *filters;	/* every thread's filters, shared ones once */
	int nr_filters;
	struct posix_timer *ptimers;
	int nr_ptimers;
	struct sk_set sockets;		/* sockets.c */
	uint32_t own_ns;		/* CLONE_NEWUTS|CLONE_NEWIPC saved (ns.c) */
	const char *ext_net_key;	/* its network namespace is external (dump_opts) */
	/* a tree's process in another mount namespace than the root's: its number
	 * (2, 3...: mountpoints-N.img, ids' mnt_ns_id), 0 in the root's; the first
	 * process of it in the tree writes the image */
	uint32_t mnt_ns_id;
	bool mnt_ns_first;
	struct kobj_ids kobj;		/* the tables it shares in its tree (share.c) */
	int host_netns;			/* memdump's network namespace (dump_opts) */
	struct tree_proc *zombies;	/* its zombie children (zombies.c) */
	int nr_zombies;
	const struct proc_tree *tree;	/* a tree dump: the whole tree (treedump.c), or NULL */
	struct tree_pstree *below;	/* the root of a tree dump: the live processes below */
	int nr_below;
	const struct mnt_ext *mnt_ext;	/* from dump_opts: keys of external bind mounts */
	int nr_mnt_ext;
	struct xfer *xfer;		/* from dump_opts: the page server, or NULL */
	const char *xfer_sub;		/* a tree's process: its set's directory there (SUB: its
					 * proc-PID, "" the root's), or NULL: one process */
};


/* Signals that ask a dump to stop (SIGINT, SIGTERM, memdump's parent gone). */
extern volatile sig_atomic_t dump_interrupted;

#endif
