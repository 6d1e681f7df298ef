/*
 * The vDSO's layout ([vdso] and its data pages, [vvar], [vvar_vclock]): the
 * restore maps this kernel's vDSO where the dumped one was, as one block, so
 * a dumped layout must be the running kernel's: the same parts, in the same
 * order, at the same offsets from the first. A process that moved one part
 * away from the others (mremap) cannot be restored (src/lib/vdso_layout.c).
 */
#ifndef MEMDUMP_VDSO_LAYOUT_H
#define MEMDUMP_VDSO_LAYOUT_H

#include <stddef.h>

struct vdso_part {
	const char *name;		/* "[vdso]", "[vvar]", ... */
	unsigned long start, end;
};

/* Whether a name is one of the vDSO's parts. */
int vdso_part_name(const char *name);

/*
 * 0 if parts (in address order; none: a process without a vDSO) lay out as
 * this kernel's vDSO does; else -EINVAL with what differs in why.
 */
int vdso_layout_check(const struct vdso_part *parts, size_t n, char *why, size_t len);

#endif
