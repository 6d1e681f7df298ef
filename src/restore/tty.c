/*
 * Pseudo-terminal pairs (dump/tty.c for what is saved): the master is opened
 * again at the pty index it had (/dev/ptmx hands out the lowest free index:
 * memdump opens it until it gets that one, and refuses the restore if the
 * index is taken: the process may know its /dev/pts/N), its termios, window
 * size, locked termios, packet, exclusive and lock modes set, the queued
 * bytes put back (ptyq.c), and every slave description opened from it with
 * TIOCGPTPEER. A slave that was the controlling terminal becomes it again
 * in the child once it leads its session (tty_ctty_in_child).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common.h"
#include "image/image.h"
#include "log.h"
#include "ptyq.h"
#include "restore/restore.h"

#include "tty.pb-c.h"

#define PTY_MAX_INDEX	4096

/* Entry id of tty-info.img, or NULL (to free with img_free). */
static TtyInfoEntry *info_of(struct rst *r, uint32_t id)
{
	TtyInfoEntry *e = NULL;
	struct image *img;

	if (img_open(r->ds.dirfd, IMG_TTY_INFO, 0, &img))
		return NULL;
	while (img_read_msg(img, &tty_info_entry__descriptor, (void **)&e) == 1) {
		if (e->id == id)
			break;
		img_free(&tty_info_entry__descriptor, e);
		e = NULL;
	}
	img_abort(img);
	return e;
}

/* Copy the lines of e (ptyq.h) into *lines (to free). */
static int copy_lines(const TtyDataEntry *e, uint32_t **lines, size_t *nr)
{
	if (!e->n_lines)
		return 0;
	*lines = malloc(e->n_lines * sizeof(**lines));
	if (!*lines)
		return -ENOMEM;
	memcpy(*lines, e->lines, e->n_lines * sizeof(**lines));
	*nr = e->n_lines;
	return 0;
}

/* The bytes (and lines) queued for the reader of tty id (tty-data.img): to free. */
static int data_of(struct rst *r, uint32_t id, uint8_t **buf, size_t *len, uint32_t **lines,
		   size_t *nr)
{
	TtyDataEntry *e;
	struct image *img;
	char name[64];
	int ret;

	*buf = NULL;
	*len = 0;
	*lines = NULL;
	*nr = 0;
	img_name(IMG_TTY_DATA, 0, name, sizeof(name));
	if (faccessat(r->ds.dirfd, name, F_OK, 0))
		return 0;
	ret = img_open(r->ds.dirfd, IMG_TTY_DATA, 0, &img);
	if (ret)
		return ret;
	while ((ret = img_read_msg(img, &tty_data_entry__descriptor, (void **)&e)) == 1) {
		ret = 0;
		if (e->tty_id == id && !*buf) {
			*buf = malloc(e->data.len ? e->data.len : 1);
			if (!*buf)
				ret = -ENOMEM;
			else
				memcpy(*buf, e->data.data, (*len = e->data.len));
			if (!ret)
				ret = copy_lines(e, lines, nr);
		}
		img_free(&tty_data_entry__descriptor, e);
		if (ret)
			break;
	}
	img_abort(img);
	return ret < 0 ? ret : 0;
}

static void to_kterm(const TermiosEntry *e, struct kterm *k)
{
	memset(k, 0, sizeof(*k));
	if (!e)
		return;
	k->iflag = e->c_iflag;
	k->oflag = e->c_oflag;
	k->cflag = e->c_cflag;
	k->lflag = e->c_lflag;
	k->line = e->c_line;
	k->ispeed = e->c_ispeed;
	k->ospeed = e->c_ospeed;
	for (size_t i = 0; i < e->n_c_cc && i < PTY_NCC; i++)
		k->cc[i] = e->c_cc[i];
}

