/* Readers of /proc/PID/{stat,status,task,comm}. */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <linux/mount.h>
#include <sys/capability.h>
#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

int read_small_at(int dirfd, const char *name, char *buf, size_t len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

ssize_t proc_read_file(const char *path, char **out)
{
	return proc_read_file_at(AT_FDCWD, path, out);
}

ssize_t proc_read_file_at(int dirfd, const char *path, char **out)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap + 1);
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0 || !buf) {
		int err = fd < 0 ? -errno : -ENOMEM;

		if (fd >= 0)
			close(fd);
		free(buf);
		return err;
	}
	while ((n = read(fd, buf + len, cap - len)) > 0) {
		len += n;
		if (len == cap) {
			char *nb = realloc(buf, cap * 2 + 1);

			if (!nb) {
				n = -1;
				errno = ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	close(fd);
	if (n < 0) {
		int err = -errno;

		free(buf);
		return err;
	}
	buf[len] = 0;
	*out = buf;
	return len;
}

int proc_read_stat(pid_t pid, struct proc_stat *st)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	return proc_read_stat_path(path, st);
}

int proc_read_stat_path(const char *path, struct proc_stat *st)
{
	char *buf, *p;
	unsigned long long v[52];
	ssize_t len;
	int i;

	len = proc_read_file(path, &buf);
	if (len < 0)
		return len;
	/* comm may hold spaces and parentheses: it ends at the last ')'. */
	p = strrchr(buf, ')');
	if (!p || !strchr(buf, '(')) {
		free(buf);
		return -EINVAL;
	}
	*p = 0;
	snprintf(st->comm, sizeof(st->comm), "%s", strchr(buf, '(') + 1);
	p += 2;
	st->state = *p;
	p += 1;
	memset(v, 0, sizeof(v));
	/* v[i] holds field i+4 of proc(5) (fields 1-3 are pid, comm, state). */
	for (i = 0; i < 49 && *p; i++)
		v[i] = strtoull(p, &p, 10);
	free(buf);
	st->ppid = v[0];
	st->pgid = v[1];
	st->sid = v[2];
	st->tty_nr = v[3];
	st->tpgid = (pid_t)v[4];
	st->flags = v[5];
	st->start_time = v[18];
	st->start_code = v[22];
	st->end_code = v[23];
	st->start_stack = v[24];
	st->exit_signal = v[34];
	st->start_data = v[41];
	st->end_data = v[42];
	st->start_brk = v[43];
	st->arg_start = v[44];
	st->arg_end = v[45];
	st->env_start = v[46];
	st->env_end = v[47];
	return 0;
}

int status_text_field(const char *text, const char *key, char *out, size_t outlen)
{
	size_t klen = strlen(key);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (!strncmp(p, key, klen) && p[klen] == ':') {
			const char *v = p + klen + 1;

			while (*v == ' ' || *v == '\t')
				v++;
			snprintf(out, outlen, "%.*s", (int)strcspn(v, "\n"), v);
			return 0;
		}
	}
	return -ENOENT;
}

/* The value of line key of the status file at path, blanks before it left out. */
static int status_field_at(const char *path, const char *key, char *out, size_t outlen)
{
	char *buf;
	ssize_t len = proc_read_file(path, &buf);
	int ret;

	if (len < 0)
		return len;
	ret = status_text_field(buf, key, out, outlen);
	free(buf);
	return ret;
}

int proc_status_field(pid_t pid, const char *key, char *out, size_t outlen)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	return status_field_at(path, key, out, outlen);
}

int proc_task_status_field(pid_t pid, pid_t tid, const char *key, char *out, size_t outlen)
{
	char path[96];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	return status_field_at(path, key, out, outlen);
}

static pid_t status_pid(pid_t pid, const char *key)
{
	char v[32];
	int ret = proc_status_field(pid, key, v, sizeof(v));

	return ret ? ret : (pid_t)atoi(v);
}

pid_t proc_ppid(pid_t pid)
{
	return status_pid(pid, "PPid");
}

pid_t proc_tgid(pid_t pid)
{
	return status_pid(pid, "Tgid");
}

pid_t proc_tracer(pid_t pid)
{
	return status_pid(pid, "TracerPid");
}

