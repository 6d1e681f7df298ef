/*
 * The command-line layer: main.c parses argv into struct options once and
 * hands it to the command it runs; dump and restore get their own option
 * structs (dump/dump.h, restore/restore.h) built from it, so nothing below
 * src/cli/ knows about the command line. cli may call every layer.
 */
#ifndef MEMDUMP_OPTIONS_H
#define MEMDUMP_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "dump/dump.h"
#include "image/crypt.h"
#include "mntext.h"
#include "restore/restore.h"
#include "xfer.h"

struct options {
	pid_t pid;			/* -t */
	const char *dir;		/* -D */
	const char *shown_dir;		/* what output names the set: -D, when dir is a
					 * sealed set's opened copy (/proc/self/fd/N), or NULL */
	enum dump_mode mode;		/* --mode */
	bool mode_set;			/* given: else a pre-dump's is read (pagelate.c) */
	bool leave_running;		/* --leave-running */
	uint64_t ghost_limit;		/* --ghost-limit */
	bool shell_job;			/* --shell-job */
	bool snapshot;			/* --snapshot */
	bool no_snapshot;		/* --no-snapshot */
	bool overwrite;			/* dump --overwrite: replace a dump DIR holds */
	enum pages_write pages_write;	/* --pages-write */
	struct pz_opts compress;	/* dump --compress[=ALGO[:LEVEL]] */
	const char *stream;		/* dump, restore --stream FD|- */
	struct stream_direct *stream_direct;	/* dump --stream: its pages into it (pack.c) */
	const char *key_file;		/* dump --encrypt, the readers' --decrypt KEYFILE */
	int key_fd;			/* --encrypt-key-fd, --decrypt-key-fd N, or -1 */
	bool encrypt, decrypt;		/* which of them was given */
	struct img_key key;		/* loaded from either (main.c) */
	struct page_feed *feed;	/* restore --decrypt: its pages image fed (image/feed.h) */
	bool tcp_established;		/* --tcp-established */
	bool skip_in_flight;		/* dump --skip-in-flight */
	bool ext_unix_sk;		/* dump --ext-unix-sk */
	const char *prev_dir;		/* --prev-images-dir */
	bool track_mem;			/* --track-mem */
	bool page_server;		/* dump --page-server: pages to --address:--port */
	const char *address;		/* --address (page-server, migrate-receive: to listen on) */
	int port;			/* --port */
	int status_fd;			/* --status-fd: a byte once listening (CRIU's), or -1 */
	const struct hooks *ready;	/* fired at status-ready too (an RPC client's), or NULL */
	struct xfer_tls tls;		/* --tls, --tls-cacert, ... (page server, migrate) */
	const char *to;			/* migrate --to HOST:PORT */
	int pre_dumps;			/* migrate --pre-dumps N, or -1 */
	bool stop;			/* track --stop */
	bool detach;			/* restore -d */
	const char *pidfile;		/* restore --pidfile */
	struct ns_join join_ns[4];	/* restore --join-ns KIND:PATH */
	int nr_join_ns;
	struct veth_ext veth_ext[8];	/* restore --external veth[IN]:OUT[@BRIDGE] */
	int nr_veth_ext;
	struct mnt_ext mnt_ext[MNT_EXT_MAX];	/* --external mnt[KEY]:VALUE */
	int nr_mnt_ext;
	const char *freeze_cgroup;	/* dump --freeze-cgroup */
	uint64_t ext_net_ino;		/* dump --external net[INO]:KEY */
	const char *ext_net_key;
	struct tty_ext ext_tty;		/* dump --external tty[RDEV:DEV] */
	struct cg_root_map cg_root_map[16];	/* restore --cgroup-root [CTRL:]PATH */
	int nr_cg_root_map;
	int cg_mode;			/* --manage-cgroups[=MODE] (enum cg_mode) */
	struct inherit_fd inherit_fd[8];	/* restore --inherit-fd fd[N]:KEY */
	int nr_inherit_fd;
	const char *root;		/* restore --root */
	bool lazy_pages;		/* restore --lazy-pages */
	bool no_lazy_pages;		/* migrate --no-lazy-pages: every page before the switch */
	const char *lazy_socket;	/* restore, lazy-pages --lazy-socket PATH */
	int lazy_timeout;		/* migrate-receive --lazy-timeout S: a page the source does
					 * not send in S s kills the restored process (0: default) */
	bool tcp_close;			/* restore --tcp-close */
	bool sibling;			/* restore --restore-sibling */
	int copies;			/* restore --copies N: N copies sharing the memory, 0 */
	bool json;			/* show --json */
	bool fd_kinds;			/* check --fd-kinds */
	bool progress;			/* progress bar (default: when stderr is a tty) */
	int verbosity;			/* -v */
	const char *log_file;		/* --log-file */
	const char *action_scripts[8];	/* --action-script, in order */
	int nr_action_scripts;
	struct dump_trace *trace;	/* dump: shared with the supervisor (worker.c) */
	int argc;			/* what is left after the options */
	char **argv;
};

int cmd_dump(const struct options *o);
int cmd_pre_dump(const struct options *o);
int cmd_track(const struct options *o);
int cmd_restore(const struct options *o);
int cmd_show(const struct options *o);
int cmd_read_mem(const struct options *o);
int cmd_check(const struct options *o);
int cmd_verify(const struct options *o);
/* verify.c: the set in dir (and a tree's sets in it) checked whole: 0 or <0 after fail() */
int verify_image_set(const char *dir, size_t *procs, size_t *images, size_t *runs);
int cmd_pack(const struct options *o);		/* pack.c: memdump pack DIR > FILE */
int cmd_unpack(const struct options *o);	/* memdump unpack DIR < FILE */
int cmd_swrk(const struct options *o);		/* rpc.c: CRIU's RPC on fd argv[0] */
int cmd_page_server(const struct options *o);	/* pageserver.c */
int cmd_migrate_receive(const struct options *o);	/* migrate.c */
int cmd_lazy_pages(const struct options *o);	/* lazy_daemon.c */
int cmd_migrate(const struct options *o);

/* check.c: every probe, one line each on out (NULL: the log); <0 when a required one is missing */
int check_features(FILE *out);

#endif
