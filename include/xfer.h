/*
 * Image transfer over TCP: the page server (`memdump page-server`, `dump
 * --page-server`) and migration (`memdump migrate`, `migrate-receive`).
 *
 * One stream of messages, each a struct xfer_hdr and len bytes after it:
 *
 *   HELLO   version (4 bytes)          client -> server, first
 *   SET     a directory name           the files from here on go into DIR/name
 *   SUB     a directory name, or ""    the files from here on go into that
 *                                      directory of the current set (made if
 *                                      new: a tree's proc-PID), "" the set's own
 *   FILE    a file name                created (truncated) in the current directory
 *   DATA    raw bytes                  appended to the current file (spliced
 *                                      from the page pipes on the sending side)
 *   LINK    "name\0target"             a symlink (an incremental set's `parent`)
 *   COMMIT  -                          every file written is synced; REPLY
 *   RESTORE flags (4 bytes, or none)   migrate: restore the current set; REPLY.
 *                                      XFER_RESTORE_LAZY: with --lazy-pages, its
 *                                      memory filled from the images here as it
 *                                      runs (none of it left on the source)
 *   SYNC    -                          REPLY once every byte before it is read:
 *                                      the pages spliced with SPLICE_F_GIFT into
 *                                      the socket are the target's own pages
 *                                      until then (and TCP may send them again)
 *   LAZY    size (8 bytes)             migrate --lazy-pages: the current directory's
 *                                      pages-1.img (size bytes) stays on the
 *                                      source; the restore fetches it with GET
 *   GET     offset, length (8 + 8),    receiver -> client after the switch: DATA
 *           then a set's name          with those bytes of that set's pages-1.img
 *                                      (at most XFER_GET_MAX): "" the root's (the
 *                                      LAZY of the set's own directory), "proc-PID"
 *                                      a tree's process's (the LAZY after SUB proc-PID)
 *   DONE    -                          the session ends well (after LAZY: from
 *                                      the receiver, every page fetched)
 *   REPLY   status (4 bytes, 0 or an errno) and a message
 *                                      server -> client
 *
 * A server that loses the connection before DONE (or, for a page server,
 * before COMMIT) removes every file it made: no set that looks complete is
 * left behind on either side. The server answers HELLO (a REPLY), so a
 * client learns before it dumps anything that the peer speaks this stream.
 *
 * With --tls (xfer_tls.c) the stream goes through a GnuTLS session, both
 * sides authenticated by X.509 certificates (CRIU's options and defaults);
 * the kernel has no kTLS here, so the bytes pass through memdump's buffers
 * (no splice into the socket, no sendfile).
 */
#ifndef MEMDUMP_XFER_H
#define MEMDUMP_XFER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define XFER_MAGIC	0x4d445846u	/* "FXDM" */
#define XFER_VERSION	6	/* 2: HELLO is answered; 3: LAZY, GET; 4: SUB; 5: GET names its set;
				 * 6: RESTORE's flags */
#define XFER_RESTORE_LAZY	1u
#define XFER_NAME_MAX	255
#define XFER_GET_MAX	(2ULL << 20)

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
	XFER_LAZY,
	XFER_GET,
	XFER_SUB,
};

struct xfer_hdr {
	uint32_t magic;
	uint32_t cmd;
	uint64_t len;
};

/* --tls and its files, as CRIU's options (NULL: CRIU's default paths). */
struct xfer_tls {
	bool on;		/* --tls */
	const char *cacert;	/* --tls-cacert: only this CA (else the system's and the default) */
	const char *cacrl;	/* --tls-cacrl: required if given (the default only if present) */
	const char *cert;	/* --tls-cert */
	const char *key;	/* --tls-key */
	bool no_cn_verify;	/* --tls-no-cn-verify */
};

struct xfer_tls_session;	/* xfer_tls.c */

/* One end of a connection: its socket, its TLS session (or NULL), whom it reaches. */
struct xfer {
	int fd;
	struct xfer_tls_session *tls;
	char peer[96];		/* "page server 10.1.2.3:1234" */
};

/* Connect to addr:port (TLS when tls->on; tls may be NULL); what names the peer in
 * errors ("page server", "receiver"). HELLO sent and answered. */
int xfer_connect(struct xfer *x, const char *what, const char *addr, int port,
		 const struct xfer_tls *tls);
void xfer_close(struct xfer *x);
/* Whether the bytes must pass through memdump (TLS): no splice, no sendfile into x->fd. */
bool xfer_copies(const struct xfer *x);
/* A header, then payload (NULL when the caller sends the len bytes itself). */
int xfer_send(struct xfer *x, enum xfer_cmd cmd, const void *payload, uint64_t len);
/* The file name in dirfd as FILE + DATA (sendfile: no copy through memdump). */
int xfer_send_file(struct xfer *x, int dirfd, const char *name);
/* Send cmd (COMMIT, RESTORE) and wait for the REPLY: 0, or <0 after fail() with its message. */
int xfer_request(struct xfer *x, enum xfer_cmd cmd);
/* The same with a payload (RESTORE's flags). */
int xfer_request_with(struct xfer *x, enum xfer_cmd cmd, const void *payload, uint64_t len);
/* The rest of a message whose header h was read: a REPLY, as xfer_request() takes it. */
int xfer_reply_body(struct xfer *x, const struct xfer_hdr *h);
/* After err from writing to the socket: fail() naming the peer (its connection lost). */
int xfer_lost(struct xfer *x, int err);

/* The server's side. */
int xfer_listen(const char *addr, int port);
/* The connection accepted on fd (taken: closed on failure), TLS when tls->on; addr is
 * the name the client's certificate must carry (CRIU's: --address), NULL for none. */
int xfer_accept(struct xfer *x, int fd, const char *addr, const struct xfer_tls *tls);
int xfer_read_exact(struct xfer *x, void *buf, size_t len);	/* 0, -EPIPE at EOF, -errno */
int xfer_recv_hdr(struct xfer *x, struct xfer_hdr *h);
int xfer_reply(struct xfer *x, int status, const char *msg);
/* len bytes from the connection into fd_out (splice through a pipe, without TLS). */
int xfer_recv_data(struct xfer *x, int fd_out, uint64_t len);

/* xfer_tls.c: the session over x->fd, made and verified (0, or <0 after fail()); what
 * it sends and receives (bytes, or -errno; 0 at the peer's end of the stream). */
int xfer_tls_start(struct xfer *x, bool server, const char *hostname,
		   const struct xfer_tls *tls);
void xfer_tls_end(struct xfer *x);
ssize_t xfer_tls_send(struct xfer *x, const void *buf, size_t len);
ssize_t xfer_tls_recv(struct xfer *x, void *buf, size_t len);

#endif
