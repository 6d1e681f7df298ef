/* memdump show: pty pairs (show_tty.h). */
#include <stdio.h>
#include <unistd.h>

#include "files/tty_show.h"
#include "image/image.h"

#include "tty.pb-c.h"
#include "mem/pages.h"

/* Bytes queued for the reader of tty id. */
static size_t queued(const struct dumpset *ds, uint32_t id)
{
	struct image *img;
	TtyDataEntry *e;
	char name[64];
	size_t n = 0;

	img_name(IMG_TTY_DATA, 0, name, sizeof(name));
	if (faccessat(ds->dirfd, name, F_OK, 0) || img_open(ds->dirfd, IMG_TTY_DATA, 0, &img))
		return 0;
	while (img_read_msg(img, &tty_data_entry__descriptor, (void **)&e) == 1) {
		if (e->tty_id == id)
			n += e->data.len;
		img_free(&tty_data_entry__descriptor, e);
	}
	img_abort(img);
	return n;
}

static void show_one(const struct dumpset *ds, const TtyInfoEntry *e)
{
	const TermiosEntry *t = e->termios;
	const WinsizeEntry *w = e->winsize;
	bool master = e->has_master && e->master;

	if (e->type == TTY_TYPE__CTTY) {
		printf("/dev/tty: the controlling terminal /dev/pts/%u of session %u\n",
		       e->pty ? e->pty->index : 0, e->sid);
		return;
	}
	if (e->type == TTY_TYPE__EXT_TTY && !(e->has_orphan && e->orphan)) {
		printf("the job's terminal (--shell-job): termios lflag %#o, winsize %ux%u, "
		       "foreground group %u\n", t ? t->c_lflag : 0, w ? w->ws_col : 0,
		       w ? w->ws_row : 0, e->pgrp);
		return;
	}
	if (e->type == TTY_TYPE__CONSOLE || e->type == TTY_TYPE__VT || e->type == TTY_TYPE__SERIAL) {
		printf("%s %u:%u: termios lflag %#o, winsize %ux%u%s%s\n",
		       e->type == TTY_TYPE__CONSOLE ? "console" :
		       e->type == TTY_TYPE__VT ? "virtual terminal" : "serial port",
		       e->rdev >> 8 & 0xfff, (e->rdev & 0xff) | (e->rdev >> 12 & 0xfff00),
		       t ? t->c_lflag : 0, w ? w->ws_col : 0, w ? w->ws_row : 0,
		       e->exclusive ? ", exclusive" : "",
		       e->has_ctty && e->ctty ? ", its session's controlling terminal" : "");
		return;
	}
	if (e->type == TTY_TYPE__PTY && !t && !master) {
		printf("pty /dev/pts/%u slave: hung up, its master closed\n",
		       e->pty ? e->pty->index : 0);
		return;
	}
	printf("pty /dev/pts/%u %s:", e->pty ? e->pty->index : 0, master ? "master" : "slave");
	if (t && !master)
		printf(" termios iflag %#o oflag %#o cflag %#o lflag %#o speed %u/%u,", t->c_iflag,
		       t->c_oflag, t->c_cflag, t->c_lflag, t->c_ispeed, t->c_ospeed);
	if (w && !master)
		printf(" winsize %ux%u,", w->ws_col, w->ws_row);
	if (e->termios_locked && !master && (e->termios_locked->c_iflag || e->termios_locked->c_oflag ||
					     e->termios_locked->c_cflag || e->termios_locked->c_lflag))
		printf(" locked termios,");
	if (e->packet_mode)
		printf(" packet mode,");
	if (e->locked)
		printf(" locked,");
	if (e->exclusive)
		printf(" exclusive,");
	if (e->has_ctty && e->ctty)
		printf(" controlling terminal of session %u,", e->sid);
	if (e->has_orphan && e->orphan) {	/* a runtime's: restored on a new pair */
		printf(" its master outside the dump (tty[%x:%x])\n", e->rdev,
		       e->has_dev ? e->dev : 0);
		return;
	}
	printf(" %zu byte%s unread\n", queued(ds, e->id), queued(ds, e->id) == 1 ? "" : "s");
}

void show_ttys(const struct dumpset *ds)
{
	struct image *img;
	TtyInfoEntry *e;
	char name[64];

	img_name(IMG_TTY_INFO, 0, name, sizeof(name));
	if (faccessat(ds->dirfd, name, F_OK, 0) || img_open(ds->dirfd, IMG_TTY_INFO, 0, &img))
		return;
	while (img_read_msg(img, &tty_info_entry__descriptor, (void **)&e) == 1) {
		show_one(ds, e);
		img_free(&tty_info_entry__descriptor, e);
	}
	img_abort(img);
}
