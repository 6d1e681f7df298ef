/* Checks over the images of what a restore needs here (rstcheck.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cgroup.h"
#include "common.h"
#include "log.h"
#include "image/rstcheck.h"

int rstcheck_cgroup_path(const char *ctl, const char *path, bool strict)
{
	char mnt[256], dir[1400];
	size_t base;

	if (!strcmp(path, "/"))
		return 0;
	if (cgroup_mount_of(ctl, mnt, sizeof(mnt)))
		return fail(-ENOENT, "cgroup %s of hierarchy '%s': the hierarchy is not mounted "
			    "here, a restore can neither join nor recreate it", path, ctl);
	base = strlen(mnt);
	if ((size_t)snprintf(dir, sizeof(dir), "%s%s", mnt, path) >= sizeof(dir))
		return fail(-ENAMETOOLONG, "cgroup %s of hierarchy '%s': path too long", path, ctl);
	for (;;) {
		bool exists = !access(dir, F_OK);
		char *slash;

		if (exists && strict && strlen(dir) > base && !cgroup_own_or_above(ctl, dir + base))
			return fail(-EEXIST, "cgroup %s of hierarchy '%s' exists already: a strict "
				    "restore creates it (%s exists)", path, ctl, dir);
		if (exists && strlen(dir) == base + strlen(path))
			return 0;	/* joined as it is */
		if (exists && access(dir, W_OK))
			return fail(-errno, "cgroup %s of hierarchy '%s' cannot be created: %s is "
				    "not writable", path, ctl, dir);
		if (exists || strlen(dir) <= base)
			return 0;
		slash = strrchr(dir, '/');
		*slash = 0;
	}
}

static uint64_t nr_open(void)
{
	unsigned long long n = 1024 * 1024;
	FILE *f = fopen("/proc/sys/fs/nr_open", "re");

	if (f) {
		if (fscanf(f, "%llu", &n) != 1)
			n = 1024 * 1024;
		fclose(f);
	}
	return n;
}

static const char *limit_str(uint64_t v, char buf[32])
{
	if (v == RLIM_INFINITY)
		return "unlimited";
	snprintf(buf, 32, "%" PRIu64, v);
	return buf;
}

/*
 * The blob sets every limit as dumped. Raising a hard limit above memdump's
 * own takes CAP_SYS_RESOURCE, and RLIMIT_NOFILE above fs.nr_open is never
 * possible.
 */
int rstcheck_rlimits(const TaskRlimitsEntry *rl, bool capable)
{
	static const char *const names[] = { "CPU", "FSIZE", "DATA", "STACK", "CORE", "RSS",
		"NPROC", "NOFILE", "MEMLOCK", "AS", "LOCKS", "SIGPENDING", "MSGQUEUE", "NICE",
		"RTPRIO", "RTTIME" };
	char a[32], b[32];

	for (size_t i = 0; rl && i < rl->n_rlimits && i < ARRAY_SIZE(names); i++) {
		uint64_t max = rl->rlimits[i]->max;
		struct rlimit own;

		if (rl->rlimits[i]->cur > max)
			return fail(-EINVAL, "RLIMIT_%s in the image: soft limit above the hard one",
				    names[i]);
		if (i == RLIMIT_NOFILE && max > nr_open())
			return fail(-EPERM, "RLIMIT_NOFILE hard limit %" PRIu64 " is above this "
				    "host's fs.nr_open (%" PRIu64 ")", max, nr_open());
		if (getrlimit(i, &own) || max <= own.rlim_max || capable)
			continue;
		return fail(-EPERM, "RLIMIT_%s hard limit %s is above memdump's own (%s) and "
			    "raising it needs CAP_SYS_RESOURCE", names[i], limit_str(max, a),
			    limit_str(own.rlim_max, b));
	}
	return 0;
}
