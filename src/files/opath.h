/*
 * O_PATH fds (opath.c): a location in the file tree, not an open file. Any
 * object with a path, a symlink itself (O_PATH|O_NOFOLLOW) included, is
 * dumped as a regular-file entry whose flags carry O_PATH (CRIU's format)
 * and opened again by its path with those flags. It has no SIGIO owner,
 * position or lock.
 */
#ifndef MEMDUMP_OPATH_H
#define MEMDUMP_OPATH_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

/* fd of process pid is an O_PATH fd (its fdinfo flags). */
bool opath_fd(pid_t pid, int fd);
/* Why an O_PATH fd (its /proc link, its stat) cannot be opened again; NULL: it can. */
const char *opath_unsupported(const char *link, const struct stat *st);

#endif
