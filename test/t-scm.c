/* t-scm: files in flight (SCM_RIGHTS) on a UNIX socket pair's queue.
 *
 *   t-scm DIR [dgram|seqpacket|stream]
 *
 * dgram, seqpacket (one message each, data boundaries kept):
 *   "one"    the read end of a pipe with 8 unread bytes, O_NONBLOCK, only in flight
 *            (the process keeps the write end)
 *   "plain"  no fds
 *   "two"    a file opened O_RDWR|O_APPEND at offset 5, only in flight
 *   "three"  the receiving socket itself, a file the process holds (same description:
 *            the offset is shared), and its own pipe's write end
 *   "four"   both ends of a pipe holding "inside", only in flight
 * stream: "aaaa" (no fds), "bbb" with the pipe's read end, "cc", "d" with the file:
 *   a read of 5 bytes gets "aaaab" + fd (the fds go with every byte of their message),
 *   then "bbccd" + fd.
 * On SIGUSR1 every message is received and every fd checked: the kind of file, its
 * contents, offset and flags, the same socket, the same pipe.
 */
#include "tlib.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

enum { MAXFD = 4 };

static int sk[2], wend, held, heldpipe[2];
static char fpath[4096];
static struct stat file_st;

static void send_fds(const char *data, const int *fds, int n)
{
	char ctl[CMSG_SPACE(MAXFD * sizeof(int))];
	struct iovec iov = { (void *)data, strlen(data) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	memset(ctl, 0, sizeof(ctl));
	if (n) {
		struct cmsghdr *c;

		m.msg_control = ctl;
		m.msg_controllen = CMSG_SPACE(n * sizeof(int));
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(n * sizeof(int));
		memcpy(CMSG_DATA(c), fds, n * sizeof(int));
	}
	if (sendmsg(sk[0], &m, 0) != (ssize_t)iov.iov_len)
		t_fail("sendmsg %s: %s", data, strerror(errno));
}

/* One message of up to len bytes (len 0: 100); its fds in fds, their number returned. */
static int recv_fds(const char *want, size_t len, int *fds)
{
	char ctl[CMSG_SPACE(MAXFD * sizeof(int))], buf[128] = "";
	struct iovec iov = { buf, len ? len : 100 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof(ctl) };
	ssize_t r = recvmsg(sk[1], &m, MSG_DONTWAIT);
	int n = 0;

	if (r < 0)
		t_fail("recv %s: %s", want, strerror(errno));
	if ((size_t)r != strlen(want) || memcmp(buf, want, r))
		t_fail("received '%.*s', want '%s'", (int)r, buf, want);
	if (m.msg_flags & (MSG_CTRUNC | MSG_TRUNC))
		t_fail("message %s truncated", want);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			t_fail("message %s: control data of type %d", want, c->cmsg_type);
		memcpy(fds + n, CMSG_DATA(c), c->cmsg_len - CMSG_LEN(0));
		n += (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	}
	return n;
}

static void expect_nfds(const char *what, int got, int want)
{
	if (got != want)
		t_fail("message %s came with %d fds, want %d", what, got, want);
}

static void check_read(int fd, const char *want, const char *what)
{
	char buf[64] = "";
	ssize_t r = read(fd, buf, sizeof(buf));

	if (r != (ssize_t)strlen(want) || memcmp(buf, want, r))
		t_fail("%s: read %zd '%.*s', want '%s'", what, r, (int)(r > 0 ? r : 0), buf, want);
}

/* The pipe read end: its unread bytes, O_NONBLOCK, then what the kept write end writes. */
static void check_pipe_rd(int fd)
{
	struct stat st;

	if (fstat(fd, &st) || !S_ISFIFO(st.st_mode))
		t_fail("the pipe end in flight is no pipe");
	if (!(fcntl(fd, F_GETFL) & O_NONBLOCK) || (fcntl(fd, F_GETFL) & O_ACCMODE) != O_RDONLY)
		t_fail("the pipe end lost its flags: %o", fcntl(fd, F_GETFL));
	check_read(fd, "pipedata", "pipe in flight");
	if (read(fd, (char[4]){ 0 }, 4) != -1 || errno != EAGAIN)
		t_fail("the pipe in flight has more data");
	if (write(wend, "more", 4) != 4)
		t_fail("write to the kept end: %s", strerror(errno));
	check_read(fd, "more", "pipe in flight after a write to its kept end");
}

/* The file: same inode, O_APPEND, offset 5. */
static void check_file(int fd)
{
	struct stat st;

	if (fstat(fd, &st) || st.st_ino != file_st.st_ino || st.st_dev != file_st.st_dev)
		t_fail("the file in flight is another file");
	if (!(fcntl(fd, F_GETFL) & O_APPEND) || (fcntl(fd, F_GETFL) & O_ACCMODE) != O_RDWR)
		t_fail("the file in flight lost its flags: %o", fcntl(fd, F_GETFL));
	if (lseek(fd, 0, SEEK_CUR) != 5)
		t_fail("the file in flight is at %ld, want 5", (long)lseek(fd, 0, SEEK_CUR));
	check_read(fd, "56789", "file in flight");
}

/* The socket itself, the held file (shared offset), the held pipe's write end. */
static void check_three(const int *fds)
{
	struct stat a, b;

	if (fstat(fds[0], &a) || fstat(sk[1], &b) || a.st_ino != b.st_ino)
		t_fail("the socket in flight is not the receiving socket");
	if (lseek(fds[1], 7, SEEK_SET) != 7 || lseek(held, 0, SEEK_CUR) != 7)
		t_fail("the held file in flight is another description (offset not shared)");
	if (write(fds[2], "via", 3) != 3)
		t_fail("write to the pipe end in flight: %s", strerror(errno));
	check_read(heldpipe[0], "via", "held pipe written by its end in flight");
}

static void check_four(const int *fds)
{
	check_read(fds[0], "inside", "pipe only in flight");
	if (write(fds[1], "again", 5) != 5)
		t_fail("write to the pipe only in flight: %s", strerror(errno));
	check_read(fds[0], "again", "pipe only in flight, after a write");
}

static void check_messages(void)
{
	int fds[MAXFD];

	expect_nfds("one", recv_fds("one", 0, fds), 1);
	check_pipe_rd(fds[0]);
	expect_nfds("plain", recv_fds("plain", 0, fds), 0);
	expect_nfds("two", recv_fds("two", 0, fds), 1);
	check_file(fds[0]);
	expect_nfds("three", recv_fds("three", 0, fds), 3);
	check_three(fds);
	expect_nfds("four", recv_fds("four", 0, fds), 2);
	check_four(fds);
}

static void check_stream(void)
{
	int fds[MAXFD];

	expect_nfds("aaaab", recv_fds("aaaab", 5, fds), 1);
	check_pipe_rd(fds[0]);
	expect_nfds("bbccd", recv_fds("bbccd", 0, fds), 1);
	check_file(fds[0]);
}

static int open_file(void)
{
	int fd;

	snprintf(fpath, sizeof(fpath), "%s/scm-file", t_dir);
	fd = open(fpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, "0123456789", 10) != 10)
		t_fail("cannot make %s", fpath);
	close(fd);
	fd = open(fpath, O_RDWR | O_APPEND);
	if (fd < 0 || lseek(fd, 5, SEEK_SET) != 5 || fstat(fd, &file_st))
		t_fail("cannot open %s", fpath);
	return fd;
}

