/*
 * A target's own UTS and IPC namespaces. Everything is read from inside:
 * this thread enters the namespace (setns), asks the kernel as any process
 * there would (uname, shmctl/semctl/msgctl *_STAT, shmat, msgrcv MSG_COPY,
 * /proc/sys/kernel/...), and comes back. The target is frozen meanwhile, so
 * the content is one instant, as its memory is; a namespace some process
 * outside the dump shares could change under it, and is refused.
 *
 * Not saved (documented in docs/trees-and-namespaces.md): SysV times and last PIDs
 * (shm_atime, sem_otime, msg_lspid ...), semaphore undo lists (SEM_UNDO
 * adjustments are lost). POSIX message queues: mqueue.c (in ipcns-var-1.img).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "ns/netns.h"
#include "ns/mntns.h"
#include "ns/mqueue.h"
#include "ns/ns.h"
#include "ns/timens.h"
#include "ctx/proc_tree.h"
#include "ctx/refusals.h"
#include "image/image.h"
#include "log.h"
#include "nsswitch.h"
#include "proc.h"
#include "vma_status.h"

#include "ipc-msg.pb-c.h"
#include "ipc-sem.pb-c.h"
#include "ipc-shm.pb-c.h"
#include "ipc-var.pb-c.h"
#include "utsns.pb-c.h"

#define NS_ID		1	/* the one namespace of each kind in a set */

uint32_t ns_own_mask(pid_t pid)
{
	uint32_t m = 0;

	for (int i = 0; i < nr_ns_kinds; i++)
		if (ns_is_own(pid, &ns_kinds[i]))
			m |= ns_kinds[i].flag;
	if (mntns_own(pid))
		m |= CLONE_NEWNS;	/* mntns.c */
	if (timens_own(pid))
		m |= CLONE_NEWTIME;	/* timens.c */
	return m;
}

uint32_t ns_saved_mask(pid_t pid, uint64_t ext_net_ino)
{
	uint32_t m = ns_own_mask(pid);
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
	if ((m & CLONE_NEWNET) && ext_net_ino && !stat(path, &st) && st.st_ino == ext_net_ino)
		m &= ~CLONE_NEWNET;
	return m;
}

void ns_fill_ids(uint32_t own, TaskKobjIdsEntry *ids)
{
	ids->has_uts_ns_id = ids->has_ipc_ns_id = ids->has_net_ns_id = true;
	ids->net_ns_id = own & CLONE_NEWNET ? NS_ID : 0;
	ids->uts_ns_id = own & CLONE_NEWUTS ? NS_ID : 0;
	ids->ipc_ns_id = own & CLONE_NEWIPC ? NS_ID : 0;
	ids->has_time_ns_id = true;
	ids->time_ns_id = own & CLONE_NEWTIME ? NS_ID : 0;
}

/* Is p a live process of the tree being dumped? */
static bool in_tree(const struct proc_tree *tree, pid_t p)
{
	for (int i = 0; tree && i < tree->n; i++)
		if (tree->procs[i].pid == p && !tree_is_zombie(&tree->procs[i]))
			return true;
	return false;
}

/* Processes outside the dump (pid, or its tree) in pid's namespace of kind k. */
static void refuse_sharers(pid_t pid, const struct proc_tree *tree, const struct ns_kind *k,
			   struct refusals *r)
{
	unsigned long ino = ns_inode(pid, k->name);
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (!d || !ino) {
		if (d)
			closedir(d);
		return;
	}
	while ((e = readdir(d)) && n < 3) {
		pid_t p = atoi(e->d_name);
		char comm[32] = "?";

		/* memdump itself is in it while it dumps (ns_enter_net) */
		if (p <= 0 || p == pid || p == getpid() || in_tree(tree, p) ||
		    ns_inode(p, k->name) != ino)
			continue;
		proc_comm(p, comm, sizeof(comm));
		refuse_add(r, "its %s namespace, shared with process %d (%s) outside the dump",
			   k->name, p, comm);
		n++;
	}
	closedir(d);
}

/*
 * Segments marked for removal cannot be made again as they were. (A segment
 * of huge pages is: dump_one_shm() tells it by memdump's own attach.)
 */
static void refuse_shm(pid_t pid, struct refusals *r)
{
	const struct ns_kind *k = ns_kind_by_name("ipc");
	struct shm_info info;
	int back, max;

	if (ns_enter_pid(pid, k, &back))
		return;
	max = shmctl(0, SHM_INFO, (struct shmid_ds *)&info);
	for (int idx = 0; idx <= max; idx++) {
		struct shmid_ds ds;
		int id = shmctl(idx, SHM_STAT, &ds);

		if (id < 0)
			continue;
		if (ds.shm_perm.mode & SHM_DEST)
			refuse_add(r, "System V shm segment %d, removed while attached", id);
	}
	mqueue_refuse(r);
	ns_return(back, k);
}

