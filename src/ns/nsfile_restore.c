/*
 * Open namespace files, restore side (nsfile.h): opened by the restored
 * process from its own /proc/self/ns/NAME, in the namespaces the restore
 * gave it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

#include "ctx/restore_ctx.h"
#include "log.h"
#include "ns/nsfile.h"

int nsfile_check(struct rst *r, const FileEntry *fe)
{
	(void)r;
	if (!nsfile_name(fe->nsf->ns_cflag))
		return fail(-EIO, "files.img: namespace file %u of an unknown kind (%#x)", fe->id,
			    fe->nsf->ns_cflag);
	return 0;
}

int nsfile_open_desc(struct rst *r, const FileEntry *fe, struct rdesc *d)
{
	(void)r, (void)fe;
	d->fd = -1;
	return 0;
}

int nsfile_open_in_child(const struct rst *r, const NsFileEntry *e)
{
	char self[64], buf[4096];
	int fd;

	snprintf(self, sizeof(self), "/proc/self/ns/%s", nsfile_name(e->ns_cflag));
	fd = open(rst_path(r, self, buf, sizeof(buf)),
		  (int)(e->flags & (O_ACCMODE | O_NONBLOCK)) | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}
