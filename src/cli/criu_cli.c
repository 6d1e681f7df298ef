/*
 * CRIU's command line, for programs that run memdump under the name `criu`
 * (LXC's lxc-checkpoint, CRIU's own test runner, scripts written for CRIU).
 *
 * The arguments are rewritten into memdump's own before memdump parses them:
 * every option CRIU 4.2 documents is either
 *   - passed on, under memdump's name for the same thing,
 *   - accepted and ignored where it cannot matter to memdump (the table says
 *     why; docs/memdump.8 lists them), or
 *   - refused by name in one line, exit 1.
 * An option CRIU does not have either is refused by name too. CRIU takes its
 * options before or after the command; so does this.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"
#include "cli/criu_cli.h"
#include "mem/lazy.h"
#include "spawn_cmd.h"

enum act {
	PASS,		/* the same option of memdump's, its argument as given */
	TO,		/* memdump's option `to`, the argument as given */
	NOOP,		/* accepted; `why` it does not matter here */
	REFUSE,		/* not supported: `why` */
	LOG,		/* -o FILE: relative to the work dir */
	WORKDIR,	/* -W DIR */
	VERBOSITY,	/* -v[N], --verbosity[=N] */
	VETH,		/* --veth-pair IN=OUT[@BR] */
	EXTMNT,		/* --ext-mount-map KEY:VAL | auto */
	EXTERNAL,	/* --external KIND[...]:... */
	PREDUMP_MODE,	/* --pre-dump-mode splice|read */
	FEATURE,	/* check --feature NAME */
	LAZY,		/* --lazy-pages: restore's only (lazy_flow()) */
	HELP,
};

enum { NOARG, ARG, OPTARG };

struct criu_opt {
	const char *name;
	char shortopt;
	int arg;
	enum act act;
	const char *to;		/* TO: memdump's option; NOOP, REFUSE: why */
	bool boolean;		/* CRIU also takes --no-NAME */
};

