/*
 * File locks (locks.h). fdinfo shows, on every fd of an open file
 * description, the flock and OFD locks of that description and the POSIX
 * locks the process took through it: collected once per description.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx/dump_ctx.h"
#include "files/locks.h"
#include "image/image.h"
#include "log.h"
#include "restorer.h"
#include "proc.h"

#include "file-lock.pb-c.h"

int lock_parse(const char *line, struct file_lock *l, char *kind, size_t len)
{
	char k[16] = "", mode[16] = "", rw[16] = "", end[32] = "";
	long long start;
	int pid;

	if (strstr(line, "->"))
		return 0;	/* a waiter: its system call is restarted */
	if (sscanf(line, "lock: %*d: %15s %15s %15s %d %63s %lld %31s", k, mode, rw, &pid,
		   l->dev_ino, &start, end) != 7) {
		snprintf(kind, len, "a file lock memdump cannot read");
		return -EOPNOTSUPP;
	}
	snprintf(kind, len, "%s %s", k, mode);
	if (strcmp(rw, "READ") && strcmp(rw, "WRITE"))
		return -EOPNOTSUPP;
	/* a lease held, not one being broken (its break and its timer run now) */
	if (!strcmp(k, "LEASE") && !strcmp(mode, "ACTIVE"))
		l->flag = FL_LEASE;
	else if (strcmp(mode, "ADVISORY"))
		return -EOPNOTSUPP;
	else if (!strcmp(k, "POSIX"))
		l->flag = FL_POSIX;
	else if (!strcmp(k, "FLOCK"))
		l->flag = FL_FLOCK;
	else if (!strcmp(k, "OFDLCK"))
		l->flag = FL_OFDLCK;
	else
		return -EOPNOTSUPP;
	l->type = !strcmp(rw, "READ") ? F_RDLCK : F_WRLCK;
	l->pid = pid;
	l->start = start;
	l->len = !strcmp(end, "EOF") ? 0 : strtoll(end, NULL, 10) - start + 1;
	return 1;
}

/* The restorer takes POSIX locks back from a fixed table (restorer.h). */
static int too_many_posix(const struct dump_ctx *d, const struct lock_set *ls)
{
	int n = 0;

	for (int i = 0; i < ls->nr; i++)
		n += ls->l[i].flag == FL_POSIX;
	if (n <= RST_MAX_LOCKS)
		return 0;
	return fail(-EOPNOTSUPP, "process %d holds more than %d POSIX lock entries (one per lock "
		    "and fd of its file), which memdump cannot restore", d->pid, RST_MAX_LOCKS);
}

int locks_collect(struct dump_ctx *d, int fd)
{
	struct lock_set *ls = &d->files.locks;
	char *buf = NULL, *line, *save = NULL, kind[64];
	ssize_t n = proc_fdinfo(d->pid, fd, &buf);
	int ret = 0;

	if (n < 0)
		return fail(n, "cannot read the fdinfo of fd %d: %s", fd, strerror(-n));
	for (line = strtok_r(buf, "\n", &save); line && !ret; line = strtok_r(NULL, "\n", &save)) {
		struct file_lock l = { .fd = fd }, *nl;

		if (strncmp(line, "lock:", 5))
			continue;
		ret = lock_parse(line, &l, kind, sizeof(kind));
		if (ret <= 0) {
			if (ret)
				ret = fail(ret, "process %d: fd %d holds a %s lock, which memdump "
					   "cannot dump", d->pid, fd, kind);
			continue;
		}
		nl = realloc(ls->l, (ls->nr + 1) * sizeof(*nl));
		if (!nl) {
			ret = -ENOMEM;
			break;
		}
		ls->l = nl;
		ls->l[ls->nr++] = l;
		ret = too_many_posix(d, ls);
		pr_debug("fd %d: %s lock", fd, kind);
	}
	free(buf);
	return ret;
}

int write_locks(struct dump_ctx *d)
{
	struct lock_set *ls = &d->files.locks;
	struct image *img;
	int ret;

	if (!ls->nr || d->kobj.files_shared)
		return 0;	/* its parent's fd table: its parent's set holds them */
	ret = img_create(&d->dir, IMG_FILE_LOCKS, 0, &img);
	for (int i = 0; !ret && i < ls->nr; i++) {
		FileLockEntry e = FILE_LOCK_ENTRY__INIT;

		e.flag = ls->l[i].flag;
		e.type = ls->l[i].type;
		e.pid = ls->l[i].pid;
		e.fd = ls->l[i].fd;
		e.start = ls->l[i].start;
		e.len = ls->l[i].len;
		ret = img_write_msg(img, &e.base);
		if (ret)
			img_abort(img);
	}
	return ret ? ret : img_close(img);
}

void locks_free(struct lock_set *ls)
{
	free(ls->l);
	ls->l = NULL;
	ls->nr = 0;
}
