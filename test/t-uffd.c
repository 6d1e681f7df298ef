/* t-uffd: a process with a userfaultfd of its own: API handshake done with
 * UFFD_FEATURE_MISSING_SHMEM asked, a 4-page anonymous range registered for
 * missing faults, no fault pending, no handler (issue 24): dumped and made
 * again by the restorer blob; on SIGUSR1 it checks its uffd still has the
 * range registered (VmFlags um) and its data. READY <pid> <uffd> <range> */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>

#include "tlib.h"

#define SEED 0x5eed0027ULL
#define LEN (4 * T_PAGE)

int main(int argc, char **argv)
{
	char flags[256];

	t_init(argc, argv, SA_RESTART);
	int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	uint8_t *data = t_mmap(LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	uint8_t *range = t_mmap(LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)range, .len = LEN },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};

	if (uffd < 0) {
		printf("SKIP no userfaultfd: %s\n", strerror(errno));
		return 2;
	}
	if (ioctl(uffd, UFFDIO_API, &api) || ioctl(uffd, UFFDIO_REGISTER, &reg))
		t_fail("userfaultfd setup: %s", strerror(errno));
	t_fill(data, LEN, SEED);

	t_ready("%d %p", uffd, (void *)range);
	t_wait_usr1();
	t_check_common();

	if (t_smaps_field(range, "VmFlags:", flags, sizeof(flags)) || !strstr(flags, " um"))
		t_fail("the range lost its userfaultfd registration");
	if (t_verify(data, LEN, SEED))
		t_fail("data differs");
	t_pass("uffd still registered, data intact");
}
