/*
 * Seccomp filters: seccomp.img checked, then copied into the restorer area
 * with each thread's chain, oldest filter first. The blob installs them last,
 * right before the final rt_sigreturn (after its own system calls), and
 * memdump holds the threads with PTRACE_O_SUSPEND_SECCOMP until it has
 * removed the restorer area. When every thread has the same filters, the
 * leader installs them once with SECCOMP_FILTER_FLAG_TSYNC: the threads then
 * share them as they did, and a later TSYNC by the process still works.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <string.h>

#include "common.h"
#include "log.h"
#include "ctx/restore_ctx.h"
#include "task/task.h"

#define MAX_FILTER_INSNS	4096	/* BPF_MAXINSNS */
#define KEPT_FLAGS	(SECCOMP_FILTER_FLAG_LOG | SECCOMP_FILTER_FLAG_SPEC_ALLOW)

static size_t nr_filters(const struct rst *r)
{
	return r->ds.seccomp ? r->ds.seccomp->n_seccomp_filters : 0;
}

static int check_filter(const SeccompFilter *f, size_t i)
{
	size_t n = f->filter.len / sizeof(struct sock_filter);

	if (f->filter.len % sizeof(struct sock_filter) || !n || n > MAX_FILTER_INSNS)
		return fail(-EIO, "seccomp.img: filter %zu is not a BPF program", i);
	if (f->has_prev && f->prev >= i)
		return fail(-EIO, "seccomp.img: filter %zu names a later filter before it", i);
	if (f->has_flags && (f->flags & ~KEPT_FLAGS))
		return fail(-EOPNOTSUPP, "seccomp.img: filter %zu has flags %#x memdump cannot "
			    "restore", i, f->flags);
	return 0;
}

int seccomp_check(struct rst *r)
{
	const PstreeEntry *pe = r->ds.pstree;
	int ret;

	for (size_t i = 0; i < nr_filters(r); i++) {
		ret = check_filter(r->ds.seccomp->seccomp_filters[i], i);
		if (ret)
			return ret;
	}
	for (size_t i = 0; i < r->ds.nr_cores; i++) {
		const ThreadCoreEntry *th = r->ds.cores[i]->thread_core;
		unsigned tid = pe->n_threads ? pe->threads[i] : pe->pid;

		if (!th->has_seccomp_mode || th->seccomp_mode == SECCOMP_MODE__disabled ||
		    th->seccomp_mode == SECCOMP_MODE__strict)
			continue;
		if (th->seccomp_mode != SECCOMP_MODE__filter)
			return fail(-EOPNOTSUPP, "thread %u is in seccomp mode %d", tid,
				    th->seccomp_mode);
		if (!th->has_seccomp_filter || th->seccomp_filter >= nr_filters(r))
			return fail(-EIO, "core-%u.img: its seccomp filter is not in seccomp.img",
				    tid);
	}
	return 0;
}

/* Bytes the filters and the chains take in the area. */
size_t seccomp_area_size(const struct rst *r)
{
	size_t n = nr_filters(r), size = n * sizeof(struct rst_filter);

	for (size_t i = 0; i < n; i++)
		size += ALIGN_UP(r->ds.seccomp->seccomp_filters[i]->filter.len, 8);
	return size + r->ds.nr_cores * n * sizeof(uint32_t);
}

static int thread_top(const struct rst *r, size_t i)
{
	const ThreadCoreEntry *th = r->ds.cores[i]->thread_core;

	return th->has_seccomp_mode && th->seccomp_mode == SECCOMP_MODE__filter ?
	       (int)th->seccomp_filter : -1;
}

/* Every thread has the same newest filter (and so the same chain). */
static bool shared_by_all(const struct rst *r)
{
	for (size_t i = 1; i < r->ds.nr_cores; i++)
		if (thread_top(r, i) != thread_top(r, 0))
			return false;
	return r->ds.nr_cores > 1;
}

/* Thread t's chain at chain[], oldest first; returns its length. */
static unsigned int fill_chain(const struct rst *r, int top, uint32_t *chain)
{
	unsigned int n = 0;

	for (int f = top; f >= 0; n++) {
		const SeccompFilter *sf = r->ds.seccomp->seccomp_filters[f];

		chain[n] = f;
		f = sf->has_prev ? (int)sf->prev : -1;
	}
	for (unsigned int k = 0; k < n / 2; k++) {
		uint32_t tmp = chain[k];

		chain[k] = chain[n - 1 - k];
		chain[n - 1 - k] = tmp;
	}
	return n;
}

void seccomp_fill(struct rst *r, size_t off)
{
	struct rst_thread *rt = (struct rst_thread *)(r->area + r->a->threads_off);
	struct rst_filter *rf = (struct rst_filter *)(r->area + off);
	size_t n = nr_filters(r);
	bool tsync = shared_by_all(r);

	r->a->filters_off = off;
	r->a->nr_filters = n;
	off += n * sizeof(*rf);
	for (size_t i = 0; i < n; i++) {
		const SeccompFilter *sf = r->ds.seccomp->seccomp_filters[i];

		rf[i].insns_off = off;
		rf[i].nr = sf->filter.len / sizeof(struct sock_filter);
		rf[i].flags = sf->has_flags ? sf->flags : 0;
		memcpy(r->area + off, sf->filter.data, sf->filter.len);
		off += ALIGN_UP(sf->filter.len, 8);
	}
	for (size_t i = 0; i < r->ds.nr_cores; i++) {
		int top = thread_top(r, i);

		rt[i].chain_off = off;
		rt[i].nr_chain = top < 0 || (tsync && i) ? 0 :
				 fill_chain(r, top, (uint32_t *)(r->area + off));
		rt[i].seccomp_tsync = tsync && i == 0;
		rt[i].seccomp_strict = r->ds.cores[i]->thread_core->has_seccomp_mode &&
				       r->ds.cores[i]->thread_core->seccomp_mode ==
				       SECCOMP_MODE__strict;
		off += n * sizeof(uint32_t);
	}
}
