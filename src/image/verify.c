/*
 * An image set is evidence: before anything reads it, every file the
 * inventory lists must be there with its size and checksum, and nothing else
 * may be in the directory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "image/image.h"
#include "image/runsum.h"
#include "image/verify.h"
#include "log.h"

void img_escape(const char *s, char *out, size_t len)
{
	size_t o = 0;

	for (; *s && o + 5 < len; s++) {
		unsigned char c = *s;

		if (c >= 0x20 && c < 0x7f && c != '\\')
			out[o++] = c;
		else
			o += snprintf(out + o, len - o, "\\x%02x", c);
	}
	out[o] = 0;
}

/* A listed name must be a plain file name of the directory. */
static bool plain_name(const char *s)
{
	if (!s || !s[0] || s[0] == '.' || strlen(s) > 63 || !strcmp(s, "inventory.img"))
		return false;
	for (; *s; s++)
		if (*s == '/' || (unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

bool img_is_pages(const char *name, unsigned *id)
{
	char again[64];

	if (sscanf(name, "pages-%u.img", id) != 1)
		return false;
	img_name(IMG_PAGES, *id, again, sizeof(again));
	return !strcmp(again, name);
}

/* Size and checksum as found, against the inventory's entry e. */
static int compare_sum(const ImageSumEntry *e, uint64_t size, uint64_t hash)
{
	char esc[256];

	img_escape(e->name, esc, sizeof(esc));
	if (size != e->size)
		return fail(-EIO, "image %s is corrupt: %" PRIu64 " bytes, the inventory says %"
			    PRIu64, esc, size, e->size);
	if (hash != e->hash)
		return fail(-EIO, "image %s is corrupt: its checksum does not match the inventory",
			    esc);
	return 0;
}

/* A tree's other process: its set is a directory whose inventory.img has the listed sum. */
static int check_subset(int dirfd, const ImageSumEntry *e)
{
	int fd = img_open_subset(dirfd, e->name), ret;
	uint64_t size, hash;

	if (fd < 0)
		return fd;
	ret = img_sum_file(fd, "inventory.img", &size, &hash);
	close(fd);
	if (ret)
		return ret;
	if (size != e->size || hash != e->hash)
		return fail(-EIO, "image set %s is corrupt: its inventory.img does not match the "
			    "inventory", e->name);
	return 0;
}

static int check_one(int dirfd, const ImageSumEntry *e)
{
	uint64_t size, hash;
	char esc[256];
	unsigned id;
	int ret;

	img_escape(e->name ? e->name : "", esc, sizeof(esc));
	if (e->name && img_is_subset(e->name, &id))
		return check_subset(dirfd, e);
	if (!plain_name(e->name))
		return fail(-EIO, "inventory.img is corrupt: it lists an image named \"%s\"", esc);
	if (faccessat(dirfd, e->name, F_OK, AT_SYMLINK_NOFOLLOW))
		return fail(-ENOENT, "image %s is missing: %s", esc, strerror(errno));
	if (img_is_pages(e->name, &id))
		return 0;	/* read later, with its runs */
	ret = img_sum_file(dirfd, e->name, &size, &hash);
	return ret ? ret : compare_sum(e, size, hash);
}

static const ImageSumEntry *entry_of(const InventoryEntry *inv, const char *name)
{
	for (size_t i = 0; i < inv->n_images; i++)
		if (inv->images[i]->name && !strcmp(inv->images[i]->name, name))
			return inv->images[i];
	return NULL;
}

int imgset_verify_image(int dirfd, const InventoryEntry *inv, const char *name)
{
	const ImageSumEntry *e = entry_of(inv, name);
	uint64_t size, hash;
	int ret;

	if (!e)
		return fail(-EIO, "image %s is not listed in inventory.img", name);
	ret = img_sum_file(dirfd, name, &size, &hash);
	return ret ? ret : compare_sum(e, size, hash);
}

int imgset_check_run_sums(const InventoryEntry *inv, const char *name,
			  const struct dump_run *const *present, size_t n, const uint64_t *sums,
			  const struct hash64 *whole)
{
	const ImageSumEntry *e = entry_of(inv, name);
	uint64_t total = 0;

	if (!e)
		return fail(-EIO, "image %s is not listed in inventory.img", name);
	for (size_t i = 0; i < n; i++)
		if (present[i]->has_sum && present[i]->sum != sums[i])
			return fail(-EIO, "image %s is corrupt: the pages of the run at 0x%" PRIx64
				    " (%" PRIu64 " pages) do not match their checksum", name,
				    present[i]->start, (present[i]->end - present[i]->start) / PAGE_SIZE);
	if (whole && !e->of_runs)
		return compare_sum(e, whole->total, hash64_final(whole));
	for (size_t i = 0; i < n; i++) {	/* the runs' sums cover every byte: the size */
		if (!present[i]->has_sum)
			return fail(-EIO, "image %s: the run at 0x%" PRIx64 " has no checksum", name,
				    present[i]->start);
		total += present[i]->end - present[i]->start;
	}
	if (whole && whole->total != total)
		return compare_sum(e, whole->total, 0);
	if (e->of_runs)		/* listed by its runs' checksums (runsum.h) */
		return compare_sum(e, total, runsum_of_runs(sums, n));
	return total == e->size ? 0 : compare_sum(e, total, 0);
}

int imgset_verify_pages(const InventoryEntry *inv, const char *name, int fd,
			const struct dump_run *runs, size_t nr)
{
	uint64_t *lens = calloc(nr + 1, sizeof(*lens)), *sums = calloc(nr + 1, sizeof(*sums));
	const struct dump_run **present = calloc(nr + 1, sizeof(*present));
	const ImageSumEntry *e = entry_of(inv, name);
	struct hash64 whole;
	size_t n = 0;
	int ret = lens && sums && present ? 0 : -ENOMEM;

	if (!ret && !e)
		ret = fail(-EIO, "image %s is not listed in inventory.img", name);
	for (size_t i = 0; !ret && i < nr; i++) {
		if (!runs[i].present || runs[i].tparent)	/* the tree parent's image */
			continue;
		present[n] = &runs[i];
		lens[n++] = runs[i].end - runs[i].start;
	}
	if (!ret)
		ret = runsum_stream(fd, name, lens, n, sums, &whole, !e->of_runs);
	if (!ret)
		ret = imgset_check_run_sums(inv, name, present, n, sums, &whole);
	free(lens);
	free(sums);
	free(present);
	return ret;
}

#define RUN_BUF	(1UL << 20)

int imgset_verify_run(const char *name, int fd, const struct dump_run *run)
{
	uint64_t len = run->end - run->start, done = 0;
	uint8_t *buf = malloc(RUN_BUF);
	struct hash64 h;

	if (!buf)
		return -ENOMEM;
	hash64_init(&h);
	while (done < len) {
		size_t n = len - done < RUN_BUF ? len - done : RUN_BUF;
		ssize_t got = pread(fd, buf, n, (off_t)(run->off + done));

		if (got <= 0) {
			free(buf);
			return fail(got < 0 ? -errno : -EIO, "cannot read %s: %s", name,
				    got < 0 ? strerror(errno) : "it ends before its runs");
		}
		hash64_update(&h, buf, (size_t)got);
		done += (uint64_t)got;
	}
	free(buf);
	if (hash64_final(&h) != run->sum)
		return fail(-EIO, "image %s is corrupt: the pages of the run at 0x%" PRIx64
			    " (%" PRIu64 " pages) do not match their checksum", name, run->start,
			    len / PAGE_SIZE);
	return 0;
}

static bool listed(const InventoryEntry *inv, const char *name)
{
	return entry_of(inv, name) != NULL;
}

static bool has_suffix(const char *name, const char *suf)
{
	size_t n = strlen(name), s = strlen(suf);

	return n > s && !strcmp(name + n - s, suf);
}

/*
 * A record a tool wrote beside the images that no restore reads: logs (runc's
 * dump.log, restore.log), the options CRIU's test runner notes for each action
 * (dump.cropt, restore.cropt), the stats of an earlier restore, and the socket
 * of a lazy-pages daemon waiting for the restore (CRIU's place for it).
 */
static bool is_record(const char *name)
{
	return has_suffix(name, ".log") || has_suffix(name, ".cropt") ||
	       !strcmp(name, "stats-restore") || !strcmp(name, "lazy-pages.socket");
}

/* Nothing in the directory that the inventory does not list, but records. */
static int check_unlisted(int dirfd, const InventoryEntry *inv)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	char esc[256];
	int ret = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return fail(-errno, "cannot list the dump directory: %s", strerror(errno));
	}
	while (!ret && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, "inventory.img") || listed(inv, de->d_name) ||
		    is_record(de->d_name) ||
		    (inv->has_parent_inventory && !strcmp(de->d_name, "parent")))
			continue;	/* parent: the set it is based on, checked by chain.c */
		img_escape(de->d_name, esc, sizeof(esc));
		ret = fail(-EIO, "image %s is not listed in inventory.img", esc);
	}
	closedir(d);
	return ret;
}

int imgset_verify(int dirfd, const InventoryEntry *inv)
{
	int ret = 0;

	if (!inv->n_images)
		return fail(-EIO, "inventory.img lists no images: not a verifiable image set");
	for (size_t i = 0; i < inv->n_images && !ret; i++)
		ret = check_one(dirfd, inv->images[i]);
	return ret ? ret : check_unlisted(dirfd, inv);
}
