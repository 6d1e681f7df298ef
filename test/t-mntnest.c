/* t-mntnest: a parent and its child in different mount namespaces. The child
 * unshares its mount namespace (all private), mounts a tmpfs on DIR/m that
 * only it sees, writes DIR/m/f and keeps it open at an offset; with `grand`,
 * it forks a grandchild that stays in its namespace and opens DIR/m/f too.
 * On SIGUSR1 the parent passes it down: the child checks its fd (content,
 * offset), that DIR/m is still its tmpfs and that its namespace is not the
 * parent's; the parent checks that it does not see the tmpfs, and prints PASS.
 * `open`: the child also holds a file the parent opened before the fork, and
 * the parent closed its own fd (zdtm mntns_open): still on the parent's
 * mount, not one of the child's namespace, offset and content kept;
 * `opendel`: the same file, deleted (refused);
 * `pivot`: the child does not mount the tmpfs but pivots into a bind of
 * DIR/mntnest-root (the old root detached), still holding the file the
 * parent opened before the fork and holds too (its stdio likewise): on
 * return the child finds the file's offset and content, moves the offset,
 * and the parent sees it moved (one description, opened outside the child's
 * root: zdtm mntns_pivot_root's inherited stdio); `pivottmp`: the same
 * into a fresh tmpfs instead of a bind, a file written in it and kept open
 * (zdtm mntns_pivot_root itself).
 * READY <parent> <child> */
#include "tlib.h"
#include <fcntl.h>
#include <stdbool.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#define TMPFS_MAGIC_ 0x01021994
#define TEXT "nested mount namespace\n"

static char dir[4096], file[4200];

static unsigned long ns_ino(pid_t pid)
{
	char p[64];
	struct stat st;

	snprintf(p, sizeof(p), "/proc/%d/ns/mnt", (int)pid);
	return stat(p, &st) ? 0 : (unsigned long)st.st_ino;
}

static bool on_tmpfs(const char *path)
{
	struct statfs s;

	return !statfs(path, &s) && s.f_type == TMPFS_MAGIC_;
}

/* fd at offset 7 of TEXT, on the tmpfs */
static int check_fd(const char *who, int fd)
{
	char buf[64] = { 0 };

	if (lseek(fd, 0, SEEK_CUR) != 7)
		return fprintf(stderr, "%s: offset %ld\n", who, (long)lseek(fd, 0, SEEK_CUR)), 1;
	if (pread(fd, buf, sizeof(buf) - 1, 0) != (ssize_t)strlen(TEXT) || strcmp(buf, TEXT))
		return fprintf(stderr, "%s: content lost\n", who), 1;
	if (!on_tmpfs(dir))
		return fprintf(stderr, "%s: %s is not its tmpfs\n", who, dir), 1;
	return 0;
}

static int open_at7(void)
{
	int fd = open(file, O_RDWR);

	if (fd < 0 || lseek(fd, 7, SEEK_SET) != 7)
		t_fail("open %s: %m", file);
	return fd;
}

static void __attribute__((noreturn)) grandchild(int ready)
{
	int fd = open_at7();

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (write(ready, "g", 1) != 1)
		_exit(3);
	t_wait_usr1();
	_exit(check_fd("grandchild", fd));
}

/*
 * Other tests mount network namespaces in /run/netns, and file systems in
 * their /tmp/memdump-test.* directories, for a while: in a copy of the
 * host's namespace they would be mounts restore looks for in memdump's,
 * gone by then. Unmounted here (before its own), they are not looked for.
 */
static void drop_transient(void)
{
	char line[4096], dev[256], mp[4096];
	FILE *f = fopen("/proc/self/mounts", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%255s %4095s", dev, mp) == 2 &&
		    (!strncmp(mp, "/run/netns/", 11) || !strncmp(mp, "/tmp/memdump-test.", 18)))
			umount2(mp, MNT_DETACH);
	if (f)
		fclose(f);
}

