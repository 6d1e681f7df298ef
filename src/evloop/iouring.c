/*
 * An io_uring instance. Its counters, its SQPOLL thread, its registered
 * files and buffers and what it still holds are in /proc/PID/fdinfo/FD.
 * A ring with nothing in the kernel (docs/io_uring.md, "Today") is dumped
 * as mm_entry.iourings: its size, the count of requests it has done, its
 * mappings with their bytes, its registered files (as the process's fds) and
 * buffers; the restorer blob makes it again (iouring_restore.c). Any other
 * ring is refused, by name, with what it holds and why.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "evloop/iouring.h"
#include "log.h"
#include "proc.h"
#include "mm.pb-c.h"

#define MAX_FILES	64
#define MAX_BUFS	64

struct iouring_info {
	unsigned sq_head, sq_tail, cq_head, cq_tail, cached_sq, cached_cq;
	unsigned sq_entries, cq_entries;
	unsigned files, bufs, nr_paths, nr_bufs;
	long sq_thread;		/* -1: none */
	unsigned polled;	/* requests armed in the poll table */
	unsigned overflow;	/* CQEs the CQ ring had no room for */
	unsigned personalities;
	bool napi;
	unsigned long ino;
	char *paths[MAX_FILES];	/* registered files, in fdinfo's text (index order) */
	unsigned long long buf_addr[MAX_BUFS], buf_len[MAX_BUFS];
};

static unsigned field(const char *buf, const char *key)
{
	const char *v = proc_line_after(buf, key);

	return v ? (unsigned)strtoul(v, NULL, 0) : 0;
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

/* "    I: PATH" lines after UserFiles: each index in order, or the count stops. */
static void parse_files(const char *buf, struct iouring_info *in)
{
	const char *p = proc_line_after(buf, "UserFiles:");

	while (p && (p = strchr(p, '\n')) && p[1] == ' ' && in->nr_paths < MAX_FILES) {
		char *end, *colon;
		unsigned long idx = strtoul(p + 1, &end, 10);

		if (idx != in->nr_paths || *end != ':' || !(colon = end + 1) || *colon != ' ')
			break;
		end = strchr(colon + 1, '\n');
		in->paths[in->nr_paths++] = strndup(colon + 1, end ? (size_t)(end - colon - 1)
								: strlen(colon + 1));
		p++;
	}
}

/* "    I: 0xADDR/LEN" lines after UserBufs. */
static void parse_bufs(const char *buf, struct iouring_info *in)
{
	const char *p = proc_line_after(buf, "UserBufs:");

	while (p && (p = strchr(p, '\n')) && p[1] == ' ' && in->nr_bufs < MAX_BUFS) {
		unsigned idx;

		if (sscanf(p + 1, " %u: 0x%llx/%llu", &idx, &in->buf_addr[in->nr_bufs],
			   &in->buf_len[in->nr_bufs]) != 3 || idx != in->nr_bufs)
			break;
		in->nr_bufs++;
		p++;
	}
}

static void parse(const char *buf, struct iouring_info *in)
{
	const char *t = proc_line_after(buf, "SqThread:"), *napi = proc_line_after(buf, "NAPI:");

	in->sq_head = field(buf, "SqHead:");
	in->sq_tail = field(buf, "SqTail:");
	in->cq_head = field(buf, "CqHead:");
	in->cq_tail = field(buf, "CqTail:");
	in->cached_sq = field(buf, "CachedSqHead:");
	in->cached_cq = field(buf, "CachedCqTail:");
	in->sq_entries = field(buf, "SqMask:") + 1;
	in->cq_entries = field(buf, "CqMask:") + 1;
	in->ino = strtoul(proc_line_after(buf, "ino:") ?: "0", NULL, 10);
	in->files = field(buf, "UserFiles:");
	in->bufs = field(buf, "UserBufs:");
	in->sq_thread = t ? strtol(t, NULL, 10) : -1;
	in->polled = list_lines(buf, "PollList:");
	in->overflow = list_lines(buf, "CqOverflowList:");
	in->personalities = personalities(buf);
	in->napi = napi && strncmp(napi + strspn(napi, " \t"), "disabled", 8);
	parse_files(buf, in);
	parse_bufs(buf, in);
}

static void info_free(struct iouring_info *in)
{
	for (unsigned i = 0; i < in->nr_paths; i++)
		free(in->paths[i]);
	in->nr_paths = 0;
}

static int read_info(pid_t pid, int fd, struct iouring_info *in)
{
	char *buf = NULL;
	ssize_t n = proc_fdinfo(pid, fd, &buf);

	memset(in, 0, sizeof(*in));
	in->sq_thread = -1;
	if (n < 0)
		return (int)n;
	parse(buf, in);
	free(buf);
	return 0;
}

/* ", what" appended to out when cond. */
static void add(char *out, size_t len, int cond, const char *what, unsigned n)
{
	size_t at = strlen(out);

	if (cond && at < len)
		snprintf(out + at, len - at, ", %u %s", n, what);
}

/* The fd of pid whose link is path, when exactly one is: else -1 (none), -2 (several). */
static int fd_of_path(pid_t pid, const char *path)
{
	char dir[64], p[336], link[4096];
	int found = -1;
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	if (!(d = opendir(dir)))
		return -1;
	while ((de = readdir(d))) {
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		n = readlink(p, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (strcmp(link, path))
			continue;
		found = found == -1 ? atoi(de->d_name) : -2;
	}
	closedir(d);
	return found;
}

/* A copy of pid's fd in memdump (pidfd_getfd), or -1. */
static int borrow_fd(pid_t pid, int fd)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0), own;

	if (pfd < 0)
		return -1;
	own = (int)syscall(SYS_pidfd_getfd, pfd, fd, 0);
	close(pfd);
	return own;
}