void ns_refuse(pid_t pid, const struct proc_tree *tree, int host_netns, uint64_t ext_net_ino,
	       struct refusals *r)
{
	uint32_t own = ns_saved_mask(pid, ext_net_ino);

	for (int i = 0; i < nr_ns_kinds; i++)
		if (own & ns_kinds[i].flag)
			refuse_sharers(pid, tree, &ns_kinds[i], r);
	if (own & CLONE_NEWIPC)
		refuse_shm(pid, r);
	if (own & CLONE_NEWNET)
		netns_refuse(host_netns, r);	/* this thread is in it */
	if (own & CLONE_NEWNS) {
		static const struct ns_kind mnt = { "mnt", CLONE_NEWNS };

		refuse_sharers(pid, tree, &mnt, r);
		mntns_refuse(pid, tree, r);
	}
}

/* The tree's process of pid, or NULL. */
static const struct tree_proc *tree_proc_of(const struct proc_tree *tree, pid_t pid)
{
	for (int i = 0; i < tree->n; i++)
		if (tree->procs[i].pid == pid)
			return &tree->procs[i];
	return NULL;
}

/* Is another process of tree in mount namespace ino, under a parent in another? */
static bool entered_twice(pid_t pid, const struct proc_tree *tree, unsigned long ino)
{
	for (int i = 1; i < tree->n; i++) {
		const struct tree_proc *q = &tree->procs[i];

		if (q->pid != pid && !tree_is_zombie(q) && ns_inode(q->pid, "mnt") == ino &&
		    ns_inode(q->ppid, "mnt") != ino)
			return true;
	}
	return false;
}

void ns_refuse_member(pid_t pid, const struct proc_tree *tree, struct refusals *r)
{
	static const struct ns_kind mnt = { "mnt", CLONE_NEWNS };
	const struct tree_proc *me = tree ? tree_proc_of(tree, pid) : NULL;
	unsigned long ino = ns_inode(pid, "mnt"), root;
	pid_t ppid = me ? me->ppid : 0;

	if (!me || !tree->n || tree->procs[0].pid == pid || !ino)
		return;
	root = ns_inode(tree->procs[0].pid, "mnt");
	if (ino != root && ppid && ns_inode(ppid, "mnt") != ino && entered_twice(pid, tree, ino))
		refuse_add(r, "a mount namespace another process of the tree is in, under a "
			   "parent in another (restore makes a process enter it once)");
	else if (ino != root) {	/* (one under a parent in another enters the root's again) */
		refuse_sharers(pid, tree, &mnt, r);
		mntns_refuse_member(pid, tree, r);
	}
}

int ns_enter_net(pid_t pid, int *back)
{
	const struct ns_kind *k = ns_kind_by_name("net");

	*back = -1;
	return ns_is_own(pid, k) ? ns_enter_pid(pid, k, back) : 0;
}

void ns_leave_net(int back)
{
	ns_return(back, ns_kind_by_name("net"));
}

static int write_entry(struct image *img, const ProtobufCMessage *m)
{
	return img_write_msg(img, m);
}

static int write_padded(struct image *img, const void *buf, size_t len, size_t align)
{
	static const char zeros[8];
	size_t pad = (align - len % align) % align;
	int ret = len ? img_write_raw(img, buf, len) : 0;

	return !ret && pad ? img_write_raw(img, zeros, pad) : ret;
}

static int close_image(struct image *img, int ret)
{
	if (ret) {
		img_abort(img);
		return ret;
	}
	return img_close(img);
}

static int dump_uts(struct dump_ctx *d)
{
	const struct ns_kind *k = ns_kind_by_name("uts");
	UtsnsEntry e = UTSNS_ENTRY__INIT;
	struct utsname u;
	struct image *img = NULL;
	int back, ret = ns_enter_pid(d->pid, k, &back);

	if (ret)
		return ret;
	ret = uname(&u) ? -errno : 0;
	ns_return(back, k);
	if (ret)
		return fail(ret, "uname in the target's UTS namespace: %s", strerror(-ret));
	e.nodename = u.nodename;
	e.domainname = u.domainname;
	ret = img_create(&d->dir, IMG_UTSNS, NS_ID, &img);
	if (ret)
		return ret;
	pr_info("uts namespace: host name %s, domain name %s\n", u.nodename, u.domainname);
	return close_image(img, write_entry(img, &e.base));
}

