/* t-nsfile: open namespace files of the process's own namespaces.
 *   fd 10: /proc/self/ns/net, fd 11: /proc/self/ns/uts, fd 12: /proc/self/ns/ipc,
 *   fd 13: /proc/self/ns/mnt, fd 14: a dup of fd 10
 * After SIGUSR1: each is a file of the namespace the process is in now (the
 * same inode as /proc/self/ns/NAME), setns() takes it, fd 14 is still fd 10's
 * description. Run it in namespaces of its own (unshare, netns-wrap) to have
 * them restored. READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <sched.h>
#include <linux/kcmp.h>
#include <sys/stat.h>

static const struct { const char *name; int fd, flag; } nss[] = {
	{ "net", 10, CLONE_NEWNET }, { "uts", 11, CLONE_NEWUTS }, { "ipc", 12, CLONE_NEWIPC },
	{ "mnt", 13, CLONE_NEWNS },
};

static void open_ns(const char *name, int want)
{
	char p[64];
	int fd;

	snprintf(p, sizeof(p), "/proc/self/ns/%s", name);
	fd = open(p, O_RDONLY);
	if (fd < 0 || dup2(fd, want) != want || close(fd))
		t_fail("open %s as fd %d: %s", p, want, strerror(errno));
}

static void check_ns(const char *name, int fd, int flag)
{
	char p[64];
	struct stat now, held;

	snprintf(p, sizeof(p), "/proc/self/ns/%s", name);
	if (stat(p, &now) || fstat(fd, &held))
		t_fail("stat %s / fd %d: %s", p, fd, strerror(errno));
	if (now.st_ino != held.st_ino || now.st_dev != held.st_dev)
		t_fail("fd %d is namespace %lu, the process is in %s namespace %lu", fd,
		       (unsigned long)held.st_ino, name, (unsigned long)now.st_ino);
	if (flag != CLONE_NEWNS && setns(fd, flag))
		t_fail("setns fd %d (%s): %s", fd, name, strerror(errno));
}

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);
	for (size_t i = 0; i < sizeof(nss) / sizeof(nss[0]); i++)
		open_ns(nss[i].name, nss[i].fd);
	if (dup2(10, 14) != 14)
		t_fail("dup2: %s", strerror(errno));
	t_ready("");
	t_wait_usr1();
	t_check_common();
	for (size_t i = 0; i < sizeof(nss) / sizeof(nss[0]); i++)
		check_ns(nss[i].name, nss[i].fd, nss[i].flag);
	if (syscall(SYS_kcmp, getpid(), getpid(), KCMP_FILE, 10, 14))
		t_fail("fd 14 is no longer fd 10's description");
	t_pass(NULL);
}
