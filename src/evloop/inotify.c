/*
 * An inotify instance: its watches from fdinfo ("inotify wd:%x ino:%lx
 * sdev:%x mask:%x ignored_mask:%x fhandle-bytes:%x fhandle-type:%x
 * f_handle:HEX"). A watch names its inode by file handle; the path is found
 * as CRIU does, open_by_handle_at() on the filesystem's mount, then the
 * link of the opened handle. Events queued at the dump are not kept (a
 * warning says how many bytes of them).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "evloop/evloop.h"
#include "ctx/file_desc.h"
#include "image/image.h"
#include "log.h"
#include "proc.h"

#include "files.pb-c.h"

/* One "inotify wd:..." line; 0, or -EINVAL when it does not parse. */
static int parse_watch(const char *line, struct inotify_watch *w)
{
	unsigned long long ino;
	char hex[2 * MAX_HANDLE_BYTES + 1] = "";
	int n = sscanf(line, "inotify wd:%x ino:%llx sdev:%x mask:%x ignored_mask:%x "
		       "fhandle-bytes:%x fhandle-type:%x f_handle:%256s", &w->wd, &ino, &w->sdev,
		       &w->mask, &w->ignored_mask, &w->fh_bytes, &w->fh_type, hex);

	if (n != 8 || w->fh_bytes > MAX_HANDLE_BYTES || strlen(hex) != 2 * w->fh_bytes)
		return -EINVAL;
	w->ino = ino;
	for (unsigned i = 0; i < w->fh_bytes; i++)
		sscanf(hex + 2 * i, "%2hhx", &w->fh[i]);
	return 0;
}

/*
 * A directory of a mount of pid whose device is sdev (the kernel's encoding),
 * opened under its root: a file opened by handle on it reads back (its
 * /proc/self/fd link) as the path pid sees, whatever its root.
 */
static int mount_of(pid_t pid, uint32_t sdev)
{
	char *text = NULL, *line, *save = NULL, info[64];
	int fd = -ENOENT;

	snprintf(info, sizeof(info), "/proc/%d/mountinfo", (int)pid);
	if (proc_read_file(info, &text) < 0)
		return -EIO;
	for (line = strtok_r(text, "\n", &save); line && fd < 0; line = strtok_r(NULL, "\n", &save)) {
		unsigned maj, min;
		char mnt[4096];

		if (sscanf(line, "%*d %*d %u:%u %*s %4095s", &maj, &min, mnt) == 3 &&
		    ((maj << 20) | min) == sdev)
			fd = proc_root_open(pid, mnt, O_RDONLY | O_DIRECTORY);
	}
	free(text);
	return fd;
}

static bool is_file(const char *path, const struct stat *want)
{
	struct stat st;

	return !stat(path, &st) && st.st_ino == want->st_ino && st.st_dev == want->st_dev;
}

/* path as pid sees it (under its root) is the file want */
static bool is_file_in(pid_t pid, const char *path, const struct stat *want)
{
	int fd = proc_root_open(pid, path, O_PATH);
	struct stat st;
	bool same = fd >= 0 && !fstat(fd, &st) && st.st_ino == want->st_ino &&
		    st.st_dev == want->st_dev;

	if (fd >= 0)
		close(fd);
	return same;
}

/* Directory dir of pid (under its root) as a DIR, or NULL. */
static DIR *opendir_in(pid_t pid, const char *dir)
{
	int fd = proc_root_open(pid, dir, O_RDONLY | O_DIRECTORY);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (fd >= 0 && !d)
		close(fd);
	return d;
}

/* path below dir of pid (depth levels of directories) that is the file want, into out. */
static bool find_below(pid_t pid, const char *dir, const struct stat *want, int depth, char *out,
		       size_t len)
{
	DIR *d = opendir_in(pid, dir);
	struct dirent *e;
	bool found = false;

	while (d && !found && (e = readdir(d))) {
		char p[PATH_MAX];

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (snprintf(p, sizeof(p), "%s/%s", strcmp(dir, "/") ? dir : "", e->d_name) >=
		    (int)sizeof(p))
			continue;
		if (e->d_ino == want->st_ino && is_file_in(pid, p, want)) {
			snprintf(out, len, "%s", p);
			found = true;
		} else if (depth > 0 && e->d_type == DT_DIR) {
			found = find_below(pid, p, want, depth - 1, out, len);
		}
	}
	if (d)
		closedir(d);
	return found;
}

