/*
 * memdump dump: the pipeline.
 *
 *   check the target, freeze every thread, read VMAs and fds, infect,
 *   collect per-thread and process state, select pages, write pages (the
 *   target stays frozen until all of them are on disk), cure, write the
 *   other images, kill or resume the target, then write inventory.img last.
 *
 * memdump pre-dump is the same with memory only (VMAs, pages, pagemap,
 * stats, inventory), the target left running and its memory tracked from
 * then on (track.c); a dump with --prev-images-dir then writes only the
 * pages written since (pagescan.c, parent.c).
 *
 * Any failure: the images written so far are removed, the target is cured
 * and resumed untraced, and the reason is reported once by main().
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"
#include "dump/dump.h"
#include "dump/dryrun.h"
#include "dump/pagelate.h"
#include "mem/snapshot.h"
#include "infect/infect.h"
#include "dump/images.h"
#include "evloop/uffd.h"
#include "evloop/iouring.h"
#include "ns/ns.h"
#include "ns/pidns.h"
#include "dump/refuse.h"
#include "evloop/uffd.h"
#include "files/files.h"
#include "image/crypt.h"
#include "image/image.h"
#include "kernel_uapi.h"
#include "fault.h"
#include "log.h"
#include "proc.h"
#include "mem/shmem.h"
#include "task/task.h"
#include "ctx/proc_tree.h"
#include "dump/zombies.h"
#include "files/tty.h"
#include "mem/pages.h"
#include "mem/vma.h"
#include "files/sockets.h"

volatile sig_atomic_t dump_interrupted;

static void on_signal(int sig)
{
	(void)sig;
	dump_interrupted = 1;
}

/* SIGINT, SIGTERM, SIGHUP (also sent when memdump's parent process dies,
 * see worker.c) stop the dump cleanly. */
void dump_catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static int open_real_dir(const char *dir, bool overwrite)
{
	int fd;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return fail(-errno, "cannot create directory %s: %s", dir, strerror(errno));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return fail(-errno, "cannot open directory %s: %s", dir, strerror(errno));
	if (faccessat(fd, ".", W_OK, AT_EACCESS)) {
		close(fd);
		return fail(-EACCES, "directory %s is not writable", dir);
	}
	if (overwrite) {
		int ret = img_replace_set(fd, dir);

		if (ret) {
			close(fd);
			return ret;
		}
	} else if (!faccessat(fd, "inventory.img", F_OK, 0)) {
		close(fd);
		return fail(-EEXIST, "directory %s already holds a dump (inventory.img; --overwrite "
			    "replaces it)", dir);
	}
	return fd;
}

int dump_open_dir(const struct dump_opts *o, struct img_crypt **crypt)
{
	int fd = open_real_dir(o->dir, o->overwrite), stage, ret;

	*crypt = NULL;
	if (fd < 0 || !o->key)
		return fd;
	ret = crypt_stage(o->key, fd, crypt, &stage);
	return ret < 0 ? ret : stage;
}

/* A SIGSTOPped target stays so with --leave-running and is restored stopped. */
bool dump_target_stopped(pid_t pid)
{
	struct proc_stat st;

	return proc_read_stat(pid, &st) == 0 && st.state == 'T';
}

/*
 * The tracker, when the target has one or is to get one: taken (or
 * created), and every trackable VMA registered with it.
 */
static int track_start(struct dump_ctx *d)
{
	int ret;

	if (d->track.fd < 0 && d->track.tmp_fd < 0 && !d->keep_tracking)
		return 0;
	ret = track_attach(d);
	return ret ? ret : track_register(d);
}

/*
 * Every page is in the image: the tracker goes, or protects the memory again
 * for the next iteration. Until the new set is complete (track_commit) the
 * record says nothing is known: a dump that fails from here on leaves the
 * next one dumping every page, never trusting protections it reset.
 */