/* /dev/ptmx opened until it gives index idx; the others it gave are closed again. */
static int open_at_index(const char *path, int flags, uint32_t idx)
{
	int held[PTY_MAX_INDEX], nr = 0, fd = -1;
	uint32_t n = 0;

	while (nr < PTY_MAX_INDEX) {
		fd = open(path, (flags & O_ACCMODE) | O_NOCTTY | O_CLOEXEC);
		if (fd < 0 || ioctl(fd, TIOCGPTN, &n)) {
			int err = errno;

			if (fd >= 0)
				close(fd);
			fd = fail(-err, "cannot open %s: %s", path, strerror(err));
			break;
		}
		if (n == idx)
			break;
		if (n > idx) {
			close(fd);
			fd = fail(-EBUSY, "pty /dev/pts/%u is in use: the process would get "
				  "/dev/pts/%u instead", idx, n);
			break;
		}
		held[nr++] = fd;
	}
	if (nr == PTY_MAX_INDEX)
		fd = fail(-EBUSY, "/dev/ptmx gave %d ptys below /dev/pts/%u", nr, idx);
	while (nr)
		close(held[--nr]);
	return fd;
}

/* Termios, window size, locked termios, packet mode and queued bytes of a new pair. */
static int set_pair(struct rst *r, int m, const TtyInfoEntry *mi, const TtyInfoEntry *si)
{
	struct kterm t, locked;
	struct winsize ws = { 0 };
	uint8_t *in = NULL, *out = NULL;
	uint32_t *lines = NULL, *none = NULL;
	size_t in_len, out_len, nr_lines, nr_none;
	int unlock = 0, pkt = mi->packet_mode, ret;
	char why[256] = "";

	to_kterm(si->termios, &t);
	to_kterm(si->termios_locked, &locked);
	if (si->winsize) {
		ws.ws_row = si->winsize->ws_row;
		ws.ws_col = si->winsize->ws_col;
		ws.ws_xpixel = si->winsize->ws_xpixel;
		ws.ws_ypixel = si->winsize->ws_ypixel;
	}
	ret = data_of(r, si->id, &in, &in_len, &lines, &nr_lines);
	if (!ret)
		ret = data_of(r, mi->id, &out, &out_len, &none, &nr_none);
	if (!ret && (ioctl(m, TIOCSPTLCK, &unlock) || kterm_set(m, &t) ||
		     ioctl(m, TIOCSWINSZ, &ws) || ioctl(m, TIOCPKT, &pkt)))
		ret = -errno;
	if (!ret) {
		struct pty_queue q = { .in = in, .in_len = in_len, .out = out, .out_len = out_len,
				       .lines = lines, .nr_lines = nr_lines };

		ret = pty_put_back(m, &t, &q, why, sizeof(why));
	}
	if (!ret && kterm_set_locked(m, &locked))
		ret = -errno;
	if (!ret && mi->exclusive && ioctl(m, TIOCEXCL))
		ret = -errno;
	free(in);
	free(out);
	free(lines);
	free(none);
	if (ret)
		return fail(ret, "pty /dev/pts/%u: %s", mi->pty->index, why[0] ? why : strerror(-ret));
	return 0;
}

static bool is_pty_file(const FileEntry *fe)
{
	return fe && fe->type == FD_TYPES__TTY && fe->tty && fe->tty->tty_info_id;
}

/* The files.img entry of the master of pty idx (info ids: idx*2+2 master, +1 slave). */
static const FileEntry *master_file(struct rst *r, uint32_t idx)
{
	for (size_t i = 0; i < r->ds.nr_files; i++)
		if (is_pty_file(r->ds.files[i]) && r->ds.files[i]->tty->tty_info_id == idx * 2 + 2)
			return r->ds.files[i];
	return NULL;
}

