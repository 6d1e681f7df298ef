/*
 * The vDSO's layout, compared with the running kernel's (vdso_layout.h):
 * memdump's own /proc/self/maps shows it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vdso_layout.h"

#define MAX_PARTS 8

struct own_part {
	char name[32];
	unsigned long off, len;
};

int vdso_part_name(const char *name)
{
	return !strcmp(name, "[vdso]") || !strncmp(name, "[vvar", 5);
}

static int own_layout(struct own_part *parts, int max)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	unsigned long base = 0;
	int n = 0;

	if (!f)
		return -errno;
	while (n < max && fgets(line, sizeof(line), f)) {
		unsigned long s, e;
		char name[32] = "";

		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %31s", &s, &e, name) < 2 ||
		    !vdso_part_name(name))
			continue;
		if (!n)
			base = s;
		snprintf(parts[n].name, sizeof(parts[n].name), "%s", name);
		parts[n].off = s - base;
		parts[n].len = e - s;
		n++;
	}
	fclose(f);
	return n;
}

int vdso_layout_check(const struct vdso_part *parts, size_t n, char *why, size_t len)
{
	struct own_part own[MAX_PARTS];
	int n_own = own_layout(own, MAX_PARTS);

	if (n_own < 0) {
		snprintf(why, len, "cannot read memdump's own maps");
		return n_own;
	}
	for (size_t k = 0; k < n; k++) {
		unsigned long off = parts[k].start - parts[0].start;

		if ((int)k < n_own && !strcmp(own[k].name, parts[k].name) && own[k].off == off &&
		    own[k].len == parts[k].end - parts[k].start)
			continue;
		snprintf(why, len, "its vDSO (%s at +%#lx, %#lx bytes) is not laid out as this "
			 "kernel's", parts[k].name, off, parts[k].end - parts[k].start);
		return -EINVAL;
	}
	if (n && (int)n != n_own) {
		snprintf(why, len, "its vDSO has %zu parts, this kernel's has %d", n, n_own);
		return -EINVAL;
	}
	return 0;
}
