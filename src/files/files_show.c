/* memdump show: path, flags and position of the files kind's own fds. */
#include <inttypes.h>
#include <stdio.h>

#include "files/fd_kinds.h"
#include "files/files_show.h"
#include "files/tty.h"
#include "image/dumpset.h"

void reg_show(const struct dumpset *ds, const FileEntry *fe, struct fd_show *s)
{
	const RemapFilePathEntry *re = dumpset_remap(ds, fe->id);

	if (re && re->has_remap_type && re->remap_type == REMAP_TYPE__PROCFS)
		snprintf(s->path, sizeof(s->path), "%s (of process %u, which exited)",
			 fe->reg->name, re->remap_id);
	else if (re)
		snprintf(s->path, sizeof(s->path), "%s (deleted, %" PRIu64 " bytes saved)",
			 fe->reg->name, fe->reg->size);
	else
		snprintf(s->path, sizeof(s->path), "%s", fe->reg->name);
	s->flags = fe->reg->flags;
	s->pos = fe->reg->pos;
	s->has_pos = true;
}

void pipe_show(const struct dumpset *ds, const FileEntry *fe, struct fd_show *s)
{
	(void)ds;
	snprintf(s->path, sizeof(s->path), "pipe:[%u]", fe->pipe->pipe_id);
	s->flags = fe->pipe->flags;
}

void fifo_show(const struct dumpset *ds, const FileEntry *fe, struct fd_show *s)
{
	const FileEntry *reg = fe->fifo->has_regf_id ? dumpset_file(ds, fe->fifo->regf_id) : NULL;
	const char *p = dumpset_file_path(reg);

	snprintf(s->path, sizeof(s->path), "%s%s (fifo:[%u])", p ? p : "?",
		 reg && dumpset_remap(ds, reg->id) ? " (deleted)" : "", fe->fifo->pipe_id);
	if (reg && reg->reg)
		s->flags = reg->reg->flags;
}

void tty_fd_show(const struct dumpset *ds, const FileEntry *fe, struct fd_show *s)
{
	(void)ds;
	snprintf(s->path, sizeof(s->path), "%s%s", fe->tty->name ? fe->tty->name : "tty",
		 !fe->tty->tty_info_id ? " (the job's terminal)" :
		 TTY_IS_DEV_INFO_ID(fe->tty->tty_info_id) ? " (terminal device)" :
		 fe->tty->tty_info_id % 2 ? " (pty slave)" : " (pty master)");
	s->flags = fe->tty->flags;
}

void memfd_show(const struct dumpset *ds, const FileEntry *fe, struct fd_show *s)
{
	const MemfdInodeEntry *m = dumpset_memfd(ds, fe->memfd->inode_id);

	snprintf(s->path, sizeof(s->path), "memfd:%s (shmem %u)", m ? m->name : "?",
		 fe->memfd->inode_id);
	s->flags = fe->memfd->flags;
	s->pos = fe->memfd->pos;
	s->has_pos = true;
}

void mqueue_show(const struct dumpset *ds, const FileEntry *fe, struct fd_show *s)
{
	(void)ds;
	snprintf(s->path, sizeof(s->path), "/%s (POSIX message queue)", fe->mqf->name);
	s->flags = fe->mqf->flags;
}