/*
 * A file opened by handle whose dentry is not connected to its directory (its
 * dentry was dropped: only the watch keeps the inode) reads back as "/": it is
 * looked for in the process's cwd and the directories below it, as CRIU's
 * irmap looks in likely places. Found: path; not: false.
 */
static bool find_watched(pid_t pid, const struct stat *want, char *path, size_t len)
{
	char link[64], cwd[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
	n = readlink(link, cwd, sizeof(cwd) - 1);
	if (n <= 0)
		return false;
	cwd[n] = 0;
	return cwd[0] == '/' && !ghost_is_deleted(cwd) && find_below(pid, cwd, want, 2, path, len);
}

/*
 * Whether pid holds the file want on an fd: a deleted file watched is then
 * recreated as that fd's ghost, and the watch added again on it.
 */
static bool held_by_fd(pid_t pid, const struct stat *want)
{
	char dir[64], p[320];
	struct dirent *e;
	bool found = false;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	while (d && !found && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		found = is_file(p, want);
	}
	if (d)
		closedir(d);
	return found;
}

int fsnotify_inode_path(pid_t pid, struct inotify_watch *w, const char *what, bool deleted_ok,
			char *why, size_t len)
{
	struct { struct file_handle h; unsigned char b[MAX_HANDLE_BYTES]; } fh;
	char proc[64], path[PATH_MAX];
	int mfd = mount_of(pid, w->sdev), fd;
	struct stat want;
	ssize_t n;

	if (mfd < 0) {
		snprintf(why, len, "%s on a filesystem (device %u:%u) mounted nowhere in its process's "
			 "mount namespace (memdump adds a watch again through its holder's mounts; "
			 "one of another namespace's, or unmounted since, it cannot)", what,
			 w->sdev >> 20, w->sdev & 0xfffff);
		return -ENOENT;
	}
	fh.h.handle_bytes = w->fh_bytes;
	fh.h.handle_type = w->fh_type;
	memcpy(fh.h.f_handle, w->fh, w->fh_bytes);
	fd = open_by_handle_at(mfd, &fh.h, O_PATH | O_CLOEXEC);
	close(mfd);
	if (fd < 0) {
		snprintf(why, len, "%s whose file cannot be found: %s", what, strerror(errno));
		return -errno;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, path, sizeof(path) - 1);
	path[n < 0 ? 0 : n] = 0;
	if (fstat(fd, &want))
		n = -1;
	close(fd);
	if (n > 0 && path[0] == '/' && !ghost_is_deleted(path) && !is_file_in(pid, path, &want) &&
	    !find_watched(pid, &want, path, sizeof(path))) {
		snprintf(why, len, "%s on a file whose path memdump cannot find (inode %lu)", what,
			 (unsigned long)want.st_ino);
		return -ENOENT;
	}
	if (n > 0 && path[0] == '/' && ghost_is_deleted(path) &&
	    (!deleted_ok || !held_by_fd(pid, &want))) {
		snprintf(why, len, "%s on a deleted file %s(%s), which a restore cannot make again",
			 what, deleted_ok ? "no fd of the process holds " : "", path);
		return -ENOENT;
	}
	if (n <= 0 || path[0] != '/') {
		snprintf(why, len, "%s on an unreachable file (%s)", what, path);
		return -ENOENT;
	}
	w->path = strdup(path);
	return w->path ? 0 : -ENOMEM;
}

/*
 * The path of a watched inode, into w->path; 0, or -errno with why[] filled.
 * A deleted file the process holds open keeps its "PATH (deleted)": restore
 * watches the ghost it makes of it (fd_kinds.c).
 */
static int resolve(pid_t pid, struct inotify_watch *w, char *why, size_t len)
{
	char what[64];

	snprintf(what, sizeof(what), "an inotify watch (wd %u)", w->wd);
	return fsnotify_inode_path(pid, w, what, true, why, len);
}

/* Every watch of inotify fd of pid with its path; on failure, why[]. */
static int read_watches(pid_t pid, int fd, struct inotify_state *s, char *why, size_t len)
{
	char *buf = NULL, *line, *save = NULL;
	ssize_t n = proc_fdinfo(pid, fd, &buf);
	int ret = 0;

	if (n < 0) {
		snprintf(why, len, "an inotify instance whose fdinfo cannot be read");
		return n;
	}
	for (line = strtok_r(buf, "\n", &save); line && !ret; line = strtok_r(NULL, "\n", &save)) {
		struct inotify_watch *w;

		if (strncmp(line, "inotify ", 8))
			continue;
		w = realloc(s->w, (s->nr + 1) * sizeof(*w));
		if (!w) {
			ret = -ENOMEM;
			break;
		}
		s->w = w;
		w = &s->w[s->nr];
		memset(w, 0, sizeof(*w));
		ret = parse_watch(line, w);
		if (ret)
			snprintf(why, len, "an inotify watch memdump cannot read (%.80s)", line);
		else
			s->nr++;
		if (!ret)
			ret = resolve(pid, w, why, len);
	}
	free(buf);
	return ret;
}

bool inotify_unsupported(pid_t pid, int fd, char *why, size_t len)
{
	struct inotify_state s = { 0 };
	bool bad = read_watches(pid, fd, &s, why, len) != 0;

	inotify_state_free(&s);
	return bad;
}

void notify_warn_pending(struct dump_ctx *d, int fd, const char *kind)
{
	int copy = syscall(SYS_pidfd_getfd, d->in.pidfd, fd, 0), bytes = 0;

	if (copy < 0)
		return;
	if (!ioctl(copy, FIONREAD, &bytes) && bytes > 0)
		pr_warn("process %d: %s fd %d has %d bytes of events queued; they are not "
			"kept by the dump\n", d->pid, kind, fd, bytes);
	close(copy);
}

static int cmp_wd(const void *a, const void *b)
{
	const struct inotify_watch *x = a, *y = b;

	return x->wd < y->wd ? -1 : x->wd > y->wd;
}

int inotify_collect(struct dump_ctx *d, int fd, struct inotify_state *s)
{
	char why[512];
	int ret = read_watches(d->pid, fd, s, why, sizeof(why));

	if (ret)
		return fail(ret, "process %d: fd %d is %s", d->pid, fd, why);
	if (s->nr)	/* the kernel lists the newest first */
		qsort(s->w, s->nr, sizeof(*s->w), cmp_wd);
	notify_warn_pending(d, fd, "inotify");
	return 0;
}

int inotify_write(struct image *img, const struct file_desc *f)
{
	FileEntry fe = FILE_ENTRY__INIT;
	InotifyFileEntry e = INOTIFY_FILE_ENTRY__INIT;
	FownEntry fown = FOWN_ENTRY__INIT;
	size_t n = f->ify.nr;
	InotifyWdEntry *wds = calloc(n + 1, sizeof(*wds)), **ptrs = calloc(n + 1, sizeof(*ptrs));
	FhEntry *fhs = calloc(n + 1, sizeof(*fhs));
	uint64_t *words = calloc(n * (MAX_HANDLE_BYTES / 8) + 1, sizeof(*words));
	int ret = -ENOMEM;

	if (wds && ptrs && fhs && words) {
		for (size_t i = 0; i < n; i++) {
			const struct inotify_watch *w = &f->ify.w[i];

			inotify_wd_entry__init(&wds[i]);
			fh_entry__init(&fhs[i]);
			wds[i].id = f->id;
			wds[i].i_ino = w->ino;
			wds[i].mask = w->mask;
			wds[i].ignored_mask = w->ignored_mask;
			wds[i].s_dev = w->sdev;
			wds[i].wd = w->wd;
			fhs[i].bytes = w->fh_bytes;
			fhs[i].type = w->fh_type;
			fhs[i].n_handle = (w->fh_bytes + 7) / 8;
			fhs[i].handle = words + i * (MAX_HANDLE_BYTES / 8);
			memcpy(fhs[i].handle, w->fh, w->fh_bytes);
			fhs[i].path = w->path;
			wds[i].f_handle = &fhs[i];
			ptrs[i] = &wds[i];
		}
		e.id = f->id;
		e.flags = f->flags;
		e.fown = &fown;
		e.n_wd = n;
		e.wd = ptrs;
		fe.type = FD_TYPES__INOTIFY;
		fe.id = f->id;
		fe.ify = &e;
		ret = img_write_msg(img, &fe.base);
	}
	free(wds);
	free(ptrs);
	free(fhs);
	free(words);
	return ret;
}

void inotify_state_free(struct inotify_state *s)
{
	for (size_t i = 0; i < s->nr; i++)
		free(s->w[i].path);
	free(s->w);
	s->w = NULL;
	s->nr = 0;
}
