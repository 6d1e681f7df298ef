/*
 * Image transfer over TCP: the page server (`memdump page-server`, `dump
 * --page-server`) and migration (`memdump migrate`, `migrate-receive`).
 *
 * One stream of messages, each a struct xfer_hdr and len bytes after it:
 *
 *   HELLO   version (4 bytes)          client -> server, first
 *   SET     a directory name           the files from here on go into DIR/name
 *   FILE    a file name                created (truncated) in the current directory
 *   DATA    raw bytes                  appended to the current file (spliced
 *                                      from the page pipes on the sending side)
 *   LINK    "name\0target"             a symlink (an incremental set's `parent`)
 *   COMMIT  -                          every file written is synced; REPLY
 *   RESTORE -                          migrate: restore the current set; REPLY
 *   SYNC    -                          REPLY once every byte before it is read:
 *                                      the pages spliced with SPLICE_F_GIFT into
 *                                      the socket are the target's own pages
 *                                      until then (and TCP may send them again)
 *   DONE    -                          the session ends well
 *   REPLY   status (4 bytes, 0 or an errno) and a message
 *                                      server -> client
 *
 * A server that loses the connection before DONE (or, for a page server,
 * before COMMIT) removes every file it made: no set that looks complete is
 * left behind on either side.
 */
#ifndef MEMDUMP_XFER_H
#define MEMDUMP_XFER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define XFER_MAGIC	0x4d445846u	/* "FXDM" */
#define XFER_VERSION	1
#define XFER_NAME_MAX	255

enum xfer_cmd {
	XFER_HELLO = 1,
	XFER_SET,
	XFER_FILE,
	XFER_DATA,
	XFER_LINK,
	XFER_COMMIT,
	XFER_RESTORE,
	XFER_DONE,
	XFER_REPLY,
	XFER_SYNC,
};

struct xfer_hdr {
	uint32_t magic;
	uint32_t cmd;
	uint64_t len;
};

/* The client's end: a connected socket, and whom it reaches (for messages). */
struct xfer {
	int fd;
	char peer[96];		/* "page server 10.1.2.3:1234" */
};

/* Connect to addr:port; what names the peer in errors ("page server", "receiver"). */
int xfer_connect(struct xfer *x, const char *what, const char *addr, int port);
void xfer_close(struct xfer *x);
/* A header, then payload (NULL when the caller sends the len bytes itself). */
int xfer_send(struct xfer *x, enum xfer_cmd cmd, const void *payload, uint64_t len);
/* The file name in dirfd as FILE + DATA (sendfile: no copy through memdump). */
int xfer_send_file(struct xfer *x, int dirfd, const char *name);
/* Send cmd (COMMIT, RESTORE) and wait for the REPLY: 0, or <0 after fail() with its message. */
int xfer_request(struct xfer *x, enum xfer_cmd cmd);
/* After err from writing to the socket: fail() naming the peer (its connection lost). */
int xfer_lost(struct xfer *x, int err);

/* The server's side. */
int xfer_listen(const char *addr, int port);
int xfer_read_exact(int fd, void *buf, size_t len);	/* 0, -EPIPE at EOF, -errno */
int xfer_recv_hdr(int fd, struct xfer_hdr *h);
int xfer_reply(int fd, int status, const char *msg);
/* len bytes from the socket into fd_out (splice through a pipe). */
int xfer_recv_data(int sock, int fd_out, uint64_t len);

#endif
