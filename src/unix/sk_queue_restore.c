/*
 * The data queued on UNIX sockets (sk-queues.img), sent again on restore:
 * sk_queue_plan() turns every message into a send from its sender's new
 * socket (or the stand-in for a closed peer), then the shutdowns and peek
 * offsets; the forked child runs the plan (sk_child_finish()) before its
 * fds move, with the dumped PID.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "image/image.h"
#include "common.h"
#include "log.h"
#include "ctx/restore_ctx.h"

#include "sk-packet.pb-c.h"
#include "net/sock.h"
#include "unix/sk_unix.h"

/* sk-queues.img opened: 1; 0: the set has none; <0 */
int sk_queues_open(struct rst *r, struct image **img)
{
	char name[64];
	int ret;

	img_name(IMG_SK_QUEUES, 0, name, sizeof(name));
	if (faccessat(r->ds.dirfd, name, F_OK, 0))
		return 0;
	ret = img_open(r->ds.dirfd, IMG_SK_QUEUES, 0, img);
	return ret ? ret : 1;
}

static int load_queues(struct rst *r)
{
	struct image *img;
	SkPacketEntry *e;
	int ret;

	ret = sk_queues_open(r, &img);
	if (ret <= 0)
		return ret;
	while ((ret = img_read_msg(img, &sk_packet_entry__descriptor, (void **)&e)) == 1) {
		struct sk_msg *m = realloc(r->sk_msgs, (r->nr_sk_msgs + 1) * sizeof(*m));

		if (!m || e->length > (64u << 20)) {
			img_free(&sk_packet_entry__descriptor, e);
			ret = m ? fail(-EIO, "sk-queues.img: a message of %u bytes", e->length) :
				  -ENOMEM;
			break;
		}
		r->sk_msgs = m;
		m = &m[r->nr_sk_msgs++];
		m->e = e;
		m->data = malloc(e->length ? e->length : 1);
		ret = m->data ? img_read_raw(img, m->data, e->length) : -ENOMEM;
		if (ret)
			break;
	}
	img_abort(img);
	return ret < 0 ? ret : 0;
}

static const UnixSkEntry *usk_of(struct rst *r, uint32_t id, bool by_ino)
{
	for (size_t i = 0; i < r->ds.nr_files; i++) {
		const FileEntry *fe = r->ds.files[i];

		if (fe->type == FD_TYPES__UNIXSK && fe->usk && (by_ino ? fe->usk->ino : fe->id) == id)
			return fe->usk;
	}
	return NULL;
}

struct sk_late *sk_late_new(struct rst *r, int op, int fd)
{
	struct sk_late *l = realloc(r->sk_late, (r->nr_sk_late + 1) * sizeof(*l));

	if (!l)
		return NULL;
	r->sk_late = l;
	l = &l[r->nr_sk_late++];
	memset(l, 0, sizeof(*l));
	l->op = op;
	l->fd = fd;
	return l;
}

static int helper_for(struct rst *r, uint32_t id)
{
	for (size_t i = 0; i < r->nr_sk_helpers; i++)
		if (r->sk_helpers[i].for_id == id)
			return r->sk_helpers[i].fd;
	return -1;
}

/* The sender socket ino: this process's, or (a tree) another's; its fd in *fd. */
static const UnixSkEntry *sender_of(struct rst *r, uint32_t ino, int *fd)
{
	const UnixSkEntry *snd = ino ? usk_of(r, ino, true) : NULL;
	struct rdesc *d = snd ? rst_desc(r, snd->id) : NULL;

	*fd = d ? d->fd : -1;
	if (d || !ino || !r->tree)
		return snd;
	snd = sk_tree_entry(r, ino);
	*fd = snd ? sk_tree_fd(r, ino) : -1;
	return snd;
}

