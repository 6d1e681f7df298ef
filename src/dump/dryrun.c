/*
 * The restore dry run of a killing dump: after the images are written and
 * before the target is killed, every object they record is checked to be one
 * a restore on this machine can recreate, with the capabilities it will have
 * (image/rstcheck.c, shared with the restore's own checks): cgroups, files
 * under the /proc directory of a thread, rlimits, a time namespace, the
 * addresses of sockets in a network namespace made again. A failure fails
 * the dump with a sentence naming the object: the target runs on and no
 * inventory.img is written. One function per kind of object; a kind is added
 * to dump_dry_run().
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <unistd.h>

#include "common.h"
#include "inet/tcp_states.h"
#include "log.h"
#include "proc.h"
#include "ctx/proc_tree.h"
#include "cgroup.pb-c.h"
#include "core.pb-c.h"
#include "files.pb-c.h"
#include "dump/dump.h"
#include "dump/dryrun.h"
#include "image/image.h"
#include "image/rstcheck.h"
#include "mem/hugetlb.h"
#include "evloop/iouring.h"
#include "vma_status.h"
#include "ns/netns.h"
#include "task/sessions.h"

/* The path of memdump's own cgroup in the hierarchy named ctl ("cpu,cpuacct", "" for v2). */
static bool own_path(const char *own, const char *ctl, char *out, size_t len)
{
	size_t n = strlen(ctl);

	for (const char *p = own; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		const char *c = strchr(p, ':');

		if (c && !strncmp(c + 1, ctl, n) && c[n + 1] == ':') {
			snprintf(out, len, "%.*s", (int)strcspn(c + n + 2, "\n"), c + n + 2);
			return true;
		}
	}
	return false;
}

/* Each cgroup of the process: the same as memdump's, or one a restore can join or make. */
static int dryrun_cgroups(struct dump_ctx *d)
{
	CgroupEntry *cg = NULL;
	char own[4096];
	int ret;

	if (faccessat(d->dir.fd, "cgroup.img", F_OK, 0))
		return 0;
	ret = read_small_at(AT_FDCWD, "/proc/self/cgroup", own, sizeof(own));
	if (!ret)
		ret = img_read_one(d->dir.fd, IMG_CGROUP, 0, &cgroup_entry__descriptor, (void **)&cg);
	for (size_t i = 0; !ret && i < cg->n_sets; i++) {
		for (size_t j = 0; !ret && j < cg->sets[i]->n_ctls; j++) {
			const CgMemberEntry *m = cg->sets[i]->ctls[j];
			char mine[1024];

			if (own_path(own, m->name, mine, sizeof(mine)) && !strcmp(mine, m->path))
				continue;	/* restore leaves it in memdump's */
			ret = rstcheck_cgroup_path(m->name, m->path, false);
		}
	}
	if (cg)
		img_free(&cgroup_entry__descriptor, cg);
	return ret;
}

/* Its resource limits: settable without CAP_SYS_RESOURCE unless memdump has it. */
static int dryrun_rlimits(struct dump_ctx *d)
{
	CoreEntry *core = NULL;
	int ret = img_read_one(d->dir.fd, IMG_CORE, d->threads[0].tid, &core_entry__descriptor,
			       (void **)&core);

	if (!ret && core->tc)
		ret = rstcheck_rlimits(core->tc->rlimits, self_capable(CAP_SYS_RESOURCE));
	if (core)
		img_free(&core_entry__descriptor, core);
	return ret;
}

/*
 * name is in the /proc directory of one of its threads other than the
 * leader: the leader's (/proc/self) the restored process opens once it
 * exists (files_restore.c, reg_proc_open_in_child), a thread's is looked up
 * before.
 */
