/* memdump: command-line parsing and dispatch. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "xfer.h"
#include "cli/action_script.h"
#include "cli/criu_cli.h"
#include "cli/lazy_server.h"
#include "cli/options.h"
#include "cli/pack.h"
#include "cli/rpc.h"
#include "dump/dump.h"
#include "cli/worker.h"
#include "image/feed.h"
#include "mem/lazy.h"
#include "restore/restore.h"
#include "ns/cgroups.h"
#include "track/track.h"


static const char usage[] =
	"usage: memdump COMMAND [options]\n"
	"\n"
	"  dump -t PID -D DIR [--mode splice|read|mem] [--leave-running] [--tcp-established | --tcp-close]\n"
	"       [--pages-write auto|cache|direct] [--no-snapshot] [--ghost-limit SIZE] [--shell-job]\n"
	"       [--prev-images-dir PDIR [--track-mem]] [--freeze-cgroup CGROUP] [--overwrite]\n"
	"       [--external mnt[POINT]:KEY|net[INO]:KEY|tty[RDEV:DEV]]\n"
	"       [--compress[=lz4|zstd[:LEVEL]]] [--stream FD|- instead of -D DIR]\n"
	"        --compress: pages-1.img compressed (lz4 by default); --stream: the set\n"
	"        written to FD (-: stdout) as one stream (see pack)\n"
	"       [--encrypt KEYFILE | --encrypt-key-fd N]\n"
	"        --encrypt: every image sealed (AES-256-GCM) with the 32-byte key;\n"
	"        readers (restore, show, verify, read-mem, unpack) take --decrypt KEYFILE\n"
	"        or --decrypt-key-fd N\n"
	"       [--page-server --address A --port P] [--lazy-pages --port P [--address A]]\n"
	"        checkpoint process PID into DIR; the process is killed afterwards\n"
	"        unless --leave-running is given (a copy-on-write snapshot then keeps it\n"
	"        frozen only briefly; --no-snapshot: frozen until every page is written);\n"
	"        --tcp-established dumps established\n"
	"        TCP connections (TCP_REPAIR, the network locked until the restore);\n"
	"        --tcp-close saves them closed (the restore brings them back shut down);\n"
	"        --skip-in-flight: a listener's connections not yet accepted are\n"
	"        dropped (their clients see a reset), not refused; --ext-unix-sk: a\n"
	"        datagram socket connected to a named socket outside is connected\n"
	"        to that name again;\n"
	"        deleted files it holds are saved up to --ghost-limit bytes each\n"
	"        (default 1M); --shell-job: the job's controlling terminal is given\n"
	"        back on restore (restore --shell-job: memdump's own);\n"
	"        --prev-images-dir (relative to DIR): write only the pages written since\n"
	"        PDIR was dumped; --track-mem: go on tracking them (with --leave-running);\n"
	"        --external mnt[POINT]:KEY: the bind mount at POINT is restored from the\n"
	"        path restore's --external mnt[KEY]:PATH gives; --freeze-cgroup: the\n"
	"        tree is held by that cgroup's freezer while it is seized (as CRIU's);\n"
	"        --external tty[RDEV:DEV] (hex): that pty slave's master is outside (a\n"
	"        runtime's), the slave is dumped alone; --overwrite: a dump DIR already\n"
	"        holds is removed first (as CRIU does; without it, DIR must hold none)\n"
	"        --page-server: pages-1.img and the pagemap go to a memdump page-server\n"
	"        at A:P (spliced into the socket), the other images to DIR; with the\n"
	"        TLS options below, through TLS (read mode: no splice); --lazy-pages:\n"
	"        once DIR is whole, its pages-1.img is served at A:P to a lazy-pages\n"
	"        --page-server until every byte is fetched (CRIU's lazy migration)\n"
	"  pre-dump -t PID -D DIR [--prev-images-dir PDIR] [--mode splice|read|mem]\n"
	"        dump the memory of PID (and of the processes below it), leave it running\n"
	"        and track the pages it writes; read (the default) and mem: its pages\n"
	"        read after the thaw, splice: while it is frozen\n"
	"  track --stop -t PID       end the memory tracking of PID\n"
	"  page-server -D DIR --port P [--address A] [--status-fd FD]\n"
	"        receive one dump's pages (dump or pre-dump --page-server --address A\n"
	"        --port P): pages-1.img and the pagemap into DIR, the other images stay\n"
	"        in the dump's -D; exits once the dump is done (as CRIU's); with\n"
	"        --lazy-pages: serve DIR/pages-1.img to a lazy-pages --page-server\n"
	"  migrate -t PID --to HOST:PORT [--pre-dumps N] [-D WORKDIR] [--tcp-established]\n"
	"          [--lazy-pages | --no-lazy-pages]\n"
	"        move PID to a migrate-receive on HOST: N pre-dumps (default: until\n"
	"        they send less than 16 MiB or stop shrinking, at most 8) while it\n"
	"        runs, the final dump frozen, restored there with --lazy-pages from the\n"
	"        images sent (its memory filled as it runs); killed here once it runs\n"
	"        there. --lazy-pages: the final pages stay here, fetched as it runs\n"
	"        (CRIU's post-copy); --no-lazy-pages: all its memory there before it runs\n"
	"  migrate-receive -D DIR --port P [--address A] [--status-fd FD] [--lazy-timeout S]\n"
	"        receive one migration into DIR and restore it (detached); after a\n"
	"        migrate --lazy-pages, a page the source does not send within S s\n"
	"        (default 30) kills the restored process, naming the page\n"
	"  TLS options (dump/pre-dump --page-server, page-server, migrate, migrate-receive):\n"
	"       [--tls [--tls-cacert FILE] [--tls-cacrl FILE] [--tls-cert FILE] [--tls-key FILE]\n"
	"        [--tls-no-cn-verify]]\n"
	"        as CRIU's: both sides present an X.509 certificate and check the peer's\n"
	"        (CA, CRL, dates, name: the address; not with --tls-no-cn-verify)\n"
	"  restore -D DIR [-d] [--pidfile FILE] [--shell-job] [--join-ns uts|ipc|net|mnt:PATH]\n"
	"          [--root DIR] [--restore-sibling] [--lazy-pages [--lazy-socket PATH]]\n"
	"          [--tcp-close] [--copies N]\n"
	"          [--external veth[IN]:OUT[@BRIDGE]] [--external macvlan[IN]:LOWER]\n"
	"          [--cgroup-root [CTRL:]PATH] [--inherit-fd fd[N]:pipe:[INO]|tty[RDEV:DEV]]\n"
	"          [--manage-cgroups[=soft|full|strict|ignore]]\n"
	"        recreate the process (tree) dumped in DIR with its PIDs; wait for it and\n"
	"        exit with its status, or with -d print its PID and return; --join-ns:\n"
	"        into that existing namespace instead of a new one; --root: the root of\n"
	"        a dumped mount namespace (a container's rootfs) is DIR; --restore-sibling:\n"
	"        the process is memdump's parent's child (memdump prints its PID, returns);\n"
	"        --copies N: N copies, each in a PID namespace of its own with the dumped\n"
	"        PID, sharing the memory read once (one process; prints their PIDs);\n"
	"        --external veth[..]: the veth IN's other end is made as OUT (attached to\n"
	"        BRIDGE) in memdump's network namespace; --external macvlan[..]: the\n"
	"        macvlan IN is made on LOWER there (default: its dumped lower device);\n"
	"        --external mnt[KEY]:PATH: the\n"
	"        bind mount dumped with KEY (or at mount point KEY) is bound from PATH;\n"
	"        --manage-cgroups[=soft|full|strict|ignore]: cgroups missing here are\n"
	"        made from cgroup.img (soft: properties on the made ones only; full: on\n"
	"        all; strict: none may exist; ignore: none made or joined);\n"
	"        --cgroup-root: the root's cgroup (of CTRL's hierarchy, or of every other)\n"
	"        is PATH, the others' below it; --inherit-fd: the dumped pipe INO is\n"
	"        memdump's fd N (as CRIU's, runc's for a container's stdio); the pty\n"
	"        slave dumped with --external tty[RDEV:DEV] is memdump's terminal fd N;\n"
	"        --lazy-socket: tell the lazy-pages daemon there how the page filling went\n"
	"  lazy-pages -D DIR [--lazy-socket PATH] [-d [--pidfile FILE]] [--status-fd FD]\n"
	"          [--page-server --address A --port P [TLS options]]\n"
	"        CRIU's lazy-pages daemon: wait on PATH (DIR/lazy-pages.socket) for a\n"
	"        restore --lazy-pages --lazy-socket PATH, exit once its memory is all in\n"
	"        (0) or its page handler failed (1); --page-server: pages-1.img from\n"
	"        the dump --lazy-pages (page-server --lazy-pages) at A:P\n"
	"  show -D DIR [--json]      what a dump holds\n"
	"  read-mem -D DIR ADDR LEN  write the dumped memory at ADDR to stdout\n"
	"  verify -D DIR             check every image against the inventory's checksums\n"
	"  pack DIR > FILE           the image set DIR as one stream\n"
	"  unpack DIR < FILE         a stream into DIR (which must not exist, or be empty),\n"
	"                            checked whole first; restore --stream FD|- restores\n"
	"                            a stream (unpacked into a private temporary directory)\n"
	"  check [--fd-kinds]        kernel features and capabilities memdump needs;\n"
	"                            --fd-kinds: the kinds of open file it dumps\n"
	"  swrk FD                   serve CRIU's RPC on the SOCK_SEQPACKET socket FD\n"
	"                            (also when run as 'criu', for runc --criu)\n"
	"\n"
	"common options: -v N (0-4, default 2), --log-file FILE, --no-progress\n"
	"dump, restore: --action-script FILE (run at each hook point, as CRIU's)\n";

/* What a dump is asked for; as holds the action scripts while it runs. */
static struct dump_opts dump_opts_of(const struct options *o, struct action_scripts *as)
{
	return (struct dump_opts){
		.pid = o->pid, .dir = o->dir, .mode = o->mode,
		.leave_running = o->leave_running, .tcp_established = o->tcp_established,
		.tcp_close = o->tcp_close, .skip_in_flight = o->skip_in_flight,
		.ext_unix_sk = o->ext_unix_sk,
		.progress = o->progress, .trace = o->trace,
		.pages_write = o->stream && o->pages_write == PAGES_AUTO ? PAGES_CACHE : o->pages_write,
		.staged = o->stream != NULL, .stream = o->stream_direct, .compress = o->compress,
		.snapshot = o->snapshot, .no_snapshot = o->no_snapshot,
		.ghost_limit = o->ghost_limit, .shell_job = o->shell_job,
		.prev_dir = o->prev_dir, .track_mem = o->track_mem,
		.hooks = action_scripts_init(as, o->action_scripts, o->nr_action_scripts, o->dir),
		.mnt_ext = o->mnt_ext, .nr_mnt_ext = o->nr_mnt_ext,
		.freeze_cgroup = o->freeze_cgroup,
		.ext_net_ino = o->ext_net_ino, .ext_net_key = o->ext_net_key,
		.ext_tty = o->ext_tty, .overwrite = o->overwrite,
		.key = o->encrypt ? &o->key : NULL,
	};
}

