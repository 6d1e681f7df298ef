/* Logging with levels, and the single recorded reason a command failed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "log.h"

static int cur_level = LOG_WARN;
static FILE *log_file;
static int log_fd = -1;		/* log_to_fd() */
static char reason[8192];	/* a refusal lists every reason: room for many */

int log_init(int level, const char *path)
{
	cur_level = level;
	if (!path)
		return 0;
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

	log_file = fd >= 0 ? fdopen(fd, "a") : NULL;
	if (fd >= 0 && !log_file)
		close(fd);
	if (!log_file)
		return fail(-errno, "cannot open log file %s: %s", path, strerror(errno));
	setvbuf(log_file, NULL, _IOLBF, 0);
	return 0;
}

void log_close(void)
{
	if (log_file)
		fclose(log_file);
	log_file = NULL;
}

int log_fileno(void)
{
	return log_file ? fileno(log_file) : -1;
}

void log_to_fd(int fd)
{
	log_fd = fd;
}

int log_level(void)
{
	return cur_level;
}

static void vlog(enum log_level lvl, const char *fmt, va_list ap)
{
	static const char *tag[] = { "", "Error", "Warn", "Info", "Debug" };
	FILE *out = log_file ? log_file : stderr;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (log_fd >= 0) {
		dprintf(log_fd, "(%5ld.%06ld) %-5s %d: ", (long)ts.tv_sec % 100000,
			ts.tv_nsec / 1000, tag[lvl], getpid());
		vdprintf(log_fd, fmt, ap);
		dprintf(log_fd, "\n");
		return;
	}
	fprintf(out, "(%5ld.%06ld) %-5s %d: ", (long)ts.tv_sec % 100000, ts.tv_nsec / 1000,
		tag[lvl], getpid());
	vfprintf(out, fmt, ap);
	fputc('\n', out);
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;

	if ((int)lvl > cur_level)
		return;
	va_start(ap, fmt);
	vlog(lvl, fmt, ap);
	va_end(ap);
}

/*
 * A reason may quote names and paths from an image: non-printable bytes and
 * bytes outside ASCII become \xNN, so an error line is always one clean line.
 */
static void escape_into(char *dst, size_t len, const char *src)
{
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)src; *p && o + 5 < len; p++) {
		if (*p >= 0x20 && *p < 0x7f)
			dst[o++] = *p;
		else
			o += snprintf(dst + o, len - o, "\\x%02x", *p);
	}
	dst[o] = 0;
}

int fail(int err, const char *fmt, ...)
{
	char raw[sizeof(reason)];
	va_list ap;

	if (reason[0])
		return err;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	escape_into(reason, sizeof(reason), raw);
	pr_debug("failure recorded: %s", reason);
	return err;
}

void fail_context(const char *fmt, ...)
{
	char prefix[256], old[sizeof(reason)];
	va_list ap;

	if (!reason[0])
		return;
	va_start(ap, fmt);
	vsnprintf(old, sizeof(old), fmt, ap);
	va_end(ap);
	escape_into(prefix, sizeof(prefix), old);
	memcpy(old, reason, sizeof(old));
	size_t n = strlen(prefix);

	if (n >= sizeof(reason))
		n = sizeof(reason) - 1;
	memcpy(reason, prefix, n);
	snprintf(reason + n, sizeof(reason) - n, "%.*s", (int)(sizeof(reason) - n - 1), old);
}

const char *fail_reason(void)
{
	return reason;
}

void fail_clear(void)
{
	reason[0] = 0;
}

void log_report_failure(const char *what, int err)
{
	const char *why = reason[0] ? reason : strerror(err < 0 ? -err : err);

	fprintf(stderr, "memdump: %s: %s\n", what, why);
	if (log_file)
		fprintf(log_file, "memdump: %s: %s\n", what, why);
}

uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
