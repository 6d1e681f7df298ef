/*
 * pidfds, dump side (pidfd.h): the process a pidfd refers to, from its
 * fdinfo ("Pid:", -1 once the process has exited and been reaped), checked
 * to be one the restore recreates with the same PID.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "ctx/file_desc.h"
#include "ctx/proc_tree.h"
#include "files/pidfd.h"
#include "image/image.h"
#include "log.h"
#include "ns/pidns.h"
#include "proc.h"

#include "files.pb-c.h"

bool pidfd_is(pid_t pid, int fd, const char *link, const struct stat *st)
{
	(void)pid, (void)fd, (void)st;
	return !strcmp(link, "anon_inode:[pidfd]");
}

/*
 * The process of pidfd fd: 0 and *pid as memdump sees it (-1: exited), *inner
 * as its innermost PID namespace does, *levels that namespace's depth below
 * memdump's (NSpid's count of values).
 */
static int pidfd_target(pid_t pid, int fd, pid_t *target, pid_t *inner, int *levels)
{
	char *buf = NULL;
	ssize_t n = proc_fdinfo(pid, fd, &buf);
	const char *p, *ns;

	if (n < 0)
		return (int)n;
	p = proc_line_after(buf, "Pid:");
	ns = proc_line_after(buf, "NSpid:");
	*target = p ? atoi(p) : 0;
	*inner = *target;
	*levels = 0;
	for (const char *c = ns; c && *c && *c != '\n'; c++)
		if ((c == ns || c[-1] == ' ' || c[-1] == '\t') && *c != ' ' && *c != '\t') {
			(*levels)++;
			*inner = atoi(c);
		}
	free(buf);
	return p ? 0 : -EIO;
}

static bool in_dump(const struct fd_policy *p, pid_t target)
{
	if (target == p->pid)
		return true;
	for (int i = 0; p->tree && i < p->tree->n; i++)
		if (p->tree->procs[i].pid == target && !tree_is_zombie(&p->tree->procs[i]))
			return true;
	return false;
}

bool pidfd_unsupported(const struct fd_policy *p, int fd, const char *link, const struct stat *st,
		       char *why, size_t len)
{
	pid_t target, inner, tgid;
	int levels;

	(void)link, (void)st;
	if (pidfd_target(p->pid, fd, &target, &inner, &levels))
		snprintf(why, len, "a pidfd whose process memdump cannot read");
	else if (target == -1)
		return false;	/* exited: given back as a pidfd of an exited process */
	else if (levels > 2 || (levels == 2 && !pidns_own(p->pid)))
		snprintf(why, len, "a pidfd of process %d, in a PID namespace below the "
			 "process's", target);
	else if ((tgid = proc_tgid(target)) > 0 && tgid != target)
		snprintf(why, len, "a pidfd of thread %d", target);
	else if (!in_dump(p, target))
		snprintf(why, len, "a pidfd of process %d, which is not dumped with it (or a zombie)",
			 target);
	else
		return false;
	return true;
}

/*
 * The image names the process as the pidfd's holder sees it (in a PID
 * namespace of the tree: its PID there), which is how the restored holder,
 * in the namespace made again, opens it (pidfd_restore.c).
 */
int pidfd_collect(struct dump_ctx *d, int fd, const char *link, struct file_desc *f)
{
	pid_t target;
	int levels;

	(void)link;
	if (pidfd_target(d->pid, fd, &target, &f->pidfd_pid, &levels))
		return fail(-EIO, "process %d: cannot read the fdinfo of pidfd %d", d->pid, fd);
	return 0;
}

int pidfd_write(struct image *files, const struct file_desc *f)
{
	FileEntry fe = FILE_ENTRY__INIT;
	PidfdEntry e = PIDFD_ENTRY__INIT;
	FownEntry fown = FOWN_ENTRY__INIT;

	e.id = f->id;
	e.ino = (uint32_t)f->st.st_ino;
	e.flags = f->flags;
	e.nspid = f->pidfd_pid;
	e.fown = &fown;
	fe.id = f->id;
	fe.type = FD_TYPES__PIDFD;
	fe.pidfd = &e;
	return img_write_msg(files, &fe.base);
}
