/*
 * A time namespace restored (timens.h): the root process, forked and still
 * alone, makes a time namespace for its children, sets its offsets so that
 * the clocks inside read the dumped values now, and enters it itself (a
 * setns, which wants the single thread it has). The processes it forks
 * then are in it too. Offsets can be set only before a process enters.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctx/restore_ctx.h"
#include "image/image.h"
#include "log.h"
#include "ns/timens.h"
#include "timens.pb-c.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME	0x00000080
#endif

#define NS_ID	1

int timens_restore_load(struct rst *r)
{
	uint32_t own = r->ds.inv->has_own_ns ? r->ds.inv->own_ns : 0;
	TimensEntry *e;
	int ret;

	r->timens.own = false;
	if (!(own & CLONE_NEWTIME))
		return 0;
	ret = img_read_one(r->ds.dirfd, IMG_TIMENS, NS_ID, &timens_entry__descriptor, (void **)&e);
	if (ret)
		return ret;
	if (e->monotonic->tv_nsec >= 1000000000ULL || e->boottime->tv_nsec >= 1000000000ULL ||
	    e->monotonic->tv_sec > (1ULL << 40) || e->boottime->tv_sec > (1ULL << 40))
		ret = fail(-EIO, "timens-1.img: clock values out of range");
	r->timens.own = !ret;
	r->timens.mono_sec = (long long)e->monotonic->tv_sec;
	r->timens.mono_nsec = (long)e->monotonic->tv_nsec;
	r->timens.boot_sec = (long long)e->boottime->tv_sec;
	r->timens.boot_nsec = (long)e->boottime->tv_nsec;
	img_free(&timens_entry__descriptor, e);
	return ret;
}

/* "CLOCK S NS": the offset that makes clk read sec.nsec inside now. */
static int write_offset(int fd, clockid_t clk, long long sec, long nsec)
{
	struct timespec now;
	char line[96];
	long long s;
	long ns;
	int n;

	clock_gettime(clk, &now);
	s = sec - (long long)now.tv_sec;
	ns = nsec - now.tv_nsec;
	if (ns < 0) {
		ns += 1000000000L;
		s--;
	}
	n = snprintf(line, sizeof(line), "%d %lld %ld\n", (int)clk, s, ns);
	return write(fd, line, (size_t)n) == n ? 0 : -errno;
}

int timens_restore_in_child(struct rst *r, char *why, size_t len)
{
	const char *what = "make a time namespace";
	int fd = -1, err = 0;

	if (!r->timens.own)
		return 0;
	if (unshare(CLONE_NEWTIME))
		err = -errno;
	if (!err) {
		what = "set the time namespace's clock offsets";
		fd = open("/proc/self/timens_offsets", O_WRONLY | O_CLOEXEC);
		err = fd < 0 ? -errno : write_offset(fd, CLOCK_MONOTONIC, r->timens.mono_sec,
						      r->timens.mono_nsec) ?:
			write_offset(fd, CLOCK_BOOTTIME, r->timens.boot_sec, r->timens.boot_nsec);
		if (fd >= 0)
			close(fd);
	}
	if (!err) {
		what = "enter the new time namespace";
		fd = open("/proc/self/ns/time_for_children", O_RDONLY | O_CLOEXEC);
		err = fd < 0 || setns(fd, CLONE_NEWTIME) ? -errno : 0;
		if (fd >= 0)
			close(fd);
	}
	if (err)
		snprintf(why, len, "process %d: cannot %s: %s%s", r->pid, what, strerror(-err),
			 err == -EPERM ? " (CAP_SYS_ADMIN and CAP_SYS_TIME)" : "");
	return err;
}
