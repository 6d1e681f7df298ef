/*
 * Which socket fds of the target memdump can dump, and the dispatch to each
 * kind. The refusal (before the freeze) and the collection (frozen) ask the
 * same questions: a socket is described by name in either case.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/sockios.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "ctx/file_desc.h"
#include "ctx/refusals.h"
#include "net/sock.h"
#include "ctx/proc_tree.h"
#include "image/image.h"
#include "fault.h"
#include "log.h"
#include "netlock.h"
#include "ns/ns.h"

#include "files.pb-c.h"
#include "files/sockets.h"
#include "inet/sk_inet.h"
#include "unix/sk_unix.h"

void sk_describe(const struct sk_diag *s, char *buf, size_t len)
{
	if (s->family == AF_UNIX) {
		sk_unix_describe(s, buf, len);
		return;
	}
	if (s->family == AF_NETLINK) {
		sk_netlink_describe(s, buf, len);
		return;
	}
	if (s->family == AF_PACKET) {
		sk_packet_describe(s, buf, len);
		return;
	}
	sk_inet_describe(s, buf, len);
}

/* A socket sock_diag does not list (packet, raw, netlink, unbound inet): from the fd. */
static void describe_fd(int copy, char *buf, size_t len)
{
	static const struct { int family; const char *name; } families[] = {
		{ AF_UNIX, "a UNIX" }, { AF_INET, "an IPv4" }, { AF_INET6, "an IPv6" },
		{ AF_NETLINK, "a netlink" }, { AF_PACKET, "a packet" },
	};
	static const char *types[] = { [SOCK_STREAM] = "stream", [SOCK_DGRAM] = "datagram",
				       [SOCK_RAW] = "raw", [SOCK_SEQPACKET] = "seqpacket" };
	int family = -1, type = -1, proto = -1;
	socklen_t l = sizeof(int);
	const char *fam = NULL, *ty = "other";

	getsockopt(copy, SOL_SOCKET, SO_DOMAIN, &family, &l);
	l = sizeof(int);
	getsockopt(copy, SOL_SOCKET, SO_TYPE, &type, &l);
	l = sizeof(int);
	getsockopt(copy, SOL_SOCKET, SO_PROTOCOL, &proto, &l);
	for (size_t i = 0; i < ARRAY_SIZE(families); i++)
		if (families[i].family == family)
			fam = families[i].name;
	if (type > 0 && type < (int)ARRAY_SIZE(types) && types[type])
		ty = types[type];
	if (family == AF_NETLINK)
		sk_netlink_describe_fd(copy, buf, len);
	else if (fam)
		snprintf(buf, len, "%s %s socket (protocol %d)", fam, ty, proto);
	else
		snprintf(buf, len, "a socket of family %d", family);
}

/* The inode of net namespace file path, 0 if it cannot be read. */
static unsigned long netns_ino(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : (unsigned long)st.st_ino;
}

/*
 * A socket sock_diag does not list: of another network namespace than the
 * one memdump asks it in (the holder's own, or the tree root's)? Made in a
 * namespace its process entered and left since (zdtm netns_sub), or held by
 * a process of the tree in another namespace than the root's.
 */
static const char *unlisted(int copy, pid_t pid, char *buf, size_t len)
{
	char path[64];
	struct stat its;
	int ns = ioctl(copy, SIOCGSKNS);
	bool known;

	if (ns < 0)
		return "it is not in sock_diag";
	known = !fstat(ns, &its);
	close(ns);
	snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
	if (known && its.st_ino != netns_ino(path))
		snprintf(buf, len, "it was made in another network namespace (net:[%lu]) than the "
			 "one its process is in: memdump reads and makes a socket in its holder's "
			 "namespace only", (unsigned long)its.st_ino);
	else if (known && its.st_ino != netns_ino("/proc/thread-self/ns/net"))
		snprintf(buf, len, "it is of its process's network namespace (net:[%lu]), another "
			 "than the tree's root's, where memdump reads sockets", (unsigned long)its.st_ino);
	else
		return "it is not in sock_diag";
	return buf;
}

