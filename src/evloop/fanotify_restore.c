/*
 * Restore of a fanotify group: fanotify_init() with the dumped flags and
 * event flags, then every mark added again on its path (an inode mark on the
 * file, which must be the one dumped; a mount mark on the mount point) with
 * its mask, then its ignored mask with the flags it had (FAN_MARK_IGNORE or
 * the older FAN_MARK_IGNORED_MASK, FAN_MARK_IGNORED_SURV_MODIFY,
 * FAN_MARK_EVICTABLE). The group's fdinfo must then show every mark as the
 * dump saw it, or the restore fails naming it. Events the restore causes on
 * the marks (its own opens on a marked mount) are read away right before the
 * process resumes; events queued at the dump are lost (fanotify.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "log.h"
#include "ctx/restore_ctx.h"
#include "evloop/evloop.h"
#include "proc.h"

#ifndef FAN_MARK_IGNORE
#define FAN_MARK_IGNORE		0x00000400
#endif
#ifndef FAN_MARK_EVICTABLE
#define FAN_MARK_EVICTABLE	0x00000200
#endif

static const char *mark_path(const FanotifyMarkEntry *m)
{
	if (m->type == MARK_TYPE__INODE)
		return m->ie && m->ie->f_handle ? m->ie->f_handle->path : NULL;
	return m->me ? m->me->path : NULL;
}

/* An inode mark's file is the one dumped; a mount mark's mount point is there. */
static int check_mark(uint32_t id, const FanotifyMarkEntry *m)
{
	const char *path = mark_path(m);
	struct stat st;

	if ((m->type != MARK_TYPE__INODE && m->type != MARK_TYPE__MOUNT) || !path ||
	    path[0] != '/')
		return fail(-EIO, "files.img: fanotify %u: a mark of no type memdump restores or "
			    "without its path", id);
	if (stat(path, &st))
		return fail(-errno, "fanotify %u: marked %s %s: %s", id, m->type == MARK_TYPE__INODE ?
			    "file" : "mount", path, strerror(errno));
	if (m->type == MARK_TYPE__INODE && (st.st_ino != m->ie->i_ino ||
	    ((major(st.st_dev) << 20) | minor(st.st_dev)) != m->s_dev))
		return fail(-ESTALE, "fanotify %u: marked file %s was replaced since the dump", id,
			    path);
	return 0;
}

int fanotify_check(const FanotifyFileEntry *e)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < e->n_mark; i++)
		ret = check_mark(e->id, e->mark[i]);
	return ret;
}

/* One mark added: its mask, then its ignored mask. */
static int add_mark(int fd, uint32_t id, const FanotifyMarkEntry *m)
{
	unsigned int on = (m->type == MARK_TYPE__MOUNT ? FAN_MARK_MOUNT : 0) |
			  (m->mflags & FAN_MARK_EVICTABLE);
	unsigned int ign = (m->mflags & FAN_MARK_IGNORE ? FAN_MARK_IGNORE : FAN_MARK_IGNORED_MASK) |
			   (m->mflags & FAN_MARK_IGNORED_SURV_MODIFY);
	const char *path = mark_path(m);

	if (m->mask && fanotify_mark(fd, FAN_MARK_ADD | on, m->mask, AT_FDCWD, path))
		return fail(-errno, "fanotify %u: cannot mark %s (mask %#x): %s", id, path, m->mask,
			    strerror(errno));
	if ((m->ignored_mask || (m->mflags & FAN_MARK_IGNORED_SURV_MODIFY)) &&
	    fanotify_mark(fd, FAN_MARK_ADD | on | ign, m->ignored_mask, AT_FDCWD, path))
		return fail(-errno, "fanotify %u: cannot mark %s (ignored mask %#x): %s", id, path,
			    m->ignored_mask, strerror(errno));
	return 0;
}

