/*
 * The record of a tracker: /run/memdump/track-PID, one line
 *
 *   pid start_time fd tmp_fd ino base
 *
 * written before the userfaultfd is created in the target (so that a memdump
 * killed meanwhile leaves nothing unknown behind) and updated as it changes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "track/track.h"
#include "log.h"

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
	return ret;
}

void track_state_remove(pid_t pid)
{
	char path[64];

	record_path(pid, path, sizeof(path));
	unlink(path);
}