static const struct criu_opt criu_opts[] = {
	{ "tree", 't', ARG, PASS, NULL, false },
	{ "images-dir", 'D', ARG, PASS, NULL, false },
	{ "work-dir", 'W', ARG, WORKDIR, NULL, false },
	{ "log-file", 'o', ARG, LOG, NULL, false },
	{ "verbosity", 'v', OPTARG, VERBOSITY, NULL, false },
	{ "leave-running", 'R', NOARG, PASS, NULL, false },
	{ "leave-stopped", 's', NOARG, REFUSE, "memdump resumes or kills what it dumped", false },
	{ "restore-detached", 'd', NOARG, TO, "-d", true },
	{ "daemon", 0, NOARG, TO, "-d", true },
	{ "restore-sibling", 'S', NOARG, PASS, NULL, true },
	{ "join-ns", 'J', ARG, PASS, NULL, false },
	{ "root", 'r', ARG, PASS, NULL, false },
	{ "shell-job", 'j', NOARG, PASS, NULL, true },
	{ "file-locks", 'l', NOARG, NOOP, "file locks are always dumped", true },
	{ "tcp-established", 0, NOARG, PASS, NULL, true },
	{ "tcp-close", 0, NOARG, PASS, NULL, true },
	{ "skip-in-flight", 0, NOARG, PASS, NULL, true },
	{ "ext-unix-sk", 'x', OPTARG, PASS, NULL, false },
	{ "link-remap", 0, NOARG, NOOP, "an unlinked file is kept as a ghost image (--ghost-limit)", true },
	{ "ghost-limit", 0, ARG, PASS, NULL, false },
	{ "ghost-fiemap", 0, NOARG, NOOP, "ghost images keep their holes whatever the option", true },
	{ "pidfile", 0, ARG, PASS, NULL, false },
	{ "veth-pair", 0, ARG, VETH, NULL, false },
	{ "action-script", 0, ARG, PASS, NULL, false },
	{ "prev-images-dir", 0, ARG, PASS, NULL, false },
	{ "track-mem", 0, NOARG, PASS, NULL, true },
	{ "pre-dump-mode", 0, ARG, PREDUMP_MODE, NULL, false },
	{ "ext-mount-map", 'M', ARG, EXTMNT, NULL, false },
	{ "external", 0, ARG, EXTERNAL, NULL, false },
	{ "inherit-fd", 0, ARG, PASS, NULL, false },
	{ "freeze-cgroup", 0, ARG, PASS, NULL, false },
	{ "cgroup-root", 0, ARG, PASS, NULL, false },
	{ "manage-cgroups", 0, OPTARG, PASS, NULL, false },
	{ "cgroup-props", 0, ARG, REFUSE, "only CRIU's default cgroup properties are saved and restored", false },
	{ "cgroup-props-file", 0, ARG, REFUSE, "only CRIU's default cgroup properties are saved and restored", false },
	{ "cgroup-dump-controller", 0, ARG, REFUSE, "only CRIU's default cgroup properties are saved and restored", false },
	{ "cgroup-yard", 0, ARG, PASS, NULL, false },
	{ "feature", 0, ARG, FEATURE, NULL, false },
	{ "help", 'h', NOARG, HELP, NULL, false },
	/* accepted, nothing to do in memdump */
	{ "no-default-config", 0, NOARG, NOOP, "memdump reads no configuration file", false },
	{ "timeout", 0, ARG, NOOP, "the freeze is bounded by memdump itself", false },
	{ "log-pid", 0, NOARG, NOOP, "one log per run", true },
	{ "close", 0, ARG, NOOP, "memdump closes its own descriptors", false },
	{ "evasive-devices", 0, NOARG, NOOP, "device files are opened by their recorded path", true },
	{ "enable-fs", 0, ARG, NOOP, "a file system memdump cannot dump is refused by name", false },
	{ "enable-external-sharing", 0, NOARG, NOOP, "mount sharing is kept as dumped", false },
	{ "enable-external-masters", 0, NOARG, NOOP, "mount sharing is kept as dumped", false },
	{ "force-irmap", 0, NOARG, NOOP, "inotify watches are kept by file handle", true },
	{ "irmap-scan-path", 0, ARG, NOOP, "inotify watches are kept by file handle", false },
	{ "lsm-profile", 0, ARG, NOOP, "memdump does not change LSM profiles", false },
	{ "lsm-mount-context", 0, ARG, NOOP, "memdump does not change LSM profiles", false },
	{ "cpu-cap", 0, OPTARG, NOOP, "no CPU feature check beyond the kernel's", false },
	{ "ms", 0, NOARG, NOOP, "check runs every probe", false },
	{ "extra", 0, NOARG, NOOP, "check runs every probe", true },
	{ "experimental", 0, NOARG, NOOP, "check runs every probe", true },
	{ "all", 0, NOARG, NOOP, "check runs every probe", false },
	{ "deprecated", 0, NOARG, NOOP, "nothing deprecated is read", true },
	{ "display-stats", 0, NOARG, NOOP, "the summary line is printed always", true },
	{ "weak-sysctls", 0, NOARG, NOOP, "no sysctl is set on restore", true },
	{ "file-validation", 0, ARG, NOOP, "files are checked by size and content", false },
	{ "skip-file-rwx-check", 0, NOARG, NOOP, "no permission check is made", true },
	{ "network-lock", 0, ARG, NOOP, "the network lock is nftables", false },
	{ "mntns-compat-mode", 0, NOARG, NOOP, "one mount restore mode", true },
	{ "unprivileged", 0, NOARG, NOOP, "capabilities are checked where needed", true },
	{ "allow-uprobes", 0, NOARG, NOOP, "a uprobes mapping is refused by name", true },
	/* refused */
	{ "page-server", 0, NOARG, PASS, NULL, true },
	{ "address", 0, ARG, PASS, NULL, false },
	{ "port", 0, ARG, PASS, NULL, false },
	{ "ps-socket", 0, ARG, REFUSE, "the page server is not supported yet", false },
	{ "lazy-pages", 0, NOARG, LAZY, NULL, false },
	{ "status-fd", 0, ARG, PASS, NULL, false },	/* page-server's */
	{ "auto-dedup", 0, NOARG, REFUSE, "deduplication of parent images is not supported", true },
	{ "stream", 0, NOARG, REFUSE, "streamed images are not supported yet", true },
	{ "tls", 0, NOARG, PASS, NULL, true },	/* the page server's (xfer_tls.c) */
	{ "tls-cacert", 0, ARG, PASS, NULL, false },
	{ "tls-cacrl", 0, ARG, PASS, NULL, false },
	{ "tls-cert", 0, ARG, PASS, NULL, false },
	{ "tls-key", 0, ARG, PASS, NULL, false },
	{ "tls-no-cn-verify", 0, NOARG, PASS, NULL, false },
	{ "config", 0, ARG, REFUSE, "memdump reads no configuration file", false },
	{ "libdir", 'L', ARG, REFUSE, "plugins are not supported", false },
	{ "exec-cmd", 0, NOARG, REFUSE, "restore --exec-cmd is not supported", false },
	{ "skip-mnt", 0, ARG, REFUSE, "every mount is dumped or refused by name", false },
	{ "empty-ns", 0, ARG, REFUSE, "--empty-ns is honoured over the RPC only", false },
	{ "version", 'V', NOARG, NOOP, "", false },	/* handled before: criu --version */
};

