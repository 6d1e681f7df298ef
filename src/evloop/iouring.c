/*
 * An io_uring instance. Its counters, its SQPOLL thread, its registered
 * files and buffers and what it still holds are in /proc/PID/fdinfo/FD;
 * the refusal names them so that a user sees what the ring holds. The
 * restore is not written yet: docs/io_uring.md says why the kernel's own
 * counters are the hard part and how they can be brought back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evloop/iouring.h"
#include "proc.h"

struct iouring_info {
	unsigned sq_head, sq_tail, cq_head, cq_tail;
	unsigned files, bufs;
	long sq_thread;		/* -1: none */
	unsigned polled;	/* requests armed in the poll table */
	unsigned overflow;	/* CQEs the CQ ring had no room for */
	unsigned personalities;
};

static unsigned field(const char *buf, const char *key)
{
	const char *v = proc_line_after(buf, key);

	return v ? (unsigned)strtoul(v, NULL, 10) : 0;
}

/* Lines of a list that starts at the line key: each begins with a blank. */
static unsigned list_lines(const char *buf, const char *key)
{
	const char *p = proc_line_after(buf, key);
	unsigned n = 0;

	while (p && (p = strchr(p, '\n')) && (p[1] == ' ' || p[1] == '\t')) {
		n++;
		p++;
	}
	return n;
}

/* Credentials registered (IORING_REGISTER_PERSONALITY): each shows a Uid line. */
static unsigned personalities(const char *buf)
{
	const char *p = proc_line_after(buf, "Personalities:");
	unsigned n = 0;

	while (p && (p = strstr(p, "\tUid:"))) {
		n++;
		p++;
	}
	return n;
}

static void parse(const char *buf, struct iouring_info *in)
{
	const char *t = proc_line_after(buf, "SqThread:");

	in->sq_head = field(buf, "SqHead:");
	in->sq_tail = field(buf, "SqTail:");
	in->cq_head = field(buf, "CqHead:");
	in->cq_tail = field(buf, "CqTail:");
	in->files = field(buf, "UserFiles:");
	in->bufs = field(buf, "UserBufs:");
	in->sq_thread = t ? strtol(t, NULL, 10) : -1;
	in->polled = list_lines(buf, "PollList:");
	in->overflow = list_lines(buf, "CqOverflowList:");
	in->personalities = personalities(buf);
}

/* ", what" appended to out when cond. */
static void add(char *out, size_t len, int cond, const char *what, unsigned n)
{
	size_t at = strlen(out);

	if (cond && at < len)
		snprintf(out + at, len - at, ", %u %s", n, what);
}

void iouring_refusal(pid_t pid, int fd, char *why, size_t len)
{
	struct iouring_info in = { .sq_thread = -1 };
	char *buf = NULL, held[256] = "";

	if (proc_fdinfo(pid, fd, &buf) < 0) {
		snprintf(why, len, "an io_uring instance, which memdump does not restore yet");
		return;
	}
	parse(buf, &in);
	free(buf);
	add(held, sizeof(held), in.sq_thread >= 0, "SQPOLL thread", 1);
	add(held, sizeof(held), in.sq_tail != in.sq_head, "SQEs queued, not submitted",
	    in.sq_tail - in.sq_head);
	add(held, sizeof(held), in.cq_tail != in.cq_head, "CQEs not reaped",
	    in.cq_tail - in.cq_head);
	add(held, sizeof(held), in.overflow, "CQEs overflowed", in.overflow);
	add(held, sizeof(held), in.polled, "requests armed for poll", in.polled);
	add(held, sizeof(held), in.files, "registered files", in.files);
	add(held, sizeof(held), in.bufs, "registered buffers", in.bufs);
	add(held, sizeof(held), in.personalities, "personalities", in.personalities);
	snprintf(why, len, "an io_uring instance (SqHead %u, SqTail %u, CqHead %u, CqTail %u%s), "
		 "whose rings memdump does not restore yet", in.sq_head, in.sq_tail, in.cq_head,
		 in.cq_tail, held);
}
