/*
 * memdump restore --lazy-pages: the process runs before its private
 * anonymous memory is filled; a page handler process serves each page it
 * touches from the pages images (userfaultfd) and fills the rest behind it.
 *
 *  lazy_restore.c  memdump's side: which VMAs are lazy, the socket the blob
 *                  sends the userfaultfd over, the handler process started
 *  lazy_handler.c  the handler: faults, events, the background fill, and its
 *                  keeper (a process that kills the restored processes when
 *                  the handler dies before their memory is complete)
 *
 *  lazy_remote.c   migrate --lazy-pages: the set's pages-1.img is on the
 *                  migration's source; its bytes are fetched through
 *                  memdump migrate-receive into the local (sparse) file
 *
 * The handler takes the bytes from a struct lazy_source: the pages images.
 */
#ifndef MEMDUMP_MEM_LAZY_H
#define MEMDUMP_MEM_LAZY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct rst;

/* build_area(): mark the lazy VMAs, make the socket (the blob's end a blob fd) */
int lazy_plan(struct rst *r);
/*
 * MEMDUMP_LAZY_CHECK=late: the lazy pages' checksums are taken by the
 * handler while the process runs (a damaged run kills it) instead of
 * before anything runs (the default).
 */
bool lazy_check_late(void);
/*
 * MEMDUMP_LAZY_CHECK=first: the pages images checked whole before anything
 * runs, even where the handler could check each block as it serves it.
 */
bool lazy_check_first(void);
/* before the fork of the processes: start the handler for all of them (n of them) */
int lazy_start(struct rst *const *all, size_t n);

/* The handler's page source: len bytes of page image img at off, valid until the next call. */
struct lazy_source {
	const void *(*get)(struct lazy_source *s, unsigned int img, uint64_t off, size_t len);
	void *priv;
	const char *why;	/* after a NULL from get: why, or NULL */
};

/*
 * migrate --lazy-pages (lazy_remote.c). memdump migrate-receive runs the
 * restore with MEMDUMP_LAZY_REMOTE_FD naming a stream socket to it; the
 * restore's own pages-1.img is then a file of its size whose bytes come
 * through that socket: a request is { offset, length } (length 0: every
 * byte is here, the end), its answer a struct lazy_remote_reply, then
 * msg_len bytes of message (status < 0: why it failed) or len bytes.
 */
struct lazy_remote_reply {
	int32_t status;		/* 0 or -errno */
	uint32_t msg_len;
	uint64_t len;
};

/*
 * A source alive but silent (a stopped memdump) must not hold the process
 * forever: migrate-receive --lazy-timeout S (default) bounds its wait for a
 * GET's answer; the handler's own wait on migrate-receive (its
 * MEMDUMP_LAZY_TIMEOUT, in seconds) is a few seconds longer, so the
 * receiver's word, which names the source, comes first.
 */
#define LAZY_TIMEOUT_SECS	30
#define LAZY_TIMEOUT_SLACK	5

struct lazy_remote;
struct restore_opts;
/* The page channel: the lazy-pages daemon's (o->lazy_remote_sock), else the socket of
 * MEMDUMP_LAZY_REMOTE_FD (migrate-receive's), or -1. */
int lazy_remote_fd(const struct restore_opts *o);
/* A tree's process's page channel (migrate --lazy-pages of a tree): the socket
 * MEMDUMP_LAZY_REMOTE_TREE names for it ("PID:FD,PID:FD..."), or -1. */
int lazy_remote_member_fd(pid_t pid);
/* r's pages-1.img from the source (the root's, or a tree's process's on its own channel):
 * what no lazy VMA takes fetched and checked now. */
int lazy_remote_plan(struct rst *r);
/* A tree's (lazy_remote.c): what member m (or root) reads of its own or an ancestor's
 * remote pages-1.img before anything runs (its memory shared copy-on-write, premapped:
 * premap_restore.c), fetched and checked now. After premap_plan(root). */
int lazy_remote_shared(struct rst *root, struct rst *m);
/* Bytes [off, off + len) of that image present in its file (fetched if not yet); 0 or -errno,
 * lazy_remote_why() saying why. */
int lazy_remote_fetch(struct lazy_remote *lr, uint64_t off, uint64_t len);
const char *lazy_remote_why(const struct lazy_remote *lr);
/* The fds the handler keeps (the socket, the file opened to write), -1 for none. */
void lazy_remote_fds(const struct lazy_remote *lr, int fds[2]);
void lazy_remote_free(struct lazy_remote *lr);

