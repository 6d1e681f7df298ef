/*
 * UNIX sockets: type, state, name, peer (by inode), shutdown bits, the
 * file a path name made, and the data queued on each socket. A UNIX socket
 * has no send queue: what one end sent waits in its peer's receive queue, so
 * the receive queues of both ends hold both directions. They are read with
 * MSG_PEEK from a copy of the fd, SO_PEEK_OFF stepping through them, with
 * SO_PASSCRED on to learn each message's sender credentials; both options are
 * put back as they were.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#ifndef SIOCUNIXFILE
#define SIOCUNIXFILE (SIOCPROTOPRIVATE + 0)	/* linux/un.h: an O_PATH fd on the file of its name */
#endif
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "ctx/file_desc.h"
#include "ctx/proc_tree.h"
#include "net/sock.h"
#include "image/image.h"
#include "proc.h"
#include "log.h"

#include "files.pb-c.h"
#include "sk-packet.pb-c.h"
#include "unix/sk_unix.h"

#define PEEK_BUF	(1 << 20)

static bool in_process(const struct sk_set *set, uint64_t ino)
{
	for (size_t i = 0; i < set->nr_inos; i++)
		if (set->inos[i] == ino)
			return true;
	return false;
}

static bool in_tree(const struct sk_set *set, uint64_t ino)
{
	for (size_t i = 0; i < set->nr_tree_inos; i++)
		if (set->tree_inos[i] == ino)
			return true;
	return false;
}

static bool same_name(const struct sk_diag *a, const struct sk_diag *b)
{
	return a->name_len && a->name_len == b->name_len && !memcmp(a->name, b->name, a->name_len);
}

/* The socket inodes of the process, then (a tree dump) those of the tree's other processes. */
static uint64_t nth_ino(const struct sk_set *set, size_t i)
{
	return i < set->nr_inos ? set->inos[i] : set->tree_inos[i - set->nr_inos];
}

static size_t nr_all(const struct sk_set *set)
{
	return set->nr_inos + set->nr_tree_inos;
}

/* A listening socket of the process (or of the tree) with s's name. */
static bool has_listener(const struct sk_set *set, const struct sk_diag *s)
{
	for (size_t i = 0; i < nr_all(set); i++) {
		const struct sk_diag *l = sk_table_find(&set->diag, nth_ino(set, i));

		if (l && l->family == AF_UNIX && l->state == SK_LISTEN && same_name(l, s))
			return true;
	}
	return false;
}

/*
 * --ext-unix-sk: a datagram socket connected to one outside the dump is
 * connected to the peer's name again at restore, which needs a name that
 * means the same wherever the restore runs: absolute or abstract.
 */
static bool ext_peer_ok(const struct sk_diag *s, const struct sk_diag *peer)
{
	return s->type == SOCK_DGRAM && peer && peer->name_len &&
	       (peer->name[0] == '/' || peer->name[0] == '\0');
}

const char *sk_unix_unsupported(const struct sk_diag *s, const struct sk_set *set, char *buf,
				size_t len)
{
	const struct sk_diag *peer = s->peer ? sk_table_find(&set->diag, s->peer) : NULL;
	bool stream = s->type != SOCK_DGRAM;
	const struct sk_diag *l = sk_unix_pending_listener(set, s, NULL);

	if (s->state == SK_LISTEN && s->nr_icons)
		return sk_unix_icons_unsupported(s, set, buf, len);
	if (l)
		return sk_unix_pending_unsupported(s, l, set, buf, len);
	if (s->peer && !in_process(set, s->peer) && !in_tree(set, s->peer) &&
	    !(set->ext_unix_sk && ext_peer_ok(s, peer))) {
		char what[256] = "socket";

		if (peer)
			sk_unix_describe(peer, what, sizeof(what));
		snprintf(buf, len, "its peer (%s, socket:[%lu]) is outside the %s", what + 2,
			 (unsigned long)s->peer, set->tree ? "tree" : "process");
		return buf;
	}
	if (stream && s->state == SK_ESTABLISHED && s->name_len && !has_listener(set, s) &&
	    peer && peer->name_len)
		return set->tree ? "it is named and connected to a named socket, and no listening "
				   "socket of the tree has its name (which end was accepted cannot be "
				   "told)" :
				   "it is named and connected to a named socket, and no listening "
				   "socket of the process has its name (which end was accepted cannot "
				   "be told)";
	if (!stream && peer && !peer->name_len && peer->peer != s->ino)
		return "it is connected to an unnamed socket that is not its pair";
	return NULL;
}

