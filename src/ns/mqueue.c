/*
 * POSIX message queues of an IPC namespace of the target's own, and its fds
 * on them. The queues are listed through a detached mount of the mqueue
 * filesystem made by this thread while it is in the namespace (fsopen,
 * fsmount: the namespace's own superblock, nothing mounted anywhere); each
 * one is read whole while the target is frozen (mq_receive of every message)
 * and its messages sent back in the order they came, so the queue is as it
 * was, into the namespace's ipcns-var-1.img (ipc_var_entry.mqueues, field
 * 50: memdump's, which crit skips; CRIU has no image for them).
 *
 * Refused by name: a queue with an mq_notify registration (sending the
 * messages back could fire it, and restore could not register it again),
 * an fd on a queue of memdump's IPC namespace (restoring it would replace
 * the host's queue), on an unlinked queue, or on a queue of another IPC
 * namespace than the process's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mqueue.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "ctx/file_desc.h"
#include "ns/mqueue.h"
#include "ctx/refusals.h"
#include "image/image.h"
#include "log.h"
#include "nsswitch.h"
#include "mqueue.pb-c.h"

#define MQUEUE_MAGIC	0x19800202
#define NS_ID		1

/* A detached mount of the mqueue filesystem of this thread's IPC namespace. */
static int ns_mqueue_root(void)
{
	int fs = fsopen("mqueue", FSOPEN_CLOEXEC), mnt;

	if (fs < 0)
		return fail(-errno, "cannot open the mqueue filesystem: %s", strerror(errno));
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0)) {
		close(fs);
		return fail(-errno, "cannot make the mqueue filesystem: %s", strerror(errno));
	}
	mnt = fsmount(fs, FSMOUNT_CLOEXEC, 0);
	close(fs);
	if (mnt < 0)
		return fail(-errno, "cannot mount the mqueue filesystem: %s", strerror(errno));
	return mnt;
}

/* NOTIFY_PID of a queue's file ("QSIZE:... NOTIFY:... SIGNO:... NOTIFY_PID:..."). */
static int notify_pid(int root, const char *name)
{
	char buf[256] = "", *p;
	int fd = openat(root, name, O_RDONLY | O_CLOEXEC), n;

	if (fd < 0)
		return fail(-errno, "cannot open POSIX message queue /%s: %s", name, strerror(errno));
	n = (int)read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return fail(-errno, "cannot read POSIX message queue /%s: %s", name, strerror(errno));
	buf[n] = 0;
	p = strstr(buf, "NOTIFY_PID:");
	return p ? atoi(p + 11) : 0;
}

/* Each queue of the namespace this thread is in: fn(root, name, arg); stops at <0. */
static int each_queue(int (*fn)(int, const char *, void *), void *arg)
{
	int root = ns_mqueue_root(), dfd, ret = 0;
	struct dirent *e;
	DIR *dir;

	if (root < 0)
		return root;
	dfd = openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dir = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!dir) {
		ret = fail(-errno, "cannot list the POSIX message queues: %s", strerror(errno));
		if (dfd >= 0)
			close(dfd);
		close(root);
		return ret;
	}
	while (!ret && (e = readdir(dir)))
		if (e->d_name[0] != '.')
			ret = fn(root, e->d_name, arg);
	closedir(dir);
	close(root);
	return ret;
}

static int refuse_one(int root, const char *name, void *arg)
{
	int pid = notify_pid(root, name);

	if (pid > 0)
		refuse_add(arg, "POSIX message queue /%s with an mq_notify registration "
			   "(process %d), which restore does not make again", name, pid);
	return 0;
}

void mqueue_refuse(struct refusals *r)
{
	if (each_queue(refuse_one, r))
		fail_clear();	/* the dump reads them again and says why */
}

struct mq_msgs {
	MqueueMsg *m;
	MqueueMsg **pm;
	size_t n;
};

static void msgs_free(struct mq_msgs *q)
{
	for (size_t i = 0; q->m && i < q->n; i++)
		free(q->m[i].data.data);
	free(q->m);
	free(q->pm);
}

/* The next message (highest priority first) into q; 0, 1: none left, or -ENOMEM (none taken). */
static int take_one(mqd_t mq, size_t size, struct mq_msgs *q)
{
	MqueueMsg *m = &q->m[q->n];
	uint8_t *buf = malloc(size + 1);	/* before the message leaves the queue */
	unsigned prio;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	n = mq_receive(mq, (char *)buf, size, &prio);
	if (n < 0) {
		free(buf);
		return 1;
	}
	mqueue_msg__init(m);
	m->prio = prio;
	m->data.len = (size_t)n;
	m->data.data = buf;
	q->pm[q->n++] = m;
	return 0;
}

/* Every message out, then back in, in the same order; copies of them in q. */
static int take_and_put_back(mqd_t mq, const char *name, const struct mq_attr *a,
			     struct mq_msgs *q)
{
	size_t cur = (size_t)a->mq_curmsgs, size = (size_t)a->mq_msgsize;
	int ret = 0, got = 0;

