/* t-fanotify: fanotify groups and their marks (zdtm fanotify00).
 *   fd 10: FAN_CLASS_NOTIF | FAN_NONBLOCK | FAN_UNLIMITED_QUEUE, event flags
 *          O_RDONLY | O_LARGEFILE: an inode mark on DIR/fan-dir/fan-file (modify,
 *          access, open, close), a mount mark on DIR's mount (open, close,
 *          on dirs) and its ignored mask (modify, access, surviving modify)
 *   fd 11: FAN_CLASS_NOTIF | FAN_REPORT_FID | FAN_CLOEXEC | FAN_NONBLOCK: an
 *          inode mark on DIR/fan-dir (create, delete, on dirs), an ignore mark
 *          (FAN_MARK_IGNORE) on DIR/fan-dir/fan-file (modify)
 * After SIGUSR1: both groups' fdinfo lines are the ones read before READY
 * (flags, event flags, every mark with its inode, masks and flags), fd 11
 * has no event queued and keeps FD_CLOEXEC, fd 10 O_NONBLOCK; writing
 * fan-file gives fd 10 its open and close-write events with an fd on that
 * file, and no modify (the mount mark's ignored mask); creating and removing
 * DIR/fan-dir/g gives fd 11 FAN_CREATE and FAN_DELETE.
 * Modes: `perm` (a FAN_CLASS_CONTENT group with FAN_OPEN_PERM: refused),
 *        `fs` (a mark on a whole filesystem: refused).
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <sys/fanotify.h>
#include <sys/stat.h>

#ifndef FAN_MARK_IGNORE
#define FAN_MARK_IGNORE 0x00000400
#endif

static char before10[4096], before11[4096];

/* The "fanotify ..." lines of fd's fdinfo, sorted (the kernel lists the newest mark first). */
static void marks_of(int fd, char *out, size_t len)
{
	char path[64], line[512], lines[16][512];
	int n = 0;
	size_t at = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		t_fail("open %s: %s", path, strerror(errno));
	while (n < 16 && fgets(line, sizeof(line), f))
		if (!strncmp(line, "fanotify ", 9))
			snprintf(lines[n++], sizeof(lines[0]), "%s", line);
	fclose(f);
	qsort(lines, n, sizeof(lines[0]), (int (*)(const void *, const void *))strcmp);
	out[0] = 0;
	for (int i = 0; i < n; i++)
		at += snprintf(out + at, at < len ? len - at : 0, "%s", lines[i]);
}

static void mark(int fd, unsigned flags, uint64_t mask, const char *path)
{
	if (fanotify_mark(fd, flags, mask, AT_FDCWD, path))
		t_fail("fanotify_mark %s %#x %#llx: %s", path, flags, (unsigned long long)mask,
		       strerror(errno));
}

static int group(unsigned flags, unsigned evflags, int at)
{
	int fd = fanotify_init(flags, evflags);

	if (fd < 0 || dup3(fd, at, flags & FAN_CLOEXEC ? O_CLOEXEC : 0) != at || close(fd))
		t_fail("fanotify_init %#x: %s", flags, strerror(errno));
	return at;
}

/* fd 10's events: the masks of those this process caused on file (ino), ORed. */
static uint64_t own_events(ino_t ino)
{
	char buf[8192] __attribute__((aligned(8)));
	uint64_t got = 0;
	ssize_t n;

	while ((n = read(10, buf, sizeof(buf))) > 0) {
		struct fanotify_event_metadata *m = (void *)buf;

		for (; FAN_EVENT_OK(m, n); m = FAN_EVENT_NEXT(m, n)) {
			struct stat st;

			if (m->fd >= 0 && m->pid == getpid() && !fstat(m->fd, &st) && st.st_ino == ino)
				got |= m->mask;
			if (m->fd >= 0)
				close(m->fd);
		}
	}
	if (n < 0 && errno != EAGAIN)
		t_fail("read fanotify: %s", strerror(errno));
	return got;
}

/* fd 11's events (FID: no fd), their masks ORed. */
static uint64_t fid_events(void)
{
	char buf[8192] __attribute__((aligned(8)));
	uint64_t got = 0;
	ssize_t n;

	while ((n = read(11, buf, sizeof(buf))) > 0) {
		struct fanotify_event_metadata *m = (void *)buf;

		for (; FAN_EVENT_OK(m, n); m = FAN_EVENT_NEXT(m, n))
			got |= m->mask;
	}
	if (n < 0 && errno != EAGAIN)
		t_fail("read fanotify fid: %s", strerror(errno));
	return got;
}

