/*
 * The record of a tracker: /run/memdump/track-PID, one line
 *
 *   pid start_time fd tmp_fd ino base
 *
 * written before the userfaultfd is created in the target (so that a memdump
 * killed meanwhile leaves nothing unknown behind) and updated as it changes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "track/track.h"
#include "log.h"
#include "proc.h"

#define RUN_DIR	"/run/memdump"

static void record_path(pid_t pid, char *buf, size_t len)
{
	snprintf(buf, len, RUN_DIR "/track-%d", pid);
}

void track_init(struct tracker *t, pid_t pid)
{
	*t = (struct tracker){ .pid = pid, .fd = -1, .tmp_fd = -1, .local = -1 };
}

int track_state_load(struct tracker *t)
{
	char path[64];
	FILE *f;
	int n;

	record_path(t->pid, path, sizeof(path));
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fscanf(f, "%*d %" SCNu64 " %d %d %" SCNu64 " %" SCNu64, &t->start_time, &t->fd,
		   &t->tmp_fd, &t->ino, &t->base);
	fclose(f);
	if (n != 5)
		return fail(-EIO, "%s is corrupt", path);
	return 0;
}

/* Is record name (track-PID) of a process gone since (exited, or its PID another's)? */
static bool record_stale(int dir, const char *name)
{
	struct proc_stat st;
	uint64_t start;
	char *end;
	long pid = strtol(name + 6, &end, 10);
	int fd, ret, n = 0;
	FILE *f;

	if (strncmp(name, "track-", 6) || *end || pid <= 0)
		return false;		/* not a record (a .tmp being written) */
	fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
	f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (f)
		n = fscanf(f, "%*d %" SCNu64, &start);
	if (f)
		fclose(f);
	else if (fd >= 0)
		close(fd);
	if (n != 1)
		return false;
	ret = proc_read_stat((pid_t)pid, &st);
	return ret == -ENOENT || (!ret && st.start_time != start);
}

/* The records of tracked processes that exited: nobody else removes them. */
static void prune_records(pid_t keep)
{
	DIR *d = opendir(RUN_DIR);
	struct dirent *e;
	char name[64];

	snprintf(name, sizeof(name), "track-%d", keep);
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, name) && record_stale(dirfd(d), e->d_name) &&
		    unlinkat(dirfd(d), e->d_name, 0) == 0)
			pr_debug("removed the record %s/%s of a process gone\n", RUN_DIR, e->d_name);
	if (d)
		closedir(d);
}

int track_state_save(const struct tracker *t)
{
	char path[64], tmp[80];
	FILE *f;
	int ret = 0;

	if (mkdir(RUN_DIR, 0700) && errno != EEXIST)
		return fail(-errno, "cannot create %s: %s", RUN_DIR, strerror(errno));
	record_path(t->pid, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f)
		return fail(-errno, "cannot write %s: %s", tmp, strerror(errno));
	fprintf(f, "%d %" PRIu64 " %d %d %" PRIu64 " %" PRIu64 "\n", t->pid, t->start_time, t->fd,
		t->tmp_fd, t->ino, t->base);
	if (fclose(f) || rename(tmp, path))
		ret = fail(-errno, "cannot write %s: %s", path, strerror(errno));
	if (!ret)
		prune_records(t->pid);
	return ret;
}

void track_state_remove(pid_t pid)
{
	char path[64];

	record_path(pid, path, sizeof(path));
	unlink(path);
}
