/*
 * The stats files runtimes read (podman --print-stats, checkpointctl, CRIU's
 * test runner): CRIU writes stats-dump and stats-restore into its work
 * directory, which a runtime names apart from the images (RPC work_dir_fd,
 * `criu -W`). memdump keeps stats-dump in the image set (listed in the
 * inventory) and puts a copy where the runtime looks; stats-restore, which
 * no image set holds (a restore does not write into the evidence), goes to
 * the work directory only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/stats_files.h"
#include "image/image.h"
#include "log.h"
#include "stats.pb-c.h"

static bool same_dir(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Write len bytes to work_dir/name through a temporary name. */
static int put_file(const char *work_dir, const char *name, const void *buf, size_t len)
{
	char tmp[4096], path[4096];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", work_dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", work_dir, name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, len) != (ssize_t)len)
		ret = -EIO;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

int stats_dump_to_work_dir(const char *images_dir, const char *work_dir)
{
	char path[4096], buf[4096];
	ssize_t n;
	int fd, ret;

	if (!work_dir || !work_dir[0] || same_dir(images_dir, work_dir))
		return 0;
	snprintf(path, sizeof(path), "%s/stats-dump", images_dir);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0 || n == sizeof(buf))
		return n < 0 ? -errno : -EFBIG;
	ret = put_file(work_dir, "stats-dump", buf, n);
	if (ret)
		pr_warn("cannot put stats-dump into the work directory %s: %s", work_dir,
			strerror(-ret));
	return ret;
}

int stats_restore_to_work_dir(const char *work_dir, uint64_t restore_us)
{
	StatsEntry se = STATS_ENTRY__INIT;
	RestoreStatsEntry rs = RESTORE_STATS_ENTRY__INIT;
	uint8_t buf[256];
	uint32_t head[2] = { IMG_SERVICE_MAGIC, 0x57093306 };	/* as stats-dump's */
	size_t len;
	int ret;

	if (!work_dir || !work_dir[0])
		return 0;
	rs.restore_time = restore_us > UINT32_MAX ? UINT32_MAX : (uint32_t)restore_us;
	se.restore = &rs;
	len = stats_entry__get_packed_size(&se);
	if (len + 12 > sizeof(buf))
		return -EFBIG;
	memcpy(buf, head, 8);
	*(uint32_t *)(buf + 8) = (uint32_t)len;
	stats_entry__pack(&se, buf + 12);
	ret = put_file(work_dir, "stats-restore", buf, len + 12);
	if (ret)
		pr_warn("cannot write stats-restore into the work directory %s: %s", work_dir,
			strerror(-ret));
	return ret;
}
