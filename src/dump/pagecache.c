/*
 * Whether pages-1.img may go through the page cache (--pages-write auto).
 *
 * Splicing into the page cache copies the pages at memory speed as long as
 * the kernel does not throttle the writer, that is while the dirty pages
 * stay under the dirty limit (vm.dirty_bytes, or vm.dirty_ratio of the
 * memory that can hold them, which MemAvailable approximates); past it
 * the copy runs at the disk's rate, and O_DIRECT, which moves the pages to
 * the disk without the copy, is then the faster. So: the page cache when
 * the image fits under the limit with what is already dirty and leaves half
 * of the available memory free, O_DIRECT otherwise. The image is synced
 * once the target runs again or is gone (dump.c) either way.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "dump/dump.h"
#include "log.h"
#include "proc.h"

/* "Key:   N kB" of /proc/meminfo, in bytes; 0 when absent. */
static uint64_t meminfo_bytes(const char *text, const char *key)
{
	const char *v = proc_line_after(text, key);

	return v ? strtoull(v, NULL, 10) << 10 : 0;
}

static uint64_t sysctl_u64(const char *path)
{
	char *text = NULL;
	uint64_t v = 0;

	if (proc_read_file(path, &text) > 0)
		v = strtoull(text, NULL, 10);
	free(text);
	return v;
}

bool pages_fit_cache(uint64_t bytes)
{
	char *mi = NULL;
	uint64_t avail, dirty, limit;
	bool fit;

	if (proc_read_file("/proc/meminfo", &mi) <= 0) {
		free(mi);
		return false;
	}
	avail = meminfo_bytes(mi, "MemAvailable:");
	dirty = meminfo_bytes(mi, "Dirty:") + meminfo_bytes(mi, "Writeback:");
	free(mi);
	limit = sysctl_u64("/proc/sys/vm/dirty_bytes");
	if (!limit)
		limit = avail / 100 * sysctl_u64("/proc/sys/vm/dirty_ratio");
	fit = dirty + bytes <= limit && bytes <= avail / 2;
	pr_debug("pages-1.img: %" PRIu64 " MiB, dirty limit %" PRIu64 " MiB, %" PRIu64
		 " MiB dirty, %" PRIu64 " MiB available: %s", bytes >> 20, limit >> 20, dirty >> 20,
		 avail >> 20, fit ? "page cache" : "O_DIRECT");
	return fit;
}
