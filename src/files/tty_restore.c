/*
 * Pseudo-terminal pairs (files/tty.c for what is saved): the master is opened
 * again at the pty index it had (/dev/ptmx hands out the lowest free index:
 * memdump opens it until it gets that one, and refuses the restore if the
 * index is taken: the process may know its /dev/pts/N), its termios, window
 * size, locked termios, packet, exclusive and lock modes set, the queued
 * bytes put back (ptyq.c), and every slave description opened from it with
 * TIOCGPTPEER. A slave whose master was outside the dump (a runtime's,
 * tty-info's orphan) gets a new pair in the devpts of its path, its settings
 * on it, the master handed out through the hooks (orphan-pts-master), or
 * memdump's terminal given for its key (--inherit-fd fd[N]:tty[RDEV:DEV]).
 * A slave that was the controlling terminal becomes it again in the child
 * once it leads its session, before it forks the rest of a tree
 * (tty_ctty_early), else once its fds have their numbers.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

#include "common.h"
#include "hooks.h"
#include "image/image.h"
#include "log.h"
#include "ptyq.h"
#include "ctx/restore_ctx.h"
#include "files/tty.h"

#include "tty.pb-c.h"
#include "ns/ns.h"
#include "mem/pages.h"

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
			else if ((*len = e->data.len))	/* an empty one has no data pointer */
				memcpy(*buf, e->data.data, *len);
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

void tty_to_kterm(const TermiosEntry *e, struct kterm *k)
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

/*
 * The slave's device node gets its owner and mode back (a terminal program's
 * user's), through a file of it opened from its master m: the node of m's
 * devpts, wherever that is mounted.
 */