/* Why the socket behind copy (inode ino) cannot be dumped, in buf; false when it can. */
static bool unsupported(int copy, uint64_t ino, const struct sk_set *set, pid_t pid, char *buf,
			size_t len)
{
	const struct sk_diag *s = sk_table_find(&set->diag, ino);
	char what[256];
	const char *why;
	int family = -1;
	socklen_t l = sizeof(family);

	getsockopt(copy, SOL_SOCKET, SO_DOMAIN, &family, &l);
	if (s)
		sk_describe(s, what, sizeof(what));
	else
		describe_fd(copy, what, sizeof(what));
	if (family == AF_UNIX)
		why = !s ? unlisted(copy, pid, buf, len) :
		      sk_unix_unsupported(s, set, buf, len) ?:
		      sk_unix_peercred_unsupported(copy, set, pid, buf, len);
	else if (family == AF_INET || family == AF_INET6)
		why = sk_inet_unsupported(copy, s, set, buf, len);
	else if (family == AF_NETLINK)
		why = sk_netlink_unsupported(copy, s, buf, len);
	else if (family == AF_PACKET)
		why = sk_packet_unsupported(copy, s, set, buf, len);
	else
		why = "memdump dumps UNIX, inet, netlink and packet sockets only";
	if (!why)
		return false;
	if (why == buf) {
		char tmp[256];

		snprintf(tmp, sizeof(tmp), "%s", buf);
		snprintf(buf, len, "%s: %s", what, tmp);
	} else {
		snprintf(buf, len, "%s: %s", what, why);
	}
	return true;
}

static int copy_fd(int pidfd, int fd)
{
	return syscall(SYS_pidfd_getfd, pidfd, fd, 0);
}

/* Every socket inode of pid's fds. */
static int list_inos_into(pid_t pid, uint64_t **inos, size_t *nr)
{
	char path[64];
	struct dirent *de;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	dir = opendir(path);
	if (!dir)
		return fail(-errno, "cannot list %s: %s", path, strerror(errno));
	while ((de = readdir(dir))) {
		char link[PATH_MAX];
		struct stat st;
		uint64_t *n;

		snprintf(link, sizeof(link), "%s/%s", path, de->d_name);
		if (de->d_name[0] == '.' || stat(link, &st) || !S_ISSOCK(st.st_mode))
			continue;
		n = realloc(*inos, (*nr + 1) * sizeof(*n));
		if (!n) {
			closedir(dir);
			return -ENOMEM;
		}
		*inos = n;
		(*inos)[(*nr)++] = st.st_ino;
	}
	closedir(dir);
	return 0;
}

static int cmp_tree_sk(const void *a, const void *b)
{
	const struct tree_sk *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino ? 1 : x->pid - y->pid;
}

int sk_tree_index(struct proc_tree *t)
{
	uint64_t *inos = NULL;
	size_t n = 0, done = 0;
	int ret = 0;

	free(t->sk);
	t->sk = NULL;
	t->nr_sk = 0;
	for (int i = 0; i < t->n && ret != -ENOMEM; i++) {
		const struct tree_proc *p = &t->procs[i];
		struct tree_sk *sk;

		if (tree_is_zombie(p))
			continue;
		ret = list_inos_into(p->pid, &inos, &n);
		sk = realloc(t->sk, (n + 1) * sizeof(*sk));
		if (!sk) {
			ret = -ENOMEM;
			break;
		}
		t->sk = sk;
		for (; done < n; done++)
			t->sk[done] = (struct tree_sk){ inos[done], p->pid };
	}
	free(inos);
	fail_clear();	/* one that exited meanwhile: the tree's freeze tells */
	if (ret == -ENOMEM) {
		free(t->sk);
		t->sk = NULL;
		return ret;
	}
	qsort(t->sk, done, sizeof(*t->sk), cmp_tree_sk);
	t->nr_sk = done;
	return 0;
}

