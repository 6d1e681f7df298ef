/*
 * Memory tracking between dumps, without soft-dirty (see track.h).
 *
 * Creating it (frozen): the lowest free fd L and a free high fd N are
 * recorded first (trackstate.c), then the target runs userfaultfd() (it
 * returns L: the fd table of a frozen process does not change), dup3(L, N)
 * and close(L). memdump takes N with pidfd_getfd: UFFDIO_API, UFFDIO_REGISTER
 * and PAGEMAP_SCAN act on the target's mm whoever calls them, so nothing else
 * runs in the target. Only present pages are write-protected (protecting
 * holes would allocate page tables for all of a sparse reservation): a page
 * faulted in later has no protection, so it reads as written.
 *
 * Removing it: close(N) in the target, then memdump's copy; the last close
 * unregisters every VMA and clears every protection (userfaultfd_release).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/userfaultfd.h>

#include "common.h"
#include "ctx/dump_ctx.h"
#include "track/track.h"
#include "infect/infect.h"
#include "kernel_uapi.h"
#include "log.h"
#include "proc.h"
#include "vma_status.h"

#define HIGH_FD_MAX	1024	/* below FD_SETSIZE: no fd table growth beyond select()'s */

static bool is_uffd(pid_t pid, int fd, uint64_t ino)
{
	char path[64], link[64];
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = 0;
	if (strcmp(link, "anon_inode:[userfaultfd]") || stat(path, &st))
		return false;
	return !ino || st.st_ino == ino;
}

int track_find(struct tracker *t, pid_t pid)
{
	struct proc_stat st;
	int ret;

	track_init(t, pid);
	ret = track_state_load(t);
	if (ret == -ENOENT) {
		track_init(t, pid);
		return 0;
	}
	if (ret)
		return ret;
	if (proc_read_stat(pid, &st) || st.start_time != t->start_time) {
		track_state_remove(pid);	/* another process had this PID */
		track_init(t, pid);
		return 0;
	}
	if (!is_uffd(pid, t->fd, t->ino))
		t->fd = -1;
	if (t->ino || !is_uffd(pid, t->tmp_fd, 0))
		t->tmp_fd = -1;		/* only a creation cut short leaves one there */
	if (t->fd < 0 && t->tmp_fd < 0) {
		pr_warn("the memory tracking of process %d is gone (its userfaultfd was closed)",
			pid);
		track_state_remove(pid);
		track_init(t, pid);
	}
	return 0;
}

bool track_owns_fd(const struct tracker *t, int fd)
{
	return fd >= 0 && (fd == t->fd || fd == t->tmp_fd);
}

static bool fd_free(pid_t pid, int fd)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	return faccessat(AT_FDCWD, path, F_OK, AT_SYMLINK_NOFOLLOW) != 0;
}

static int soft_nofile(pid_t pid)
{
	char path[64], *text, *p;
	long soft = 0;

	snprintf(path, sizeof(path), "/proc/%d/limits", pid);
	if (proc_read_file(path, &text) < 0)
		return -EIO;
	p = strstr(text, "Max open files");
	if (p)
		soft = strtol(p + strlen("Max open files"), NULL, 10);
	free(text);
	return soft > 0 ? (int)MIN(soft, HIGH_FD_MAX) : -EIO;
}

/* L: what userfaultfd() will return; N: where the tracker lives. */
static int pick_fds(struct tracker *t)
{
	int top = soft_nofile(t->pid), low = 0;

	if (top < 0)
		return fail(top, "cannot read the fd limit of process %d", t->pid);
	while (low < top && !fd_free(t->pid, low))
		low++;
	for (int n = top - 1; n > low; n--) {
		if (fd_free(t->pid, n)) {
			t->tmp_fd = low;
			t->fd = n;
			return 0;
		}
	}
	return fail(-EMFILE, "process %d has no free fd for the memory tracker", t->pid);
}

/* The write-protect features this kernel offers, from a userfaultfd of memdump's. */
static int wp_features(__u64 *out)
{
	struct uffdio_api api = { .api = UFFD_API };
	int fd = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	uint64_t need = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED;

	if (fd < 0)
		return fail(-errno, "no userfaultfd here: %s", strerror(errno));
	if (ioctl(fd, UFFDIO_API, &api)) {
		close(fd);
		return fail(-errno, "UFFDIO_API: %s", strerror(errno));
	}
	close(fd);
	if ((api.features & need) != need)
		return fail(-EOPNOTSUPP, "this kernel has no asynchronous userfaultfd write-protect "
			    "(UFFD_FEATURE_WP_ASYNC, WP_UNPOPULATED; Linux 6.7+)");
	*out = need | (api.features & UFFD_FEATURE_WP_HUGETLBFS_SHMEM);
	return 0;
}

