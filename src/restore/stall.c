/*
 * The restore's watchdog. memdump waits for a restored process to park
 * (rst_wait_parked); a process that stops making progress (blocked in the
 * kernel, stopped by a signal, a blob that waits for a word nobody writes)
 * would make that wait, and memdump, hang without a word. Progress is what
 * the blob publishes in its area: the stage, the pages filled, the fill
 * pieces made present and read, the threads through their credentials and
 * parked. When none of it moves for the stall limit (MEMDUMP_STALL_S, 120 s
 * by default: a slow disk still moves the page count), the restore fails
 * naming the stage and counts, and the log gets where each thread is
 * blocked (wchan and kernel stack) at -v 3.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "log.h"
#include "proc.h"
#include "restore/restore.h"
#include "restore/pipeline.h"

#define STALL_DEFAULT_MS	120000L

long rst_stall_limit_ms(void)
{
	const char *s = getenv("MEMDUMP_STALL_S");
	char *end;
	long v;

	if (!s || !*s)
		return STALL_DEFAULT_MS;
	v = strtol(s, &end, 10);
	return *end || v <= 0 ? STALL_DEFAULT_MS : v * 1000;
}

void rst_progress_take(const struct rst *r, struct rst_progress *p)
{
	const volatile struct rst_args *a = r->a;

	p->stage = __atomic_load_n(&a->stage, __ATOMIC_SEQ_CST);
	p->pages = a->pages_restored;
	p->prepped = a->fill_prepped;
	p->read = a->fill_read;
	p->creds = a->nr_creds;
	p->parked = a->nr_parked;
}

bool rst_progress_same(const struct rst_progress *x, const struct rst_progress *y)
{
	return x->stage == y->stage && x->pages == y->pages && x->prepped == y->prepped &&
	       x->read == y->read && x->creds == y->creds && x->parked == y->parked;
}

static const char *stage_name(unsigned int st)
{
	switch (st) {
	case RST_STAGE_DRIVER:	return "preparing its files";
	case RST_STAGE_BLOB:	return "in the restorer";
	case RST_STAGE_PARKED:	return "parked";
	case RST_STAGE_FAILED:	return "failed";
	}
	return "unknown";
}

/* Where each thread of pid is blocked, into the log. */
static void log_threads(pid_t pid)
{
	char path[320], *wchan, *stack;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		wchan = stack = NULL;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/wchan", pid, de->d_name);
		proc_read_file(path, &wchan);
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stack", pid, de->d_name);
		proc_read_file(path, &stack);
		pr_info("restore stalled: thread %s of %d waits in %s\n%s", de->d_name, pid,
		       wchan && *wchan ? wchan : "?", stack ? stack : "");
		free(wchan);
		free(stack);
	}
	closedir(d);
}

int rst_stall_fail(const struct rst *r, const struct rst_progress *p, long ms)
{
	log_threads(r->pid);
	return fail(-ETIMEDOUT, "the restored process %d made no progress for %ld s (%s; %lu pages "
		    "filled, fill pieces %u present and %u read, %u thread(s) parked): killed",
		    r->pid, ms / 1000, stage_name(p->stage), p->pages, p->prepped, p->read,
		    p->parked);
}