/* From the tree's index: each socket another process than pid holds, once. */
static int tree_inos_indexed(pid_t pid, struct sk_set *set)
{
	const struct proc_tree *t = set->tree;

	set->tree_inos = malloc((t->nr_sk + 1) * sizeof(*set->tree_inos));
	if (!set->tree_inos)
		return -ENOMEM;
	for (size_t i = 0; i < t->nr_sk; i++)
		if (t->sk[i].pid != pid && (!set->nr_tree_inos ||
		    set->tree_inos[set->nr_tree_inos - 1] != t->sk[i].ino))
			set->tree_inos[set->nr_tree_inos++] = t->sk[i].ino;
	return 0;
}

/*
 * The sockets the tree's other processes hold (a tree dump): a peer there is no outsider.
 * Once the tree is frozen, from its index: each process listing every other's fds
 * was quadratic (250 processes of 682 inherited sockets each: minutes, zdtm session03).
 */
static int list_tree_inos(pid_t pid, struct sk_set *set)
{
	if (set->tree && set->tree->sk)
		return tree_inos_indexed(pid, set);
	for (int i = 0; set->tree && i < set->tree->n; i++) {
		const struct tree_proc *p = &set->tree->procs[i];

		if (p->pid != pid && !tree_is_zombie(p) &&
		    list_inos_into(p->pid, &set->tree_inos, &set->nr_tree_inos) == -ENOMEM)
			return -ENOMEM;
	}
	fail_clear();	/* one that exited meanwhile: the tree's freeze tells */
	return 0;
}

/*
 * The target's sockets, the tree's, and the kernel's socket table
 * (sock_diag), which is only looked up for the target's own socket fds:
 * without any, it is not read (a netlink dump of every socket of the host,
 * ~10 ms of frozen time here).
 */
static int load_set(pid_t pid, struct sk_set *set)
{
	int ret = list_inos_into(pid, &set->inos, &set->nr_inos);

	if (!ret)
		ret = list_tree_inos(pid, set);
	if (ret || !set->nr_inos)
		return ret;
	return sk_table_load(&set->diag);
}

static void refuse_fd(pid_t pid, int pidfd, int fd, const struct stat *st, const struct sk_set *set,
		      struct refusals *r)
{
	char why[600];
	int copy = copy_fd(pidfd, fd);

	if (copy < 0) {
		refuse_add(r, "fd %d (a socket memdump cannot copy: %s)", fd, strerror(errno));
		return;
	}
	if (unsupported(copy, st->st_ino, set, pid, why, sizeof(why)))
		refuse_add(r, "fd %d (socket:[%lu]: %s)", fd, (unsigned long)st->st_ino, why);
	close(copy);
}

void sockets_refuse(pid_t pid, const struct dump_opts *o, struct refusals *r)
{
	struct sk_set set = { .tcp_established = o->tcp_established, .tcp_close = o->tcp_close,
			      .skip_in_flight = o->skip_in_flight, .ext_unix_sk = o->ext_unix_sk,
			      .tree = o->tree,
			      .netns_saved = ns_saved_mask(pid, o->ext_net_ino) & CLONE_NEWNET };
	int pidfd = syscall(SYS_pidfd_open, pid, 0);
	char path[64];
	struct dirent *de;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	if (pidfd < 0 || load_set(pid, &set) || !(dir = opendir(path))) {
		if (pidfd >= 0)
			close(pidfd);
		sk_set_free(&set);
		return;		/* collect_fds looks again, and fails */
	}
	while ((de = readdir(dir))) {
		char link[PATH_MAX];
		struct stat st;

		snprintf(link, sizeof(link), "%s/%s", path, de->d_name);
		if (de->d_name[0] != '.' && !stat(link, &st) && S_ISSOCK(st.st_mode))
			refuse_fd(pid, pidfd, atoi(de->d_name), &st, &set, r);
	}
	closedir(dir);
	close(pidfd);
	sk_set_free(&set);
}

