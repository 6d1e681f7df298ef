/*
 * A fanotify group: its fanotify_init() flags and event flags and its marks,
 * from fdinfo ("fanotify flags:%x event-flags:%x", then one line per mark:
 * "fanotify ino:%lx sdev:%x mflags:%x mask:%x ignored_mask:%x fhandle-bytes:%x
 * fhandle-type:%x f_handle:HEX" on an inode, "fanotify mnt_id:%x mflags:%x
 * mask:%x ignored_mask:%x" on a mount). An inode is found by its handle as an
 * inotify watch's (inotify.c), a mount by its id in the process's mountinfo.
 * Refused by name: marks on a whole filesystem or a mount namespace, marks on
 * deleted files, and groups that get permission events (an event waiting for
 * the group's answer is not in fdinfo). Events queued at the dump are not
 * kept (a warning says how many bytes), as inotify's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "ctx/file_desc.h"
#include "evloop/evloop.h"
#include "image/image.h"
#include "log.h"
#include "proc.h"

#include "files.pb-c.h"

/* The permission events: a listener must answer each; one pending is not in fdinfo. */
#define PERM_EVENTS	(FAN_OPEN_PERM | FAN_ACCESS_PERM | FAN_OPEN_EXEC_PERM | 0x00100000)

static int parse_hex_handle(const char *hex, struct inotify_watch *w)
{
	if (w->fh_bytes > MAX_HANDLE_BYTES || strlen(hex) != 2 * w->fh_bytes)
		return -EINVAL;
	for (unsigned i = 0; i < w->fh_bytes; i++)
		sscanf(hex + 2 * i, "%2hhx", &w->fh[i]);
	return 0;
}

/* One "fanotify ino:" or "fanotify mnt_id:" line into m; -EINVAL: another kind of mark. */
static int parse_mark(const char *line, struct fanotify_mark *m)
{
	unsigned long long ino;
	char hex[2 * MAX_HANDLE_BYTES + 1] = "";
	struct inotify_watch *w = &m->w;

	if (sscanf(line, "fanotify ino:%llx sdev:%x mflags:%x mask:%x ignored_mask:%x "
		   "fhandle-bytes:%x fhandle-type:%x f_handle:%256s", &ino, &w->sdev, &m->mflags,
		   &w->mask, &w->ignored_mask, &w->fh_bytes, &w->fh_type, hex) == 8) {
		m->type = MARK_TYPE__INODE;
		w->ino = ino;
		return parse_hex_handle(hex, w);
	}
	if (sscanf(line, "fanotify mnt_id:%x mflags:%x mask:%x ignored_mask:%x", &m->mnt_id,
		   &m->mflags, &w->mask, &w->ignored_mask) == 4) {
		m->type = MARK_TYPE__MOUNT;
		return 0;
	}
	return -EINVAL;
}

/* The mount point of mount id mnt_id of pid (as its root sees it), into m->w.path. */
static int mount_path(pid_t pid, struct fanotify_mark *m, char *why, size_t len)
{
	char name[64], *text = NULL, *line, *save = NULL;
	int ret = -ENOENT;

	snprintf(name, sizeof(name), "/proc/%d/mountinfo", (int)pid);
	if (proc_read_file(name, &text) < 0) {
		snprintf(why, len, "a fanotify mark on a mount whose mountinfo cannot be read");
		return -EIO;
	}
	for (line = strtok_r(text, "\n", &save); line && ret; line = strtok_r(NULL, "\n", &save)) {
		unsigned id, maj, min;
		char mnt[4096];

		if (sscanf(line, "%u %*u %u:%u %*s %4095s", &id, &maj, &min, mnt) != 4 ||
		    id != m->mnt_id)
			continue;
		m->w.sdev = (maj << 20) | min;
		m->w.path = strdup(mnt);
		ret = m->w.path ? 0 : -ENOMEM;
	}
	free(text);
	if (ret == -ENOENT)
		snprintf(why, len, "a fanotify mark on mount %u, which is not in the process's "
			 "mount namespace", m->mnt_id);
	return ret;
}

/* A mark line read into s (its object found); why[] when it cannot be dumped. */
static int add_mark(pid_t pid, const char *line, struct fanotify_state *s, char *why, size_t len)
{
	struct fanotify_mark *m = realloc(s->m, (s->nr + 1) * sizeof(*m));

	if (!m)
		return -ENOMEM;
	s->m = m;
	m = &s->m[s->nr];
	memset(m, 0, sizeof(*m));
	if (parse_mark(line, m)) {
		snprintf(why, len, "a fanotify mark memdump cannot restore (%.80s: on a whole "
			 "filesystem or a mount namespace)", line);
		return -EOPNOTSUPP;
	}
	s->nr++;
	if (m->type == MARK_TYPE__MOUNT)
		return mount_path(pid, m, why, len);
	return fsnotify_inode_path(pid, &m->w, "a fanotify mark", false, why, len);
}

