/*
 * A dump into a directory that already holds one, as runtimes ask (podman
 * reuses its checkpoint directory, CRIU overwrites): the old set is taken
 * apart before anything new is written. inventory.img goes first, so that
 * from then on the directory never holds a set that looks complete; then
 * every file a dump writes (images, stats, the parent link, a tree's
 * proc-PID subsets). Nothing else is touched: a runtime's own files
 * (descriptors.json) and logs stay.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "image/image.h"
#include "log.h"

static bool ends_with(const char *name, const char *suf)
{
	size_t n = strlen(name), s = strlen(suf);

	return n >= s && !strcmp(name + n - s, suf);
}

static bool set_file(const char *name)
{
	return ends_with(name, ".img") || !strncmp(name, "stats-", 6) || !strcmp(name, "parent");
}

static int clear_dir(int dirfd, int depth);

static int remove_entry(int dirfd, const char *name, int depth)
{
	unsigned pid;

	if (depth == 0 && img_is_subset(name, &pid)) {
		int sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int ret = sub < 0 ? -errno : clear_dir(sub, depth + 1);

		if (sub >= 0)
			close(sub);
		if (!ret && unlinkat(dirfd, name, AT_REMOVEDIR) && errno != ENOTEMPTY)
			ret = -errno;
		return ret;
	}
	if (set_file(name) && unlinkat(dirfd, name, 0) && errno != ENOENT)
		return -errno;
	return 0;
}

static int clear_dir(int dirfd, int depth)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret = 0;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while (!ret && (de = readdir(d)))
		if (de->d_name[0] != '.')
			ret = remove_entry(dirfd, de->d_name, depth);
	closedir(d);
	return ret;
}

int img_replace_set(int dirfd, const char *dir)
{
	int ret = 0;

	if (unlinkat(dirfd, "inventory.img", 0) && errno != ENOENT)
		ret = -errno;
	if (!ret)
		ret = clear_dir(dirfd, 0);
	if (ret)
		return fail(ret, "cannot remove the dump directory %s already holds: %s", dir,
			    strerror(-ret));
	pr_info("the dump %s held is removed: a new one replaces it", dir);
	return 0;
}
