/*
 * Process-wide state: from /proc (stat, status, auxv, personality, links),
 * from prlimit, and from inside the leader by remote system calls
 * (rt_sigaction, brk, securebits, dumpable).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "infect/infect.h"
#include "ctx/file_desc.h"
#include "log.h"
#include "task/task.h"

static int get_sigactions(struct dump_ctx *d, struct task_state *ts)
{
	void *local;
	uint64_t remote = parasite_scratch(&d->in, &local);

	for (int sig = 1; sig <= NR_SIGS; sig++) {
		long ret;
		int err;

		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		err = dump_syscall(d, 0, SYS_rt_sigaction, &ret, sig, 0, remote, 8);
		if (err)
			return err;
		if (ret == 0)
			memcpy(&ts->sa[sig - 1], local, sizeof(ts->sa[0]));
	}
	return 0;
}

static long remote_value(struct dump_ctx *d, long nr, long a1, long a2)
{
	long ret = -1;

	if (dump_syscall(d, 0, nr, &ret, a1, a2, 0, 0))
		return -1;
	return ret;
}

static int get_auxv(struct dump_ctx *d, struct task_state *ts)
{
	char path[64];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/auxv", d->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(-errno, "cannot read %s: %s", path, strerror(errno));
	n = read(fd, ts->auxv, sizeof(ts->auxv));
	close(fd);
	if (n < 0)
		return fail(-errno, "cannot read %s: %s", path, strerror(errno));
	ts->nr_auxv = n / sizeof(uint64_t);
	return 0;
}

static uint64_t status_hex(pid_t pid, const char *key)
{
	char v[64] = "0";

	proc_status_field(pid, key, v, sizeof(v));
	return strtoull(v, NULL, 16);
}

static void status_ids(pid_t pid, const char *key, uint32_t out[4])
{
	char v[128] = "";

	proc_status_field(pid, key, v, sizeof(v));
	sscanf(v, "%u %u %u %u", &out[0], &out[1], &out[2], &out[3]);
}

static void get_creds(pid_t pid, struct creds *c)
{
	char v[1024] = "", *p = v, *end;

	status_ids(pid, "Uid", c->uid);
	status_ids(pid, "Gid", c->gid);
	c->cap_inh = status_hex(pid, "CapInh");
	c->cap_prm = status_hex(pid, "CapPrm");
	c->cap_eff = status_hex(pid, "CapEff");
	c->cap_bnd = status_hex(pid, "CapBnd");
	c->cap_amb = status_hex(pid, "CapAmb");
	proc_status_field(pid, "Groups", v, sizeof(v));
	while (c->nr_groups < (int)ARRAY_SIZE(c->groups)) {
		unsigned long g = strtoul(p, &end, 10);

		if (end == p)
			break;
		c->groups[c->nr_groups++] = g;
		p = end;
	}
	if (!proc_status_field(pid, "NoNewPrivs", v, sizeof(v)))
		c->no_new_privs = atoi(v);
}

static void get_misc(pid_t pid, struct task_state *ts)
{
	char path[64], v[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/personality", pid);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%x", &ts->personality) != 1)
			ts->personality = 0;
		fclose(f);
	}
	if (!proc_status_field(pid, "Umask", v, sizeof(v)))
		ts->umask = strtoul(v, NULL, 8);
	if (!proc_status_field(pid, "THP_enabled", v, sizeof(v)))
		ts->thp_disabled = atoi(v) == 0;
}

static uint64_t limit_value(const char *s)
{
	return !strcmp(s, "unlimited") ? RLIM_INFINITY : strtoull(s, NULL, 10);
}

/*
 * /proc/PID/limits, one line per resource in RLIMIT_* order: a name padded
 * to 25 columns, then the soft and hard limits. Readable where prlimit() on
 * another user's process is not (no CAP_SYS_RESOURCE).
 */
static int read_proc_limits(pid_t pid, struct task_state *ts)
{
	char path[64], *text = NULL, *line, *save = NULL;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/limits", pid);
	if (proc_read_file(path, &text) < 0)
		return fail(-EIO, "cannot read %s", path);
	line = strtok_r(text, "\n", &save);		/* the header */
	while ((line = strtok_r(NULL, "\n", &save)) && n < NR_RLIMITS) {
		char soft[32], hard[32];

		if (strlen(line) < 26 || sscanf(line + 25, "%31s %31s", soft, hard) != 2)
			break;
		ts->rlim[n].cur = limit_value(soft);
		ts->rlim[n].max = limit_value(hard);
		n++;
	}
	free(text);
	if (n != NR_RLIMITS)
		return fail(-EIO, "cannot parse %s: %d of %d limits", path, n, NR_RLIMITS);
	return 0;
}

/* Every resource limit as read, never a value that was not: prlimit, else /proc. */
static int get_rlimits(pid_t pid, struct task_state *ts)
{
	for (int r = 0; r < NR_RLIMITS; r++) {
		struct rlimit rl;

		if (prlimit(pid, r, NULL, &rl))
			return read_proc_limits(pid, ts);
		ts->rlim[r].cur = rl.rlim_cur;
		ts->rlim[r].max = rl.rlim_max;
	}
	return 0;
}

int collect_task(struct dump_ctx *d, struct task_state *ts)
{
	int ret;

	ret = proc_read_stat(d->pid, &ts->stat);
	if (ret)
		return fail(ret, "cannot read /proc/%d/stat: %s", d->pid, strerror(-ret));
	ret = get_auxv(d, ts);
	if (ret)
		return ret;
	get_creds(d->pid, &ts->creds);
	get_misc(d->pid, ts);
	ret = get_rlimits(d->pid, ts);
	if (ret)
		return ret;
	ts->exe_id = files_id_of_proc_link(d, "exe");
	ts->cwd_id = files_id_of_proc_link(d, "cwd");
	ts->root_id = files_id_of_proc_link(d, "root");
	if (ts->exe_id < 0 || ts->cwd_id < 0 || ts->root_id < 0)
		return MIN(ts->exe_id, MIN(ts->cwd_id, ts->root_id));
	ret = get_sigactions(d, ts);
	if (ret)
		return ret;
	ts->brk = remote_value(d, SYS_brk, 0, 0);
	ts->dumpable = remote_value(d, SYS_prctl, PR_GET_DUMPABLE, 0);
	ts->creds.secbits = remote_value(d, SYS_prctl, PR_GET_SECUREBITS, 0);
	return 0;
}