int proc_comm(pid_t pid, char *buf, size_t len)
{
	return proc_status_field(pid, "Name", buf, len);
}

static int cmp_pid(const void *a, const void *b)
{
	return *(const pid_t *)a - *(const pid_t *)b;
}

/*
 * Is task tid of pid an io_uring worker (PF_IO_WORKER in its stat's flags:
 * an io-wq worker, iou-wrk-PID, or an SQPOLL thread, iou-sqp-PID)? The
 * kernel's own, made again on demand: no thread of the dump
 * (docs/io_uring.md).
 */
static bool io_worker(pid_t pid, const char *tid)
{
	char path[320], buf[512], *p;
	unsigned long flags = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", pid, tid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	p = strrchr(buf, ')');
	/* ") S ppid pgrp session tty_nr tpgid flags" */
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
		return false;
	return flags & 0x10;	/* PF_IO_WORKER */
}

/* TIDs of pid, the leader first, the rest in increasing order; io_uring's workers left out. */
int proc_tasks(pid_t pid, pid_t **tids)
{
	char path[64];
	struct dirent *de;
	pid_t *v = NULL;
	int n = 0, cap = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.' || io_worker(pid, de->d_name))
			continue;
		if (n == cap) {
			pid_t *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));

			if (!nv) {
				free(v);
				closedir(dir);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = atoi(de->d_name);
	}
	closedir(dir);
	if (n)
		qsort(v, n, sizeof(*v), cmp_pid);	/* v is NULL for none: its process just exited */
	for (int i = 0; i < n; i++) {
		if (v[i] == pid) {
			memmove(&v[1], &v[0], i * sizeof(*v));
			v[0] = pid;
			break;
		}
	}
	*tids = v;
	return n;
}

ssize_t proc_fdinfo(pid_t pid, int fd, char **out)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", pid, fd);
	return proc_read_file(path, out);
}

const char *proc_line_after(const char *text, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, n))
			return p + n;
	return NULL;
}

long proc_uid(pid_t pid)
{
	char buf[64];
	int ret = proc_status_field(pid, "Uid", buf, sizeof(buf));

	return ret ? ret : strtol(buf, NULL, 10);
}

bool self_capable(int cap)
{
	cap_flag_value_t v = CAP_CLEAR;
	cap_t caps = cap_get_proc();

	if (!caps)
		return false;
	if (cap_get_flag(caps, cap, CAP_EFFECTIVE, &v))
		v = CAP_CLEAR;
	cap_free(caps);
	return v == CAP_SET;
}

bool proc_fd_flag(pid_t pid, int fd, unsigned long mask)
{
	char *info = NULL;
	const char *v;
	bool on;

	if (proc_fdinfo(pid, fd, &info) < 0)
		return false;
	v = proc_line_after(info, "flags:");
	on = v && (strtoul(v, NULL, 8) & mask);
	free(info);
	return on;
}

bool proc_fd_link_is(pid_t pid, int fd, const char *want)
{
	char path[64], link[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return false;
	link[n] = 0;
	return !strcmp(link, want);
}

int proc_fd_of_link(pid_t pid, const char *want, unsigned long ino)
{
	char path[64], fdp[320], link[128];
	struct dirent *de;
	struct stat st;
	int fd = -1;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	if (!(dir = opendir(path)))
		return -1;
	while (fd < 0 && (de = readdir(dir))) {
		ssize_t k;

		if (de->d_name[0] == '.')
			continue;
		snprintf(fdp, sizeof(fdp), "%s/%s", path, de->d_name);
		k = readlink(fdp, link, sizeof(link) - 1);
		if (k <= 0)
			continue;
		link[k] = 0;
		if (!strcmp(link, want) && !stat(fdp, &st) && st.st_ino == ino)
			fd = atoi(de->d_name);
	}
	closedir(dir);
	return fd;
}

int proc_count_fd_links(pid_t pid, const char *want)
{
	char path[64], fdp[320], link[128];
	struct dirent *de;
	int n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	if (!(dir = opendir(path)))
		return -errno;
	while ((de = readdir(dir))) {
		ssize_t k;

		if (de->d_name[0] == '.')
			continue;
		snprintf(fdp, sizeof(fdp), "%s/%s", path, de->d_name);
		k = readlink(fdp, link, sizeof(link) - 1);
		if (k > 0) {
			link[k] = 0;
			n += !strcmp(link, want);
		}
	}
	closedir(dir);
	return n;
}

int self_fd_link(int fd, char *path, size_t len)
{
	static const char del[] = " (deleted)";
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, len - 1);
	if (n < 0)
		return -errno;
	path[n] = 0;
	return (size_t)n > sizeof(del) - 1 && !strcmp(path + n - (sizeof(del) - 1), del);
}

