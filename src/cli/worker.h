/* Run a command in a child that outlives a killed memdump long enough to clean up. */
#ifndef MEMDUMP_WORKER_H
#define MEMDUMP_WORKER_H

/* Returns the exit status for main(), or <0 (after fail()) if no worker started. */
struct options;
int run_in_worker(int (*fn)(const struct options *o), const struct options *o,
		  const char *failure);

#endif
