/*
 * --prev-images-dir: the image set of the previous iteration (a pre-dump or
 * a dump). Its path is relative to the new set's directory, as in CRIU, and
 * becomes the new set's `parent` symlink; the new inventory holds the
 * checksum of the parent's inventory.img, so that a restore takes only that
 * very set. Pages not written since the parent's dump, and that the
 * parent's pagemap lists, are listed with PE_PARENT instead of being written.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "image/crypt.h"
#include "image/image.h"
#include "log.h"
#include "pagemap.pb-c.h"
#include "mem/pages.h"

static int add_cover(struct parent_set *p, const PagemapEntry *pe, size_t *cap)
{
	uint64_t nr = pe->has_nr_pages ? pe->nr_pages : pe->compat_nr_pages;
	struct page_run *last = p->nr_cover ? &p->cover[p->nr_cover - 1] : NULL;

	if (pe->has_in_tree_parent && pe->in_tree_parent)
		return 0;	/* the tree parent's set holds them: written again */
	if (!nr || pe->vaddr % PAGE_SIZE || (last && pe->vaddr < last->start + last->nr_pages *
					     PAGE_SIZE))
		return fail(-EIO, "the previous images' pagemap is corrupt or unsorted at %#" PRIx64,
			    pe->vaddr);
	if (last && last->start + last->nr_pages * PAGE_SIZE == pe->vaddr) {
		last->nr_pages += nr;
		return 0;
	}
	if (p->nr_cover == *cap) {
		struct page_run *n = realloc(p->cover, (*cap = *cap ? *cap * 2 : 256) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		p->cover = n;
	}
	p->cover[p->nr_cover++] = (struct page_run){ pe->vaddr, nr, false };
	return 0;
}

/* Every page the parent's pagemap lists, in its own pages image or its parent's. */
static int read_cover(struct parent_set *p, pid_t pid)
{
	struct image *img;
	size_t cap = 0;
	void *msg;
	int ret = img_open(p->dirfd, IMG_PAGEMAP, pid, &img);

	if (ret)
		return ret;
	ret = img_read_msg(img, &pagemap_head__descriptor, &msg);
	if (ret == 1)
		img_free(&pagemap_head__descriptor, msg);
	while (ret > 0 && (ret = img_read_msg(img, &pagemap_entry__descriptor, &msg)) == 1) {
		ret = add_cover(p, msg, &cap);
		img_free(&pagemap_entry__descriptor, msg);
		ret = ret ? ret : 1;
	}
	img_abort(img);
	return ret < 0 ? ret : 0;
}

int parent_open(struct dump_ctx *d, const char *path)
{
	struct parent_set *p = &d->parent;
	uint64_t size;
	int ret;

	p->path = path;
	if (d->dir.crypt) {	/* decrypted into the staging; the sealed set links path */
		ret = crypt_stage_parent(d->dir.crypt, path, &p->dirfd, &p->path);
		if (ret)
			return ret;
	} else {
		p->dirfd = openat(d->dir.fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (p->dirfd < 0)
		return fail(-errno, "cannot open the previous images %s: %s", path, strerror(errno));
	ret = img_sum_file(p->dirfd, "inventory.img", &size, &p->inventory_hash);
	if (ret) {
		fail_clear();
		return fail(-ENOENT, "%s holds no complete image set (no inventory.img)", path);
	}
	ret = read_cover(p, d->pid);
	if (ret)
		return fail(ret, "cannot read the pagemap of process %d in %s", d->pid, path);
	pr_info("previous images %s: %zu runs", path, p->nr_cover);
	return 0;
}

uint64_t parent_stretch(const struct parent_set *p, uint64_t addr, uint64_t end, bool *held)
{
	size_t lo = 0, hi = p->nr_cover;

	while (lo < hi) {	/* the first run ending after addr */
		size_t mid = lo + (hi - lo) / 2;
		const struct page_run *r = &p->cover[mid];

		if (r->start + r->nr_pages * PAGE_SIZE <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == p->nr_cover || p->cover[lo].start >= end) {
		*held = false;
		return end;
	}
	*held = p->cover[lo].start <= addr;
	if (!*held)
		return p->cover[lo].start;
	return MIN(end, p->cover[lo].start + p->cover[lo].nr_pages * PAGE_SIZE);
}

int parent_link(struct dump_ctx *d)
{
	if (symlinkat(d->parent.path, d->dir.fd, "parent"))
		return fail(-errno, "cannot create the parent link to %s: %s", d->parent.path,
			    strerror(errno));
	d->parent.linked = true;
	return 0;
}

void parent_unlink(struct dump_ctx *d)
{
	unlinkat(d->dir.fd, "parent", 0);
	d->parent.linked = false;
}

void parent_free(struct dump_ctx *d)
{
	if (d->parent.dirfd >= 0)
		close(d->parent.dirfd);
	free(d->parent.cover);
	d->parent.cover = NULL;
	d->parent.dirfd = -1;
}