static int track_finish(struct dump_ctx *d)
{
	int ret;

	if (d->track.local < 0)
		return 0;
	if (!d->keep_tracking && d->track_drop_late) {
		d->track_dropped = true;	/* dump_undo(), or it goes with the target */
		return 0;
	}
	if (!d->keep_tracking)
		return track_remove(&d->in, &d->track);
	d->track.base = 0;
	ret = track_state_save(&d->track);
	return ret ? ret : track_protect(d);
}

/* The new set is complete: pages not written from now on are its own. */
int dump_track_commit(struct dump_ctx *d)
{
	uint64_t size;
	int ret;

	if (d->track.local < 0 || !d->keep_tracking)
		return 0;
	ret = img_sum_file(d->dir.fd, "inventory.img", &size, &d->track.base);
	return ret ? ret : track_state_save(&d->track);
}

/* A pre-dump reads memory only: in read and mem modes after the thaw (pagelate.c). */
static int collect_memory(struct dump_ctx *d)
{
	int ret = collect_vmas(d);

	if (!ret)
		ret = track_start(d);
	if (!ret)
		ret = infect_parasite(&d->in);
	if (!ret)
		ret = select_pages(d);
	if (!ret)
		d->pages_late = pages_late_wanted(d);
	return ret;
}

/* Everything read while the target is frozen, before its pages. */
int dump_collect(struct dump_ctx *d, struct task_state *ts, const struct dump_opts *o)
{
	int ret = 0;

	if (d->pre_dump)
		return collect_memory(d);
	ret = collect_threads(d);
	if (!ret)
		ret = collect_seccomp(d);
	if (!ret)
		ret = collect_pending_signals(d->pid, true, &d->sigpending, &d->nr_sigpending);
	if (!ret)
		collect_stop_state(d);
	if (!ret)
		ret = collect_vmas(d);
	if (!ret && o->tcp_established)
		ret = hook_fire(o->hooks, HOOK_NETWORK_LOCK, d->pid);
	if (!ret)
		ret = sockets_prepare(d, o);	/* the network lock first */
	if (!ret)
		ret = collect_fds(d);	/* before the parasite adds its own */
	if (!ret)
		ret = track_start(d);
	if (!ret)
		ret = select_pages_start(d);	/* beside the remote calls: they move no page */
	if (!ret)
		ret = infect_parasite(&d->in);
	if (!ret)
		ret = collect_mlock_future(d);	/* from the area just mapped */
	for (int i = 0; i < d->nr_threads && !ret; i++)
		ret = collect_thread_sched(d, i);
	if (!ret)
		ret = collect_posix_timers(d);	/* remote syscalls, before the blob runs */
	if (!ret)
		ret = collect_threads_inside(d);	/* the leader's: collect_leader_inside */
	if (!ret)
		ret = collect_leader_inside(d, ts);
	if (!ret)
		ret = collect_task(d, ts);
	if (!ret)
		ret = collect_task_attrs(d, &ts->attrs);
	if (ret)
		select_pages_wait(d);	/* the first error is the one reported */
	return ret ?: select_pages_wait(d) ?: cow_select(d);
}

int dump_write_images(struct dump_ctx *d, const struct task_state *ts, bool snapshot)
{
	/* the snapshot writes most pages once the target runs again */
	int ret = snapshot ? snapshot_arm(d) : 1;

	if (ret == 1)
		ret = d->pages_late ? 0 : write_pages(d);	/* else after the thaw */

	/* every page is on disk: the parasite can go, but from a process that
	 * is killed next only if the dump fails (dump_undo) */
	if (!d->cure_late || d->track.local >= 0)
		infect_cure(&d->in);
	if (!ret)
		ret = track_finish(d);	/* remote syscalls: not while the blob runs */
	if (!ret && d->nr_parent_runs)
		ret = parent_link(d);
	if (!ret && d->pre_dump)
		return d->pages_late ? 0 : write_stats(d);
	if (!ret)
		ret = write_shmem(d);	/* still frozen: one instant */
	if (!ret)
		ret = ns_dump(d);	/* System V objects too */
	if (!ret)
		ret = write_task_images(d, ts);
	if (!ret)
		ret = write_files(d);
	if (!ret)
		ret = write_stats(d);
	if (!ret && dump_interrupted)
		ret = fail(-EINTR, "interrupted");
	return ret;
}

