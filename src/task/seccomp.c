/*
 * Seccomp: each thread's mode (status "Seccomp:") and, in filter mode, its
 * filter programs, read with PTRACE_SECCOMP_GET_FILTER while it is frozen.
 * Filters that threads inherited from one another are kept once: a list
 * where each filter names the one installed before it, as CRIU's
 * seccomp.img. Refused, by name: a filter that hands syscalls to a user-space
 * supervisor (SECCOMP_RET_USER_NOTIF: its listener cannot be recreated), and,
 * on a thread with neither no_new_privs nor CAP_SYS_ADMIN (installed again
 * before its credentials), filters that deny the restorer's own calls after
 * that point (seccomp_check.c). Strict mode is kept (the restorer enters it
 * last, before its rt_sigreturn); memdump suspends it while it traces the
 * thread, or refuses it before the seize (refuse.c) when it cannot.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "log.h"
#include "proc.h"
#include "task/task.h"

#ifndef PTRACE_SECCOMP_GET_FILTER
#define PTRACE_SECCOMP_GET_FILTER	0x420c
#endif
#ifndef PTRACE_SECCOMP_GET_METADATA
#define PTRACE_SECCOMP_GET_METADATA	0x420d
#endif
#define CAP_SYS_ADMIN_BIT		21

struct seccomp_md {
	uint64_t filter_off;
	uint64_t flags;
};

static bool user_notif(const struct sock_filter *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (f[i].code == (BPF_RET | BPF_K) &&
		    (f[i].k & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_USER_NOTIF)
			return true;
	return false;
}

/* Filter number idx of tid (0: the oldest, see get_nth_filter()), into p. */
static int get_filter(pid_t tid, long idx, struct seccomp_prog *p)
{
	struct seccomp_md md = { .filter_off = idx };
	long n = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, idx, NULL);

	if (n < 0 && errno == ENOENT)
		return -ENOENT;		/* past the oldest one */
	if (n < 0)
		return fail(-errno, "thread %d: cannot read seccomp filter %ld: %s", tid, idx,
			    strerror(errno));
	p->len = n * sizeof(struct sock_filter);
	p->insns = malloc(p->len);
	if (!p->insns)
		return -ENOMEM;
	if (ptrace(PTRACE_SECCOMP_GET_FILTER, tid, idx, p->insns) != n ||
	    ptrace(PTRACE_SECCOMP_GET_METADATA, tid, sizeof(md), &md) < 0) {
		free(p->insns);
		return fail(-errno, "thread %d: cannot read seccomp filter %ld: %s", tid, idx,
			    strerror(errno));
	}
	p->flags = md.flags;
	if (user_notif(p->insns, n)) {
		free(p->insns);
		return fail(-EOPNOTSUPP, "thread %d has a seccomp filter that notifies a supervisor "
			    "(SECCOMP_RET_USER_NOTIF); memdump cannot dump it", tid);
	}
	return 0;
}

/* The index of p with that prev in the shared list, adding it if new (p is taken). */
static int intern(struct dump_ctx *d, struct seccomp_prog *p, int prev)
{
	struct seccomp_prog *nf;

	for (int i = 0; i < d->nr_filters; i++) {
		struct seccomp_prog *f = &d->filters[i];

		if (f->prev == prev && f->len == p->len && f->flags == p->flags &&
		    !memcmp(f->insns, p->insns, p->len)) {
			free(p->insns);
			return i;
		}
	}
	nf = realloc(d->filters, (d->nr_filters + 1) * sizeof(*nf));
	if (!nf) {
		free(p->insns);
		return -ENOMEM;
	}
	d->filters = nf;
	p->prev = prev;
	d->filters[d->nr_filters] = *p;
	return d->nr_filters++;
}

/* The thread could install its filters again after its credentials are back. */
static bool installable_late(const struct dump_ctx *d, pid_t tid)
{
	char nnp[16] = "0", capeff[32] = "0";

	proc_task_status_field(d->pid, tid, "NoNewPrivs", nnp, sizeof(nnp));
	proc_task_status_field(d->pid, tid, "CapEff", capeff, sizeof(capeff));
	return atoi(nnp) || (strtoull(capeff, NULL, 16) >> CAP_SYS_ADMIN_BIT & 1);
}

static int thread_filters(struct dump_ctx *d, struct thread *t)
{
	struct seccomp_prog *chain = NULL;
	int n = 0, ret = 0, prev = -1;

	while (!ret) {
		struct seccomp_prog *nc = realloc(chain, (n + 1) * sizeof(*nc));

		if (!nc) {
			ret = -ENOMEM;
			break;
		}
		chain = nc;
		ret = get_filter(t->tid, n, &chain[n]);
		if (ret == -ENOENT) {
			ret = 0;
			break;
		}
		if (!ret)
			n++;
	}
	/* index 0 is the oldest (the kernel counts from the first installed) */
	for (int i = 0; i < n; i++) {
		if (ret) {
			free(chain[i].insns);
			continue;
		}
		prev = intern(d, &chain[i], prev);
		if (prev < 0)
			ret = prev;
	}
	free(chain);
	t->seccomp.top = prev;
	if (!ret && prev < 0)
		ret = fail(-EIO, "thread %d: seccomp filter mode without a filter", t->tid);
	if (!ret && !installable_late(d, t->tid))
		ret = seccomp_check_early(d, t);	/* installed before its credentials */
	return ret;
}

int collect_seccomp(struct dump_ctx *d)
{
	for (int i = 0; i < d->nr_threads; i++) {
		struct thread *t = &d->threads[i];
		char v[16] = "";
		int ret = proc_task_status_field(d->pid, t->tid, "Seccomp", v, sizeof(v));

		if (ret)
			return fail(ret, "thread %d: no Seccomp line in its status", t->tid);
		t->seccomp.mode = atoi(v);
		t->seccomp.top = -1;
		if (t->seccomp.mode == SECCOMP_MODE_FILTER)
			ret = thread_filters(d, t);
		else if (t->seccomp.mode != SECCOMP_MODE_DISABLED &&
			 t->seccomp.mode != SECCOMP_MODE_STRICT)
			ret = fail(-EOPNOTSUPP, "thread %d in seccomp mode %u", t->tid,
				   t->seccomp.mode);
		if (ret)
			return ret;
	}
	return 0;
}

void seccomp_free(struct dump_ctx *d)
{
	for (int i = 0; i < d->nr_filters; i++)
		free(d->filters[i].insns);
	free(d->filters);
	d->filters = NULL;
	d->nr_filters = 0;
}
