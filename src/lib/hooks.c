/* Hook points: their CRIU names, and calling whoever listens. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "hooks.h"
#include "log.h"

const char *hook_name(enum hook_point p)
{
	static const char *const names[HOOK_NR] = {
		[HOOK_PRE_DUMP] = "pre-dump",
		[HOOK_NETWORK_LOCK] = "network-lock",
		[HOOK_POST_DUMP] = "post-dump",
		[HOOK_NETWORK_UNLOCK] = "network-unlock",
		[HOOK_PRE_RESTORE] = "pre-restore",
		[HOOK_SETUP_NS] = "setup-namespaces",
		[HOOK_POST_SETUP_NS] = "post-setup-namespaces",
		[HOOK_POST_RESTORE] = "post-restore",
		[HOOK_PRE_RESUME] = "pre-resume",
		[HOOK_POST_RESUME] = "post-resume",
		[HOOK_ORPHAN_PTS_MASTER] = "orphan-pts-master",
		[HOOK_STATUS_READY] = "status-ready",
	};

	return p < HOOK_NR ? names[p] : "?";
}

int hook_fire(const struct hooks *h, enum hook_point p, pid_t pid)
{
	if (!h || !h->fire)
		return 0;
	pr_info("hook %s (pid %d)", hook_name(p), pid);
	return h->fire(h->arg, p, pid);
}

int hook_takes_fd(const struct hooks *h)
{
	return h && h->give_fd;
}

int hook_give_fd(const struct hooks *h, enum hook_point p, pid_t pid, int fd)
{
	if (!hook_takes_fd(h))
		return fail(-ENOTSUP, "no one to give the %s to", hook_name(p));
	pr_info("hook %s (pid %d, fd %d)", hook_name(p), pid, fd);
	return h->give_fd(h->arg, p, pid, fd);
}

void hook_fire_late(const struct hooks *h, enum hook_point p, pid_t pid)
{
	bool failing = fail_reason()[0];	/* a failure being reported already */
	int ret = hook_fire(h, p, pid);

	if (!ret)
		return;
	pr_warn("the %s hook failed (process %d goes on): %s", hook_name(p), pid,
		failing ? strerror(-ret) : fail_reason());
	if (!failing)
		fail_clear();
}
