/*
 * The dump of a process tree: PID and every live process below it, frozen
 * all before any of them is read, so that the image set is one instant.
 *
 *   DIR/            the root's own set, as for one process; its pstree.img
 *                   lists every process of the tree, its inventory.img
 *                   every other process's set with the checksum of that
 *                   set's inventory.img
 *   DIR/proc-PID/   the set of each other process, complete by itself
 *                   (`memdump show -D DIR/proc-PID` reads it); in its
 *                   fdinfo-1.img, each fd whose open file description a
 *                   process dumped before it holds too (kcmp) names that
 *                   process and fd (share_pid, share_fd), and restore gives
 *                   it the description from that process
 *
 * Each process goes through dump.c's steps in turn (the parasite is in one
 * process at a time); all of them stay frozen until every set is written,
 * then all are resumed, or killed, children first. Shared memory two
 * processes map is the same object (its inode) in both sets: restore makes
 * it once; so is a UNIX socket, epoll set or inotify instance each holder
 * writes (restore's sk_unix_tree.c makes a socket and puts its queue back
 * once; epoll_tree.c gives each registration to one holder). A process with
 * its parent's fd table (CLONE_FILES) writes no fds of its own (share.c).
 * What the sets cannot express between processes (pty pairs, another
 * namespace than the root's) is refused by name.
 *
 * Incremental (pre-dump, --prev-images-dir, --track-mem): each process has
 * its own tracker and record (track.c), and each set its own parent: the
 * root's is the option's, a process's proc-PID there is its own (a `parent`
 * link ../PDIR/proc-PID); a process new since then writes every page.
 *
 * --page-server: each process's pages and pagemap go to the page server,
 * into the same layout there (page_xfer.c: its proc-PID directory), the
 * root's COMMIT last; the other images stay here, as for one process.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/kcmp.h>

#include "common.h"
#include "dump/dump.h"
#include "dump/dryrun.h"
#include "files/files.h"
#include "dump/freezer.h"
#include "dump/images.h"
#include "ns/ns.h"
#include "dump/refuse.h"
#include "net/sock.h"
#include "task/task.h"
#include "track/track.h"
#include "ctx/proc_tree.h"
#include "dump/pagelate.h"
#include "dump/zombies.h"
#include "files/tty.h"
#include "image/crypt.h"
#include "image/image.h"
#include "fault.h"
#include "log.h"
#include "proc.h"
#include "vma_status.h"
#include "mem/pages.h"
#include "files/sockets.h"

/* One live process of the tree and its dump. */
struct member {
	struct dump_ctx d;
	struct task_state ts;
	struct dump_opts o;		/* o.pid: this process */
	const struct tree_proc *tp;
	char subdir[32];		/* proc-PID, "" for the root */
	char prev[PATH_MAX];		/* --prev-images-dir: its previous set (relative to its
					 * own), "": none (the root's is the option's) */
	bool prepared;			/* infect_prepare() called: infect_release() undoes it */
	bool seized, inventory;
	struct late_hold late;		/* a pre-dump's pages after the thaw (pagelate.c) */
	bool gone;			/* ... and it exited before they were read: no set */
};

struct tree_dump {
	const struct dump_opts *o;
	struct proc_tree *t;
	struct member *m;		/* the root first, parents before children */
	int n;
	int dirfd;			/* -D (with --encrypt: its staging) */
	struct img_crypt *crypt;	/* --encrypt: seals the staging into -D, or NULL */
	bool leave_running;
	uint64_t frozen_at;		/* the freeze that held: its first process's */
	struct freezer fz;		/* --freeze-cgroup */
	struct warm_file *warm;		/* pages images made before the freeze (pagewarm.c) */
	int nr_warm;
};

static int refuse_options(const struct dump_opts *o, int n)
{
	if (!o->snapshot)
		return 0;
	return fail(-EOPNOTSUPP, "a process tree (%d processes from %d) is not dumped with "
		    "--snapshot yet", n, o->pid);
}

