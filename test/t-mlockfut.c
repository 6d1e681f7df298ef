/* t-mlockfut: mlockall() flags, which /proc shows only in the mappings made after.
 *   argv[2] "future":  mlockall(MCL_FUTURE)
 *           "onfault": mlockall(MCL_FUTURE | MCL_ONFAULT)
 *           "current": mlockall(MCL_CURRENT) only (no default flags)
 *           "nonroot": as "future", run as uid/gid 65534 with RLIMIT_MEMLOCK 6 MiB
 *           "nonroot-small": the same with 256 KiB, too little for memdump's
 *                  parasite area (its dump is refused)
 *   pre:    2 rw pages mapped before mlockall, page 0 written
 *   during: 2 rw pages mapped after it, page 0 written (locked but for "current")
 * After restore a new mapping shows lo (and lf for onfault) exactly when
 * MCL_FUTURE was in force, pre is locked only for "current", during is locked
 * as at the dump, and their bytes are intact. "nonroot*": still uid 65534, the
 * limit the same, and a mapping larger than the limit refused (EAGAIN).
 * READY <pid>. */
#include "tlib.h"

#include <grp.h>
#include <sys/resource.h>

#define SEED 0x5eed0105ULL
static unsigned long limit = 6UL << 20;	/* under the usual hard limit, 8 MiB */

static int has_vmflag(const void *p, const char *flag)
{
	char flags[256], want[8];
	size_t n;

	if (t_smaps_field(p, "VmFlags:", flags, sizeof(flags)))
		t_fail("no smaps entry at %p", p);
	n = strlen(flags);
	if (n + 1 < sizeof(flags) && (n == 0 || flags[n - 1] != ' '))
		strcat(flags, " ");
	snprintf(want, sizeof(want), " %s ", flag);
	return strstr(flags, want) != NULL;
}

/* p shows lo, and lf, as wanted */
static void want_lock(const void *p, int lo, int lf, const char *what)
{
	if (has_vmflag(p, "lo") != lo)
		t_fail("%s at %p: VmFlags %s lo", what, p, lo ? "without" : "with");
	if (has_vmflag(p, "lf") != lf)
		t_fail("%s at %p: VmFlags %s lf", what, p, lf ? "without" : "with");
}

static uint8_t *map_written(void)
{
	uint8_t *p = t_mmap(2 * T_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);

	t_fill(p, T_PAGE, SEED);
	return p;
}

static void drop_to_nobody(void)
{
	struct rlimit rl = { limit, limit };

	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		t_fail("setrlimit: %s", strerror(errno));
	if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		t_fail("cannot become uid 65534: %s", strerror(errno));
}

static void check_nonroot(void)
{
	struct rlimit rl;
	void *big;

	if (getuid() != 65534 || geteuid() != 65534 || getgid() != 65534)
		t_fail("ids changed: uid %d euid %d gid %d", (int)getuid(), (int)geteuid(),
		       (int)getgid());
	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur != limit || rl.rlim_max != limit)
		t_fail("RLIMIT_MEMLOCK changed: %llu %llu", (unsigned long long)rl.rlim_cur,
		       (unsigned long long)rl.rlim_max);
	big = mmap(NULL, 2 * limit, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (big != MAP_FAILED || errno != EAGAIN)
		t_fail("a mapping beyond RLIMIT_MEMLOCK was %s", big == MAP_FAILED ?
		       strerror(errno) : "made: the new mappings are not locked");
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "future";
	int future = strcmp(mode, "current") != 0, onfault = !strcmp(mode, "onfault");
	int flags = !future ? MCL_CURRENT : MCL_FUTURE | (onfault ? MCL_ONFAULT : 0);
	uint8_t *pre, *during, *fresh;

	t_init(argc, argv, SA_RESTART);
	if (strcmp(mode, "future") && strcmp(mode, "onfault") && strcmp(mode, "current") &&
	    strcmp(mode, "nonroot") && strcmp(mode, "nonroot-small"))
		t_fail("unknown mode %s", mode);
	if (!strcmp(mode, "nonroot-small"))
		limit = 256UL << 10;
	if (!strncmp(mode, "nonroot", 7))
		drop_to_nobody();
	pre = map_written();
	if (mlockall(flags))
		t_fail("mlockall(%#x): %s", flags, strerror(errno));
	during = map_written();
	want_lock(pre, !future, 0, "pre");
	want_lock(during, future, onfault, "during");

	t_ready("%p %p", (void *)pre, (void *)during);
	t_wait_usr1();
	t_check_common();

	want_lock(pre, !future, 0, "pre");
	want_lock(during, future, onfault, "during");
	if (t_verify(pre, T_PAGE, SEED) || t_verify(during, T_PAGE, SEED))
		t_fail("the bytes of pre or during differ");
	fresh = t_mmap(2 * T_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
	want_lock(fresh, future, onfault, "a mapping made after the restore");
	if (!strncmp(mode, "nonroot", 7))
		check_nonroot();
	t_pass(future ? "new mappings locked, as before the dump" : "new mappings not locked");
}
