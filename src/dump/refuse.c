/*
 * Refusals found from /proc before the target is seized (and again once it
 * is frozen, when it can no longer fork): each reason is collected, and the
 * dump fails once with all of them, so the user sees everything at once.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"
#include "dump/refuse.h"
#include "log.h"
#include "proc.h"

struct refusals {
	char text[2048];
	size_t len;
	int nr;
};

static void refuse(struct refusals *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (r->len >= sizeof(r->text) - 8)
		return;
	if (r->nr++)
		r->len += snprintf(r->text + r->len, sizeof(r->text) - r->len, "; ");
	va_start(ap, fmt);
	n = vsnprintf(r->text + r->len, sizeof(r->text) - r->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		r->len = MIN(r->len + n, sizeof(r->text) - 1);
}

/* PID 1 of any PID namespace: the last NSpid field is 1. */
static void check_init(pid_t pid, struct refusals *r)
{
	char nspid[128];
	const char *last;

	if (pid == 1) {
		refuse(r, "it is PID 1, the init of this system");
		return;
	}
	if (proc_status_field(pid, "NSpid", nspid, sizeof(nspid)))
		return;
	last = strrchr(nspid, '\t') ? strrchr(nspid, '\t') + 1 : nspid;
	if (atoi(last) == 1)
		refuse(r, "it is the init (PID 1) of its PID namespace");
}

static void child_comm(pid_t child, char *comm, size_t len)
{
	if (proc_comm(child, comm, len))
		snprintf(comm, len, "?");
}

/* Children of every thread (/proc/PID/task/TID/children), the first few by name. */
static void check_children(pid_t pid, struct refusals *r)
{
	pid_t *tids = NULL;
	int nr = proc_tasks(pid, &tids), count = 0;
	char names[256] = "", comm[32];
	size_t len = 0;

	for (int i = 0; i < nr; i++) {
		char path[64], *list = NULL, *p, *end;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", pid, tids[i]);
		if (proc_read_file(path, &list) < 0)
			continue;
		for (p = list; *p; p = end) {
			long child = strtol(p, &end, 10);

			if (end == p)
				break;
			if (count++ < 3 && len < sizeof(names)) {
				child_comm(child, comm, sizeof(comm));
				len += snprintf(names + len, sizeof(names) - len, "%s%ld (%s)",
						len ? ", " : "", child, comm);
			}
		}
		free(list);
	}
	free(tids);
	if (count)
		refuse(r, "child process%s %s%s: process trees are not supported yet",
		       count > 1 ? "es" : "", names, count > 3 ? " and more" : "");
}

/* Another live process in the target's group or session keeps that ID in use. */
static void check_group_holders(pid_t pid, struct refusals *r)
{
	DIR *dir = opendir("/proc");
	struct dirent *de;
	struct proc_stat st;
	int shown = 0;

	if (!dir)
		return;
	while ((de = readdir(dir)) && shown < 3) {
		pid_t other = atoi(de->d_name);

		if (other <= 0 || other == pid || proc_read_stat(other, &st))
			continue;
		if (st.state == 'Z' || (st.pgid != pid && st.sid != pid))
			continue;
		refuse(r, "process %d (%s) is in its %s, which restore could not recreate", other,
		       st.comm, st.sid == pid ? "session" : "process group");
		shown++;
	}
	closedir(dir);
}

static bool same_ns(pid_t pid, const char *ns)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, ns);
	if (stat(path, &a))
		return true;	/* the kernel has no such namespace, or it is gone */
	snprintf(path, sizeof(path), "/proc/self/ns/%s", ns);
	if (stat(path, &b))
		return true;
	return a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

static void check_namespaces(pid_t pid, struct refusals *r)
{
	static const char *const kinds[] = { "pid", "mnt", "net", "uts", "ipc", "cgroup", "user",
					     "time" };
	char names[128] = "";
	size_t len = 0;

	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (!same_ns(pid, kinds[i]))
			len += snprintf(names + len, sizeof(names) - len, "%s%s", len ? ", " : "",
					kinds[i]);
	if (len)
		refuse(r, "it is in namespaces of its own (%s): namespaces are not supported yet",
		       names);
}

int refuse_check(pid_t pid)
{
	struct refusals r = { .len = 0 };
	char comm[32] = "?";

	check_init(pid, &r);
	check_namespaces(pid, &r);
	check_children(pid, &r);
	check_group_holders(pid, &r);
	if (!r.nr)
		return 0;
	proc_comm(pid, comm, sizeof(comm));
	return fail(-EOPNOTSUPP, "process %d (%s) cannot be dumped: %s", pid, comm, r.text);
}