static int members_init(struct tree_dump *td)
{
	int n = 0, ret;

	td->m = calloc(td->t->n, sizeof(*td->m));
	if (!td->m)
		return -ENOMEM;
	for (int i = 0; i < td->t->n; i++) {
		const struct tree_proc *p = &td->t->procs[i];
		struct member *m = &td->m[n];

		if (tree_is_zombie(p))
			continue;	/* its parent's: zombies.c */
		m->tp = p;
		m->o = *td->o;
		m->o.pid = p->pid;
		m->o.tree = td->t;
		if (n)
			m->o.hooks = NULL;	/* the hooks see the tree's root */
		if (n)
			snprintf(m->subdir, sizeof(m->subdir), "proc-%d", p->pid);
		m->d = (struct dump_ctx){ .pid = p->pid, .mode = td->o->mode,
					  .pre_dump = td->o->pre_dump,
					  .keep_tracking = td->o->pre_dump ||
							   (td->o->track_mem && td->leave_running),
					  .progress = td->o->progress && !n,
					  .policy = { .ghost_limit = td->o->ghost_limit,
						      .shell_job = td->o->shell_job, .pid = p->pid,
						      .tree = td->t, .ext_tty = td->o->ext_tty },
					  .pages_write = td->o->pages_write, .staged = td->o->staged,
					  .host_netns = td->o->host_netns,
					  .compress = td->o->compress,
					  .parent = { .dirfd = -1 }, .pages_fd = -1, .tree = td->t,
					  .mnt_ext = td->o->mnt_ext, .nr_mnt_ext = td->o->nr_mnt_ext,
					  .in = { .pidfd = -1, .mem_fd = -1 }, .dir = { .fd = -1 } };
		m->late = (struct late_hold){ -1, -1 };
		m->d.xfer = td->o->xfer;	/* into its proc-PID there (page_xfer.c) */
		m->d.xfer_sub = td->o->xfer ? m->subdir : NULL;
		track_init(&m->d.track, p->pid);
		m->d.sums_late = td->leave_running && !td->o->hooks;	/* finish_member() */
		n++;
		td->n = n;
		ret = track_find(&m->d.track, p->pid);	/* a pre-dump's tracker it holds */
		if (ret)
			return fail(ret, "cannot read the memory tracking record of process %d: %s",
				    p->pid, strerror(-ret));
	}
	td->n = n;
	return 0;
}

/*
 * The namespaces every process must share with the root: restore makes them
 * once. A mount namespace may differ (numbered by number_mnt_ns).
 */
static int check_same_ns(const struct tree_dump *td)
{
	static const char *const kinds[] = { "pid", "net", "uts", "ipc", "cgroup", "user", "time" };

	for (int i = 1; i < td->n; i++)
		for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
			char a[64], b[64];
			struct stat sa, sb;

			snprintf(a, sizeof(a), "/proc/%d/ns/%s", td->m[0].d.pid, kinds[k]);
			snprintf(b, sizeof(b), "/proc/%d/ns/%s", td->m[i].d.pid, kinds[k]);
			if (stat(a, &sa) || stat(b, &sb))
				continue;	/* gone: the freeze tells */
			if (sa.st_ino != sb.st_ino)
				return fail(-EOPNOTSUPP, "process %d (%s) of the tree of %d is in "
					    "another %s namespace than it", td->m[i].d.pid,
					    td->m[i].tp->comm, td->m[0].d.pid, kinds[k]);
		}
	return 0;
}

/*
 * Before the freeze, every process's pages image made in the set's
 * directory, unnamed, its page cache filled (pagewarm.c): the processes
 * as they are now; one that is not a member once the tree is frozen
 * leaves its file unused, which vanishes.
 */
static int warm_tree(struct tree_dump *td)
{
	struct proc_tree t = { 0 };
	pid_t *pids;
	int ret;

	if (!pages_warm_wanted(td->o) || pages_late_opts(td->o) || tree_collect(td->o->pid, &t))
		return 0;	/* a tree that cannot be read is reported at the freeze */
	td->dirfd = dump_open_dir(td->o, &td->crypt);
	pids = calloc(t.n, sizeof(*pids));
	td->warm = calloc(t.n, sizeof(*td->warm));
	ret = td->dirfd < 0 ? td->dirfd : !pids || !td->warm ? -ENOMEM : 0;
	for (int i = 0; !ret && i < t.n; i++)
		pids[i] = t.procs[i].pid;
	if (!ret) {
		td->nr_warm = t.n;
		ret = pages_warm_procs(td->o, pids, t.n, td->dirfd, td->warm);
	}
	free(pids);
	tree_free(&t);
	return ret;
}

/* A member's warmed pages image, if it has one, handed to its dump. */
static void take_warm(struct tree_dump *td, struct dump_ctx *d)
{
	for (int i = 0; i < td->nr_warm; i++) {
		if (td->warm[i].pid != d->pid)
			continue;
		d->pages_fd = td->warm[i].fd;
		d->pages_warm = td->warm[i].bytes;
		d->pages_warm_dirty = td->warm[i].dirty;
		td->warm[i].fd = -1;
		return;
	}
}

static void warm_free(struct tree_dump *td)
{
	for (int i = 0; i < td->nr_warm; i++)
		if (td->warm[i].fd >= 0)
			close(td->warm[i].fd);
	free(td->warm);
	td->warm = NULL;
	td->nr_warm = 0;
}