/*
 * For the supervisor, should we die with pid's lock on. A tree's processes
 * each lock their own connections: a connection between two of them is in
 * both locks, and passes when both are off.
 */
static int trace_locked(struct dump_trace *tr, pid_t pid)
{
	int n;

	if (!tr)
		return 0;
	n = tr->nr_net;
	if (n == DUMP_TRACE_NETS)
		return fail(-E2BIG, "established TCP connections in more than %d processes",
			    DUMP_TRACE_NETS);
	tr->net[n].pid = pid;
	tr->net[n].locked = 1;
	__atomic_store_n(&tr->nr_net, n + 1, __ATOMIC_RELEASE);
	return 0;
}

/* Done with pid: nothing of its left for the supervisor to undo (the others' stay). */
static void trace_forget(struct dump_trace *tr, pid_t pid)
{
	int k = 0;

	if (!tr)
		return;
	for (int i = 0; i < tr->nr_repair; i++)
		if (tr->repair[i].pid != pid) {
			tr->repair[k].ino = tr->repair[i].ino;
			tr->repair[k].reuseaddr = tr->repair[i].reuseaddr;
			tr->repair[k++].pid = tr->repair[i].pid;
		}
	__atomic_store_n(&tr->nr_repair, k, __ATOMIC_RELEASE);
	k = 0;
	for (int i = 0; i < tr->nr_net; i++)
		if (tr->net[i].pid != pid) {
			tr->net[k].locked = tr->net[i].locked;
			tr->net[k++].pid = tr->net[i].pid;
		}
	__atomic_store_n(&tr->nr_net, k, __ATOMIC_RELEASE);
}

/* --tcp-established: lock the target's connections (tcp_repairable) before reading them. */
static int lock_connections(struct dump_ctx *d)
{
	struct sk_set *set = &d->sockets;
	struct netlock_conn *c = calloc(set->nr_inos + 1, sizeof(*c));
	size_t n = 0;
	int ret = 0;

	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < set->nr_inos; i++) {
		const struct sk_diag *s = sk_table_find(&set->diag, set->inos[i]);

		if (!s || (s->family != AF_INET && s->family != AF_INET6) || s->proto != IPPROTO_TCP ||
		    !tcp_repairable(s->state))
			continue;
		c[n].family = s->family;
		memcpy(c[n].src, s->src, 16);
		memcpy(c[n].dst, s->dst, 16);
		c[n].sport = s->sport;
		c[n++].dport = s->dport;
	}
	if (n)
		ret = trace_locked(d->trace, d->pid);	/* before: a half-made lock is removed too */
	if (n && !ret)
		ret = netlock_add(&set->lock, d->pid, c, n);
	set->locked = n && !ret;
	if (set->locked)
		fault_point("net-locked");
	free(c);
	return ret;
}

int sockets_prepare(struct dump_ctx *d, const struct dump_opts *o)
{
	int ret;

	d->sockets.tree = d->tree;
	ret = load_set(d->pid, &d->sockets);

	d->sockets.tcp_established = o->tcp_established;
	d->sockets.tcp_close = o->tcp_close;
	d->sockets.skip_in_flight = o->skip_in_flight;
	d->sockets.ext_unix_sk = o->ext_unix_sk;
	d->sockets.netns_saved = d->own_ns & CLONE_NEWNET;
	if (!ret && o->tcp_established)
		ret = lock_connections(d);
	return ret;
}

