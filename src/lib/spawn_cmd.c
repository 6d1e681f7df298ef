/* A helper program run and its output taken (spawn_cmd.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spawn_cmd.h"

#define ERR_TAIL	1024

extern char **environ;

struct sink {
	char *buf;
	size_t len, cap, max;
	bool tail;		/* stderr: only its last bytes are kept */
};

static int grow(struct sink *s, size_t need)
{
	size_t cap = s->cap ? s->cap : 4096;
	char *p;

	while (cap < need)
		cap *= 2;
	if (cap == s->cap)
		return 0;
	p = realloc(s->buf, cap);
	if (!p)
		return -ENOMEM;
	s->buf = p;
	s->cap = cap;
	return 0;
}

/* One read of fd into s: 1 more may come, 0 at EOF, <0 an error. */
static int drain(int fd, struct sink *s)
{
	char chunk[16384];
	ssize_t n = read(fd, chunk, sizeof(chunk));
	int ret;

	if (n < 0)
		return errno == EINTR ? 1 : -errno;
	if (!n)
		return 0;
	if (!s->tail && s->len + (size_t)n > s->max)
		return -EFBIG;
	ret = grow(s, s->len + (size_t)n + 1);
	if (ret)
		return ret;
	memcpy(s->buf + s->len, chunk, (size_t)n);
	s->len += (size_t)n;
	if (s->tail && s->len > s->max) {
		memmove(s->buf, s->buf + s->len - s->max, s->max);
		s->len = s->max;
	}
	s->buf[s->len] = 0;
	return 1;
}

/* Both pipes read to their end (a child writing much to one must not block). */
static int collect(int out_fd, int err_fd, struct sink *out, struct sink *err)
{
	struct pollfd p[2] = { { .fd = out_fd, .events = POLLIN }, { .fd = err_fd, .events = POLLIN } };
	struct sink *s[2] = { out, err };
	int open = 2, ret = 0;

	while (open) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < 2; i++) {
			int r;

			if (p[i].fd < 0 || !p[i].revents)
				continue;
			r = drain(p[i].fd, s[i]);
			if (r <= 0) {
				p[i].fd = -1;
				open--;
				ret = ret ?: r;
			}
		}
	}
	return ret;
}

/* The last non-empty line of text, into buf. */
static void last_line(const char *text, size_t len, char *buf, size_t buf_len)
{
	size_t end = len, start;

	while (end && (text[end - 1] == '\n' || text[end - 1] == ' '))
		end--;
	start = end;
	while (start && text[start - 1] != '\n')
		start--;
	snprintf(buf, buf_len, "%.*s", (int)(end - start), text + start);
}

/* The child's signals as a fresh program's: none blocked, SIGPIPE's default action. */
static int fresh_signals(posix_spawnattr_t *at)
{
	sigset_t none, pipe;
	int ret = posix_spawnattr_init(at);

	sigemptyset(&none);
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	ret = ret ?: posix_spawnattr_setflags(at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	ret = ret ?: posix_spawnattr_setsigmask(at, &none);
	return ret ?: posix_spawnattr_setsigdefault(at, &pipe);
}

static int run(char *const argv[], int in, int out_w, int err_w, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	int ret = fresh_signals(&at);

	if (ret)
		return -ret;
	ret = posix_spawn_file_actions_init(&fa);
	if (ret) {
		posix_spawnattr_destroy(&at);
		return -ret;
	}
	if (in >= 0)
		ret = posix_spawn_file_actions_adddup2(&fa, in, 0);
	else
		ret = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	ret = ret ?: posix_spawn_file_actions_adddup2(&fa, out_w, 1);
	ret = ret ?: posix_spawn_file_actions_adddup2(&fa, err_w, 2);
	ret = ret ?: posix_spawnp(pid, argv[0], &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	return -ret;
}

int spawn_capture(char *const argv[], int in, char **out, size_t *len, char *err, size_t err_len)
{
	struct sink o = { .max = SPAWN_MAX_OUT }, e = { .max = ERR_TAIL, .tail = true };
	int po[2], pe[2], ret, status = 0;
	pid_t pid;

	if (pipe2(po, O_CLOEXEC))
		return -errno;
	if (pipe2(pe, O_CLOEXEC)) {
		ret = -errno;
		close(po[0]);
		close(po[1]);
		return ret;
	}
	ret = run(argv, in, po[1], pe[1], &pid);
	close(po[1]);
	close(pe[1]);
	if (!ret) {
		ret = collect(po[0], pe[0], &o, &e);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	close(po[0]);
	close(pe[0]);
	if (!ret && !(WIFEXITED(status) && !WEXITSTATUS(status))) {
		ret = WIFEXITED(status) && WEXITSTATUS(status) == 127 ? -ENOENT : -EIO;
		if (err)
			last_line(e.buf ? e.buf : "", e.len, err, err_len);
	}
	free(e.buf);
	if (!ret && out) {
		*out = o.buf ? o.buf : calloc(1, 1);
		*len = o.len;
		return *out ? 0 : -ENOMEM;
	}
	free(o.buf);
	return ret;
}

bool spawn_found(const char *prog)
{
	const char *p = getenv("PATH") ?: "/usr/sbin:/usr/bin:/sbin:/bin";

	while (*p) {
		const char *end = strchrnul(p, ':');
		char file[PATH_MAX];
		int n = snprintf(file, sizeof(file), "%.*s/%s", (int)(end - p), p, prog);

		if (end > p && n > 0 && n < (int)sizeof(file) && !access(file, X_OK))
			return true;
		p = *end ? end + 1 : end;
	}
	return false;
}
