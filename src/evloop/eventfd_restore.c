/*
 * Restore of an eventfd, opened in memdump like every file: its counter
 * (written, as eventfd() takes only 32 bits), EFD_SEMAPHORE and O_NONBLOCK.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "ctx/restore_ctx.h"
#include "evloop/evloop.h"

int eventfd_open(const EventfdFileEntry *e)
{
	int flags = EFD_CLOEXEC | (e->flags & O_NONBLOCK ? EFD_NONBLOCK : 0);
	int fd, err;

	if (e->has_semaphore && e->semaphore)
		flags |= EFD_SEMAPHORE;
	fd = eventfd(0, flags);
	if (fd < 0)
		return fail(-errno, "cannot create eventfd %u: %s", e->id, strerror(errno));
	if (!e->counter || write(fd, &e->counter, sizeof(e->counter)) == sizeof(e->counter))
		return fd;
	err = errno ? errno : EIO;
	close(fd);
	return fail(-err, "cannot set eventfd %u's counter to %" PRIu64 ": %s", e->id, e->counter,
		    strerror(err));
}