/* CRIU's commands and memdump's: NULL where memdump has none. */
static const struct { const char *criu, *memdump; } criu_cmds[] = {
	{ "dump", "dump" }, { "pre-dump", "pre-dump" }, { "restore", "restore" },
	{ "check", "check" }, { "swrk", "swrk" }, { "show", "show" },
	{ "page-server", "page-server" }, { "lazy-pages", "lazy-pages" }, { "service", NULL },
	{ "exec", NULL }, { "cpuinfo", NULL },
};

/* CRIU's feature names memdump has: `criu check --feature NAME` says yes to these. */
static const char *const criu_features[] = {
	"mnt_id", "mem_dirty_track", "timerfd", "seccomp_suspend", "seccomp_filters",
	"clone3_set_tid", "nftables", "network_lock_nftables", "fdinfo_lock", "kcmp_epoll",
	"get_rseq_conf", "tcp_half_closed", "ns_pid", "memfd", "cgroupns", "ipv6_freebind",
	"pagemap_scan_guard_pages", "sockopt_buf_lock",
};

struct translation {
	const char *cmd;		/* CRIU's command */
	const char *images_dir, *work_dir, *log_file, *feature;
	bool lazy;			/* --lazy-pages */
	const char *out[256];		/* memdump's argv: its name, the command, the rest */
	int n;
};

static int refuse(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "memdump (as criu): ");
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
	return 1;
}

static int add(struct translation *t, const char *arg)
{
	if (t->n >= (int)ARRAY_SIZE(t->out) - 1)
		return refuse("%s%s: too many arguments", "", "");
	t->out[t->n++] = arg;
	return 0;
}

static char *joined(const char *fmt, const char *a, const char *b)
{
	char *s = NULL;

	if (asprintf(&s, fmt, a, b) < 0)
		return NULL;
	return s;
}

static const struct criu_opt *find_long(const char *name, size_t len, bool *negated)
{
	*negated = false;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < ARRAY_SIZE(criu_opts); i++) {
			const struct criu_opt *o = &criu_opts[i];

			if (strlen(o->name) == len && !strncmp(o->name, name, len) &&
			    (!pass || o->boolean))
				return o;
		}
		if (len <= 3 || strncmp(name, "no-", 3))
			return NULL;
		name += 3, len -= 3;
		*negated = true;
	}
	return NULL;
}

static const struct criu_opt *find_short(char c)
{
	for (size_t i = 0; i < ARRAY_SIZE(criu_opts); i++)
		if (criu_opts[i].shortopt == c)
			return &criu_opts[i];
	return NULL;
}

/* -v, -v4, -vvv, --verbosity, --verbosity=3: memdump's -v N (0-4, as CRIU's levels). */
static const char *verbosity(const char *val)
{
	static char level[2];
	int v = 2;

	if (val && *val >= '0' && *val <= '9')
		v = atoi(val);
	else if (val)
		v = 2 + (int)strspn(val, "v") + 1;
	else
		v = 3;
	level[0] = (char)('0' + (v > 4 ? 4 : v < 0 ? 0 : v));
	return level;
}

