/*
 * Open namespace files, dump side (nsfile.h). The fd's link names the
 * namespace ("net:[4026531840]"); it is the process's own when its inode is
 * the one /proc/PID/ns/NAME shows.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "ctx/file_desc.h"
#include "image/image.h"
#include "ns/nsfile.h"
#include "nsswitch.h"

static const struct { const char *name; uint32_t flag; } ns_names[] = {
	{ "net", CLONE_NEWNET }, { "uts", CLONE_NEWUTS }, { "ipc", CLONE_NEWIPC },
	{ "mnt", CLONE_NEWNS }, { "pid", CLONE_NEWPID }, { "cgroup", CLONE_NEWCGROUP },
	{ "user", CLONE_NEWUSER }, { "time", CLONE_NEWTIME },
};

/* The namespace kind of link "NAME:[INODE]" (its index) and its inode; -1: not one. */
static int parse_link(const char *link, unsigned long *ino)
{
	for (size_t i = 0; i < ARRAY_SIZE(ns_names); i++) {
		size_t n = strlen(ns_names[i].name);

		if (!strncmp(link, ns_names[i].name, n) &&
		    sscanf(link + n, ":[%lu]", ino) == 1)
			return (int)i;
	}
	return -1;
}

const char *nsfile_name(uint32_t cflag)
{
	for (size_t i = 0; i < ARRAY_SIZE(ns_names); i++)
		if (ns_names[i].flag == cflag)
			return ns_names[i].name;
	return NULL;
}

bool nsfile_is(pid_t pid, int fd, const char *link, const struct stat *st)
{
	unsigned long ino;

	(void)pid, (void)fd, (void)st;
	return parse_link(link, &ino) >= 0;
}

bool nsfile_unsupported(const struct fd_policy *p, int fd, const char *link,
			const struct stat *st, char *why, size_t len)
{
	unsigned long ino = 0;
	int k = parse_link(link, &ino);

	(void)fd, (void)st;
	if (k >= 0 && ino == ns_inode(p->pid, ns_names[k].name))
		return false;
	snprintf(why, len, "a file of a %s namespace the process is not in, which memdump does "
		 "not restore", k >= 0 ? ns_names[k].name : "?");
	return true;
}

int nsfile_collect(struct dump_ctx *d, int fd, const char *link, struct file_desc *f)
{
	unsigned long ino;
	int k = parse_link(link, &ino);

	(void)d, (void)fd;
	f->ns_cflag = ns_names[k].flag;
	return 0;
}

int nsfile_write(struct image *files, const struct file_desc *f)
{
	FileEntry fe = FILE_ENTRY__INIT;
	NsFileEntry nsf = NS_FILE_ENTRY__INIT;

	fe.id = f->id;
	fe.type = FD_TYPES__NS;
	nsf.id = f->id;
	nsf.ns_id = 1;		/* the process's own (ns.c's one namespace of a kind) */
	nsf.ns_cflag = f->ns_cflag;
	nsf.flags = f->flags;
	fe.nsf = &nsf;
	return img_write_msg(files, &fe.base);
}