/* Is pid the process's or (a tree dump) one of the tree's processes? */
static bool restored_pid(const struct sk_set *set, pid_t self, pid_t pid)
{
	if (pid == self)
		return true;
	for (int i = 0; set->tree && i < set->tree->n; i++)
		if (set->tree->procs[i].pid == pid)
			return true;
	return false;
}

/*
 * The kernel fixed a socket's peer credentials when its pair was made, or at
 * connect(): the maker's, the connecting process's, the listener's. They name
 * a pid: one no process of the restore will have cannot be made again.
 */
const char *sk_unix_peercred_unsupported(int copy, const struct sk_set *set, pid_t pid,
					 char *buf, size_t len)
{
	struct ucred c = { 0 };
	socklen_t l = sizeof(c);

	if (getsockopt(copy, SOL_SOCKET, SO_PEERCRED, &c, &l) || c.pid < 0 ||
	    (!c.pid && c.uid == (uid_t)-1) || (c.pid && restored_pid(set, pid, c.pid)))
		return NULL;	/* none (never connected), or a process of the restore */
	if (!c.pid) {
		snprintf(buf, len, "its peer credentials (SO_PEERCRED: pid 0 uid %u gid %u) name a "
			 "process memdump cannot see (another PID namespace): the restore cannot "
			 "make them again", (unsigned)c.uid, (unsigned)c.gid);
		return buf;
	}
	snprintf(buf, len, "its peer credentials (SO_PEERCRED: pid %d uid %u gid %u) name process "
		 "%d, which is not in the %s (gone, or outside): no restored process has that pid",
		 (int)c.pid, (unsigned)c.uid, (unsigned)c.gid, (int)c.pid,
		 set->tree ? "tree" : "process");
	return buf;
}

/* The socket of the process (or of the tree) that sent a datagram from name (empty: an unnamed one). */
static uint64_t dgram_sender(const struct sk_set *set, const struct sk_diag *rcv,
			     const struct sockaddr_un *from, socklen_t len)
{
	int nlen = len > offsetof(struct sockaddr_un, sun_path) ?
		   (int)(len - offsetof(struct sockaddr_un, sun_path)) : 0;
	const struct sk_diag *peer = rcv->peer ? sk_table_find(&set->diag, rcv->peer) : NULL;

	if (nlen && from->sun_path[0])
		nlen = strnlen(from->sun_path, nlen);
	if (!nlen && peer && !peer->name_len)
		return peer->ino;
	for (size_t i = 0; i < nr_all(set); i++) {
		const struct sk_diag *s = sk_table_find(&set->diag, nth_ino(set, i));

		if (!s || s->family != AF_UNIX || s->state == SK_LISTEN || s->name_len != nlen)
			continue;
		/* unnamed senders look all the same: one connected to the receiver */
		if (nlen ? !memcmp(s->name, from->sun_path, nlen) : s->peer == rcv->ino)
			return s->ino;
	}
	return 0;
}

/* Credentials and passed fds (kept in p: sk_scm.c) of one peeked message. */
static int read_cmsgs(struct msghdr *m, struct sk_packet *p)
{
	int ret = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		if (c->cmsg_level != SOL_SOCKET)
			continue;
		if (c->cmsg_type == SCM_CREDENTIALS) {
			memcpy(&p->creds, CMSG_DATA(c), sizeof(p->creds));
			p->has_creds = p->creds.pid != 0;	/* 0: sent without credentials */
		} else if (c->cmsg_type == SCM_RIGHTS) {
			size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			int err = sk_scm_take(p, (int *)CMSG_DATA(c), n);

			ret = ret ?: err;
		}
	}
	if (m->msg_flags & MSG_CTRUNC)
		ret = -EOPNOTSUPP;
	return ret;
}

static int add_packet(struct sk_unix *u, const void *buf, size_t len, const struct sk_packet *p)
{
	struct sk_packet *q = realloc(u->queue, (u->nr_queue + 1) * sizeof(*q));

	if (!q)
		return -ENOMEM;
	u->queue = q;
	q = &q[u->nr_queue];
	*q = *p;
	q->len = len;
	q->data = malloc(len ? len : 1);
	if (!q->data)
		return -ENOMEM;
	memcpy(q->data, buf, len);
	u->nr_queue++;
	return 0;
}

