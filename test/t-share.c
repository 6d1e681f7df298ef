/* t-share MODE: a parent P and a child C made with clone() sharing a table.
 *   files: CLONE_FILES. On SIGUSR1 P opens a file and tells C its number; C
 *          finds it open (the same file), opens another and closes P's; P
 *          finds its fd closed and C's open; P's flock on share-lock still
 *          holds.
 *   fs:    CLONE_FS, cwd DIR/fs0 and umask 023 set before READY. On SIGUSR1
 *          both check those, P moves to DIR/fs1 with umask 027, C sees it,
 *          moves to DIR/fs2 with umask 077, P sees that.
 *   both:  CLONE_FILES|CLONE_FS: files, then fs.
 *   deep:  C made with CLONE_FILES has a child G with CLONE_FILES too and a
 *          child D of its own fork (a copy of the table). On SIGUSR1 P opens a
 *          file: C and G find it open, D does not. READY <P> <C> <G> <D>
 *   vm:    CLONE_VM|CLONE_SIGHAND (refused by name).
 *   sib:   two children sharing one fd table, their parent not (refused).
 *   vfork: C (forked) is in vfork(), its child G (sharing its memory) blocked
 *          in a read; a vforking process cannot be stopped (refused at once,
 *          not waited for). On SIGUSR1 P lets G exit, C returns and exits 0.
 *          READY <P> <C> <G>
 * Each side checks its PID and parent. READY <P> <C> */
#include "tlib.h"
#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

static int cmd[2], reply[2];
static pid_t parent_pid, child_pid;

static void put(int fd, int v)
{
	if (write(fd, &v, sizeof(v)) != sizeof(v))
		t_fail("write: %s", strerror(errno));
}

static int get(int fd)
{
	int v;
	ssize_t n;

	do
		n = read(fd, &v, sizeof(v));
	while (n < 0 && errno == EINTR);
	if (n != sizeof(v))
		t_fail("read %zd: %s", n, strerror(errno));
	return v;
}

static ino_t ino_of(const char *name)
{
	char p[4096];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", t_dir, name);
	if (stat(p, &st))
		t_fail("stat %s: %s", p, strerror(errno));
	return st.st_ino;
}

static int open_in(const char *name)
{
	char p[4096];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", t_dir, name);
	fd = open(p, O_CREAT | O_RDWR, 0600);
	if (fd < 0)
		t_fail("open %s: %s", p, strerror(errno));
	return fd;
}

static void expect_file(const char *who, int fd, const char *name)
{
	struct stat st;

	if (fstat(fd, &st))
		t_fail("%s: fd %d is not open: %s (fd table not shared)", who, fd, strerror(errno));
	if (st.st_ino != ino_of(name))
		t_fail("%s: fd %d is not %s", who, fd, name);
}

static unsigned umask_now(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned m = ~0u;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Umask: %o", &m) == 1)
			break;
	if (f)
		fclose(f);
	return m;
}

static void expect_fs(const char *who, const char *dir, unsigned mask)
{
	char want[4096], cwd[4096];

	snprintf(want, sizeof(want), "%s/%s", t_dir, dir);
	if (!getcwd(cwd, sizeof(cwd)) || strcmp(cwd, want))
		t_fail("%s: cwd %s, not %s (fs not shared)", who, cwd, want);
	if (umask_now() != mask)
		t_fail("%s: umask %03o, not %03o (fs not shared)", who, umask_now(), mask);
}

static void goto_fs(const char *dir, unsigned mask)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s/%s", t_dir, dir);
	if (mkdir(p, 0755) && errno != EEXIST)
		t_fail("mkdir %s: %s", p, strerror(errno));
	if (chdir(p))
		t_fail("chdir %s: %s", p, strerror(errno));
	umask(mask);
}

static void check_child_self(void)
{
	if (getpid() != child_pid || getppid() != parent_pid)
		t_fail("C: pid %d parent %d, not %d %d", (int)getpid(), (int)getppid(),
		       (int)child_pid, (int)parent_pid);
}

static void files_side(void)
{
	int fd = get(cmd[0]), fd2;

	check_child_self();
	expect_file("C", fd, "share-a");
	fd2 = open_in("share-b");
	close(fd);
	put(reply[1], fd2);
}

static void fs_side(void)
{
	get(cmd[0]);
	check_child_self();
	expect_fs("C", "fs1", 027);
	goto_fs("fs2", 077);
	put(reply[1], 0);
}

static void __attribute__((noreturn)) child_files(void)
{
	files_side();
	_exit(0);
}

static void __attribute__((noreturn)) child_fs(void)
{
	fs_side();
	_exit(0);
}

static void __attribute__((noreturn)) child_both(void)
{
	files_side();
	fs_side();
	_exit(0);
}