static void refused_modes(const char *mode, const char *file)
{
	if (!strcmp(mode, "perm")) {
		group(FAN_CLASS_CONTENT | FAN_NONBLOCK, O_RDONLY, 12);
		mark(12, FAN_MARK_ADD, FAN_OPEN_PERM, file);
	} else if (!strcmp(mode, "fs")) {
		group(FAN_CLASS_NOTIF | FAN_NONBLOCK, O_RDONLY, 12);
		mark(12, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_CLOSE_WRITE, t_dir);
	}
}

int main(int argc, char **argv)
{
	char dir[600], file[640], g[640], now[4096];
	struct stat st;
	int fd;

	t_init(argc, argv, SA_RESTART);
	snprintf(dir, sizeof(dir), "%s/fan-dir", t_dir);	/* only this process writes there */
	snprintf(file, sizeof(file), "%s/fan-file", dir);
	snprintf(g, sizeof(g), "%s/g", dir);
	if (mkdir(dir, 0755) && errno != EEXIST)
		t_fail("mkdir %s: %s", dir, strerror(errno));
	fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || fstat(fd, &st) || close(fd))
		t_fail("create %s: %s", file, strerror(errno));
	group(FAN_CLASS_NOTIF | FAN_NONBLOCK | FAN_UNLIMITED_QUEUE, O_RDONLY | O_LARGEFILE, 10);
	mark(10, FAN_MARK_ADD, FAN_MODIFY | FAN_ACCESS | FAN_OPEN | FAN_CLOSE, file);
	mark(10, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_ONDIR | FAN_OPEN | FAN_CLOSE, t_dir);
	mark(10, FAN_MARK_ADD | FAN_MARK_MOUNT | FAN_MARK_IGNORED_MASK | FAN_MARK_IGNORED_SURV_MODIFY,
	     FAN_MODIFY | FAN_ACCESS, t_dir);
	group(FAN_CLASS_NOTIF | FAN_REPORT_FID | FAN_CLOEXEC | FAN_NONBLOCK, O_RDONLY, 11);
	mark(11, FAN_MARK_ADD, FAN_CREATE | FAN_DELETE | FAN_ONDIR, dir);
	mark(11, FAN_MARK_ADD | FAN_MARK_IGNORE, FAN_MODIFY, file);
	if (argc > 2)
		refused_modes(argv[2], file);
	marks_of(10, before10, sizeof(before10));
	marks_of(11, before11, sizeof(before11));
	fid_events();
	t_ready("");
	t_wait_usr1();
	t_check_common();
	marks_of(10, now, sizeof(now));
	if (strcmp(now, before10))
		t_fail("fd 10's fdinfo:\n%s, was:\n%s", now, before10);
	marks_of(11, now, sizeof(now));
	if (strcmp(now, before11))
		t_fail("fd 11's fdinfo:\n%s, was:\n%s", now, before11);
	if (fid_events())
		t_fail("fd 11 has events queued after the restore");
	if (!(fcntl(11, F_GETFD) & FD_CLOEXEC) || !(fcntl(10, F_GETFL) & O_NONBLOCK))
		t_fail("fd flags: fd 11 without FD_CLOEXEC or fd 10 blocking");
	own_events(st.st_ino);
	fd = open(file, O_RDWR);
	if (fd < 0 || write(fd, "x", 1) != 1 || close(fd))
		t_fail("write %s: %s", file, strerror(errno));
	uint64_t got = own_events(st.st_ino), want = FAN_OPEN | FAN_CLOSE_WRITE;	/* FAN_MODIFY: ignored by the mount mark */

	if ((got & want) != want || (got & FAN_MODIFY))
		t_fail("events of fan-file: %#llx, want %#llx", (unsigned long long)got,
		       (unsigned long long)want);
	fd = open(g, O_RDONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0 || close(fd) || unlink(g))
		t_fail("create and remove %s: %s", g, strerror(errno));
	got = fid_events();
	if ((got & (FAN_CREATE | FAN_DELETE)) != (FAN_CREATE | FAN_DELETE))
		t_fail("events of %s: %#llx, want FAN_CREATE and FAN_DELETE", g,
		       (unsigned long long)got);
	t_pass(NULL);
}
