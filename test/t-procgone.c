/* t-procgone: fds on /proc files of a process that exited (zdtm remap_dead_pid, _root).
 *
 *   t-procgone DIR [cwd]
 *
 * It forks a child, which takes uid and gid 65534 (dumpable), opens
 * /proc/CHILD/mountinfo (read one line: an offset) and /proc/CHILD (a directory), then
 * kills and reaps the child. READY <pid> <gone pid>. On SIGUSR1 every check again: the
 * same links ("/proc/CHILD/mountinfo", "/proc/CHILD (deleted)"), open flags, modes and
 * owners (the file's the child's 65534, the directory's root's), offset, the procfs of
 * /proc/self, the directory not listed (ENOENT) and "status" not found in it as before, the
 * `cwd`: its cwd in /proc/CHILD too, read the same. The
 * mountinfo still read from the start (its first mount's root and mount point as before), PID CHILD free.
 */
#include "tlib.h"

#include <fcntl.h>
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

struct seen {
	char file_link[128], dir_link[128];
	int file_fl, dir_fl, lookup_errno, entries;
	off_t pos;
	struct stat file_st, dir_st;
	char first[128];	/* mountinfo's first mount: its root and mount point */
};

static int mi_fd, dir_fd;
static char cwd_before[128];
static pid_t gone;

static void read_link(int fd, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, buf, len - 1);
	if (n < 0)
		t_fail("readlink %s: %s", path, strerror(errno));
	buf[n] = 0;
}

/* Entries of the dead directory but . and .. */
static int count_entries(int fd)
{
	char buf[4096];
	long n, count = 0;

	lseek(fd, 0, SEEK_SET);
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);

			count += strcmp(d->d_name, ".") && strcmp(d->d_name, "..");
			off += d->d_reclen;
		}
	}
	return n < 0 ? -errno : (int)count;
}

/*
 * The first mount of mountinfo read from the start, its root and mount point
 * (fields 4 and 5: mount ids are new in a restored mount namespace), the
 * offset put back.
 */
static void first_mount(char *out, size_t len)
{
	off_t at = lseek(mi_fd, 0, SEEK_CUR);
	char buf[256] = "", root[64] = "", point[64] = "";
	ssize_t n;

	if (lseek(mi_fd, 0, SEEK_SET) < 0 || (n = read(mi_fd, buf, sizeof(buf) - 1)) <= 0)
		t_fail("mountinfo of the dead process: %s", strerror(errno));
	buf[n] = 0;
	if (sscanf(buf, "%*s %*s %*s %63s %63s", root, point) != 2)
		t_fail("mountinfo of the dead process starts with \"%.40s\"", buf);
	snprintf(out, len, "%.60s %.60s", root, point);
	if (lseek(mi_fd, at, SEEK_SET) != at)
		t_fail("lseek back to %ld: %s", (long)at, strerror(errno));
}

static void look(struct seen *s)
{
	memset(s, 0, sizeof(*s));
	read_link(mi_fd, s->file_link, sizeof(s->file_link));
	read_link(dir_fd, s->dir_link, sizeof(s->dir_link));
	s->file_fl = fcntl(mi_fd, F_GETFL);
	s->dir_fl = fcntl(dir_fd, F_GETFL);
	s->pos = lseek(mi_fd, 0, SEEK_CUR);
	if (fstat(mi_fd, &s->file_st) || fstat(dir_fd, &s->dir_st))
		t_fail("fstat: %s", strerror(errno));
	if (openat(dir_fd, "status", O_RDONLY) >= 0)
		t_fail("\"status\" opens in the dead directory");
	s->lookup_errno = errno;
	s->entries = count_entries(dir_fd);
	first_mount(s->first, sizeof(s->first));
}

