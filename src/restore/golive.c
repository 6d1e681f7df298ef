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
 * Left: memdump killed in that gap (no restored instruction runs there, a
 * few syscalls per socket) leaves processes running whose connections are
 * still in repair mode and locked: they can no longer be killed quietly
 * (the commit is made), and leaving repair mode before the go would make a
 * killed restore's processes send FINs and keep their 4-tuples (FIN_WAIT1
 * orphans) from the next restore.
 */
#include <errno.h>
#include <stdbool.h>

#include "hooks.h"
#include "netlock.h"
#include "restore/restore.h"
#include "restore/pipeline.h"
#include "inet/sk_inet.h"

/* Every socket out of repair mode, every lock off, then every probe. */
static int release_net(struct rst *const *all, size_t n)
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
	for (size_t i = 0; i < n; i++)	/* every lock off: then the probes */
		tcp_probe_all(all[i]);
	return ret;
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
	bool untraced = false;
	int ret;

	for (size_t i = 0; i < n; i++)
		untraced |= all[i]->untraced;
	if (untraced) {	/* they run as soon as they go: out of repair mode first */
		ret = release_net(all, n);
		rst_commit(all, n);
		return ret;
	}
	rst_commit(all, n);
	return release_net(all, n);
}