static int open_dirs(struct tree_dump *td)
{
	if (td->dirfd < 0)
		td->dirfd = dump_open_dir(td->o, &td->crypt);
	if (td->dirfd < 0)
		return td->dirfd;
	td->m[0].d.dir.fd = td->dirfd;
	td->m[0].d.dir.crypt = td->crypt;
	for (int i = 1; i < td->n; i++) {
		struct member *m = &td->m[i];

		if (mkdirat(td->dirfd, m->subdir, 0700))
			return fail(-errno, "cannot create directory %s/%s: %s", td->o->dir,
				    m->subdir, strerror(errno));
		m->d.dir.fd = img_open_subset(td->dirfd, m->subdir);
		if (m->d.dir.fd < 0)
			return m->d.dir.fd;
	}
	return 0;
}

/*
 * --prev-images-dir: each process's previous set is the option's (the
 * root's) or its proc-PID there, named relative to its own set (as its
 * parent link). A process the previous dump did not have writes every page.
 * With --encrypt the root's is decrypted into the staging (parent.c), whole
 * with its proc-PID sets, and the others link theirs there; the sealed set
 * links the real ones (crypt.c).
 */
static int open_parents(struct tree_dump *td)
{
	const char *prev = td->o->prev_dir;
	const struct parent_set *top = &td->m[0].d.parent;
	int ret = prev ? dump_prepare_incremental(&td->m[0].d, prev) : 0;

	for (int i = 1; prev && i < td->n && !ret; i++) {
		struct member *m = &td->m[i];

		snprintf(m->prev, sizeof(m->prev), "%s%s/%s", top->path[0] == '/' ? "" : "../",
			 top->path, m->subdir);
		if (faccessat(top->dirfd, m->subdir, F_OK, 0)) {
			pr_warn("process %d has no set in %s (it is new): every page is written",
				m->d.pid, prev);
			continue;
		}
		ret = dump_prepare_incremental(&m->d, m->prev);
	}
	return ret;
}

/*
 * Under the cgroup freezer every thread of the tree is seized and asked to
 * stop while the cgroup is frozen (the tree cannot change), then the cgroup
 * is thawed into those stops; infect_prepare() below waits for them.
 */
static int preseize_all(struct tree_dump *td)
{
	struct preseized ps = { 0 };
	int ret = 0;

	for (int i = 0; i < td->n && !ret; i++)
		ret = infect_preseize(td->m[i].d.pid, &ps);
	if (!ret)
		ret = freezer_thaw(&td->fz);
	if (!ret)
		ret = infect_preseize_wait(&ps);
	infect_preseized_free(&ps);
	return ret;
}

/*
 * Parents first: a frozen parent forks no more; a child it forked before is caught after.
 * A parent in vfork() waits for its child's exec or exit in a sleep no ptrace stop
 * interrupts: it is not waited for (the freeze would hang), the checks refuse it.
 */
static int freeze_all(struct tree_dump *td)
{
	int ret = td->fz.dirfd >= 0 ? preseize_all(td) : 0;

	for (int i = 0; i < td->n && !ret; i++) {
		struct member *m = &td->m[i];
		pid_t child = share_vfork_child(m->d.pid, td->t);

		if (child)
			return fail(-EOPNOTSUPP, "process %d cannot be stopped: it is in vfork(), "
				    "its child %d shares its memory", m->d.pid, child);
		m->d.stopped = dump_target_stopped(m->d.pid);
		m->prepared = true;
		ret = infect_prepare(&m->d.in, m->d.pid, &dump_interrupted);
		m->seized = !ret;
	}
	return ret;
}

/* Every process infect_prepare() was called for, its failed one included, let go. */
static void unfreeze_all(struct tree_dump *td)
{
	for (int i = td->n - 1; i >= 0; i--) {
		if (!td->m[i].prepared)
			continue;
		infect_release(&td->m[i].d.in, false);
		td->m[i].prepared = td->m[i].seized = false;
	}
}

/* Has the tree changed since td->t was read (a fork, an exit)? */
static bool tree_changed(const struct tree_dump *td)
{
	struct proc_tree now;
	bool changed = tree_collect(td->o->pid, &now) || !tree_same(td->t, &now);

	tree_free(&now);
	return changed;
}

static void members_reset(struct tree_dump *td);

static unsigned long mnt_ns_of(pid_t pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", pid);
	return stat(path, &st) ? 0 : (unsigned long)st.st_ino;
}

/*
 * Each mount namespace other than the root's, numbered from 2 in tree order
 * (mountpoints-N.img, ids' mnt_ns_id); its first process writes its image.
 */
