/*
 * mountinfo lines: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - TYPE SOURCE SUPER
 * with spaces, tabs, newlines and backslashes in paths escaped as \ooo.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <linux/mount.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mountinfo.h"
#include "proc.h"

/* A field, its octal escapes undone, into a new string. */
static char *unescape(const char *s, size_t len)
{
	char *out = malloc(len + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\\' && i + 3 < len + 1 && s[i + 1] >= '0' && s[i + 1] <= '3') {
			*o++ = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 3;
		} else {
			*o++ = s[i];
		}
	}
	*o = 0;
	return out;
}

/* The next space-separated field of *p. */
static char *field(char **p)
{
	char *s = *p, *e;

	while (*s == ' ')
		s++;
	e = s;
	while (*e && *e != ' ')
		e++;
	*p = *e ? e + 1 : e;
	return unescape(s, (size_t)(e - s));
}

static unsigned long flags_of(const char *opts)
{
	static const struct { const char *name; unsigned long flag; } names[] = {
		{ "ro", MS_RDONLY }, { "nosuid", MS_NOSUID }, { "nodev", MS_NODEV },
		{ "noexec", MS_NOEXEC }, { "noatime", MS_NOATIME },
		{ "nodiratime", MS_NODIRATIME }, { "relatime", MS_RELATIME },
		{ "strictatime", MS_STRICTATIME }, { "nosymfollow", MS_NOSYMFOLLOW } };
	unsigned long f = 0;
	char *copy = strdup(opts), *save = NULL;

	for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save))
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcmp(t, names[i].name))
				f |= names[i].flag;
	free(copy);
	return f;
}

static int parse_line(char *line, struct mount *m)
{
	char *p = line, *f;
	bool unbindable = false;

	memset(m, 0, sizeof(*m));
	if (sscanf(p, "%d %d %u:%u", &m->id, &m->parent, &m->major, &m->minor) != 4)
		return -EINVAL;
	for (int i = 0; i < 3; i++)
		free(field(&p));
	m->root = field(&p);
	m->mountpoint = field(&p);
	m->opts = field(&p);
	while ((f = field(&p)) && *f && strcmp(f, "-")) {
		sscanf(f, "shared:%d", &m->shared);
		sscanf(f, "master:%d", &m->master);
		unbindable |= !strcmp(f, "unbindable");
		free(f);
	}
	free(f);
	m->fstype = field(&p);
	m->source = field(&p);
	m->super = field(&p);
	if (!m->root || !m->mountpoint || !m->opts || !m->fstype || !m->source || !m->super)
		return -ENOMEM;
	m->flags = flags_of(m->opts) | (unbindable ? MS_UNBINDABLE : 0);
	return 0;
}

static void mount_free(struct mount *m)
{
	free(m->root);
	free(m->mountpoint);
	free(m->opts);
	free(m->fstype);
	free(m->source);
	free(m->super);
}

int mounts_read(const char *path, struct mounts *out)
{
	return mounts_read_at(AT_FDCWD, path, out);
}

int mounts_read_at(int dirfd, const char *path, struct mounts *out)
{
	char *buf = NULL, *line, *save = NULL;
	int ret = 0;

	ssize_t len;

	*out = (struct mounts){ 0 };
	len = proc_read_file_at(dirfd, path, &buf);
	if (len < 0)
		return (int)len;
	for (line = strtok_r(buf, "\n", &save); line && !ret; line = strtok_r(NULL, "\n", &save)) {
		struct mount *n = realloc(out->m, (out->n + 1) * sizeof(*n));

		if (!n) {
			ret = -ENOMEM;
			break;
		}
		out->m = n;
		ret = parse_line(line, &out->m[out->n]);
		out->n++;
	}
	free(buf);
	if (ret)
		mounts_free(out);
	return ret;
}

void mounts_free(struct mounts *ms)
{
	for (size_t i = 0; i < ms->n; i++)
		mount_free(&ms->m[i]);
	free(ms->m);
	*ms = (struct mounts){ 0 };
}

bool mount_same(const struct mount *a, const struct mount *b)
{
	return a->major == b->major && a->minor == b->minor && !strcmp(a->root, b->root) &&
	       !strcmp(a->mountpoint, b->mountpoint) && !strcmp(a->fstype, b->fstype) &&
	       !strcmp(a->source, b->source);
}

int mount_rw_clone(const char *dir)
{
	struct mount_attr a = { .attr_clr = MOUNT_ATTR_RDONLY };
	int fd = (int)syscall(SYS_open_tree, AT_FDCWD, dir, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	struct statvfs vfs;
	int err = 0;

	if (fd < 0)
		return -errno;
	if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &a, sizeof(a)) || fstatvfs(fd, &vfs))
		err = -errno;
	else if (vfs.f_flag & ST_RDONLY)	/* the superblock's own flag */
		err = -EROFS;
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

int mount_rw_remove(const char *path)
{
	char dir[PATH_MAX], *slash;
	int fd, ret;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || !slash[1])
		return -EINVAL;
	*slash = 0;
	fd = mount_rw_clone(dir[0] ? dir : "/");
	if (fd < 0)
		return fd;
	ret = unlinkat(fd, slash + 1, 0);
	if (ret && errno == EISDIR)
		ret = unlinkat(fd, slash + 1, AT_REMOVEDIR);
	ret = ret ? -errno : 0;
	close(fd);
	return ret;
}