/* --ext-mount-map KEY:VAL is CRIU's --external mnt[KEY]:VAL (dump: KEY the
 * mount point, VAL its key; restore: KEY the key, VAL the path); `auto`:
 * memdump finds the external mounts itself. An empty VAL (LXC's `console:`
 * when the container has no console) maps nothing: no mount of the dump can
 * be restored from it, and one that wants KEY is refused for its lack. */
static int ext_mount_map(struct translation *t, const char *val)
{
	const char *colon = strchr(val, ':');
	char *ext = NULL;

	if (!strcmp(val, "auto") || (colon && colon != val && !colon[1]))
		return 0;
	if (!colon || colon == val ||
	    asprintf(&ext, "mnt[%.*s]:%s", (int)(colon - val), val, colon + 1) < 0)
		return refuse("--ext-mount-map wants KEY:VALUE or auto, not '%s'%s", val, "");
	return add(t, "--external") ?: add(t, ext);
}

/* The flags of CRIU's --external mnt[]:FLAGS: s (external sharing), m (external masters). */
static int auto_mnt_flags(const char *flags)
{
	if (*flags && (*flags != ':' || strspn(flags + 1, "sm") != strlen(flags + 1)))
		return refuse("--external mnt[] takes the flags s and m, not '%s'%s", flags, "");
	return 0;
}

static int apply(struct translation *t, const struct criu_opt *o, bool negated, const char *val)
{
	char flag[64];

	if (negated)		/* --no-X: CRIU's default, nothing to do */
		return 0;
	snprintf(flag, sizeof(flag), "--%s", o->name);
	switch (o->act) {
	case PASS:
		if (o->arg == OPTARG && val)
			return add(t, joined("--%s=%s", o->name, val));
		return add(t, strdup(flag)) ?: (val && o->arg == ARG ? add(t, val) : 0);
	case TO:
		return add(t, o->to) ?: (val && o->arg == ARG ? add(t, val) : 0);
	case NOOP:
		return 0;
	case REFUSE:
		return refuse("%s is not supported: %s", flag, o->to);
	case LOG:
		t->log_file = val;
		return 0;
	case WORKDIR:
		t->work_dir = val;
		return 0;
	case VERBOSITY:
		return add(t, "-v") ?: add(t, verbosity(val));
	case VETH: {
		const char *eq = strchr(val, '=');
		char *ext = NULL;

		if (!eq || asprintf(&ext, "veth[%.*s]:%s", (int)(eq - val), val, eq + 1) < 0)
			return refuse("--veth-pair wants IN=OUT[@BRIDGE], not '%s'%s", val, "");
		return add(t, "--external") ?: add(t, ext);
	}
	case EXTMNT:
		return ext_mount_map(t, val);
	case EXTERNAL:
		/* LXC's apparmor:PROFILE: CRIU keeps the key, no state of its looks it up */
		if (!strncmp(val, "apparmor:", 9))
			return 0;
		/* mnt[] (:s, :m): CRIU finds external bind mounts itself, as memdump does */
		if (!strcmp(val, "mnt[]") || !strncmp(val, "mnt[]:", 6))
			return auto_mnt_flags(val + 5);
		return add(t, "--external") ?: add(t, val);
	case PREDUMP_MODE:
		if (strcmp(val, "splice") && strcmp(val, "read"))
			return refuse("--pre-dump-mode wants splice or read, not '%s'%s", val, "");
		return add(t, "--mode") ?: add(t, val);
	case FEATURE:
		t->feature = val;
		return 0;
	case LAZY:
		t->lazy = true;
		return 0;
	case HELP:
		return add(t, "--help");
	}
	return 0;
}

