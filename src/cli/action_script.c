/*
 * --action-script FILE, as CRIU's: at each hook point FILE runs with
 * CRTOOLS_SCRIPT_ACTION (the point's name), CRTOOLS_IMAGE_DIR (the image
 * directory, absolute) and CRTOOLS_INIT_PID (the dumped or restored PID) in
 * its environment, stdin from /dev/null and stdout on memdump's stderr (so
 * that restore -d's PID line stays alone on stdout). A script that does not
 * exit 0 fails the hook: the pipeline aborts where it still can.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "cli/action_script.h"

static void __attribute__((noreturn)) exec_script(const char *path, const char *action,
						  const char *dir, pid_t pid)
{
	char spid[16];
	int null = open("/dev/null", O_RDONLY);

	snprintf(spid, sizeof(spid), "%d", pid);
	if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0 ||
	    setenv("CRTOOLS_SCRIPT_ACTION", action, 1) || setenv("CRTOOLS_IMAGE_DIR", dir, 1) ||
	    setenv("CRTOOLS_INIT_PID", spid, 1))
		_exit(127);
	execl(path, path, (char *)NULL);
	fprintf(stderr, "memdump: cannot run action script %s: %s\n", path, strerror(errno));
	_exit(127);
}

static int run_script(const char *path, enum hook_point p, const char *dir, pid_t pid)
{
	pid_t child = fork();
	int status;

	if (child < 0)
		return fail(-errno, "cannot fork for the action script %s: %s", path, strerror(errno));
	if (child == 0)
		exec_script(path, hook_name(p), dir, pid);
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			return fail(-errno, "cannot wait for the action script %s: %s", path,
				    strerror(errno));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	return fail(-ECANCELED, "the %s action script %s %s %d", hook_name(p), path,
		    WIFSIGNALED(status) ? "was killed by signal" : "exited with",
		    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

static int fire_scripts(void *arg, enum hook_point p, pid_t pid)
{
	const struct action_scripts *s = arg;
	char dir[PATH_MAX];
	int ret = 0;

	if (!s->image_dir || !realpath(s->image_dir, dir))
		snprintf(dir, sizeof(dir), "%s", s->image_dir ? s->image_dir : "");
	for (int i = 0; i < s->nr && !ret; i++)
		ret = run_script(s->paths[i], p, dir, pid);
	return ret;
}

const struct hooks *action_scripts_init(struct action_scripts *s, const char *const *paths,
					int nr, const char *image_dir)
{
	*s = (struct action_scripts){ .paths = paths, .nr = nr, .image_dir = image_dir,
				      .hooks = { .fire = fire_scripts, .arg = s } };
	return nr ? &s->hooks : NULL;
}
