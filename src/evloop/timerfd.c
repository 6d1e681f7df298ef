/*
 * A timerfd: clock, settime flags, expirations not yet read, remaining time
 * and interval, as fdinfo shows them (the remaining time is relative, even
 * for a TFD_TIMER_ABSTIME timer). The clock is read right after: restore
 * keeps an absolute timer's deadline, dump_ns + remaining.
 *
 * A periodic timer that expired and was not read is not running: the kernel
 * counts the periods missed since and restarts it when it is read or asked
 * for its time. memdump asks (timerfd_gettime on its own copy of the file),
 * which the process cannot tell from its own next read doing it, so that
 * fdinfo shows every expiration and the time to the next one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "ctx/dump_ctx.h"
#include "evloop/evloop.h"
#include "ctx/file_desc.h"
#include "image/image.h"
#include "log.h"
#include "proc.h"

#include "files.pb-c.h"

#define NS 1000000000ULL

/* "(sec, nsec)" in ns; false when absent. */
static bool read_timespec(const char *buf, const char *key, uint64_t *ns)
{
	const char *p = proc_line_after(buf, key);
	unsigned long long s, n;

	if (!p || sscanf(p, " (%llu, %llu)", &s, &n) != 2)
		return false;
	*ns = s * NS + n;
	return true;
}

static int parse(const char *buf, struct timerfd_state *s)
{
	const char *clk = proc_line_after(buf, "clockid:");
	const char *ticks = proc_line_after(buf, "ticks:");
	const char *fl = proc_line_after(buf, "settime flags:");

	if (!clk || !ticks || !fl || !read_timespec(buf, "it_value:", &s->value_ns) ||
	    !read_timespec(buf, "it_interval:", &s->interval_ns))
		return -EIO;
	s->clockid = atoi(clk);
	s->ticks = strtoull(ticks, NULL, 10);
	s->settime_flags = strtoul(fl, NULL, 8);
	return 0;
}

/* Bring an expired periodic timer's ticks and next expiry up to date. */
static int settle(struct dump_ctx *d, int fd)
{
	int copy = syscall(SYS_pidfd_getfd, d->in.pidfd, fd, 0);
	struct itimerspec its;
	int ret = 0;

	if (copy < 0)
		return fail(-errno, "cannot take timerfd %d of process %d: %s", fd, d->pid,
			    strerror(errno));
	if (timerfd_gettime(copy, &its))
		ret = fail(-errno, "timerfd_gettime on fd %d: %s", fd, strerror(errno));
	close(copy);
	return ret;
}

/* The state of timerfd fd of process pid (memdump's own: getpid()), settled. */
static int read_state(pid_t pid, int fd, struct timerfd_state *s)
{
	struct timespec now;
	char *buf = NULL;
	ssize_t n = proc_fdinfo(pid, fd, &buf);
	int ret;

	if (n < 0)
		return fail(n, "cannot read the fdinfo of timerfd %d: %s", fd, strerror(-n));
	ret = parse(buf, s);
	if (!ret && clock_gettime(s->clockid, &now))
		ret = -errno;
	free(buf);
	if (ret)
		return fail(ret, "fd %d: cannot read the timerfd's state (clock %u): %s", fd,
			    s->clockid, strerror(-ret));
	s->dump_ns = now.tv_sec * NS + now.tv_nsec;
	return 0;
}

int timerfd_collect(struct dump_ctx *d, int fd, struct timerfd_state *s)
{
	int ret = settle(d, fd);

	return ret ? ret : read_state(d->pid, fd, s);
}

int timerfd_collect_own(int fd, struct timerfd_state *s)
{
	struct itimerspec its;

	if (timerfd_gettime(fd, &its))
		return fail(-errno, "timerfd_gettime on a timerfd in flight: %s", strerror(errno));
	return read_state(getpid(), fd, s);
}

int timerfd_write(struct image *img, const struct file_desc *f)
{
	FileEntry fe = FILE_ENTRY__INIT;
	TimerfdEntry t = TIMERFD_ENTRY__INIT;
	FownEntry fown = FOWN_ENTRY__INIT;
	const struct timerfd_state *s = &f->tfd;

	t.id = f->id;
	t.flags = f->flags;
	t.fown = &fown;
	t.clockid = s->clockid;
	t.ticks = s->ticks;
	t.settime_flags = s->settime_flags;
	t.vsec = s->value_ns / NS;
	t.vnsec = s->value_ns % NS;
	t.isec = s->interval_ns / NS;
	t.insec = s->interval_ns % NS;
	t.has_dump_ns = true;
	t.dump_ns = s->dump_ns;
	fe.type = FD_TYPES__TIMERFD;
	fe.id = f->id;
	fe.tfd = &t;
	return img_write_msg(img, &fe.base);
}
