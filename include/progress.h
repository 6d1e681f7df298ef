/* A progress bar on stderr for long operations; the caller decides whether it is shown. */
#ifndef MEMDUMP_PROGRESS_H
#define MEMDUMP_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct progress {
	const char *what;
	uint64_t total, start, last_draw;
	bool enabled, shown;
};

void progress_start(struct progress *p, const char *what, uint64_t total, bool enabled);
void progress_update(struct progress *p, uint64_t done);
void progress_end(struct progress *p);

#endif