static int check_perm(const struct fanotify_state *s, char *why, size_t len)
{
	for (size_t i = 0; i < s->nr; i++)
		if (s->m[i].w.mask & PERM_EVENTS) {
			snprintf(why, len, "a fanotify group that gets permission events (mask %#x): "
				 "an event waiting for its answer cannot be dumped", s->m[i].w.mask);
			return -EOPNOTSUPP;
		}
	return 0;
}

/* The group's flags and every mark of fanotify fd of pid; on failure, why[]. */
static int read_group(pid_t pid, int fd, struct fanotify_state *s, char *why, size_t len)
{
	char *buf = NULL, *line, *save = NULL;
	ssize_t n = proc_fdinfo(pid, fd, &buf);
	bool flags = false;
	int ret = 0;

	if (n < 0) {
		snprintf(why, len, "a fanotify group whose fdinfo cannot be read");
		return n;
	}
	for (line = strtok_r(buf, "\n", &save); line && !ret; line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "fanotify flags:%x event-flags:%x", &s->faflags, &s->evflags) == 2)
			flags = true;
		else if (!strncmp(line, "fanotify ", 9))
			ret = add_mark(pid, line, s, why, len);
	}
	free(buf);
	if (!ret && !flags) {
		snprintf(why, len, "a fanotify group whose flags fdinfo does not show");
		ret = -EIO;
	}
	return ret ?: check_perm(s, why, len);
}

bool fanotify_unsupported(pid_t pid, int fd, char *why, size_t len)
{
	struct fanotify_state s = { 0 };
	bool bad = read_group(pid, fd, &s, why, len) != 0;

	fanotify_state_free(&s);
	return bad;
}

int fanotify_collect(struct dump_ctx *d, int fd, struct fanotify_state *s)
{
	char why[512];
	int ret = read_group(d->pid, fd, s, why, sizeof(why));

	if (ret)
		return fail(ret, "process %d: fd %d is %s", d->pid, fd, why);
	notify_warn_pending(d, fd, "fanotify");
	return 0;
}

/* The entries of one mark, its parts in the arrays given. */
static void fill_mark(const struct fanotify_mark *m, uint32_t id, FanotifyMarkEntry *e,
		      FanotifyInodeMarkEntry *ie, FanotifyMountMarkEntry *me, FhEntry *fh,
		      uint64_t *words)
{
	fanotify_mark_entry__init(e);
	e->id = id;
	e->type = m->type;
	e->mflags = m->mflags;
	e->mask = m->w.mask;
	e->ignored_mask = m->w.ignored_mask;
	e->s_dev = m->w.sdev;
	if (m->type == MARK_TYPE__MOUNT) {
		fanotify_mount_mark_entry__init(me);
		me->mnt_id = m->mnt_id;
		me->path = m->w.path;
		e->me = me;
		return;
	}
	fanotify_inode_mark_entry__init(ie);
	fh_entry__init(fh);
	fh->bytes = m->w.fh_bytes;
	fh->type = m->w.fh_type;
	fh->n_handle = (m->w.fh_bytes + 7) / 8;
	fh->handle = words;
	memcpy(words, m->w.fh, m->w.fh_bytes);
	fh->path = m->w.path;
	ie->i_ino = m->w.ino;
	ie->f_handle = fh;
	e->ie = ie;
}

int fanotify_write(struct image *img, const struct file_desc *f)
{
	FileEntry fe = FILE_ENTRY__INIT;
	FanotifyFileEntry e = FANOTIFY_FILE_ENTRY__INIT;
	FownEntry fown = FOWN_ENTRY__INIT;
	size_t n = f->ffy.nr;
	FanotifyMarkEntry *marks = calloc(n + 1, sizeof(*marks)), **ptrs = calloc(n + 1,
										  sizeof(*ptrs));
	FanotifyInodeMarkEntry *ies = calloc(n + 1, sizeof(*ies));
	FanotifyMountMarkEntry *mes = calloc(n + 1, sizeof(*mes));
	FhEntry *fhs = calloc(n + 1, sizeof(*fhs));
	uint64_t *words = calloc(n * (MAX_HANDLE_BYTES / 8) + 1, sizeof(*words));
	int ret = -ENOMEM;

	if (marks && ptrs && ies && mes && fhs && words) {
		for (size_t i = 0; i < n; i++) {
			fill_mark(&f->ffy.m[i], f->id, &marks[i], &ies[i], &mes[i], &fhs[i],
				  words + i * (MAX_HANDLE_BYTES / 8));
			ptrs[i] = &marks[i];
		}
		e.id = f->id;
		e.flags = f->flags;
		e.fown = &fown;
		e.faflags = f->ffy.faflags;
		e.evflags = f->ffy.evflags;
		e.n_mark = n;
		e.mark = ptrs;
		fe.type = FD_TYPES__FANOTIFY;
		fe.id = f->id;
		fe.ffy = &e;
		ret = img_write_msg(img, &fe.base);
	}
	free(marks);
	free(ptrs);
	free(ies);
	free(mes);
	free(fhs);
	free(words);
	return ret;
}

void fanotify_state_free(struct fanotify_state *s)
{
	for (size_t i = 0; i < s->nr; i++)
		free(s->m[i].w.path);
	free(s->m);
	s->m = NULL;
	s->nr = 0;
}