/* A page not to fill (no bytes dumped, or removed since): it reads zeros. */
#define LAZY_NONE		UINT64_MAX
#define LAZY_IMG_SHIFT		52
#define LAZY_PAGE(img, off)	(((uint64_t)(img) << LAZY_IMG_SHIFT) | (off))
#define LAZY_PAGE_IMG(p)	((unsigned int)((p) >> LAZY_IMG_SHIFT))
#define LAZY_PAGE_OFF(p)	((p) & ((1ULL << LAZY_HOT_SHIFT) - 1))
/*
 * A hot page: written since the parent set (its bytes are in the newest
 * set's own pages image of a chain). The background fill takes those first.
 */
#define LAZY_HOT_SHIFT		51
#define LAZY_HOT		(1ULL << LAZY_HOT_SHIFT)
#define LAZY_PAGE_HOT(p)	(((p) & LAZY_HOT) != 0)

/* A lazy range of a process: page i of [start, end) comes from pg[i]. */
struct lazy_seg {
	uint64_t start, end;
	bool huge;		/* 2 MiB filled whole are collapsed into a huge page */
	uint64_t *pg;
};

/* A run whose checksum the handler takes (lazy_check_late(), a chain's parents' late). */
struct lazy_check {
	unsigned int img;
	uint64_t off, len, sum, vaddr;
	bool no_sum;		/* only read (fetched from the source), nothing to compare */
	const char *name;	/* its image, for the message ("parent/pages-1.img": a chain's) */
	/* a run checked block by block as it is served (lazy_proc.blocks): its marks */
	const uint64_t *marks;
	uint64_t nr_marks;
	unsigned int shift;
};

/* One restored process as the handler first knows it. */
struct lazy_proc {
	pid_t pid;
	int sock;		/* the handler's end of the socket its blob sends the uffd over */
	struct lazy_seg *segs;
	size_t nr_segs;
	struct lazy_check *checks;
	size_t nr_checks;
	/* the lazy runs whose blocks are checked as they are served (before UFFDIO_COPY) */
	struct lazy_check *blocks;
	size_t nr_blocks;
	uint64_t hot_pages;	/* of its pages, those LAZY_HOT */
};

/*
 * CRIU's lazy flow: `memdump lazy-pages -D DIR` (criu lazy-pages) waits on
 * DIR/lazy-pages.socket (or --lazy-socket PATH) for the restore --lazy-pages
 * that names it. memdump's page handler serves the pages (it is a child of
 * the restore, which has the plan of every lazy range); the daemon is told
 * who the handler is, then how it ended, and exits with that: 0 once every
 * page is in, 1 if the handler failed or ended without saying (killed).
 * Each message is a struct lazy_daemon_msg and len bytes of text. The daemon
 * speaks first (GREET): a socket that stays silent (a real CRIU's daemon,
 * which waits for userfaultfds) fails the restore before anything runs.
 */
#define LAZY_DAEMON_MAGIC	0x4d444c5aU	/* "MDLZ" */
enum lazy_daemon_kind {
	LAZY_DAEMON_HELLO = 1,	/* value: the handler's pid */
	LAZY_DAEMON_DONE = 2,	/* value: its exit status; the text says how it went */
	LAZY_DAEMON_GREET = 3,	/* the daemon's, on accept; value 1: pages from a page server */
};
#define LAZY_DAEMON_GREET_MS	5000	/* the restore's wait for it */
struct lazy_daemon_msg {
	uint32_t magic, kind;
	int32_t value;
	uint32_t len;		/* at most LAZY_DAEMON_TEXT */
};
#define LAZY_DAEMON_TEXT	1024
#define LAZY_DAEMON_SOCK	"lazy-pages.socket"

/*
 * The restore's side, before anything runs: connected to the daemon at path,
 * or -errno. *remote: the daemon fetches pages-1.img from a lazy dump's page
 * server (GREET's value 1); the restore then connects again for the page
 * channel (lazy_remote.c's protocol), which the daemon passes on.
 */
int lazy_daemon_connect(const char *path, bool *remote);
/* One message to the daemon (text may be NULL). */
int lazy_daemon_send(int fd, enum lazy_daemon_kind kind, int value, const char *text);

/* The handler process's work: returns its exit status. */
int lazy_handler_run(struct lazy_proc *procs, size_t n, struct lazy_source *src);

#endif
