/*
 * Restore of a signalfd: created with its mask and flags. The signals it
 * will read are the pending ones, queued again by the restored threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "ctx/restore_ctx.h"
#include "evloop/evloop.h"

int signalfd_open(const SignalfdEntry *s)
{
	uint64_t mask = s->sigmask;
	int flags = SFD_CLOEXEC | (s->flags & O_NONBLOCK ? SFD_NONBLOCK : 0);
	/* the kernel's sigset: 8 bytes, bit N-1 for signal N, as fdinfo showed it */
	int fd = syscall(SYS_signalfd4, -1, &mask, sizeof(mask), flags);

	if (fd < 0)
		return fail(-errno, "cannot create signalfd %u (mask %#" PRIx64 "): %s", s->id,
			    s->sigmask, strerror(errno));
	return fd;
}
