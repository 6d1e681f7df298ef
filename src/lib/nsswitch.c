/* Entering a namespace for a while and coming back (include/nsswitch.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "nsswitch.h"

const struct ns_kind ns_kinds[] = {
	{ "uts", CLONE_NEWUTS },
	{ "ipc", CLONE_NEWIPC },
	{ "net", CLONE_NEWNET },
};
const int nr_ns_kinds = sizeof(ns_kinds) / sizeof(ns_kinds[0]);

const struct ns_kind *ns_kind_by_name(const char *name)
{
	for (int i = 0; i < nr_ns_kinds; i++)
		if (!strcmp(ns_kinds[i].name, name))
			return &ns_kinds[i];
	return NULL;
}

unsigned long ns_inode(pid_t pid, const char *name)
{
	char path[64];
	struct stat st;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, name);
	else
		snprintf(path, sizeof(path), "/proc/thread-self/ns/%s", name);
	return stat(path, &st) ? 0 : (unsigned long)st.st_ino;
}

/*
 * memdump's own namespaces, as they were before any thread entered another:
 * read on the first question, which every entering path asks first. A fact
 * about the process, like the logger, not pipeline state.
 */
static unsigned long home[8];

static unsigned long home_inode(const struct ns_kind *k)
{
	int i = (int)(k - ns_kinds);

	if (i < 0 || i >= nr_ns_kinds)
		return ns_inode(0, k->name);	/* a kind not entered (cgroup) */
	if (!home[i])
		for (int j = 0; j < nr_ns_kinds; j++)
			home[j] = ns_inode(0, ns_kinds[j].name);
	return home[i];
}

unsigned long ns_home_inode(const struct ns_kind *k)
{
	return home_inode(k);
}

bool ns_is_own(pid_t pid, const struct ns_kind *k)
{
	unsigned long a = ns_inode(pid, k->name);

	return a && a != home_inode(k);
}

int ns_enter_fd(int fd, const struct ns_kind *k, int *back)
{
	char self[64];

	home_inode(k);	/* known before this thread leaves home */
	snprintf(self, sizeof(self), "/proc/thread-self/ns/%s", k->name);
	*back = open(self, O_RDONLY | O_CLOEXEC);
	if (*back < 0)
		return fail(-errno, "cannot open %s: %s", self, strerror(errno));
	if (setns(fd, k->flag) < 0) {
		int err = -errno;

		close(*back);
		*back = -1;
		return fail(err, "cannot enter the %s namespace: %s", k->name, strerror(-err));
	}
	return 0;
}

int ns_enter_pid(pid_t pid, const struct ns_kind *k, int *back)
{
	char path[64];
	int fd, ret;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, k->name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(-errno, "cannot open %s: %s", path, strerror(errno));
	ret = ns_enter_fd(fd, k, back);
	close(fd);
	return ret;
}

void ns_return(int back, const struct ns_kind *k)
{
	if (back < 0)
		return;
	if (setns(back, k->flag) < 0)
		pr_err("cannot return to memdump's %s namespace: %s\n", k->name, strerror(errno));
	close(back);
}