static void number_mnt_ns(struct tree_dump *td)
{
	unsigned long root = mnt_ns_of(td->m[0].d.pid), *ino = calloc(td->n, sizeof(*ino));
	uint32_t next = 2;

	for (int i = 1; ino && i < td->n; i++) {
		struct dump_ctx *d = &td->m[i].d;

		ino[i] = mnt_ns_of(d->pid);
		if (!ino[i] || ino[i] == root)
			continue;	/* gone: the freeze tells */
		for (int j = 1; j < i && !d->mnt_ns_id; j++)
			if (ino[j] == ino[i])
				d->mnt_ns_id = td->m[j].d.mnt_ns_id;
		if (!d->mnt_ns_id) {
			d->mnt_ns_id = next++;
			d->mnt_ns_first = true;
		}
	}
	free(ino);
}

/* What memdump cannot dump in the tree: every process's refusals, in one. */
static int check_tree(struct tree_dump *td)
{
	int ret = refuse_check_tree(&td->m[0].o);

	if (ret) {	/* a process in another namespace too: say that as well */
		char why[2048];

		snprintf(why, sizeof(why), "%s", fail_reason());
		fail_clear();
		if (check_same_ns(td)) {
			char ns[256];

			snprintf(ns, sizeof(ns), "%s", fail_reason());
			fail_clear();
			return fail(ret, "%s; %s", why, ns);
		}
		return fail(ret, "%s", why);
	}
	ret = check_same_ns(td);
	if (!ret)
		number_mnt_ns(td);
	return ret;
}

/* After a failed freeze: the checks' whole refusal if they refuse, else the freeze's reason. */
static int refuse_or(struct tree_dump *td, int ret)
{
	char why[1024];
	int refused;

	snprintf(why, sizeof(why), "%s", fail_reason());
	fail_clear();
	refused = check_tree(td);
	if (refused)
		return refused;
	fail_clear();
	return fail(ret, "%s", why);
}

/*
 * Read the tree and freeze it, parents first; read it again: a child forked,
 * or a process that exited, meanwhile makes it go round again (every process
 * resumed), as the freeze of threads does. The window between the read and
 * the freeze is kept short (a shell forking a `sleep` every 50 ms must be
 * caught on a loaded machine): the tree is checked once it is frozen and
 * can no longer change. A freeze that fails (a process traced by another)
 * is followed by the checks on the running tree, so that the refusal names
 * everything memdump cannot dump, not only the first.
 */
static int freeze_stable(struct tree_dump *td)
{
	for (int pass = 0; pass < TREE_MAX_PASSES; pass++) {
		int ret;

		td->fz.trace = td->o->trace;
		ret = td->o->freeze_cgroup ? freezer_freeze(&td->fz, td->o->freeze_cgroup,
							    td->o->pid) : 0;
		if (ret)
			return ret;
		ret = tree_collect(td->o->pid, td->t);
		if (ret)
			return fail(ret, "cannot read the process tree of %d: %s", td->o->pid,
				    strerror(-ret));
		ret = members_init(td);
		td->frozen_at = now_us();
		if (!ret)
			ret = freeze_all(td);
		if (!ret && !tree_changed(td))	/* frozen: on a refusal run() resumes it */
			return (td->n > 1 ? sk_tree_index(td->t) : 0) ?: check_tree(td);
		if (ret == -ENOMEM)
			return ret;
		if (ret && !tree_changed(td)) {
			unfreeze_all(td);
			ret = refuse_or(td, ret);
			if (ret != -ESRCH)	/* a process that exited, nothing refused: again */
				return ret;
		}
		fail_clear();
		unfreeze_all(td);
		members_reset(td);
	}
	return fail(-EAGAIN, "the process tree of %d kept changing over %d freezes", td->o->pid,
		    TREE_MAX_PASSES);
}

/* Its fd table and fs ids (share.c): the earlier processes' tables compared with its own. */
static int share_tables(struct tree_dump *td, int k)
{
	const struct dump_ctx *prev[td->n];

	for (int j = 0; j < k; j++)
		prev[j] = &td->m[j].d;
	return share_ids(&td->m[k].d, prev, k, td->m[k].tp->ppid);
}

static const struct file_desc *desc_of(const struct dump_ctx *d, int id)
{
	return id > 0 && id <= d->files.nr_descs ? &d->files.descs[id - 1] : NULL;
}

