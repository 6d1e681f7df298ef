/* memdump show: the namespaces a set saved (UTS host name, IPC objects). */
#ifndef MEMDUMP_SHOW_NS_H
#define MEMDUMP_SHOW_NS_H

#include "image/dumpset.h"

/* One line per saved namespace on stdout; nothing for a set without any. */
void show_namespaces(const struct dumpset *ds);

#endif
