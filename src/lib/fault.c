/* Fault injection points (see fault.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fault.h"
#include "log.h"

bool fault_wanted(const char *point)
{
	const char *want = getenv("MEMDUMP_FAULT");

	return want && !strcmp(want, point);
}

bool fault_fails(void)
{
	const char *f = getenv("MEMDUMP_FAULT_FAIL");

	return f && !strcmp(f, "1");
}

bool fault_stall(void)
{
	const char *secs = getenv("MEMDUMP_FAULT_SECS");
	struct timespec t = { secs ? atoi(secs) : 60, 0 };

	return nanosleep(&t, &t) == 0;
}

void fault_point(const char *point)
{
	if (!fault_wanted(point))
		return;
	pr_warn("fault point %s: stalling (MEMDUMP_FAULT)", point);
	/* a signal ends the stall: the dump goes on to see what it asked for (SIGTERM: abort) */
	if (!fault_stall())
		pr_warn("fault point %s: interrupted", point);
}

int fault_step(const char *point)
{
	if (!fault_wanted(point))
		return 0;
	if (fault_fails())
		return fail(-EIO, "fault injected at %s (MEMDUMP_FAULT_FAIL)", point);
	fault_point(point);
	return 0;
}