/* fd of process k and the earlier process's fd with the same description, or -1. */
static int find_owner(const struct tree_dump *td, int k, const struct fd_entry *fe,
		      int *owner_fd)
{
	const struct dump_ctx *d = &td->m[k].d;
	const struct file_desc *f = desc_of(d, fe->id);

	for (int j = 0; j < k; j++) {
		const struct dump_ctx *o = &td->m[j].d;

		for (int i = 0; i < o->files.nr_fds && !o->kobj.files_shared; i++) {
			const struct file_desc *g = desc_of(o, o->files.fds[i].id);

			if (!f || !g || g->kind != f->kind || g->st.st_dev != f->st.st_dev ||
			    g->st.st_ino != f->st.st_ino)
				continue;
			if (syscall(SYS_kcmp, o->pid, d->pid, KCMP_FILE, o->files.fds[i].fd,
				    fe->fd) == 0) {
				*owner_fd = o->files.fds[i].fd;
				return j;
			}
		}
	}
	return -1;
}

/* The innermost of pid's PIDs (NSpid's last), as its namespace shows it; pid if unknown. */
static pid_t innermost_pid(pid_t pid)
{
	char buf[128], *last;

	if (proc_task_status_field(pid, pid, "NSpid", buf, sizeof(buf)))
		return pid;
	last = strrchr(buf, '\t');
	return (pid_t)atoi(last ? last + 1 : buf);
}

/*
 * A /proc file of a process of the tree (/proc/self/..., /proc/N/... with N as
 * memdump or the process's namespace sees it): the restored process opens it
 * itself (files_restore.c), once N exists. Other /proc files memdump opens.
 */
static bool proc_file_of_tree(const struct tree_dump *td, const char *path)
{
	const char *p = path + 6;
	char *end;
	long n;

	if (!strncmp(p, "self/", 5) || !strncmp(p, "thread-self/", 12))
		return true;
	n = strtol(p, &end, 10);
	if (end == p || *end != '/' || n <= 0)
		return false;
	for (int j = 0; j < td->n; j++)
		if (td->m[j].d.pid == n || innermost_pid(td->m[j].d.pid) == n)
			return true;
	return false;
}

/* Kinds whose sharing between processes restore cannot give yet. */
static const char *unshareable(const struct tree_dump *td, const struct file_desc *f)
{
	if (f->kind == FK_NSFILE)	/* each of these the restored process opens itself */
		return "a namespace file";
	if (f->kind == FK_PIDFD)
		return "a pidfd";
	if (f->kind == FK_REG && f->path && !strncmp(f->path, "/proc/", 6) &&
	    proc_file_of_tree(td, f->path))
		return "a /proc file of a process of the tree";
	if (f->kind == FK_SOCKET && (!f->sk || (f->sk->family != AF_INET &&
					       f->sk->family != AF_INET6 && f->sk->family != AF_UNIX)))
		return "a socket other than TCP, UDP or UNIX";
	return NULL;
}

/* Its fds whose description an earlier process holds: marked for fdinfo-1.img (write_fdinfo). */
static int share_fds(struct tree_dump *td, int k)
{
	struct dump_ctx *d = &td->m[k].d;

	for (int i = 0; i < d->files.nr_fds; i++) {
		struct fd_entry *fe = &d->files.fds[i];
		int owner_fd, j = find_owner(td, k, fe, &owner_fd);
		const char *what;

		if (j < 0)
			continue;
		what = unshareable(td, desc_of(d, fe->id));
		if (what)
			return fail(-EOPNOTSUPP, "its fd %d is %s that process %d holds too, which "
				    "restore does not share yet", fe->fd, what, td->m[j].d.pid);
		fe->share_pid = td->m[j].d.pid;
		fe->share_fd = owner_fd;
	}
	return 0;
}

/* The root's pstree.img lists every live process of the tree after its own zombies. */
static int list_members(struct tree_dump *td)
{
	struct dump_ctx *root = &td->m[0].d;

	root->below = calloc(td->n, sizeof(*root->below));
	if (!root->below)
		return -ENOMEM;
	for (int i = 1; i < td->n; i++) {
		const struct member *m = &td->m[i];
		struct tree_pstree *e = &root->below[root->nr_below++];

		*e = (struct tree_pstree){ .pid = m->tp->pid, .ppid = m->tp->ppid,
					   .pgid = m->tp->pgid, .sid = m->tp->sid };
		e->tids = calloc(m->d.in.nr_threads + 1, sizeof(*e->tids));
		if (!e->tids)
			return -ENOMEM;
		for (int t = 0; t < m->d.in.nr_threads; t++)
			e->tids[e->nr_tids++] = m->d.in.threads[t].tid;
	}
	return 0;
}

/* One process: read, its pages and images written, its parasite gone again. */
/* Gone, or a zombie its frozen parent has not reaped. */
static bool died(pid_t pid)
{
	struct proc_stat st;

	return proc_read_stat(pid, &st) || st.state == 'Z' || st.state == 'X';
}

