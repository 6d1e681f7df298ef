/*
 * Freezing a cgroup: v1 writes FROZEN or THAWED to freezer.state and reads it
 * back until the kernel has frozen every task (FREEZING until then); v2
 * writes 1 or 0 to cgroup.freeze and reads "frozen 1" in cgroup.events.
 * A frozen task can be seized and asked to stop (infect_preseize); it takes
 * that stop when thawed, before it runs its own code again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "dump/dump.h"
#include "dump/freezer.h"
#include "fault.h"
#include "log.h"
#include "proc.h"

#define FREEZE_WAIT_US	(10 * 1000 * 1000)

static int write_at(int dirfd, const char *name, const char *val)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n < 0 ? -errno : 0;
}

static int is_frozen(const struct freezer *f, bool *frozen)
{
	char buf[512];
	int ret = read_small_at(f->dirfd, f->v2 ? "cgroup.events" : "freezer.state", buf,
				sizeof(buf));

	if (!ret)
		*frozen = f->v2 ? strstr(buf, "frozen 1") != NULL : !strncmp(buf, "FROZEN", 6);
	return ret;
}

/*
 * The trace (shared with memdump's parent) says the cgroup is frozen by
 * the dump, set before the freeze and cleared after the thaw: a worker
 * killed in between leaves it to the parent to thaw (freezer_reclaim).
 */
static void trace_frozen(struct freezer *f, bool on)
{
	if (!f->trace || f->was_frozen || strlen(f->path) >= sizeof(f->trace->cg_path))
		return;
	if (on)
		snprintf(f->trace->cg_path, sizeof(f->trace->cg_path), "%s", f->path);
	__atomic_store_n(&f->trace->cg_frozen, on, __ATOMIC_SEQ_CST);
}

static int set_frozen(struct freezer *f, bool on)
{
	int ret;

	if (on)
		trace_frozen(f, true);
	ret = f->v2 ? write_at(f->dirfd, "cgroup.freeze", on ? "1" : "0")
		    : write_at(f->dirfd, "freezer.state", on ? "FROZEN" : "THAWED");
	if (!ret && !on)
		trace_frozen(f, false);
	if (ret)
		return fail(ret, "cannot %s cgroup %s: %s", on ? "freeze" : "thaw", f->path,
			    strerror(-ret));
	f->frozen = on;
	return 0;
}

/* Until every task of the cgroup is frozen: a task in an uninterruptible sleep takes time. */
static int wait_frozen(struct freezer *f)
{
	uint64_t until = now_us() + FREEZE_WAIT_US;
	bool frozen = false;
	int ret;

	while (!(ret = is_frozen(f, &frozen)) && !frozen && now_us() < until) {
		if (!f->v2)	/* v1 goes on freezing only while asked again */
			write_at(f->dirfd, "freezer.state", "FROZEN");
		usleep(1000);
	}
	if (ret)
		return fail(ret, "cannot read the freezer state of cgroup %s: %s", f->path,
			    strerror(-ret));
	if (!frozen)
		return fail(-ETIMEDOUT, "cgroup %s did not freeze within %d s (a task in an "
			    "uninterruptible sleep?)", f->path, FREEZE_WAIT_US / 1000000);
	return 0;
}

/* The cgroup holds pid: else the freeze would not hold the tree still. */
static int holds(const struct freezer *f, int pid)
{
	char buf[65536], want[16];
	int ret = read_small_at(f->dirfd, "cgroup.procs", buf, sizeof(buf));

	if (ret)
		return fail(ret, "cannot read %s/cgroup.procs: %s", f->path, strerror(-ret));
	snprintf(want, sizeof(want), "%d\n", pid);
	for (char *p = buf; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, want, strlen(want)))
			return 0;
	return fail(-EINVAL, "freeze cgroup %s does not hold process %d", f->path, pid);
}

static int open_cgroup(struct freezer *f, const char *path, int pid)
{
	f->path = path;
	f->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->dirfd < 0)
		return fail(-errno, "freeze cgroup %s: %s", path, strerror(errno));
	f->v2 = faccessat(f->dirfd, "freezer.state", F_OK, 0) != 0;
	if (f->v2 && faccessat(f->dirfd, "cgroup.freeze", F_OK, 0))
		return fail(-ENOTDIR, "freeze cgroup %s is neither a v1 freezer cgroup nor a v2 "
			    "cgroup", path);
	int ret = holds(f, pid);

	return ret ? ret : is_frozen(f, &f->was_frozen);
}

int freezer_freeze(struct freezer *f, const char *path, int pid)
{
	int ret = f->dirfd < 0 ? open_cgroup(f, path, pid) : 0;

	if (!ret)
		ret = set_frozen(f, true);
	if (!ret)
		ret = wait_frozen(f);
	if (!ret)
		pr_info("cgroup %s frozen%s", path, f->was_frozen ? " (it was already)" : "");
	if (!ret)
		fault_point("cgroup-frozen");
	return ret;
}

int freezer_thaw(struct freezer *f)
{
	if (f->dirfd < 0)
		return 0;
	int ret = set_frozen(f, false);

	if (!ret)
		pr_info("cgroup %s thawed", f->path);
	return ret;
}

/*
 * A cgroup that was frozen is frozen again while the tree is still in its
 * ptrace stops (as CRIU does), so that it does not run between its
 * release and the freeze: a paused container stays paused.
 */
int freezer_refreeze(struct freezer *f)
{
	if (f->dirfd < 0 || !f->was_frozen || f->frozen)
		return 0;
	int ret = set_frozen(f, true);

	return ret ? ret : wait_frozen(f);
}

void freezer_reclaim(struct dump_trace *t)
{
	int fd;

	if (!t->cg_frozen)
		return;
	fd = open(t->cg_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || (write_at(fd, "freezer.state", "THAWED") &&
		       write_at(fd, "cgroup.freeze", "0")))
		pr_warn("cannot thaw cgroup %s, which the killed dump froze", t->cg_path);
	else
		pr_info("thawed cgroup %s, which the killed dump froze", t->cg_path);
	if (fd >= 0)
		close(fd);
	t->cg_frozen = 0;
}

void freezer_end(struct freezer *f)
{
	if (f->dirfd < 0)
		return;
	if (f->frozen != f->was_frozen && set_frozen(f, f->was_frozen))
		pr_warn("cgroup %s is left %s: %s", f->path, f->frozen ? "frozen" : "thawed",
			strerror(errno));
	close(f->dirfd);
	f->dirfd = -1;
}
