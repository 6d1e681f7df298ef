/* Fault injection points (see fault.h). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fault.h"
#include "log.h"

void fault_point(const char *point)
{
	const char *want = getenv("MEMDUMP_FAULT"), *secs = getenv("MEMDUMP_FAULT_SECS");
	struct timespec t = { secs ? atoi(secs) : 60, 0 };

	if (!want || strcmp(want, point))
		return;
	pr_warn("fault point %s: stalling (MEMDUMP_FAULT)", point);
	/* a signal ends the stall: the dump goes on to see what it asked for (SIGTERM: abort) */
	if (nanosleep(&t, &t))
		pr_warn("fault point %s: interrupted", point);
}
