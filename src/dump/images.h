/* Writing the dump's images (images.c); files.img and friends: files.h. */
#ifndef MEMDUMP_DUMP_IMAGES_H
#define MEMDUMP_DUMP_IMAGES_H

struct dump_ctx;
struct task_state;

int write_task_images(struct dump_ctx *d, const struct task_state *ts);
int write_stats(struct dump_ctx *d);
int write_inventory(struct dump_ctx *d);

#endif
