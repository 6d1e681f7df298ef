/* t-memfdrun: a memfd holding a script (#!/bin/true), run with
 * execveat(fd, "", AT_EMPTY_PATH) by a forked child, before the dump and
 * after the restore (zdtm memfd04). The kernel refuses to exec a file
 * someone holds open for writing (ETXTBSY); memfd_create's own fd does not
 * count as such, a reopen through /proc for writing does.
 *   argv[2] "maps": also a MAP_PRIVATE mapping through a read-only reopen
 *                   and a MAP_SHARED writable mapping of the memfd (memfd05)
 * READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <sys/wait.h>

static const char script[] = "#!/bin/true\n";

static void run_memfd(int fd, const char *when)
{
	char *const av[] = { "true", NULL }, *const env[] = { NULL };
	int status, flags = fcntl(fd, F_GETFD);
	pid_t pid;

	if (flags)
		t_fail("%s: the memfd's fd flags are %d, not 0", when, flags);
	pid = fork();
	if (pid == 0) {
		syscall(SYS_execveat, fd, "", av, env, AT_EMPTY_PATH);
		_exit(errno);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		t_fail("%s: fork/wait: %s", when, strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		t_fail("%s: execveat of the memfd failed: %s", when,
		       WIFEXITED(status) ? strerror(WEXITSTATUS(status)) : "killed");
}

int main(int argc, char **argv)
{
	int maps = argc > 2 && !strcmp(argv[2], "maps");
	char *priv = NULL, *shr = NULL;

	t_init(argc, argv, SA_RESTART);
	int fd = memfd_create("t-memfdrun", 0);
	if (fd < 0 || write(fd, script, sizeof(script) - 1) != sizeof(script) - 1)
		t_fail("memfd: %s", strerror(errno));
	if (maps) {
		char path[64];
		int ro;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		ro = open(path, O_RDONLY);
		priv = ro < 0 ? MAP_FAILED : mmap(NULL, T_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, ro, 0);
		shr = mmap(NULL, T_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (priv == MAP_FAILED || shr == MAP_FAILED)
			t_fail("mmap: %s", strerror(errno));
		priv[sizeof(script) - 1] = 'P';	/* a COW copy, past the script */
	}
	run_memfd(fd, "before the dump");

	t_ready(NULL);
	t_wait_usr1();
	t_check_common();
	run_memfd(fd, "after the restore");
	if (maps && (memcmp(shr, script, sizeof(script) - 1) || memcmp(priv, script, sizeof(script) - 1) ||
		     priv[sizeof(script) - 1] != 'P'))
		t_fail("the memfd's mappings do not show the script");
	t_pass(NULL);
}
