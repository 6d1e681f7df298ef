/* t-shmpriv: private mappings of shared memory objects (zdtm shmemfd-priv).
 *   anon:  MAP_SHARED|MAP_ANONYMOUS, 5 pages, pages 0-2 written; an fd on it
 *          opened through /proc/self/map_files; a MAP_PRIVATE mapping of that
 *          fd at offset 1 page (5 pages: the last one is past the object's
 *          end), one page of it written (a COW copy); a second MAP_SHARED
 *          mapping of the fd at offset 2 pages
 *   memfd: 4 pages, a MAP_PRIVATE mapping at offset 1 page, one page COW'd
 *   lone:  MAP_SHARED|MAP_ANONYMOUS of 3 pages, only page 0 written, mapped
 *          privately through map_files, then its fd closed and the shared
 *          mapping unmapped: the private mapping is all that holds the object
 * After SIGUSR1: untouched private pages show the object (also what is
 * written to it after the restore), COW copies are kept, the fd is the
 * object itself (its size, its link, writes through it seen by the
 * mappings), pages past the object's end still fault.
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <setjmp.h>
#include <sys/stat.h>

static sigjmp_buf t_jb;

static void on_bus(int sig)
{
	(void)sig;
	siglongjmp(t_jb, 1);
}

/* Does reading p fault with SIGBUS? */
static int faults(volatile int *p)
{
	struct sigaction sa = { .sa_handler = on_bus }, old;
	int bus = 0;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old);
	if (sigsetjmp(t_jb, 1))
		bus = 1;
	else
		(void)*p;
	sigaction(SIGBUS, &old, NULL);
	return bus;
}

static int *at(void *base, int page)
{
	return (int *)((char *)base + page * T_PAGE);
}

static int open_map_file(void *a, size_t len)
{
	char path[128];

	snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx", (unsigned long)a,
		 (unsigned long)a + len);
	return open(path, O_RDWR);
}

static void check_anon(int *shr, int *priv, int *shr2, int fd)
{
	char link[64], tgt[64] = "";
	struct stat st;

	if (*at(priv, 1) != 22)
		t_fail("anon: the COW page of the private mapping is lost (%d)", *at(priv, 1));
	if (*at(priv, 0) != 11)
		t_fail("anon: an untouched private page does not show the object (%d)", *at(priv, 0));
	if (*at(shr2, 0) != 111)
		t_fail("anon: the second shared mapping reads %d, not 111", *at(shr2, 0));
	*at(shr2, 0) = 333;
	if (*at(shr, 2) != 333)
		t_fail("anon: the second shared mapping is no longer shared");
	*at(shr, 3) = 444;
	if (*at(priv, 2) != 444)
		t_fail("anon: the private mapping does not follow the object (%d)", *at(priv, 2));
	if (!faults(at(priv, 4)))
		t_fail("anon: the private page past the object's end does not fault");
	if (fstat(fd, &st) || st.st_size != (off_t)(5 * T_PAGE))
		t_fail("anon: the fd's size is %lld", (long long)st.st_size);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if (readlink(link, tgt, sizeof(tgt) - 1) < 0 || strcmp(tgt, "/dev/zero (deleted)"))
		t_fail("anon: the fd links to '%s'", tgt);
	if (pwrite(fd, &(int){ 555 }, sizeof(int), 4 * T_PAGE) != sizeof(int) || *at(shr, 4) != 555)
		t_fail("anon: the fd is not the object the mappings show (a copy?)");
}

static void check_memfd(int mfd, int *mpriv)
{
	if (*at(mpriv, 1) != 7)
		t_fail("memfd: the COW page of the private mapping is lost (%d)", *at(mpriv, 1));
	if (*at(mpriv, 0) != 2 || *at(mpriv, 2) != 0)
		t_fail("memfd: untouched private pages read %d, %d", *at(mpriv, 0), *at(mpriv, 2));
	if (pwrite(mfd, &(int){ 99 }, sizeof(int), 3 * T_PAGE) != sizeof(int) || *at(mpriv, 2) != 99)
		t_fail("memfd: the private mapping does not follow the memfd");
}

static void check_lone(int *lpriv)
{
	if (*at(lpriv, 0) != 5 || *at(lpriv, 1) != 0 || *at(lpriv, 2) != 0)
		t_fail("lone: the private mapping reads %d %d %d", *at(lpriv, 0), *at(lpriv, 1),
		       *at(lpriv, 2));
}

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);

	int *shr = t_mmap(5 * T_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED);
	*at(shr, 0) = 1;
	*at(shr, 1) = 11;
	*at(shr, 2) = 111;
	int fd = open_map_file(shr, 5 * T_PAGE);
	if (fd < 0)
		t_fail("map_files: %s", strerror(errno));
	int *priv = mmap(NULL, 5 * T_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, T_PAGE);
	int *shr2 = mmap(NULL, 5 * T_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 2 * T_PAGE);
	if (priv == MAP_FAILED || shr2 == MAP_FAILED)
		t_fail("mmap: %s", strerror(errno));
	*at(priv, 1) = 22;

	int mfd = memfd_create("t-shmpriv", 0);
	if (mfd < 0 || ftruncate(mfd, 4 * T_PAGE))
		t_fail("memfd: %s", strerror(errno));
	for (int i = 0; i < 3; i++)
		pwrite(mfd, &(int){ i + 1 }, sizeof(int), i * T_PAGE);
	int *mpriv = mmap(NULL, 3 * T_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, mfd, T_PAGE);
	if (mpriv == MAP_FAILED)
		t_fail("mmap memfd: %s", strerror(errno));
	*at(mpriv, 1) = 7;	/* offset 2: the memfd keeps 3 */

	int *lone = t_mmap(3 * T_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED);
	*at(lone, 0) = 5;
	int lfd = open_map_file(lone, 3 * T_PAGE);
	int *lpriv = lfd < 0 ? MAP_FAILED : mmap(NULL, 3 * T_PAGE, PROT_READ, MAP_PRIVATE, lfd, 0);
	if (lpriv == MAP_FAILED)
		t_fail("lone: %s", strerror(errno));
	close(lfd);
	munmap(lone, 3 * T_PAGE);

	t_ready(NULL);
	t_wait_usr1();
	t_check_common();
	check_anon(shr, priv, shr2, fd);
	check_memfd(mfd, mpriv);
	check_lone(lpriv);
	t_pass(NULL);
}