/*
 * Is the ring SINGLE_ISSUER (so DEFER_TASKRUN too may be)? io_uring_register
 * from a task that is not its submitter fails with EEXIST before it looks at
 * its arguments; on any other ring IORING_REGISTER_PROBE with no buffer
 * fails with EFAULT, changing nothing.
 */
static bool single_issuer(pid_t pid, int fd)
{
	int own = borrow_fd(pid, fd);
	bool ret = own >= 0 &&
		   syscall(SYS_io_uring_register, own, 8 /* IORING_REGISTER_PROBE */, NULL, 0) < 0 &&
		   errno == EEXIST;

	if (own >= 0)
		close(own);
	return ret;
}

/*
 * Another process that holds the ring by an fd (a fork's child, an fd
 * passed): its PID, or 0. Each restored process would make a ring of its own.
 */
static pid_t ring_elsewhere(pid_t pid, unsigned long ino)
{
	struct dirent *de;
	pid_t other = 0;
	DIR *d = opendir("/proc");

	if (!d)
		return 0;
	while (!other && (de = readdir(d))) {
		pid_t p = (pid_t)atoi(de->d_name);

		if (p > 0 && p != pid && proc_fd_of_link((pid_t)p, "anon_inode:[io_uring]", ino) >= 0)
			other = p;
	}
	closedir(d);
	return other;
}

int iouring_dry_run(pid_t pid, const IouringEntry *e)
{
	unsigned p[30] = { e->sq_entries, e->cq_entries,
			   e->cq_entries != 2 * e->sq_entries ? 1u << 3 : 0 };	/* CQSIZE */
	int fd = (int)syscall(SYS_io_uring_setup, e->sq_entries, p);

	if (fd < 0)
		return fail(-errno, "process %d's io_uring ring (fd %u, %u entries): io_uring_setup "
			    "fails here: %s%s", pid, e->fd, e->sq_entries, strerror(errno),
			    errno == EPERM ? " (kernel.io_uring_disabled?)" : "");
	close(fd);
	return 0;
}

