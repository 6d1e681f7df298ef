/*
 * A userfaultfd the target made itself. What it holds is in three places:
 * /proc/PID/fdinfo/FD (faults not yet read, faults read and not yet
 * resolved, the features UFFDIO_API negotiated, the open flags), the
 * VmFlags of the VMAs registered with it (um MISSING, uw WP, ui MINOR: the
 * process's, as smaps does not say which userfaultfd a VMA is registered
 * with) and, in a WP range, the pagemap's bit 57 of each page protected.
 * The refusal names all of it, so that a user sees what the process does
 * with it; the restore is not written yet.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evloop/uffd.h"
#include "proc.h"

#define FEATURE_INITIALIZED	(1UL << 31)	/* the kernel's own bit, shown in fdinfo */
#define PM_UFFD_WP		(1ULL << 57)

struct uffd_info {
	unsigned long pending, total;	/* faults unread; read, not yet resolved */
	unsigned long features;
	unsigned long flags;		/* fdinfo "flags:", octal */
	unsigned ranges[3];		/* VMAs registered: MISSING, WP, MINOR */
	unsigned long pages[3];		/* their pages */
	unsigned long protected;	/* pages of WP ranges write-protected now */
};

static void parse_fdinfo(const char *buf, struct uffd_info *in)
{
	const char *v;

	if ((v = proc_line_after(buf, "pending:")))
		in->pending = strtoul(v, NULL, 10);
	if ((v = proc_line_after(buf, "total:")))
		in->total = strtoul(v, NULL, 10);
	if ((v = proc_line_after(buf, "flags:")))
		in->flags = strtoul(v, NULL, 8);
	if ((v = proc_line_after(buf, "API:")) && (v = strchr(v, ':')))
		in->features = strtoul(v + 1, NULL, 16) & ~FEATURE_INITIALIZED;
}

/* Pages in [start, end) whose pagemap entry has PM_UFFD_WP. */
static unsigned long wp_pages(int pagemap, unsigned long start, unsigned long end)
{
	long psz = sysconf(_SC_PAGESIZE);
	unsigned long n = 0;
	uint64_t e[512];

	for (unsigned long a = start; a < end;) {
		size_t want = (end - a) / psz < 512 ? (end - a) / psz : 512;
		ssize_t got = pread(pagemap, e, want * 8, (off_t)(a / psz * 8));

		if (got <= 0)
			break;
		for (ssize_t i = 0; i < got / 8; i++)
			n += !!(e[i] & PM_UFFD_WP);
		a += (unsigned long)(got / 8) * psz;
	}
	return n;
}

/* One VMA's VmFlags line, with the VMA's bounds: its registrations counted. */
static void count_vma(struct uffd_info *in, bool tracked, int pagemap, const char *vmflags,
		      unsigned long start, unsigned long end)
{
	static const char *const modes[3] = { " um", " uw", " ui" };
	long psz = sysconf(_SC_PAGESIZE);

	for (int m = 0; m < 3; m++) {
		if (!strstr(vmflags, modes[m]) || (m == 1 && tracked))
			continue;
		in->ranges[m]++;
		in->pages[m] += (end - start) / psz;
		if (m == 1 && pagemap >= 0)
			in->protected += wp_pages(pagemap, start, end);
	}
}

static void scan_vmas(pid_t pid, bool tracked, struct uffd_info *in)
{
	char path[64], line[512];
	unsigned long start = 0, end = 0;
	int pagemap;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", pid);
	if (!(f = fopen(path, "re")))
		return;
	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	pagemap = open(path, O_RDONLY | O_CLOEXEC);
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "VmFlags:", 8))
			count_vma(in, tracked, pagemap, line + 7, start, end);
		else if (strchr("0123456789abcdef", line[0]) && strchr(line, '-'))
			sscanf(line, "%lx-%lx", &start, &end);
	}
	if (pagemap >= 0)
		close(pagemap);
	fclose(f);
}

static void add(char *held, size_t len, bool on, const char *fmt, unsigned long n)
{
	size_t used = strlen(held);

	if (on && used < len) {
		snprintf(held + used, len - used, ", ");
		used = strlen(held);
		snprintf(held + used, len - used, fmt, n);
	}
}

static void describe(const struct uffd_info *in, char *held, size_t len)
{
	static const char *const fmt[3] = { "%lu MISSING ranges", "%lu WP ranges",
					    "%lu MINOR ranges" };

	add(held, len, in->flags & O_NONBLOCK, "O_NONBLOCK", 0);
	add(held, len, in->flags & O_CLOEXEC, "O_CLOEXEC", 0);
	add(held, len, in->pending, "%lu faults pending, not read by its handler", in->pending);
	add(held, len, in->total > in->pending,
	    "%lu faults read by its handler, not yet resolved", in->total - in->pending);
	for (int m = 0; m < 3; m++)
		add(held, len, in->ranges[m], fmt[m], in->ranges[m]);
	add(held, len, in->protected, "%lu pages write-protected", in->protected);
}

void uffd_refusal(pid_t pid, int fd, bool tracked, char *why, size_t len)
{
	struct uffd_info in = { 0 };
	char *buf = NULL, held[320] = "";

	if (proc_fdinfo(pid, fd, &buf) < 0) {
		snprintf(why, len, "a userfaultfd, which memdump does not restore yet");
		return;
	}
	parse_fdinfo(buf, &in);
	free(buf);
	scan_vmas(pid, tracked, &in);
	describe(&in, held, sizeof(held));
	snprintf(why, len, "a userfaultfd (features %#lx%s; %s), which memdump does not restore yet",
		 in.features, held, tracked ? "the ranges are the process's but WP ones, memdump's "
		 "tracker's too" : "the ranges are the process's, of every userfaultfd it has");
}