static bool thread_proc_path(const struct dump_ctx *d, const char *name)
{
	long id;
	char *end;

	if (strncmp(name, "/proc/", 6))
		return false;
	id = strtol(name + 6, &end, 10);
	if (end == name + 6 || (*end && *end != '/'))
		return false;
	for (int i = 0; i < d->nr_threads; i++)
		if (id == d->threads[i].tid && id != d->pid)
			return true;
	return false;
}

/*
 * Its files: one under the /proc directory of one of its threads (not the
 * leader's) is reopened by path before the thread exists.
 */
static int dryrun_files(struct dump_ctx *d)
{
	struct image *img = NULL;
	FileEntry *fe;
	int ret;

	if (faccessat(d->dir.fd, "files.img", F_OK, 0))
		return 0;
	ret = img_open(d->dir.fd, IMG_FILES, 0, &img);
	while (!ret && (ret = img_read_msg(img, &file_entry__descriptor, (void **)&fe)) == 1) {
		ret = 0;
		if (fe->type == FD_TYPES__REG && fe->reg && thread_proc_path(d, fe->reg->name))
			ret = fail(-EOPNOTSUPP, "file %s, in the /proc directory of one of the "
				   "process's threads, which does not exist when a restore opens "
				   "its files",
				   fe->reg->name);
		img_free(&file_entry__descriptor, fe);
	}
	if (img)
		img_abort(img);
	return ret < 0 ? ret : 0;
}

/*
 * A TCP connection's local address, which the restore binds in repair mode
 * (tcp_repair_restore.c; every other inet socket is bound with IP_FREEBIND
 * on for the bind, zdtm sk-freebind-false): not the wildcard, not link-local
 * IPv6 (the kernel makes it again from the MAC), not of a freebind or
 * transparent socket. *family and addr: as bind() sees it (an IPv6 socket's
 * v4-mapped address is IPv4).
 */
static bool sk_addr_to_check(const InetSkEntry *e, int *family, uint8_t addr[16])
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	const IpOptsEntry *ip = e->ip_opts;
	size_t n = e->family == AF_INET ? 1 : 4;
	static const uint8_t zero[16];

	if (e->proto != IPPROTO_TCP || !tcp_state_repairable((int)e->state))
		return false;
	if ((e->family != AF_INET && e->family != AF_INET6) || e->n_src_addr < n ||
	    (ip && ((ip->has_freebind && ip->freebind) || (ip->has_transparent && ip->transparent))))
		return false;
	memcpy(addr, e->src_addr, n * 4);
	*family = (int)e->family;
	if (*family == AF_INET6 && !memcmp(addr, mapped, 12)) {
		memmove(addr, addr + 12, 4);
		*family = AF_INET;
	}
	if (!memcmp(addr, zero, *family == AF_INET ? 4 : 16))
		return false;
	return !(*family == AF_INET6 && addr[0] == 0xfe && (addr[1] & 0xc0) == 0x80);
}

/* The inet sockets of one process's files.img: each address local in the namespace made again. */
static int sk_addrs_in(int dirfd, const char *who, const struct netns_addrs *local)
{
	struct image *img = NULL;
	FileEntry *fe;
	int ret;

	if (faccessat(dirfd, "files.img", F_OK, 0))
		return 0;
	ret = img_open(dirfd, IMG_FILES, 0, &img);
	while (!ret && (ret = img_read_msg(img, &file_entry__descriptor, (void **)&fe)) == 1) {
		const InetSkEntry *e = fe->type == FD_TYPES__INETSK ? fe->isk : NULL;
		char a[INET6_ADDRSTRLEN] = "?";
		uint8_t addr[16];
		int family;

		ret = 0;
		if (e && sk_addr_to_check(e, &family, addr) &&
		    !netns_addrs_local(local, family, addr)) {
			inet_ntop(family, addr, a, sizeof(a));
			ret = fail(-EADDRNOTAVAIL, "process %s: %s socket %u bound to %s port %u, "
				   "an address its network namespace no longer has (the namespace "
				   "made again gets the addresses it has: bind() would fail)", who,
				   e->proto == IPPROTO_TCP ? "TCP" : e->proto == IPPROTO_UDP ? "UDP" :
				   "inet", e->id, a, e->src_port);
		}
		img_free(&file_entry__descriptor, fe);
	}
	if (img)
		img_abort(img);
	return ret < 0 ? ret : 0;
}

