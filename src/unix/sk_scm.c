/*
 * Files in flight: the fds a message queued on a UNIX socket carries
 * (SCM_RIGHTS). Peeking the queue (sk_unix.c) gives memdump a copy of each
 * (the queue keeps them); they are kept open until the images are written.
 * Once every fd of the target is collected, each gets its id in files.img:
 * the target's own description when it still holds one (kcmp), an earlier
 * file in flight, or a new description of its own (files_add_inflight(),
 * which refuses what it cannot dump); in a tree dump, another process's fd
 * too (sk_scm_tree.c). Restore sends the message again with those files
 * (sk_scm_restore.c).
 *
 * A stream socket joins the bytes of several messages in one read, up to and
 * including the first message with fds (a peek gets a message's fds from any
 * of its bytes, and stops after that message): the start of that message is
 * found by bisection over the run's bytes, one-byte peeks, so that the fds
 * come back attached to the same bytes. A message with fds longer than one
 * peek is refused: the next peek, inside it, would give the same fds again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/kcmp.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "ctx/file_desc.h"
#include "net/sock.h"
#include "log.h"
#include "unix/sk_unix.h"

int sk_scm_take(struct sk_packet *p, const int *fds, size_t n)
{
	int *v = realloc(p->fds, (p->nr_fds + n) * sizeof(*v));

	if (!v) {
		for (size_t i = 0; i < n; i++)
			close(fds[i]);
		return -ENOMEM;
	}
	p->fds = v;
	memcpy(v + p->nr_fds, fds, n * sizeof(*v));
	p->nr_fds += n;
	return 0;
}

void sk_scm_free(struct sk_packet *p)
{
	for (size_t i = 0; i < p->nr_fds; i++)
		close(p->fds[i]);
	free(p->fds);
	free(p->fd_ids);
	free(p->share_pid);
	free(p->share_fd);
	p->fds = NULL;
	p->fd_ids = NULL;
	p->share_pid = p->share_fd = NULL;
	p->nr_fds = 0;
}

/* Does the byte at peek offset off belong to a message with fds? (1, 0, or -errno) */
static int byte_has_fds(int copy, int off)
{
	char ctl[CMSG_SPACE(SCM_MAX_FD * sizeof(int)) + CMSG_SPACE(sizeof(struct ucred)) + 64], c;
	struct iovec iov = { &c, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof(ctl) };
	int found = 0;

	if (setsockopt(copy, SOL_SOCKET, SO_PEEK_OFF, &off, sizeof(off)) ||
	    recvmsg(copy, &m, MSG_PEEK | MSG_DONTWAIT | MSG_CMSG_CLOEXEC) != 1)
		return -errno ?: -EIO;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (h->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++)
			close(((int *)CMSG_DATA(h))[i]);
		found = 1;
	}
	return (m.msg_flags & MSG_CTRUNC) ? 1 : found;
}

ssize_t sk_scm_stream_start(int copy, int off, ssize_t n)
{
	int end = off + (int)n, ret = 0;
	ssize_t lo = 0, hi = n - 1;	/* the run's last byte is the fds message's */

	/*
	 * A peek gets a message's fds from any of its bytes, and stops after that
	 * message: its bytes are the run's end. The first of them, by bisection.
	 */
	while (lo < hi && ret >= 0) {
		ssize_t mid = lo + (hi - lo) / 2;

		ret = byte_has_fds(copy, off + (int)mid);
		if (ret > 0)
			hi = mid;
		else if (!ret)
			lo = mid + 1;
	}
	if (setsockopt(copy, SOL_SOCKET, SO_PEEK_OFF, &end, sizeof(end)) && ret >= 0)
		ret = -errno;
	return ret < 0 ? ret : lo;
}

/* Does the message with fds that ends a run at peek offset end go on past it? (1, 0, -errno) */
int sk_scm_stream_goes_on(int copy, int end)
{
	int ret = byte_has_fds(copy, end);

	if (ret == -EAGAIN)
		ret = 0;	/* the queue ends there */
	if (setsockopt(copy, SOL_SOCKET, SO_PEEK_OFF, &end, sizeof(end)) && ret >= 0)
		ret = -errno;
	return ret;
}

/* An earlier file in flight (of any socket) with the same description as fd: its id. */
static uint32_t earlier_inflight(const struct dump_ctx *d, int fd)
{
	pid_t self = getpid();

	for (int i = 0; i < d->files.nr_descs; i++) {
		const struct file_desc *f = &d->files.descs[i];
		const struct sk_unix *u;

		if (f->kind != FK_SOCKET || f->sk->family != AF_UNIX)
			continue;
		u = &f->sk->un;
		for (size_t q = 0; q < u->nr_queue; q++)
			for (size_t k = 0; k < u->queue[q].nr_fds && u->queue[q].fd_ids; k++)
				if (u->queue[q].fd_ids[k] &&
				    !syscall(SYS_kcmp, self, self, KCMP_FILE, u->queue[q].fds[k], fd))
					return u->queue[q].fd_ids[k];
	}
	return 0;
}

/* The id of one file in flight, or 0 when another process of the tree holds it (share_pid). */
static int resolve_one(struct dump_ctx *d, uint64_t ino, struct sk_packet *p, size_t k)
{
	int id = earlier_inflight(d, p->fds[k]);

	if (!id && d->tree)	/* its own, another process's (sk_scm_tree.c) */
		id = files_inflight_held(d, p->fds[k], ino);
	if (!id && d->tree) {
		id = sk_scm_tree_share(d, ino, p, k);
		if (id)
			return id < 0 ? id : 0;
	}
	return id ?: files_add_inflight(d, p->fds[k], ino);
}

static int resolve_packet(struct dump_ctx *d, uint64_t ino, struct sk_packet *p)
{
	if (!p->nr_fds)
		return 0;
	p->fd_ids = calloc(p->nr_fds, sizeof(*p->fd_ids));
	if (!p->fd_ids)
		return -ENOMEM;
	for (size_t k = 0; k < p->nr_fds; k++) {
		int id = resolve_one(d, ino, p, k);

		if (id < 0)
			return id;
		p->fd_ids[k] = id;
		if (id)
			pr_debug("UNIX socket %lu: file %d in flight", (unsigned long)ino, id);
		else
			pr_debug("UNIX socket %lu: file in flight, fd %u of process %u",
				 (unsigned long)ino, p->share_fd[k], p->share_pid[k]);
	}
	return 0;
}

int sk_scm_resolve(struct dump_ctx *d)
{
	int ret = 0;

	/* files_add_inflight() adds descriptions (never sockets): index, not pointer */
	for (int i = 0; i < d->files.nr_descs && !ret; i++) {
		struct sk_state *sk = d->files.descs[i].sk;

		if (d->files.descs[i].kind != FK_SOCKET || sk->family != AF_UNIX)
			continue;
		if (d->tree && sk_scm_tree_copy(d, sk->un.ino))
			continue;	/* an earlier process's socket: its queue is sent there */
		for (size_t q = 0; q < sk->un.nr_queue && !ret; q++)
			ret = resolve_packet(d, sk->un.ino, &sk->un.queue[q]);
	}
	return ret;
}