/* A process of the tree that was killed during its dump (a tracee's exit is
 * seen by whichever process's dump polls for it), or 0. */
static pid_t dead_member(const struct tree_dump *td)
{
	for (int i = 0; i < td->n; i++)
		if (died(td->m[i].d.pid))
			return td->m[i].d.pid;
	return 0;
}

/* Its parent among the members dumped before it (parents come first), or NULL. */
static const struct dump_ctx *parent_member(const struct tree_dump *td, int k)
{
	for (int i = 0; i < k; i++)
		if (td->m[i].d.pid == td->m[k].tp->ppid)
			return &td->m[i].d;
	return NULL;
}

static int dump_member(struct tree_dump *td, int k)
{
	const struct dump_ctx *prev[td->n];
	pid_t dead;
	struct member *m = &td->m[k];
	int ret;

	m->d.tree_parent = parent_member(td, k);	/* the pages they share: cowpages.c */
	for (int j = 0; j < k; j++)
		prev[j] = &td->m[j].d;
	m->d.tree_prev = prev;		/* the files in flight they hold: sk_scm_tree.c */
	m->d.nr_tree_prev = k;

	m->d.trace = td->o->trace;
	if (m->d.trace)
		m->d.trace->in.pid = m->d.pid;
	m->d.in.trace = td->o->trace ? &td->o->trace->in : NULL;
	m->d.stats.freeze_start = td->m[0].d.stats.freeze_start;
	m->d.stats.frozen_at = td->m[0].d.stats.frozen_at;
	m->d.stats.threads = m->d.in.nr_threads;
	take_warm(td, &m->d);
	m->d.own_ns = ns_saved_mask(m->d.pid, td->o->ext_net_ino);
	m->d.ext_net_key = ns_own_mask(m->d.pid) != m->d.own_ns ? td->o->ext_net_key : NULL;
	ret = m->d.pre_dump ? 0 : collect_zombies(&m->d);
	if (!ret)
		ret = dump_collect(&m->d, &m->ts, &m->o);	/* a pre-dump: memory only */
	if (!ret && !m->d.pre_dump)
		ret = share_tables(td, k);
	if (!ret && !m->d.pre_dump && k && !m->d.kobj.files_shared)	/* its parent's table */
		ret = share_fds(td, k);
	if (!ret)
		ret = dump_write_images(&m->d, &m->ts, false);
	m->d.tree_prev = NULL;		/* prev goes with this frame */
	m->d.nr_tree_prev = 0;
	dead = ret ? dead_member(td) : 0;
	if (dead) {	/* SIGKILL reaches a frozen process: say so */
		fail_clear();
		return fail(-ESRCH, "process %d of the tree of %d was killed during the dump",
			    dead, td->o->pid);
	}
	if (ret)
		fail_context("process %d of the tree of %d: ", m->d.pid, td->o->pid);
	return ret;
}

/* A process other than the root, its images written: what dump_finish_images() does for it. */
static int finish_member(struct tree_dump *td, struct member *m)
{
	int ret = td->leave_running ? tty_put_back(&m->d) : sockets_check_queues(&m->d);

	if (!ret && !td->leave_running)
		ret = dump_dry_run(&m->d);	/* as dump_finish_images() does for the root */
	m->inventory = !td->leave_running || (td->o->hooks && !m->d.pages_late);
	if (!ret && m->inventory)
		ret = write_inventory(&m->d);
	if (!ret && m->inventory)
		ret = img_add_subset(&td->m[0].d.dir, m->subdir);
	return ret;
}

/* Children first: the root's inventory lists their sets. */
static int finish_all(struct tree_dump *td)
{
	struct dump_ctx *ds[td->n];
	int ret = 0;

	for (int i = 0; i < td->n; i++)
		ds[i] = &td->m[i].d;
	if (!td->m[0].d.pre_dump)	/* every process's sockets known: the restore's view */
		ret = sockets_check_peercred(ds, (size_t)td->n);
	for (int i = td->n - 1; i > 0 && !ret; i--)
		ret = finish_member(td, &td->m[i]);
	if (!ret)
		ret = dump_finish_images(&td->m[0].d, td->o, td->leave_running,
					 &td->m[0].inventory);
	return ret;
}

/*
 * Before any process's connections are finished: resumed, every lock off
 * (then the window probes reach the other ends: sockets.h); killed, every
 * process sent SIGKILL (memdump dying between two would leave a process
 * running whose peers in the tree are dead, its connections cut by their
 * locks kept for a restore that cannot be: its PID is taken).
 */