int sockets_collect(struct dump_ctx *d, int fd, struct file_desc *f)
{
	struct sk_state *s = calloc(1, sizeof(*s));
	int copy = copy_fd(d->in.pidfd, fd), ret;
	const struct sk_diag *dg = sk_table_find(&d->sockets.diag, f->st.st_ino);
	char why[600];

	if (!s || copy < 0) {
		ret = copy < 0 ? fail(-errno, "cannot copy socket fd %d: %s", fd, strerror(errno)) :
				 -ENOMEM;
		free(s);
		if (copy >= 0)
			close(copy);
		return ret;
	}
	f->sk = s;
	s->ino = f->st.st_ino;
	if (unsupported(copy, s->ino, &d->sockets, d->pid, why, sizeof(why))) {
		close(copy);
		return fail(-EOPNOTSUPP, "process %d: fd %d is %s", d->pid, fd, why);
	}
	ret = sk_opts_read(copy, &s->opts);
	if (ret)
		ret = fail(ret, "fd %d: cannot read the socket's options: %s", fd, strerror(-ret));
	else if (dg && dg->family == AF_UNIX) {
		s->family = AF_UNIX;
		ret = sk_unix_collect(d, copy, dg, s);
	} else {
		socklen_t l = sizeof(s->family);

		getsockopt(copy, SOL_SOCKET, SO_DOMAIN, &s->family, &l);
		ret = s->family == AF_NETLINK ? sk_netlink_collect(copy, dg, s) :
		      s->family == AF_PACKET ? sk_packet_collect(copy, dg, s) :
					       sk_inet_collect(d, copy, dg, s);
	}
	close(copy);
	return ret;
}

int sockets_write(const struct file_desc *f, struct image *files)
{
	switch (f->sk->family) {
	case AF_UNIX:
		return sk_unix_write(f, files);
	case AF_NETLINK:
		return sk_netlink_write(f, files);
	case AF_PACKET:
		return sk_packet_write(f, files);
	}
	return sk_inet_write(f, files);
}

int sockets_fd_type(const struct file_desc *f)
{
	switch (f->sk->family) {
	case AF_UNIX:
		return FD_TYPES__UNIXSK;
	case AF_NETLINK:
		return FD_TYPES__NETLINKSK;
	case AF_PACKET:
		return FD_TYPES__PACKETSK;
	}
	return FD_TYPES__INETSK;
}

/* A socket whose queue is not dumped: datagram (UDP, UDP-lite, ICMP), raw, netlink, packet. */
static bool queue_refused(const struct sk_state *s)
{
	if (s->family == AF_NETLINK || s->family == AF_PACKET)
		return true;
	return (s->family == AF_INET || s->family == AF_INET6) &&
	       (s->in.type == SOCK_DGRAM || s->in.type == SOCK_RAW);
}

int sockets_check_queues(struct dump_ctx *d)
{
	struct file_set *fs = &d->files;
	struct sk_table now = { 0 };
	bool loaded = false;
	int ret = 0;

	for (int i = 0; i < fs->nr_descs && !ret; i++) {
		const struct file_desc *f = &fs->descs[i];
		const struct sk_diag *s;
		char what[256];

		if (f->kind != FK_SOCKET || !queue_refused(f->sk))
			continue;
		if (!loaded && (ret = sk_table_load(&now)))
			return ret;
		loaded = true;
		s = sk_table_find(&now, f->sk->ino);
		if (!s || !s->rqueue)
			continue;
		sk_describe(s, what, sizeof(what));
		ret = fail(-EAGAIN, "process %d: socket:[%lu] (%s) received %u bytes during the "
			   "dump, which memdump does not dump", d->pid, (unsigned long)s->ino, what,
			   s->rqueue);
	}
	sk_table_free(&now);
	return ret;
}

int sockets_check_peercred(struct dump_ctx *const *ds, size_t n)
{
	return sk_unix_cred_check(ds, n);
}