int root_open_at(int root, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, root, path, &how, sizeof(how));

	return fd < 0 ? -errno : fd;
}

int proc_root_open(pid_t pid, const char *path, int flags)
{
	char root[64];
	int dir, fd;

	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	dir = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -errno;
	fd = root_open_at(dir, path, flags);
	close(dir);
	return fd;
}

/* What covered_in_ns() looks for, and its answer. */
struct covered_req {
	pid_t pid;
	const char *base, *rel;
	struct stat want;
	int ret;
};

static bool is_want(int dir, const char *rel, const struct stat *want)
{
	struct stat at;

	return !fstatat(dir, rel, &at, AT_SYMLINK_NOFOLLOW) && at.st_dev == want->st_dev &&
	       at.st_ino == want->st_ino;
}

/*
 * On a thread of its own (its fs information unshared, as setns wants): in
 * the process's mount namespace, where its mounts can be cloned, base's
 * mount alone (OPEN_TREE_CLONE: none of the mounts on it) shows the file.
 */
static void *covered_in_ns(void *arg)
{
	struct covered_req *q = arg;
	char path[64];
	int dir = proc_root_open(q->pid, q->base, O_PATH | O_DIRECTORY), ns, clone = -1;

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", q->pid);
	ns = open(path, O_RDONLY | O_CLOEXEC);
	if (dir >= 0 && ns >= 0 && !unshare(CLONE_FS) && !setns(ns, CLONE_NEWNS))
		clone = (int)syscall(SYS_open_tree, dir, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
				     AT_EMPTY_PATH);
	q->ret = clone >= 0 && is_want(clone, q->rel, &q->want) ? 1 : -ENOENT;
	if (clone >= 0)
		close(clone);
	if (ns >= 0)
		close(ns);
	if (dir >= 0)
		close(dir);
	return NULL;
}

/*
 * The file of fd, at rel below directory base of pid's root: 0 there; 1
 * covered by a mount since, but there in a clone of base's mount alone;
 * -ENOENT neither.
 */
int proc_root_covered(pid_t pid, const char *base, const char *rel, int fd)
{
	struct covered_req q = { .pid = pid, .base = base, .rel = rel, .ret = -ENOENT };
	int dir = proc_root_open(pid, base, O_PATH | O_DIRECTORY);
	bool there = dir >= 0 && !fstat(fd, &q.want) && is_want(dir, rel, &q.want);
	pthread_t t;

	if (dir >= 0)
		close(dir);
	if (there || dir < 0)
		return there ? 0 : -ENOENT;
	if (!pthread_create(&t, NULL, covered_in_ns, &q))
		pthread_join(t, NULL);
	return q.ret;
}

int self_sealed_mapping(char *what, size_t len)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512], cur[512] = "";
	int sealed = 0;

	if (!f)
		return -errno;
	while (!sealed && fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if (!strncmp(line, "VmFlags:", 8))
			sealed = strstr(line, " sl") != NULL;
		else if (sscanf(line, "%lx-%lx ", &s, &e) == 2)
			snprintf(cur, sizeof(cur), "%s", line);
	}
	fclose(f);
	if (sealed) {
		char name[256] = "";
		unsigned long s, e;

		sscanf(cur, "%lx-%lx %*s %*s %*s %*s %255[^\n]", &s, &e, name);
		snprintf(what, len, "%#lx-%#lx %s", s, e, *name ? name : "(anonymous)");
	}
	return sealed;
}

bool pidfd_exited(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return poll(&p, 1, 0) != 0;	/* readable once it exited */
}