static void release_first(struct tree_dump *td)
{
	for (int i = td->n - 1; i >= 0; i--)
		if (td->leave_running)
			sockets_unlock(&td->m[i].d);
		else
			infect_doom(&td->m[i].d.in);	/* it never runs again: the lock is kept */
}

/* A process's set below the root's: its images, then its directory. */
static void remove_subset(struct tree_dump *td, struct member *m)
{
	img_remove_created(&m->d.dir);
	unlinkat(td->dirfd, m->subdir, AT_REMOVEDIR);
}

/*
 * A pre-dump's pages, read from the running tree (pagelate.c). A process
 * other than the root that exited meanwhile (a shell's short-lived child)
 * gets no set: the tree's next dump does not look for one. Not to a page
 * server, which would keep the part it got.
 */
static int late_member(struct tree_dump *td, struct member *m, bool root)
{
	int ret = pages_late_write(&m->d, &m->late);

	if (ret != -ESRCH || root || td->o->xfer || !pidfd_exited(m->late.pidfd))
		return ret;
	fail_clear();
	pr_info("process %d of the tree of %d exited before its pages were read: no set of it",
		m->d.pid, td->o->pid);
	remove_subset(td, m);
	track_gone(&m->d.track);
	m->gone = true;
	return 0;
}

/* Resumed (or killed, children first), then what waited for that: inventories, the disk. */
static int release_all(struct tree_dump *td)
{
	int ret = 0;

	release_first(td);
	for (int i = td->n - 1; i >= 0; i--) {
		bool locked = td->m[i].d.sockets.locked;
		int r = 0;

		if (td->leave_running)
			sockets_finish(&td->m[i].d, false);
		else
			r = sockets_finish(&td->m[i].d, true);
		ret = ret ?: r;
		if (td->m[i].d.pages_late)
			pages_late_hold(&td->m[i].d, &td->m[i].late);
		infect_release(&td->m[i].d.in, !td->leave_running);
		td->m[i].d.stats.unfrozen_at = now_us();
		td->m[i].prepared = td->m[i].seized = false;
		if (!td->leave_running && locked)
			fault_point("target-killed");
	}
	for (int i = 0; i < td->n && !ret; i++)	/* a pre-dump's: from the running tree */
		if (td->m[i].d.pages_late)
			ret = late_member(td, &td->m[i], i == 0);
	for (int i = td->n - 1; i > 0 && !ret; i--) {
		struct member *m = &td->m[i];

		if (m->gone)
			continue;
		if (!m->inventory)
			ret = write_inventory(&m->d);
		if (!ret && !m->inventory)
			ret = img_add_subset(&td->m[0].d.dir, m->subdir);
		if (!ret)
			ret = dump_make_durable(&m->d, td->leave_running);
	}
	if (!ret && !td->m[0].inventory)
		ret = write_inventory(&td->m[0].d);
	if (!ret && td->m[0].d.pages_late)	/* a pre-dump's: the sets complete, the tree running */
		ret = hook_fire(td->o->hooks, HOOK_POST_DUMP, td->o->pid);
	for (int i = 0; i < td->n && !ret; i++)	/* every set complete: trackers name them */
		ret = dump_track_commit(&td->m[i].d);
	if (!ret)
		ret = dump_make_durable(&td->m[0].d, td->leave_running);
	return ret;
}

static void remove_subsets(struct tree_dump *td)
{
	for (int i = 1; i < td->n; i++)
		remove_subset(td, &td->m[i]);
}

/* A failure before the release: every process as it was, nothing of the set left. */
static void undo_all(struct tree_dump *td)
{
	for (int i = td->n - 1; i >= 0; i--)	/* every lock off before any probe */
		sockets_unlock(&td->m[i].d);
	for (int i = td->n - 1; i >= 0; i--) {
		struct member *m = &td->m[i];

		if (m->d.dir.fd >= 0 && i)
			unlinkat(m->d.dir.fd, "inventory.img", 0);
		if (m->seized || m->d.in.nr_threads)
			dump_undo(&m->d);
		m->prepared = m->seized = false;
	}
	if (td->dirfd >= 0)
		unlinkat(td->dirfd, "inventory.img", 0);
	remove_subsets(td);
}

static void members_free(struct tree_dump *td);

/* Back to no member: the tree is read again. */
static void members_reset(struct tree_dump *td)
{
	members_free(td);
	td->m = NULL;
	td->n = 0;
	tree_free(td->t);
}

static void members_free(struct tree_dump *td)
{
	for (int i = 0; td->m && i < td->n; i++) {
		struct dump_ctx *d = &td->m[i].d;

		for (int b = 0; b < d->nr_below; b++)
			free(d->below[b].tids);
		free(d->below);
		if (d->dir.fd >= 0)
			close(d->dir.fd);
		pages_late_drop(&td->m[i].late);
		dump_ctx_free(d);
	}
	free(td->m);
}