static int take_long(struct translation *t, int argc, char **argv, int *i)
{
	const char *name = argv[*i] + 2, *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	bool negated;
	const struct criu_opt *o = find_long(name, len, &negated);
	const char *val = eq ? eq + 1 : NULL;

	if (!o) {
		fprintf(stderr, "memdump (as criu): unknown option --%.*s (not one of CRIU 4.2's)\n",
			(int)len, name);
		return 1;
	}
	if (o->arg == ARG && !val) {
		if (*i + 1 >= argc)
			return refuse("--%s needs an argument%s", o->name, "");
		val = argv[++*i];
	}
	if (o->arg == NOARG && val)
		return refuse("--%s takes no argument%s", o->name, "");
	return apply(t, o, negated, val);
}

static int take_short(struct translation *t, int argc, char **argv, int *i)
{
	for (const char *p = argv[*i] + 1; *p; p++) {
		const struct criu_opt *o = find_short(*p);
		const char *val = NULL;

		if (!o) {
			fprintf(stderr, "memdump (as criu): unknown option -%c (not one of CRIU 4.2's)\n",
				*p);
			return 1;
		}
		if (o->arg != NOARG && p[1])
			val = p + 1;
		else if (o->arg == ARG) {
			if (*i + 1 >= argc)
				return refuse("-%s needs an argument%s", (char[]){ *p, 0 }, "");
			val = argv[++*i];
		}
		if (apply(t, o, false, val))
			return 1;
		if (val && val != argv[*i])
			break;		/* the rest of this word was the argument */
	}
	return 0;
}

static int take_command(struct translation *t, const char *word)
{
	for (size_t i = 0; i < ARRAY_SIZE(criu_cmds); i++) {
		if (strcmp(word, criu_cmds[i].criu))
			continue;
		if (!criu_cmds[i].memdump)
			return refuse("criu %s is not supported by memdump%s", word, "");
		t->cmd = word;
		t->out[1] = criu_cmds[i].memdump;
		return 0;
	}
	return refuse("unknown command '%s' (CRIU's: dump, pre-dump, restore, check, swrk)%s",
		      word, "");
}

/*
 * Features that hang on this machine, not on memdump: loginuid needs audit
 * (CONFIG_AUDIT), which gives every process a /proc/self/loginuid;
 * has_ipt_legacy is CRIU's name for legacy iptables being installed (tests
 * set their own rules with it). memdump's network lock is nftables whatever
 * --network-lock says, and nftables and legacy iptables rules apply side
 * by side. Time namespaces are memdump's where the kernel has them.
 */
/* The events the lazy restore's handler follows (a fork, mremap, madvise, munmap). */
#define UFFD_NONCOOP (UFFD_FEATURE_EVENT_FORK | UFFD_FEATURE_EVENT_REMAP | \
		      UFFD_FEATURE_EVENT_REMOVE | UFFD_FEATURE_EVENT_UNMAP)

/* userfaultfd, with the features want: what restore --lazy-pages needs. */
static bool uffd_has(uint64_t want)
{
	struct uffdio_api api = { .api = UFFD_API };
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = !ioctl(fd, UFFDIO_API, &api) && (api.features & want) == want;
	close(fd);
	return ok;
}

static bool machine_has(const char *name)
{
	if (!strcmp(name, "loginuid"))
		return !access("/proc/self/loginuid", F_OK);
	if (!strcmp(name, "has_ipt_legacy"))
		return spawn_found("iptables-legacy") && spawn_found("ip6tables-legacy");
	if (!strcmp(name, "timens"))	/* saved and restored where the kernel has them */
		return !access("/proc/self/timens_offsets", F_OK);
	if (!strcmp(name, "uffd") || !strcmp(name, "uffd-noncoop") || !strcmp(name, "lazy_pages"))
		return uffd_has(!strcmp(name, "uffd") ? 0 : UFFD_NONCOOP);
	return false;
}

static int check_feature(const char *name)
{
	if (machine_has(name)) {
		printf("%s is supported\n", name);
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(criu_features); i++) {
		if (!strcmp(name, criu_features[i])) {
			printf("%s is supported\n", name);
			return 0;
		}
	}
	printf("%s is not supported by memdump\n", name);
	return 1;
}

