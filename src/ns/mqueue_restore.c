/*
 * POSIX message queues (ns/mqueue.c saved them in ipcns-var-1.img): in the
 * fresh IPC namespace this thread made, each queue is created with its name,
 * attributes, owner and mode, and its messages sent in the order they were
 * received at the dump, so mq_receive gives them in the same order again.
 * An fd on a queue is mq_open of its name in the namespace, with its access
 * mode and O_NONBLOCK.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <mqueue.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "image/image.h"
#include "ctx/restore_ctx.h"
#include "mqueue.pb-c.h"
#include "ns/mqueue.h"

static bool name_ok(const char *name)
{
	return name && name[0] && !strchr(name, '/') && strlen(name) <= NAME_MAX;
}

static int send_all(mqd_t mq, const MqueueEntry *e)
{
	for (size_t i = 0; i < e->n_msgs; i++)
		if (mq_send(mq, (const char *)e->msgs[i]->data.data, e->msgs[i]->data.len,
			    e->msgs[i]->prio))
			return fail(-errno, "POSIX message queue /%s: cannot queue message %zu of "
				    "%zu: %s", e->name, i + 1, e->n_msgs, strerror(errno));
	return 0;
}

static int create_one(const MqueueEntry *e)
{
	struct mq_attr a = { .mq_maxmsg = (long)e->maxmsg, .mq_msgsize = (long)e->msgsize };
	char path[NAME_MAX + 2];
	int ret = 0;
	mqd_t mq;

	if (!name_ok(e->name) || e->n_msgs > e->maxmsg)
		return fail(-EIO, "image ipcns-var-1.img is corrupt: a POSIX message queue named \"%s\" with %zu "
			    "of %" PRIu64 " messages", e->name ? e->name : "", e->n_msgs, e->maxmsg);
	snprintf(path, sizeof(path), "/%s", e->name);
	mq = mq_open(path, O_CREAT | O_EXCL | O_RDWR | O_NONBLOCK | O_CLOEXEC, 0600, &a);
	if (mq < 0)
		return fail(-errno, "cannot create POSIX message queue %s (%" PRIu64 " messages of "
			    "%" PRIu64 " bytes): %s", path, e->maxmsg, e->msgsize, strerror(errno));
	if (fchown(mq, e->uid, e->gid) || fchmod(mq, e->mode & 07777))
		ret = fail(-errno, "cannot give POSIX message queue %s its owner and mode: %s", path,
			   strerror(errno));
	if (!ret)
		ret = send_all(mq, e);
	mq_close(mq);
	if (!ret)
		pr_info("POSIX message queue %s: %zu messages\n", path, e->n_msgs);
	return ret;
}

int mqueue_restore_ns(MqueueEntry *const *q, size_t n)
{
	struct rlimit old, inf = { RLIM_INFINITY, RLIM_INFINITY };
	int ret = 0;

	getrlimit(RLIMIT_MSGQUEUE, &old);	/* memdump's user is charged: not the owner's limit */
	setrlimit(RLIMIT_MSGQUEUE, &inf);
	for (size_t i = 0; i < n && !ret; i++)
		ret = create_one(q[i]);
	setrlimit(RLIMIT_MSGQUEUE, &old);
	return ret;
}

int mqueue_check(const struct rst *r, const MqueueFileEntry *m)
{
	uint32_t own = r->ds.inv->has_own_ns ? r->ds.inv->own_ns : 0;

	if (!m || !name_ok(m->name) || (m->flags & ~(O_ACCMODE | O_NONBLOCK)))
		return fail(-EIO, "files.img is corrupt: a POSIX message queue fd without a name "
			    "or with flags %#x", m ? m->flags : 0);
	if (!(own & CLONE_NEWIPC))
		return fail(-EIO, "files.img is corrupt: a POSIX message queue /%s fd, but no IPC "
			    "namespace of its own", m->name);
	return 0;
}

int mqueue_open(const MqueueFileEntry *m)
{
	char path[NAME_MAX + 2];
	mqd_t mq;

	snprintf(path, sizeof(path), "/%s", m->name);
	mq = mq_open(path, (int)(m->flags & (O_ACCMODE | O_NONBLOCK)) | O_CLOEXEC);
	if (mq < 0)
		return fail(-errno, "cannot open POSIX message queue %s: %s", path, strerror(errno));
	return mq;
}
