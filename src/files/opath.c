/*
 * O_PATH fds (opath.h). What a path names is checked as for any file
 * (files.c: deleted ones as ghosts, /proc files, special filesystems); here
 * only what an O_PATH fd adds: no path to open it by.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "files/opath.h"
#include "proc.h"

bool opath_fd(pid_t pid, int fd)
{
	return proc_fd_flag(pid, fd, O_PATH);
}

const char *opath_unsupported(const char *link, const struct stat *st)
{
	(void)st;
	if (link[0] != '/')
		return "an O_PATH fd on an object with no path, which a restore cannot open";
	if (!strncmp(link, "/memfd:", 7))
		return "an O_PATH fd on a memfd, which memdump does not restore";
	return NULL;
}