/* A lazy-pages daemon's socket at path, waited for up to 1 s (it may be starting as we do). */
static bool daemon_socket(const char *path)
{
	struct stat st;

	for (int i = 0; i < 100; i++) {
		if (!lstat(path, &st) && S_ISSOCK(st.st_mode))
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * --lazy-pages, and CRIU's lazy-pages daemon. Both find the daemon's socket
 * in the work dir (-W, else -D). restore: memdump's lazy restore, its own
 * page handler serving the pages; a daemon waiting on the socket is told how
 * it went (cli/lazy_daemon.c), and exits with that, as CRIU's would; with
 * --page-server, the daemon fetches pages-1.img from a lazy dump's page
 * server. dump, page-server: CRIU's lazy dump, the set's pages served to such
 * a daemon (cli/lazy_server.c). pre-dump: refused.
 */
static int lazy_flow(struct translation *t)
{
	const char *dir = t->work_dir ?: t->images_dir ?: ".";
	bool lazyd = !strcmp(t->cmd, "lazy-pages"), restore = !strcmp(t->cmd, "restore");
	char *sock;

	if (!lazyd && !t->lazy)
		return 0;
	if (!lazyd && !strcmp(t->cmd, "pre-dump"))
		return refuse("criu pre-dump --lazy-pages is not supported: only a dump leaves its "
			      "pages served to a lazy restore%s%s", "", "");
	if (!lazyd && !restore)
		return add(t, "--lazy-pages");
	sock = joined("%s/%s", dir, LAZY_DAEMON_SOCK);	/* kept in t->out once added */
	if (!sock)
		return refuse("out of memory%s%s", "", "");
	if (lazyd || daemon_socket(sock)) {
		if (add(t, "--lazy-socket") || add(t, sock))
			return 1;
	} else {
		free(sock);
	}
	return lazyd ? 0 : add(t, "--lazy-pages");
}

/* The log file: CRIU's -o names it relative to the work dir (-W, else -D). */
static int add_log(struct translation *t)
{
	const char *dir = t->work_dir ?: t->images_dir;

	if (!t->log_file || !strcmp(t->log_file, "-"))
		return 0;
	if (t->log_file[0] == '/' || !dir)
		return add(t, "--log-file") ?: add(t, t->log_file);
	return add(t, "--log-file") ?: add(t, joined("%s/%s", dir, t->log_file));
}

static void note_images_dir(struct translation *t, int argc, char **argv, int i)
{
	const char *a = argv[i];

	if (!strcmp(a, "-D") || !strcmp(a, "--images-dir"))
		t->images_dir = i + 1 < argc ? argv[i + 1] : NULL;
	else if (!strncmp(a, "--images-dir=", 13))
		t->images_dir = a + 13;
	else if (!strncmp(a, "-D", 2) && a[2])
		t->images_dir = a + 2;
}

int criu_cli(int *argc, char ***argv)
{
	const char *base = strrchr((*argv)[0], '/');
	static struct translation t;
	int ret = 0;

	base = base ? base + 1 : (*argv)[0];
	if (strcmp(base, "criu"))
		return -1;
	t.out[0] = (*argv)[0];
	t.n = 2;
	for (int i = 1; i < *argc && !ret; i++) {
		const char *a = (*argv)[i];

		note_images_dir(&t, *argc, *argv, i);
		if (!strcmp(a, "--")) {
			continue;
		} else if (!strncmp(a, "--", 2)) {
			ret = take_long(&t, *argc, *argv, &i);
		} else if (a[0] == '-' && a[1]) {
			ret = take_short(&t, *argc, *argv, &i);
		} else if (!t.cmd) {
			ret = take_command(&t, a);
		} else {
			ret = add(&t, a);	/* swrk FD */
		}
	}
	if (ret)
		return 1;
	if (!t.cmd)
		return refuse("no command (CRIU's: dump, pre-dump, restore, check, swrk)%s%s", "",
			      "");
	if (t.feature)
		return check_feature(t.feature);
	if (add_log(&t) || lazy_flow(&t))
		return 1;
	/* CRIU writes over a dump the directory holds */
	if ((!strcmp(t.cmd, "dump") || !strcmp(t.cmd, "pre-dump")) && add(&t, "--overwrite"))
		return 1;
	t.out[t.n] = NULL;
	*argc = t.n;
	*argv = (char **)t.out;
	return -1;
}
