/*
 * The pages of a dump to a page server (dump --page-server): pages-1.img is
 * not written here but streamed into the connection, the page pipes spliced
 * into the socket (pages.c: no copy through memdump on this side). Its
 * checksums are taken as with O_DIRECT, from the frozen target's memory (or
 * fed by the writer in read and mem modes), so the inventory written here
 * lists the image the page server holds. The pagemap follows once written,
 * then a COMMIT: the page server syncs both and answers; only then is the
 * inventory written (images.c), so a page server that died or closed
 * leaves a dump that fails, the target running, no inventory here and no
 * complete set there.
 *
 * A tree (treedump.c): each process's pages and pagemap go into its own
 * set's directory there (SUB proc-PID, or "" for the root's), the layout
 * the set has here. Only the root's pagemap is followed by the COMMIT: its
 * inventory is the last one written, after every other process's, so the
 * page server holds a complete tree when it answers, and a dump that stops
 * before leaves it uncommitted (it removes everything).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "image/image.h"
#include "log.h"
#include "xfer.h"
#include "mem/pages.h"

/* A tree's process: the files from here on into its own set's directory there. */
static int to_own_dir(struct dump_ctx *d)
{
	if (!d->xfer_sub)
		return 0;
	return xfer_send(d->xfer, XFER_SUB, d->xfer_sub, strlen(d->xfer_sub));
}

int page_xfer_open(struct dump_ctx *d)
{
	char name[64];
	int ret;

	img_name(IMG_PAGES, 1, name, sizeof(name));
	ret = img_remember_remote(&d->dir, IMG_PAGES, 1);
	if (!ret)
		ret = to_own_dir(d);
	if (!ret)
		ret = xfer_send(d->xfer, XFER_FILE, name, strlen(name));
	return ret ? ret : d->xfer->fd;
}

/*
 * Spliced into a socket, the pages the parasite gifted are the target's own
 * pages until the page server has read them (TCP keeps references, and may
 * send them again): its answer to a SYNC says it has, before the target
 * runs again.
 */
int page_xfer_sync(struct dump_ctx *d)
{
	return xfer_request(d->xfer, XFER_SYNC);
}

int page_xfer_data(struct dump_ctx *d, uint64_t bytes)
{
	return xfer_send(d->xfer, XFER_DATA, NULL, bytes);
}

/* With TLS: no splice into the session, the pages are read into buffers (pages.c). */
bool page_xfer_copies(const struct dump_ctx *d)
{
	return xfer_copies(d->xfer);
}

/* A buffer of pages as one DATA piece, through the session. */
int page_xfer_send(struct dump_ctx *d, const void *buf, uint64_t bytes)
{
	return xfer_send(d->xfer, XFER_DATA, buf, bytes);
}

/* A write into the socket failed (err): the page server is named, not "the pages image". */
int page_xfer_error(struct dump_ctx *d, int err)
{
	if (err == -EPIPE || err == -ECONNRESET || err == -ENOTCONN || err == -ETIMEDOUT)
		return xfer_lost(d->xfer, err);
	return err;
}

int page_xfer_commit(struct dump_ctx *d)
{
	char name[64];
	int ret;

	img_name(IMG_PAGEMAP, (unsigned)d->pid, name, sizeof(name));
	ret = to_own_dir(d);
	if (!ret)
		ret = xfer_send_file(d->xfer, d->dir.fd, name);
	if (ret || (d->xfer_sub && d->xfer_sub[0]))
		return ret;	/* a tree's process other than its root: the root's COMMIT */
	return xfer_request(d->xfer, XFER_COMMIT);
}
