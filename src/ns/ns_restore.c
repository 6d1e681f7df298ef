/*
 * The namespaces a dump saved (UTS, IPC, network: netns.c) made again, or joined
 * (--join-ns KIND:PATH). memdump's restoring thread moves into them before it
 * prepares anything, so the process it forks is born inside, and the System V
 * objects the process maps exist when the restorer blob attaches them (shmat
 * by id). It comes back to its own namespaces right after the fork.
 *
 * A fresh IPC namespace gets the dumped sysctls first, then every object with
 * its id (kernel.*_next_id before each create), key, owner, mode and content;
 * finally the *_next_id values the namespace had; its POSIX message queues
 * (mqueue.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/socket.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "nsswitch.h"
#include "image/image.h"
#include "ctx/restore_ctx.h"
#include "vma_status.h"

#include "ipc-msg.pb-c.h"
#include "ipc-sem.pb-c.h"
#include "ipc-shm.pb-c.h"
#include "ipc-var.pb-c.h"
#include "utsns.pb-c.h"
#include "ns/netns.h"
#include "ns/mqueue.h"
#include "ns/ns.h"

#define NS_ID		1

static int write_sysctl_text(const char *name, const char *buf)
{
	char path[96];
	int fd, n = (int)strlen(buf), ret = 0;

	snprintf(path, sizeof(path), "/proc/sys/%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, buf, n) != n)
		ret = fail(-errno, "cannot set %s to %.*s in the new IPC namespace: %s", path, n - 1,
			   buf, strerror(errno));
	if (fd >= 0)
		close(fd);
	return ret;
}

static int write_sysctl(const char *name, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64 "\n", v);
	return write_sysctl_text(name, buf);
}

/*
 * kernel.KIND_next_id, so that the next object gets this id. -1 (the
 * kernel's own choice) cannot be written, and is what every create leaves.
 */
static int next_id(const char *kind, uint32_t id)
{
	char name[48], buf[16];

	if ((int32_t)id < 0)
		return 0;
	snprintf(name, sizeof(name), "kernel/%s_next_id", kind);
	snprintf(buf, sizeof(buf), "%d\n", (int32_t)id);
	return write_sysctl_text(name, buf);
}

static int restore_uts(struct rst *r)
{
	UtsnsEntry *e;
	int ret = img_read_one(r->ds.dirfd, IMG_UTSNS, NS_ID, &utsns_entry__descriptor,
			       (void **)&e);

	if (ret)
		return ret;
	if (sethostname(e->nodename, strlen(e->nodename)) ||
	    setdomainname(e->domainname, strlen(e->domainname)))
		ret = fail(-errno, "cannot set the host name %s: %s", e->nodename, strerror(errno));
	img_free(&utsns_entry__descriptor, e);
	return ret;
}

static int restore_ipc_var(struct rst *r, IpcVarEntry **out)
{
	IpcVarEntry *e;
	char sem[64];
	int ret = img_read_one(r->ds.dirfd, IMG_IPC_VAR, NS_ID, &ipc_var_entry__descriptor,
			       (void **)&e);

	if (ret)
		return ret;
	if (e->n_sem_ctls != 4) {
		img_free(&ipc_var_entry__descriptor, e);
		return fail(-EIO, "ipcns-var-1.img: %zu semaphore limits, not 4", e->n_sem_ctls);
	}
	snprintf(sem, sizeof(sem), "%u %u %u %u\n", e->sem_ctls[0], e->sem_ctls[1],
		 e->sem_ctls[2], e->sem_ctls[3]);
	ret = write_sysctl_text("kernel/sem", sem);
	if (!ret) ret = write_sysctl("kernel/msgmax", e->msg_ctlmax);
	if (!ret) ret = write_sysctl("kernel/msgmnb", e->msg_ctlmnb);
	if (!ret) ret = write_sysctl("kernel/msgmni", e->msg_ctlmni);
	if (!ret) ret = write_sysctl("kernel/shmmax", e->shm_ctlmax);
	if (!ret) ret = write_sysctl("kernel/shmall", e->shm_ctlall);
	if (!ret) ret = write_sysctl("kernel/shmmni", e->shm_ctlmni);
	if (!ret) ret = write_sysctl("kernel/shm_rmid_forced", e->shm_rmid_forced);
	if (!ret) ret = write_sysctl("fs/mqueue/queues_max", e->mq_queues_max);
	if (!ret) ret = write_sysctl("fs/mqueue/msg_max", e->mq_msg_max);
	if (!ret) ret = write_sysctl("fs/mqueue/msgsize_max", e->mq_msgsize_max);
	if (!ret && e->has_mq_msg_default)
		ret = write_sysctl("fs/mqueue/msg_default", e->mq_msg_default);
	if (!ret && e->has_mq_msgsize_default)
		ret = write_sysctl("fs/mqueue/msgsize_default", e->mq_msgsize_default);
	if (ret)
		img_free(&ipc_var_entry__descriptor, e);
	else
		*out = e;
	return ret;
}

