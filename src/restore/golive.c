/*
 * The restored TCP connections go live after the commit point, not before.
 *
 * Until the commit point (rst_commit: the parked threads let go) every
 * rebuilt connection stays in repair mode behind its process's network lock
 * (the plain table inet memdump-lock-PID the killing dump kept): a restore
 * that fails or is killed before it kills processes whose sockets close in
 * repair mode, which sends nothing, and the lock stays for the next restore
 * of the same set. The peers outside the dump see silence, never a FIN or a
 * RST, and the set can be restored again.
 *
 * Right after the go the threads are still stopped by ptrace (resume_seize):
 * no instruction of theirs runs before resume_finish(). In that gap, while
 * the processes are already the user's, every socket leaves repair mode
 * (sending nothing, every lock on), then every lock goes, then every socket
 * sends its window probe and its unsent bytes (tcp_repair_restore.c). Their
 * own code never meets a socket in repair mode (recv() would fail EPERM).
 * memdump killed in that gap (a few syscalls per socket and a netlink round
 * trip; the tracer gone, the threads run on at once) would leave processes
 * running whose connections are in repair mode and locked, and nothing can
 * undo the go, while leaving repair mode before it would make a killed
 * restore's processes send FINs. So a guard, a child forked before the go,
 * holds memdump's own copies of the sockets and of its state, and hears of
 * each step over a socket pair. If the pair ends before memdump said it was
 * done, and the go was given (the go flags of the restorer areas, which it
 * shares), the guard finishes the release from the first probe not sent.
 * Left: the guard killed too; memdump killed between a socket's unsent bytes
 * and its report sends them twice.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault.h"
#include "hooks.h"
#include "log.h"
#include "netlock.h"
#include "restore/restore.h"
#include "restore/pipeline.h"
#include "inet/sk_inet.h"

/* What memdump tells its guard: a probe sent, or everything done. */
enum { STEP_PROBED = 'P', STEP_DONE = 'D' };

/* memdump's end of the pair (-1: none, or the guard itself), what to skip */
struct golive {
	int sk;
	pid_t guard;
	size_t skip;	/* probes already sent (the guard) */
};

static void tell(const struct golive *g, char step)
{
	if (g->sk >= 0)	/* a guard gone is no reason to stop: no SIGPIPE */
		(void)!send(g->sk, &step, 1, MSG_NOSIGNAL);
}

/* Every socket's probe and unsent bytes, the first g->skip left out. */
static void probe_all(struct rst *const *all, size_t n, const struct golive *g)
{
	size_t done = 0;

	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < all[i]->nr_tcp; k++, done++) {
			if (done < g->skip)
				continue;
			tcp_probe_one(all[i], k);
			tell(g, STEP_PROBED);
		}
	for (size_t i = 0; i < n; i++)
		tcp_close_all(all[i]);
}

/* Every socket out of repair mode, every lock off, then every probe. */
static int release_net(struct rst *const *all, size_t n, const struct golive *g)
{
	bool tcp = false;
	int ret = 0;

	for (size_t i = 0; i < n; i++) {	/* every lock still on */
		tcp |= all[i]->nr_tcp > 0;
		tcp_unrepair_all(all[i]);
	}
	/*
	 * A process that shared its fd table held its parent's connections at
	 * dump, and was locked for them: its lock goes too (if it has one).
	 */
	for (size_t i = 0; tcp && i < n; i++)
		if (!all[i]->nr_tcp && netlock_remove(all[i]->pid) < 0 && !ret)
			ret = -EIO;
	for (size_t i = 0; i < n; i++) {
		int r = tcp_unlock_all(all[i]);

		ret = ret ?: r;
	}
	probe_all(all, n, g);	/* every lock off: then the probes */
	return ret;
}

static bool went(struct rst *const *all, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (__atomic_load_n(&all[i]->a->go, __ATOMIC_SEQ_CST))
			return true;
	return false;
}

/* The guard's life: count memdump's steps; if it goes before its last, take over. */
static __attribute__((noreturn)) void guard_run(struct rst *const *all, size_t n, int sk)
{
	struct golive g = { .sk = -1 };
	char step;
	ssize_t r;

	prctl(PR_SET_NAME, "memdump-golive");
	while ((r = read(sk, &step, 1)) != 0) {
		if (r < 0 && errno != EINTR)
			break;
		if (r == 1 && step == STEP_DONE)
			_exit(0);
		g.skip += r == 1 && step == STEP_PROBED;
	}
	if (went(all, n)) {	/* before the go, the processes end themselves (abort.c) */
		pr_warn("memdump went away before the restored connections were live: "
			"its guard %d makes them live (%zu probes were sent)", getpid(), g.skip);
		release_net(all, n, &g);
	}
	_exit(0);
}

/*
 * The guard, when there is a connection or a lock to release. Without one
 * (no memory for a fork) the release goes on as before, unguarded: the
 * processes are parked, and failing here would not undo the dump's kill.
 */
static void guard_start(struct rst *const *all, size_t n, struct golive *g)
{
	bool net = false;
	int sp[2];

	for (size_t i = 0; i < n; i++)
		net |= all[i]->nr_tcp > 0 || all[i]->net_isolated || all[i]->lock_kept;
	if (!net)
		return;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp)) {
		pr_warn("no guard for the connections going live: %s", strerror(errno));
		return;
	}
	g->guard = fork();
	if (!g->guard) {
		close(sp[0]);
		guard_run(all, n, sp[1]);
	}
	close(sp[1]);
	if (g->guard < 0) {
		pr_warn("no guard for the connections going live: %s", strerror(errno));
		close(sp[0]);
		return;
	}
	g->sk = sp[0];
}

static void guard_end(struct golive *g)
{
	if (g->sk < 0)
		return;
	tell(g, STEP_DONE);
	close(g->sk);
	waitpid(g->guard, NULL, 0);
}

/*
 * The network-unlock hook, where CRIU's is (after post-restore, before
 * pre-resume): before the commit point, memdump's own lock still on; it tells
 * a user's script to take its own lock off.
 */
void rst_hook_network_unlock(struct rst *const *all, size_t n)
{
	bool tcp = false;

	for (size_t i = 0; i < n; i++)
		tcp |= all[i]->nr_tcp > 0;
	if (tcp)	/* the root is last (tree.c) or alone */
		hook_fire_late(all[0]->o->hooks, HOOK_NETWORK_UNLOCK, all[n - 1]->pid);
}

int rst_commit_live(struct rst *const *all, size_t n)
{
	struct golive g = { .sk = -1 };
	bool untraced = false;
	int ret;

	for (size_t i = 0; i < n; i++)
		untraced |= all[i]->untraced;
	guard_start(all, n, &g);
	if (untraced) {	/* they run as soon as they go: out of repair mode first */
		ret = release_net(all, n, &g);
		rst_commit(all, n);
	} else {
		rst_commit(all, n);
		fault_point(RST_FAULT_GOLIVE);
		ret = release_net(all, n, &g);
	}
	guard_end(&g);
	return ret;
}
