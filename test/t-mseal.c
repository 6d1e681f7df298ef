/* t-mseal: mseal()ed mappings (VmFlags sl) and mlock2(MLOCK_ONFAULT) (lf).
 *   whole:  4 rw pages with a pattern, sealed
 *   ro:     2 read-only pages with a pattern, sealed
 *   part:   8 rw pages, pages 3-4 sealed (the VMA split in three)
 *   fshr:   2 pages of a file in DIR, MAP_SHARED rw, written through it, sealed
 *   fpriv:  the same file MAP_PRIVATE read-only, sealed
 *   onf:    4 rw pages mlock2(MLOCK_ONFAULT)ed, only page 0 written
 *   lck:    2 rw pages mlock()ed (lo without lf)
 *   argv[2] "vdso": the [vdso] and [vvar*] mappings sealed too
 * After restore every sealed range shows sl and refuses munmap, mprotect
 * and mremap (EPERM), the pages keep their bytes, and the unsealed parts of
 * part are not sealed (they can still be reprotected); fshr is shared, its
 * bytes the file's (fpriv's); onf shows lo lf with page 0's bytes and zeros, lck lo without lf;
 * a sealed vDSO is sealed again where it was, and clock_gettime works.
 * READY <pid>; exits 2 when the kernel has no mseal(). */
#include "tlib.h"

#include <fcntl.h>

#define SEED 0x5eed0024ULL
#ifndef __NR_mseal
#define __NR_mseal 462
#endif

static int sealed_flag(const void *p)
{
	char flags[256];

	if (t_smaps_field(p, "VmFlags:", flags, sizeof(flags)))
		t_fail("no smaps entry at %p", p);
	return strstr(flags, " sl") != NULL;
}

static int has_vmflag(const void *p, const char *flag)
{
	char flags[256], want[8];

	if (t_smaps_field(p, "VmFlags:", flags, sizeof(flags)))
		t_fail("no smaps entry at %p", p);
	snprintf(want, sizeof(want), " %s", flag);
	return strstr(flags, want) != NULL;
}

static void want_sealed(uint8_t *p, size_t len, const char *what)
{
	if (!sealed_flag(p))
		t_fail("%s at %p: VmFlags without sl", what, (void *)p);
	if (munmap(p, len) == 0 || errno != EPERM)
		t_fail("%s: munmap of a sealed range did not fail with EPERM", what);
	if (mprotect(p, len, PROT_READ | PROT_EXEC) == 0 || errno != EPERM)
		t_fail("%s: mprotect of a sealed range did not fail with EPERM", what);
	if (mremap(p, len, len * 2, MREMAP_MAYMOVE) != MAP_FAILED || errno != EPERM)
		t_fail("%s: mremap of a sealed range did not fail with EPERM", what);
	if (t_verify(p, len, SEED))
		t_fail("%s: its bytes differ", what);
}

static void seal(void *p, size_t len)
{
	if (syscall(__NR_mseal, p, len, 0)) {
		if (errno == ENOSYS) {
			printf("SKIP no mseal(): %s\n", strerror(errno));
			exit(2);
		}
		t_fail("mseal: %s", strerror(errno));
	}
}

static uint8_t *fshr, *fpriv, *onf, *lck;
static int vdso_sealed;

/* fshr and fpriv: one file, MAP_SHARED written through and MAP_PRIVATE read-only */
static void map_files(void)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/mseal-file.dat", t_dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, 2 * T_PAGE))
		t_fail("%s: %s", path, strerror(errno));
	fshr = mmap(NULL, 2 * T_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (fshr == MAP_FAILED)
		t_fail("mmap %s: %s", path, strerror(errno));
	t_fill(fshr, 2 * T_PAGE, SEED);
	fpriv = mmap(NULL, 2 * T_PAGE, PROT_READ, MAP_PRIVATE, fd, 0);
	if (fpriv == MAP_FAILED)
		t_fail("mmap %s: %s", path, strerror(errno));
	close(fd);
	seal(fshr, 2 * T_PAGE);
	seal(fpriv, 2 * T_PAGE);
}

static void check_files(void)
{
	if (!sealed_flag(fshr) || !sealed_flag(fpriv))
		t_fail("file mappings: VmFlags without sl");
	if (munmap(fshr, 2 * T_PAGE) == 0 || errno != EPERM ||
	    mprotect(fpriv, 2 * T_PAGE, PROT_READ | PROT_WRITE) == 0 || errno != EPERM)
		t_fail("file mappings: munmap/mprotect did not fail with EPERM");
	if (t_verify(fshr, 2 * T_PAGE, SEED))
		t_fail("fshr: its bytes differ");
	if (memcmp(fshr, fpriv, 2 * T_PAGE))
		t_fail("fpriv: not the file's bytes fshr shows");
	if (!has_vmflag(fshr, "sh"))	/* not written now: a second restore checks the file's mtime */
		t_fail("fshr: not a shared mapping");
}

