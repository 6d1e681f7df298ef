/* t-novdso: a process that unmapped its vDSO and vvar pages (as one booted
 * with vdso=0 has none). It then makes raw system calls only for the time.
 * After restore: still no [vdso] nor [vvar*] mapping, 16 pages of data keep
 * their bytes, clock_gettime works as a system call. READY <pid>
 * t-novdso DIR moved: [vdso] moved away from its [vvar] pages (mremap), which
 * a dump must refuse; on SIGUSR1 it checks its data only. */
#include "tlib.h"

#define SEED 0x5eed0026ULL
#define LEN (16 * T_PAGE)

/* munmap every [vdso] and [vvar...] mapping; returns how many, or -1 */
static int unmap_vdso(int unmap)
{
	char line[512];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long ranges[8][2];

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f) && n < 8) {
		if (!strstr(line, "[vdso]") && !strstr(line, "[vvar"))
			continue;
		if (sscanf(line, "%lx-%lx", &ranges[n][0], &ranges[n][1]) == 2)
			n++;
	}
	fclose(f);
	for (int i = 0; unmap && i < n; i++)
		if (munmap((void *)ranges[i][0], ranges[i][1] - ranges[i][0]))
			return -1;
	return n;
}

/* mremap [vdso] 1 MiB away from where it was, into a hole of our own */
static void move_vdso(void)
{
	char line[512];
	unsigned long s = 0, e = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[vdso]"))
			sscanf(line, "%lx-%lx", &s, &e);
	if (f)
		fclose(f);
	if (!s)
		t_fail("no [vdso] to move");
	char *hole = mmap(NULL, (e - s) + (2 << 20), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (hole == MAP_FAILED || mremap((void *)s, e - s, e - s, MREMAP_MAYMOVE | MREMAP_FIXED,
					 hole + (1 << 20)) == MAP_FAILED)
		t_fail("cannot move the vDSO: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	struct timespec ts;

	t_init(argc, argv, SA_RESTART);
	uint8_t *data = t_mmap(LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE);

	t_fill(data, LEN, SEED);
	if (argc > 2 && !strcmp(argv[2], "moved")) {
		move_vdso();
		t_ready("%p", (void *)data);
		t_wait_usr1();
		if (t_verify(data, LEN, SEED))
			t_fail("data differs");
		t_pass("vDSO moved, data intact");
	}
	if (unmap_vdso(1) <= 0)
		t_fail("no vDSO to unmap, or munmap failed: %s", strerror(errno));
	if (unmap_vdso(0) != 0)
		t_fail("the vDSO is still mapped");

	t_ready("%p", (void *)data);
	t_wait_usr1();
	t_check_common();

	if (unmap_vdso(0) != 0)
		t_fail("a [vdso] or [vvar] mapping is back after the restore");
	if (t_verify(data, LEN, SEED))
		t_fail("data differs");
	if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) || ts.tv_sec <= 0)
		t_fail("clock_gettime as a system call failed");
	t_pass("no vDSO, data intact");
}