/* Peek one message at the current peek offset: its length, -1 at the end or on *err. */
static ssize_t peek_one(int copy, char *buf, struct sk_packet *p, struct sockaddr_un *from,
			socklen_t *flen, int *err)
{
	char ctl[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(SCM_MAX_FD * sizeof(int)) + 256];
	struct iovec iov = { buf, PEEK_BUF };
	struct msghdr m = { .msg_name = from, .msg_namelen = sizeof(*from), .msg_iov = &iov,
			    .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	ssize_t n = recvmsg(copy, &m, MSG_PEEK | MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	*err = 0;
	if (n < 0)
		*err = errno == EAGAIN ? 0 : -errno;
	if (n < 0)
		return -1;
	*flen = m.msg_namelen;
	memset(p, 0, sizeof(*p));
	*err = read_cmsgs(&m, p);
	if (!*err && (m.msg_flags & MSG_TRUNC))
		*err = -EMSGSIZE;
	return n;
}

static int queue_error(const struct sk_diag *s, int err)
{
	unsigned long ino = s->ino;

	if (err == -EOPNOTSUPP)
		return fail(err, "UNIX socket %lu has more file descriptors in flight (SCM_RIGHTS) "
			    "in a message than memdump can receive at once", ino);
	if (err == -EMSGSIZE)
		return fail(err, "UNIX socket %lu: a queued datagram is larger than %d bytes", ino,
			    PEEK_BUF);
	return fail(err, "UNIX socket %lu: cannot peek its queue: %s", ino, strerror(-err));
}

/* Is sender (an inode of the set) connected to rcv, so that restore needs no name to send? */
static bool sent_connected(struct dump_ctx *d, const struct sk_diag *rcv, uint64_t sender)
{
	const struct sk_diag *snd = sk_table_find(&d->sockets.diag, sender);

	return snd && snd->peer == rcv->ino;
}

/* The checks of one peeked message (n < 0: none left); 0 or an error already reported. */
static int check_packet(struct dump_ctx *d, const struct sk_diag *s, struct sk_unix *u,
			ssize_t n, struct sk_packet *p, const struct sockaddr_un *from,
			socklen_t flen)
{
	const char *why;

	if (n == 0 && s->type == SOCK_DGRAM)
		return fail(-EOPNOTSUPP, "UNIX socket %lu has an empty datagram queued, "
			    "which memdump cannot dump", (unsigned long)s->ino);
	if (n == 0)
		return 0;	/* stream: the end (EOF after a shutdown or none) */
	p->sender = s->type == SOCK_DGRAM ? dgram_sender(&d->sockets, s, from, flen) : s->peer;
	if (s->type == SOCK_DGRAM && !p->sender &&
	    (why = sk_unix_standin_refused(s, flen)))
		return fail(-EOPNOTSUPP, "UNIX socket %lu has a datagram queued from a "
			    "socket outside the %s: %s", (unsigned long)s->ino,
			    d->tree ? "tree" : "process", why);
	if (s->type == SOCK_DGRAM && u->peer_closed && p->sender)
		return fail(-EOPNOTSUPP, "UNIX socket %lu has a datagram queued from "
			    "socket:[%lu], sent before it connected to a socket closed since: "
			    "memdump cannot send it again", (unsigned long)s->ino,
			    (unsigned long)p->sender);
	if (s->type == SOCK_DGRAM && u->deleted && !sent_connected(d, s, p->sender))
		return fail(-EOPNOTSUPP, "UNIX socket %lu has a datagram queued from a "
			    "socket not connected to it, and the file of its name was "
			    "removed: memdump cannot send it again", (unsigned long)s->ino);
	return 0;
}

/* A stream run whose last message has fds: the bytes before that message apart (sk_scm.c). */
static int add_stream_run(int copy, int off, struct sk_unix *u, const char *buf, ssize_t n,
			  struct sk_packet *p)
{
	ssize_t start = p->nr_fds && n > 1 ? sk_scm_stream_start(copy, off, n) : 0;
	int ret = start < 0 ? (int)start : 0;
	struct sk_packet plain = *p;

	if (!ret && p->nr_fds && n == PEEK_BUF)
		ret = sk_scm_stream_goes_on(copy, off + (int)n);
	if (ret > 0)
		return fail(-EOPNOTSUPP, "UNIX socket %lu has files in flight (SCM_RIGHTS) with a "
			    "message longer than %d bytes, which memdump cannot dump",
			    (unsigned long)u->ino, PEEK_BUF);
	if (ret < 0)
		return fail(ret, "UNIX socket %lu: cannot peek its queue: %s",
			    (unsigned long)u->ino, strerror(-ret));
	plain.fds = NULL;
	plain.fd_ids = NULL;
	plain.nr_fds = 0;
	ret = start ? add_packet(u, buf, start, &plain) : 0;
	return ret ?: add_packet(u, buf + start, n - start, p);
}

/* Every message of the receive queue, the peek offset at 0 and SO_PASSCRED on. */
static int peek_all(struct dump_ctx *d, int copy, const struct sk_diag *s, struct sk_unix *u,
		    char *buf)
{
	int off = 0;

	for (;;) {
		struct sockaddr_un from;
		socklen_t flen = 0;
		struct sk_packet p;
		int err;
		ssize_t n = peek_one(copy, buf, &p, &from, &flen, &err);

		if (err)
			err = queue_error(s, err);
		else if (n >= 0)
			err = check_packet(d, s, u, n, &p, &from, flen);
		if (!err && n > 0)
			err = s->type != SOCK_STREAM ? add_packet(u, buf, n, &p) :
			      add_stream_run(copy, off, u, buf, n, &p);
		if (n >= 0 && (err || !n))
			sk_scm_free(&p);	/* not queued: its fds are still memdump's */
		if (err)
			return err;
		if (n <= 0)
			return 0;
		off += (int)n;
	}
}

static int read_queue(struct dump_ctx *d, int copy, const struct sk_diag *s, struct sk_state *st)
{
	char *buf = malloc(PEEK_BUF);
	int zero = 0, one = 1, ret;

	if (!buf)
		return -ENOMEM;
	if (setsockopt(copy, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof(zero)) ||
	    setsockopt(copy, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)))
		ret = queue_error(s, -errno);
	else
		ret = peek_all(d, copy, s, &st->un, buf);
	free(buf);
	setsockopt(copy, SOL_SOCKET, SO_PEEK_OFF, &st->opts.peek_off, sizeof(int));
	setsockopt(copy, SOL_SOCKET, SO_PASSCRED, &st->opts.passcred, sizeof(int));
	return ret;
}

/*
 * The file a path name made, as the socket itself knows it (SIOCUNIXFILE: an
 * O_PATH fd on it, whatever happened to the name since): its mode and owner;
 * whether it was removed (or replaced: the old inode is unlinked either way),
 * so that restore binds the name and removes it again; and, for a relative
 * name, the directory it was bound in (CRIU's name_dir), found by cutting the
 * name off the file's path.
 */
static int name_file_path(int pfd, char *path, size_t len, bool *deleted)
{
	int n = self_fd_link(pfd, path, len);

	if (n < 0)
		return n;
	*deleted = n;
	if (*deleted)
		path[strlen(path) - (sizeof(" (deleted)") - 1)] = 0;
	return 0;
}

static int name_dir_of(struct sk_unix *u, const char *path)
{
	size_t pl = strlen(path), nl = strnlen(u->name, u->name_len);

	if (pl <= nl + 1 || path[pl - nl - 1] != '/' || memcmp(path + pl - nl, u->name, nl))
		return fail(-EOPNOTSUPP, "UNIX socket %lu is bound to the relative path %.*s, which "
			    "its file %s does not end with", (unsigned long)u->ino, (int)nl, u->name,
			    path);
	u->name_dir = strndup(path, pl - nl - 1);
	return u->name_dir ? 0 : -ENOMEM;
}

/*
 * Its name's file, covered by a mount on its path since the bind (zdtm
 * overmount_sock): at its name in a clone of its directory's mount alone.
 */
static bool name_covered(pid_t pid, const struct sk_unix *u, int pfd)
{
	char name[sizeof(u->name) + 1];

	snprintf(name, sizeof(name), "%.*s", u->name_len, u->name);
	if (u->deleted || (name[0] != '/' && !u->name_dir))
		return false;
	return name[0] == '/' ? proc_root_covered(pid, "/", name + 1, pfd) == 1 :
	       proc_root_covered(pid, u->name_dir[0] ? u->name_dir : "/", name, pfd) == 1;
}

static int read_name_file(struct sk_unix *u, int copy, pid_t pid)
{
	char path[PATH_MAX];
	struct stat st;
	int pfd, ret;

	if (!u->name_len || !u->name[0])
		return 0;	/* unnamed or abstract */
	pfd = ioctl(copy, SIOCUNIXFILE);
	if (pfd < 0)
		return fail(-errno, "UNIX socket %lu: cannot open the file of its name %.*s: %s",
			    (unsigned long)u->ino, u->name_len, u->name, strerror(errno));
	ret = fstat(pfd, &st) ? -errno : name_file_path(pfd, path, sizeof(path), &u->deleted);
	if (ret) {
		close(pfd);
		return fail(ret, "UNIX socket %lu: cannot read the file of its name: %s",
			    (unsigned long)u->ino, strerror(-ret));
	}
	u->has_perms = true;
	u->mode = st.st_mode & 07777;
	u->uid = st.st_uid;
	u->gid = st.st_gid;
	ret = u->name[0] == '/' ? 0 : name_dir_of(u, path);
	if (!ret)
		u->covered = name_covered(pid, u, pfd);
	close(pfd);
	return ret;
}

/* Its peer credentials, when they name a process: restore makes them again (sk_unix_cred.c). */
static int read_peercred(int copy, struct sk_unix *u)
{
	socklen_t l = sizeof(u->cred);
	gid_t g[SK_UNIX_MAX_GROUPS];

	if (getsockopt(copy, SOL_SOCKET, SO_PEERCRED, &u->cred, &l) || u->cred.pid <= 0) {
		memset(&u->cred, 0, sizeof(u->cred));
		return 0;
	}
	l = sizeof(g);
	if (getsockopt(copy, SOL_SOCKET, SO_PEERGROUPS, g, &l))
		return fail(-errno, "UNIX socket %lu: its peer's groups (SO_PEERGROUPS): %s%s",
			    (unsigned long)u->ino, strerror(errno),
			    errno == ERANGE ? " (more than memdump keeps)" : "");
	u->nr_groups = (int)(l / sizeof(g[0]));
	for (int i = 0; i < u->nr_groups; i++)
		u->groups[i] = g[i];
	return 0;
}

int sk_unix_collect(struct dump_ctx *d, int copy, const struct sk_diag *s, struct sk_state *st)
{
	struct sk_unix *u = &st->un;
	int ret;

	u->type = s->type;
	u->state = s->state;
	u->ino = s->ino;
	u->peer = s->peer;
	u->shutdown = s->shutdown;
	u->backlog = s->state == SK_LISTEN ? s->wqueue : 0;
	u->name_len = s->name_len;
	memcpy(u->name, s->name, s->name_len);
	ret = s->has_vfs ? read_name_file(u, copy, d->pid) : 0;
	if (!ret)
		ret = read_peercred(copy, u);
	if (ret)
		return ret;
	if (s->state == SK_LISTEN && s->nr_icons && u->deleted)
		return fail(-EOPNOTSUPP, "UNIX socket %lu listens on %.*s, whose file was removed, "
			    "with connections not yet accepted: memdump cannot connect them again",
			    (unsigned long)u->ino, u->name_len, u->name);
	if (sk_unix_pending_listener(&d->sockets, s, &u->accept_pos))	/* CRIU: the listener */
		u->peer = sk_unix_pending_listener(&d->sockets, s, NULL)->ino;
	if (s->type == SOCK_DGRAM && s->state == SK_ESTABLISHED && !s->peer &&
	    (ret = sk_unix_dgram_peer_closed(copy, &d->sockets, u)))
		return ret;
	if (d->sockets.ext_unix_sk && s->peer && !u->accept_pos &&
	    !in_process(&d->sockets, s->peer) && !in_tree(&d->sockets, s->peer)) {
		const struct sk_diag *peer = sk_table_find(&d->sockets.diag, s->peer);

		if (ext_peer_ok(s, peer)) {	/* sk_unix_unsupported() let it through */
			memcpy(u->ext_peer, peer->name, peer->name_len);
			u->ext_peer_len = peer->name_len;
		}
	}
	if (s->type != SOCK_DGRAM && s->state != SK_ESTABLISHED)
		return 0;	/* listening or not connected: no queue */
	return read_queue(d, copy, s, st);
}

void sk_unix_entry(const struct file_desc *f, UnixSkEntry *e, UnixPeerCredEntry *cred)
{
	const struct sk_unix *u = &f->sk->un;

	if (u->cred.pid > 0) {
		cred->pid = (uint32_t)u->cred.pid;
		cred->uid = u->cred.uid;
		cred->gid = u->cred.gid;
		cred->n_groups = (size_t)u->nr_groups;
		cred->groups = (uint32_t *)u->groups;
		e->peer_cred = cred;
	}
	e->id = f->id;
	e->ino = u->ino;
	e->type = u->type;
	e->state = u->state;
	e->flags = f->flags;
	e->backlog = u->backlog;
	e->peer = u->peer;
	e->has_accept_pos = u->accept_pos != 0;
	e->accept_pos = u->accept_pos;
	e->has_peer_closed = u->peer_closed;
	e->peer_closed = u->peer_closed;
	e->name.len = u->name_len;
	e->name.data = (uint8_t *)u->name;
	e->has_deleted = u->deleted;
	e->deleted = u->deleted;
	e->has_name_covered = u->covered;
	e->name_covered = u->covered;
}

int sk_unix_write(const struct file_desc *f, struct image *files)
{
	const struct sk_unix *u = &f->sk->un;
	FileEntry fe = FILE_ENTRY__INIT;
	UnixSkEntry e = UNIX_SK_ENTRY__INIT;
	FownEntry fown = FOWN_ENTRY__INIT;
	SkOptsEntry opts = SK_OPTS_ENTRY__INIT;
	FilePermsEntry perms = FILE_PERMS_ENTRY__INIT;
	UnixPeerCredEntry cred = UNIX_PEER_CRED_ENTRY__INIT;

	sk_opts_fill(&f->sk->opts, &opts);
	sk_unix_entry(f, &e, &cred);
	e.has_ext_peer_name = u->ext_peer_len > 0;
	e.ext_peer_name.len = u->ext_peer_len;
	e.ext_peer_name.data = (uint8_t *)u->ext_peer;
	fd_owner_fill(&fown, &f->fown);
	e.fown = &fown;
	e.opts = &opts;
	e.has_shutdown = true;
	e.shutdown = u->shutdown;
	e.name_dir = u->name_dir;
	if (u->has_perms) {
		perms.mode = u->mode;
		perms.uid = u->uid;
		perms.gid = u->gid;
		e.file_perms = &perms;
	}
	fe.type = FD_TYPES__UNIXSK;
	fe.id = f->id;
	fe.usk = &e;
	return img_write_msg(files, &fe.base);
}

int sk_unix_write_queue(const struct file_desc *f, struct image *img)
{
	const struct sk_unix *u = &f->sk->un;
	int ret = 0;

	for (size_t i = 0; i < u->nr_queue && !ret; i++) {
		const struct sk_packet *p = &u->queue[i];
		SkPacketEntry e = SK_PACKET_ENTRY__INIT;
		ScmEntry scm = SCM_ENTRY__INIT, *scms[1] = { &scm };

		e.id_for = f->id;
		e.length = p->len;
		e.has_sender = true;
		e.sender = p->sender;
		if (p->has_creds) {
			e.has_cred_pid = e.has_cred_uid = e.has_cred_gid = true;
			e.cred_pid = p->creds.pid;
			e.cred_uid = p->creds.uid;
			e.cred_gid = p->creds.gid;
		}
		if (p->nr_fds && p->fd_ids) {	/* the files in flight, in order (sk_scm.c) */
			scm.type = SCM_RIGHTS;
			scm.n_rights = p->nr_fds;
			scm.rights = p->fd_ids;
			scm.n_share_pid = scm.n_share_fd = p->share_pid ? p->nr_fds : 0;
			scm.share_pid = p->share_pid;
			scm.share_fd = p->share_fd;
			e.n_scm = 1;
			e.scm = scms;
		}	/* none: a copy of an earlier process's socket in a tree (sk_scm_tree.c) */
		ret = img_write_msg(img, &e.base);
		if (!ret)
			ret = img_write_raw(img, p->data, p->len);
	}
	return ret;
}

/* "a UNIX stream socket /run/x.sock LISTEN" */
void sk_unix_describe(const struct sk_diag *s, char *buf, size_t len)
{
	const char *type = s->type == SOCK_STREAM ? "stream" :
			   s->type == SOCK_DGRAM ? "datagram" : "seqpacket";
	char name[sizeof(s->name) + 16] = "(unnamed)";

	if (s->name_len && s->name[0])
		snprintf(name, sizeof(name), "%.*s", s->name_len, s->name);
	else if (s->name_len)
		snprintf(name, sizeof(name), "@%.*s", s->name_len - 1, s->name + 1);
	snprintf(buf, len, "a UNIX %s socket %s%s", type, name,
		 s->state == 10 ? " LISTEN" : s->peer ? " connected" : "");
}
