/*
 * CRIU's RPC (criu swrk FD), served by memdump: criu_req in, criu_resp out,
 * one message per SOCK_SEQPACKET packet (images/rpc.proto). rpc.c serves the
 * requests, rpc_msg.c moves the messages, rpc_opts.c turns criu_opts into
 * dump_opts/restore_opts (or refuses them by name), rpc_notify.c sends the
 * NOTIFY messages of the hook points and waits for their answers.
 */
#ifndef MEMDUMP_RPC_H
#define MEMDUMP_RPC_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "dump/dump.h"
#include "image/crypt.h"
#include "mntext.h"
#include "restore/restore.h"
#include "rpc.pb-c.h"

/* The CRIU version reported to VERSION: the interface level memdump speaks. */
#define RPC_CRIU_MAJOR	4
#define RPC_CRIU_MINOR	0
/* A request above this size is refused (runc's are a few hundred bytes; a
 * SOCK_SEQPACKET packet cannot be much larger than net.core.wmem_max). */
#define RPC_MAX_MSG	(128 << 10)

struct rpc_conn {
	int sk;
	pid_t peer;			/* the client (SO_PEERCRED): its fds are named in requests */
};

/* rpc_msg.c: 0 with *req, 1 when the client closed the socket, <0 after fail() */
int rpc_recv(const struct rpc_conn *c, CriuReq **req);
int rpc_send(const struct rpc_conn *c, const CriuResp *resp);
/* The same with fd passed along (SCM_RIGHTS); fd <0: none. */
int rpc_send_fd(const struct rpc_conn *c, const CriuResp *resp, int fd);
const char *rpc_type_name(int type);

/* rpc_notify.c: the hooks (hooks.h) as NOTIFY messages on c */
struct rpc_notifier {
	const struct rpc_conn *c;
	struct hooks hooks;
};
const struct hooks *rpc_notifier_init(struct rpc_notifier *n, const struct rpc_conn *c);

/* rpc_opts.c: what one DUMP, RESTORE or CHECK asks of memdump */
struct rpc_job {
	struct dump_opts dump;
	struct restore_opts restore;
	pid_t restored_pid;		/* restore.pid_out */
	char dir[PATH_MAX];		/* the images directory */
	char work_dir[PATH_MAX];	/* work_dir_fd's, "": none given (stats go there too) */
	char log_path[PATH_MAX];	/* "": stderr */
	int log_level;
	bool notify;			/* notify_scripts */
	struct mnt_ext mnt_ext[MNT_EXT_MAX];	/* ext_mnt (its strings are the request's) */
	int nr_mnt_ext;
	struct img_key key;		/* image_key_fd's: the set is encrypted (crypt.h) */
	bool has_key;
	/* ps: a dump's pages to the page server at ps_addr:ps_port; with lazy_pages (CRIU's
	 * lazy dump) the set whole on disk, its pages served there to a lazy-pages daemon */
	const char *ps_addr;		/* the request's string, or NULL: localhost (any: lazy) */
	int ps_port;			/* 0: no ps */
	bool lazy_dump;
	int status_fd;			/* status_fd, reopened from the client's, or -1 */
};

/* net[INO]:KEY (CRIU's external network namespace: runc's for a netns path, the command
 * line's --external net[..]); 0, or -EINVAL for another form. ino, key may be NULL. */
int parse_ext_net(const char *s, uint64_t *ino, const char **key);

/* Fills job from co (NULL: all defaults) for a request of type; <0 after fail() naming
 * every option memdump cannot honour. */
int rpc_opts_map(const CriuOpts *co, CriuReqType type, const struct rpc_conn *c,
		 struct rpc_job *job);

#endif
