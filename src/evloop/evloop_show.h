/* memdump show: one line about an event-loop file (eventfd, timerfd, signalfd, epoll). */
#ifndef MEMDUMP_SHOW_EVLOOP_H
#define MEMDUMP_SHOW_EVLOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "files.pb-c.h"
#include "mm.pb-c.h"

/* Describe fe into buf and set *flags; false when fe is not of these kinds. */
bool show_evloop(const FileEntry *fe, char *buf, size_t len, uint32_t *flags);

/* The process's own userfaultfd (mm_entry.uffd) into buf: fd, flags, ranges, runs. */
void show_uffd(const UffdEntry *u, char *buf, size_t len);
/* An io_uring ring (mm_entry.iourings): fd, size, requests done, registrations, mappings. */
void show_iouring(const IouringEntry *e, char *buf, size_t len);

#endif