static int set_slave_owner(int m, const TtyInfoEntry *si, uint32_t index, char *why, size_t len)
{
	int fd, ret = 0;

	if (!si->has_uid || !si->has_gid || !si->has_mode)
		return 0;	/* an older image */
	fd = pty_open_peer(m, O_RDONLY | O_NONBLOCK);
	if (fd < 0) {
		snprintf(why, len, "cannot open /dev/pts/%u: %s", index, strerror(-fd));
		return fd;
	}
	if (fchown(fd, si->uid, si->gid) || fchmod(fd, si->mode)) {
		ret = -errno;
		snprintf(why, len, "cannot give /dev/pts/%u its owner %u:%u and mode %o: %s", index,
			 si->uid, si->gid, si->mode, strerror(errno));
	}
	close(fd);
	return ret;
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

	tty_to_kterm(si->termios, &t);
	tty_to_kterm(si->termios_locked, &locked);
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
	if (!ret)
		ret = set_slave_owner(m, si, mi->pty->index, why, sizeof(why));
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

/* The slave's tty-info entry: the master holder's set, else another process's of the tree. */
static TtyInfoEntry *slave_info(struct rst *r, uint32_t id)
{
	TtyInfoEntry *e = info_of(r, id);
	struct rst *k;

	for (size_t i = 0; !e && (k = tree_proc(r, i)); i++)
		if (k != r)
			e = info_of(k, id);
	return e;
}

static struct rst *root_of(struct rst *r);

/*
 * The pair a bind mount of its slave made first (tty_make_bound_pts: the
 * restored devpts, /dev/pts/idx bound on /dev/console), taken for its
 * dumped master (read and write, as that pair was opened): a copy of its
 * master, or -1.
 */
static int bound_pair(struct rst *r, const FileEntry *mfe, uint32_t idx)
{
	struct rst *root = root_of(r);

	if ((mfe->tty->flags & O_ACCMODE) != O_RDWR)
		return -1;
	for (size_t i = 0; i < root->nr_orphans; i++) {
		struct rst_orphan *o = &root->orphans[i];

		if (o->info_id == idx * 2 + 1 && !o->given && !o->hung && o->fd >= 0)
			return fcntl(o->fd, F_DUPFD_CLOEXEC, 3);
	}
	return -1;
}

/* A new pair as the master holder r dumped it; *fd its master. */
static int open_pair(struct rst *r, const FileEntry *mfe, int *fd)
{
	TtyInfoEntry *mi = info_of(r, mfe->tty->tty_info_id);
	TtyInfoEntry *si = slave_info(r, mfe->tty->tty_info_id - 1);
	char at[PATH_MAX];
	int lock = 1, ret = 0;

	*fd = -1;
	if (!mi || !si || !mi->pty)
		ret = fail(-EIO, "tty-info.img: pty of file %u is missing", mfe->id);
	if (!ret)
		*fd = bound_pair(r, mfe, mi->pty->index);
	if (!ret)
		ret = *fd >= 0 ? *fd :
		      (*fd = open_at_index(rst_path(r, mfe->tty->name ? mfe->tty->name : "/dev/ptmx",
						    at, sizeof(at)), mfe->tty->flags, mi->pty->index));
	if (ret >= 0)
		ret = set_pair(r, *fd, mi, si);
	if (!ret && fcntl(*fd, F_SETFL, mfe->tty->flags & ~(O_ACCMODE | O_ASYNC)))
		ret = fail(-errno, "cannot set the flags of pty master %u: %s", mi->pty->index,
			   strerror(errno));
	if (!ret && mi->locked && ioctl(*fd, TIOCSPTLCK, &lock))
		ret = fail(-errno, "cannot lock pty %u: %s", mi->pty->index, strerror(errno));
	img_free(&tty_info_entry__descriptor, mi);
	img_free(&tty_info_entry__descriptor, si);
	if (ret < 0 && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	return ret < 0 ? ret : 0;
}

static int target_fd_of(struct rst *r, uint32_t id)
{
	for (size_t i = 0; i < r->ds.nr_fds; i++)
		if (r->ds.fds[i]->id == id)
			return r->ds.fds[i]->fd;
	return -1;
}

static bool is_orphan(const TtyInfoEntry *e)
{
	return e && e->has_orphan && e->orphan;
}

/* CRIU's key of a terminal: tty[RDEV:DEV] (hex). */
static void orphan_key(const TtyInfoEntry *e, char *buf, size_t len)
{
	snprintf(buf, len, "tty[%x:%x]", e->rdev, e->has_dev ? e->dev : 0);
}

static struct rst *root_of(struct rst *r)
{
	while (r->tree_parent)
		r = r->tree_parent;
	return r;
}

/* The slave's settings on a new pair: termios, window size, locked termios, unlocked. */
static int set_orphan(int m, const TtyInfoEntry *si)
{
	struct kterm t, locked;
	struct winsize ws = { 0 };
	int unlock = 0;

	tty_to_kterm(si->termios, &t);
	tty_to_kterm(si->termios_locked, &locked);
	if (si->winsize) {
		ws.ws_row = si->winsize->ws_row;
		ws.ws_col = si->winsize->ws_col;
		ws.ws_xpixel = si->winsize->ws_xpixel;
		ws.ws_ypixel = si->winsize->ws_ypixel;
	}
	if (ioctl(m, TIOCSPTLCK, &unlock) || kterm_set(m, &t) || ioctl(m, TIOCSWINSZ, &ws) ||
	    kterm_set_locked(m, &locked))
		return fail(-errno, "pty /dev/pts/%u: cannot set its settings: %s", si->pty->index,
			    strerror(errno));
	return 0;
}

/* A new pair at idx (ptmx: where the devpts's is, as memdump sees it), kept by root. */
static int keep_orphan(struct rst *root, const char *ptmx, uint32_t idx, struct rst_orphan **o)
{
	int m;

	if (root->nr_orphans == ARRAY_SIZE(root->orphans))
		return fail(-E2BIG, "more than %zu terminals whose master was outside",
			    ARRAY_SIZE(root->orphans));
	m = open_at_index(ptmx, O_RDWR, idx);
	if (m < 0)
		return m;
	*o = &root->orphans[root->nr_orphans++];
	**o = (struct rst_orphan){ idx * 2 + 1, m, false, false };
	return 0;
}

/*
 * The new master of an orphan slave, made once for the tree: at the slave's
 * index in the devpts its path leads to (the restored one, rst_path), with
 * the slave's settings, handed to whoever holds the hooks (CRIU's
 * orphan-pts-master notification, its fd passed; runc gives it to the
 * console socket). memdump keeps its copy until the restore ends.
 */
static int orphan_master(struct rst *r, const FileEntry *fe, const TtyInfoEntry *si)
{
	struct rst *root = root_of(r);
	char ptmx[PATH_MAX], buf[PATH_MAX], *slash;
	struct rst_orphan *o = NULL;
	int ret;

	for (size_t i = 0; i < root->nr_orphans && !o; i++)
		if (root->orphans[i].info_id == si->id)
			o = &root->orphans[i];
	if (o && o->given)
		return o->fd;
	if (!o) {
		snprintf(ptmx, sizeof(ptmx) - 8, "%s", fe->tty->name ? fe->tty->name : "");
		slash = strrchr(ptmx, '/');
		if (!slash || ptmx[0] != '/')
			return fail(-EIO, "files.img: terminal %u has no path", fe->id);
		strcpy(slash, "/ptmx");
		ret = keep_orphan(root, rst_path(r, ptmx, buf, sizeof(buf)), si->pty->index, &o);
		if (ret)
			return ret;
	}
	ret = set_orphan(o->fd, si);
	if (!ret)
		ret = hook_give_fd(r->o->hooks, HOOK_ORPHAN_PTS_MASTER, root->pid, o->fd);
	o->given = !ret;
	return ret ? ret : o->fd;
}

/* CRIU's hung-up slave: a pty entry without modes. */
static bool is_hung(const TtyInfoEntry *e)
{
	return e && e->type == TTY_TYPE__PTY && e->pty && !e->termios && !(e->has_master && e->master);
}

/* The ptmx of the devpts of a slave's path (its " (deleted)" off), as memdump sees it. */
static int hung_ptmx(struct rst *r, const FileEntry *fe, char *buf, size_t len)
{
	char ptmx[PATH_MAX], at[PATH_MAX], *slash;

	snprintf(ptmx, sizeof(ptmx) - 8, "%s", fe->tty->name ? fe->tty->name : "");
	slash = strrchr(ptmx, '/');
	if (!slash || ptmx[0] != '/')
		return fail(-EIO, "files.img: terminal %u has no path", fe->id);
	strcpy(slash, "/ptmx");
	snprintf(buf, len, "%s", rst_path(r, ptmx, at, sizeof(at)));
	return 0;
}

static int check_hung(struct rst *r, const FileEntry *fe, const TtyInfoEntry *e)
{
	char ptmx[PATH_MAX];
	struct stat st;
	int ret = hung_ptmx(r, fe, ptmx, sizeof(ptmx));

	if (!ret && (stat(ptmx, &st) || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(5, 2)))
		ret = fail(-ENOENT, "/dev/pts/%u was hung up: no devpts %s to make it again in",
			   e->pty->index, ptmx);
	return ret;
}

/*
 * A hung-up slave: a pair made at its index, kept by the tree's root until
 * memdump forked the processes (tty_close_hung), each description of the
 * slave opened from it; closing the master hangs them up again and deletes
 * the slave's node, as the dumped master's close did.
 */
static int open_hung(struct rst *r, const FileEntry *fe, struct rdesc *d, const TtyInfoEntry *si)
{
	struct rst *root = root_of(r);
	struct rst_orphan *o = NULL;
	char ptmx[PATH_MAX], why[256] = "";
	int ret = 0;

	for (size_t i = 0; i < root->nr_orphans && !o; i++)
		if (root->orphans[i].hung && root->orphans[i].info_id == si->id &&
		    root->orphans[i].fd >= 0)
			o = &root->orphans[i];
	if (!o) {
		ret = hung_ptmx(r, fe, ptmx, sizeof(ptmx));
		if (!ret)
			ret = keep_orphan(root, ptmx, si->pty->index, &o);
		if (ret)
			return ret;
		o->hung = true;
		ret = set_slave_owner(o->fd, si, si->pty->index, why, sizeof(why));
		if (ret)
			return fail(ret, "pty /dev/pts/%u: %s", si->pty->index, why);
	}
	d->fd = pty_open_peer(o->fd, fe->tty->flags & ~O_CLOEXEC);
	if (d->fd < 0)
		return fail(d->fd, "cannot open /dev/pts/%u of the new pair: %s", si->pty->index,
			    strerror(-d->fd));
	return 0;
}

void tty_close_hung(struct rst *r)
{
	for (size_t i = 0; i < r->nr_orphans; i++)
		if (r->orphans[i].hung && r->orphans[i].fd >= 0) {
			close(r->orphans[i].fd);
			r->orphans[i].fd = -1;
		}
}

int tty_make_bound_pts(struct rst *r, const char *from)
{
	const char *base = strrchr(from, '/');
	char ptmx[PATH_MAX], *end;
	struct rst_orphan *o;
	unsigned long idx;
	struct stat st;

	if (!base || !stat(from, &st) || errno != ENOENT)
		return 0;
	idx = strtoul(base + 1, &end, 10);
	if (end == base + 1 || *end || idx >= PTY_MAX_INDEX)
		return 0;
	snprintf(ptmx, sizeof(ptmx), "%.*s/ptmx", (int)(base - from), from);
	if (stat(ptmx, &st) || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(5, 2))
		return 0;
	return keep_orphan(root_of(r), ptmx, (uint32_t)idx, &o);
}

/* An orphan slave: memdump's terminal for its key (--inherit-fd), or one of a new pair. */
static int open_orphan(struct rst *r, const FileEntry *fe, struct rdesc *d, const TtyInfoEntry *si)
{
	char key[48];
	int n, m;

	orphan_key(si, key, sizeof(key));
	n = rst_inherit_fd(r->o, key);
	if (n >= 0) {
		d->fd = fcntl(n, F_DUPFD_CLOEXEC, 3);
		if (d->fd < 0)
			return fail(-errno, "--inherit-fd fd[%d]:%s: %s", n, key, strerror(errno));
		return 0;
	}
	m = orphan_master(r, fe, si);
	if (m < 0)
		return m;
	d->fd = pty_open_peer(m, fe->tty->flags & ~O_CLOEXEC);
	if (d->fd < 0)
		return fail(d->fd, "cannot open /dev/pts/%u of the new pair: %s", si->pty->index,
			    strerror(-d->fd));
	return 0;
}

static bool in_a_tree(const struct rst *r)
{
	return r->ds.nr_members || r->tree;
}

static bool holds_master(struct rst *r, uint32_t idx)
{
	const FileEntry *mfe = master_file(r, idx);

	return mfe && target_fd_of(r, mfe->id) >= 0;
}

/* The process of r's tree (r first) that holds the master of pty idx, or NULL. */
static struct rst *master_holder(struct rst *r, uint32_t idx)
{
	struct rst *k;

	if (holds_master(r, idx))
		return r;
	for (size_t i = 0; (k = tree_proc(r, i)); i++)
		if (holds_master(k, idx))
			return k;
	return NULL;
}

/*
 * memdump's fd of the master of pty idx (not to close): the process's own
 * description, or the tree's pair, made now (from the images of the
 * process holding the master) when no process met it yet.
 */
static int pair_master(struct rst *r, uint32_t idx)
{
	const FileEntry *mfe = master_file(r, idx);
	struct rdesc *md = mfe ? rst_desc(r, mfe->id) : NULL;
	struct rst *h;
	int fd = -1, ret;

	if (md && md->fd >= 0)
		return md->fd;
	fd = tree_pty_get(r, idx);
	if (fd >= 0 && md) {
		md->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		return md->fd >= 0 ? md->fd : fail(-errno, "cannot copy pty master %u: %s", idx,
						   strerror(errno));
	}
	if (fd >= 0)
		return fd;
	h = master_holder(r, idx);
	if (!h)
		return fail(-EIO, "files.img: pty %u has no master in the dump", idx);
	ret = open_pair(h, master_file(h, idx), &fd);
	if (!ret)
		ret = tree_pty_put(r, idx, fd);
	if (ret) {
		if (fd >= 0)
			close(fd);
		return ret;
	}
	if (h == r && md)
		return md->fd = fd;
	close(fd);
	return tree_pty_get(r, idx);
}

/* An end of a pair of the process or its tree; *done when d is the master itself. */
static int open_paired(struct rst *r, const FileEntry *fe, struct rdesc *d, bool *done)
{
	uint32_t idx = (fe->tty->tty_info_id - 1) / 2;
	const FileEntry *mfe = master_file(r, idx);
	struct rdesc *md = mfe ? rst_desc(r, mfe->id) : NULL;
	int m = pair_master(r, idx);

	*done = d == md;
	if (m < 0 || *done)
		return m < 0 ? m : 0;
	d->fd = pty_open_peer(m, fe->tty->flags & ~O_CLOEXEC);
	if (d->fd < 0)
		return fail(d->fd, "cannot open /dev/pts/%u: %s", idx, strerror(-d->fd));
	return 0;
}

static bool is_devtty(const FileEntry *fe)
{
	return fe && fe->type == FD_TYPES__TTY && fe->tty &&
	       fe->tty->tty_info_id == TTY_CTTY_INFO_ID;
}

int tty_open(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	TtyInfoEntry *si;

	if (is_devtty(fe)) {	/* a stand-in until the process has its terminal */
		d->fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		return d->fd < 0 ? fail(-errno, "cannot open /dev/null: %s", strerror(errno)) : 0;
	}
	si = info_of(r, fe->tty->tty_info_id);
	const PstreeEntry *pe = r->ds.pstree;
	bool done = false;
	int ret;

	if (!si)
		return fail(-EIO, "tty-info.img: no entry %u", fe->tty->tty_info_id);
	if (TTY_IS_DEV_INFO_ID(fe->tty->tty_info_id))
		ret = tty_dev_open(r, fe, d, si);	/* its exclusive mode given too */
	else
		ret = is_hung(si) ? open_hung(r, fe, d, si) :
		      is_orphan(si) ? open_orphan(r, fe, d, si) : open_paired(r, fe, d, &done);
	if (!ret && !done && si->has_ctty && si->ctty && pe->sid == pe->pid) {
		r->ctty_target = target_fd_of(r, fe->id) + 1;
		r->ctty_src = d->fd + 1;
	}
	if (!ret && !done && si->pty && si->exclusive && ioctl(d->fd, TIOCEXCL))
		ret = fail(-errno, "cannot make /dev/pts/%u exclusive: %s", si->pty->index,
			   strerror(errno));
	img_free(&tty_info_entry__descriptor, si);
	return ret;
}

/* A slave whose master was outside: a terminal given for its key, or a pair to make. */
static int check_orphan(struct rst *r, const TtyInfoEntry *e)
{
	char key[48];

	orphan_key(e, key, sizeof(key));
	if (rst_inherit_fd(r->o, key) >= 0 || (r->o->orphan_pts && hook_takes_fd(r->o->hooks)))
		return 0;
	return fail(-EOPNOTSUPP, "/dev/pts/%u (%s) is a terminal whose master was outside the "
		    "dump: restore with --inherit-fd fd[N]:%s, or through CRIU's RPC with "
		    "orphan_pts_master (runc restore --console-socket)", e->pty->index, key, key);
}

int tty_check(struct rst *r, const FileEntry *fe)
{
	uint32_t idx = (fe->tty->tty_info_id - 1) / 2;
	TtyInfoEntry *e = info_of(r, fe->tty->tty_info_id);
	bool ctty = e && e->has_ctty && e->ctty;
	int ret = 0;

	if (TTY_IS_DEV_INFO_ID(fe->tty->tty_info_id))
		ret = tty_dev_check(r, fe, e);	/* a console, vt or serial port: by its path */
	else if (e && e->pty && e->pty->index == idx && is_hung(e))
		ret = check_hung(r, fe, e);
	else if (is_devtty(fe) && (!e || e->type != TTY_TYPE__CTTY))
		ret = fail(-EIO, "tty-info.img: no entry for /dev/tty (file %u)", fe->id);
	else if (is_devtty(fe))
		;	/* opened by the process once its session has its terminal */
	else if (!e || !e->pty || e->pty->index != idx)
		ret = fail(-EIO, "tty-info.img: no entry %u for pty file %u", fe->tty->tty_info_id,
			   fe->id);
	else if (is_orphan(e))
		ret = check_orphan(r, e);	/* a non-leader's: its leader's, forked after */
	else if (!holds_master(r, idx) && !in_a_tree(r))	/* a tree's: once all are loaded */
		ret = fail(-EIO, "files.img: pty %u has no master the process holds", idx);
	else if (ctty && r->ds.pstree->sid != r->ds.pstree->pid && !in_a_tree(r))
		ret = fail(-EOPNOTSUPP, "/dev/pts/%u was the controlling terminal of session %u, "
			   "which restore does not make", idx, r->ds.pstree->sid);
	img_free(&tty_info_entry__descriptor, e);
	return ret;
}

/* Does process r's set hold an orphan slave of that key? */
static bool has_key(struct rst *r, const char *key)
{
	TtyInfoEntry *e = NULL;
	struct image *img;
	bool found = false;
	char k[48];

	if (img_open(r->ds.dirfd, IMG_TTY_INFO, 0, &img))
		return false;
	while (!found && img_read_msg(img, &tty_info_entry__descriptor, (void **)&e) == 1) {
		orphan_key(e, k, sizeof(k));
		found = is_orphan(e) && !strcmp(k, key);
		img_free(&tty_info_entry__descriptor, e);
	}
	img_abort(img);
	return found;
}

int tty_check_keys(struct rst *r)
{
	for (int i = 0; i < r->o->nr_inherit_fd; i++) {
		const char *key = r->o->inherit_fd[i].key;
		bool found = false;

		if (strncmp(key, "tty[", 4))
			continue;
		for (size_t k = 0; !found && tree_proc(r, k); k++)
			found = has_key(tree_proc(r, k), key);
		if (!found)
			return fail(-EINVAL, "--inherit-fd fd[%d]:%s: the dump has no terminal of that "
				    "key (a pty slave whose master was outside)",
				    r->o->inherit_fd[i].fd, key);
	}
	return 0;
}

static int take_ctty(struct rst *r, int fd, char *why, size_t len)
{
	r->ctty_done = true;
	if (ioctl(fd, TIOCSCTTY, 0)) {
		snprintf(why, len, "cannot make its terminal its controlling terminal again: %s",
			 strerror(errno));
		return -errno;
	}
	return 0;
}

int tty_ctty_early(struct rst *r, char *why, size_t len)
{
	if (r->ctty_done || !r->ctty_src)
		return 0;
	return take_ctty(r, r->ctty_src - 1, why, len);
}

int tty_ctty_in_child(struct rst *r, char *why, size_t len)
{
	if (r->ctty_done || !r->ctty_target)
		return 0;
	return take_ctty(r, r->ctty_target - 1, why, len);
}

void tty_close_orphans(struct rst *r)
{
	for (size_t i = 0; i < r->nr_orphans; i++)
		if (r->orphans[i].fd >= 0)
			close(r->orphans[i].fd);
	r->nr_orphans = 0;
}

/* Does tty-info entry e say its pty (not an orphan) is r's session's terminal, with r's
 * group in the foreground (fg), or with r leading that session (!fg)? */
static bool ctty_of(const TtyInfoEntry *e, const PstreeEntry *pe, bool fg)
{
	if (!e->has_ctty || !e->ctty || is_orphan(e) || !e->pty)
		return false;
	return fg ? e->sid == pe->sid && e->pgrp == pe->pgid :
		    e->type == TTY_TYPE__PTY && e->sid == pe->pid;
}

/* The pty index of the first tty-info entry ctty_of() takes, or -1. */
static int ctty_index(struct rst *r, bool fg)
{
	const PstreeEntry *pe = r->ds.pstree;
	TtyInfoEntry *e = NULL;
	struct image *img;
	char name[64];
	int idx = -1;

	img_name(IMG_TTY_INFO, 0, name, sizeof(name));
	if ((fg ? pe->pgid == pe->sid : pe->sid != pe->pid) ||
	    faccessat(r->ds.dirfd, name, F_OK, 0) || img_open(r->ds.dirfd, IMG_TTY_INFO, 0, &img))
		return -1;
	while (idx < 0 && img_read_msg(img, &tty_info_entry__descriptor, (void **)&e) == 1) {
		if (ctty_of(e, pe, fg))
			idx = (int)e->pty->index;
		img_free(&tty_info_entry__descriptor, e);
	}
	img_abort(img);
	return idx;
}

/* A session leader whose terminal none of its fds is: memdump's own fd of it to take. */
static int prepare_lone_ctty(struct rst *r)
{
	int idx = r->ctty_src ? -1 : ctty_index(r, false), m, fd;

	if (idx < 0)
		return 0;
	m = pair_master(r, (uint32_t)idx);
	if (m < 0)
		return m;
	fd = pty_open_peer(m, O_RDWR | O_NOCTTY);
	if (fd < 0)
		return fail(fd, "cannot open /dev/pts/%d: %s", idx, strerror(-fd));
	r->ctty_src = fd + 1;
	r->ctty_lone = true;
	return 0;
}

int tty_prepare_fg(struct rst *r)
{
	int idx = ctty_index(r, true), m, fd, ret = prepare_lone_ctty(r);

	if (ret || idx < 0)
		return ret;
	m = pair_master(r, (uint32_t)idx);
	if (m < 0)
		return m;
	fd = pty_open_peer(m, O_RDWR | O_NOCTTY);
	if (fd < 0)
		return fail(fd, "cannot open /dev/pts/%d: %s", idx, strerror(-fd));
	r->fg_src = fd + 1;
	return 0;
}

int tty_fg_early(struct rst *r, char *why, size_t len)
{
	pid_t pgrp = (pid_t)r->ds.pstree->pgid;

	if (!r->fg_src)
		return 0;
	if (ioctl(r->fg_src - 1, TIOCSPGRP, &pgrp)) {
		snprintf(why, len, "cannot make group %d the foreground of its terminal again: %s",
			 pgrp, strerror(errno));
		return -errno;
	}
	return 0;
}

void tty_close_fg(struct rst *r)
{
	if (r->fg_src)
		close(r->fg_src - 1);
	r->fg_src = 0;
	if (r->ctty_lone && r->ctty_src)
		close(r->ctty_src - 1);
	if (r->ctty_lone)
		r->ctty_src = 0;
	r->ctty_lone = false;
}

/* Its fds on /dev/tty, the stand-ins replaced once its session has its terminal. */
int tty_devtty_in_child(struct rst *r, char *why, size_t len)
{
	for (size_t i = 0; i < r->nr_fds; i++) {
		const FileEntry *fe = rst_file(r, r->fds[i].id);
		int fd;

		if (!is_devtty(fe))
			continue;
		fd = open("/dev/tty", (fe->tty->flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_ASYNC)) |
				      O_NOCTTY | O_CLOEXEC);
		if (fd < 0 || dup3(fd, r->fds[i].target, r->fds[i].cloexec ? O_CLOEXEC : 0) < 0) {
			snprintf(why, len, "cannot open /dev/tty again as fd %d: %s", r->fds[i].target,
				 strerror(errno));
			return -errno;
		}
		close(fd);
	}
	return 0;
}

/* termios and window size of e on memdump's terminal n (SIGTTOU ignored: memdump may be in
 * the background of it). */
static int give_job_modes(int n, const TtyInfoEntry *e)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	struct winsize ws = { 0 };
	struct kterm t;
	int ret = 0;

	tty_to_kterm(e->termios, &t);
	if (e->winsize) {
		ws.ws_row = e->winsize->ws_row;
		ws.ws_col = e->winsize->ws_col;
		ws.ws_xpixel = e->winsize->ws_xpixel;
		ws.ws_ypixel = e->winsize->ws_ypixel;
	}
	sigaction(SIGTTOU, &ign, &old);
	if ((e->termios && kterm_set(n, &t)) || (e->winsize && ioctl(n, TIOCSWINSZ, &ws)))
		ret = -errno;
	sigaction(SIGTTOU, &old, NULL);
	return ret;
}