static void compare(const struct seen *a, const struct seen *b)
{
	struct stat proc;

	if (strcmp(a->file_link, b->file_link) || strcmp(a->dir_link, b->dir_link))
		t_fail("links \"%s\" \"%s\", want \"%s\" \"%s\"", b->file_link, b->dir_link,
		       a->file_link, a->dir_link);
	if (a->file_fl != b->file_fl || a->dir_fl != b->dir_fl)
		t_fail("flags %o %o, want %o %o", b->file_fl, b->dir_fl, a->file_fl, a->dir_fl);
	if (a->pos != b->pos)
		t_fail("mountinfo offset %ld, want %ld", (long)b->pos, (long)a->pos);
	if (a->file_st.st_mode != b->file_st.st_mode || a->file_st.st_uid != b->file_st.st_uid ||
	    a->file_st.st_gid != b->file_st.st_gid || a->dir_st.st_mode != b->dir_st.st_mode ||
	    a->dir_st.st_uid != b->dir_st.st_uid || a->dir_st.st_gid != b->dir_st.st_gid)
		t_fail("file %o %u:%u dir %o %u:%u, want %o %u:%u and %o %u:%u",
		       b->file_st.st_mode, b->file_st.st_uid, b->file_st.st_gid, b->dir_st.st_mode,
		       b->dir_st.st_uid, b->dir_st.st_gid, a->file_st.st_mode, a->file_st.st_uid,
		       a->file_st.st_gid, a->dir_st.st_mode, a->dir_st.st_uid, a->dir_st.st_gid);
	if (stat("/proc/self", &proc) || b->file_st.st_dev != proc.st_dev ||
	    b->dir_st.st_dev != proc.st_dev)
		t_fail("not on the procfs of /proc/self");
	if (a->lookup_errno != b->lookup_errno || a->entries != b->entries)
		t_fail("lookup %s, %d entries; want %s, %d", strerror(b->lookup_errno), b->entries,
		       strerror(a->lookup_errno), a->entries);
	if (strcmp(a->first, b->first))
		t_fail("mountinfo starts with mount \"%s\", want \"%s\"", b->first, a->first);
	if (!kill(gone, 0) || errno != ESRCH)
		t_fail("PID %d, which exited, is in use", (int)gone);
}

int main(int argc, char **argv)
{
	struct seen before, after;
	char path[64], line[4096], c;
	int p[2];

	t_init(argc, argv, 0);
	if (pipe(p))
		t_fail("pipe: %s", strerror(errno));
	gone = fork();
	if (gone < 0)
		t_fail("fork: %s", strerror(errno));
	if (!gone) {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534) ||
		    prctl(PR_SET_DUMPABLE, 1) || write(p[1], "", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	if (read(p[0], &c, 1) != 1)
		t_fail("the child did not take its ids");
	snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)gone);
	mi_fd = open(path, O_RDONLY);
	snprintf(path, sizeof(path), "/proc/%d", (int)gone);
	dir_fd = open(path, O_RDONLY | O_DIRECTORY);
	if (mi_fd < 0 || dir_fd < 0)
		t_fail("open /proc/%d: %s", (int)gone, strerror(errno));
	if (read(mi_fd, line, 16) != 16)	/* an offset to keep */
		t_fail("read mountinfo: %s", strerror(errno));
	if (argc > 2 && !strcmp(argv[2], "cwd") && chdir(path))
		t_fail("chdir %s: %s", path, strerror(errno));
	kill(gone, SIGKILL);
	waitpid(gone, NULL, 0);
	if (argc > 2 && !strcmp(argv[2], "cwd") &&
	    readlink("/proc/self/cwd", cwd_before, sizeof(cwd_before) - 1) < 0)
		t_fail("readlink cwd: %s", strerror(errno));
	look(&before);
	if (before.file_st.st_uid != 65534 || before.dir_st.st_uid != 0 || before.entries > 0)
		t_fail("before: file uid %u, dir uid %u, %d entries", before.file_st.st_uid,
		       before.dir_st.st_uid, before.entries);
	t_ready("%d", (int)gone);
	t_wait_usr1();
	t_check_common();
	look(&after);
	compare(&before, &after);
	if (cwd_before[0]) {
		char now[128] = "";

		if (readlink("/proc/self/cwd", now, sizeof(now) - 1) < 0 || strcmp(now, cwd_before))
			t_fail("cwd reads \"%s\", want \"%s\"", now, cwd_before);
	}
	t_pass(before.dir_link);
}
