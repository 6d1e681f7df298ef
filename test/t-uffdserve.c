/* t-uffdserve - a process that serves its own page faults with a userfaultfd (fd 9,
 * O_CLOEXEC|O_NONBLOCK, UFFD_FEATURE_THREAD_ID). A handler thread fills the
 * missing pages of a 16-page region registered MISSING (4 of them already
 * served at READY, page 3 with UFFDIO_ZEROPAGE: the shared zero page) and is told of writes to an 8-page region registered WP,
 * pages 2 and 5 write-protected (it unprotects them).
 * Modes: `idle`: nothing in flight at READY; `pending`: a thread's fault on
 * page 10 is left unread until SIGUSR1 (fdinfo pending: 1); `locked`: the
 * MISSING region mlock()ed at start (its populate served by the handler).
 * On SIGUSR1: the fault in flight is served, the other pages fault in and
 * hold what the handler gave them, each page served once (after a restore
 * too: page 3 still maps the zero page, pages never served still fault), a write to page 2 of the WP region is
 * reported to the handler (once), one to page 3 is not.
 */
#include "tlib.h"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>

#define UFD 9
#define MPAGES 16
#define WPAGES 8
#define ZPAGE 3		/* served with UFFDIO_ZEROPAGE */

static char *mreg, *wreg;
static volatile int hold, held, served, wp_faults;
static volatile uintptr_t wp_addr;

static void serve_missing(int ufd, uintptr_t addr)
{
	static char page[T_PAGE] __attribute__((aligned(4096)));
	uintptr_t a = addr & ~(T_PAGE - 1);
	struct uffdio_copy c = { a, (uintptr_t)page, T_PAGE, 0, 0 };
	struct uffdio_zeropage z = { { a, T_PAGE }, 0, 0 };

	if (a == (uintptr_t)mreg + ZPAGE * T_PAGE) {
		if (ioctl(ufd, UFFDIO_ZEROPAGE, &z))
			t_fail("UFFDIO_ZEROPAGE at %#lx: %s", (unsigned long)a, strerror(errno));
		served++;
		return;
	}
	for (size_t i = 0; i < T_PAGE / 8; i++)	/* what t_verify(a, T_PAGE, 1) expects */
		((uint64_t *)page)[i] = t_word(1, a + i * 8);
	if (ioctl(ufd, UFFDIO_COPY, &c))
		t_fail("UFFDIO_COPY at %#lx: %s", (unsigned long)a, strerror(errno));
	served++;
}

static void serve_wp(int ufd, uintptr_t addr)
{
	struct uffdio_writeprotect w = { { addr & ~(T_PAGE - 1), T_PAGE }, 0 };

	wp_addr = addr & ~(T_PAGE - 1);
	wp_faults++;
	if (ioctl(ufd, UFFDIO_WRITEPROTECT, &w))
		t_fail("UFFDIO_WRITEPROTECT off: %s", strerror(errno));
}

static void *handler(void *arg)
{
	struct uffd_msg m;
	struct pollfd p = { UFD, POLLIN, 0 };

	(void)arg;
	for (;;) {
		held = hold;
		if (held || poll(&p, 1, 20) <= 0) {
			t_sleep_ms(held ? 10 : 0);
			continue;
		}
		if (read(UFD, &m, sizeof(m)) != sizeof(m))
			continue;	/* EAGAIN: woken for nothing */
		if (m.event != UFFD_EVENT_PAGEFAULT)
			t_fail("unexpected uffd event %u", m.event);
		if (m.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP)
			serve_wp(UFD, m.arg.pagefault.address);
		else
			serve_missing(UFD, m.arg.pagefault.address);
	}
	return NULL;
}

static void *faulter(void *arg)
{
	(void)arg;
	return (void *)(uintptr_t)*(volatile char *)(mreg + 10 * T_PAGE);
}

