/*
 * Cleaning up after a dumper that was killed: its threads went home by
 * themselves (parasite_abi.h), but the head of the parasite area, which they
 * returned through, is still mapped. A supervisor that outlived the dumper
 * (memdump's parent process) seizes the process again and unmaps it, once
 * no thread runs in it (a thread may still be on its way home).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "infect/infect.h"
#include "log.h"
#include "proc.h"

#define TRIES		30
#define RETRY_NS	(50 * 1000 * 1000)

/* Is the mapping at addr the parasite area (a deleted memfd), whole or its head? */
static bool is_area(pid_t pid, uint64_t addr, uint64_t len)
{
	char path[64], line[512];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		char perms[8];

		found = sscanf(line, "%lx-%lx %7s", &start, &end, perms) == 3 &&
			start == addr && end <= addr + len && !strcmp(perms, "rwxs") &&
			strstr(line, "/memfd: (deleted)");
	}
	fclose(f);
	return found;
}

static bool thread_inside(const struct infect_ctx *c, uint64_t addr, uint64_t len)
{
	for (int i = 0; i < c->nr_threads; i++) {
		uint64_t ip = c->threads[i].regs.rip;

		if (!c->threads[i].exited && ip >= addr && ip < addr + len)
			return true;
	}
	return false;
}

/* Is fd of pid a memfd like the area's (no name, deleted)? */
static bool is_area_memfd(pid_t pid, int fd)
{
	return proc_fd_link_is(pid, fd, "/memfd: (deleted)");
}

/* The area's memfd, were the dumper killed between its creation and its close. */
static int close_memfd(struct infect_ctx *c, const struct infect_trace *tr)
{
	long ret;
	int err;

	if (!tr->has_memfd || !is_area_memfd(c->pid, tr->memfd))
		return 0;
	err = infect_syscall(c, 0, SYS_close, &ret, tr->memfd, 0, 0, 0, 0, 0);
	if (!err && !ret)
		pr_info("closed the parasite's memfd the dead worker left in process %d", c->pid);
	return err;
}

/* 1: unmapped or already gone, 0: a thread is still inside, <0: failed. */
static int try_unmap(const struct infect_trace *tr, pid_t pid, uint64_t area, uint64_t len)
{
	struct infect_ctx c;
	long ret;
	int err;

	err = infect_prepare(&c, pid, NULL);
	if (!err)
		err = close_memfd(&c, tr);
	if (err)
		goto out;
	if (!area || !is_area(pid, area, len)) {
		err = 1;
		goto out;
	}
	if (thread_inside(&c, area, len))
		goto out;
	err = infect_syscall(&c, 0, SYS_munmap, &ret, area, len, 0, 0, 0, 0);
	if (!err && ret)
		err = fail(ret, "cannot unmap the parasite area in process %d: %s", pid,
			   strerror(-ret));
	if (!err) {
		pr_info("removed the parasite area the dead worker left in process %d", pid);
		err = 1;
	}
out:
	infect_release(&c, false);
	return err;
}

int infect_reclaim(const struct infect_trace *tr)
{
	struct timespec wait = { 0, RETRY_NS };
	pid_t pid = (pid_t)tr->pid;

	if (!pid || (!tr->area && !tr->has_memfd))
		return 0;
	for (int i = 0; i < TRIES; i++) {
		int ret = try_unmap(tr, pid, tr->area, tr->area_len);

		if (ret)
			return ret < 0 ? ret : 0;
		nanosleep(&wait, NULL);
	}
	return fail(-EBUSY, "a thread of process %d still runs in the parasite area", pid);
}
