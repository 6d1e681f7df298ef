/* The restore dry run before a killing dump kills (dryrun.c). */
#ifndef MEMDUMP_DUMP_DRYRUN_H
#define MEMDUMP_DUMP_DRYRUN_H

#include "dump/dump.h"

/* 0, or the first object of d's written images a restore here could not recreate. */
int dump_dry_run(struct dump_ctx *d);
/*
 * The root of a tree dump: 0, or the first process whose session or group a
 * restore could not rebuild (task/sessions.c, read from its pstree.img). Every
 * dump of a tree, left running or not.
 */
int dump_check_sessions(struct dump_ctx *d);

#endif
