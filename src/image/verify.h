/* Checking an image set against its inventory (see verify.c). */
#ifndef MEMDUMP_VERIFY_H
#define MEMDUMP_VERIFY_H

#include <stddef.h>

#include "image/dumpset.h"
#include "image/hash.h"
#include "inventory.pb-c.h"

/*
 * Every listed image present with its size and checksum, none unlisted. The
 * pages images (pages-N.img) are only checked to be there: their bytes are
 * read once, by imgset_verify_pages() with their runs, or
 * imgset_verify_image() when no pagemap names them.
 */
int imgset_verify(int dirfd, const InventoryEntry *inv);
/* Image name (a pages-N.img) as the inventory says it is. */
int imgset_verify_image(int dirfd, const InventoryEntry *inv, const char *name);
/*
 * The pages image name, open on fd, against its runs' checksums (runs in
 * file order; a damaged run is named by its address) and the inventory.
 */
int imgset_verify_pages(const InventoryEntry *inv, const char *name, int fd,
			const struct dump_run *runs, size_t nr);
/*
 * One run of the pages image name (as the caller names it), open on fd, read
 * whole against its checksum: verify's words for a damaged one.
 */
int imgset_verify_run(const char *name, int fd, const struct dump_run *run);
/*
 * The sums of the n present runs (file order) and of the whole pages image
 * name, computed by the caller (from the restored memory: restore's
 * pagecheck.c), against the runs' checksums and the inventory. whole NULL:
 * every run has its own checksum, and those cover every byte of the image
 * (its size is the runs' total, checked at load): the inventory's size is
 * compared, its checksum adds nothing.
 */
int imgset_check_run_sums(const InventoryEntry *inv, const char *name,
			  const struct dump_run *const *present, size_t n, const uint64_t *sums,
			  const struct hash64 *whole);
/* name is a pages image's: pages-N.img, *id = N. */
bool img_is_pages(const char *name, unsigned *id);
/* s with non-printable bytes and backslashes as \xNN, for error lines. */
void img_escape(const char *s, char *out, size_t len);

#endif
