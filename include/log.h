/*
 * Logging and error reporting.
 *
 * Levels follow CRIU's -v: 0 silent, 1 errors, 2 warnings (default), 3 info,
 * 4 debug. Messages go to stderr, or to --log-file.
 *
 * Errors travel up as negative errno. The function that knows what failed
 * records one sentence with fail(); the command's top level prints it once
 * (log_report_failure). Later fail() calls do not overwrite the first
 * sentence: the deepest cause wins, callers may only add context with
 * fail_context().
 */
#ifndef MEMDUMP_LOG_H
#define MEMDUMP_LOG_H

#include <stdarg.h>

enum log_level { LOG_NONE, LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

int  log_init(int level, const char *path);
void log_close(void);
int  log_level(void);
/* The --log-file's descriptor, or -1 (messages go to stderr). */
int  log_fileno(void);
/*
 * In a process restore forked, once the restored fds are at their numbers:
 * memdump's messages go to fd (a copy of memdump's log or stderr above the
 * restored fds), not to the restored program's fd 2 or to whatever file now
 * has the log's old number; -1: back to the log file or stderr.
 */
void log_to_fd(int fd);
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define pr_err(...)	log_msg(LOG_ERROR, __VA_ARGS__)
#define pr_warn(...)	log_msg(LOG_WARN, __VA_ARGS__)
#define pr_info(...)	log_msg(LOG_INFO, __VA_ARGS__)
#define pr_debug(...)	log_msg(LOG_DEBUG, __VA_ARGS__)

/* Record why the command fails (first call wins); returns err (a -errno). */
int  fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix the recorded reason with context ("dump of 123: "). */
void fail_context(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *fail_reason(void);
void fail_clear(void);
/* Print "memdump: <what>: <reason>" once, on stderr and in the log file. */
void log_report_failure(const char *what, int err);

#endif