static void setup(void)
{
	struct uffdio_api api = { UFFD_API, UFFD_FEATURE_THREAD_ID, 0 };
	struct uffdio_register rm = { { 0, MPAGES * T_PAGE }, UFFDIO_REGISTER_MODE_MISSING, 0 };
	struct uffdio_register rw = { { 0, WPAGES * T_PAGE }, UFFDIO_REGISTER_MODE_WP, 0 };
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd < 0 || dup3(fd, UFD, O_CLOEXEC) != UFD || close(fd))
		t_fail("userfaultfd at fd %d: %s", UFD, strerror(errno));
	if (ioctl(UFD, UFFDIO_API, &api))
		t_fail("UFFDIO_API: %s", strerror(errno));
	mreg = t_mmap(MPAGES * T_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
	wreg = t_mmap(WPAGES * T_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
	t_fill(wreg, WPAGES * T_PAGE, 77);
	rm.range.start = (uintptr_t)mreg;
	rw.range.start = (uintptr_t)wreg;
	if (ioctl(UFD, UFFDIO_REGISTER, &rm) || ioctl(UFD, UFFDIO_REGISTER, &rw))
		t_fail("UFFDIO_REGISTER: %s", strerror(errno));
	for (int pg = 2; pg <= 5; pg += 3) {
		struct uffdio_writeprotect w = { { (uintptr_t)wreg + pg * T_PAGE, T_PAGE },
						 UFFDIO_WRITEPROTECT_MODE_WP };

		if (ioctl(UFD, UFFDIO_WRITEPROTECT, &w))
			t_fail("UFFDIO_WRITEPROTECT page %d: %s", pg, strerror(errno));
	}
}

/* fdinfo's pending: count of faults not yet read. */
static long fdinfo_pending(void)
{
	char path[64], buf[512];
	long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", UFD);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "pending: %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

static void check_missing(void)
{
	for (int pg = 0; pg < MPAGES; pg++) {
		uintptr_t a = (uintptr_t)mreg + pg * T_PAGE;

		if (pg == ZPAGE) {
			for (size_t i = 0; i < T_PAGE; i++)
				if (((volatile char *)a)[i])
					t_fail("the zero page %d holds %#x at %zu", pg,
					       ((volatile char *)a)[i] & 0xff, i);
			continue;
		}
		if (t_verify((void *)a, T_PAGE, 1))
			t_fail("MISSING page %d does not hold what the handler gave it", pg);
	}
}

static void check_wp(void)
{
	wreg[3 * T_PAGE] ^= 1;
	if (wp_faults)
		t_fail("a write to an unprotected page reached the handler");
	wreg[2 * T_PAGE] ^= 1;
	if (wp_faults != 1 || wp_addr != (uintptr_t)wreg + 2 * T_PAGE)
		t_fail("the write to protected page 2 was reported %d times", wp_faults);
	wreg[2 * T_PAGE] ^= 1;
	wreg[3 * T_PAGE] ^= 1;
	if (wp_faults != 1 || t_verify(wreg, WPAGES * T_PAGE, 77))
		t_fail("the WP region changed (%d reports)", wp_faults);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "idle";
	pthread_t h, f;

	t_init(argc, argv, SA_RESTART);
	setup();
	if (pthread_create(&h, NULL, handler, NULL))
		t_fail("pthread_create");
	for (int pg = 0; pg < 4; pg++)
		(void)*(volatile char *)(mreg + pg * T_PAGE);
	if (!strcmp(mode, "locked") && mlock(mreg, MPAGES * T_PAGE))
		t_fail("mlock: %s", strerror(errno));
	if (!strcmp(mode, "pending")) {
		hold = 1;
		while (!held)
			t_sleep_ms(5);
		if (pthread_create(&f, NULL, faulter, NULL))
			t_fail("pthread_create");
		while (fdinfo_pending() != 1)
			t_sleep_ms(5);
	}
	t_ready("%s %p %p", mode, (void *)mreg, (void *)wreg);
	t_wait_usr1();
	if (hold) {
		hold = 0;
		pthread_join(f, NULL);
	}
	check_missing();
	check_wp();
	if (served != MPAGES)
		t_fail("the handler served %d missing pages, not %d", served, MPAGES);
	printf("PASS %s %d served, %d WP report\n", mode, served, wp_faults);
	exit(0);
}