static int open_pair(struct rst *r, const FileEntry *mfe, struct rdesc *md)
{
	TtyInfoEntry *mi = info_of(r, mfe->tty->tty_info_id);
	TtyInfoEntry *si = info_of(r, mfe->tty->tty_info_id - 1);
	int lock = 1, ret = 0;

	if (!mi || !si || !mi->pty)
		ret = fail(-EIO, "tty-info.img: pty of file %u is missing", mfe->id);
	if (!ret)
		ret = md->fd = open_at_index(mfe->tty->name ? mfe->tty->name : "/dev/ptmx",
					     mfe->tty->flags, mi->pty->index);
	if (ret >= 0)
		ret = set_pair(r, md->fd, mi, si);
	if (!ret && fcntl(md->fd, F_SETFL, mfe->tty->flags & ~O_ACCMODE))
		ret = fail(-errno, "cannot set the flags of pty master %u: %s", mi->pty->index,
			   strerror(errno));
	if (!ret && mi->locked && ioctl(md->fd, TIOCSPTLCK, &lock))
		ret = fail(-errno, "cannot lock pty %u: %s", mi->pty->index, strerror(errno));
	img_free(&tty_info_entry__descriptor, mi);
	img_free(&tty_info_entry__descriptor, si);
	return ret < 0 ? ret : 0;
}

static int target_fd_of(struct rst *r, uint32_t id)
{
	for (size_t i = 0; i < r->ds.nr_fds; i++)
		if (r->ds.fds[i]->id == id)
			return r->ds.fds[i]->fd;
	return -1;
}

int tty_open(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	uint32_t idx = (fe->tty->tty_info_id - 1) / 2;
	const FileEntry *mfe = master_file(r, idx);
	struct rdesc *md = mfe ? rst_desc(r, mfe->id) : NULL;
	TtyInfoEntry *si;
	int ret = 0;

	if (!md)
		return fail(-EIO, "files.img: pty %u has no master the process holds", idx);
	if (md->fd < 0)
		ret = open_pair(r, mfe, md);
	if (ret || d == md)
		return ret;
	d->fd = pty_open_peer(md->fd, fe->tty->flags & ~O_CLOEXEC);
	if (d->fd < 0)
		return fail(d->fd, "cannot open /dev/pts/%u: %s", idx, strerror(-d->fd));
	si = info_of(r, fe->tty->tty_info_id);
	if (si && si->has_ctty && si->ctty)
		r->ctty_target = target_fd_of(r, fe->id) + 1;
	if (si && si->exclusive && ioctl(d->fd, TIOCEXCL))
		ret = fail(-errno, "cannot make /dev/pts/%u exclusive: %s", idx, strerror(errno));
	img_free(&tty_info_entry__descriptor, si);
	return ret;
}

int tty_check(struct rst *r, const FileEntry *fe)
{
	uint32_t idx = (fe->tty->tty_info_id - 1) / 2;
	TtyInfoEntry *e = info_of(r, fe->tty->tty_info_id);
	bool ctty = e && e->has_ctty && e->ctty;
	int ret = 0;

	if (!e || !e->pty || e->pty->index != idx)
		ret = fail(-EIO, "tty-info.img: no entry %u for pty file %u", fe->tty->tty_info_id,
			   fe->id);
	else if (!master_file(r, idx) || target_fd_of(r, master_file(r, idx)->id) < 0)
		ret = fail(-EIO, "files.img: pty %u has no master the process holds", idx);
	else if (ctty && r->ds.pstree->sid != r->ds.pstree->pid)
		ret = fail(-EOPNOTSUPP, "/dev/pts/%u was the controlling terminal of session %u, "
			   "which restore does not make", idx, r->ds.pstree->sid);
	img_free(&tty_info_entry__descriptor, e);
	return ret;
}

int tty_ctty_in_child(struct rst *r, char *why, size_t len)
{
	if (!r->ctty_target)
		return 0;
	if (ioctl(r->ctty_target - 1, TIOCSCTTY, 0)) {
		snprintf(why, len, "cannot make fd %d its controlling terminal again: %s",
			 r->ctty_target - 1, strerror(errno));
		return -errno;
	}
	return 0;
}