/* One message for rcv from its sender: the sender's fd and where to send. */
static int plan_send(struct rst *r, const struct sk_msg *m)
{
	const UnixSkEntry *rcv = usk_of(r, m->e->id_for, false);
	int fd;
	const UnixSkEntry *snd = sender_of(r, m->e->has_sender ? m->e->sender : 0, &fd);
	struct sk_late *l;

	if (rcv && !rst_desc(r, rcv->id))
		return 0;	/* a copy of another process's socket: that one refills it */
	if (!snd && rcv)
		fd = helper_for(r, rcv->id);
	if (!snd && rcv && fd < 0 && m->e->has_sender && rcv->type == SOCK_DGRAM && !rcv->peer)
		fd = sk_unix_standin(r, rcv);	/* a sender the dump did not hold */
	if (fd < -1)
		return fd;
	if (!rcv || fd < 0)
		return fail(-EIO, "sk-queues.img: a message for socket %u has no sender to send it",
			    m->e->id_for);
	if (snd && sk_cred_fork_holder(r, snd->ino) && !usk_of(r, snd->ino, true))
		r = sk_cred_fork_holder(r, snd->ino);	/* sent by its process, once made again */
	l = sk_late_new(r, SK_LATE_SEND, fd);
	if (!l)
		return -ENOMEM;
	l->msg = m;
	l->dgram = rcv->type == SOCK_DGRAM;
	if (l->dgram && ((snd && snd->peer != rcv->ino) || (!snd && !rcv->peer_closed)))
		l->tolen = sk_unix_late_addr(r, rcv, &l->to);
	return 0;
}

static int plan_after(struct rst *r, const UnixSkEntry *u)
{
	int fd = rst_desc(r, u->id)->fd;
	struct sk_late *l;
	static const int how[] = { -1, SHUT_RD, SHUT_WR, SHUT_RDWR };
	bool closed_peer = u->type != SOCK_DGRAM && helper_for(r, u->id) >= 0;

	if (u->has_shutdown && u->shutdown > 0 && u->shutdown < 4 && !closed_peer) {
		l = sk_late_new(r, SK_LATE_SHUTDOWN, fd);
		if (!l)
			return -ENOMEM;
		l->arg = how[u->shutdown];
	}
	if (u->opts->has_so_peek_off && u->opts->so_peek_off >= 0) {
		l = sk_late_new(r, SK_LATE_PEEK_OFF, fd);
		if (!l)
			return -ENOMEM;
		l->arg = u->opts->so_peek_off;
	}
	return 0;
}

int sk_queue_plan(struct rst *r)
{
	/* first: pairs and connections made again with their credentials (a tree's: every
	 * process's, before any queue), then the connections not accepted yet */
	int ret = r->tree ? 0 : sk_cred_plan(r);

	if (!ret)
		ret = sk_unix_pending_plan(r);

	if (!ret)
		ret = load_queues(r);

	for (size_t i = 0; !ret && i < r->nr_sk_msgs; i++)
		ret = plan_send(r, &r->sk_msgs[i]);
	for (size_t i = 0; !ret && i < r->ds.nr_files; i++) {
		const FileEntry *fe = r->ds.files[i];

		if (fe->type == FD_TYPES__UNIXSK && fe->usk && rst_desc(r, fe->id))
			ret = plan_after(r, fe->usk);
	}
	return ret;
}

/* The sender's credentials as control data of m (ctl: len bytes), its pid as the
 * forked process r sees it (in a PID namespace of the tree's: its number there). */