/* A dump, to a page server with --page-server (its pages and pagemap go there). */
static int dump_with(const struct options *o, bool pre_dump)
{
	struct action_scripts as;
	struct dump_opts d = dump_opts_of(o, &as);
	struct xfer x = { .fd = -1 };
	int ret = 0;

	d.pre_dump = pre_dump;
	if (pre_dump && !o->mode_set)
		d.mode = MODE_READ;	/* its pages read after the thaw (pagelate.c) */
	if (o->decrypt)
		return fail(-EINVAL, "--decrypt is a reader's (restore, show, verify, read-mem, "
			    "unpack): a dump takes --encrypt KEYFILE");
	if (o->encrypt && o->page_server)
		return fail(-EOPNOTSUPP, "--encrypt with --page-server: the pages would go to the "
			    "page server unencrypted");
	if (o->encrypt && o->overwrite)
		return fail(-EOPNOTSUPP, "--encrypt with --overwrite: remove the old set first");
	if (o->page_server && !o->port)
		return fail(-EINVAL, "--page-server needs --address A --port P");
	if (o->lazy_pages && (pre_dump || o->page_server || !o->port || o->encrypt))
		return fail(-EINVAL, "%s", pre_dump ? "pre-dump --lazy-pages: only a dump leaves its "
			    "pages served to a lazy restore" : o->page_server ? "--lazy-pages and "
			    "--page-server: a lazy dump serves its pages itself (--port P)" :
			    o->encrypt ? "--lazy-pages with --encrypt: a lazy restore of an "
			    "encrypted set is not supported" : "dump --lazy-pages needs --port P "
			    "(and --address A): its pages are served there to a lazy restore");
	if (o->tls.on && !o->page_server && !o->lazy_pages)
		return fail(-EINVAL, "--tls is for the page server's connection: with --page-server");
	d.xfer = o->page_server ? &x : NULL;
	ret = dump_check_opts(&d);	/* before the page server hears of it */
	if (!ret && o->page_server)
		ret = xfer_connect(&x, "page server", o->address ? o->address : "localhost",
				   o->port, &o->tls);
	if (!ret)
		ret = dump_run(&d);
	xfer_close(&x);
	return ret;
}