static int check_id(const char *what, int got, uint32_t want)
{
	if (got < 0)
		return fail(-errno, "cannot create System V %s %u: %s", what, want, strerror(errno));
	if ((uint32_t)got != want)
		return fail(-EEXIST, "System V %s %u came back as %d", what, want, got);
	return 0;
}

static void set_perm(struct ipc_perm *p, const IpcDescEntry *d)
{
	p->uid = d->uid;
	p->gid = d->gid;
	p->mode = d->mode & 0777;
}

static int fill_shm(struct image *img, int id, uint64_t size)
{
	char *mem = shmat(id, NULL, 0);
	int ret;

	if (mem == (void *)-1)
		return fail(-errno, "cannot attach System V shm %d: %s", id, strerror(errno));
	ret = img_read_raw(img, mem, size);
	shmdt(mem);
	if (!ret && size % 4) {
		char pad[4];

		ret = img_read_raw(img, pad, 4 - size % 4);
	}
	return ret;
}

static int restore_one_shm(struct image *img, const IpcShmEntry *e)
{
	const IpcDescEntry *d = e->desc;
	struct shmid_ds ds;
	int ret = next_id("shm", d->id), id;

	if (ret)
		return ret;
	if (e->has_in_pagemaps && e->in_pagemaps)
		return fail(-EOPNOTSUPP, "System V shm %u: content in pagemaps (not memdump's)",
			    d->id);
	unsigned long long huge = 1ULL << (e->hugetlb_flag >> VMA_MAP_HUGE_SHIFT & 0x3f);

	/* of huge pages: SHM_HUGETLB and their size, as dumped */
	id = shmget(d->key, e->size, IPC_CREAT | IPC_EXCL | (d->mode & 0777) |
		    (e->has_hugetlb_flag ? (int)e->hugetlb_flag : 0));
	if (id < 0 && e->has_hugetlb_flag)
		return fail(-errno, "cannot make System V shm %u of %" PRIu64 " bytes in huge pages "
			    "of %llu kB (%llu of them): %s", d->id, e->size, huge >> 10,
			    (e->size + huge - 1) / huge, strerror(errno));
	ret = check_id("shm segment", id, d->id);
	if (!ret)
		ret = fill_shm(img, id, e->size);
	if (!ret && shmctl(id, IPC_STAT, &ds) == 0) {
		set_perm(&ds.shm_perm, d);
		if (shmctl(id, IPC_SET, &ds))
			ret = fail(-errno, "cannot set the owner of System V shm %d: %s", id,
				   strerror(errno));
	}
	if (!ret && (d->mode & SHM_LOCKED) && shmctl(id, SHM_LOCK, NULL))
		ret = fail(-errno, "cannot lock System V shm %d: %s", id, strerror(errno));
	return ret;
}

