/* memdump show: one line about a socket (UNIX, TCP, UDP). */
#ifndef MEMDUMP_SHOW_SOCKETS_H
#define MEMDUMP_SHOW_SOCKETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "files.pb-c.h"

/* Describe fe into buf and set *flags; false when fe is no socket. */
bool show_socket(const FileEntry *fe, char *buf, size_t len, uint32_t *flags);

#endif
