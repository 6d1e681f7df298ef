/* The VMAs: collected at dump (vma.c), in the restorer area at restore (vma_restore.c). */
#ifndef MEMDUMP_MEM_VMA_H
#define MEMDUMP_MEM_VMA_H

#include "ctx/dump_ctx.h"
#include "ctx/restore_ctx.h"

#ifndef MAP_DROPPABLE
#define MAP_DROPPABLE	0x08	/* Linux 6.11; not in every libc's headers */
#endif

/* vma.c */
int collect_vmas(struct dump_ctx *d);
/* Once the parasite is in: d->mlock_future, from the VmFlags of its area */
int collect_mlock_future(struct dump_ctx *d);
/* RST_MAP_*: how the blob maps v */
int vma_how(const VmaEntry *v);
/* vma_restore.c: the VMAs, their page runs and guards, the blob's fds, in the area */
int vma_area_fill(struct rst *r);

#endif
