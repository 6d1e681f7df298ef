/* The restore dry run before a killing dump kills (dryrun.c). */
#ifndef MEMDUMP_DUMP_DRYRUN_H
#define MEMDUMP_DUMP_DRYRUN_H

#include "dump/dump.h"

/* 0, or the first object of d's written images a restore here could not recreate. */
int dump_dry_run(struct dump_ctx *d);

#endif
