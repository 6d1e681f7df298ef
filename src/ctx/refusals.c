/*
 * The list of what a target holds that cannot be dumped: every check, in
 * the pipeline and in the kinds of state, adds to one list, and the dump
 * fails once naming all of it.
 */
#include <stdarg.h>
#include <stdio.h>

#include "common.h"
#include "ctx/refusals.h"

void refuse_add(struct refusals *r, const char *fmt, ...)
{
	size_t room = sizeof(r->text) - r->len;
	va_list ap;
	int n;

	if (room < 8)
		return;
	n = snprintf(r->text + r->len, room, "%s", r->n ? ", " : "");
	va_start(ap, fmt);
	n += vsnprintf(r->text + r->len + n, room - n, fmt, ap);
	va_end(ap);
	r->len = MIN(r->len + n, sizeof(r->text) - 1);
	r->n++;
}
