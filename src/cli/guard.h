/*
 * The guard of a dump (guard.c): should memdump's supervisor and its worker
 * both be killed, it undoes what the dump left in the target (the parasite
 * area, a frozen cgroup, the network lock, TCP repair mode), so that the
 * target and its connections run on unharmed.
 */
#ifndef MEMDUMP_GUARD_H
#define MEMDUMP_GUARD_H

struct dump_trace;

/*
 * Start the guard of t (mapped shared, before the worker is forked): the
 * returned descriptor (close-on-exec) is held by the supervisor and the
 * worker; the guard acts once both have closed it. <0 after fail().
 */
int guard_start(struct dump_trace *t);
/* The supervisor is done with t (it reclaimed what a killed worker left). */
void guard_stop(int fd);

#endif