static int restore_one_sem(struct image *img, const IpcSemEntry *e)
{
	const IpcDescEntry *d = e->desc;
	size_t len = e->nsems * sizeof(unsigned short), pad = (8 - len % 8) % 8;
	unsigned short *vals;
	struct semid_ds ds;
	int ret = next_id("sem", d->id), id;
	char zeros[8];

	if (ret)
		return ret;
	if (e->nsems > 65536)
		return fail(-EIO, "ipcns-sem-1.img: a set of %u semaphores", e->nsems);
	vals = calloc(e->nsems + 1, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	ret = img_read_raw(img, vals, len);
	if (!ret && pad)
		ret = img_read_raw(img, zeros, pad);
	id = ret ? -1 : semget(d->key, e->nsems, IPC_CREAT | IPC_EXCL | (d->mode & 0777));
	if (!ret)
		ret = check_id("semaphore set", id, d->id);
	if (!ret && semctl(id, 0, SETALL, vals))
		ret = fail(-errno, "cannot set System V semaphores %d: %s", id, strerror(errno));
	if (!ret && semctl(id, 0, IPC_STAT, &ds) == 0) {
		set_perm(&ds.sem_perm, d);
		if (semctl(id, 0, IPC_SET, &ds))
			ret = fail(-errno, "cannot set the owner of semaphores %d: %s", id,
				   strerror(errno));
	}
	free(vals);
	return ret;
}

static int send_msgs(struct image *img, int id, uint32_t n, size_t msgmax)
{
	struct { long mtype; char text[]; } *buf = malloc(sizeof(long) + msgmax + 8);
	int ret = buf ? 0 : -ENOMEM;

	for (uint32_t i = 0; !ret && i < n; i++) {
		IpcMsg *m;

		ret = img_read_msg(img, &ipc_msg__descriptor, (void **)&m);
		if (ret == 0)
			ret = fail(-EIO, "ipcns-msg-1.img: queue %d ends early", id);
		if (ret < 0)
			break;
		if (m->msize > msgmax)
			ret = fail(-EIO, "ipcns-msg-1.img: a message of %u bytes", m->msize);
		else
			ret = img_read_raw(img, buf->text, ALIGN_UP(m->msize, 8));
		buf->mtype = (long)m->mtype;
		if (!ret && msgsnd(id, buf, m->msize, IPC_NOWAIT))
			ret = fail(-errno, "cannot queue message %u on System V queue %d: %s", i, id,
				   strerror(errno));
		img_free(&ipc_msg__descriptor, m);
	}
	free(buf);
	return ret;
}

static int restore_one_msq(struct image *img, const IpcMsgEntry *e, size_t msgmax)
{
	const IpcDescEntry *d = e->desc;
	struct msqid_ds ds;
	int ret = next_id("msg", d->id), id;

	if (ret)
		return ret;
	id = msgget(d->key, IPC_CREAT | IPC_EXCL | (d->mode & 0777));
	ret = check_id("message queue", id, d->id);
	if (!ret && msgctl(id, IPC_STAT, &ds))
		ret = fail(-errno, "System V queue %d: %s", id, strerror(errno));
	/* room for every message first, the dumped limit once they are in */
	if (!ret && ds.msg_qbytes < e->qbytes) {
		ds.msg_qbytes = e->qbytes;
		if (msgctl(id, IPC_SET, &ds))
			ret = fail(-errno, "cannot raise System V queue %d to %u bytes: %s", id,
				   e->qbytes, strerror(errno));
	}
	if (!ret)
		ret = send_msgs(img, id, e->qnum, msgmax);
	if (!ret && msgctl(id, IPC_STAT, &ds) == 0) {
		set_perm(&ds.msg_perm, d);
		ds.msg_qbytes = e->qbytes;
		if (msgctl(id, IPC_SET, &ds))
			ret = fail(-errno, "cannot set System V queue %d: %s", id, strerror(errno));
	}
	return ret;
}

/* Every entry of one image, each with the data that follows it. */
static int restore_objects(struct rst *r, enum img_type t, const ProtobufCMessageDescriptor *desc,
			   int (*one)(struct image *, const void *, size_t), size_t arg)
{
	struct image *img;
	void *e;
	int ret = img_open(r->ds.dirfd, t, NS_ID, &img);

	if (ret)
		return ret;
	while ((ret = img_read_msg(img, desc, &e)) == 1) {
		ret = one(img, e, arg);
		img_free(desc, e);
		if (ret)
			break;
	}
	img_abort(img);
	return ret;
}

static int one_shm(struct image *img, const void *e, size_t arg)
{
	(void)arg;
	return restore_one_shm(img, e);
}

static int one_sem(struct image *img, const void *e, size_t arg)
{
	(void)arg;
	return restore_one_sem(img, e);
}

static int one_msq(struct image *img, const void *e, size_t msgmax)
{
	return restore_one_msq(img, e, msgmax);
}

static int restore_ipc(struct rst *r)
{
	IpcVarEntry *v = NULL;
	int ret = restore_ipc_var(r, &v);

	if (!ret)
		ret = restore_objects(r, IMG_IPCNS_SHM, &ipc_shm_entry__descriptor, one_shm, 0);
	if (!ret)
		ret = restore_objects(r, IMG_IPCNS_SEM, &ipc_sem_entry__descriptor, one_sem, 0);
	if (!ret)
		ret = restore_objects(r, IMG_IPCNS_MSG, &ipc_msg_entry__descriptor, one_msq,
				      v->msg_ctlmax);
	if (!ret)
		ret = mqueue_restore_ns(v->mqueues, v->n_mqueues);
	if (!ret && v->has_shm_next_id)
		ret = next_id("shm", v->shm_next_id);
	if (!ret && v->has_sem_next_id)
		ret = next_id("sem", v->sem_next_id);
	if (!ret && v->has_msg_next_id)
		ret = next_id("msg", v->msg_next_id);
	if (v)
		img_free(&ipc_var_entry__descriptor, v);
	return ret;
}

static const char *join_path(const struct restore_opts *o, const struct ns_kind *k)
{
	for (int i = 0; i < o->nr_join_ns; i++)
		if (!strcmp(o->join_ns[i].kind, k->name))
			return o->join_ns[i].path;
	return NULL;
}

/* Into the namespace at path, never through a symbolic link. */
static int join(const char *path, const struct ns_kind *k, int *back)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return fail(-errno, "--join-ns %s:%s: %s", k->name, path, strerror(errno));
	ret = ns_enter_fd(fd, k, back);
	close(fd);
	return ret;
}