/* The mappings of the ring (its inode) in pid's maps: count, and whether one is not ours. */
static int count_maps(pid_t pid, unsigned long ino, IouringMapEntry **out, size_t max);

#define PAGE_UP(x)	(((x) + 4095UL) & ~4095UL)
#define RINGS_HEAD	192UL	/* struct io_rings up to its CQEs (two cache lines and the fields) */

/* The pages of the rings' mapping: CQEs of 16 (cqe32: 32) bytes, with an SQ index array or not. */
static unsigned long rings_pages(const struct iouring_info *in, bool cqe32, bool sq_array)
{
	unsigned long off = (RINGS_HEAD + 16UL * in->cq_entries) << cqe32;

	off = (off + 63) & ~63UL;
	return PAGE_UP(off + (sq_array ? 4UL * in->sq_entries : 0));
}

/*
 * A ring whose entries' sizes a restore would get wrong: IORING_SETUP_SQE128
 * and CQE32 are in no fdinfo line, only in the size of its mappings, which a
 * small ring's pages round away (a restore makes 64- and 16-byte entries).
 * NO_SQARRAY (liburing's default) changes the size too: either is taken.
 */
static const char *layout_why(pid_t pid, const struct iouring_info *in)
{
	IouringMapEntry m[4], *mp[4] = { &m[0], &m[1], &m[2], &m[3] };
	int n = count_maps(pid, in->ino, mp, 4);
	unsigned long sqes = 0, rings = 0;

	for (int i = 0; i < n && i < 4; i++) {
		if (m[i].pgoff == 0x10000000ULL)	/* IORING_OFF_SQES */
			sqes = m[i].end - m[i].start;
		else if (m[i].pgoff == 0)		/* IORING_OFF_SQ_RING (and the CQ ring) */
			rings = m[i].end - m[i].start;
	}
	if (PAGE_UP(64UL * in->sq_entries) == PAGE_UP(128UL * in->sq_entries))
		return "too few entries to tell 64- from 128-byte SQEs (IORING_SETUP_SQE128) "
		       "by its mapping";
	if (sqes && sqes != PAGE_UP(64UL * in->sq_entries))
		return "SQEs of 128 bytes (IORING_SETUP_SQE128), or a mapping of its SQEs of "
		       "another size";
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < 2; b++)
			if (rings_pages(in, false, a) == rings_pages(in, true, b))
				return "too few entries to tell 16- from 32-byte CQEs "
				       "(IORING_SETUP_CQE32) by its mapping";
	if (rings && rings != rings_pages(in, false, true) && rings != rings_pages(in, false, false))
		return "CQEs of 32 bytes (IORING_SETUP_CQE32), or a mapping of its rings of "
		       "another size";
	return NULL;
}

/*
 * Made disabled (IORING_SETUP_R_DISABLED) and not enabled yet: a restored
 * ring would be enabled. io_uring_enter with nothing to submit and nothing
 * to wait for does nothing to an enabled ring and fails with EBADFD on a
 * disabled one.
 */
static bool ring_disabled(pid_t pid, int fd)
{
	int own = borrow_fd(pid, fd);
	bool ret = own >= 0 && syscall(SYS_io_uring_enter, own, 0, 0, 0, NULL, 0) < 0 &&
		   errno == EBADFD;

	if (own >= 0)
		close(own);
	return ret;
}