int cmd_dump(const struct options *o)
{
	int ret;

	if (o->tcp_close && o->tcp_established)
		return fail(-EINVAL, "--tcp-close and --tcp-established: a dump either keeps "
			    "connections or saves them closed");
	ret = dump_with(o, false);
	/* CRIU's lazy dump: the set is whole on disk; its pages served until fetched */
	return ret || !o->lazy_pages ? ret : lazy_serve(o, o->dir);
}

int cmd_pre_dump(const struct options *o)
{
	return dump_with(o, true);
}

int cmd_track(const struct options *o)
{
	if (!o->stop || !o->pid)
		return fail(-EINVAL, "usage: memdump track --stop -t PID");
	return track_stop_run(o->pid);
}

int cmd_restore(const struct options *o)
{
	if (o->ext_tty.one)
		return fail(-EINVAL, "--external tty[..] is a dump's: a restore gives the terminal "
			    "with --inherit-fd fd[N]:tty[RDEV:DEV]");

	struct action_scripts as;
	int ret;
	struct restore_opts r = {
		.dir = o->dir, .detach = o->detach, .pidfile = o->pidfile, .shell_job = o->shell_job,
		.hooks = action_scripts_init(&as, o->action_scripts, o->nr_action_scripts,
				       o->shown_dir ? o->shown_dir : o->dir),
		.nr_join_ns = o->nr_join_ns, .root = o->root, .sibling = o->sibling, .copies = o->copies,
		.lazy = o->lazy_pages, .tcp_close = o->tcp_close, .feed = o->feed, .mnt_ext = o->mnt_ext, .nr_mnt_ext = o->nr_mnt_ext,
	};

	memcpy(r.join_ns, o->join_ns, sizeof(r.join_ns));
	memcpy(r.veth_ext, o->veth_ext, sizeof(r.veth_ext));
	memcpy(r.cg_root_map, o->cg_root_map, sizeof(r.cg_root_map));
	r.nr_cg_root_map = o->nr_cg_root_map;
	r.cg_mode = o->cg_mode;
	memcpy(r.inherit_fd, o->inherit_fd, sizeof(r.inherit_fd));
	r.nr_inherit_fd = o->nr_inherit_fd;
	r.nr_veth_ext = o->nr_veth_ext;
	if (o->lazy_socket && !o->lazy_pages)
		return fail(-EINVAL, "--lazy-socket is for restore --lazy-pages");
	ret = o->lazy_socket ? lazy_daemon_join(o->lazy_socket, &r) : 0;
	if (!ret)
		ret = restore_run(&r);
	lazy_daemon_leave(&r);
	return ret;
}

static const struct command {
	const char *name;
	int (*run)(const struct options *o);
	const char *failure;	/* prefix of the one-line error */
	bool in_worker;		/* see worker.c */
} commands[] = {
	{ "dump", cmd_dump, "dump failed", true },
	{ "pre-dump", cmd_pre_dump, "pre-dump failed", true },
	{ "track", cmd_track, "track failed", true },
	{ "restore", cmd_restore, "restore failed", false },
	{ "show", cmd_show, "show failed", false },
	{ "read-mem", cmd_read_mem, "read-mem failed", false },
	{ "check", cmd_check, "check failed", false },
	{ "verify", cmd_verify, "verify failed", false },
	{ "pack", cmd_pack, "pack failed", false },
	{ "unpack", cmd_unpack, "unpack failed", false },
	{ "swrk", cmd_swrk, "swrk failed", false },
	{ "page-server", cmd_page_server, "page-server failed", false },
	{ "migrate-receive", cmd_migrate_receive, "migrate-receive failed", false },
	{ "migrate", cmd_migrate, "migrate failed", true },
	{ "lazy-pages", cmd_lazy_pages, "lazy-pages failed", false },
};