static int fresh(struct rst *r, const struct ns_kind *k, int *back)
{
	char self[64];

	snprintf(self, sizeof(self), "/proc/thread-self/ns/%s", k->name);
	*back = open(self, O_RDONLY | O_CLOEXEC);
	if (*back < 0)
		return fail(-errno, "cannot open %s: %s", self, strerror(errno));
	if (unshare(k->flag))
		return fail(-errno, "cannot create a %s namespace: %s", k->name, strerror(errno));
	if (k->flag == CLONE_NEWUTS)
		return restore_uts(r);
	return k->flag == CLONE_NEWIPC ? restore_ipc(r) : netns_restore(r, *back);
}

/* --external veth[...] names devices memdump makes: in a fresh network namespace only. */
static int check_external(const struct rst *r, uint32_t own)
{
	if (!r->o->nr_veth_ext)
		return 0;
	if (join_path(r->o, ns_kind_by_name("net")))
		return fail(-EINVAL, "--external veth[%s] with --join-ns net: the devices of a joined "
			    "namespace are there already", r->o->veth_ext[0].in);
	if (!(own & CLONE_NEWNET))
		return fail(-EINVAL, "--external veth[%s]: the dump has no network namespace of its "
			    "own", r->o->veth_ext[0].in);
	return 0;
}

int rst_inherit_fd(const struct restore_opts *o, const char *key)
{
	for (int i = 0; key && i < o->nr_inherit_fd; i++)
		if (!strcmp(o->inherit_fd[i].key, key))
			return o->inherit_fd[i].fd;
	return -1;
}

/*
 * An external network namespace (the dump's ext_net_key, a runtime's): the
 * process goes into the one given for its key (--inherit-fd fd[N]:KEY, as
 * runc sends it, or --join-ns net:PATH), never into memdump's own. Every
 * --inherit-fd key must name something of the dump: a pipe, a terminal
 * (tty.c), or this.
 */
static int ext_net_path(const struct rst *r, char *buf, size_t len, const char **path)
{
	const char *key = r->ds.inv->ext_net_key;
	int fd = rst_inherit_fd(r->o, key);

	for (int i = 0; i < r->o->nr_inherit_fd; i++) {
		const char *k = r->o->inherit_fd[i].key;

		if (strncmp(k, "pipe:[", 6) && strncmp(k, "tty[", 4) && (!key || strcmp(k, key)))
			return fail(-EINVAL, "--inherit-fd fd[%d]:%s: the dump has nothing of that key",
				    r->o->inherit_fd[i].fd, k);
	}
	*path = join_path(r->o, ns_kind_by_name("net"));
	if (!key || *path)
		return 0;
	if (fd < 0)
		return fail(-EINVAL, "the dump's network namespace is external (key %s): give it "
			    "with --inherit-fd fd[N]:%s or --join-ns net:PATH", key, key);
	snprintf(buf, len, "/proc/self/fd/%d", fd);
	*path = buf;
	return 0;
}

int ns_restore_enter(struct rst *r)
{
	uint32_t own = r->ds.inv->has_own_ns ? r->ds.inv->own_ns : 0;
	const char *ext_net;
	char ext_buf[64];
	int err;

	for (int i = 0; i < nr_ns_kinds; i++)
		r->ns_back[i] = -1;
	err = check_external(r, own);
	if (!err)
		err = ext_net_path(r, ext_buf, sizeof(ext_buf), &ext_net);
	if (err)
		return err;
	for (int i = 0; i < nr_ns_kinds; i++) {
		const struct ns_kind *k = &ns_kinds[i];
		const char *path = k->flag == CLONE_NEWNET && ext_net ? ext_net : join_path(r->o, k);
		int ret;

		r->ns_back[i] = -1;
		if (path)
			ret = join(path, k, &r->ns_back[i]);
		else if (own & k->flag)
			ret = fresh(r, k, &r->ns_back[i]);
		else
			continue;
		if (ret) {
			ns_restore_leave(r);
			return ret;
		}
		pr_info("%s namespace: %s\n", k->name, path ? path : "new");
	}
	return 0;
}

void ns_restore_leave(struct rst *r)
{
	for (int i = 0; i < nr_ns_kinds; i++) {
		ns_return(r->ns_back[i], &ns_kinds[i]);
		r->ns_back[i] = -1;
	}
}

int ns_check_join(const struct restore_opts *o)
{
	for (int i = 0; i < o->nr_join_ns; i++) {
		const char *k = o->join_ns[i].kind;

		if (!strcmp(k, "pid"))
			return fail(-EINVAL, "--join-ns pid: memdump restores a process with its "
				    "own PIDs, in a new PID namespace or memdump's (as CRIU, it "
				    "joins no other)");
		if (!ns_kind_by_name(k) && strcmp(k, "mnt"))
			return fail(-EINVAL, "--join-ns %s: memdump joins uts, ipc, net and mnt "
				    "namespaces only", k);
	}
	return 0;
}
