/* t-memfdexec: copies itself into a memfd and runs from it with fexecve(),
 * as some packers and sandboxes do: its text is a private mapping of the
 * memfd, which restore has no file to map from, so the dump must refuse it
 * by name (cases-refuse.sh). After SIGUSR1: PASS.
 * READY <pid> */
#include "tlib.h"

#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[2], "child")) {
		t_init(argc, argv, SA_RESTART);
		t_ready(NULL);
		t_wait_usr1();
		t_pass(NULL);
	}
	int src = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	int m = memfd_create("t-memfdexec", MFD_CLOEXEC);
	struct stat st;

	if (src < 0 || m < 0 || fstat(src, &st) || sendfile(m, src, NULL, st.st_size) != st.st_size)
		t_fail("cannot copy myself into a memfd: %s", strerror(errno));
	char *av[] = { argv[0], argc > 1 ? argv[1] : "/tmp", "child", NULL };
	fexecve(m, av, environ);
	t_fail("fexecve: %s", strerror(errno));
}