static int remote(struct infect_ctx *in, long nr, long *ret, long a1, long a2, long a3)
{
	return infect_syscall(in, 0, nr, ret, a1, a2, a3, 0, 0, 0);
}

/* The target's userfaultfd() into L, moved to N. */
static int create_in_target(struct dump_ctx *d, struct tracker *t)
{
	long r;
	int ret = remote(&d->in, SYS_userfaultfd, &r, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY,
			 0, 0);

	if (ret)
		return ret;
	if (r < 0)
		return fail((int)r, "process %d cannot create a userfaultfd: %s", t->pid,
			    strerror((int)-r));
	if (r != t->tmp_fd) {
		remote(&d->in, SYS_close, &r, r, 0, 0);
		return fail(-EIO, "process %d: userfaultfd() gave fd %ld, not %d", t->pid, r,
			    t->tmp_fd);
	}
	ret = remote(&d->in, SYS_dup3, &r, t->tmp_fd, t->fd, O_CLOEXEC);
	if (!ret && r != t->fd)
		ret = fail(r < 0 ? (int)r : -EIO, "process %d: cannot move its userfaultfd to fd %d",
			   t->pid, t->fd);
	if (!ret)
		ret = remote(&d->in, SYS_close, &r, t->tmp_fd, 0, 0);
	if (!ret)
		t->tmp_fd = -1;
	return ret;
}

static int take_local(struct infect_ctx *in, struct tracker *t)
{
	struct stat st;

	t->local = syscall(SYS_pidfd_getfd, in->pidfd, t->fd, 0);
	if (t->local < 0)
		return fail(-errno, "cannot take the userfaultfd of process %d: %s", t->pid,
			    strerror(errno));
	if (fstat(t->local, &st))
		return -errno;
	if (t->ino && st.st_ino != t->ino)
		return fail(-EIO, "fd %d of process %d is not memdump's userfaultfd any more", t->fd,
			    t->pid);
	t->ino = st.st_ino;
	return 0;
}

static int create(struct dump_ctx *d, struct tracker *t)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct proc_stat st;
	int ret = wp_features(&api.features);

	if (!ret)
		ret = proc_read_stat(t->pid, &st);
	if (!ret)
		ret = pick_fds(t);
	if (ret)
		return ret;
	t->start_time = st.start_time;
	t->ino = t->base = 0;
	ret = track_state_save(t);	/* before the target holds anything */
	if (ret)
		return ret;
	t->created = true;
	ret = create_in_target(d, t);
	if (!ret)
		ret = take_local(&d->in, t);
	if (!ret && ioctl(t->local, UFFDIO_API, &api))
		ret = fail(-errno, "UFFDIO_API on the tracker: %s", strerror(errno));
	if (!ret)
		ret = track_state_save(t);
	if (!ret)
		pr_info("process %d: memory tracker at fd %d", t->pid, t->fd);
	return ret;
}

int track_attach(struct dump_ctx *d)
{
	struct tracker *t = &d->track;
	int ret;

	if (t->fd >= 0 && t->ino && t->tmp_fd < 0)
		return take_local(&d->in, t);
	if (t->fd >= 0 || t->tmp_fd >= 0) {	/* a creation cut short: start again */
		ret = track_remove(&d->in, t);
		if (ret)
			return ret;
	}
	return create(d, t);
}

/* Private memory whose content only the process's own writes change. */
static bool trackable(const struct vma *v)
{
	return v->dump && !strstr(v->vmflags, "ht") && (v->anon_only || v->name[0] != '/');
}

