/*
 * How much of pages-1.img goes through the page cache (--pages-write auto).
 *
 * Splicing into the page cache copies the pages at memory speed as long as
 * the kernel does not throttle the writer, that is while the dirty pages
 * stay under the dirty limit (vm.dirty_bytes, or vm.dirty_ratio of the
 * memory that can hold them, which MemAvailable approximates); past it
 * the copy runs at the disk's rate, and O_DIRECT, which moves the pages to
 * the disk without the copy, is then the faster. So: all of it through the
 * page cache when the image fits under the limit with what is already dirty
 * and leaves half of the available memory free. When it does not, its head
 * still goes through the cache, as much as stays under the background
 * threshold (vm.dirty_background_bytes or _ratio: the flusher leaves it
 * alone meanwhile, so the disk is the O_DIRECT tail's alone), at memory
 * speed, and the rest with O_DIRECT: the target waits for the disk with
 * the tail only. The image is synced once the target runs again or is gone
 * (dump.c) either way.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "log.h"
#include "proc.h"

#define CACHE_ALIGN	(2UL << 20)	/* the switch to O_DIRECT: on a 2 MiB boundary */

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

/* Dirty pages the flusher leaves alone: what is left under the background threshold. */
static uint64_t background_room(uint64_t avail, uint64_t dirty)
{
	uint64_t bg = sysctl_u64("/proc/sys/vm/dirty_background_bytes");

	if (!bg)
		bg = avail / 100 * sysctl_u64("/proc/sys/vm/dirty_background_ratio");
	bg = MIN(bg, avail / 2);
	return bg > dirty ? (bg - dirty) & ~(CACHE_ALIGN - 1) : 0;
}

/* MEMDUMP_PAGES_CACHE_MAX=BYTES: at most that much through the cache (tests: the switch). */
static uint64_t test_cap(uint64_t room)
{
	const char *v = getenv("MEMDUMP_PAGES_CACHE_MAX");

	return v ? MIN(room, strtoull(v, NULL, 0) & ~(PAGE_SIZE - 1)) : room;
}

uint64_t pages_background_room(void)
{
	char *mi = NULL;
	uint64_t room = 0;

	if (proc_read_file("/proc/meminfo", &mi) > 0)
		room = background_room(meminfo_bytes(mi, "MemAvailable:"),
				       meminfo_bytes(mi, "Dirty:") + meminfo_bytes(mi, "Writeback:"));
	free(mi);
	return room;
}

uint64_t pages_cache_room(uint64_t bytes, uint64_t own_dirty)
{
	char *mi = NULL;
	uint64_t avail, dirty, limit, room;
	bool fit;

	if (proc_read_file("/proc/meminfo", &mi) <= 0) {
		free(mi);
		return 0;
	}
	avail = meminfo_bytes(mi, "MemAvailable:");
	dirty = meminfo_bytes(mi, "Dirty:") + meminfo_bytes(mi, "Writeback:");
	dirty -= MIN(dirty, own_dirty);	/* overwritten, not added */
	free(mi);
	limit = sysctl_u64("/proc/sys/vm/dirty_bytes");
	if (!limit)
		limit = avail / 100 * sysctl_u64("/proc/sys/vm/dirty_ratio");
	fit = dirty + bytes <= limit && bytes <= avail / 2;
	room = test_cap(fit ? bytes : MIN(background_room(avail, dirty), bytes));
	pr_debug("pages-1.img: %" PRIu64 " MiB, dirty limit %" PRIu64 " MiB, %" PRIu64
		 " MiB dirty, %" PRIu64 " MiB available: %s, %" PRIu64 " MiB of it", bytes >> 20,
		 limit >> 20, dirty >> 20, avail >> 20, fit ? "page cache" : "page cache then O_DIRECT",
		 room >> 20);
	return room;
}
