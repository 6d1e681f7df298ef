/* memdump show: the UTS and IPC namespaces of a set (images of ns/ns.c). */
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ns/ns_show.h"
#include "ns/netns_sysctl.h"
#include "image/image.h"

#include "ipc-msg.pb-c.h"
#include "ipc-var.pb-c.h"
#include "ipc-sem.pb-c.h"
#include "ipc-shm.pb-c.h"
#include "netdev.pb-c.h"
#include "timens.pb-c.h"
#include "utsns.pb-c.h"

static int skip(struct image *img, uint64_t len)
{
	char buf[4096];

	while (len) {
		size_t n = len < sizeof(buf) ? len : sizeof(buf);

		if (img_read_raw(img, buf, n))
			return -1;
		len -= n;
	}
	return 0;
}

/* Bytes that follow an entry: the segment, the semaphores, or the messages. */
static int skip_data(struct image *img, enum img_type t, const void *e)
{
	if (t == IMG_IPCNS_SHM)
		return skip(img, (((const IpcShmEntry *)e)->size + 3) & ~3ULL);
	if (t == IMG_IPCNS_SEM)
		return skip(img, (((const IpcSemEntry *)e)->nsems * 2 + 7) & ~7ULL);
	for (uint32_t i = 0; i < ((const IpcMsgEntry *)e)->qnum; i++) {
		IpcMsg *m;
		int ret = img_read_msg(img, &ipc_msg__descriptor, (void **)&m);

		if (ret != 1)
			return -1;
		ret = skip(img, (m->msize + 7) & ~7ULL);
		img_free(&ipc_msg__descriptor, m);
		if (ret)
			return -1;
	}
	return 0;
}

/* Entries of one IPC image, or -1. */
static long count(int dirfd, enum img_type t, const ProtobufCMessageDescriptor *desc)
{
	struct image *img;
	long n = 0;
	void *e;
	int ret;

	if (img_open(dirfd, t, 1, &img))
		return -1;
	while ((ret = img_read_msg(img, desc, &e)) == 1) {
		ret = skip_data(img, t, e);
		img_free(desc, e);
		if (ret)
			break;
		n++;
	}
	img_abort(img);
	return ret ? -1 : n;
}

/* The POSIX message queues ipcns-var-1.img holds (memdump's field 50), or -1. */
static long posix_queues(int dirfd)
{
	IpcVarEntry *v;
	long n;

	if (img_read_one(dirfd, IMG_IPC_VAR, 1, &ipc_var_entry__descriptor, (void **)&v))
		return -1;
	n = (long)v->n_mqueues;
	img_free(&ipc_var_entry__descriptor, v);
	return n;
}

static const char *plural(long n) { return n == 1 ? "" : "s"; }

/* "net namespace: lo up, mtu 65536; veth0 (veth, other end vh0) up, mtu 1500" */
static void show_netdevs(int dirfd)
{
	struct image *img;
	NetDeviceEntry *n;
	int i = 0, ret;

	if (img_open(dirfd, IMG_NETDEV, 1, &img)) {
		printf("net namespace: (unreadable netdev-1.img)\n");
		return;
	}
	printf("net namespace:");
	while ((ret = img_read_msg(img, &net_device_entry__descriptor, (void **)&n)) == 1) {
		printf("%s %s", i++ ? ";" : "", n->name);
		if (n->type == ND_TYPE__VETH)
			printf(" (veth, other end %s)", n->peer_name ? n->peer_name : "?");
		printf(" %s, mtu %u", n->flags & 1 ? "up" : "down", n->mtu);
		img_free(&net_device_entry__descriptor, n);
	}
	printf("%s\n", ret < 0 ? " (netdev-1.img unreadable from here)" : "");
	img_abort(img);
}

static void show_timens(int dirfd)
{
	TimensEntry *t;

	if (img_read_one(dirfd, IMG_TIMENS, 1, &timens_entry__descriptor, (void **)&t)) {
		printf("time namespace: (unreadable timens-1.img)\n");
		return;
	}
	printf("time namespace: at the dump monotonic %" PRIu64 ".%09" PRIu64 " s, boottime %"
	       PRIu64 ".%09" PRIu64 " s (restored going on from there)\n",
	       t->monotonic->tv_sec, t->monotonic->tv_nsec, t->boottime->tv_sec,
	       t->boottime->tv_nsec);
	img_free(&timens_entry__descriptor, t);
}

void show_namespaces(const struct dumpset *ds)
{
	uint32_t own = ds->inv->has_own_ns ? ds->inv->own_ns : 0;

	if (own & CLONE_NEWUTS) {
		UtsnsEntry *u;

		if (img_read_one(ds->dirfd, IMG_UTSNS, 1, &utsns_entry__descriptor, (void **)&u))
			printf("uts namespace: (unreadable utsns-1.img)\n");
		else {
			printf("uts namespace: host %s, domain %s\n", u->nodename, u->domainname);
			img_free(&utsns_entry__descriptor, u);
		}
	}
	if (own & CLONE_NEWNET) {
		show_netdevs(ds->dirfd);
		netns_sysctl_show(ds->dirfd);
	}
	if (own & CLONE_NEWTIME)
		show_timens(ds->dirfd);
	if (own & CLONE_NEWIPC) {
		long shm = count(ds->dirfd, IMG_IPCNS_SHM, &ipc_shm_entry__descriptor);
		long sem = count(ds->dirfd, IMG_IPCNS_SEM, &ipc_sem_entry__descriptor);
		long msg = count(ds->dirfd, IMG_IPCNS_MSG, &ipc_msg_entry__descriptor);

		long mq = posix_queues(ds->dirfd);
		printf("ipc namespace: %ld shm segment%s, %ld semaphore set%s, %ld message queue%s, "
		       "%ld POSIX message queue%s\n", shm, plural(shm), sem, plural(sem), msg,
		       plural(msg), mq, plural(mq));
	}
}