static int register_vma(struct dump_ctx *d, struct vma *v)
{
	struct uffdio_register reg = {
		.range = { v->start, v->end - v->start },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	if (!ioctl(d->track.local, UFFDIO_REGISTER, &reg)) {
		v->tracked = true;
		return 0;
	}
	if (errno == EBUSY)
		return fail(-EOPNOTSUPP, "process %d holds state memdump cannot dump: mapping "
			    "%#lx-%#lx is registered with a userfaultfd that is not memdump's",
			    d->pid, v->start, v->end);
	pr_info("mapping %#lx-%#lx cannot be tracked (%s): dumped whole every time", v->start,
		v->end, strerror(errno));
	return 0;
}

int track_register(struct dump_ctx *d)
{
	int ret = 0;

	for (int i = 0; i < d->nr_vmas && !ret; i++) {
		struct vma *v = &d->vmas[i];

		if (trackable(v))
			ret = register_vma(d, v);
		if (!ret && v->uffd_wp && !v->tracked)
			ret = fail(-EOPNOTSUPP, "process %d holds state memdump cannot dump: mapping "
				   "%#lx-%#lx %s has a userfaultfd write-protect registration "
				   "(VmFlags uw) that is not memdump's", d->pid, v->start, v->end,
				   v->name);
	}
	return ret;
}

/*
 * Present pages written since the last protection become protected again.
 * Not page-cache pages of a private file mapping: the process's writes to
 * them make new anonymous pages (unprotected: written), and a protected one
 * the kernel reclaimed would leave a marker behind.
 */
static int protect_vma(int pm_fd, const struct vma *v)
{
	struct pm_scan_arg arg = {
		.size = sizeof(arg),
		.flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
		.start = v->start,
		.end = v->end,
		.category_inverted = PAGE_IS_FILE,
		.category_mask = PAGE_IS_WRITTEN | PAGE_IS_FILE,
		.category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
	};

	if (ioctl(pm_fd, PAGEMAP_SCAN, &arg) < 0)
		return fail(-errno, "cannot write-protect %#lx-%#lx: %s", v->start, v->end,
			    strerror(errno));
	return 0;
}

int track_protect(struct dump_ctx *d)
{
	char path[64];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", d->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(-errno, "cannot open %s: %s", path, strerror(errno));
	for (int i = 0; i < d->nr_vmas && !ret; i++)
		if (d->vmas[i].tracked)
			ret = protect_vma(fd, &d->vmas[i]);
	close(fd);
	return ret;
}

int track_remove(struct infect_ctx *in, struct tracker *t)
{
	int fds[2] = { t->fd, t->tmp_fd }, ret = 0;

	for (int i = 0; i < 2 && !ret; i++) {
		long r;

		if (fds[i] < 0)
			continue;
		ret = infect_syscall(in, 0, SYS_close, &r, fds[i], 0, 0, 0, 0, 0);
		if (!ret && r < 0 && r != -EBADF)
			ret = fail((int)r, "process %d: cannot close its userfaultfd %d: %s", t->pid,
				   fds[i], strerror((int)-r));
	}
	if (ret)
		return ret;
	track_close(t);		/* the last reference: every registration goes */
	track_state_remove(t->pid);
	pr_info("process %d: memory tracking removed", t->pid);
	track_init(t, t->pid);
	return 0;
}

void track_gone(struct tracker *t)
{
	track_close(t);
	t->local = -1;
	track_state_remove(t->pid);
	pr_info("process %d: memory tracking gone with it", t->pid);
	track_init(t, t->pid);
}

void track_close(struct tracker *t)
{
	if (t->local >= 0)
		close(t->local);
	t->local = -1;
}

/*
 * The tracker goes from a process the dump let go of already (a pre-dump
 * whose pages failed after the thaw: pagelate.c): seized again for it.
 */
int track_remove_seized(struct tracker *t)
{
	static const volatile sig_atomic_t never;	/* not the dump's stop: it may be set */
	struct infect_ctx in;
	int ret = infect_prepare(&in, t->pid, &never);

	if (!ret)
		ret = track_remove(&in, t);
	infect_release(&in, false);
	return ret;
}

/* memdump track --stop: the tracker goes, the process runs on as before it. */
int track_stop_run(pid_t pid)
{
	struct infect_ctx in = { .pidfd = -1, .mem_fd = -1 };
	struct tracker t;
	int ret = target_check(pid);

	if (!ret)
		ret = track_find(&t, pid);
	if (ret)
		return ret;
	if (t.fd < 0 && t.tmp_fd < 0) {
		printf("process %d has no memory tracking\n", pid);
		return 0;
	}
	ret = infect_prepare(&in, pid, &dump_interrupted);
	if (!ret && t.fd >= 0 && t.ino)
		ret = take_local(&in, &t);	/* its close is the last: done on return */
	if (!ret)
		ret = track_remove(&in, &t);
	track_close(&t);
	infect_release(&in, false);
	if (!ret)
		printf("process %d: memory tracking removed\n", pid);
	return ret;
}
