/* Command-line options, parsed once in main.c, read by every command. */
#ifndef MEMDUMP_OPTIONS_H
#define MEMDUMP_OPTIONS_H

#include <stdbool.h>
#include <sys/types.h>

enum dump_mode { MODE_SPLICE, MODE_READ, MODE_MEM };

struct options {
	pid_t pid;			/* -t */
	const char *dir;		/* -D */
	enum dump_mode mode;		/* --mode */
	bool leave_running;		/* --leave-running */
	bool detach;			/* restore -d */
	const char *pidfile;		/* restore --pidfile */
	bool json;			/* show --json */
	bool progress;			/* progress bar (default: when stderr is a tty) */
	int verbosity;			/* -v */
	const char *log_file;		/* --log-file */
	int argc;			/* what is left after the options */
	char **argv;
};

extern struct options opts;

int cmd_dump(void);
int cmd_restore(void);
int cmd_show(void);
int cmd_read_mem(void);
int cmd_check(void);
int cmd_verify(void);

const char *mode_name(enum dump_mode m);

#endif