static int parse_mode(struct options *opts, const char *s)
{
	for (int m = MODE_SPLICE; m <= MODE_MEM; m++) {
		if (!strcmp(s, mode_name(m))) {
			opts->mode = m;
			opts->mode_set = true;
			return 0;
		}
	}
	return -1;
}

static int parse_pages_write(struct options *opts, const char *s)
{
	static const char *const names[] = { "auto", "cache", "direct" };

	for (int w = PAGES_AUTO; w <= PAGES_DIRECT; w++) {
		if (!strcmp(s, names[w])) {
			opts->pages_write = w;
			return 0;
		}
	}
	return -1;
}

/* --encrypt KEYFILE, --encrypt-key-fd N and the --decrypt ones: one of them. */
static int parse_key_option(struct options *opts, bool encrypt, bool fd, const char *arg)
{
	char *end;

	if (opts->encrypt || opts->decrypt)
		return -1;
	opts->encrypt = encrypt;
	opts->decrypt = !encrypt;
	if (!fd) {
		opts->key_file = arg;
		return 0;
	}
	opts->key_fd = (int)strtol(arg, &end, 10);
	return *end || opts->key_fd < 0 ? -1 : 0;
}

/* KIND:PATH, split in place (argv is ours). */
static int parse_join_ns(struct options *opts, char *s)
{
	char *colon = strchr(s, ':');

	if (!colon || colon == s || !colon[1] || opts->nr_join_ns == (int)ARRAY_SIZE(opts->join_ns))
		return -1;
	*colon = '\0';
	opts->join_ns[opts->nr_join_ns++] = (struct ns_join){ s, colon + 1 };
	return 0;
}

/* [CTRL:]PATH (CRIU's --cgroup-root), split in place: no controller, every other hierarchy. */
static int parse_cgroup_root(struct options *opts, char *s)
{
	char *slash = strchr(s, '/'), *colon = strchr(s, ':');
	struct cg_root_map *m = &opts->cg_root_map[opts->nr_cg_root_map];

	if (!slash || opts->nr_cg_root_map == (int)ARRAY_SIZE(opts->cg_root_map) ||
	    (colon && colon > slash) || (!colon && slash != s) || (colon && colon + 1 != slash))
		return -1;
	if (colon)
		*colon = '\0';
	*m = (struct cg_root_map){ colon ? s : NULL, slash };
	opts->nr_cg_root_map++;
	return 0;
}

/* fd[N]:pipe:[INO] (CRIU's --inherit-fd), split in place. */
static int parse_inherit_fd(struct options *opts, char *s)
{
	char *end;
	long n = strncmp(s, "fd[", 3) ? -1 : strtol(s + 3, &end, 10);

	if (n < 0 || n > INT32_MAX || end == s + 3 || strncmp(end, "]:", 2) || !end[2] ||
	    opts->nr_inherit_fd == (int)ARRAY_SIZE(opts->inherit_fd))
		return -1;
	opts->inherit_fd[opts->nr_inherit_fd++] = (struct inherit_fd){ end + 2, (int)n };
	return 0;
}

/* mnt[KEY]:VALUE (CRIU's --external form for bind mounts), split in place. */
static int parse_external_mnt(struct options *opts, char *s)
{
	char *key = s + 4, *close = strrchr(s, ']');

	if (!close || close == key || close[1] != ':' || !close[2] ||
	    opts->nr_mnt_ext == MNT_EXT_MAX)
		return -1;
	*close = '\0';
	opts->mnt_ext[opts->nr_mnt_ext++] = (struct mnt_ext){ key, close + 2, false };
	return 0;
}

/* tty[RDEV:DEV] (CRIU's key of a terminal: st_rdev and st_dev of a pty slave, in hex). */
static int parse_external_tty(struct options *opts, const char *s)
{
	unsigned int rdev, dev;
	int n = 0;

	if (sscanf(s, "tty[%x:%x]%n", &rdev, &dev, &n) != 2 || !n || s[n])
		return -1;
	opts->ext_tty = (struct tty_ext){ .one = true, .rdev = rdev, .dev = dev };
	return 0;
}

/* macvlan[IN]:LOWER (CRIU's form): the macvlan IN made on LOWER, split in place. */
static int parse_external_macvlan(struct options *opts, char *s)
{
	char *in = s + 8, *close = strchr(s, ']');

	if (!close || close == in || close[1] != ':' || !close[2] ||
	    opts->nr_veth_ext == (int)ARRAY_SIZE(opts->veth_ext))
		return -1;
	*close = '\0';
	if (strlen(in) >= IF_NAMESIZE || strlen(close + 2) >= IF_NAMESIZE)
		return -1;
	opts->veth_ext[opts->nr_veth_ext++] = (struct veth_ext){ in, close + 2, NULL, true };
	return 0;
}

/* veth[IN]:OUT[@BRIDGE], macvlan[IN]:LOWER, mnt[KEY]:VALUE, net[INO]:KEY or tty[RDEV:DEV]
 * (CRIU's --external forms), split in place. */
