/*
 * The sweeper of recreated deleted files: a restore names its ghosts (the
 * deleted files it recreates, ghost_restore.c) from when their fds and
 * mappings are opened until every process's are; a `memdump restore`
 * killed meanwhile (SIGKILL: nothing of it runs after) would leave them on
 * disk. The sweeper is a process forked by the restore when it makes its
 * first ghost, in its namespaces; it reads what the restore tells it through
 * a pipe only the restore writes: each name, told before the name exists,
 * with the inode it will name. At the pipe's EOF (the restore is done, or
 * gone) it removes each name that still names that inode, and exits. A
 * regular file is written unnamed (O_TMPFILE) and linked to its name once
 * told; a directory or FIFO is told before it is made (inode 0: removed
 * if it is an empty directory or a FIFO), then again with its inode.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "mountinfo.h"
#include "ctx/restore_ctx.h"
#include "restore/pipeline.h"

struct sweep_rec {
	uint64_t dev, ino;	/* ino 0: made next, an empty directory or a FIFO */
	uint32_t len;		/* of the path after it, no NUL */
	uint32_t pad;
};

struct swept {
	struct sweep_rec rec;
	char *path;
};

static bool read_full(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		p += r;
		n -= (size_t)r;
	}
	return true;
}

/* One name told, if it still names what the restore made. */
static void sweep_one(const struct swept *s)
{
	struct stat st;

	if (lstat(s->path, &st))
		return;
	if (s->rec.ino) {
		if (st.st_ino != s->rec.ino || st.st_dev != s->rec.dev)
			return;
		if ((S_ISDIR(st.st_mode) ? rmdir(s->path) : unlink(s->path)) && errno == EROFS)
			mount_rw_remove(s->path);	/* a ghost of a read-only bind */
		return;
	}
	if (S_ISDIR(st.st_mode))
		rmdir(s->path);		/* only empty: as it was made */
	else if (!S_ISREG(st.st_mode))	/* a FIFO, device node or symlink: made by name */
		unlink(s->path);
}

/* Is list[i]'s name told again after it (with its inode, once made)? */
static bool told_later(const struct swept *list, size_t n, size_t i)
{
	for (size_t k = i + 1; k < n; k++)
		if (!strcmp(list[k].path, list[i].path))
			return true;
	return false;
}

static void __attribute__((noreturn)) sweeper_main(int fd)
{
	struct swept *list = NULL;
	size_t n = 0;
	struct sweep_rec rec;

	signal(SIGINT, SIG_IGN);	/* a terminal's ^C is the restore's, not its */
	signal(SIGTERM, SIG_IGN);
	while (read_full(fd, &rec, sizeof(rec)) && rec.len < PATH_MAX) {
		struct swept *nl = realloc(list, (n + 1) * sizeof(*nl));
		char *path = malloc(rec.len + 1);

		if (!nl || !path || !read_full(fd, path, rec.len)) {
			free(path);
			if (nl)
				list = nl;
			break;
		}
		path[rec.len] = 0;
		list = nl;
		list[n++] = (struct swept){ rec, path };
	}
	for (size_t i = 0; i < n; i++)
		if (!told_later(list, n, i))
			sweep_one(&list[i]);
	_exit(0);
}

/*
 * The sweeper forked holding a copy of every fd the restore had open then,
 * the unnamed file of a ghost being written among them: its close_range()
 * is done before the restore goes on, so that no file of the restore is
 * closed last by the sweeper at a time of its own. The last close of an
 * O_TMPFILE file drops the dentry it was made with; after the ghost is
 * deleted again that removes the inode (IN_DELETE_SELF), which takes every
 * inotify watch off it (zdtm inotify00; a watched ghost is also made by its
 * name, ghost_restore.c).
 */
static bool sweeper_ready(int fd)
{
	char c;
	ssize_t n;

	do
		n = recv(fd, &c, 1, 0);
	while (n < 0 && errno == EINTR);
	return n == 1;
}

/* The sweeper's pipe, started on first use: the tree's root holds it. */
static int sweeper_fd(struct rst *r)
{
	struct rst *root = r->tree ? tree_proc(r, 0) : r;
	int p[2];
	pid_t pid;

	if (root->ghost_sweep_fd > 0)
		return root->ghost_sweep_fd;
	/* a socket, not a pipe: a sweeper gone gives EPIPE, not SIGPIPE (MSG_NOSIGNAL) */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p))
		return fail(-errno, "cannot create a pipe for the deleted files' sweeper: %s",
			    strerror(errno));
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return fail(-errno, "cannot fork the deleted files' sweeper: %s", strerror(errno));
	}
	if (pid == 0) {
		setsid();	/* out of the restore's group: a signal to it is not its */
		prctl(PR_SET_NAME, "memdump-sweep");
		if (dup2(p[0], 3) != 3)
			_exit(1);
		close_range(4, ~0U, 0);
		if (send(3, "", 1, MSG_NOSIGNAL) != 1)	/* it holds none of the restore's files */
			_exit(1);
		sweeper_main(3);
	}
	close(p[0]);
	if (!sweeper_ready(p[1])) {
		close(p[1]);
		waitpid(pid, NULL, 0);
		return fail(-EIO, "the deleted files' sweeper did not start");
	}
	root->ghost_sweep_fd = p[1];
	root->ghost_sweep_pid = pid;
	return p[1];
}

int ghost_sweep_tell(struct rst *r, const char *path, dev_t dev, ino_t ino)
{
	struct sweep_rec rec = { .dev = dev, .ino = ino, .len = (uint32_t)strlen(path) };
	int fd = sweeper_fd(r);

	if (fd < 0)
		return fd;
	if (rec.len >= PATH_MAX)
		return fail(-ENAMETOOLONG, "deleted file %s: name too long", path);
	if (send(fd, &rec, sizeof(rec), MSG_NOSIGNAL) != (ssize_t)sizeof(rec) ||
	    send(fd, path, rec.len, MSG_NOSIGNAL) != (ssize_t)rec.len)
		return fail(-EIO, "cannot tell the deleted files' sweeper about %s: %s", path,
			    strerror(errno));
	return 0;
}

void ghost_sweep_end(struct rst *r)
{
	if (r->ghost_sweep_fd <= 0)
		return;
	close(r->ghost_sweep_fd);	/* its EOF: it checks every name, then exits */
	r->ghost_sweep_fd = 0;
	if (r->ghost_sweep_pid > 0)
		waitpid(r->ghost_sweep_pid, NULL, 0);
	r->ghost_sweep_pid = 0;
}
