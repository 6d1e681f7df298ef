/* A progress bar on stderr for long dumps, when stderr is a terminal. */
#ifndef MEMDUMP_PROGRESS_H
#define MEMDUMP_PROGRESS_H

#include <stdint.h>

void progress_start(const char *what, uint64_t total);
void progress_update(uint64_t done);
void progress_end(void);

#endif