/* Why the ring in is beyond the restore, in why (empty: restorable). */
static void beyond(pid_t pid, int fd, const struct iouring_info *in, char *why, size_t len)
{
	unsigned done = in->sq_head;
	const char *layout;
	pid_t other;

	why[0] = 0;
	if (in->sq_thread >= 0)
		snprintf(why, len, "an SQPOLL thread");
	else if (in->overflow)
		snprintf(why, len, "CQEs in the overflow list (kernel memory)");
	else if (in->polled)
		snprintf(why, len, "requests armed for poll, held by the kernel");
	else if (in->cached_sq != in->sq_head || in->cached_cq != in->cq_tail)
		snprintf(why, len, "the kernel's cached counters (CachedSqHead %u, CachedCqTail %u) "
			 "apart from the shared ones", in->cached_sq, in->cached_cq);
	else if (in->sq_head != in->cq_tail)
		snprintf(why, len, "%u requests consumed whose completion was not posted (in "
			 "flight in the kernel, or done with IOSQE_CQE_SKIP_SUCCESS or multishot: "
			 "not told apart)", in->sq_head - in->cq_tail);
	else if (done > IOURING_MAX_DONE)
		snprintf(why, len, "%u requests done, more than the %u a restore brings a new "
			 "ring's counters to", done, IOURING_MAX_DONE);
	else if (in->personalities)
		snprintf(why, len, "registered personalities");
	else if (in->napi)
		snprintf(why, len, "NAPI busy polling");
	else if (in->nr_paths != in->files || in->nr_bufs != in->bufs)
		snprintf(why, len, "registered files or buffers with holes or more than %d",
			 MAX_FILES);
	else if (!count_maps(pid, in->ino, NULL, 0))
		snprintf(why, len, "no mapping of its rings (IORING_SETUP_NO_MMAP, or unmapped)");
	else if ((other = ring_elsewhere(pid, in->ino)))
		snprintf(why, len, "the ring held by process %d too (each restored process would "
			 "make a ring of its own)", other);
	else if (single_issuer(pid, fd))
		snprintf(why, len, "IORING_SETUP_SINGLE_ISSUER (a restored thread would have to make "
			 "it itself)");
	else if ((layout = layout_why(pid, in)))	/* (its maps read once) */
		snprintf(why, len, "%s", layout);
	else if (ring_disabled(pid, fd))
		snprintf(why, len, "made disabled (IORING_SETUP_R_DISABLED) and not enabled yet");
	for (unsigned i = 0; !why[0] && i < in->nr_paths; i++) {
		int f = fd_of_path(pid, in->paths[i]);

		if (f < 0)
			snprintf(why, len, "registered file %u (%s) held by %s fd of the process",
				 i, in->paths[i], f == -1 ? "no" : "more than one");
	}
}

bool iouring_unsupported(pid_t pid, int fd, char *why, size_t len)
{
	struct iouring_info in;
	char held[256] = "", reason[256];

	if (read_info(pid, fd, &in) < 0) {
		snprintf(why, len, "an io_uring instance whose fdinfo memdump cannot read");
		return true;
	}
	beyond(pid, fd, &in, reason, sizeof(reason));
	info_free(&in);
	if (!reason[0])
		return false;
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
		 "which memdump does not restore: %s", in.sq_head, in.sq_tail, in.cq_head,
		 in.cq_tail, held, reason);
	return true;
}

/* [start, end) of pid read from /proc/PID/mem into a new buffer. */
static int read_bytes(pid_t pid, uint64_t start, uint64_t end, ProtobufCBinaryData *out)
{
	char path[64];
	size_t len = end - start;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	out->data = malloc(len);
	if (!out->data || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return fail(out->data ? -errno : -ENOMEM, "cannot read the io_uring ring of "
			    "process %d at %#" PRIx64, pid, start);
	n = pread(fd, out->data, len, (off_t)start);
	close(fd);
	if (n != (ssize_t)len)
		return fail(n < 0 ? -errno : -EIO, "cannot read the io_uring ring of process %d at "
			    "%#" PRIx64 " (%zd of %zu bytes)", pid, start, n, len);
	out->len = len;
	return 0;
}

static int count_maps(pid_t pid, unsigned long ino, IouringMapEntry **out, size_t max)
{
	char path[64], line[512];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	if (!(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off;
		unsigned long i;
		char perm[8];
		int name = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %lu %n", &s, &e, perm, &off, &i, &name) < 5 ||
		    i != ino || !name || strncmp(line + name, "anon_inode:[io_uring]", 21))
			continue;
		if ((size_t)n < max) {
			iouring_map_entry__init(out[n]);
			out[n]->start = s;
			out[n]->end = e;
			out[n]->pgoff = off;
			out[n]->prot = (perm[0] == 'r' ? 1 : 0) | (perm[1] == 'w' ? 2 : 0) |
				       (perm[2] == 'x' ? 4 : 0);
		}
		n++;
	}
	fclose(f);
	return n;
}

void iouring_entry_free(IouringEntry *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n_maps; i++)
		free(e->maps[i]->data.data);
	free(e->n_maps ? e->maps[0] : NULL);
	free(e->maps);
	free(e->files);
	free(e->bufs ? e->bufs[0] : NULL);
	free(e->bufs);
	free(e);
}