static int read_sysctl(const char *name, uint64_t *v, int n)
{
	char path[96], *buf, *p;
	ssize_t len;
	int i;

	snprintf(path, sizeof(path), "/proc/sys/%s", name);
	len = proc_read_file(path, &buf);
	if (len < 0)
		return fail((int)len, "cannot read %s in the target's IPC namespace", path);
	for (i = 0, p = buf; i < n; i++) {
		char *end;

		v[i] = strtoull(p, &end, 10);
		if (end == p)
			break;
		p = end;
	}
	free(buf);
	return i == n ? 0 : fail(-EINVAL, "%s: expected %d numbers", path, n);
}

/* The queues in e (memdump's field 50), if the entry stays one a reader takes. */
static int add_mqueues(IpcVarEntry *e, const struct mq_set *mq)
{
	size_t len;

	e->n_mqueues = mq->n;
	e->mqueues = mq->q;
	len = protobuf_c_message_get_packed_size(&e->base);
	if (len > IMG_MAX_ENTRY)
		return fail(-EFBIG, "the POSIX message queues of its IPC namespace (%zu queues) "
			    "take %zu bytes, more than the %u of one entry of ipcns-var-1.img",
			    mq->n, len, IMG_MAX_ENTRY);
	return 0;
}

/* The sysctls of the namespace this thread is in, and its POSIX message queues (mq). */
static int dump_ipc_var(struct img_dir *dir, const struct mq_set *mq)
{
	static const char *const names[] = {
		"kernel/msgmax", "kernel/msgmnb", "kernel/msgmni", "kernel/auto_msgmni",
		"kernel/shmmax", "kernel/shmall", "kernel/shmmni", "kernel/shm_rmid_forced",
		"fs/mqueue/queues_max", "fs/mqueue/msg_max", "fs/mqueue/msgsize_max",
		"fs/mqueue/msg_default", "fs/mqueue/msgsize_default",
		"kernel/msg_next_id", "kernel/sem_next_id", "kernel/shm_next_id",
	};
	IpcVarEntry e = IPC_VAR_ENTRY__INIT;
	uint64_t v[ARRAY_SIZE(names)], sem[4];
	uint32_t sem32[4];
	struct image *img = NULL;
	int ret = read_sysctl("kernel/sem", sem, 4);

	for (size_t i = 0; !ret && i < ARRAY_SIZE(names); i++)
		ret = read_sysctl(names[i], &v[i], 1);
	if (ret)
		return ret;
	for (int i = 0; i < 4; i++)
		sem32[i] = (uint32_t)sem[i];
	e.n_sem_ctls = 4;
	e.sem_ctls = sem32;
	e.msg_ctlmax = v[0]; e.msg_ctlmnb = v[1]; e.msg_ctlmni = v[2]; e.auto_msgmni = v[3];
	e.shm_ctlmax = v[4]; e.shm_ctlall = v[5]; e.shm_ctlmni = v[6]; e.shm_rmid_forced = v[7];
	e.mq_queues_max = v[8]; e.mq_msg_max = v[9]; e.mq_msgsize_max = v[10];
	e.has_mq_msg_default = e.has_mq_msgsize_default = true;
	e.mq_msg_default = v[11]; e.mq_msgsize_default = v[12];
	e.has_msg_next_id = e.has_sem_next_id = e.has_shm_next_id = true;
	e.msg_next_id = v[13]; e.sem_next_id = v[14]; e.shm_next_id = v[15];
	ret = add_mqueues(&e, mq);
	if (!ret)
		ret = img_create(dir, IMG_IPC_VAR, NS_ID, &img);
	return ret ? ret : close_image(img, write_entry(img, &e.base));
}

static void fill_desc(IpcDescEntry *de, const struct ipc_perm *p, int id)
{
	de->key = (uint32_t)p->__key;
	de->uid = p->uid;
	de->gid = p->gid;
	de->cuid = p->cuid;
	de->cgid = p->cgid;
	de->mode = p->mode;
	de->id = (uint32_t)id;
}

/*
 * SHM_HUGETLB is not in shm_perm.mode: a segment of huge pages is told by
 * memdump's own attach of it at mem (VmFlags ht, KernelPageSize in smaps),
 * attached by the target or not. Its shmget flags (SHM_HUGETLB and log2 of
 * the page size, as CRIU writes hugetlb_flag), 0 for 4 KiB pages, -errno.
 */