/* mount id of fd (fdinfo), and is it in pid's mountinfo? */
static int mnt_id_of(int fd)
{
	char p[64], line[256];
	int id = -1;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/self/fdinfo/%d", fd);
	f = fopen(p, "r");
	while (f && fgets(line, sizeof(line), f) && sscanf(line, "mnt_id: %d", &id) != 1)
		;
	if (f)
		fclose(f);
	return id;
}

static bool listed(pid_t pid, int id)
{
	char p[64], line[4096];
	bool hit = false;
	int m;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/mountinfo", (int)pid);
	f = fopen(p, "r");
	while (f && !hit && fgets(line, sizeof(line), f))
		hit = sscanf(line, "%d", &m) == 1 && m == id;
	if (f)
		fclose(f);
	return hit;
}

static int held_fd = -1;	/* open: the parent's file, the child's alone */

static int check_held(pid_t parent)
{
	char buf[16] = { 0 };
	int id = mnt_id_of(held_fd);

	if (held_fd < 0)
		return 0;
	if (lseek(held_fd, 0, SEEK_CUR) != 2 || pread(held_fd, buf, 5, 0) != 5 ||
	    strcmp(buf, "held\n"))
		return fprintf(stderr, "child: the held file lost its offset or content\n"), 1;
	if (listed(getpid(), id) || !listed(parent, id))
		return fprintf(stderr, "child: the held file is on mount %d, not the parent's\n",
			       id), 1;
	return 0;
}

static bool fresh;	/* pivottmp */
static int root_fd = -1;	/* pivottmp: /f, at offset 7 */

/* pivot: into a bind of DIR/mntnest-root (pivottmp: a tmpfs on it), the old root gone */
static void pivot_child(void)
{
	char root[4200], old[4300];

	snprintf(root, sizeof(root), "%s/mntnest-root", t_dir);
	snprintf(old, sizeof(old), "%s/old", root);
	if ((mkdir(root, 0700) && errno != EEXIST) ||
	    (fresh ? mount("memdump-root", root, "tmpfs", 0, "size=1m,mode=0755") :
		     mount(root, root, NULL, MS_BIND, NULL)) ||
	    (mkdir(old, 0700) && errno != EEXIST) || chdir(root) ||
	    syscall(SYS_pivot_root, ".", "old") || chdir("/") || umount2("/old", MNT_DETACH))
		t_fail("pivot_root into %s: %m", root);
	if (!fresh)
		return;
	root_fd = open("/f", O_RDWR | O_CREAT | O_EXCL, 0600);
	if (root_fd < 0 || write(root_fd, TEXT, strlen(TEXT)) != (ssize_t)strlen(TEXT) ||
	    lseek(root_fd, 7, SEEK_SET) != 7)
		t_fail("write /f in the new root: %m");
}

static int check_pivot(void)
{
	char buf[64] = { 0 };

	if (fresh && (!on_tmpfs("/") || lseek(root_fd, 0, SEEK_CUR) != 7 ||
		      pread(root_fd, buf, sizeof(buf) - 1, 0) != (ssize_t)strlen(TEXT) ||
		      strcmp(buf, TEXT)))
		return fprintf(stderr, "child: its tmpfs root or /f in it lost\n"), 1;
	memset(buf, 0, sizeof(buf));

	if (lseek(held_fd, 0, SEEK_CUR) != 2 || pread(held_fd, buf, 5, 0) != 5 ||
	    strcmp(buf, "held\n"))
		return fprintf(stderr, "child: the held file lost its offset or content\n"), 1;
	if (!access(t_dir, F_OK) || access("/old", F_OK))
		return fprintf(stderr, "child: not in its own root\n"), 1;
	return lseek(held_fd, 4, SEEK_SET) != 4;
}

static void __attribute__((noreturn)) child_pivot(int ready)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		t_fail("unshare: %m");
	drop_transient();
	pivot_child();
	if (write(ready, "c", 1) != 1)
		_exit(3);
	t_wait_usr1();
	_exit(check_pivot());
}