static int fill_maps(pid_t pid, const struct iouring_info *in, IouringEntry *e)
{
	int n = count_maps(pid, in->ino, NULL, 0);
	IouringMapEntry *m = calloc(n, sizeof(*m));

	e->maps = calloc(n, sizeof(*e->maps));
	if (!m || !e->maps) {
		free(m);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++)
		e->maps[i] = &m[i];
	e->n_maps = n;
	if (count_maps(pid, in->ino, e->maps, n) != n)
		return fail(-EAGAIN, "process %d: the io_uring ring's mappings changed", pid);
	for (int i = 0; i < n; i++) {
		int ret = read_bytes(pid, m[i].start, m[i].end, &m[i].data);

		if (ret)
			return ret;
	}
	return 0;
}

static int fill_regs(pid_t pid, const struct iouring_info *in, IouringEntry *e)
{
	IouringBufEntry *b = calloc(in->nr_bufs + 1, sizeof(*b));

	e->files = calloc(in->nr_paths + 1, sizeof(*e->files));
	e->bufs = calloc(in->nr_bufs + 1, sizeof(*e->bufs));
	if (!b || !e->files || !e->bufs) {
		free(b);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < in->nr_paths; i++)
		e->files[i] = (uint32_t)fd_of_path(pid, in->paths[i]);	/* checked: one */
	e->n_files = in->nr_paths;
	for (unsigned i = 0; i < in->nr_bufs; i++) {
		iouring_buf_entry__init(&b[i]);
		b[i].addr = in->buf_addr[i];
		b[i].len = in->buf_len[i];
		e->bufs[i] = &b[i];
	}
	if (!in->nr_bufs)
		e->bufs[0] = b;	/* freed with the entry */
	e->n_bufs = in->nr_bufs;
	return 0;
}

int iouring_collect(pid_t pid, int fd, uint32_t fd_flags, IouringEntry **out)
{
	IouringEntry *e = calloc(1, sizeof(*e));
	struct iouring_info in;
	char why[512];
	int ret;

	if (!e)
		return -ENOMEM;
	iouring_entry__init(e);
	if (iouring_unsupported(pid, fd, why, sizeof(why))) {
		free(e);
		return fail(-EOPNOTSUPP, "process %d: fd %d (anon_inode:[io_uring]) is %s", pid, fd,
			    why);
	}
	ret = read_info(pid, fd, &in);
	if (ret) {
		free(e);
		return fail(ret, "cannot read the fdinfo of io_uring fd %d of process %d", fd, pid);
	}
	e->fd = (uint32_t)fd;
	e->fd_flags = fd_flags & O_CLOEXEC;
	e->sq_entries = in.sq_entries;
	e->cq_entries = in.cq_entries;
	e->done = in.sq_head;
	ret = fill_maps(pid, &in, e);
	if (!ret)
		ret = fill_regs(pid, &in, e);
	info_free(&in);
	if (ret) {
		iouring_entry_free(e);
		return ret;
	}
	*out = e;
	return 0;
}
