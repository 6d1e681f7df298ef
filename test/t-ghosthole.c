/* t-ghosthole: sparse files that were deleted while open (ghost files with holes).
 * Each file is described by a map of 4 KiB blocks, 'D' data and '.' a hole, and is opened
 * O_RDWR on fd 10, 11, ... then deleted:
 *   mid "D.D", head ".D.D", tail "D.D.", empty "...." (a size, no data), dense "DD" (no hole),
 *   many "D." x 64 (holes punched with fallocate).
 * After SIGUSR1: each fd still shows the file as deleted, its size and offset, the bytes of
 * every data block, and that every hole is still a hole (SEEK_DATA/SEEK_HOLE) and takes no
 * disk blocks.
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <sys/stat.h>

#define BLK 4096
#define FD0 10

struct sparse {
	const char *name;
	char map[160];
};

static struct sparse files[] = {
	{ "ghosthole-mid", "D.D" }, { "ghosthole-head", ".D.D" }, { "ghosthole-tail", "D.D." },
	{ "ghosthole-empty", "...." }, { "ghosthole-dense", "DD" }, { "ghosthole-many", "" },
};
#define NR (int)(sizeof(files) / sizeof(files[0]))

/* The bytes of block b of file i: by file and offset only */
static void block(char *buf, int i, size_t b)
{
	uint64_t *w = (uint64_t *)buf;

	for (size_t k = 0; k < BLK / 8; k++)
		w[k] = t_mix(((uint64_t)i << 40) ^ (b << 20) ^ k);
}

static void make(int i)
{
	char path[512], buf[BLK];
	const char *m = files[i].map;
	size_t n = strlen(m);
	int fd;

	snprintf(path, sizeof(path), "%s/%s", t_dir, files[i].name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0640);
	if (fd < 0 || dup2(fd, FD0 + i) != FD0 + i)
		t_fail("open %s: %s", path, strerror(errno));
	close(fd);
	fd = FD0 + i;
	for (size_t b = 0; b < n; b++) {
		block(buf, i, b);
		if (m[b] == 'D' && pwrite(fd, buf, BLK, b * BLK) != BLK)
			t_fail("pwrite %s: %s", path, strerror(errno));
	}
	if (ftruncate(fd, n * BLK))
		t_fail("ftruncate %s: %s", path, strerror(errno));
	for (size_t b = 0; b < n; b++)
		if (m[b] == '.' && fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					     b * BLK, BLK))
			t_fail("punch a hole in %s: %s", path, strerror(errno));
	if (lseek(fd, 0, SEEK_HOLE) != (m[0] == '.' ? 0 : (off_t)(strspn(m, "D") * BLK)))
		t_fail("%s: the file system does not report holes", path);
	if (lseek(fd, i * 100 + 7, SEEK_SET) < 0)
		t_fail("lseek %s: %s", path, strerror(errno));
	if (unlink(path))
		t_fail("unlink %s: %s", path, strerror(errno));
}

static void expect_deleted(int i)
{
	char proc[64], link[600], want[600];
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", FD0 + i);
	n = readlink(proc, link, sizeof(link) - 1);
	link[n < 0 ? 0 : n] = 0;
	snprintf(want, sizeof(want), "%s/%s (deleted)", t_dir, files[i].name);
	if (strcmp(link, want))
		t_fail("fd %d is '%s', want '%s'", FD0 + i, link, want);
}

/* Where SEEK_DATA and SEEK_HOLE from block b must land, by the map */
static off_t next(const char *m, size_t b, char kind)
{
	size_t n = strlen(m);

	while (b < n && m[b] != kind)
		b++;
	return b * BLK;
}

static void check(int i)
{
	const char *m = files[i].map;
	size_t n = strlen(m), holes = 0;
	char buf[BLK], want[BLK];
	int fd = FD0 + i;
	struct stat st;

	expect_deleted(i);
	if (fstat(fd, &st) || st.st_size != (off_t)(n * BLK))
		t_fail("%s: size %lld, want %zu", files[i].name, (long long)st.st_size, n * BLK);
	if (lseek(fd, 0, SEEK_CUR) != i * 100 + 7)
		t_fail("%s: offset %lld, want %d", files[i].name,
		       (long long)lseek(fd, 0, SEEK_CUR), i * 100 + 7);
	for (size_t b = 0; b < n; b++) {
		off_t data = lseek(fd, b * BLK, SEEK_DATA), hole = lseek(fd, b * BLK, SEEK_HOLE);
		off_t want_data = next(m, b, 'D');

		if (want_data == (off_t)(n * BLK) ? !(data < 0 && errno == ENXIO) : data != want_data)
			t_fail("%s: SEEK_DATA from block %zu gives %lld, want %lld (map %s)",
			       files[i].name, b, (long long)data, (long long)want_data, m);
		if (hole != next(m, b, '.'))
			t_fail("%s: SEEK_HOLE from block %zu gives %lld, want %lld (map %s)",
			       files[i].name, b, (long long)hole, (long long)next(m, b, '.'), m);
		if (pread(fd, buf, BLK, b * BLK) != BLK)
			t_fail("%s: pread block %zu: %s", files[i].name, b, strerror(errno));
		if (m[b] == 'D')
			block(want, i, b);
		else
			memset(want, 0, BLK), holes++;
		if (memcmp(buf, want, BLK))
			t_fail("%s: block %zu (%c) differs", files[i].name, b, m[b]);
	}
	if ((size_t)st.st_blocks * 512 > (n - holes) * BLK)
		t_fail("%s: %lld bytes on disk, want at most the %zu of its data", files[i].name,
		       (long long)st.st_blocks * 512, (n - holes) * BLK);
}

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);
	for (int b = 0; b < 64; b++)
		strcat(files[NR - 1].map, "D.");
	for (int i = 0; i < NR; i++)
		make(i);
	t_ready(NULL);
	t_wait_usr1();
	t_check_common();
	for (int i = 0; i < NR; i++)
		check(i);
	t_pass(NULL);
}
