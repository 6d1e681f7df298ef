/* t-ghostro: a deleted file held open on a read-only bind of a writable filesystem.
 * argv[2]: a directory under DIR, a mount point the runner remounts read-only
 * (`mount -o remount,ro,bind`) once this program is READY.
 *   fd 10: DIR/ARG/ghost-ro, written (3000 bytes), reopened O_RDONLY at offset 100,
 *          then deleted
 * After SIGUSR1: fd 10 shows "DIR/ARG/ghost-ro (deleted)", no link, its content and
 * offset, on a read-only mount (statvfs), and nothing can be made there (EROFS).
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#define SIZE 3000

int main(int argc, char **argv)
{
	char path[600], link[700], want[700], buf[SIZE];
	struct statvfs vfs;
	struct stat st;
	ssize_t n;
	int fd;

	t_init(argc, argv, SA_RESTART);
	if (argc < 3)
		t_fail("usage: t-ghostro DIR SUBDIR");
	snprintf(path, sizeof(path), "%s/%s/ghost-ro", t_dir, argv[2]);
	for (int i = 0; i < SIZE; i++)
		buf[i] = (char)('A' + i % 23);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0640);
	if (fd < 0 || write(fd, buf, SIZE) != SIZE || close(fd))
		t_fail("write %s: %s", path, strerror(errno));
	fd = open(path, O_RDONLY);
	if (fd < 0 || dup2(fd, 10) != 10 || lseek(10, 100, SEEK_SET) != 100)
		t_fail("open %s: %s", path, strerror(errno));
	close(fd);
	if (unlink(path))
		t_fail("unlink %s: %s", path, strerror(errno));
	t_ready(NULL);
	t_wait_usr1();
	t_check_common();
	n = readlink("/proc/self/fd/10", link, sizeof(link) - 1);
	link[n < 0 ? 0 : n] = 0;
	snprintf(want, sizeof(want), "%s (deleted)", path);
	if (strcmp(link, want))
		t_fail("fd 10 is '%s', want '%s'", link, want);
	if (fstat(10, &st) || st.st_nlink != 0 || st.st_size != SIZE || (st.st_mode & 07777) != 0640)
		t_fail("fd 10: %lu links, size %lld, mode %o", (unsigned long)st.st_nlink,
		       (long long)st.st_size, st.st_mode & 07777);
	if (lseek(10, 0, SEEK_CUR) != 100)
		t_fail("fd 10: offset %lld, want 100", (long long)lseek(10, 0, SEEK_CUR));
	memset(buf, 0, sizeof(buf));
	if (pread(10, buf, SIZE, 0) != SIZE)
		t_fail("fd 10: pread: %s", strerror(errno));
	for (int i = 0; i < SIZE; i++)
		if (buf[i] != (char)('A' + i % 23))
			t_fail("fd 10: byte %d differs", i);
	if (fstatvfs(10, &vfs) || !(vfs.f_flag & ST_RDONLY))
		t_fail("fd 10 is not on a read-only mount");
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	if (fd >= 0 || errno != EROFS)
		t_fail("a file could be made on the read-only mount (%d: %s)", fd, strerror(errno));
	t_pass(NULL);
}
