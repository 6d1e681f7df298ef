/*
 * The list of what a target holds that cannot be dumped: every check, in
 * the pipeline and in the kinds of state, adds to one list, and the dump
 * fails once naming all of it.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "ctx/refusals.h"

/* Is item in the list already (one object met by two checks, or one fd seen twice)? */
static bool listed(const struct refusals *r, const char *item)
{
	size_t n = strlen(item);

	for (const char *p = r->text; (p = strstr(p, item)); p++)
		if ((p == r->text || (p >= r->text + 2 && !strncmp(p - 2, ", ", 2))) &&
		    (p[n] == 0 || !strncmp(p + n, ", ", 2)))
			return true;
	return false;
}

void refuse_add(struct refusals *r, const char *fmt, ...)
{
	size_t room = sizeof(r->text) - r->len;
	char item[sizeof(r->text)];
	va_list ap;
	int n;

	if (room < 8)
		return;
	va_start(ap, fmt);
	vsnprintf(item, sizeof(item), fmt, ap);
	va_end(ap);
	if (listed(r, item))
		return;		/* each thing named once */
	n = snprintf(r->text + r->len, room, "%s%s", r->n ? ", " : "", item);
	r->len = MIN(r->len + (n < 0 ? 0 : (size_t)n), sizeof(r->text) - 1);
	r->n++;
}