/*
 * Images were written into the page cache: to the disk with them, now that
 * the target runs again or is gone. For a killing dump a failure here comes
 * too late to save the process; the set loses its inventory, so that it is
 * never taken for complete. A set staged for --stream is not synced: it is
 * packed from the page cache and removed (the stream's reader keeps it).
 */
int dump_make_durable(struct dump_ctx *d, bool leave_running)
{
	int ret;

	pages_flush_end(d);	/* the pages image's writeback is queued: the sync waits for it */
	if (d->staged && !d->dir.crypt)	/* encrypted: the sync is where the sealed files are written */
		return 0;	/* --stream: the stream is the set's home, packed from the cache */
	ret = img_sync_all(&d->dir);

	if (ret && !leave_running) {
		unlinkat(d->dir.fd, "inventory.img", 0);
		fsync(d->dir.fd);
		pr_err("process %d was killed, but its images are not on the disk", d->pid);
	}
	return ret;
}

/*
 * A snapshot's frozen time ends at the thaw; the target pays more after it,
 * which is not in it: the waits of its threads whose writes hit a page not
 * saved yet (counted), and, in a VM with shadow page tables, its page
 * tables rebuilt after the write protection (not measurable from here).
 */
static void snapshot_note(const struct dump_ctx *d, char *buf, size_t len)
{
	if (d->pages_late)
		snprintf(buf, len, " (its pages read after the thaw)");
	if (d->stats.snapshot)
		snprintf(buf, len, " (snapshot: not counted, %lu page(s) the target waited for after "
			 "the thaw, and its page-table faults after the write protection)",
			 d->stats.snap_fault_pages);
}

void dump_summary(const struct dump_ctx *d, uint64_t frozen_us, bool quiet)
{
	double mb = d->stats.bytes_written / 1e6;
	double mem_s = (d->stats.mem_end - d->stats.mem_start) / 1e6;
	char line[512];

	char parent[64] = "", snap[160] = "";

	if (log_level() == LOG_NONE)
		return;
	if (d->nr_parent_runs)
		snprintf(parent, sizeof(parent), " (%lu more in the parent's)",
			 d->stats.pages_in_parent);
	snapshot_note(d, snap, sizeof(snap));
	snprintf(line, sizeof(line), "%s process %d: %d thread(s), %d VMAs, %lu pages (%.1f MB)%s "
		 "in %.3f s frozen%s, %s mode%s, %.0f MB/s; on disk after %.3f s",
		 d->pre_dump ? "pre-dumped" : "dumped", d->pid, d->stats.threads, d->nr_vmas,
		 d->stats.pages_written, mb, parent, frozen_us / 1e6, snap, mode_name(d->mode),
		 !d->stats.pages_cached ? "" : d->stats.pages_direct_tail ?
		 " via the page cache, then O_DIRECT" : " via the page cache", mem_s > 0 ? mb / mem_s : 0,
		 (d->stats.durable_at - d->stats.frozen_at) / 1e6);
	if (quiet) {
		pr_info("%s", line);
		return;
	}
	printf("%s\n", line);
	fflush(stdout);
}

