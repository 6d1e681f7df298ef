/* t-timens: a process in a time namespace of its own (CLONE_NEWTIME), its
 * monotonic clock 10 days ahead of the host's and its boot-time clock 20.
 *   (default)  unshare(CLONE_NEWTIME), the offsets written, then setns into
 *              the new namespace itself (/proc/self/ns/time_for_children)
 *   tree       the same, then a child forked into it, which checks itself
 *              on its parent's word (SIGUSR1) and exits 0 or 1
 *   forkids    unshare(CLONE_NEWTIME) only: its children's time namespace
 *              is not its own (a dump refuses it)
 * READY <pid> [<child>]
 * After SIGUSR1: in a time namespace still (not the one it started in), its children's the
 * same; both clocks went on from where they were at READY (a restore into
 * the host's namespace would put them 10 and 20 days back), and the
 * namespace's offsets still put them days ahead of the host's. */
#include "tlib.h"
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/wait.h>

#define DAY	(24 * 3600LL)

static double mono0, boot0;
static char host[64];	/* its time namespace before it made its own */

static double clk(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void ns_link(const char *path, char *buf, size_t len)
{
	ssize_t n = readlink(path, buf, len - 1);

	if (n < 0)
		t_fail("readlink %s: %s", path, strerror(errno));
	buf[n] = 0;
}

static void make_timens(bool enter)
{
	int fd;

	if (unshare(CLONE_NEWTIME))
		t_fail("unshare(CLONE_NEWTIME): %s", strerror(errno));
	fd = open("/proc/self/timens_offsets", O_WRONLY);
	if (fd < 0 || dprintf(fd, "%d %lld 0\n%d %lld 0\n", CLOCK_MONOTONIC, 10 * DAY,
			      CLOCK_BOOTTIME, 20 * DAY) < 0)
		t_fail("timens_offsets: %s", strerror(errno));
	close(fd);
	if (!enter)
		return;
	fd = open("/proc/self/ns/time_for_children", O_RDONLY);
	if (fd < 0 || setns(fd, CLONE_NEWTIME))
		t_fail("setns into the new time namespace: %s", strerror(errno));
	close(fd);
}

/* "monotonic S NS" of /proc/self/timens_offsets */
static long long offset_of(const char *clock)
{
	char name[32];
	long long s;
	long ns;
	FILE *f = fopen("/proc/self/timens_offsets", "r");

	if (!f)
		t_fail("/proc/self/timens_offsets: %s", strerror(errno));
	while (fscanf(f, "%31s %lld %ld", name, &s, &ns) == 3)
		if (!strcmp(name, clock)) {
			fclose(f);
			return s;
		}
	fclose(f);
	t_fail("no %s line in /proc/self/timens_offsets", clock);
}

static void check_self(const char *who)
{
	char mine[64], kids[64];
	double dm = clk(CLOCK_MONOTONIC) - mono0, db = clk(CLOCK_BOOTTIME) - boot0;

	ns_link("/proc/self/ns/time", mine, sizeof(mine));
	ns_link("/proc/self/ns/time_for_children", kids, sizeof(kids));
	if (!strcmp(mine, host))
		t_fail("%s: in the time namespace it started in, %s", who, host);
	if (strcmp(mine, kids))
		t_fail("%s: its children's time namespace %s is not its own %s", who, kids, mine);
	if (dm < 0 || dm > 600 || db < 0 || db > 600)
		t_fail("%s: the clocks moved %.3f s (monotonic) and %.3f s (boottime) since READY",
		       who, dm, db);
	if (offset_of("monotonic") < 9 * DAY || offset_of("boottime") < 19 * DAY)
		t_fail("%s: offsets monotonic %lld s, boottime %lld s: not days ahead", who,
		       offset_of("monotonic"), offset_of("boottime"));
}

static void run_child(void)
{
	t_wait_usr1();
	check_self("the child");
	_exit(0);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "";
	bool tree = !strcmp(mode, "tree");
	pid_t c = 0;
	int st;

	t_init(argc, argv, 0);
	ns_link("/proc/self/ns/time", host, sizeof(host));
	make_timens(strcmp(mode, "forkids") != 0);
	mono0 = clk(CLOCK_MONOTONIC);
	boot0 = clk(CLOCK_BOOTTIME);
	if (tree) {
		c = fork();
		if (c < 0)
			t_fail("fork: %s", strerror(errno));
		if (c == 0)
			run_child();
		t_ready("%d", (int)c);
	} else {
		t_ready("");
	}
	t_wait_usr1();
	t_check_common();
	if (strcmp(mode, "forkids"))
		check_self("the process");
	if (tree) {
		kill(c, SIGUSR1);
		if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st))
			t_fail("the child's checks failed (status %#x)", st);
	}
	t_pass(mode);
}