static void tree_summary(const struct tree_dump *td, uint64_t frozen_us)
{
	int threads = 0;
	uint64_t pages = 0;

	for (int i = 0; i < td->n; i++) {
		threads += td->m[i].d.stats.threads;
		pages += td->m[i].d.stats.pages_written;
		dump_summary(&td->m[i].d, frozen_us, true);
	}
	if (log_level() == LOG_NONE)
		return;
	if (td->o->quiet) {
		pr_info("%s process tree of %d: %d processes, %d threads, %lu pages in %.3f s "
			"frozen", td->o->pre_dump ? "pre-dumped" : "dumped", td->o->pid, td->n, threads, (unsigned long)pages, frozen_us / 1e6);
		return;
	}
	printf("%s process tree of %d: %d processes, %d threads, %lu pages (%.1f MB) in %.3f s "
	       "frozen%s, %s mode; on disk after %.3f s\n", td->o->pre_dump ? "pre-dumped" : "dumped",
	       td->o->pid, td->n, threads, (unsigned long)pages, pages * 4096 / 1e6, frozen_us / 1e6,
	       td->m[0].d.pages_late ? " (its pages read after the thaw)" : "", mode_name(td->o->mode),
	       (td->m[0].d.stats.durable_at - td->m[0].d.stats.frozen_at) / 1e6);
	fflush(stdout);
}

static int run(struct tree_dump *td)
{
	struct dump_ctx *root;
	uint64_t frozen_us, start = now_us();
	pid_t dead;
	int ret = hook_fire(td->o->hooks, HOOK_PRE_DUMP, td->o->pid);

	if (!ret)
		ret = warm_tree(td);	/* while it runs: the frozen copies are faster */
	if (!ret)
		ret = freeze_stable(td);
	if (ret) {
		unfreeze_all(td);
		return ret;
	}
	root = &td->m[0].d;
	root->stats.freeze_start = start;
	root->stats.frozen_at = td->frozen_at;	/* the root froze first */
	ret = open_dirs(td);
	if (!ret)
		ret = open_parents(td);
	if (!ret)
		ret = list_members(td);
	for (int i = 0; i < td->n && !ret; i++)
		ret = dump_member(td, i);
	if (!ret)
		ret = finish_all(td);
	if (!ret && td->leave_running && (dead = dead_member(td)))
		ret = fail(-ESRCH, "process %d died during the dump", dead);
	if (ret) {
		undo_all(td);
		return ret;
	}
	if (td->leave_running && freezer_refreeze(&td->fz))
		pr_warn("%s: the paused tree runs on", fail_reason());
	ret = release_all(td);
	frozen_us = now_us() - root->stats.frozen_at;
	root->stats.durable_at = now_us();
	for (int i = 1; i < td->n; i++) {	/* one freeze and one sync for the whole tree */
		td->m[i].d.stats.frozen_at = root->stats.frozen_at;
		td->m[i].d.stats.durable_at = root->stats.durable_at;
	}
	if (ret && td->leave_running) {
		for (int i = 0; i < td->n; i++)
			if (td->m[i].d.pages_late)
				pages_late_undo(&td->m[i].d, &td->m[i].late);
		remove_subsets(td);
		img_remove_created(&root->dir);
	}
	for (int i = 0; i < td->n; i++)
		img_forget_created(&td->m[i].d.dir);
	for (int i = 0; !ret && td->o->pages_written && i < td->n; i++)
		*td->o->pages_written += td->m[i].d.stats.pages_written;
	if (!ret)
		tree_summary(td, frozen_us);
	return ret;
}

int dump_tree(const struct dump_opts *o, struct proc_tree *t)
{
	struct tree_dump td = { .o = o, .t = t, .dirfd = -1,
				.leave_running = o->leave_running || o->pre_dump,
				.fz = { .dirfd = -1 } };
	int ret;

	if (!o->pid || !o->dir)
		return fail(-EINVAL, "dump needs -t PID and -D DIR");
	ret = refuse_options(o, t->n);
	tree_free(t);	/* read again at the freeze */
	if (!ret) {
		dump_catch_signals();
		ret = target_check(o->pid);
	}
	if (!ret)
		ret = run(&td);
	freezer_end(&td.fz);	/* the tree released: its cgroup as it was */
	warm_free(&td);
	if (td.dirfd >= 0 && (!td.m || td.m[0].d.dir.fd != td.dirfd))
		close(td.dirfd);	/* opened for the warming, never handed to the root */
	members_free(&td);
	crypt_free(td.crypt);
	return ret;
}