static void parent_files(void)
{
	int fd = open_in("share-a"), fd2, other = open_in("share-lock");

	if (flock(other, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK)
		t_fail("P: the flock on share-lock is gone");
	close(other);

	put(cmd[1], fd);
	fd2 = get(reply[0]);
	if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
		t_fail("P: fd %d that C closed is still open (fd table not shared)", fd);
	expect_file("P", fd2, "share-b");
}

static void parent_fs(void)
{
	expect_fs("P", "fs0", 023);
	goto_fs("fs1", 027);
	put(cmd[1], 0);
	get(reply[0]);
	expect_fs("P", "fs2", 077);
}

static int dcmd[2], info[2];

/* G (CLONE_FILES of C) and C: P's new fd is open in their table. */
static void __attribute__((noreturn)) deep_sharer(void)
{
	int fd = get(cmd[0]);

	expect_file(getpid() == child_pid ? "C" : "G", fd, "share-a");
	put(reply[1], 1);
	if (getpid() == child_pid) {
		while (wait(NULL) > 0)
			;
	}
	_exit(0);
}

/* D (a fork of C): its own copy of the table, without P's new fd. */
static void __attribute__((noreturn)) deep_own(void)
{
	int fd = get(dcmd[0]);

	if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
		t_fail("D: fd %d that P opened after D's fork is open in D (its table shared)", fd);
	put(reply[1], 2);
	_exit(0);
}

static void __attribute__((noreturn)) child_deep(void)
{
	pid_t c = getpid(), g, d;

	g = (pid_t)syscall(SYS_clone, CLONE_FILES | SIGCHLD, 0, NULL, NULL, 0);
	if (g == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		deep_sharer();
	}
	d = fork();
	if (d == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		deep_own();
	}
	if (g < 0 || d < 0)
		t_fail("clone: %s", strerror(errno));
	put(info[1], g);
	put(info[1], d);
	(void)c;
	deep_sharer();
}

static void parent_deep(void)
{
	int fd = open_in("share-a"), sum = 0;

	put(cmd[1], fd);
	put(cmd[1], fd);
	put(dcmd[1], fd);
	for (int i = 0; i < 3; i++)
		sum += get(reply[0]);
	if (sum != 4)
		t_fail("P: replies add up to %d, not 4", sum);
}

/* C: vfork() a G that blocks (it has C's memory) until P writes to dcmd, then exit 0. */
static void __attribute__((noreturn)) child_vfork(void)
{
	pid_t g = vfork();
	char c;

	if (g == 0) {
		pid_t me = getpid();

		if (write(info[1], &me, sizeof(me)) != sizeof(me) || read(dcmd[0], &c, 1) != 1)
			_exit(2);
		_exit(0);
	}
	_exit(g > 0 && waitpid(g, NULL, 0) == g ? 0 : 3);
}

static int idle(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return 0;
}

static pid_t clone_plain(unsigned long flags, void (*fn)(void))
{
	pid_t pid = (pid_t)syscall(SYS_clone, flags | SIGCHLD, 0, NULL, NULL, 0);

	if (pid < 0)
		t_fail("clone: %s", strerror(errno));
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		child_pid = getpid();
		fn();
	}
	return pid;
}

static void __attribute__((noreturn)) sleep_forever(void)
{
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "files";
	pid_t other = 0;
	int st;

	t_init(argc, argv, 0);
	parent_pid = getpid();
	if (pipe(cmd) || pipe(reply) || pipe(dcmd) || pipe(info))
		t_fail("pipe: %s", strerror(errno));
	if (!strcmp(mode, "files")) {
		if (flock(open_in("share-lock"), LOCK_EX))
			t_fail("flock: %s", strerror(errno));
		child_pid = clone_plain(CLONE_FILES, child_files);
	} else if (!strcmp(mode, "fs")) {
		goto_fs("fs0", 023);
		child_pid = clone_plain(CLONE_FS, child_fs);
	} else if (!strcmp(mode, "both")) {
		if (flock(open_in("share-lock"), LOCK_EX))
			t_fail("flock: %s", strerror(errno));
		goto_fs("fs0", 023);
		child_pid = clone_plain(CLONE_FILES | CLONE_FS, child_both);
	} else if (!strcmp(mode, "deep")) {
		child_pid = clone_plain(CLONE_FILES, child_deep);
		other = get(info[0]);
		t_ready("%d %d %d", (int)child_pid, (int)other, get(info[0]));
	} else if (!strcmp(mode, "vm")) {
		char *stack = t_mmap(1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE);

		child_pid = clone(idle, stack + (1 << 16), CLONE_VM | CLONE_SIGHAND | SIGCHLD, NULL);
	} else if (!strcmp(mode, "vfork")) {
		fflush(stdout);
		child_pid = fork();
		if (child_pid == 0)
			child_vfork();
		other = get(info[0]);
	} else if (!strcmp(mode, "sib")) {
		child_pid = clone_plain(CLONE_FILES, sleep_forever);
		other = clone_plain(CLONE_FILES, sleep_forever);
		if (unshare(CLONE_FILES))
			t_fail("unshare: %s", strerror(errno));
	} else {
		t_fail("unknown mode %s", mode);
	}
	if (child_pid < 0)
		t_fail("clone: %s", strerror(errno));
	if (strcmp(mode, "deep"))
		t_ready("%d %d", (int)child_pid, (int)other);
	t_wait_usr1();
	t_check_common();
	if (!strcmp(mode, "files"))
		parent_files();
	else if (!strcmp(mode, "deep"))
		parent_deep();
	else if (!strcmp(mode, "both")) {
		parent_files();
		parent_fs();
	}
	else if (!strcmp(mode, "fs"))
		parent_fs();
	else if (!strcmp(mode, "vfork"))
		put(dcmd[1], 1);	/* G exits, C returns from vfork() */
	else {
		kill(child_pid, SIGKILL);
		if (other)
			kill(other, SIGKILL);
	}
	if (waitpid(child_pid, &st, 0) != child_pid)
		t_fail("waitpid: %s", strerror(errno));
	if (strcmp(mode, "vm") && strcmp(mode, "sib") && st)
		t_fail("C ended with status %#x", st);
	if (other && strcmp(mode, "deep"))
		waitpid(other, NULL, 0);
	t_pass(mode);
}