/* A pipe with 8 bytes unread; its read end (O_NONBLOCK) returned, the write end in wend. */
static int data_pipe(void)
{
	int p[2];

	if (pipe(p) || write(p[1], "pipedata", 8) != 8 || fcntl(p[0], F_SETFL, O_NONBLOCK))
		t_fail("pipe");
	wend = p[1];
	return p[0];
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "dgram";
	int type = !strcmp(mode, "stream") ? SOCK_STREAM :
		   !strcmp(mode, "seqpacket") ? SOCK_SEQPACKET : SOCK_DGRAM;
	int rd, file, inside[2];

	t_init(argc, argv, 0);
	if (socketpair(AF_UNIX, type, 0, sk))
		t_fail("socketpair: %s", strerror(errno));
	rd = data_pipe();
	file = open_file();
	if (type == SOCK_STREAM) {
		send_fds("aaaa", NULL, 0);
		send_fds("bbb", &rd, 1);
		send_fds("cc", NULL, 0);
		send_fds("d", &file, 1);
	} else {
		held = open(fpath, O_RDONLY);
		if (held < 0 || pipe(heldpipe) || pipe(inside) || write(inside[1], "inside", 6) != 6)
			t_fail("setup: %s", strerror(errno));
		send_fds("one", &rd, 1);
		send_fds("plain", NULL, 0);
		send_fds("two", &file, 1);
		send_fds("three", (int[]){ sk[1], held, heldpipe[1] }, 3);
		send_fds("four", inside, 2);
		close(inside[0]);
		close(inside[1]);
	}
	close(rd);
	close(file);
	t_ready("%s", mode);
	t_wait_usr1();
	if (type == SOCK_STREAM)
		check_stream();
	else
		check_messages();
	t_pass(mode);
}
