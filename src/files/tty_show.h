/* memdump show: the pty pairs a set saved (tty-info.img, tty-data.img). */
#ifndef MEMDUMP_SHOW_TTY_H
#define MEMDUMP_SHOW_TTY_H

#include "image/dumpset.h"

/* One line per pty end on stdout: termios, window size, modes, queued bytes. */
void show_ttys(const struct dumpset *ds);

#endif