static int parse_external(struct options *opts, char *s)
{
	char *in = s + 5, *close = strchr(s, ']'), *at;

	if (!strncmp(s, "macvlan[", 8))
		return parse_external_macvlan(opts, s);
	if (!strncmp(s, "mnt[", 4))
		return parse_external_mnt(opts, s);
	if (!strncmp(s, "tty[", 4))	/* one only */
		return opts->ext_tty.one ? -1 : parse_external_tty(opts, s);
	if (!strncmp(s, "net[", 4))	/* one only */
		return opts->ext_net_ino ? -1 : parse_ext_net(s, &opts->ext_net_ino,
							       &opts->ext_net_key);
	if (strncmp(s, "veth[", 5) || !close || close == in || close[1] != ':' || !close[2] ||
	    opts->nr_veth_ext == (int)ARRAY_SIZE(opts->veth_ext))
		return -1;
	*close = '\0';
	at = strchr(close + 2, '@');
	if (at && !at[1])
		return -1;
	if (at)
		*at = '\0';
	if (strlen(in) >= IF_NAMESIZE || strlen(close + 2) >= IF_NAMESIZE || !close[2])
		return -1;
	opts->veth_ext[opts->nr_veth_ext++] = (struct veth_ext){ in, close + 2, at ? at + 1 : NULL, false };
	return 0;
}

/* The usage of one command: its lines of usage[], then the common options. */
static void print_command_usage(const char *name)
{
	size_t n = strlen(name);
	const char *line = strchr(usage, '\n') + 1, *common = strstr(usage, "\ncommon options:");
	bool in = false;

	printf("usage: memdump %s [options]\n\n", name);
	for (; line < common; line = strchr(line, '\n') + 1) {
		if (line[0] == ' ' && line[1] == ' ' && line[2] != ' ')
			in = !strncmp(line + 2, name, n) && line[2 + n] == ' ';
		if (in)
			fwrite(line, 1, strchr(line, '\n') + 1 - line, stdout);
	}
	fputs(common, stdout);
}

static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "memdump: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (memdump --help for usage)\n");
	return 2;
}