/* Whether a line of fdinfo text shows m (for an inode mark: on the inode dumped). */
static bool shown(const char *text, const FanotifyMarkEntry *m)
{
	char want[160];
	const char *kind = m->type == MARK_TYPE__INODE ? "fanotify ino:" : "fanotify mnt_id:";

	if (m->type == MARK_TYPE__INODE)
		snprintf(want, sizeof(want), "fanotify ino:%lx sdev:%x mflags:%x mask:%x "
			 "ignored_mask:%x ", (unsigned long)m->ie->i_ino, m->s_dev, m->mflags, m->mask,
			 m->ignored_mask);
	else
		snprintf(want, sizeof(want), " mflags:%x mask:%x ignored_mask:%x\n", m->mflags,
			 m->mask, m->ignored_mask);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		const char *end = strchr(p, '\n'), *at;

		if (strncmp(p, kind, strlen(kind)))
			continue;
		at = strstr(p, want);
		if (at && (!end || at < end + 1))
			return true;
	}
	return false;
}

/* The group as dumped: flags and every mark, as its fdinfo shows them. */
static int verify(int fd, const FanotifyFileEntry *e)
{
	char *text = NULL, head[64];
	size_t marks = 0;
	int ret = 0;

	if (proc_fdinfo(getpid(), fd, &text) < 0)
		return fail(-EIO, "fanotify %u: cannot read its fdinfo", e->id);
	for (const char *p = text; (p = strstr(p, "\nfanotify ")); p++)
		marks += strncmp(p, "\nfanotify flags:", 16) != 0;
	snprintf(head, sizeof(head), "fanotify flags:%x event-flags:%x\n", e->faflags, e->evflags);
	if (!strstr(text, head))
		ret = fail(-EINVAL, "fanotify %u: the kernel made the group with other flags than "
			   "the dumped %s", e->id, head);
	for (size_t i = 0; !ret && i < e->n_mark; i++)
		if (!shown(text, e->mark[i]))
			ret = fail(-EINVAL, "fanotify %u: the mark on %s is not restored as dumped "
				   "(mflags %#x mask %#x ignored mask %#x)", e->id, mark_path(e->mark[i]),
				   e->mark[i]->mflags, e->mark[i]->mask, e->mark[i]->ignored_mask);
	if (!ret && marks != e->n_mark)
		ret = fail(-EINVAL, "fanotify %u: %zu marks restored for %zu dumped", e->id, marks,
			   e->n_mark);
	free(text);
	return ret;
}

int fanotify_open(struct rst *r, const FanotifyFileEntry *e)
{
	int fd = fanotify_init(e->faflags, e->evflags), ret = 0, fl;

	if (fd < 0)
		return fail(-errno, "cannot create fanotify %u (flags %#x, event flags %#x): %s",
			    e->id, e->faflags, e->evflags, strerror(errno));
	fl = fcntl(fd, F_GETFL);
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) || fl < 0 ||
	    fcntl(fd, F_SETFL, (fl & ~O_NONBLOCK) | (e->flags & O_NONBLOCK)))
		ret = fail(-errno, "fanotify %u: cannot set its flags: %s", e->id, strerror(errno));
	for (size_t i = 0; !ret && i < e->n_mark; i++)
		ret = add_mark(fd, e->id, e->mark[i]);
	if (!ret)
		ret = verify(fd, e);
	if (!ret)
		ret = inotify_drain_later(r, fd);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

/* Every event queued read away, the fd each carries closed. */
void fanotify_drain(int fd)
{
	char buf[4096] __attribute__((aligned(8)));
	int fl = fcntl(fd, F_GETFL);
	ssize_t n;

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		struct fanotify_event_metadata *m = (struct fanotify_event_metadata *)buf;

		for (; FAN_EVENT_OK(m, n); m = FAN_EVENT_NEXT(m, n))
			if (m->fd >= 0)
				close(m->fd);
	}
	fcntl(fd, F_SETFL, fl);
}
