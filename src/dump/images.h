/* Writing the dump's images (images.c); files.img and friends: files.h. */
#ifndef MEMDUMP_DUMP_IMAGES_H
#define MEMDUMP_DUMP_IMAGES_H

#include <stdint.h>

struct dump_ctx;
struct task_state;

int write_task_images(struct dump_ctx *d, const struct task_state *ts);
/* cr as a core's creds_entry; caps: its capability words, as long as c is used. */
struct CredsEntry;
struct creds;
void fill_creds(struct CredsEntry *c, const struct creds *cr, uint32_t caps[5][2]);
int write_stats(struct dump_ctx *d);
int write_inventory(struct dump_ctx *d);
/*
 * A killing dump's --compress once the process is gone (compress_late): its
 * raw set, inventory and all, replaced by the compressed one. A failure
 * before the swap keeps the raw set (a warning, 0); one in the swap leaves
 * no inventory: <0 after fail().
 */
int dump_compress_late(struct dump_ctx *d);

#endif