void dump_ctx_free(struct dump_ctx *d)
{
	snapshot_end(d);	/* armed before a failure, maybe */
	pages_flush_abort(d);
	for (int i = 0; i < d->nr_threads; i++) {
		free(d->threads[i].xsave);
		free(d->threads[i].sigpending);
	}
	free(d->sigpending);
	free(d->ptimers);
	free(d->threads);
	free(d->vmas);
	free(d->runs);
	free(d->parent_runs);
	free(d->tparent_runs);
	free(d->run_sums);
	free(d->late_sums);
	free(d->run_marks);
	free(d->late_marks);
	if (d->pages_fd >= 0)
		close(d->pages_fd);
	parent_free(d);
	track_close(&d->track);
	free(d->guards);
	if (d->uffd)
		uffd_state_free(d->uffd);
	free(d->uffd);
	for (size_t i = 0; i < d->nr_iourings; i++)
		iouring_entry_free(d->iourings[i]);
	free(d->iourings);
	d->iourings = NULL;
	d->nr_iourings = 0;
	free(d->zombies);
	files_free(&d->files);
	sk_set_free(&d->sockets);
	shmem_free(&d->shmem);
	seccomp_free(d);
}

const char *mode_name(enum dump_mode m)
{
	static const char *names[] = { "splice", "read", "mem" };

	return names[m];
}

/* Once the target runs again after the network-lock hook: tell the hooks (it cannot fail the dump). */
static void network_unlocked(const struct dump_opts *o, pid_t pid)
{
	if (o->tcp_established)
		hook_fire_late(o->hooks, HOOK_NETWORK_UNLOCK, pid);
}

/*
 * The images are complete, the target still frozen: post-dump. With hooks the
 * inventory is written first, so that they see a complete set.
 */
int dump_finish_images(struct dump_ctx *d, const struct dump_opts *o, bool leave_running,
		       bool *inventory)
{
	int ret = leave_running ? tty_put_back(d) : 0;	/* the bytes queued in its ptys */

	/* a pre-dump's pages come after the thaw: its post-dump hook too (dump_pipeline()) */
	*inventory = !leave_running || (o->hooks && !d->pages_late);
	if (!ret && !d->pre_dump)	/* a pre-dump writes no pstree.img: memory only */
		ret = dump_check_sessions(d);	/* a tree's: what restore rebuilds */
	if (!ret && !d->pre_dump && !d->nr_below)	/* a tree's: treedump.c, finish_all() */
		ret = sockets_check_peercred(&d, 1);
	if (!ret && !leave_running) {
		fault_point("images-written");
		ret = sockets_check_queues(d);
		if (!ret)
			ret = dump_dry_run(d);	/* before the kill: a restore here must work */
	}
	if (!ret && *inventory)
		ret = write_inventory(d);
	if (!ret && !d->pages_late)
		ret = hook_fire(o->hooks, HOOK_POST_DUMP, d->pid);
	return ret;
}

int dump_prepare_incremental(struct dump_ctx *d, const char *prev_dir)
{
	int ret = 0;

	if (prev_dir)
		ret = parent_open(d, prev_dir);
	if (ret || !prev_dir)
		return ret;
	d->incremental = d->track.fd >= 0 && d->track.base &&
			 d->track.base == d->parent.inventory_hash;
	if (!d->incremental)
		pr_warn("no memory tracking of process %d since %s was dumped: every page is "
			"written", d->pid, prev_dir);
	return 0;
}

/* A failed dump leaves the target as it was: a tracker it just got goes again. */
void dump_undo(struct dump_ctx *d)
{
	if ((d->track.created || d->track_dropped) && track_remove(&d->in, &d->track))
		fail_clear();	/* the first error is the one reported */
	infect_cure(&d->in);
	if (tty_put_back(d))
		pr_warn("%s", "the bytes queued in a pty of the process could not all be put back");
	img_remove_created(&d->dir);
	if (d->parent.linked)
		parent_unlink(d);
	sockets_finish(d, false);
	infect_release(&d->in, false);
}

static int dump_pipeline(const struct dump_opts *o, bool *as_tree);

/* Times a dump starts again as a tree dump when children appeared during it. */
#define DUMP_TREE_RETRIES	3

