/* t-ghost: files that were deleted while open or mapped ("ghost files").
 *   fd 10: DIR/ghost-rw (10000 pattern bytes), O_RDWR at offset 1234, deleted
 *   fd 11: the same file again, O_RDONLY at offset 77 (another description)
 *   DIR/ghost-shared: 3 pages mapped MAP_SHARED and written through memory, deleted
 *   DIR/ghost-priv: 2 pages mapped MAP_PRIVATE, its first page written (COW), deleted
 *   /dev/shm/t-ghost-PID: POSIX shared memory (shm_open), 8 KiB mapped, shm_unlink'ed
 *   a POSIX semaphore (sem_open, value 3), sem_unlink'ed: /dev/shm/sem.t-ghost-PID
 *   fd 12: DIR/ghost-fifo, a FIFO opened O_RDWR with unread data, deleted
 * After SIGUSR1: contents, offsets, sharing between fds 10 and 11, the
 * mappings' bytes, the semaphore's value, the FIFO's data, and that each
 * still shows as deleted (argv[2] "renamed": under another name beside its own).
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <semaphore.h>
#include <sys/stat.h>

#define RW_SIZE 10000
#define SEED 0x6057

static int renamed;	/* argv[2] "renamed": the names were taken again before the restore */
static char path_rw[512], path_sh[512], path_pr[512], path_fifo[512], shm_name[64], sem_name[64];

/* Content by offset only (t_fill depends on the buffer's address). */
static void fill(void *p, size_t len, uint64_t seed)
{
	uint64_t *w = p;

	for (size_t i = 0; i < len / 8; i++)
		w[i] = t_mix(seed ^ i);
}

static void at(int fd, int want)
{
	if (fd < 0 || dup2(fd, want) != want)
		t_fail("dup2 %d: %s", want, strerror(errno));
	close(fd);
}

static void write_file(const char *path, size_t len, uint64_t seed)
{
	char *buf = malloc(len);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0640);

	fill(buf, len, seed);
	if (fd < 0 || write(fd, buf, len) != (ssize_t)len)
		t_fail("write %s: %s", path, strerror(errno));
	close(fd);
	free(buf);
}

static void *map_file(const char *path, size_t len, int flags, int oflags)
{
	int fd = open(path, oflags);
	void *p = fd < 0 ? MAP_FAILED : mmap(NULL, len, PROT_READ | PROT_WRITE, flags, fd, 0);

	if (p == MAP_FAILED)
		t_fail("mmap %s: %s", path, strerror(errno));
	close(fd);
	return p;
}

static void expect_link(int fd, const char *path)
{
	char proc[64], link[600], want[600];
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, link, sizeof(link) - 1);
	link[n < 0 ? 0 : n] = 0;
	snprintf(want, sizeof(want), "%s (deleted)", path);
	if (renamed && !strncmp(link, path, strlen(path)) && strstr(link, ".memdump-ghost.") &&
	    strlen(link) > 10 && !strcmp(link + strlen(link) - 10, " (deleted)"))
		return;
	if (strcmp(link, want))
		t_fail("fd %d is '%s', want '%s'", fd, link, want);
}

static void expect_mapped_deleted(const void *addr, const char *path)
{
	char line[700], want[600];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	snprintf(want, sizeof(want), "%s (deleted)\n", path);
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long s;

		if (sscanf(line, "%lx-", &s) == 1 && s == (uintptr_t)addr) {
			size_t n = strlen(line), k = strlen(want);

			if (n < k || strcmp(line + n - k, want))
				t_fail("mapping %p is '%.*s', want '%s'", addr, (int)strcspn(line, "\n"),
				       line, path);
			found = 1;
		}
	}
	fclose(f);
	if (!found)
		t_fail("no mapping at %p", addr);
}

