/*
 * memdump check: the privileges and kernel features dump and restore use.
 *
 * Each probe tries the real thing on this process or on a forked child and
 * prints one line: "ok", "MISSING" (required) or "no" (optional), what, and
 * a note. Missing required features fail the command.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/sched.h>
#include <linux/userfaultfd.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "kernel_uapi.h"
#include "log.h"
#include "proc.h"
#include "cli/options.h"
#include "files/fd_kinds.h"

#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE	40
#endif
#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW	_IO(0xAA, 0x00)
#endif
#ifndef UFFD_FEATURE_MISSING_SHMEM
#define UFFD_FEATURE_MISSING_SHMEM	(1 << 5)
#endif
#ifndef UFFD_FEATURE_PAGEFAULT_FLAG_WP
#define UFFD_FEATURE_PAGEFAULT_FLAG_WP	(1 << 0)
#endif

#define NOTE_LEN	128
#define SET_TID		4242	/* the PID asked of clone3 in a fresh PID namespace */

struct probe {
	const char *what;
	bool required;
	/* 1: available, 0: not; may explain itself in note */
	int (*run)(const struct probe *p, char *note);
	uint64_t arg;
};

static uint64_t marker = 0x6d656d64756d70;	/* read back from a forked child */

/* ---- helpers ---- */

static int errno_note(char *note, const char *call)
{
	snprintf(note, NOTE_LEN, "%s: %s", call, strerror(errno));
	return 0;
}

/* A child that waits to be looked at and dies with us. */
static pid_t spawn_sleeper(void)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
		;
}

