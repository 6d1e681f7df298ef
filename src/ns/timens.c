/*
 * A target's own time namespace, dumped (timens.h). The clocks inside are
 * memdump's plus the namespace's offsets (/proc/PID/timens_offsets): they
 * are computed, not read inside, since a setns into a time namespace wants a
 * single-threaded caller. A process whose time namespace for its children
 * (unshare(CLONE_NEWTIME) not followed by a fork or setns) differs from its
 * own is refused: a restore could not give the new namespace back unentered.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "ctx/refusals.h"
#include "image/image.h"
#include "log.h"
#include "nsswitch.h"
#include "ns/timens.h"
#include "timens.pb-c.h"

#define NS_ID	1

bool timens_own(pid_t pid)
{
	unsigned long t = ns_inode(pid, "time");

	return t && t != ns_inode(0, "time");
}

void timens_refuse(pid_t pid, struct refusals *r)
{
	unsigned long t = ns_inode(pid, "time"), kids = ns_inode(pid, "time_for_children");

	if (t && kids && t != kids)	/* none here (or gone: the freeze tells) otherwise */
		refuse_add(r, "a time namespace for its children it is not in itself "
			   "(unshare(CLONE_NEWTIME) before any fork)");
}

/* "monotonic S NS" and "boottime S NS" of /proc/PID/timens_offsets. */
static int read_offsets(pid_t pid, struct timespec *mono, struct timespec *boot)
{
	char path[64], name[32];
	long long s;
	long ns;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/timens_offsets", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fscanf(f, "%31s %lld %ld", name, &s, &ns) == 3) {
		struct timespec *t = !strcmp(name, "monotonic") ? mono :
				     !strcmp(name, "boottime") ? boot : NULL;

		if (t) {
			*t = (struct timespec){ (time_t)s, ns };
			found++;
		}
	}
	fclose(f);
	return found == 2 ? 0 : -EIO;
}

/* now + off, the nanoseconds in [0, 1e9) */
static TimensClock inside(clockid_t clk, const struct timespec *off)
{
	struct timespec t;
	long long s;
	long ns;

	clock_gettime(clk, &t);
	s = (long long)t.tv_sec + off->tv_sec;
	ns = t.tv_nsec + off->tv_nsec;
	if (ns >= 1000000000L) {
		ns -= 1000000000L;
		s++;
	} else if (ns < 0) {
		ns += 1000000000L;
		s--;
	}
	return (TimensClock){ PROTOBUF_C_MESSAGE_INIT(&timens_clock__descriptor),
			      (uint64_t)(s < 0 ? 0 : s), (uint64_t)ns };
}

int timens_dump(struct dump_ctx *d)
{
	TimensEntry e = TIMENS_ENTRY__INIT;
	struct timespec mo, bo;
	TimensClock m, b;
	struct image *img = NULL;
	int ret = read_offsets(d->pid, &mo, &bo);

	if (ret)
		return fail(ret, "cannot read the time namespace offsets of process %d: %s",
			    d->pid, strerror(-ret));
	m = inside(CLOCK_MONOTONIC, &mo);
	b = inside(CLOCK_BOOTTIME, &bo);
	e.monotonic = &m;
	e.boottime = &b;
	pr_info("time namespace: offsets monotonic %lld.%09ld s, boottime %lld.%09ld s\n",
		(long long)mo.tv_sec, mo.tv_nsec, (long long)bo.tv_sec, bo.tv_nsec);
	ret = img_create(&d->dir, IMG_TIMENS, NS_ID, &img);
	if (ret)
		return ret;
	ret = img_write_msg(img, &e.base);
	if (ret) {
		img_abort(img);
		return ret;
	}
	return img_close(img);
}
