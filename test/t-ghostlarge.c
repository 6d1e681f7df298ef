/* t-ghostlarge: a deleted file above the default ghost limit (zdtm ghost_holes_large01).
 *   fd 10: DIR/ghostlarge, O_RDWR: 1 MiB of data, a 1 GiB hole, 1 MiB of data
 *          (2 MiB of data, above the default 1 MiB limit), offset 12345, deleted
 * After SIGUSR1: still deleted, same size and offset, 2 MiB of disk blocks
 * (the hole not filled), both data ranges byte for byte, and the hole still
 * a hole (SEEK_HOLE / SEEK_DATA), checked only if the filesystem showed it
 * before. READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>

#define MIB	(1024 * 1024)
#define DATA	MIB
#define HOLE	(1024LL * MIB)
#define DATA2	(DATA + HOLE)
#define SIZE	(2 * DATA + HOLE)

static unsigned char buf[DATA];

static void fill(uint64_t seed)
{
	t_fill(buf, sizeof(buf), seed);
}

static void check_range(off_t at, uint64_t seed)
{
	if (pread(10, buf, sizeof(buf), at) != (ssize_t)sizeof(buf))
		t_fail("pread at %lld: %s", (long long)at, strerror(errno));
	if (t_verify(buf, sizeof(buf), seed))
		t_fail("the data at %lld differ", (long long)at);
}

int main(int argc, char **argv)
{
	char path[600], link[700];
	struct stat st;
	bool holes;
	off_t at;
	ssize_t n;
	int fd;

	t_init(argc, argv, SA_RESTART);
	snprintf(path, sizeof(path), "%s/ghostlarge", t_dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || dup2(fd, 10) != 10 || close(fd) || unlink(path))
		t_fail("create %s: %s", path, strerror(errno));
	fill(1);
	if (pwrite(10, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf))
		t_fail("write: %s", strerror(errno));
	fill(2);
	if (pwrite(10, buf, sizeof(buf), DATA2) != (ssize_t)sizeof(buf) || ftruncate(10, SIZE))
		t_fail("write: %s", strerror(errno));
	holes = lseek(10, 0, SEEK_HOLE) == DATA;	/* moves the offset: set after */
	if (lseek(10, 12345, SEEK_SET) != 12345)
		t_fail("lseek: %s", strerror(errno));
	t_ready(NULL);
	t_wait_usr1();
	t_check_common();
	n = readlink("/proc/self/fd/10", link, sizeof(link) - 1);
	link[n > 0 ? n : 0] = 0;
	if (!strstr(link, "(deleted)"))
		t_fail("fd 10 is \"%s\", not deleted", link);
	if (fstat(10, &st))
		t_fail("fstat: %s", strerror(errno));
	if (st.st_size != SIZE)
		t_fail("size %lld, want %lld", (long long)st.st_size, (long long)SIZE);
	if (holes && st.st_blocks * 512 != 2 * DATA)
		t_fail("%lld bytes of disk blocks, want %d", (long long)st.st_blocks * 512, 2 * DATA);
	if ((at = lseek(10, 0, SEEK_CUR)) != 12345)
		t_fail("offset %lld, want 12345", (long long)at);
	check_range(0, 1);	/* pread, SEEK_HOLE: the offset is checked before */
	check_range(DATA2, 2);
	if (holes && (lseek(10, 0, SEEK_HOLE) != DATA || lseek(10, DATA, SEEK_DATA) != DATA2))
		t_fail("the hole is no longer one");
	t_pass(holes ? "holes" : "no holes seen");
}
