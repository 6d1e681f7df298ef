/*
 * Progress bar: shown on a terminal once an operation has run for a second,
 * redrawn at most ten times a second.
 */
#include <stdio.h>

#include "common.h"
#include "progress.h"

void progress_start(struct progress *p, const char *what, uint64_t total, bool enabled)
{
	p->what = what;
	p->total = total;
	p->start = now_us();
	p->last_draw = 0;
	p->enabled = enabled;
	p->shown = false;
}

void progress_update(struct progress *p, uint64_t done)
{
	uint64_t now, elapsed;
	int width = 40, fill;

	if (!p->enabled || !p->total)
		return;
	now = now_us();
	elapsed = now - p->start;
	if (elapsed < 1000000 || now - p->last_draw < 100000)
		return;
	p->last_draw = now;
	p->shown = true;
	fill = (int)(width * MIN(done, p->total) / p->total);
	fprintf(stderr, "\r%s [%-*.*s] %3d%% %6.0f MB/s", p->what, width, fill,
		"========================================", (int)(100 * done / p->total),
		done / (double)elapsed);
	fflush(stderr);
}

void progress_end(struct progress *p)
{
	if (p->shown)
		fputs("\r\033[K", stderr);
	p->shown = false;
}
