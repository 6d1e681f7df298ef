/*
 * Files in flight (SCM_RIGHTS) of the messages queued on UNIX sockets
 * (sk-queues.img, scm entries naming file ids): sk_scm_descs() adds their
 * descriptions to those memdump opens (open_fds(): a file only in flight has
 * no fd of the process), and sk_scm_control() attaches memdump's fds of them,
 * in the dumped order, to the message when the forked child sends it again
 * (sk_queue_restore.c). Once the child's fds move, memdump's copies are
 * closed: the queue holds the only reference, as it did. In a tree, a file
 * the process holds as an fd shared with an earlier process, or only another
 * process holds (share_pid), is sent as that process's prepared description.
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

/* Right k of scm: another process's fd of the tree (share_pid, sk_scm_tree.c), or 0. */
static uint32_t share_pid_of(const ScmEntry *scm, size_t k)
{
	return k < scm->n_share_pid && k < scm->n_share_fd ? scm->share_pid[k] : 0;
}

/* Process pid of r's tree, or NULL. */
static struct rst *tree_pid(struct rst *r, uint32_t pid)
{
	struct rst *p;

	for (size_t i = 0; r->tree && (p = tree_proc(r, i)); i++)
		if (p->pid == (pid_t)pid)
			return p;
	return NULL;
}

/* Right k names fd share_fd[k] of a process of the tree its fdinfo-1.img lists? */
static int check_shared_right(struct rst *r, const SkPacketEntry *e, const ScmEntry *scm,
			      size_t k)
{
	struct rst *p = tree_pid(r, share_pid_of(scm, k));

	for (size_t i = 0; p && p != r && i < p->ds.nr_fds; i++)
		if (p->ds.fds[i]->fd == scm->share_fd[k])
			return 0;
	return fail(-EIO, "sk-queues.img: a message for socket %u carries fd %u of process %u, "
		    "which the tree's images do not hold", e->id_for, scm->share_fd[k],
		    share_pid_of(scm, k));
}

/* An fd of r with description id that takes an earlier process's (share_pid): its copy. */
static int shared_fd_of(const struct rst *r, uint32_t id)
{
	for (size_t i = 0; i < r->ds.nr_fds; i++)
		if (r->ds.fds[i]->id == id && rst_share_src(r, (int)r->ds.fds[i]->fd) >= 0)
			return rst_share_src(r, (int)r->ds.fds[i]->fd);
	return -1;
}

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
			int ret = share_pid_of(scm, k) ? check_shared_right(r, e, scm, k) : 0;

			if (ret)
				return ret;
			if (share_pid_of(scm, k))
				continue;	/* that process's fd (sk_scm_control()) */
			if (!rst_file(r, id))
				return fail(-EIO, "sk-queues.img: a message for socket %u carries "
					    "file %u, which files.img does not have", e->id_for, id);
			if (rst_desc(r, id) || shared_fd_of(r, id) >= 0 ||
			    r->nr_descs >= r->ds.nr_files)
				continue;	/* opened, or an earlier process's (fdinfo-1.img) */
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

/* Memdump's fd of right k of scm: r's description, or another process's of the tree. */
static int right_fd(struct rst *r, const ScmEntry *scm, size_t k)
{
	struct rst *p = share_pid_of(scm, k) ? tree_pid(r, share_pid_of(scm, k)) : r;
	struct rdesc *d;

	if (p != r) {
		for (size_t i = 0; p && i < p->nr_fds; i++)
			if (p->fds[i].target == (int)scm->share_fd[k])
				return p->fds[i].src;
		return -1;
	}
	d = rst_desc(r, scm->rights[k]);
	return d && d->fd >= 0 ? d->fd : shared_fd_of(r, scm->rights[k]);
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
			int fd = right_fd(r, e->scm[s], k);

			if (fd < 0)
				return -EBADF;
			memcpy(CMSG_DATA(c) + at++ * sizeof(int), &fd, sizeof(fd));
		}
	}
	return 0;
}
