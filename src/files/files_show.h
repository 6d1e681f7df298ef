/*
 * memdump show: the files kind's own fds (regular files, pipes, FIFOs,
 * terminals, memfds, message queues), for the table of fd kinds.
 */
#ifndef MEMDUMP_FILES_SHOW_H
#define MEMDUMP_FILES_SHOW_H

#include "files.pb-c.h"

struct dumpset;
struct fd_show;

void reg_show(const struct dumpset *ds, const FileEntry *fe, struct fd_show *s);
void pipe_show(const struct dumpset *ds, const FileEntry *fe, struct fd_show *s);
void fifo_show(const struct dumpset *ds, const FileEntry *fe, struct fd_show *s);
void tty_fd_show(const struct dumpset *ds, const FileEntry *fe, struct fd_show *s);
void memfd_show(const struct dumpset *ds, const FileEntry *fe, struct fd_show *s);
void mqueue_show(const struct dumpset *ds, const FileEntry *fe, struct fd_show *s);

#endif
