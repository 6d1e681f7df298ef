/*
 * A signalfd: the signals it reads (fdinfo "sigmask", hex, bit N-1 for
 * signal N). What it will read is the pending signals, restored with the
 * threads.
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

int signalfd_collect(pid_t pid, int fd, uint64_t *sigmask)
{
	const char *mask;
	char *buf = NULL;
	ssize_t n = proc_fdinfo(pid, fd, &buf);

	if (n < 0)
		return fail(n, "cannot read the fdinfo of signalfd %d: %s", fd, strerror(-n));
	mask = proc_line_after(buf, "sigmask:");
	if (mask)
		*sigmask = strtoull(mask, NULL, 16);
	free(buf);
	if (!mask)
		return fail(-EIO, "fd %d: the kernel shows no signalfd sigmask", fd);
	return 0;
}

int signalfd_write(struct image *img, const struct file_desc *f)
{
	FileEntry fe = FILE_ENTRY__INIT;
	SignalfdEntry s = SIGNALFD_ENTRY__INIT;
	FownEntry fown = FOWN_ENTRY__INIT;

	s.id = f->id;
	s.flags = f->flags;
	s.fown = &fown;
	s.sigmask = f->sigmask;
	fe.type = FD_TYPES__SIGNALFD;
	fe.id = f->id;
	fe.sgfd = &s;
	return img_write_msg(img, &fe.base);
}
