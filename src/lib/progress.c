/*
 * Progress bar: shown on a terminal once an operation has run for a second,
 * redrawn at most ten times a second.
 */
#include <stdio.h>

#include "common.h"
#include "cli/options.h"
#include "progress.h"

static struct {
	const char *what;
	uint64_t total, start, last_draw;
	bool shown;
} bar;

void progress_start(const char *what, uint64_t total)
{
	bar.what = what;
	bar.total = total;
	bar.start = now_us();
	bar.last_draw = 0;
	bar.shown = false;
}

void progress_update(uint64_t done)
{
	uint64_t now, elapsed;
	int width = 40, fill;

	if (!opts.progress || !bar.total)
		return;
	now = now_us();
	elapsed = now - bar.start;
	if (elapsed < 1000000 || now - bar.last_draw < 100000)
		return;
	bar.last_draw = now;
	bar.shown = true;
	fill = (int)(width * MIN(done, bar.total) / bar.total);
	fprintf(stderr, "\r%s [%-*.*s] %3d%% %6.0f MB/s", bar.what, width, fill,
		"========================================", (int)(100 * done / bar.total),
		done / (double)elapsed);
	fflush(stderr);
}

void progress_end(void)
{
	if (bar.shown)
		fputs("\r\033[K", stderr);
	bar.shown = false;
}
