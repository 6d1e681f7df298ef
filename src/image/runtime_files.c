/*
 * Files a container runtime writes beside the images before it asks for a
 * dump, and reads back before a restore: runc's descriptors.json (the
 * container's stdio, which it turns into inherit_fd keys). The dump lists
 * each in the inventory with its checksum, as an image, so that a restore
 * still finds nothing unlisted in the directory, and finds them unchanged.
 * Only plain regular files that cannot be taken for an image are: no
 * ".img" name (a stale image of another dump stays unlisted, and so
 * refused), no hidden or proc-PID name, no log or CRIU option record
 * (*.cropt: never listed, never read),
 * at most RUNTIME_FILES_MAX of at most RUNTIME_FILE_SIZE bytes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "image/image.h"
#include "log.h"

static bool has_suffix(const char *name, const char *suf)
{
	size_t n = strlen(name), s = strlen(suf);

	return n >= s && !strcmp(name + n - s, suf);
}

static bool candidate(int dirfd, const char *name)
{
	struct stat st;
	unsigned pid;

	if (name[0] == '.' || has_suffix(name, ".img") || has_suffix(name, ".log") ||
	    has_suffix(name, ".cropt") ||
	    img_is_subset(name, &pid) || !strcmp(name, "parent") || !strncmp(name, "stats-", 6))
		return false;
	return !fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode) &&
	       st.st_size <= RUNTIME_FILE_SIZE;
}

int img_runtime_files(int dirfd, bool (*ours)(void *arg, const char *name), void *arg,
		      struct runtime_file *out, int max)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), n = 0, ret = 0;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return fail(-errno, "cannot list the dump directory: %s", strerror(errno));
	}
	while (!ret && n < max && (de = readdir(d))) {
		struct runtime_file *f = &out[n];

		size_t len = strlen(de->d_name);

		if (len >= sizeof(f->name) || ours(arg, de->d_name) || !candidate(dirfd, de->d_name))
			continue;
		memcpy(f->name, de->d_name, len + 1);
		ret = img_sum_file(dirfd, f->name, &f->size, &f->hash);
		if (!ret) {
			pr_info("%s in the dump directory: listed in the inventory (a runtime's)",
				f->name);
			n++;
		}
	}
	closedir(d);
	return ret ? ret : n;
}