int sockets_write_data(struct dump_ctx *d)
{
	struct file_set *fs = &d->files;
	struct image *img = NULL;
	int ret = 0;

	for (int i = 0; i < fs->nr_descs && !ret; i++) {
		const struct file_desc *f = &fs->descs[i];

		if (f->kind != FK_SOCKET)
			continue;
		if (f->sk->family == AF_UNIX && f->sk->un.nr_queue) {
			if (!img)
				ret = img_create(&d->dir, IMG_SK_QUEUES, 0, &img);
			if (!ret)
				ret = sk_unix_write_queue(f, img);
		} else if ((f->sk->family == AF_INET || f->sk->family == AF_INET6) &&
			   f->sk->in.stream) {
			ret = tcp_stream_write(d, f);
		}
	}
	if (img && ret)
		img_abort(img);
	else if (img)
		ret = img_close(img);
	return ret;
}

/*
 * The target is killed (SIGKILL sent: it never runs again; memdump's copies
 * keep its sockets open): repair mode on, so that closing them sends
 * nothing, then the owned lock swapped for a plain one that stays until the
 * restore takes it off.
 */
static int finish_killed(struct sk_set *set)
{
	int on = 1, ret = 0;

	for (size_t i = 0; i < set->nr_repair; i++)
		if (setsockopt(set->repair[i].fd, SOL_TCP, TCP_REPAIR, &on, sizeof(on)) && !ret)
			ret = fail(-errno, "cannot put a TCP connection of the killed target in "
				   "repair mode: %m");
	if (set->locked) {
		int r = netlock_keep(&set->lock);

		ret = ret ?: r;
	}
	return ret;
}

void sockets_unlock(struct dump_ctx *d)
{
	struct sk_set *set = &d->sockets;

	if (!set->locked)
		return;
	netlock_release(&set->lock);
	set->locked = false;
	fault_point("net-unlocked");
}

/*
 * Resumed or failed: the lock off (if sockets_unlock() has not taken it
 * off yet), then a window probe (TCP_REPAIR off; the sockets left repair mode
 * as soon as they were read, tcp_stream_collect()) to restart what the lock
 * held back.
 */
static void finish_resumed(struct dump_ctx *d)
{
	struct sk_set *set = &d->sockets;
	int off = 0;

	sockets_unlock(d);
	for (size_t i = 0; i < set->nr_repair; i++) {
		int fd = set->repair[i].fd;

		if (setsockopt(fd, SOL_TCP, TCP_REPAIR, &off, sizeof(off)) ||
		    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &set->repair[i].reuseaddr, sizeof(int)))
			pr_warn("cannot send a TCP connection's window probe: %s\n", strerror(errno));
	}
}

int sockets_finish(struct dump_ctx *d, bool killed)
{
	struct sk_set *set = &d->sockets;
	int ret = 0;

	if (killed)
		ret = finish_killed(set);
	else
		finish_resumed(d);
	for (size_t i = 0; i < set->nr_repair; i++)
		close(set->repair[i].fd);
	set->nr_repair = 0;
	set->locked = false;
	trace_forget(d->trace, d->pid);
	return ret;
}

void sk_state_free(struct sk_state *s)
{
	if (!s)
		return;
	sk_opts_free(&s->opts);
	if (s->family == AF_UNIX) {
		for (size_t i = 0; i < s->un.nr_queue; i++) {
			free(s->un.queue[i].data);
			sk_scm_free(&s->un.queue[i]);
		}
		free(s->un.queue);
		free(s->un.name_dir);
	} else if (s->family == AF_NETLINK) {
		free(s->nl.groups);
	} else if (s->family == AF_PACKET) {
		free(s->pk.mc);
	} else {
		tcp_stream_free(s->in.stream);
	}
	free(s);
}

void sk_set_free(struct sk_set *s)
{
	sk_table_free(&s->diag);
	free(s->inos);
	free(s->tree_inos);
	free(s->repair);
	s->tree_inos = NULL;
	s->nr_tree_inos = 0;
	s->inos = NULL;
	s->repair = NULL;
	s->nr_inos = s->nr_repair = 0;
}