/* "4096", "64K", "1M", "2G" */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	int shift = 0;

	if (end == s || *s == '-')
		return -1;
	if (*end)
		shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20 :
			*end == 'G' || *end == 'g' ? 30 : -1;
	if (shift < 0 || (*end && end[1]) || v > (~0ULL >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_options(struct options *opts, int argc, char **argv)
{
	enum { OPT_MODE = 256, OPT_LEAVE, OPT_TCP_EST, OPT_PIDFILE, OPT_JSON, OPT_FD_KINDS, OPT_LOGFILE,
	       OPT_NOPROGRESS, OPT_PAGES_WRITE, OPT_SNAPSHOT, OPT_GHOST, OPT_SHELL_JOB,
	       OPT_ACTION_SCRIPT, OPT_PREV, OPT_TRACK_MEM, OPT_STOP, OPT_JOIN_NS, OPT_ROOT,
	       OPT_SIBLING, OPT_COPIES, OPT_EXTERNAL, OPT_FREEZE_CG, OPT_CG_ROOT, OPT_INHERIT_FD,
	       OPT_OVERWRITE, OPT_NO_SNAPSHOT, OPT_CG_MODE, OPT_CG_YARD, OPT_COMPRESS, OPT_STREAM,
	       OPT_PAGE_SERVER, OPT_ADDRESS, OPT_PORT, OPT_STATUS_FD, OPT_TO, OPT_PRE_DUMPS,
	       OPT_LAZY_PAGES, OPT_TCP_CLOSE, OPT_SKIP_IN_FLIGHT, OPT_EXT_UNIX_SK, OPT_ENCRYPT, OPT_ENCRYPT_FD,
	       OPT_DECRYPT, OPT_DECRYPT_FD, OPT_TLS, OPT_TLS_CACERT, OPT_TLS_CACRL, OPT_TLS_CERT,
	       OPT_TLS_KEY, OPT_TLS_NO_CN, OPT_LAZY_TIMEOUT, OPT_LAZY_SOCKET,
	       OPT_NO_LAZY_PAGES };
	static const struct option longopts[] = {
		{ "tree", required_argument, NULL, 't' },
		{ "images-dir", required_argument, NULL, 'D' },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "leave-running", no_argument, NULL, OPT_LEAVE },
		{ "ghost-limit", required_argument, NULL, OPT_GHOST },
		{ "shell-job", no_argument, NULL, OPT_SHELL_JOB },
		{ "pages-write", required_argument, NULL, OPT_PAGES_WRITE },
		{ "snapshot", no_argument, NULL, OPT_SNAPSHOT },
		{ "compress", optional_argument, NULL, OPT_COMPRESS },
		{ "stream", required_argument, NULL, OPT_STREAM },
		{ "encrypt", required_argument, NULL, OPT_ENCRYPT },
		{ "encrypt-key-fd", required_argument, NULL, OPT_ENCRYPT_FD },
		{ "decrypt", required_argument, NULL, OPT_DECRYPT },
		{ "decrypt-key-fd", required_argument, NULL, OPT_DECRYPT_FD },
		{ "overwrite", no_argument, NULL, OPT_OVERWRITE },
		{ "no-snapshot", no_argument, NULL, OPT_NO_SNAPSHOT },
		{ "tcp-established", no_argument, NULL, OPT_TCP_EST },
		{ "skip-in-flight", no_argument, NULL, OPT_SKIP_IN_FLIGHT },
		{ "ext-unix-sk", optional_argument, NULL, OPT_EXT_UNIX_SK },
		{ "prev-images-dir", required_argument, NULL, OPT_PREV },
		{ "track-mem", no_argument, NULL, OPT_TRACK_MEM },
		{ "page-server", no_argument, NULL, OPT_PAGE_SERVER },
		{ "address", required_argument, NULL, OPT_ADDRESS },
		{ "port", required_argument, NULL, OPT_PORT },
		{ "status-fd", required_argument, NULL, OPT_STATUS_FD },
		{ "tls", no_argument, NULL, OPT_TLS },
		{ "tls-cacert", required_argument, NULL, OPT_TLS_CACERT },
		{ "tls-cacrl", required_argument, NULL, OPT_TLS_CACRL },
		{ "tls-cert", required_argument, NULL, OPT_TLS_CERT },
		{ "tls-key", required_argument, NULL, OPT_TLS_KEY },
		{ "tls-no-cn-verify", no_argument, NULL, OPT_TLS_NO_CN },
		{ "to", required_argument, NULL, OPT_TO },
		{ "pre-dumps", required_argument, NULL, OPT_PRE_DUMPS },
		{ "stop", no_argument, NULL, OPT_STOP },
		{ "detach", no_argument, NULL, 'd' },
		{ "pidfile", required_argument, NULL, OPT_PIDFILE },
		{ "join-ns", required_argument, NULL, OPT_JOIN_NS },
		{ "external", required_argument, NULL, OPT_EXTERNAL },
		{ "root", required_argument, NULL, OPT_ROOT },
		{ "freeze-cgroup", required_argument, NULL, OPT_FREEZE_CG },
		{ "cgroup-root", required_argument, NULL, OPT_CG_ROOT },
		{ "manage-cgroups", optional_argument, NULL, OPT_CG_MODE },
		{ "cgroup-yard", required_argument, NULL, OPT_CG_YARD },
		{ "inherit-fd", required_argument, NULL, OPT_INHERIT_FD },
		{ "restore-sibling", no_argument, NULL, OPT_SIBLING },
		{ "copies", required_argument, NULL, OPT_COPIES },
		{ "lazy-pages", no_argument, NULL, OPT_LAZY_PAGES },
		{ "no-lazy-pages", no_argument, NULL, OPT_NO_LAZY_PAGES },
		{ "lazy-timeout", required_argument, NULL, OPT_LAZY_TIMEOUT },
		{ "lazy-socket", required_argument, NULL, OPT_LAZY_SOCKET },
		{ "tcp-close", no_argument, NULL, OPT_TCP_CLOSE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "fd-kinds", no_argument, NULL, OPT_FD_KINDS },
		{ "log-file", required_argument, NULL, OPT_LOGFILE },
		{ "no-progress", no_argument, NULL, OPT_NOPROGRESS },
		{ "action-script", required_argument, NULL, OPT_ACTION_SCRIPT },
		{ "verbose", required_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char *end;
	int c;

	opterr = 0;	/* one line of our own for an unknown option */
	opts->progress = isatty(STDERR_FILENO);
	while ((c = getopt_long(argc, argv, "+t:D:dv:h", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			opts->pid = strtol(optarg, &end, 10);
			if (*end || opts->pid <= 0)
				return bad_usage("bad PID '%s'", optarg);
			break;
		case 'D':
			opts->dir = optarg;
			break;
		case OPT_MODE:
			if (parse_mode(opts, optarg))
				return bad_usage("unknown mode '%s' (splice, read or mem)", optarg);
			break;
		case OPT_LEAVE:
			opts->leave_running = true;
			break;
		case OPT_SHELL_JOB:
			opts->shell_job = true;
			break;
		case OPT_GHOST:
			if (parse_size(optarg, &opts->ghost_limit))
				return bad_usage("bad size '%s' (bytes, or with K, M, G)", optarg);
			break;
		case OPT_PAGES_WRITE:
			if (parse_pages_write(opts, optarg))
				return bad_usage("unknown --pages-write '%s' (auto, cache or direct)",
						 optarg);
			break;
		case OPT_SNAPSHOT:
			opts->snapshot = true;
			break;
		case OPT_COMPRESS:
			if (pz_parse(optarg, &opts->compress))
				return bad_usage("unknown --compress '%s' (lz4, zstd, zstd:LEVEL)",
						 optarg);
			break;
		case OPT_STREAM:
			opts->stream = optarg;
			break;
		case OPT_ENCRYPT:
		case OPT_ENCRYPT_FD:
		case OPT_DECRYPT:
		case OPT_DECRYPT_FD:
			if (parse_key_option(opts, c == OPT_ENCRYPT || c == OPT_ENCRYPT_FD,
					     c == OPT_ENCRYPT_FD || c == OPT_DECRYPT_FD, optarg))
				return bad_usage("%s", "one key: --encrypt KEYFILE, --encrypt-key-fd N, "
						 "--decrypt KEYFILE or --decrypt-key-fd N");
			break;
		case OPT_OVERWRITE:
			opts->overwrite = true;
			break;
		case OPT_NO_SNAPSHOT:
			opts->no_snapshot = true;
			break;
		case OPT_TCP_EST:
			opts->tcp_established = true;
			break;
		case OPT_SKIP_IN_FLIGHT:
			opts->skip_in_flight = true;
			break;
		case OPT_EXT_UNIX_SK:
			if (optarg)
				return bad_usage("--ext-unix-sk takes no inodes here: it applies to "
						 "every datagram peer outside the dump%s", "");
			opts->ext_unix_sk = true;
			break;
		case OPT_PREV:
			opts->prev_dir = optarg;
			break;
		case OPT_TRACK_MEM:
			opts->track_mem = true;
			break;
		case OPT_PAGE_SERVER:
			opts->page_server = true;
			break;
		case OPT_ADDRESS:
			opts->address = optarg;
			break;
		case OPT_PORT:
			opts->port = strtol(optarg, &end, 10);
			if (*end || opts->port <= 0 || opts->port > 65535)
				return bad_usage("bad port '%s'", optarg);
			break;
		case OPT_STATUS_FD:
			opts->status_fd = strtol(optarg, &end, 10);
			if (*end || opts->status_fd < 0)
				return bad_usage("bad --status-fd '%s'", optarg);
			break;
		case OPT_TLS:
			opts->tls.on = true;
			break;
		case OPT_TLS_CACERT:
			opts->tls.cacert = optarg;
			break;
		case OPT_TLS_CACRL:
			opts->tls.cacrl = optarg;
			break;
		case OPT_TLS_CERT:
			opts->tls.cert = optarg;
			break;
		case OPT_TLS_KEY:
			opts->tls.key = optarg;
			break;
		case OPT_TLS_NO_CN:
			opts->tls.no_cn_verify = true;
			break;
		case OPT_TO:
			opts->to = optarg;
			break;
		case OPT_PRE_DUMPS:
			opts->pre_dumps = strtol(optarg, &end, 10);
			if (*end || opts->pre_dumps < 0 || opts->pre_dumps > 16)
				return bad_usage("bad --pre-dumps '%s' (0-16)", optarg);
			break;
		case OPT_STOP:
			opts->stop = true;
			break;
		case 'd':
			opts->detach = true;
			break;
		case OPT_PIDFILE:
			opts->pidfile = optarg;
			break;
		case OPT_ROOT:
			opts->root = optarg;
			break;
		case OPT_SIBLING:
			opts->sibling = true;
			break;
		case OPT_COPIES:
			opts->copies = (int)strtol(optarg, &end, 10);
			if (*end || opts->copies < 1 || opts->copies > 1024)
				return bad_usage("--copies wants a number of copies (1 to 1024), not '%s'",
						 optarg);
			break;
		case OPT_LAZY_PAGES:
			opts->lazy_pages = true;
			break;
		case OPT_NO_LAZY_PAGES:
			opts->no_lazy_pages = true;
			break;
		case OPT_LAZY_SOCKET:
			opts->lazy_socket = optarg;
			break;
		case OPT_LAZY_TIMEOUT:
			opts->lazy_timeout = (int)strtol(optarg, &end, 10);
			if (*end || opts->lazy_timeout < 1 || opts->lazy_timeout > 3600)
				return bad_usage("--lazy-timeout wants seconds (1 to 3600), not '%s'",
						 optarg);
			break;
		case OPT_TCP_CLOSE:
			opts->tcp_close = true;
			break;
		case OPT_FREEZE_CG:
			opts->freeze_cgroup = optarg;
			break;
		case OPT_CG_ROOT:
			if (parse_cgroup_root(opts, optarg))
				return bad_usage("--cgroup-root wants [CONTROLLER:]/PATH (at most 16), "
						 "not '%s'", optarg);
			break;
		case OPT_CG_MODE:
			opts->cg_mode = cg_mode_parse(optarg);
			if (opts->cg_mode < 0)
				return bad_usage("--manage-cgroups wants soft, full, strict or ignore, "
						 "not '%s'", optarg);
			break;
		case OPT_CG_YARD:	/* hierarchies are found where mounted, the yard included */
			break;
		case OPT_INHERIT_FD:
			if (parse_inherit_fd(opts, optarg))
				return bad_usage("--inherit-fd wants fd[N]:KEY (at most 8), not '%s'",
						 optarg);
			break;
		case OPT_JOIN_NS:
			if (parse_join_ns(opts, optarg))
				return bad_usage("--join-ns wants KIND:PATH (at most 4), not '%s'",
						 optarg);
			break;
		case OPT_EXTERNAL:
			if (parse_external(opts, optarg))
				return bad_usage("--external wants veth[IN]:OUT[@BRIDGE] (at most 8), "
						 "mnt[KEY]:VALUE (at most 64), net[INO]:KEY (one) "
						 "or tty[RDEV:DEV] (one), not '%s'", optarg);
			break;
		case OPT_FD_KINDS:
			opts->fd_kinds = true;
			break;
		case OPT_JSON:
			opts->json = true;
			break;
		case OPT_LOGFILE:
			opts->log_file = optarg;
			break;
		case OPT_NOPROGRESS:
			opts->progress = false;
			break;
		case OPT_ACTION_SCRIPT:
			if (opts->nr_action_scripts == (int)ARRAY_SIZE(opts->action_scripts))
				return bad_usage("more than %s --action-script", "8");
			opts->action_scripts[opts->nr_action_scripts++] = optarg;
			break;
		case 'v':
			opts->verbosity = strtol(optarg, &end, 10);
			if (*end || opts->verbosity < 0 || opts->verbosity > 4)
				return bad_usage("bad verbosity '%s' (0-4)", optarg);
			break;
		case 'h':
			print_command_usage(argv[0]);
			exit(0);
		default:
			if (optopt)
				return bad_usage("unknown option '-%s'", (char[]){ (char)optopt, 0 });
			return bad_usage("unknown option '%s'", argv[optind - 1]);
		}
	}
	opts->argc = argc - optind;
	opts->argv = argv + optind;
	return 0;
}

/* The commands that read a set: a sealed one is opened into memory first (crypt.h). */
static bool reads_set(const struct command *cmd)
{
	return cmd->run == cmd_restore || cmd->run == cmd_show || cmd->run == cmd_verify ||
	       cmd->run == cmd_read_mem;
}

/*
 * A reader of a sealed set: the set opened, every file authenticated, into a
 * private tmpfs before the command starts (a restore: before anything is
 * restored); the command reads it there.
 */
static int run_sealed(const struct command *cmd, struct options *o)
{
	const char *dir = o->dir;
	char path[64];
	int dirfd = -1, ret, fd;

	if (!dir)
		return cmd->run(o);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && !img_set_sealed(fd) && o->decrypt)
		ret = fail(-EINVAL, "image set %s is not encrypted (--decrypt)", dir);
	else if (fd >= 0 && img_set_sealed(fd) && !o->decrypt)
		ret = fail(-EACCES, "image set %s is encrypted: give --decrypt KEYFILE or "
			   "--decrypt-key-fd N", dir);
	else
		ret = 1;
	if (fd >= 0)
		close(fd);
	if (ret <= 0 || !o->decrypt)
		return ret <= 0 ? ret : cmd->run(o);
	if (o->lazy_pages)
		return fail(-EOPNOTSUPP, "--lazy-pages with --decrypt: lazy pages of an encrypted "
			    "set are not supported");
	/* a restore's pages image: decrypted as the restore fills the memory */
	ret = crypt_open_set(&o->key, dir, &dirfd, path, sizeof(path),
			     cmd->run == cmd_restore ? &o->feed : NULL);
	if (ret)
		return ret;
	pr_info("image set %s %s into memory", dir, o->feed ?
		"authenticated (its pages image as it is restored) and decrypted" :
		"decrypted and authenticated");
	o->dir = path;
	o->shown_dir = dir;
	ret = cmd->run(o);
	o->dir = dir;
	o->shown_dir = NULL;
	feed_free(o->feed);
	o->feed = NULL;
	close(dirfd);
	return ret;
}

static int run_plain(const struct command *cmd, struct options *o)
{
	if (reads_set(cmd))
		return run_sealed(cmd, o);
	if (o->no_lazy_pages && cmd->run != cmd_migrate)
		return fail(-EINVAL, "--no-lazy-pages is an option of migrate, not of %s", cmd->name);
	if ((o->decrypt && cmd->run != cmd_unpack) ||
	    (o->encrypt && cmd->run != cmd_dump && cmd->run != cmd_pre_dump))
		return fail(-EINVAL, "--%s is not an option of %s", o->encrypt ? "encrypt" : "decrypt",
			    cmd->name);
	return cmd->in_worker ? run_in_worker(cmd->run, o, cmd->failure) : cmd->run(o);
}

/* dump --stream: written into a private directory, then packed to the stream. */
static int run_dump_stream(const struct command *cmd, struct options *o)
{
	struct stream_job j;
	int ret = stream_dump_begin(o, &j);

	if (ret) {
		stream_end(&j);
		return ret;
	}
	ret = run_plain(cmd, o);
	return stream_dump_end(&j, ret, !o->leave_running);
}

/* restore --stream: unpacked (and checked whole) into a private directory first. */
static int run_restore_stream(const struct command *cmd, struct options *o)
{
	struct stream_job j;
	int ret = stream_restore_begin(o, &j);

	if (!ret)
		ret = run_plain(cmd, o);
	stream_end(&j);
	return ret;
}

static int run_command(const struct command *cmd, struct options *o)
{
	if (!o->stream)
		return run_plain(cmd, o);
	if (!strcmp(cmd->name, "dump"))
		return run_dump_stream(cmd, o);
	if (!strcmp(cmd->name, "restore"))
		return run_restore_stream(cmd, o);
	return fail(-EINVAL, "--stream is an option of dump and restore");
}

/* Run as "criu" (runc --criu, a symlink): what runtimes ask of criu besides swrk. */
static bool criu_version_asked(int argc, char **argv)
{
	const char *base = strrchr(argv[0], '/');

	base = base ? base + 1 : argv[0];
	if (strcmp(base, "criu") || argc != 2 || (strcmp(argv[1], "-V") && strcmp(argv[1], "--version")))
		return false;
	printf("Version: %d.%d\nGitID: memdump-%s\n", RPC_CRIU_MAJOR, RPC_CRIU_MINOR,
	       MEMDUMP_VERSION);
	return true;
}

/* How many arguments a common option (-v N, --log-file F, --no-progress) at argv[i] takes up, 0 if not one. */
static int common_option_len(int argc, char **argv, int i)
{
	const char *a = argv[i];

	if (!strcmp(a, "--no-progress") || !strncmp(a, "--verbose=", 10) ||
	    !strncmp(a, "--log-file=", 11) || (!strncmp(a, "-v", 2) && a[2]))
		return 1;
	if (!strcmp(a, "-v") || !strcmp(a, "--verbose") || !strcmp(a, "--log-file"))
		return i + 1 < argc ? 2 : 0;
	return 0;
}

/* memdump -v 4 check: the common options before the command move after it. */
static void hoist_command(int argc, char **argv)
{
	int k = 1, len;
	char *cmd;

	while (k < argc && (len = common_option_len(argc, argv, k)))
		k += len;
	if (k == 1 || k >= argc)
		return;
	cmd = argv[k];
	memmove(&argv[2], &argv[1], (size_t)(k - 1) * sizeof(*argv));
	argv[1] = cmd;
}

int main(int argc, char **argv)
{
	struct options opts = { .verbosity = LOG_WARN, .ghost_limit = GHOST_LIMIT_DEFAULT,
				.status_fd = -1, .pre_dumps = -1, .key_fd = -1 };
	const struct command *cmd = NULL;
	int ret;

	if (argc >= 1 && criu_version_asked(argc, argv))
		return 0;
	ret = argc >= 1 ? criu_cli(&argc, &argv) : -1;
	if (ret >= 0)
		return ret;
	if (argc < 2)
		return bad_usage("%s", "no command");
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("memdump %s\n", MEMDUMP_VERSION);
		return 0;
	}
	hoist_command(argc, argv);
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(argv[1], commands[i].name))
			cmd = &commands[i];
	if (!cmd) {
		if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
			fputs(usage, stdout);
			return 0;
		}
		return bad_usage("unknown command '%s'", argv[1]);
	}
	ret = parse_options(&opts, argc - 1, argv + 1);
	if (ret)
		return ret;
	if (log_init(opts.verbosity, opts.log_file)) {
		log_report_failure(cmd->failure, -EINVAL);
		return 1;
	}
	if ((opts.encrypt || opts.decrypt) && img_key_load(opts.key_file, opts.key_fd, &opts.key))
		ret = -EINVAL;
	else
		ret = run_command(cmd, &opts);
	if (ret < 0) {
		log_report_failure(cmd->failure, ret);
		ret = 1;
	}
	log_close();
	return ret;
}