	q->m = calloc(cur + 1, sizeof(*q->m));
	q->pm = calloc(cur + 1, sizeof(*q->pm));
	if (!q->m || !q->pm)
		return -ENOMEM;
	while (q->n < cur && !(got = take_one(mq, size, q)))
		;	/* fewer than it said: what came goes back */
	for (size_t i = 0; i < q->n; i++)
		if (mq_send(mq, (char *)q->m[i].data.data, q->m[i].data.len, q->m[i].prio))
			ret = ret ?: fail(-errno, "POSIX message queue /%s: cannot put message %zu "
					  "of %zu back: %s", name, i + 1, q->n, strerror(errno));
	if (!ret && got < 0)	/* put back after the ones still in: their order may differ */
		ret = fail(got, "POSIX message queue /%s: out of memory after %zu of %zu messages",
			   name, q->n, cur);
	return ret;
}

/* A queue as dumped: its entry first, so that the set's pointers to entries free it. */
struct mq_queue {
	MqueueEntry e;
	struct mq_msgs msgs;
};

/* One more queue into s; its messages are taken from q. */
static int add_queue(struct mq_set *s, const char *name, const struct stat *st,
		     const struct mq_attr *a, struct mq_msgs *q)
{
	MqueueEntry **v = realloc(s->q, (s->n + 1) * sizeof(*v));
	struct mq_queue *mq = calloc(1, sizeof(*mq));
	char *n = strdup(name);

	if (v)
		s->q = v;
	if (!v || !mq || !n) {
		free(mq);
		free(n);
		return -ENOMEM;
	}
	mqueue_entry__init(&mq->e);
	mq->e.name = n;
	mq->e.mode = st->st_mode & 07777;
	mq->e.uid = st->st_uid;
	mq->e.gid = st->st_gid;
	mq->e.maxmsg = (uint64_t)a->mq_maxmsg;
	mq->e.msgsize = (uint64_t)a->mq_msgsize;
	mq->msgs = *q;
	*q = (struct mq_msgs){ 0 };
	mq->e.n_msgs = mq->msgs.n;
	mq->e.msgs = mq->msgs.pm;
	s->q[s->n++] = &mq->e;
	return 0;
}

static int dump_one(int root, const char *name, void *arg)
{
	struct mq_msgs q = { 0 };
	struct mq_attr a;
	struct stat st;
	char path[NAME_MAX + 2];
	int ret = notify_pid(root, name);
	mqd_t mq;

	if (ret > 0)
		return fail(-EOPNOTSUPP, "POSIX message queue /%s has an mq_notify registration "
			    "(process %d), which restore does not make again", name, ret);
	if (ret < 0)
		return ret;
	if (fstatat(root, name, &st, 0))
		return fail(-errno, "cannot stat POSIX message queue /%s: %s", name, strerror(errno));
	snprintf(path, sizeof(path), "/%s", name);
	mq = mq_open(path, O_RDWR | O_NONBLOCK);
	if (mq < 0)
		return fail(-errno, "cannot open POSIX message queue %s: %s", path, strerror(errno));
	ret = mq_getattr(mq, &a) ? fail(-errno, "mq_getattr %s: %s", path, strerror(errno)) : 0;
	if (!ret)
		ret = take_and_put_back(mq, name, &a, &q);
	mq_close(mq);
	if (!ret)
		pr_info("POSIX message queue %s: %zu messages\n", path, q.n);
	if (!ret)
		ret = add_queue(arg, name, &st, &a, &q);
	msgs_free(&q);
	return ret;
}

void mqueue_set_free(struct mq_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		struct mq_queue *mq = (struct mq_queue *)s->q[i];

		msgs_free(&mq->msgs);
		free(mq->e.name);
		free(mq);
	}
	free(s->q);
	*s = (struct mq_set){ 0 };
}

int mqueue_dump(struct mq_set *s)
{
	int ret = each_queue(dump_one, s);

	if (ret)
		mqueue_set_free(s);
	return ret;
}

bool mqueue_is_fd(pid_t pid, int fd)
{
	char path[64];
	struct statfs sf;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	return !statfs(path, &sf) && (long)sf.f_type == MQUEUE_MAGIC;
}

/* The device of the mqueue filesystem of pid's IPC namespace, 0: unknown. */
static dev_t ns_mqueue_dev(pid_t pid)
{
	const struct ns_kind *k = ns_kind_by_name("ipc");
	struct stat st = { 0 };
	int back, root;

	if (ns_enter_pid(pid, k, &back))
		return 0;
	root = ns_mqueue_root();
	ns_return(back, k);
	if (root < 0) {
		fail_clear();
		return 0;
	}
	if (fstat(root, &st))
		st.st_dev = 0;
	close(root);
	return st.st_dev;
}

const char *mqueue_unsupported(pid_t pid, const char *link, const struct stat *st)
{
	size_t n = strlen(link);

	if (!ns_is_own(pid, ns_kind_by_name("ipc")))
		return "a POSIX message queue (mq_open) of memdump's IPC namespace, which a "
		       "restore would replace";
	if (n > 10 && !strcmp(link + n - 10, " (deleted)"))
		return "an unlinked POSIX message queue (mq_open)";
	if (link[0] != '/' || strchr(link + 1, '/') || ns_mqueue_dev(pid) != st->st_dev)
		return "a POSIX message queue (mq_open) of another IPC namespace";
	return NULL;
}