static void add_creds(struct rst *r, const SkPacketEntry *e, struct msghdr *m, char *ctl,
		      size_t len)
{
	pid_t seen = sk_tree_seen_pid(r, (pid_t)e->cred_pid);
	struct ucred c = { seen ? seen : (pid_t)e->cred_pid, e->cred_uid, e->cred_gid };
	struct cmsghdr *cm;

	memset(ctl, 0, len);
	m->msg_control = ctl;
	m->msg_controllen = CMSG_SPACE(sizeof(c));
	cm = CMSG_FIRSTHDR(m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_CREDENTIALS;
	cm->cmsg_len = CMSG_LEN(sizeof(c));
	memcpy(CMSG_DATA(cm), &c, sizeof(c));
}

static int send_all(struct rst *r, const struct sk_late *l)
{
	const SkPacketEntry *e = l->msg->e;
	char ctl[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(SCM_MAX_FD * sizeof(int))];
	size_t off = 0;

	do {
		struct iovec iov = { l->msg->data + off, e->length - off };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n;

		if (l->tolen) {
			m.msg_name = (void *)&l->to;
			m.msg_namelen = l->tolen;
		}
		if (e->has_cred_pid)
			add_creds(r, e, &m, ctl, sizeof(ctl));
		if (!off) {	/* the files in flight go with the first bytes (sk_scm_restore.c) */
			int ret = sk_scm_control(r, e, &m, ctl, sizeof(ctl));

			if (ret)
				return ret;
		}
		n = sendmsg(l->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == ESRCH && m.msg_control && e->has_sender && !e->sender &&
		    !e->n_scm) {
			/* a stand-in's: its sender's process is gone since; sent without its
			 * credentials (a reader with SO_PASSCRED sees the restorer's) */
			m.msg_control = NULL;
			m.msg_controllen = 0;
			n = sendmsg(l->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
		}
		if (n < 0)
			return -errno;
		off += n;
	} while (off < e->length && !l->dgram);
	return 0;
}

/* The steps that make sockets again with their peer credentials (planned first). */
static bool remake_step(int op)
{
	return op == SK_LATE_PAIR || op == SK_LATE_ACCEPT || op == SK_LATE_LISTEN ||
	       op == SK_LATE_FORK_ACCEPT || op == SK_LATE_FORK_CONNECT;
}

static int step(struct rst *r, const struct sk_late *l)
{
	if (l->op == SK_LATE_PAIR || l->op == SK_LATE_ACCEPT || l->op == SK_LATE_LISTEN)
		return sk_cred_remake(l);
	if (l->op == SK_LATE_FORK_ACCEPT || l->op == SK_LATE_FORK_CONNECT)
		return sk_cred_remake_fork(r, l);
	if (l->op == SK_LATE_SEND)
		return send_all(r, l);
	if (l->op == SK_LATE_SHUTDOWN)
		return shutdown(l->fd, l->arg) ? -errno : 0;
	if (l->op == SK_LATE_CONNECT)
		return connect(l->fd, (const struct sockaddr *)&l->to, l->tolen) ? -errno : 0;
	return setsockopt(l->fd, SOL_SOCKET, SO_PEEK_OFF, &l->arg, sizeof(l->arg)) ? -errno : 0;
}

/* The remakes (remakes), or every other step, in plan order. */
static int steps(struct rst *r, bool remakes, char *msg, size_t len)
{
	for (size_t i = 0; i < r->nr_sk_late; i++) {
		const struct sk_late *l = &r->sk_late[i];
		int ret;

		if (l->op == SK_LATE_TREE_PAIR || l->op == SK_LATE_TREE_ACCEPT ||
		    remake_step(l->op) != remakes)
			continue;	/* TREE_*: made before the fork (sk_cred_remake_tree) */
		if (l->op == SK_LATE_SEND && l->msg->e->has_cred_pid)
			sk_tree_wait_pid(r, (pid_t)l->msg->e->cred_pid);
		ret = step(r, l);
		if (ret) {
			snprintf(msg, len, "UNIX socket queues: cannot %s: %s",
				 l->op == SK_LATE_SEND ? "send queued data again" :
				 l->op == SK_LATE_SHUTDOWN ? "shut down" :
				 l->op == SK_LATE_CONNECT ? "connect a client its listener had not "
				 "accepted" : l->op == SK_LATE_PEEK_OFF ? "set SO_PEEK_OFF" :
				 l->op == SK_LATE_LISTEN ? "listen again with its credentials" :
				 "make a pair or connection again with its peer credentials",
				 strerror(-ret));
			return ret;
		}
	}
	return 0;
}

int sk_child_remake(struct rst *r, char *msg, size_t len)
{
	return steps(r, true, msg, len);
}

int sk_child_finish(struct rst *r, char *msg, size_t len)
{
	return steps(r, false, msg, len);
}

void sk_queue_free(struct rst *r)
{
	for (size_t i = 0; i < r->nr_sk_msgs; i++) {
		img_free(&sk_packet_entry__descriptor, r->sk_msgs[i].e);
		free(r->sk_msgs[i].data);
	}
	free(r->sk_msgs);
	for (size_t i = 0; i < r->nr_sk_late; i++)
		if (r->sk_late[i].covered)
			close(r->sk_late[i].todir);
	free(r->sk_late);
	r->sk_msgs = NULL;
	r->sk_late = NULL;
	r->nr_sk_msgs = r->nr_sk_late = 0;
}