/* onf: mlock2(MLOCK_ONFAULT), page 0 written; lck: mlock() */
static void map_locks(void)
{
	onf = t_mmap(4 * T_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	lck = t_mmap(2 * T_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	if (syscall(SYS_mlock2, onf, 4 * T_PAGE, MLOCK_ONFAULT) || mlock(lck, 2 * T_PAGE))
		t_fail("mlock: %s", strerror(errno));
	t_fill(onf, T_PAGE, SEED);
	t_fill(lck, 2 * T_PAGE, SEED);
}

static void check_locks(void)
{
	if (!has_vmflag(onf, "lo") || !has_vmflag(onf, "lf"))
		t_fail("onf: VmFlags without lo lf");
	if (!has_vmflag(lck, "lo") || has_vmflag(lck, "lf"))
		t_fail("lck: VmFlags not lo without lf");
	if (t_verify(onf, T_PAGE, SEED) || t_verify(lck, 2 * T_PAGE, SEED))
		t_fail("locked pages: their bytes differ");
	for (size_t i = T_PAGE; i < 4 * T_PAGE; i++)
		if (onf[i])
			t_fail("onf: byte %zu is %#x, not 0", i, onf[i]);
}

/* Each [vdso]/[vvar*] mapping of /proc/self/maps sealed (seal) or checked sealed. */
static int each_vdso_part(int seal_it)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		t_fail("/proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if ((!strstr(line, "[vdso]") && !strstr(line, "[vvar")) ||
		    sscanf(line, "%lx-%lx", &s, &e) != 2)
			continue;
		n++;
		if (seal_it)
			seal((void *)s, e - s);
		else if (!sealed_flag((void *)s))
			t_fail("vDSO part %s not sealed", strtok(line, "\n"));
		else if (mremap((void *)s, e - s, 2 * (e - s), MREMAP_MAYMOVE) != MAP_FAILED ||
			 errno != EPERM)
			t_fail("vDSO part %s: mremap did not fail with EPERM", strtok(line, "\n"));
	}
	fclose(f);
	return n;
}

static void check_vdso(void)
{
	struct timespec ts;

	if (!each_vdso_part(0))
		t_fail("no vDSO after restore");
	if (clock_gettime(CLOCK_MONOTONIC, &ts) || !ts.tv_sec)
		t_fail("clock_gettime through the vDSO: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);
	vdso_sealed = argc > 2 && !strcmp(argv[2], "vdso");

	uint8_t *whole = t_mmap(4 * T_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	uint8_t *ro = t_mmap(2 * T_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	uint8_t *part = t_mmap(8 * T_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE);

	t_fill(whole, 4 * T_PAGE, SEED);
	t_fill(ro, 2 * T_PAGE, SEED);
	t_fill(part, 8 * T_PAGE, SEED);
	if (mprotect(ro, 2 * T_PAGE, PROT_READ))
		t_fail("mprotect: %s", strerror(errno));
	seal(whole, 4 * T_PAGE);
	seal(ro, 2 * T_PAGE);
	seal(part + 3 * T_PAGE, 2 * T_PAGE);
	map_files();
	map_locks();
	if (vdso_sealed && !each_vdso_part(1))
		t_fail("no vDSO to seal");

	t_ready("%p %p %p", (void *)whole, (void *)ro, (void *)part);
	t_wait_usr1();
	t_check_common();

	want_sealed(whole, 4 * T_PAGE, "whole");
	want_sealed(ro, 2 * T_PAGE, "ro");
	want_sealed(part + 3 * T_PAGE, 2 * T_PAGE, "part[3-4]");
	if (sealed_flag(part) || sealed_flag(part + 5 * T_PAGE))
		t_fail("part: its unsealed pages show sl");
	if (t_verify(part, 3 * T_PAGE, SEED) || t_verify(part + 5 * T_PAGE, 3 * T_PAGE, SEED))
		t_fail("part: its unsealed bytes differ");
	if (mprotect(part, T_PAGE, PROT_READ) || mprotect(part + 7 * T_PAGE, T_PAGE, PROT_READ))
		t_fail("part: its unsealed pages cannot be reprotected: %s", strerror(errno));
	check_files();
	check_locks();
	if (vdso_sealed)
		check_vdso();
	t_pass("sealed ranges sealed, bytes intact, MLOCK_ONFAULT kept");
}