int tty_job_open(struct rst *r, const FileEntry *fe, int n)
{
	const PstreeEntry *pe = r->ds.pstree;
	TtyInfoEntry *e;
	int ret;

	if (!isatty(n))
		return 0;	/* memdump's own is no terminal: nothing to give back */
	e = info_of(r, TTY_JOB_INFO_ID);
	if (!e)
		return 0;	/* an older image */
	ret = give_job_modes(n, e);
	if (ret)
		ret = fail(ret, "cannot give the job's terminal modes to memdump's fd %d: %s", n,
			   strerror(-ret));
	if (!ret && e->pgrp && e->pgrp == pe->pgid)	/* its group had the terminal */
		r->job_fg = target_fd_of(r, fe->id) + 1;
	img_free(&tty_info_entry__descriptor, e);
	return ret;
}

int tty_job_fg_in_child(struct rst *r)
{
	pid_t pgrp = getpgid(0);
	int fd = r->job_fg - 1;

	if (!r->job_fg)
		return 0;
	if (tcgetsid(fd) != getsid(0)) {
		pr_warn("process %d: its group had its terminal in the foreground; memdump's "
			"terminal is not its session's: it stays as it is\n", (int)getpid());
		return 0;
	}
	if (ioctl(fd, TIOCSPGRP, &pgrp))
		return -errno;
	return 0;
}
