/*
 * Files in flight (SCM_RIGHTS) of the messages queued on UNIX sockets
 * (sk-queues.img, scm entries naming file ids): sk_scm_descs() adds their
 * descriptions to those memdump opens (open_fds(): a file only in flight has
 * no fd of the process), and sk_scm_control() attaches memdump's fds of them,
 * in the dumped order, to the message when the forked child sends it again
 * (sk_queue_restore.c). Once the child's fds move, memdump's copies are
 * closed: the queue holds the only reference, as it did.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"
#include "image/image.h"
#include "log.h"
#include "ctx/restore_ctx.h"

#include "sk-packet.pb-c.h"
#include "unix/sk_unix.h"

/* The files of e to open: those not yet among r->descs (room: one per files.img entry). */
static int add_rights(struct rst *r, const SkPacketEntry *e)
{
	for (size_t s = 0; s < e->n_scm; s++) {
		const ScmEntry *scm = e->scm[s];

		if (scm->type != SCM_RIGHTS)
			return fail(-EOPNOTSUPP, "sk-queues.img: a message for socket %u carries "
				    "control data of type %u, which memdump does not restore",
				    e->id_for, scm->type);
		for (size_t k = 0; k < scm->n_rights; k++) {
			uint32_t id = scm->rights[k];

			if (!rst_file(r, id))
				return fail(-EIO, "sk-queues.img: a message for socket %u carries "
					    "file %u, which files.img does not have", e->id_for, id);
			if (rst_desc(r, id) || r->nr_descs >= r->ds.nr_files)
				continue;
			r->descs[r->nr_descs].id = id;
			r->descs[r->nr_descs++].fd = -1;
		}
	}
	return 0;
}

/* Is e for a socket this process opens (not a copy another process of the tree refills)? */
static bool ours(struct rst *r, const SkPacketEntry *e)
{
	return e->n_scm && rst_desc(r, e->id_for);
}

int sk_scm_descs(struct rst *r)
{
	struct image *img;
	SkPacketEntry *e;
	uint8_t *skip = NULL;
	int ret;

	ret = sk_queues_open(r, &img);
	if (ret <= 0)
		return ret;
	while ((ret = img_read_msg(img, &sk_packet_entry__descriptor, (void **)&e)) == 1) {
		uint8_t *b = e->length <= (64u << 20) ? realloc(skip, e->length ?: 1) : NULL;

		ret = !b ? fail(-EIO, "sk-queues.img: a message of %u bytes", e->length) :
		      img_read_raw(img, b, e->length);
		skip = b ?: skip;
		if (!ret && ours(r, e))
			ret = add_rights(r, e);
		img_free(&sk_packet_entry__descriptor, e);
		if (ret)
			break;
	}
	free(skip);
	img_abort(img);
	return ret < 0 ? ret : 0;
}

int sk_scm_control(struct rst *r, const SkPacketEntry *e, struct msghdr *m, char *ctl,
		   size_t len)
{
	size_t used = m->msg_control ? m->msg_controllen : 0, n = 0, at = 0;
	struct cmsghdr *c;

	for (size_t s = 0; s < e->n_scm; s++)
		n += e->scm[s]->n_rights;
	if (!n)
		return 0;
	if (used + CMSG_SPACE(n * sizeof(int)) > len)
		return -E2BIG;
	memset(ctl + used, 0, CMSG_SPACE(n * sizeof(int)));
	m->msg_control = ctl;
	m->msg_controllen = used + CMSG_SPACE(n * sizeof(int));
	c = (struct cmsghdr *)(ctl + used);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(n * sizeof(int));
	for (size_t s = 0; s < e->n_scm; s++) {
		for (size_t k = 0; k < e->scm[s]->n_rights; k++) {
			struct rdesc *d = rst_desc(r, e->scm[s]->rights[k]);
			int fd = d ? d->fd : -1;

			if (fd < 0)
				return -EBADF;
			memcpy(CMSG_DATA(c) + at++ * sizeof(int), &fd, sizeof(fd));
		}
	}
	return 0;
}
