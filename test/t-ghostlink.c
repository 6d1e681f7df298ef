/* t-ghostlink: a file open by a name that was deleted while another link of it remains.
 *   fd 10: DIR/ghostlink-a, O_RDWR, linked as DIR/ghostlink-a.link, then DIR/ghostlink-a
 *          deleted, then 1000 bytes written (the size changes after the unlink), offset 1000
 *   fd 11: the same inode opened O_RDONLY by the link name, offset 10
 * argv[2] "elsewhere": the other link is in DIR/ghostlink-sub/ instead (dump refuses it);
 * "renamed": the runner takes the deleted name again before the restore;
 * "dirgone": fd 10 is opened as DIR/ghostlink-d/ghostlink-a, the link is DIR/ghostlink-a.link
 * (in the parent), then the name and its directory ghostlink-d are removed (zdtm
 * unlink_regular00).
 * After SIGUSR1: fd 10 is on the very inode of the link (device, inode, one link), shows
 * "DIR/ghostlink-a (deleted)" (or a name beside it when renamed), its size, content and
 * offset; fd 11 likewise by the link's name.
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <sys/stat.h>

#define SIZE 1000

static char path[600], other[700], sub[512];
static int renamed;

static void expect_link(int fd, const char *want_path, int deleted)
{
	char proc[64], link[600], want[600];
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, link, sizeof(link) - 1);
	link[n < 0 ? 0 : n] = 0;
	snprintf(want, sizeof(want), "%s%s", want_path, deleted ? " (deleted)" : "");
	if (deleted && renamed && !strncmp(link, want_path, strlen(want_path)) &&
	    strstr(link, ".memdump-ghost.") && strstr(link, " (deleted)"))
		return;
	if (strcmp(link, want))
		t_fail("fd %d is '%s', want '%s'", fd, link, want);
}

static void expect_same(int fd, off_t pos)
{
	struct stat a, b;
	char buf[SIZE];

	if (fstat(fd, &a) || stat(other, &b))
		t_fail("stat fd %d or %s: %s", fd, other, strerror(errno));
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		t_fail("fd %d is inode %lu, the link %s is %lu: not the same file", fd,
		       (unsigned long)a.st_ino, other, (unsigned long)b.st_ino);
	if (a.st_nlink != 1)
		t_fail("fd %d: %lu links, want 1", fd, (unsigned long)a.st_nlink);
	if (a.st_size != SIZE)
		t_fail("fd %d: size %lld, want %d", fd, (long long)a.st_size, SIZE);
	if (lseek(fd, 0, SEEK_CUR) != pos)
		t_fail("fd %d: offset %lld, want %lld", fd, (long long)lseek(fd, 0, SEEK_CUR),
		       (long long)pos);
	if (pread(fd, buf, SIZE, 0) != SIZE)
		t_fail("fd %d: pread: %s", fd, strerror(errno));
	for (int i = 0; i < SIZE; i++)
		if (buf[i] != (char)('a' + i % 26))
			t_fail("fd %d: byte %d differs", fd, i);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "";
	char buf[SIZE];
	int fd;

	t_init(argc, argv, SA_RESTART);
	renamed = !strcmp(mode, "renamed");
	snprintf(path, sizeof(path), "%s/ghostlink-a", t_dir);
	if (!strcmp(mode, "elsewhere")) {
		snprintf(other, sizeof(other), "%s/ghostlink-sub", t_dir);
		mkdir(other, 0755);
		strcat(other, "/ghostlink-a.link");
	} else if (!strcmp(mode, "dirgone")) {
		snprintf(sub, sizeof(sub), "%s/ghostlink-d", t_dir);
		snprintf(other, sizeof(other), "%s.link", path);
		snprintf(path, sizeof(path), "%s/ghostlink-a", sub);
		if (mkdir(sub, 0755))
			t_fail("mkdir %s: %s", sub, strerror(errno));
	} else {
		snprintf(other, sizeof(other), "%s.link", path);
	}
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || dup2(fd, 10) != 10)
		t_fail("open %s: %s", path, strerror(errno));
	close(fd);
	if (link(path, other) || unlink(path) || (sub[0] && rmdir(sub)))
		t_fail("link/unlink %s: %s", path, strerror(errno));
	for (int i = 0; i < SIZE; i++)
		buf[i] = 'a' + i % 26;
	if (write(10, buf, SIZE) != SIZE)
		t_fail("write: %s", strerror(errno));
	fd = open(other, O_RDONLY);
	if (fd < 0 || dup2(fd, 11) != 11 || lseek(11, 10, SEEK_SET) != 10)
		t_fail("open %s: %s", other, strerror(errno));
	close(fd);
	t_ready(NULL);
	t_wait_usr1();
	t_check_common();
	expect_link(10, path, 1);
	expect_same(10, SIZE);
	expect_link(11, other, 0);
	expect_same(11, 10);
	t_pass(mode[0] ? mode : NULL);
}
