/*
 * What a target holds that memdump cannot dump, found before it is seized:
 * collected into one list (refuse_add), so that the dump fails once, naming
 * all of it, with the target untouched (dump/refuse.c runs the checks).
 */
#ifndef MEMDUMP_REFUSALS_H
#define MEMDUMP_REFUSALS_H

#include <stddef.h>

struct refusals {
	char text[8000];
	size_t len;
	int n;
};

/* Append one item ("fd 5 (eventfd)") to the list. */
void refuse_add(struct refusals *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
