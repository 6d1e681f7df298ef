/* t-filemap: file-backed mappings of a file in DIR.
 *   priv: MAP_PRIVATE of the file, some pages modified (COW copies must
 *         survive, untouched pages must still show the file content)
 *   shrd: MAP_SHARED of a second file, modified through the mapping
 *         (the file itself must reflect it and the mapping must stay shared)
 *   ro:   read-only MAP_PRIVATE mapping at a file offset
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <sys/stat.h>

#define SEED 0x5eed0004ULL
#define NPG 64
#define LEN (NPG * T_PAGE)

/* file content: byte i of file = pattern word derived from offset */
static void file_pattern(uint8_t *buf, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = t_mix(seed + i);
		memcpy(buf + i, &w, 8);
	}
}

static int make_file(const char *name, uint64_t seed, char *path)
{
	static uint8_t buf[LEN];
	sprintf(path, "%s/%s", t_dir, name);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(path);
		exit(2);
	}
	file_pattern(buf, LEN, seed);
	if (write(fd, buf, LEN) != (ssize_t)LEN)
		exit(2);
	return fd;
}

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);
	char p1[4096], p2[4096];
	static uint8_t exp[LEN], got[LEN];

	int fd1 = make_file("filemap-priv.dat", SEED, p1);
	int fd2 = make_file("filemap-shared.dat", SEED + 1, p2);

	uint8_t *priv = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd1, 0);
	uint8_t *shrd = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, 0);
	uint8_t *ro = mmap(NULL, LEN / 2, PROT_READ, MAP_PRIVATE, fd1, LEN / 2);
	if (priv == MAP_FAILED || shrd == MAP_FAILED || ro == MAP_FAILED)
		t_fail("mmap: %s", strerror(errno));
	close(fd1);     /* the mappings must not depend on open fds */
	close(fd2);

	/* COW-modify every 4th page of priv, every 3rd page of shrd */
	for (int i = 0; i < NPG; i += 4)
		t_fill(priv + i * T_PAGE, T_PAGE, SEED + 2);
	for (int i = 0; i < NPG; i += 3)
		t_fill(shrd + i * T_PAGE, T_PAGE, SEED + 3);
	msync(shrd, LEN, MS_SYNC);

	t_ready(NULL);
	t_wait_usr1();
	t_check_common();

	/* priv: modified pages have the new pattern, the others the file */
	file_pattern(exp, LEN, SEED);
	for (int i = 0; i < NPG; i++) {
		uint8_t *pg = priv + i * T_PAGE;
		if (i % 4 == 0 ? t_verify(pg, T_PAGE, SEED + 2) != NULL
			       : memcmp(pg, exp + i * T_PAGE, T_PAGE) != 0)
			t_fail("private mapping page %d wrong (%s)", i, i % 4 ? "file content" : "COW copy");
	}
	if (memcmp(ro, exp + LEN / 2, LEN / 2))
		t_fail("read-only mapping at offset differs from file");
	char perms[5];
	if (t_maps_perms(ro, perms) || strcmp(perms, "r--p"))
		t_fail("read-only mapping perms are not r--p");
	if (t_maps_perms(shrd, perms) || strcmp(perms, "rw-s"))
		t_fail("shared mapping perms are not rw-s");

	/* shrd: mapping content == file content == expected */
	file_pattern(exp, LEN, SEED + 1);
	for (int i = 0; i < NPG; i++)
		if (i % 3 == 0 ? t_verify(shrd + i * T_PAGE, T_PAGE, SEED + 3) != NULL
			       : memcmp(shrd + i * T_PAGE, exp + i * T_PAGE, T_PAGE) != 0)
			t_fail("shared mapping page %d wrong", i);
	int fd = open(p2, O_RDONLY);
	if (fd < 0 || pread(fd, got, LEN, 0) != (ssize_t)LEN)
		t_fail("cannot read %s", p2);
	if (memcmp(got, shrd, LEN))
		t_fail("shared mapping differs from file content");
	/* still shared? a write through the file must show in the mapping */
	uint64_t probe = 0x1234567890abcdefULL ^ t_pid;
	uint64_t old;
	memcpy(&old, shrd + 8, 8);
	int wfd = open(p2, O_RDWR);
	if (wfd < 0 || pwrite(wfd, &probe, 8, 8) != 8)
		t_fail("cannot write %s", p2);
	int shared_ok = !memcmp(shrd + 8, &probe, 8);
	if (pwrite(wfd, &old, 8, 8) != 8)        /* keep the file unchanged */
		t_fail("cannot restore %s", p2);
	if (!shared_ok)
		t_fail("MAP_SHARED file mapping is no longer shared with the file");
	t_pass(NULL);
}