static int64_t shm_huge_flag(const void *mem)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	uint64_t kb = 0;
	bool in = false, ht = false;
	unsigned shift = 0;

	if (!f)
		return fail(-errno, "cannot read memdump's smaps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;

		if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = a == (unsigned long)mem;
		else if (in && !strncmp(line, "KernelPageSize:", 15))
			kb = strtoull(line + 15, NULL, 10);
		else if (in && !strncmp(line, "VmFlags:", 8))
			ht = strstr(line, " ht") != NULL;
	}
	fclose(f);
	if (!ht)
		return 0;
	while (shift < 63 && (1ULL << shift) < (kb << 10))
		shift++;
	if (kb << 10 <= PAGE_SIZE || (1ULL << shift) != kb << 10)
		return fail(-EOPNOTSUPP, "a System V shm segment of huge pages of %" PRIu64 " kB",
			    kb);
	return SHM_HUGETLB | ((int64_t)shift << VMA_MAP_HUGE_SHIFT);
}

/* One segment: its entry, then its bytes read through a read-only attach. */
static int dump_one_shm(struct image *img, int id, const struct shmid_ds *ds)
{
	IpcShmEntry e = IPC_SHM_ENTRY__INIT;
	IpcDescEntry de = IPC_DESC_ENTRY__INIT;
	int64_t huge;
	void *mem;
	int ret;

	fill_desc(&de, &ds->shm_perm, id);
	e.desc = &de;
	e.size = ds->shm_segsz;
	mem = shmat(id, NULL, SHM_RDONLY);
	if (mem == (void *)-1)
		return fail(-errno, "cannot attach System V shm segment %d: %s", id,
			    strerror(errno));
	huge = shm_huge_flag(mem);
	if (huge > 0) {
		e.has_hugetlb_flag = true;
		e.hugetlb_flag = (uint32_t)huge;
	}
	ret = huge < 0 ? (int)huge : write_entry(img, &e.base);
	if (!ret)
		ret = write_padded(img, mem, e.size, 4);
	shmdt(mem);
	return ret;
}

static int dump_shms(struct img_dir *dir)
{
	struct shm_info info;
	struct image *img = NULL;
	int max = shmctl(0, SHM_INFO, (struct shmid_ds *)&info), ret;

	ret = img_create(dir, IMG_IPCNS_SHM, NS_ID, &img);
	for (int idx = 0; !ret && idx <= max; idx++) {
		struct shmid_ds ds;
		int id = shmctl(idx, SHM_STAT, &ds);

		if (id >= 0)
			ret = dump_one_shm(img, id, &ds);
	}
	return img ? close_image(img, ret) : ret;
}

static int dump_one_sem(struct image *img, int id, const struct semid_ds *ds)
{
	IpcSemEntry e = IPC_SEM_ENTRY__INIT;
	IpcDescEntry de = IPC_DESC_ENTRY__INIT;
	unsigned short *vals = calloc(ds->sem_nsems + 1, sizeof(*vals));
	int ret;

	if (!vals)
		return -ENOMEM;
	fill_desc(&de, &ds->sem_perm, id);
	e.desc = &de;
	e.nsems = ds->sem_nsems;
	ret = semctl(id, 0, GETALL, vals) < 0 ? -errno : 0;
	if (ret)
		ret = fail(ret, "cannot read System V semaphore set %d: %s", id, strerror(-ret));
	if (!ret)
		ret = write_entry(img, &e.base);
	if (!ret)
		ret = write_padded(img, vals, e.nsems * sizeof(*vals), 8);
	free(vals);
	return ret;
}

static int dump_sems(struct img_dir *dir)
{
	struct seminfo info;
	struct image *img = NULL;
	int max = semctl(0, 0, SEM_INFO, &info), ret;

	ret = img_create(dir, IMG_IPCNS_SEM, NS_ID, &img);
	for (int idx = 0; !ret && idx <= max; idx++) {
		struct semid_ds ds;
		int id = semctl(idx, 0, SEM_STAT, &ds);

		if (id >= 0)
			ret = dump_one_sem(img, id, &ds);
	}
	return img ? close_image(img, ret) : ret;
}

/* A queue's messages, oldest first, copied (MSG_COPY) so the queue keeps them. */
static int dump_one_msq(struct image *img, int id, const struct msqid_ds *ds, size_t msgmax)
{
	IpcMsgEntry e = IPC_MSG_ENTRY__INIT;
	IpcDescEntry de = IPC_DESC_ENTRY__INIT;
	struct { long mtype; char text[]; } *buf = malloc(sizeof(long) + msgmax);
	int ret;

	if (!buf)
		return -ENOMEM;
	fill_desc(&de, &ds->msg_perm, id);
	e.desc = &de;
	e.qbytes = ds->msg_qbytes;
	e.qnum = ds->msg_qnum;
	ret = write_entry(img, &e.base);
	for (uint32_t i = 0; !ret && i < e.qnum; i++) {
		IpcMsg m = IPC_MSG__INIT;
		ssize_t n = msgrcv(id, buf, msgmax, i, IPC_NOWAIT | MSG_COPY);

		if (n < 0) {
			ret = fail(-errno, "cannot copy message %u of System V queue %d: %s", i, id,
				   strerror(errno));
			break;
		}
		m.mtype = buf->mtype;
		m.msize = n;
		ret = write_entry(img, &m.base);
		if (!ret)
			ret = write_padded(img, buf->text, n, 8);
	}
	free(buf);
	return ret;
}

