/*
 * Incremental chains: a set whose pagemap lists runs with PE_PARENT keeps
 * their bytes in the set it was dumped against, its `parent` (a symlink or
 * directory beside its images), whose own PE_PARENT runs are in its parent,
 * and so on. Every set of the chain is verified as a set is (every listed
 * image with its size and checksum, nothing unlisted, its pagemap against its
 * pages image), and must be the very set the child was dumped against: its
 * inventory.img has the checksum the child's inventory names. Each PE_PARENT
 * run is then replaced by the pieces of the parent's runs that cover it,
 * naming the parent's pages image; a page no set holds breaks the chain.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "image/dumpset.h"
#include "image/image.h"
#include "image/verify.h"
#include "log.h"

#define MAX_CHAIN	64

static bool has_parent_runs(const struct dump_run *runs, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		if (!runs[i].present && !runs[i].tparent)
			return true;
	return false;
}

/* The set `parent` of child (level: its place in the chain, for messages). */
static int open_parent(const struct dumpset *child, size_t level, struct dumpset *p)
{
	uint64_t size, hash;
	int ret;

	p->dirfd = openat(child->dirfd, "parent", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p->dirfd < 0)
		return fail(-errno, "broken image chain: parent set %zu cannot be opened: %s", level,
			    strerror(errno));
	ret = img_sum_file(p->dirfd, "inventory.img", &size, &hash);
	if (ret) {
		fail_clear();
		return fail(-ENOENT, "broken image chain: parent set %zu has no inventory.img",
			    level);
	}
	if (hash != child->inv->parent_inventory)
		return fail(-EIO, "broken image chain: parent set %zu is not the set this one was "
			    "dumped against (its inventory.img checksum differs)", level);
	ret = img_read_one(p->dirfd, IMG_INVENTORY, 0, &inventory_entry__descriptor,
			   (void **)&p->inv);
	if (!ret)
		ret = imgset_verify(p->dirfd, p->inv);
	return ret;
}

struct piece_list {
	struct dump_run *runs;
	size_t nr, cap;
};

static int add_piece(struct piece_list *l, const struct dump_run *r)
{
	if (l->nr == l->cap) {
		struct dump_run *n = realloc(l->runs, (l->cap = l->cap ? l->cap * 2 : 64) *
						      sizeof(*n));

		if (!n)
			return -ENOMEM;
		l->runs = n;
	}
	l->runs[l->nr++] = *r;
	return 0;
}

/* [r->start, r->end) from the parent's runs, piece by piece, with no gap. */
static int cover(struct piece_list *out, const struct dump_run *r, const struct dumpset *p,
		 size_t level)
{
	uint64_t at = r->start;

	for (size_t i = runs_after(p->runs, p->nr_runs, at); at < r->end; i++) {
		const struct dump_run *q = &p->runs[i];
		struct dump_run piece;
		int ret;

		if (i == p->nr_runs || q->start > at || q->tparent)
			return fail(-EIO, "broken image chain: pages at %#" PRIx64 " are in no set of "
				    "the chain (parent set %zu does not list them)", at, level);
		piece = *q;
		piece.start = at;
		piece.end = MIN(q->end, r->end);
		piece.has_sum = false;	/* the whole run's sum was checked in its own set */
		piece.nr_marks = 0;
		if (q->present)
			piece.off = q->off + (at - q->start);
		ret = add_piece(out, &piece);
		if (ret)
			return ret;
		at = piece.end;
	}
	return 0;
}

/* ds's runs become out's (ret 0), or out goes (ret <0); ret. */
static int take_pieces(struct dumpset *ds, struct piece_list *out, int ret)
{
	if (ret) {
		free(out->runs);
		return ret;
	}
	free(ds->runs);
	ds->runs = out->runs;
	ds->nr_runs = out->nr;
	return 0;
}

/* Every PE_PARENT run of ds->runs replaced by what parent p holds there. */
static int substitute(struct dumpset *ds, const struct dumpset *p, size_t level)
{
	struct piece_list out = { 0 };
	int ret = 0;

	for (size_t i = 0; i < ds->nr_runs && !ret; i++)
		ret = ds->runs[i].present || ds->runs[i].tparent ? add_piece(&out, &ds->runs[i]) :
					    cover(&out, &ds->runs[i], p, level);
	return take_pieces(ds, &out, ret);
}