static void check_rw(void)
{
	char buf[RW_SIZE], want[RW_SIZE];
	struct stat st;

	fill(want, RW_SIZE, SEED);
	if (lseek(10, 0, SEEK_CUR) != 1234 || lseek(11, 0, SEEK_CUR) != 77)
		t_fail("offsets %ld and %ld, want 1234 and 77", (long)lseek(10, 0, SEEK_CUR),
		       (long)lseek(11, 0, SEEK_CUR));
	if (fstat(10, &st) || st.st_size != RW_SIZE || st.st_nlink != 0 || (st.st_mode & 0777) != 0640)
		t_fail("fd 10: size %ld, nlink %ld, mode %o", (long)st.st_size, (long)st.st_nlink,
		       st.st_mode & 0777);
	if ((fcntl(10, F_GETFL) & O_ACCMODE) != O_RDWR || (fcntl(11, F_GETFL) & O_ACCMODE) != O_RDONLY)
		t_fail("access modes of fds 10 and 11 changed");
	if (pread(11, buf, RW_SIZE, 0) != RW_SIZE || memcmp(buf, want, RW_SIZE))
		t_fail("the deleted file's content differs");
	if (pwrite(10, "SHARED", 6, 100) != 6 || pread(11, buf, 6, 100) != 6 || memcmp(buf, "SHARED", 6))
		t_fail("fds 10 and 11 are no longer the same file");
	expect_link(10, path_rw);
	expect_link(11, path_rw);
}

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);
	renamed = argc > 2 && !strcmp(argv[2], "renamed");
	snprintf(path_rw, sizeof(path_rw), "%s/ghost-rw", t_dir);
	snprintf(path_sh, sizeof(path_sh), "%s/ghost-shared", t_dir);
	snprintf(path_pr, sizeof(path_pr), "%s/ghost-priv", t_dir);
	snprintf(path_fifo, sizeof(path_fifo), "%s/ghost-fifo", t_dir);
	snprintf(shm_name, sizeof(shm_name), "/t-ghost-%d", (int)t_pid);
	snprintf(sem_name, sizeof(sem_name), "/t-ghost-%d", (int)t_pid);

	write_file(path_rw, RW_SIZE, SEED);
	at(open(path_rw, O_RDWR), 10);
	at(open(path_rw, O_RDONLY), 11);
	lseek(10, 1234, SEEK_SET);
	lseek(11, 77, SEEK_SET);

	write_file(path_sh, 3 * T_PAGE, SEED + 1);
	uint64_t *sh = map_file(path_sh, 3 * T_PAGE, MAP_SHARED, O_RDWR);
	sh[0] = 0x5eed0001;
	sh[3 * T_PAGE / 8 - 1] = 0x5eed0002;

	write_file(path_pr, 2 * T_PAGE, SEED + 2);
	uint64_t *pr = map_file(path_pr, 2 * T_PAGE, MAP_PRIVATE, O_RDONLY);
	pr[1] = 0xc0c0;

	int shm = shm_open(shm_name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (shm < 0 || ftruncate(shm, 8192))
		t_fail("shm_open: %s", strerror(errno));
	uint64_t *sm = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, shm, 0);
	if (sm == MAP_FAILED)
		t_fail("mmap shm: %s", strerror(errno));
	close(shm);
	sm[1000] = 0x5a5a;

	sem_t *sem = sem_open(sem_name, O_CREAT | O_EXCL, 0600, 3);
	if (sem == SEM_FAILED)
		t_fail("sem_open: %s", strerror(errno));

	if (mkfifo(path_fifo, 0600))
		t_fail("mkfifo: %s", strerror(errno));
	at(open(path_fifo, O_RDWR), 12);
	if (write(12, "fifo-data", 9) != 9)
		t_fail("write fifo");

	if (unlink(path_rw) || unlink(path_sh) || unlink(path_pr) || unlink(path_fifo) ||
	    shm_unlink(shm_name) || sem_unlink(sem_name))
		t_fail("unlink: %s", strerror(errno));

	t_ready("");
	t_wait_usr1();
	t_check_common();

	check_rw();
	{
		uint64_t want[3 * T_PAGE / 8];

		fill(want, sizeof(want), SEED + 1);
		if (sh[0] != 0x5eed0001 || sh[3 * T_PAGE / 8 - 1] != 0x5eed0002 ||
		    memcmp(sh + 1, want + 1, sizeof(want) - 16))
			t_fail("the shared mapping of a deleted file lost what was written");
	}
	expect_mapped_deleted(sh, path_sh);
	if (pr[1] != 0xc0c0)
		t_fail("the private mapping lost its written page");
	{
		uint64_t want[2 * T_PAGE / 8];

		fill(want, sizeof(want), SEED + 2);
		if (pr[0] != want[0] || memcmp(pr + 2, want + 2, sizeof(want) - 16))
			t_fail("the private mapping of a deleted file differs from the file");
	}
	expect_mapped_deleted(pr, path_pr);
	if (sm[1000] != 0x5a5a)
		t_fail("the unlinked POSIX shared memory lost its content");
	char shmpath[128];
	snprintf(shmpath, sizeof(shmpath), "/dev/shm%s", shm_name);
	expect_mapped_deleted(sm, shmpath);
	int v = -1;
	if (sem_getvalue(sem, &v) || v != 3)
		t_fail("the unlinked semaphore's value is %d, want 3", v);
	if (sem_trywait(sem) || sem_post(sem) || sem_getvalue(sem, &v) || v != 3)
		t_fail("the unlinked semaphore does not work");
	char buf[16] = "";
	fcntl(12, F_SETFL, O_NONBLOCK);
	if (read(12, buf, sizeof(buf)) != 9 || memcmp(buf, "fifo-data", 9))
		t_fail("the deleted FIFO lost its data ('%s')", buf);
	expect_link(12, path_fifo);
	struct stat st;
	if (fstat(12, &st) || !S_ISFIFO(st.st_mode))
		t_fail("fd 12 is no longer a FIFO");
	t_pass(NULL);
}