static int dump_msqs(struct img_dir *dir)
{
	struct msginfo info;
	struct image *img = NULL;
	uint64_t msgmax;
	int max = msgctl(0, MSG_INFO, (struct msqid_ds *)&info), ret;

	ret = read_sysctl("kernel/msgmax", &msgmax, 1);
	if (ret)
		return ret;
	ret = img_create(dir, IMG_IPCNS_MSG, NS_ID, &img);
	for (int idx = 0; !ret && idx <= max; idx++) {
		struct msqid_ds ds;
		int id = msgctl(idx, MSG_STAT, &ds);

		if (id >= 0)
			ret = dump_one_msq(img, id, &ds, msgmax);
	}
	return img ? close_image(img, ret) : ret;
}

/*
 * A VMA of a System V attach lies inside its segment: the whole, or a piece
 * an mprotect or munmap of a part left (the restorer maps the piece alone).
 */
static int check_sysv_vmas(const struct dump_ctx *d)
{
	for (int i = 0; i < d->nr_vmas; i++) {
		const struct vma *v = &d->vmas[i];
		struct shmid_ds ds;

		if (!(v->status & VMA_AREA_SYSVIPC))
			continue;
		if (shmctl((int)v->shmid, IPC_STAT, &ds) < 0)
			return fail(-errno, "System V shm segment %" PRIu64 " mapped at %#" PRIx64
				    ": %s", v->shmid, v->start, strerror(errno));
		if (v->pgoff + (v->end - v->start) > ALIGN_UP(ds.shm_segsz, PAGE_SIZE))
			return fail(-EOPNOTSUPP, "System V shm segment %" PRIu64 " mapped at %#"
				    PRIx64 " beyond its %zu bytes (at offset %#" PRIx64 ")",
				    v->shmid, v->start, ds.shm_segsz, v->pgoff);
		if (v->kpagesize > PAGE_SIZE &&
		    (v->pgoff || v->end - v->start != ALIGN_UP(ds.shm_segsz, v->kpagesize)))
			return fail(-EOPNOTSUPP, "System V shm segment %" PRIu64 " in huge pages is "
				    "mapped in part at %#" PRIx64 " (mprotect or munmap of a part): "
				    "not supported", v->shmid, v->start);
	}
	return 0;
}

static int dump_ipc(struct dump_ctx *d)
{
	const struct ns_kind *k = ns_kind_by_name("ipc");
	struct mq_set mq = { 0 };
	int back, ret = ns_enter_pid(d->pid, k, &back);

	if (ret)
		return ret;
	ret = check_sysv_vmas(d);
	if (!ret && (!d->tree || d->tree->procs[0].pid == d->pid))
		ret = mqueue_dump(&mq);	/* the tree's root holds them for all */
	if (!ret)
		ret = dump_ipc_var(&d->dir, &mq);
	mqueue_set_free(&mq);
	if (!ret)
		ret = dump_shms(&d->dir);
	if (!ret)
		ret = dump_sems(&d->dir);
	if (!ret)
		ret = dump_msqs(&d->dir);
	ns_return(back, k);
	return ret;
}

int ns_dump(struct dump_ctx *d)
{
	int ret = 0;

	if (d->own_ns & CLONE_NEWUTS)
		ret = dump_uts(d);
	if (!ret && (d->own_ns & CLONE_NEWIPC))
		ret = dump_ipc(d);
	if (!ret && (d->own_ns & CLONE_NEWNET))
		ret = netns_dump(d, d->host_netns);	/* this thread is in it */
	if (!ret && (d->own_ns & CLONE_NEWNS) &&
	    (!d->tree || d->tree->procs[0].pid == d->pid || d->mnt_ns_first))
		ret = mntns_dump(d);	/* the tree's root holds it for all in it */
	if (!ret && (d->own_ns & CLONE_NEWTIME) && (!d->tree || d->tree->procs[0].pid == d->pid))
		ret = timens_dump(d);	/* so does it the time namespace */
	return ret;
}
