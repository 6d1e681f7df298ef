/* Restore: the VMAs in the restorer area (vma_restore.c). */
#ifndef MEMDUMP_MEM_VMA_H
#define MEMDUMP_MEM_VMA_H

#include "ctx/restore_ctx.h"
/* RST_MAP_*: how the blob maps v */
int vma_how(const VmaEntry *v);
/* vma_restore.c: the VMAs, their page runs and guards, the blob's fds, in the area */
int vma_area_fill(struct rst *r);

#endif
