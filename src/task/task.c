/*
 * Process-wide state: from /proc (stat, status, auxv, personality, links),
 * from prlimit, and from inside the leader by one parasite command
 * (signal actions, brk, securebits, dumpable: collect_leader_inside).
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
#include "parasite_abi.h"
#include "task/task.h"

/* The signal actions as the leader's blob read them; SIGKILL's and SIGSTOP's stay 0. */
static void take_sigactions(struct task_state *ts, const struct parasite_state *st)
{
	for (int sig = 1; sig <= NR_SIGS; sig++) {
		const struct parasite_sigact *sa = &st->sa[sig - 1];

		if (sig == SIGKILL || sig == SIGSTOP || st->sa_ret[sig - 1])
			continue;
		ts->sa[sig - 1] = (struct ksigaction){ sa->handler, sa->flags, sa->restorer,
						       sa->mask };
	}
}

/*
 * What only the process itself can tell (signal actions, brk, securebits,
 * dumpable, timers, the leader's own thread state): one parasite command
 * in the leader, not a remote syscall each.
 */
int collect_leader_inside(struct dump_ctx *d, struct task_state *ts)
{
	struct parasite_state *st = malloc(sizeof(*st));
	int ret = st ? parasite_state(&d->in, st) : -ENOMEM;

	if (!ret) {
		take_sigactions(ts, st);
		ts->brk = st->brk;
		ts->dumpable = st->dumpable;
		ts->creds.secbits = st->securebits;
		ret = leader_inside_from(d, st);
	}
	if (!ret)
		ret = task_attrs_from(d, &ts->attrs, st);
	free(st);
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

static uint64_t status_hex(const char *status, const char *key)
{
	char v[64] = "0";

	status_text_field(status, key, v, sizeof(v));
	return strtoull(v, NULL, 16);
}

static void status_ids(const char *status, const char *key, uint32_t out[4])
{
	char v[128] = "";

	status_text_field(status, key, v, sizeof(v));
	sscanf(v, "%u %u %u %u", &out[0], &out[1], &out[2], &out[3]);
}

/* The creds of a status file's text (see task_proc_creds). */
static bool creds_from_status(const char *status, struct creds *c)
{
	char v[CREDS_MAX_GROUPS * 11 + 64] = "", *p = v, *end;
	bool more;

	status_ids(status, "Uid", c->uid);
	status_ids(status, "Gid", c->gid);
	c->cap_inh = status_hex(status, "CapInh");
	c->cap_prm = status_hex(status, "CapPrm");
	c->cap_eff = status_hex(status, "CapEff");
	c->cap_bnd = status_hex(status, "CapBnd");
	c->cap_amb = status_hex(status, "CapAmb");
	status_text_field(status, "Groups", v, sizeof(v));
	while (c->nr_groups < (int)ARRAY_SIZE(c->groups)) {
		unsigned long g = strtoul(p, &end, 10);

		if (end == p)
			break;
		c->groups[c->nr_groups++] = g;
		p = end;
	}
	more = strtoul(p, &end, 10) || end != p;
	if (!status_text_field(status, "NoNewPrivs", v, sizeof(v)))
		c->no_new_privs = atoi(v);
	return !more;
}

/* /proc/PID/status once: every field of it from the same read. */
static char *read_status(pid_t pid)
{
	char path[64], *text = NULL;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	return proc_read_file(path, &text) < 0 ? NULL : text;
}

bool task_proc_creds(pid_t pid, struct creds *c)
{
	char *status = read_status(pid);
	bool ret = creds_from_status(status ? status : "", c);

	free(status);
	return ret;
}

static void get_misc(pid_t pid, const char *status, struct task_state *ts)
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
	if (!status_text_field(status, "Umask", v, sizeof(v)))
		ts->umask = strtoul(v, NULL, 8);
	if (!status_text_field(status, "THP_enabled", v, sizeof(v)))
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
	char *status;
	int ret;

	ret = proc_read_stat(d->pid, &ts->stat);
	if (ret)
		return fail(ret, "cannot read /proc/%d/stat: %s", d->pid, strerror(-ret));
	ret = get_auxv(d, ts);
	if (ret)
		return ret;
	status = read_status(d->pid);
	if (!status)
		return fail(-EIO, "cannot read /proc/%d/status", d->pid);
	creds_from_status(status, &ts->creds);	/* more groups: refused before the freeze */
	get_misc(d->pid, status, ts);
	free(status);
	ret = get_rlimits(d->pid, ts);
	if (ret)
		return ret;
	ts->exe_id = files_id_of_proc_link(d, "exe");
	ts->cwd_id = files_id_of_proc_link(d, "cwd");
	ts->root_id = files_id_of_proc_link(d, "root");
	if (ts->exe_id < 0 || ts->cwd_id < 0 || ts->root_id < 0)
		return MIN(ts->exe_id, MIN(ts->cwd_id, ts->root_id));
	return 0;
}
