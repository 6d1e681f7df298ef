/* Checking an image set against its inventory (see verify.c). */
#ifndef MEMDUMP_VERIFY_H
#define MEMDUMP_VERIFY_H

#include <stddef.h>

#include "inventory.pb-c.h"

/* Every listed image present with its size and checksum, none unlisted. */
int imgset_verify(int dirfd, const InventoryEntry *inv);
/* s with non-printable bytes and backslashes as \xNN, for error lines. */
void img_escape(const char *s, char *out, size_t len);

#endif
