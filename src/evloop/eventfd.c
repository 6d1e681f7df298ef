/*
 * An eventfd: its counter (fdinfo "eventfd-count", hex) and whether it
 * counts as a semaphore ("eventfd-semaphore"); O_NONBLOCK is in its flags.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "evloop/evloop.h"
#include "ctx/file_desc.h"
#include "image/image.h"
#include "log.h"
#include "proc.h"

#include "files.pb-c.h"

int eventfd_collect(pid_t pid, int fd, struct eventfd_state *s)
{
	const char *count, *sem;
	char *buf = NULL;
	ssize_t n = proc_fdinfo(pid, fd, &buf);

	if (n < 0)
		return fail(n, "cannot read the fdinfo of eventfd %d: %s", fd, strerror(-n));
	count = proc_line_after(buf, "eventfd-count:");
	sem = proc_line_after(buf, "eventfd-semaphore:");
	if (count)
		s->count = strtoull(count, NULL, 16);
	s->semaphore = sem && atoi(sem);
	free(buf);
	if (!count)
		return fail(-EIO, "fd %d: the kernel shows no eventfd-count", fd);
	return 0;
}

int eventfd_write_entry(struct image *img, const struct file_desc *f)
{
	FileEntry fe = FILE_ENTRY__INIT;
	EventfdFileEntry e = EVENTFD_FILE_ENTRY__INIT;
	FownEntry fown = FOWN_ENTRY__INIT;

	e.id = f->id;
	e.flags = f->flags;
	e.fown = &fown;
	e.counter = f->efd.count;
	e.has_semaphore = true;
	e.semaphore = f->efd.semaphore;
	fe.type = FD_TYPES__EVENTFD;
	fe.id = f->id;
	fe.efd = &e;
	return img_write_msg(img, &fe.base);
}