static int add_to_chain(struct dumpset *ds, struct dumpset *p)
{
	struct dumpset **n = realloc(ds->chain, (ds->nr_chain + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	ds->chain = n;
	n[ds->nr_chain++] = p;
	return 0;
}

static struct dumpset *new_set(void)
{
	struct dumpset *p = calloc(1, sizeof(*p));

	if (p) {
		p->dirfd = -1;
		p->pages_fd = -1;
	}
	return p;
}

/* One more set up the chain: loaded, verified, its pieces put in. */
static int resolve_level(struct dumpset *ds, const struct dumpset *child, size_t level)
{
	struct dumpset *p = new_set();
	int ret = p ? add_to_chain(ds, p) : -ENOMEM;

	if (ret) {
		free(p);
		return ret;
	}
	ret = open_parent(child, level, p);
	p->chain_late = ds->chain_late;	/* its runs checked by the lazy restore */
	if (!ret)
		ret = dumpset_load_pagemap(p, ds->pstree->pid);
	if (!ret)
		ret = dumpset_verify_other_pages(p);
	if (!ret)
		ret = substitute(ds, p, level);
	return ret;
}

int chain_resolve(struct dumpset *ds)
{
	const struct dumpset *child = ds;
	int ret = 0;

	if (!has_parent_runs(ds->runs, ds->nr_runs))
		return 0;
	if (!ds->inv->has_parent_inventory)
		return fail(-EIO, "image pagemap-%u.img lists pages in a parent set, but inventory.img "
			    "names none", ds->pstree->pid);
	for (size_t level = 1; !ret && has_parent_runs(ds->runs, ds->nr_runs); level++) {
		if (level > MAX_CHAIN || (level > 1 && !child->inv->has_parent_inventory))
			return fail(-EIO, "broken image chain: parent set %zu lists pages in a parent "
				    "it does not name, or the chain is longer than %d", level - 1,
				    MAX_CHAIN);
		ret = resolve_level(ds, child, level);
		child = ds->chain[ds->nr_chain - 1];
	}
	if (!ret)
		pr_info("image chain of %zu set(s) above this one", ds->nr_chain);
	return ret;
}

bool dumpset_has_tparent(const struct dumpset *ds)
{
	for (size_t i = 0; i < ds->nr_runs; i++)
		if (ds->runs[i].tparent)
			return true;
	return false;
}

/* [r->start, r->end) from the tree parent's runs, piece by piece, with no gap. */
static int cover_tparent(struct piece_list *out, const struct dump_run *r,
			 const struct dumpset *p, pid_t pid)
{
	uint64_t at = r->start;

	for (size_t i = runs_after(p->runs, p->nr_runs, at); at < r->end; i++) {
		const struct dump_run *q = &p->runs[i];
		struct dump_run piece;
		int ret;

		if (i == p->nr_runs || q->start > at || !q->present)
			return fail(-EIO, "image pagemap-%d.img is corrupt: pages at %#" PRIx64 " are "
				    "listed as its parent's, which does not hold them", pid, at);
		piece = *q;
		piece.start = at;
		piece.end = MIN(q->end, r->end);
		piece.has_sum = false;	/* checked in the parent's own set */
		piece.nr_marks = 0;
		piece.tparent = true;
		piece.off = q->off + (at - q->start);
		ret = add_piece(out, &piece);
		if (ret)
			return ret;
		at = piece.end;
	}
	return 0;
}

int tparent_resolve(struct dumpset *ds, const struct dumpset *parent)
{
	struct piece_list out = { 0 };
	pid_t pid = (pid_t)ds->pstree->pid;
	int ret = 0;

	if (!dumpset_has_tparent(ds))
		return 0;
	for (size_t i = 0; i < ds->nr_runs && !ret; i++)
		ret = ds->runs[i].tparent ? cover_tparent(&out, &ds->runs[i], parent, pid) :
					    add_piece(&out, &ds->runs[i]);
	return take_pieces(ds, &out, ret);
}

size_t dumpset_other_pages(const struct dumpset *ds)
{
	int seen[MAX_CHAIN * 2];
	size_t n = 0;

	for (size_t i = 0; i < ds->nr_runs; i++) {
		bool known = ds->runs[i].fd == ds->pages_fd;

		for (size_t k = 0; k < n && !known; k++)
			known = seen[k] == ds->runs[i].fd;
		if (!known && n < ARRAY_SIZE(seen))
			seen[n++] = ds->runs[i].fd;
		else if (!known)
			n++;	/* beyond counting: the room check refuses */
	}
	return MAX(n, ds->nr_chain);
}

struct dump_run *dumpset_whole_run(struct dumpset *ds, const struct dump_run *run,
				   struct dumpset **set, size_t *level)
{
	struct dumpset *s = ds;
	size_t i;

	if (!run->present || run->tparent)
		return NULL;
	for (*level = 0; s->pages_fd != run->fd; s = ds->chain[*level - 1])
		if (++*level > ds->nr_chain)
			return NULL;
	i = runs_after(s->runs, s->nr_runs, run->start);
	if (i == s->nr_runs || s->runs[i].start > run->start || s->runs[i].end < run->end ||
	    !s->runs[i].present)
		return NULL;
	*set = s;
	return &s->runs[i];
}

void dumpset_chain_pages_name(const struct dumpset *set, size_t level, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = 0;
	for (size_t i = 0; i < level && o + 8 < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "parent/");
	snprintf(buf + o, len - o, "pages-%u.img", set->pages_id);
}