/*
 * A snapshot is armed before the freeze unless memory tracking holds the
 * VMAs' userfaultfd registrations (track.c) or the process is stopped.
 */
static bool snapshot_prearmable(const struct dump_ctx *d, const struct dump_opts *o)
{
	const char *env = getenv("MEMDUMP_SNAPSHOT_PREARM");	/* 0: off, for comparisons */

	return o->leave_running && !o->pre_dump && !o->track_mem && !o->prev_dir &&
	       d->track.fd < 0 && !d->stopped && !(env && !strcmp(env, "0"));
}

/*
 * The dump, on a thread inside the target's own network namespace if it has
 * one (sock_diag, the network lock and sockets see what the target sees).
 */
int dump_run(const struct dump_opts *o)
{
	struct dump_opts in_ns = *o;
	int back, ret = ns_enter_net(o->pid, &back);

	in_ns.host_netns = back;	/* the veth pairs' other ends are there (netns.c) */
	for (int attempt = 0; !ret; attempt++) {
		struct proc_tree t = { 0 };
		bool as_tree = false, tree = o->pid > 1 && (tree_live_below(o->pid, &t) ||
				(t.n && pidns_own(o->pid)) || (t.n && o->freeze_cgroup));

		if (tree)
			ret = dump_tree(&in_ns, &t);	/* treedump.c: a tree, a PID namespace's
							 * init, or frozen by its cgroup */
		else
			ret = dump_pipeline(&in_ns, &as_tree);
		tree_free(&t);
		if (!ret || !as_tree || attempt == DUMP_TREE_RETRIES)
			break;
		/* a child forked between the look at the tree and the freeze: the tree now */
		pr_info("%s: dumping the tree below %d", fail_reason(), o->pid);
		fail_clear();
		ret = 0;
	}
	ns_leave_net(back);
	return ret;
}

/*
 * A --leave-running dump takes a copy-on-write snapshot unless told not to
 * (--no-snapshot): the target is frozen only for what does not depend on its
 * size (snapshot.c), the fastest correct choice. Not a pre-dump's nor an
 * incremental one's: their memory tracking holds the userfaultfd
 * registrations. Nor with hooks (action scripts, RPC notifications): the
 * post-dump hook sees a complete set while the target is frozen, and a
 * snapshot's pages are written after. Where the kernel cannot give one,
 * snapshot_arm() says so and the pages are written while frozen.
 */
static bool wants_snapshot(const struct dump_opts *o)
{
	return o->snapshot || (o->leave_running && !o->no_snapshot && !o->pre_dump &&
			       !o->track_mem && !o->prev_dir && !o->hooks && !o->xfer);
}

/* The options that cannot go together, refused before anything is touched (the CLI
 * asks before it connects to a page server too). */
int dump_check_opts(const struct dump_opts *o)
{
	if (!o->pid || !o->dir)
		return fail(-EINVAL, "%s needs -t PID and -D DIR", o->pre_dump ? "pre-dump" : "dump");
	if (o->snapshot && !o->leave_running)
		return fail(-EINVAL, "--snapshot needs --leave-running (a killed target needs none)");
	if (o->compress.algo != PZ_NONE && o->xfer)
		return fail(-EINVAL, "--compress with --page-server: the pages go to the page "
			    "server as they are, there is no pages-1.img here to compress");
	if (o->snapshot && o->xfer)
		return fail(-EINVAL, "--snapshot with --page-server: the snapshot writes pages into "
			    "the image at their places once the target runs, a stream cannot");
	if (o->snapshot && o->hooks)
		return fail(-EINVAL, "--snapshot with action scripts or notifications: the post-dump "
			    "hook would see a set whose pages are written once the target runs again");
	return 0;
}