/* Run fn in a forked child; its exit status, or -1. */
static int in_child(int (*fn)(void))
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(fn());
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static void *anon_page(void)
{
	void *p = mmap(NULL, PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* ---- privileges ---- */

static int probe_ptrace_priv(const struct probe *p, char *note)
{
	(void)p;
	if (self_capable(CAP_SYS_PTRACE)) {
		snprintf(note, NOTE_LEN, geteuid() ? "CAP_SYS_PTRACE" : "root");
		return 1;
	}
	snprintf(note, NOTE_LEN, "euid %u without CAP_SYS_PTRACE", geteuid());
	return 0;
}

static int probe_cr_priv(const struct probe *p, char *note)
{
	(void)p;
	if (self_capable(CAP_CHECKPOINT_RESTORE)) {
		snprintf(note, NOTE_LEN, "CAP_CHECKPOINT_RESTORE");
		return 1;
	}
	if (self_capable(CAP_SYS_ADMIN)) {
		snprintf(note, NOTE_LEN, "CAP_SYS_ADMIN");
		return 1;
	}
	return 0;
}

/* ---- reading another process ---- */

static int seize_and_interrupt(pid_t pid, char *note)
{
	int status;

	if (ptrace(PTRACE_SEIZE, pid, 0, 0))
		return errno_note(note, "PTRACE_SEIZE");
	if (ptrace(PTRACE_INTERRUPT, pid, 0, 0))
		return errno_note(note, "PTRACE_INTERRUPT");
	if (waitpid(pid, &status, __WALL) != pid)
		return errno_note(note, "waitpid");
	if (!WIFSTOPPED(status) || status >> 16 != PTRACE_EVENT_STOP) {
		snprintf(note, NOTE_LEN, "unexpected wait status %#x", status);
		return 0;
	}
	return 1;
}

static int probe_ptrace(const struct probe *p, char *note)
{
	pid_t pid = spawn_sleeper();
	int ok;

	(void)p;
	if (pid < 0)
		return errno_note(note, "fork");
	ok = seize_and_interrupt(pid, note);
	reap(pid);
	return ok;
}

static int probe_vm_readv(const struct probe *p, char *note)
{
	uint64_t got = 0;
	struct iovec local = { &got, sizeof(got) }, remote = { &marker, sizeof(marker) };
	pid_t pid = spawn_sleeper();
	ssize_t n;

	(void)p;
	if (pid < 0)
		return errno_note(note, "fork");
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		errno_note(note, "process_vm_readv");
	reap(pid);
	return n == sizeof(got) && got == marker;
}

static int probe_proc_mem(const struct probe *p, char *note)
{
	char path[64];
	uint64_t got = 0;
	pid_t pid = spawn_sleeper();
	ssize_t n = -1;
	int fd;

	(void)p;
	if (pid < 0)
		return errno_note(note, "fork");
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		errno_note(note, "open");
	else if ((n = pread(fd, &got, sizeof(got), (uintptr_t)&marker)) < 0)
		errno_note(note, "pread");
	if (fd >= 0)
		close(fd);
	reap(pid);
	return n == sizeof(got) && got == marker;
}

/* ---- pagemap ---- */

static int probe_pagemap_scan(const struct probe *p, char *note)
{
	char *page = anon_page();
	struct page_region r = { 0 };
	struct pm_scan_arg a = { .size = sizeof(a) };
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	long n = -1;

	(void)p;
	if (fd >= 0 && page) {
		page[0] = 1;
		a.start = (uintptr_t)page;
		a.end = a.start + PAGE_SIZE;
		a.vec = (uintptr_t)&r;
		a.vec_len = 1;
		a.category_mask = a.return_mask = PAGE_IS_PRESENT;
		n = ioctl(fd, PAGEMAP_SCAN, &a);
		if (n < 0)
			errno_note(note, "ioctl(PAGEMAP_SCAN)");
	}
	if (fd >= 0)
		close(fd);
	if (page)
		munmap(page, PAGE_SIZE);
	return n == 1 && r.start == a.start;
}

static int soft_dirty_bit(int fd, char *page)
{
	uint64_t e = 0;
	int clear = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);

	page[0] = 1;
	if (clear < 0 || write(clear, "4", 1) != 1) {
		if (clear >= 0)
			close(clear);
		return -1;
	}
	close(clear);
	page[0] = 2;
	if (pread(fd, &e, sizeof(e), (uintptr_t)page / PAGE_SIZE * sizeof(e)) != sizeof(e))
		return -1;
	return (e >> 55) & 1;
}

static int probe_soft_dirty(const struct probe *p, char *note)
{
	char *page = anon_page();
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	int bit = -1;

	(void)p;
	if (fd >= 0 && page)
		bit = soft_dirty_bit(fd, page);
	if (bit < 0)
		errno_note(note, "clear_refs/pagemap");
	else if (!bit)
		snprintf(note, NOTE_LEN, "page written after clear_refs is not soft-dirty");
	if (fd >= 0)
		close(fd);
	if (page)
		munmap(page, PAGE_SIZE);
	return bit == 1;
}

/* ---- vmsplice ---- */

struct gift_result {
	bool done, gifted, zero_copy;
	char note[NOTE_LEN];
};

/* Gift a page, change it, read the pipe: zero-copy shows the change. */
static void gift_page(int pfd[2], char *page, struct gift_result *g)
{
	char buf[PAGE_SIZE];
	struct iovec iov = { page, PAGE_SIZE };

	memset(page, 'A', PAGE_SIZE);
	if (vmsplice(pfd[1], &iov, 1, SPLICE_F_GIFT) != (ssize_t)PAGE_SIZE) {
		errno_note(g->note, "vmsplice");
		return;
	}
	g->gifted = true;
	page[0] = 'B';
	if (read(pfd[0], buf, PAGE_SIZE) != (ssize_t)PAGE_SIZE) {
		errno_note(g->note, "read");
		return;
	}
	g->zero_copy = buf[0] == 'B';
}

static const struct gift_result *gift_test(void)
{
	static struct gift_result g;
	char *page;
	int pfd[2];

	if (g.done)
		return &g;
	g.done = true;
	page = anon_page();
	if (!page || pipe(pfd)) {
		errno_note(g.note, page ? "pipe" : "mmap");
		return &g;
	}
	gift_page(pfd, page, &g);
	close(pfd[0]);
	close(pfd[1]);
	munmap(page, PAGE_SIZE);
	return &g;
}

static int probe_gift(const struct probe *p, char *note)
{
	const struct gift_result *g = gift_test();

	(void)p;
	snprintf(note, NOTE_LEN, "%s", g->note);
	return g->gifted;
}

static int probe_zero_copy(const struct probe *p, char *note)
{
	const struct gift_result *g = gift_test();

	(void)p;
	snprintf(note, NOTE_LEN, "%s", g->zero_copy ? "the pipe sees later writes" :
		 g->gifted ? "the pipe holds a copy" : g->note);
	return g->zero_copy;
}

/* ---- userfaultfd ---- */

static int uffd_open(void)
{
	int fd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	int dev;

	if (fd >= 0)
		return fd;
	dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -1;
	fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
	close(dev);
	return fd;
}

/* The features UFFDIO_API offers, or -1 without userfaultfd. */
static int64_t uffd_features(char *note)
{
	static int64_t features = -2;
	struct uffdio_api api = { .api = UFFD_API };
	int fd;

	if (features != -2)
		return features;
	features = -1;
	fd = uffd_open();
	if (fd < 0) {
		errno_note(note, "userfaultfd");
		return features;
	}
	if (ioctl(fd, UFFDIO_API, &api))
		errno_note(note, "UFFDIO_API");
	else
		features = api.features;
	close(fd);
	return features;
}

static int probe_uffd(const struct probe *p, char *note)
{
	(void)p;
	return uffd_features(note) >= 0;
}

static int probe_uffd_feature(const struct probe *p, char *note)
{
	int64_t f = uffd_features(note);

	return f >= 0 && (f & p->arg);
}

/* ---- restore-side features ---- */

static int probe_populate_write(const struct probe *p, char *note)
{
	char *page = anon_page();
	int ret;

	(void)p;
	if (!page)
		return errno_note(note, "mmap");
	ret = madvise(page, PAGE_SIZE, MADV_POPULATE_WRITE) == 0;
	if (!ret)
		errno_note(note, "madvise");
	munmap(page, PAGE_SIZE);
	return ret;
}

/* PID 1 of a new namespace: clone3 a child with PID SET_TID. */
static int clone3_set_tid_init(void)
{
	pid_t tid = SET_TID;
	struct clone_args args = {
		.exit_signal = SIGCHLD, .set_tid = (uintptr_t)&tid, .set_tid_size = 1,
	};
	long pid = syscall(SYS_clone3, &args, sizeof(args));
	int status;

	if (pid == 0)
		_exit(getpid() == SET_TID ? 0 : 1);
	if (pid < 0)
		return errno < 100 ? 100 + errno : 99;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 1;
	return pid == SET_TID ? WEXITSTATUS(status) : 1;
}

static int clone3_in_new_ns(void)
{
	if (unshare(CLONE_NEWPID))
		return 2;
	return in_child(clone3_set_tid_init);
}

static int probe_clone3(const struct probe *p, char *note)
{
	int ret = in_child(clone3_in_new_ns);
	bool last_pid = access("/proc/sys/kernel/ns_last_pid", W_OK) == 0;

	(void)p;
	if (ret == 0)
		snprintf(note, NOTE_LEN, "got PID %d in a new PID namespace%s", SET_TID,
			 last_pid ? "; ns_last_pid writable" : "");
	else if (ret >= 100)
		snprintf(note, NOTE_LEN, "clone3: %s", strerror(ret - 100));
	else
		snprintf(note, NOTE_LEN, "%s", ret == 2 ? "unshare(CLONE_NEWPID) failed" :
			 "the child did not get the PID asked for");
	return ret == 0;
}

static int probe_mm_map(const struct probe *p, char *note)
{
	unsigned int size = 0;

	(void)p;
	if (prctl(PR_SET_MM, PR_SET_MM_MAP_SIZE, (unsigned long)&size, 0, 0))
		return errno_note(note, "prctl(PR_SET_MM_MAP_SIZE)");
	snprintf(note, NOTE_LEN, "struct prctl_mm_map is %u bytes", size);
	return size > 0;
}

/* EEXIST: the call exists and refuses a second vDSO. Run apart: it may map one. */
static int map_vdso(void)
{
	long r = syscall(SYS_arch_prctl, ARCH_MAP_VDSO_64, 0x10000000UL);

	return r == 0 || errno == EEXIST ? 0 : 1;
}

static int probe_map_vdso(const struct probe *p, char *note)
{
	int ret = in_child(map_vdso);

	(void)p;
	snprintf(note, NOTE_LEN, ret == 0 ? "available; restore maps the vDSO with it" :
		 "arch_prctl refuses it");
	return ret == 0;
}

static int probe_pidfd_open(const struct probe *p, char *note)
{
	int fd = syscall(SYS_pidfd_open, getpid(), 0);

	(void)p;
	if (fd < 0)
		return errno_note(note, "pidfd_open");
	close(fd);
	return 1;
}

static int getfd_from(pid_t pid, int target, char *note)
{
	int pidfd = syscall(SYS_pidfd_open, pid, 0);
	int fd;

	if (pidfd < 0)
		return errno_note(note, "pidfd_open");
	fd = syscall(SYS_pidfd_getfd, pidfd, target, 0);
	if (fd < 0)
		errno_note(note, "pidfd_getfd");
	else
		close(fd);
	close(pidfd);
	return fd >= 0;
}

static int probe_pidfd_getfd(const struct probe *p, char *note)
{
	int target = open("/dev/null", O_RDONLY);
	pid_t pid;
	int ok;

	(void)p;
	if (target < 0)
		return errno_note(note, "open /dev/null");
	pid = spawn_sleeper();
	ok = pid < 0 ? errno_note(note, "fork") : getfd_from(pid, target, note);
	if (pid > 0)
		reap(pid);
	close(target);
	return ok;
}

/* ---- the list ---- */

static const struct probe probes[] = {
	{ "root or CAP_SYS_PTRACE", true, probe_ptrace_priv, 0 },
	{ "CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN", true, probe_cr_priv, 0 },
	{ "ptrace (PTRACE_SEIZE + PTRACE_INTERRUPT)", true, probe_ptrace, 0 },
	{ "PAGEMAP_SCAN ioctl (else /proc/PID/pagemap, slower)", false, probe_pagemap_scan, 0 },
	{ "soft-dirty page tracking", false, probe_soft_dirty, 0 },
	{ "vmsplice with SPLICE_F_GIFT (--mode splice)", false, probe_gift, 0 },
	{ "vmsplice zero-copy", false, probe_zero_copy, 0 },
	{ "process_vm_readv (--mode read)", false, probe_vm_readv, 0 },
	{ "/proc/PID/mem (--mode mem)", true, probe_proc_mem, 0 },
	{ "userfaultfd", false, probe_uffd, 0 },
	{ "userfaultfd UFFD_FEATURE_WP_ASYNC", false, probe_uffd_feature,
	  UFFD_FEATURE_WP_ASYNC },
	{ "userfaultfd UFFD_FEATURE_MISSING_SHMEM", false, probe_uffd_feature,
	  UFFD_FEATURE_MISSING_SHMEM },
	{ "userfaultfd UFFD_FEATURE_PAGEFAULT_FLAG_WP", false, probe_uffd_feature,
	  UFFD_FEATURE_PAGEFAULT_FLAG_WP },
	{ "MADV_POPULATE_WRITE", false, probe_populate_write, 0 },
	{ "clone3 with set_tid", true, probe_clone3, 0 },
	{ "prctl PR_SET_MM_MAP", true, probe_mm_map, 0 },
	{ "arch_prctl ARCH_MAP_VDSO_64", true, probe_map_vdso, 0 },
	{ "pidfd_open", true, probe_pidfd_open, 0 },
	{ "pidfd_getfd", true, probe_pidfd_getfd, 0 },
};

static void add_missing(char *list, size_t len, const char *what)
{
	size_t n = strlen(list);

	snprintf(list + n, len - n, "%s%s", n ? ", " : "", what);
}

int check_features(FILE *out)
{
	char missing[1024] = "", note[NOTE_LEN];

	for (size_t i = 0; i < ARRAY_SIZE(probes); i++) {
		const struct probe *p = &probes[i];
		const char *state;
		int ok;

		note[0] = 0;
		ok = p->run(p, note);
		state = ok ? "ok" : p->required ? "MISSING" : "no";
		if (out) {
			fprintf(out, "%-8s %s%s%s%s\n", state, p->what, note[0] ? " (" : "", note,
				note[0] ? ")" : "");
			fflush(out);
		} else {
			pr_info("check: %s %s %s", state, p->what, note);
		}
		if (!ok && p->required)
			add_missing(missing, sizeof(missing), p->what);
	}
	if (missing[0])
		return fail(-EOPNOTSUPP, "missing: %s", missing);
	return 0;
}

int cmd_check(const struct options *o)
{
	if (o->fd_kinds) {
		fd_kinds_print(stdout);
		return 0;
	}
	return check_features(stdout);
}