static void __attribute__((noreturn)) child(pid_t parent, bool grand, int ready)
{
	pid_t g = 0;
	int fd, st = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		t_fail("unshare: %m");
	drop_transient();
	if (mount("memdump-nest", dir, "tmpfs", 0, "size=1m,mode=0700"))
		t_fail("mount: %m");
	fd = open(file, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || write(fd, TEXT, strlen(TEXT)) != (ssize_t)strlen(TEXT) ||
	    lseek(fd, 7, SEEK_SET) != 7)
		t_fail("write %s: %m", file);
	if (grand) {
		g = fork();
		if (g < 0)
			t_fail("fork: %m");
		if (!g)
			grandchild(ready);
	}
	if (write(ready, "c", 1) != 1)
		_exit(3);
	t_wait_usr1();
	if (ns_ino(getpid()) == ns_ino(parent)) {
		fprintf(stderr, "child: in its parent's mount namespace\n");
		st = 1;
	}
	st |= check_fd("child", fd);
	st |= check_held(parent);
	if (g) {
		int gs;

		kill(g, SIGUSR1);
		if (waitpid(g, &gs, 0) != g || !WIFEXITED(gs) || WEXITSTATUS(gs))
			st = 1;
	}
	_exit(st);
}

int main(int argc, char **argv)
{
	bool grand = argc > 2 && !strcmp(argv[2], "grand");
	bool del = argc > 2 && !strcmp(argv[2], "opendel");
	bool pivot = argc > 2 && !strncmp(argv[2], "pivot", 5);
	bool held = del || pivot || (argc > 2 && !strcmp(argv[2], "open"));

	fresh = argc > 2 && !strcmp(argv[2], "pivottmp");
	int p[2], st, pfd = -1;
	char c;
	pid_t kid;

	t_init(argc, argv, SA_RESTART);
	snprintf(dir, sizeof(dir), "%s/mntnest", t_dir);
	snprintf(file, sizeof(file), "%s/f", dir);
	if (mkdir(dir, 0700) && errno != EEXIST)
		t_fail("mkdir %s: %m", dir);
	if (pipe(p))
		t_fail("pipe: %m");
	if (held) {
		char pf[4200];

		snprintf(pf, sizeof(pf), "%s/mntnest-p", t_dir);
		pfd = open(pf, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (pfd < 0 || write(pfd, "held\n", 5) != 5 || lseek(pfd, 2, SEEK_SET) != 2)
			t_fail("open %s: %m", pf);
		held_fd = pfd;
		if (del)
			unlink(pf);
	}
	kid = fork();
	if (kid < 0)
		t_fail("fork: %m");
	if (!kid && pivot)
		child_pivot(p[1]);
	if (!kid)
		child(t_pid, grand, p[1]);
	close(p[1]);
	if (pfd >= 0 && !pivot)
		close(pfd);	/* the child's alone */
	for (int n = grand ? 2 : 1; n > 0; n--)
		if (read(p[0], &c, 1) != 1)
			t_fail("the child did not get ready");
	close(p[0]);
	if (on_tmpfs(dir) || !access(file, F_OK))
		t_fail("the parent sees the child's tmpfs");
	t_ready("%d", (int)kid);
	t_wait_usr1();
	if (ns_ino(getpid()) == ns_ino(kid))
		t_fail("the child is in the parent's mount namespace");
	kill(kid, SIGUSR1);
	if (waitpid(kid, &st, 0) != kid || !WIFEXITED(st) || WEXITSTATUS(st))
		t_fail("the child failed its checks (%#x)", st);
	if (pivot && lseek(pfd, 0, SEEK_CUR) != 4)
		t_fail("the child's move of the held file's offset is not the parent's: two "
		       "descriptions");
	if (on_tmpfs(dir) || !access(file, F_OK))
		t_fail("the parent sees the child's tmpfs after the restore");
	rmdir(dir);
	t_pass(grand ? "grand" : fresh ? "pivottmp" : pivot ? "pivot" : held ? "open" : "");
}