static int dump_pipeline(const struct dump_opts *o, bool *as_tree)
{
	struct dump_ctx d = { .pid = o->pid, .mode = o->mode, .progress = o->progress,
			      .policy = { .ghost_limit = o->ghost_limit, .shell_job = o->shell_job,
					  .pid = o->pid, .ext_tty = o->ext_tty },
			      .pages_write = o->pages_write, .staged = o->staged,
			      .stream = o->stream, .pre_dump = o->pre_dump,
			      .compress = o->compress,
			      .host_netns = o->host_netns,
			      .mnt_ext = o->mnt_ext, .nr_mnt_ext = o->nr_mnt_ext, .xfer = o->xfer,
			      .parent = { .dirfd = -1 }, .pages_fd = -1,
			      .in = { .pidfd = -1, .mem_fd = -1 } };
	bool leave_running = o->leave_running || o->pre_dump, snapshot = wants_snapshot(o);
	struct task_state *ts = calloc(1, sizeof(*ts));
	struct proc_tree below = { 0 };
	struct late_hold late = { -1, -1 };
	uint64_t frozen_us;
	bool inventory = false;
	int ret;

	if (!ts)
		return -ENOMEM;
	track_init(&d.track, o->pid);
	ret = dump_check_opts(o);
	if (ret) {
		free(ts);
		return ret;
	}
	d.keep_tracking = o->pre_dump || (o->track_mem && leave_running);
	d.track_drop_late = !leave_running && !d.keep_tracking;
	d.sums_late = leave_running && !o->hooks;	/* dump_finish_images() */
	/*
	 * A killing dump leaves the parasite in until the kill: its cure (a stop,
	 * remote syscalls, each a turn of the target on a CPU) is off the frozen
	 * time, done only if the dump fails and the target runs on. Meanwhile the
	 * blob waits in ppoll, curing itself should memdump die (parasite_abi.h).
	 */
	d.cure_late = !leave_running;
	/* a snapshot writes into its image at places, compression reads the plaintext back:
	 * those go through the staging */
	d.seal_pages = o->key && !snapshot && o->compress.algo == PZ_NONE && !o->xfer;
	if (o->track_mem && !leave_running)
		pr_warn("--track-mem without --leave-running: the process is killed, nothing to track");
	dump_catch_signals();
	ret = target_check(d.pid);
	if (!ret)
		ret = track_find(&d.track, d.pid);
	if (!ret)
		ret = refuse_check(o, &d.track);
	if (!ret)
		fault_point("checked");	/* the tests fork a child here */
	if (!ret)
		d.stopped = dump_target_stopped(d.pid);
	d.own_ns = ns_saved_mask(d.pid, o->ext_net_ino);
	d.ext_net_key = ns_own_mask(d.pid) != d.own_ns ? o->ext_net_key : NULL;
	if (!ret)
		ret = d.dir.fd = dump_open_dir(o, &d.dir.crypt);
	/* compressed after the kill, but where the set must be final before it (images.c) */
	d.compress_late = o->compress.algo != PZ_NONE && !leave_running && !o->hooks &&
			  !d.dir.crypt;
	if (ret >= 0)
		ret = dump_prepare_incremental(&d, o->prev_dir);
	if (ret >= 0) {
		int h = hook_fire(o->hooks, HOOK_PRE_DUMP, d.pid);

		if (h)
			ret = h;
	}
	/* a snapshot writes its pages after the thaw (snapshot.c), so does a pre-dump
	 * in read mode (pagelate.c) */
	if (ret >= 0 && !snapshot && !pages_late_opts(o))
		ret = pages_warm(&d, o);	/* while it runs: the frozen copy is faster */
	if (ret >= 0 && snapshot && snapshot_prearmable(&d, o))
		ret = snapshot_prearm(&d);	/* so is the write-protection */
	if (ret < 0) {
		if (d.dir.fd > 0)
			close(d.dir.fd);
		crypt_free(d.dir.crypt);
		dump_ctx_free(&d);
		free(ts);
		return ret;
	}
	d.stats.freeze_start = now_us();
	ret = infect_prepare(&d.in, d.pid, &dump_interrupted);
	snapshot_frozen(&d);
	d.trace = o->trace;
	if (d.trace)
		d.trace->in.pid = d.pid;	/* for the supervisor: sockets come before the parasite */
	d.in.trace = o->trace ? &o->trace->in : NULL;
	if (!ret)	/* a child forked before the freeze; its tree read once for both */
		ret = refuse_check_frozen(d.pid, &below, as_tree);
	if (!ret && !d.pre_dump)
		ret = collect_zombies_in(&d, &below);	/* frozen: its zombies stay as read */
	tree_free(&below);
	d.stats.frozen_at = now_us();
	d.stats.threads = d.in.nr_threads;
	if (!ret)
		ret = dump_collect(&d, ts, o);
	if (!ret)
		ret = dump_write_images(&d, ts, snapshot);
	/* a killing dump writes the inventory first: a failure leaves the target running */
	if (!ret)
		ret = dump_finish_images(&d, o, leave_running, &inventory);
	if (!ret && d.stream && d.stream->started)	/* the stream whole before the kill */
		ret = d.stream->rest(d.stream, d.dir.fd);
	/* killed while frozen: the images may be whole, but there is no process to run on */
	if (!ret && leave_running && !infect_alive(&d.in))
		ret = fail(-ESRCH, "process %d died during the dump", d.pid);
	if (ret) {
		snapshot_end(&d);
		if (inventory)		/* a post-dump hook failed: the set is not complete */
			unlinkat(d.dir.fd, "inventory.img", 0);
		dump_undo(&d);
		network_unlocked(o, d.pid);
	} else {
		if (leave_running) {
			sockets_finish(&d, false);	/* before it runs again */
			if (d.pages_late)
				pages_late_hold(&d, &late);
		} else {
			infect_doom(&d.in);		/* it never runs again: the lock is kept */
			ret = sockets_finish(&d, true);
		}
		infect_release(&d.in, !leave_running);
		if (d.track_dropped)
			track_gone(&d.track);	/* with the target */
		if (!leave_running)
			fault_point("target-killed");
		else
			network_unlocked(o, d.pid);
	}
	d.stats.unfrozen_at = now_us();
	frozen_us = d.stats.unfrozen_at - d.stats.frozen_at;
	if (!ret && d.snap)
		ret = snapshot_copy(&d);	/* the target runs: its other pages */
	if (!ret && d.pages_late)
		ret = pages_late_write(&d, &late);	/* pagelate.c */
	snapshot_end(&d);
	if (!ret && inventory)
		ret = dump_compress_late(&d);	/* the target is gone: off the frozen time */
	/*
	 * inventory.img lists every image's checksum; the pages images are read
	 * back for it, which the target need not wait for: it is done after the
	 * target is resumed (every image is written). A failure then
	 * only removes the images: the target runs on.
	 */
	if (!ret && !inventory)
		ret = write_inventory(&d);
	if (!ret && d.pages_late)	/* the set complete, the process running */
		ret = hook_fire(o->hooks, HOOK_POST_DUMP, d.pid);
	if (!ret)
		ret = dump_track_commit(&d);
	if (!ret)
		ret = dump_make_durable(&d, leave_running);
	d.stats.durable_at = now_us();
	if (ret && leave_running) {
		if (d.pages_late)
			pages_late_undo(&d, &late);
		img_remove_created(&d.dir);
		if (d.parent.linked)
			parent_unlink(&d);
	} else {
		img_forget_created(&d.dir);
	}
	pages_late_drop(&late);
	if (!ret && o->pages_written)
		*o->pages_written = d.stats.pages_written;
	if (!ret)
		dump_summary(&d, frozen_us, o->quiet);
	close(d.dir.fd);
	crypt_free(d.dir.crypt);
	dump_ctx_free(&d);
	free(ts);
	return ret;
}