/*
 * A network namespace of its own (the tree's, its images in the root's
 * directory beside the processes' proc-PID ones): a socket bound to an
 * address the namespace no longer has, which the restore could not bind.
 */
static int dryrun_sk_addrs(struct dump_ctx *d)
{
	struct netns_addrs *local = NULL;
	char pid[16];
	DIR *dir;
	struct dirent *de;
	int ret;

	if (!(d->own_ns & CLONE_NEWNET) || faccessat(d->dir.fd, "netdev-1.img", F_OK, 0))
		return 0;
	snprintf(pid, sizeof(pid), "%d", d->pid);
	ret = netns_addrs_load(d->dir.fd, &local);
	if (!ret)
		ret = sk_addrs_in(d->dir.fd, pid, local);
	dir = ret ? NULL : fdopendir(dup(d->dir.fd));
	while (dir && !ret && (de = readdir(dir))) {
		int fd;

		if (strncmp(de->d_name, "proc-", 5))
			continue;
		fd = openat(d->dir.fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		ret = sk_addrs_in(fd, de->d_name + 5, local);
		close(fd);
	}
	if (dir)
		closedir(dir);
	netns_addrs_free(local);
	return ret;
}

/* Its MAP_HUGETLB memory: the pools can give its huge pages again once it is killed. */
static int dryrun_hugetlb(const struct dump_ctx *d)
{
	struct hugetlb_need n = { 0 };
	int ret = 0;

	for (int i = 0; i < d->nr_vmas && !ret; i++) {
		const struct vma *v = &d->vmas[i];
		bool shared = v->status & VMA_ANON_SHARED;

		uint64_t len = hugetlb_vma_bytes(v->flags, v->end - v->start,
						 v->nr_pages * PAGE_SIZE);

		ret = hugetlb_need_add(&n, v->flags, shared ? v->shmid : 0,
				       (shared ? v->pgoff : 0) + len);
	}
	if (!ret)
		ret = hugetlb_need_check(&n, true);
	hugetlb_need_free(&n);
	return ret;
}

/* Its own time namespace: a restore here makes one and sets its clocks (ns/timens_restore.c). */
static int dryrun_timens(const struct dump_ctx *d)
{
	if (!(d->own_ns & CLONE_NEWTIME) || (self_capable(CAP_SYS_ADMIN) &&
					     self_capable(CAP_SYS_TIME)))
		return 0;
	return fail(-EPERM, "its own time namespace: setting the clocks of a new one needs "
		    "CAP_SYS_ADMIN and CAP_SYS_TIME, which memdump does not have");
}

/* The entries of the pstree.img in dirfd: a process, its zombies (a root's: then the tree's others). */
static int read_pstree(int dirfd, PstreeEntry ***out, int *n)
{
	struct image *img = NULL;
	PstreeEntry **pe = NULL;
	int nr = 0, ret = img_open(dirfd, IMG_PSTREE, 0, &img);

	while (!ret) {
		PstreeEntry **x = realloc(pe, (nr + 1) * sizeof(*pe));
		void *m = NULL;

		if (!x) {
			ret = -ENOMEM;
			break;
		}
		pe = x;
		ret = img_read_msg(img, &pstree_entry__descriptor, &m);
		if (ret == 1) {
			pe[nr++] = m;
			ret = 0;
		} else {
			break;
		}
	}
	if (img)
		img_abort(img);	/* read: nothing to finish */
	*out = pe;
	*n = nr;
	return ret;
}

static void pstree_free(PstreeEntry **pe, int n)
{
	for (int i = 0; pe && i < n; i++)
		img_free(&pstree_entry__descriptor, pe[i]);
	free(pe);
}

/* The zombies in pe[from..n) that lead their own sessions, added to z (sess_zombie_of). */
static void add_zombie_leaders(PstreeEntry *const *sel, int m, PstreeEntry *const *pe, int from,
			       int n, struct sess_proc *z, int *nz, int cap)
{
	for (int i = from; i < n && *nz < cap; i++)
		*nz += sess_zombie_of(sel, m, pe[i], &z[*nz]);
}

/* The zombies of the tree's other processes (each in its set, proc-PID) that lead sessions. */
static int member_zombie_leaders(struct dump_ctx *d, PstreeEntry *const *sel, int m,
				 struct sess_proc *z, int *nz, int cap)
{
	int ret = 0;

	for (int i = 0; i < d->nr_below && !ret; i++) {
		char sub[32];
		PstreeEntry **pe = NULL;
		int n = 0, fd;

		snprintf(sub, sizeof(sub), "proc-%d", d->below[i].pid);
		fd = openat(d->dir.fd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return fail(-errno, "cannot open the image set %s: %s", sub, strerror(errno));
		ret = read_pstree(fd, &pe, &n);
		close(fd);
		if (!ret)
			add_zombie_leaders(sel, m, pe, 1, n, z, nz, cap);
		pstree_free(pe, n);
	}
	return ret;
}

#define SESS_MAX_ZOMBIES	256

int dump_check_sessions(struct dump_ctx *d)
{
	PstreeEntry **pe = NULL, **sel = NULL;
	struct sess_proc *sp = NULL, *zs = NULL;
	struct sess_plan plan;
	int n = 0, nz = 0, m = d->nr_below + 1, ret;

	if (d->nr_below <= 0)
		return 0;
	ret = read_pstree(d->dir.fd, &pe, &n);
	if (!ret && n < d->nr_below + 1)
		ret = fail(-EIO, "pstree.img lists %d processes, fewer than the tree's %d", n,
			   d->nr_below + 1);
	if (!ret) {
		sp = calloc(m, sizeof(*sp));
		sel = calloc(m, sizeof(*sel));
		zs = calloc(SESS_MAX_ZOMBIES, sizeof(*zs));
		ret = sp && sel && zs ? 0 : -ENOMEM;
	}
	if (!ret) {	/* the root, then the others after its zombies */
		sel[0] = pe[0];
		memcpy(sel + 1, pe + n - d->nr_below, d->nr_below * sizeof(*sel));
		ret = sess_procs_of(sel, m, sp);
	}
	if (!ret) {
		add_zombie_leaders(sel, m, pe, 1, n - d->nr_below, zs, &nz, SESS_MAX_ZOMBIES);
		ret = member_zombie_leaders(d, sel, m, zs, &nz, SESS_MAX_ZOMBIES);
	}
	if (!ret)
		ret = sess_plan_make(sp, m, zs, nz, sel[0]->n_ns_threads && sel[0]->ns_threads[0] == 1,
				     &plan);
	if (!ret)
		sess_plan_free(&plan);
	free(sp);
	free(sel);
	free(zs);
	pstree_free(pe, n);
	return ret;
}

int dump_dry_run(struct dump_ctx *d)
{
	int ret = dryrun_cgroups(d);

	for (size_t i = 0; !ret && i < d->nr_iourings; i++)
		ret = iouring_dry_run(d->pid, d->iourings[i]);

	if (!ret)
		ret = dryrun_files(d);

	if (!ret)
		ret = dryrun_rlimits(d);
	if (!ret)
		ret = dryrun_timens(d);
	if (!ret)
		ret = dryrun_sk_addrs(d);
	if (!ret)
		ret = dryrun_hugetlb(d);
	if (ret)
		fail_context("a restore here would fail: ");
	return ret;
}
