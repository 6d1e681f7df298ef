/*
 * criu_opts -> struct dump_opts / struct restore_opts.
 *
 * Every field of criu_opts (and any field this file's rpc.proto does not
 * know) that a request sets to a value other than its default is looked up
 * in rules[]: honoured for this request type, or refused, and every refused
 * one is named in the one error of the response. An honoured option is one
 * memdump does exactly, or whose state it refuses at dump time by name:
 * file_locks asks CRIU to dump file locks, which memdump always does;
 * ext_unix_sk is memdump's --ext-unix-sk (a datagram peer outside the dump
 * connected to by name again; any other peer outside is still refused).
 * orphan_pts_master: a pty slave whose master is outside the dump (a
 * container's terminal) is dumped alone, and
 * restored on a new pair whose master goes to the client in an
 * orphan-pts-master notification (tty.c). shell_job and ghost_limit are
 * memdump's --shell-job and --ghost-limit. ps is dump --page-server, or with
 * lazy_pages dump --lazy-pages (its page server's status-ready point is a NOTIFY,
 * and status_fd, reopened, gets its byte: rpc.c).
 *
 * The client names its directories by fd (images_dir_fd, work_dir_fd):
 * numbers in its own fd table, reached through /proc/PEER/fd/N as CRIU does.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "cli/rpc.h"
#include "image/crypt.h"
#include "ns/cgroups.h"
#include "mem/pages.h"

enum { K_DUMP = 1, K_RESTORE = 2, K_CHECK = 4, K_ALL = 7 };

struct opt_rule {
	const char *name;	/* the criu_opts field */
	unsigned int ok;	/* K_*: the requests that honour it */
	const char *why;	/* why the others refuse it */
};

#define NEEDS_NS	"external namespaces and mount sharing are not supported"
#define TLS_PS		"TLS is the page server's, over the command line only (dump --page-server --tls)"

static const struct opt_rule rules[] = {
	{ "images_dir_fd", K_ALL, NULL },
	{ "images_dir", K_ALL, NULL },
	{ "work_dir_fd", K_ALL, NULL },
	{ "image_key_fd", K_DUMP | K_RESTORE, "only a dump seals a set and a restore opens one" },
	{ "log_level", K_ALL, NULL },
	{ "log_file", K_ALL, NULL },
	{ "notify_scripts", K_DUMP | K_RESTORE, NULL },
	{ "pid", K_DUMP, "a restore takes its PID from the images" },
	{ "leave_running", K_DUMP, "only a dump leaves its target running" },
	{ "tcp_established", K_DUMP | K_RESTORE, NULL },
	{ "shell_job", K_DUMP | K_RESTORE, NULL },
	{ "ghost_limit", K_DUMP, "only a dump saves deleted files" },
	{ "file_locks", K_DUMP | K_RESTORE, NULL },
	{ "ext_unix_sk", K_DUMP | K_RESTORE, NULL },
	{ "orphan_pts_master", K_DUMP | K_RESTORE, NULL },
	{ "evasive_devices", K_RESTORE, "only for a restore" },
	{ "manage_cgroups", K_DUMP | K_RESTORE, NULL },
	{ "manage_cgroups_mode", K_DUMP | K_RESTORE, NULL },
	{ "root", K_DUMP | K_RESTORE, NULL },
	{ "ps", K_DUMP, "only a dump sends pages to a page server or serves them" },
	{ "parent_img", K_DUMP, "only a dump or pre-dump has a parent" },
	{ "track_mem", K_DUMP, "only a dump or pre-dump tracks memory" },
	{ "auto_dedup", 0, "memdump does not deduplicate parent images" },
	{ "lazy_pages", K_DUMP | K_RESTORE, "only a dump serves pages lazily and a restore takes "
	  "them so" },
	{ "status_fd", K_DUMP, "only a lazy dump's page server reports ready" },
	{ "rst_sibling", K_RESTORE, NULL },
	{ "inherit_fd", K_RESTORE, "only a restore inherits fds" },
	{ "freeze_cgroup", K_DUMP, "only a dump freezes" },
	{ "cg_root", K_RESTORE, "only a restore puts processes into cgroups" },
	{ "config_file", K_ALL, NULL },
	{ "ext_mnt", K_DUMP | K_RESTORE, NULL },
	{ "external", K_DUMP, "a restore takes external namespaces by inherit_fd" },
	{ "join_ns", K_RESTORE, "only a restore joins namespaces" },
	{ "empty_ns", K_DUMP | K_RESTORE, NULL },
	{ "veths", K_RESTORE, "only a restore makes veth pairs" },
	{ "auto_ext_mnt", 0, NEEDS_NS },
	{ "ext_sharing", 0, NEEDS_NS },
	{ "ext_masters", 0, NEEDS_NS },
	{ "skip_mnt", 0, NEEDS_NS },
	{ "enable_fs", 0, NEEDS_NS },
	{ "mntns_compat_mode", 0, NEEDS_NS },
	{ "unix_sk_ino", 0, "a UNIX peer outside the process is refused" },
	{ "link_remap", K_DUMP | K_RESTORE, NULL },	/* a deleted file: a ghost image */
	{ "exec_cmd", 0, "memdump restore waits for or detaches from the process" },
	{ "leave_stopped", 0, "memdump resumes or kills the target" },
	{ "tcp_close", K_DUMP | K_RESTORE, NULL },
	{ "tcp_skip_in_flight", K_DUMP, "only a dump meets in-flight connections" },
	{ "network_lock", 0, "memdump locks with nftables" },
	{ "pre_dump_mode", K_DUMP, "only a pre-dump reads its pages in a mode" },
	/* what CRIU's command line takes and ignores here too (criu_cli.c) */
	{ "timeout", K_DUMP, "only a dump freezes" },
	{ "display_stats", K_ALL, NULL },
	{ "weak_sysctls", K_RESTORE, "only a restore sets sysctls" },
	{ "skip_file_rwx_check", K_RESTORE, "only a restore opens files" },
	{ "unprivileged", K_ALL, NULL },
	{ "force_irmap", K_DUMP, "only a dump reads inotify watches" },
	{ "irmap_scan_paths", K_DUMP, "only a dump reads inotify watches" },
	{ "cpu_cap", K_ALL, NULL },
	/* refused, as by CRIU's command line */
	{ "lsm_profile", 0, "memdump does not change LSM profiles: the restored process would "
	  "not get the one asked" },
	{ "lsm_mount_context", 0, "memdump does not change LSM mount contexts" },
	{ "cgroup_props", 0, "only CRIU's default cgroup properties are saved and restored" },
	{ "cgroup_props_file", 0, "only CRIU's default cgroup properties are saved and restored" },
	{ "cgroup_dump_controller", 0, "only CRIU's default cgroup properties are saved and "
	  "restored" },
	{ "cgroup_yard", 0, "over CRIU's command line only (--cgroup-yard)" },
	{ "tls", 0, TLS_PS },
	{ "tls_cacert", 0, TLS_PS },
	{ "tls_cacrl", 0, TLS_PS },
	{ "tls_cert", 0, TLS_PS },
	{ "tls_key", 0, TLS_PS },
	{ "tls_no_cn_verify", 0, TLS_PS },
	{ "pidfd_store_sk", 0, "no pidfd store: pidfd_store is false" },
	{ "log_to_stderr", 0, "the log goes to log_file; memdump's stderr is the runtime's" },
};

static const struct opt_rule *rule_of(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(rules); i++)
		if (!strcmp(rules[i].name, name))
			return &rules[i];
	return NULL;
}

/* A scalar field's value, widened (bools, enums and 32-bit integers are all criu_opts has). */
static int64_t scalar_at(const void *p, ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_BOOL:
		return *(const protobuf_c_boolean *)p;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		return *(const uint32_t *)p;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		return *(const int64_t *)p;
	default:
		return *(const int32_t *)p;
	}
}

/* Is field f of m set to something other than its default? */
static bool field_set(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
	const char *base = (const char *)m;
	const void *v = base + f->offset;

	if (f->label == PROTOBUF_C_LABEL_REPEATED)
		return *(const size_t *)(base + f->quantifier_offset) > 0;
	if (f->type == PROTOBUF_C_TYPE_STRING) {
		const char *s = *(char *const *)v;

		return s && s[0] && (!f->default_value || strcmp(s, f->default_value));
	}
	if (f->type == PROTOBUF_C_TYPE_MESSAGE || f->type == PROTOBUF_C_TYPE_BYTES)
		return f->type == PROTOBUF_C_TYPE_MESSAGE ? *(void *const *)v != NULL
							  : ((const ProtobufCBinaryData *)v)->len;
	if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset &&
	    !*(const protobuf_c_boolean *)(base + f->quantifier_offset))
		return false;
	return scalar_at(v, f->type) != (f->default_value ? scalar_at(f->default_value, f->type) : 0);
}

static void add_refusal(char *list, size_t len, const char *name, const char *why)
{
	size_t n = strlen(list);

	snprintf(list + n, len - n, "%s%s (%s)", n ? ", " : "", name, why);
}

static unsigned int kind_of(CriuReqType type)
{
	if (type == CRIU_REQ_TYPE__DUMP || type == CRIU_REQ_TYPE__PRE_DUMP)
		return K_DUMP;
	return type == CRIU_REQ_TYPE__RESTORE ? K_RESTORE : K_CHECK;
}

int parse_ext_net(const char *s, uint64_t *ino, const char **key)
{
	char *end = NULL;
	unsigned long long n = strncmp(s, "net[", 4) ? 0 : strtoull(s + 4, &end, 10);

	if (!n || end == s + 4 || strncmp(end, "]:", 2) || !end[2])
		return -EINVAL;
	if (ino)
		*ino = n;
	if (key)
		*key = end + 2;
	return 0;
}

/*
 * config_file: CRIU reads options from it, and takes a missing file as
 * none (runc always names /etc/criu/runc.conf). memdump reads no CRIU
 * configuration: a file that is there and says something is refused.
 */
static void check_config_file(const CriuOpts *co, char *list, size_t len)
{
	struct stat st;
	char why[320];

	if (!co->config_file || !co->config_file[0] || stat(co->config_file, &st) ||
	    !st.st_size)
		return;
	snprintf(why, sizeof(why), "%.256s exists: memdump reads no CRIU configuration file",
		 co->config_file);
	add_refusal(list, len, "config_file", why);
}

/*
 * ps, lazy_pages and status_fd on a dump: a page server that is memdump's (no fd of the
 * client's), a lazy dump only whole (not a pre-dump's) and unencrypted, status_fd only
 * for a lazy dump's page server (it says when that listens).
 */
static void check_lazy_dump(const CriuOpts *co, CriuReqType type, char *list, size_t len)
{
	bool lazy = co->has_lazy_pages && co->lazy_pages;
	bool served = lazy && co->ps && type == CRIU_REQ_TYPE__DUMP;

	if (type != CRIU_REQ_TYPE__DUMP && type != CRIU_REQ_TYPE__PRE_DUMP)
		return;
	if (co->ps && co->ps->has_fd)
		add_refusal(list, len, "ps", "fd: a connection of the client's; memdump connects "
			    "to or listens on address and port itself");
	else if (co->ps && (!co->ps->has_port || co->ps->port <= 0 || co->ps->port > 65535))
		add_refusal(list, len, "ps", "no port (1 to 65535)");
	else if (co->ps && co->has_image_key_fd)
		add_refusal(list, len, "ps", "with image_key_fd: the pages would leave unencrypted");
	if (lazy && type == CRIU_REQ_TYPE__PRE_DUMP)
		add_refusal(list, len, "lazy_pages", "a pre-dump leaves no pages served to a lazy "
			    "restore");
	else if (lazy && !co->ps)
		add_refusal(list, len, "lazy_pages", "a lazy dump needs ps (the port its pages are "
			    "served on)");
	if (co->has_status_fd && !served)
		add_refusal(list, len, "status_fd", "only a lazy dump's page server reports ready");
}

/* The values of honoured options that memdump cannot take: cgroup mode props. */
static void check_values(const CriuOpts *co, CriuReqType type, char *list, size_t len)
{
	check_lazy_dump(co, type, list, len);
	if (co->has_manage_cgroups_mode && co->manage_cgroups_mode == CRIU_CG_MODE__PROPS)
		add_refusal(list, len, "manage_cgroups_mode",
			    "props: only soft, full, strict and ignore");
	if (co->log_file && strchr(co->log_file, '/'))
		add_refusal(list, len, "log_file", "a name in the work directory, no '/'");
	if (co->has_empty_ns && (co->empty_ns & ~(uint32_t)CLONE_NEWNET))
		add_refusal(list, len, "empty_ns", "only CLONE_NEWNET: memdump restores every "
			    "other namespace as dumped");
	for (size_t i = 0; i < co->n_external; i++)
		if (parse_ext_net(co->external[i], NULL, NULL) || co->n_external > 1)
			add_refusal(list, len, "external", "only one net[INO]:KEY: memdump takes "
				    "no other external object");
	check_config_file(co, list, len);
}

/* Every option set that this request cannot honour, in one fail(). */
static int refuse_unhonoured(const CriuOpts *co, CriuReqType type)
{
	const ProtobufCMessageDescriptor *d = &criu_opts__descriptor;
	char list[1024] = "";

	for (unsigned int i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const struct opt_rule *r;

		if (!field_set(&co->base, f))
			continue;
		r = rule_of(f->name);
		if (!r || !(r->ok & kind_of(type)))
			add_refusal(list, sizeof(list), f->name,
				    r && r->why ? r->why : "not supported by memdump");
	}
	for (unsigned int i = 0; i < co->base.n_unknown_fields; i++) {
		char name[32];

		snprintf(name, sizeof(name), "field %u", co->base.unknown_fields[i].tag);
		add_refusal(list, sizeof(list), name, "unknown to memdump");
	}
	check_values(co, type, list, sizeof(list));
	if (list[0])
		return fail(-EOPNOTSUPP, "%s: options memdump cannot honour: %s",
			    rpc_type_name(type), list);
	return 0;
}

static bool same_dir(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/*
 * root: the target's own root on a dump; on a restore memdump's, or the
 * root a dump with a mount namespace of its own is given (restore --root).
 */
static int check_root(const CriuOpts *co, CriuReqType type)
{
	char own[64];

	if (!co->root || !co->root[0] || type == CRIU_REQ_TYPE__RESTORE)
		return 0;
	if (type == CRIU_REQ_TYPE__DUMP || type == CRIU_REQ_TYPE__PRE_DUMP)
		snprintf(own, sizeof(own), "/proc/%d/root", co->pid);
	else
		snprintf(own, sizeof(own), "/");
	if (same_dir(co->root, own))
		return 0;
	return fail(-EOPNOTSUPP, "%s: options memdump cannot honour: root (%s is not %s; another "
		    "root directory %s)", rpc_type_name(type), co->root,
		    type != CRIU_REQ_TYPE__CHECK ? "the root of the target" : "memdump's root",
		    NEEDS_NS);
}

static int fd_path(char *buf, size_t len, const struct rpc_conn *c, int fd, const char *what)
{
	struct stat st;

	snprintf(buf, len, "/proc/%d/fd/%d", c->peer, fd);
	if (stat(buf, &st))
		return fail(-errno, "%s %d: no such fd in the client (process %d): %s", what, fd,
			    c->peer, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return fail(-ENOTDIR, "%s %d of the client is not a directory", what, fd);
	return 0;
}

/* images_dir_fd (or images_dir), work_dir_fd, log_file, log_level */
static int map_dirs_and_log(const CriuOpts *co, CriuReqType type, const struct rpc_conn *c,
			    struct rpc_job *job)
{
	char work[PATH_MAX];
	int ret = 0;

	job->log_level = co->log_level < 0 ? 0 : co->log_level > 4 ? 4 : co->log_level;
	if (co->images_dir_fd >= 0)
		ret = fd_path(job->dir, sizeof(job->dir), c, co->images_dir_fd, "images_dir_fd");
	else if (co->images_dir && co->images_dir[0])
		snprintf(job->dir, sizeof(job->dir), "%s", co->images_dir);
	else if (type != CRIU_REQ_TYPE__CHECK)
		ret = fail(-EINVAL, "%s: no images directory (images_dir_fd or images_dir)",
			   rpc_type_name(type));
	if (ret)
		return ret;
	if (co->has_work_dir_fd) {
		ret = fd_path(work, sizeof(work), c, co->work_dir_fd, "work_dir_fd");
		snprintf(job->work_dir, sizeof(job->work_dir), "%s", ret ? "" : work);
	} else
		snprintf(work, sizeof(work), "%s", job->dir);
	if (!ret && co->log_file && co->log_file[0]) {
		if (!work[0])
			return fail(-EINVAL, "log_file %s: no work or images directory to put it in",
				    co->log_file);
		if ((size_t)snprintf(job->log_path, sizeof(job->log_path), "%s/%s", work,
				     co->log_file) >= sizeof(job->log_path))
			return fail(-ENAMETOOLONG, "log_file %s: name too long", co->log_file);
	}
	return ret;
}

/* image_key_fd: the key of an encrypted set, read from the client's fd (as images_dir_fd). */
static int map_key(const CriuOpts *co, const struct rpc_conn *c, struct rpc_job *job)
{
	char path[64];

	if (!co->has_image_key_fd)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", c->peer, co->image_key_fd);
	if (access(path, F_OK))
		return fail(-errno, "image_key_fd %d: no such fd in the client (process %d): %s",
			    co->image_key_fd, c->peer, strerror(errno));
	job->has_key = true;
	return img_key_load(path, -1, &job->key);
}

/* parent_img: the previous set, relative to the images directory (as CRIU). */
/* ext_mnt: CRIU's key and value, as --external mnt[KEY]:VALUE. */
static int map_ext_mnt(const CriuOpts *co, struct rpc_job *job)
{
	if (co->n_ext_mnt > MNT_EXT_MAX)
		return fail(-EINVAL, "%zu ext_mnt, at most %d", co->n_ext_mnt, MNT_EXT_MAX);
	for (size_t i = 0; i < co->n_ext_mnt; i++)
		job->mnt_ext[i] = (struct mnt_ext){ co->ext_mnt[i]->key, co->ext_mnt[i]->val, true };
	job->nr_mnt_ext = (int)co->n_ext_mnt;
	return 0;
}

/* ps, lazy_pages, status_fd (as CRIU: the client's fd reopened, written once ready). */
static int map_page_server(const CriuOpts *co, const struct rpc_conn *c, struct rpc_job *job)
{
	char path[64];

	job->lazy_dump = co->has_lazy_pages && co->lazy_pages;
	if (co->ps) {
		job->ps_addr = co->ps->address && co->ps->address[0] ? co->ps->address : NULL;
		job->ps_port = co->ps->port;
	}
	if (!co->has_status_fd)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", c->peer, co->status_fd);
	job->status_fd = open(path, O_WRONLY | O_CLOEXEC);
	if (job->status_fd < 0)
		return fail(-errno, "status_fd %d: cannot open the client's (process %d) for "
			    "writing: %s", co->status_fd, c->peer, strerror(errno));
	return 0;
}

/* A pre-dump reads its pages after the thaw (pagelate.c) unless told to splice them. */
static enum dump_mode pre_dump_mode(const CriuOpts *co, CriuReqType type)
{
	if (type != CRIU_REQ_TYPE__PRE_DUMP)
		return MODE_SPLICE;
	return co->has_pre_dump_mode && co->pre_dump_mode == CRIU_PRE_DUMP_MODE__SPLICE ?
	       MODE_SPLICE : MODE_READ;
}

static int map_dump(const CriuOpts *co, CriuReqType type, struct rpc_job *job)
{
	if (!co->has_pid || co->pid <= 0)
		return fail(-EINVAL, "DUMP: no pid (memdump does not dump the requesting process)");
	job->dump = (struct dump_opts){
		.pid = co->pid, .dir = job->dir, .mode = pre_dump_mode(co, type),
		.leave_running = co->has_leave_running && co->leave_running,
		.tcp_established = co->has_tcp_established && co->tcp_established,
		.tcp_close = co->has_tcp_close && co->tcp_close,
		.skip_in_flight = co->has_tcp_skip_in_flight && co->tcp_skip_in_flight,
		.ext_unix_sk = co->has_ext_unix_sk && co->ext_unix_sk,
		.pages_write = PAGES_AUTO, .quiet = true,
		.shell_job = co->has_shell_job && co->shell_job,
		.ghost_limit = co->has_ghost_limit ? co->ghost_limit : GHOST_LIMIT_DEFAULT,
		.prev_dir = co->parent_img, .pre_dump = type == CRIU_REQ_TYPE__PRE_DUMP,
		.track_mem = co->has_track_mem && co->track_mem,
		.mnt_ext = job->mnt_ext,
		.freeze_cgroup = co->freeze_cgroup && co->freeze_cgroup[0] ? co->freeze_cgroup : NULL,
		.ext_tty = { .any = co->has_orphan_pts_master && co->orphan_pts_master },
		/* as CRIU: runtimes reuse their checkpoint directory; not into a sealed one */
		.overwrite = !job->has_key,
		.key = job->has_key ? &job->key : NULL,
	};
	int ret = map_ext_mnt(co, job);

	if (co->n_external)
		parse_ext_net(co->external[0], &job->dump.ext_net_ino, &job->dump.ext_net_key);
	job->dump.nr_mnt_ext = job->nr_mnt_ext;
	return ret;
}

/* veths: if_in and if_out[@bridge] (as CRIU splits it), --external veth[IN]:OUT[@BRIDGE]. */
static int map_veths(const CriuOpts *co, struct restore_opts *r)
{
	if (co->n_veths > ARRAY_SIZE(r->veth_ext))
		return fail(-EINVAL, "RESTORE: %zu veths, at most %zu", co->n_veths,
			    ARRAY_SIZE(r->veth_ext));
	for (size_t i = 0; i < co->n_veths; i++) {
		char *out = co->veths[i]->if_out, *at = strchr(out, '@');

		if (!*co->veths[i]->if_in || !*out || out == at || (at && !at[1]))
			return fail(-EINVAL, "RESTORE: veths %s:%s: want an inside name and an "
				    "outside one[@bridge]", co->veths[i]->if_in, out);
		if (at)
			*at = '\0';	/* the request's own string, alive as long as the job */
		r->veth_ext[i] = (struct veth_ext){ co->veths[i]->if_in, out, at ? at + 1 : NULL, false };
	}
	r->nr_veth_ext = (int)co->n_veths;
	return 0;
}

/* cg_root (ctrl absent: every hierarchy not named) and inherit_fd (pipe keys). */
/* manage_cgroups_mode (false manage_cgroups: ignore, as CRIU's) as --manage-cgroups. */
static int cg_mode_of(const CriuOpts *co)
{
	if (!co->has_manage_cgroups_mode)
		return co->has_manage_cgroups && !co->manage_cgroups ? CG_MODE_IGNORE : CG_MODE_SOFT;
	switch (co->manage_cgroups_mode) {
	case CRIU_CG_MODE__IGNORE:
	case CRIU_CG_MODE__CG_NONE:
		return CG_MODE_IGNORE;
	case CRIU_CG_MODE__FULL:
		return CG_MODE_FULL;
	case CRIU_CG_MODE__STRICT:
		return CG_MODE_STRICT;
	default:
		return CG_MODE_SOFT;
	}
}

static int map_cg_root_and_inherit(const CriuOpts *co, struct restore_opts *r)
{
	if (co->n_cg_root > ARRAY_SIZE(r->cg_root_map))
		return fail(-EINVAL, "RESTORE: %zu cg_root, at most %zu", co->n_cg_root,
			    ARRAY_SIZE(r->cg_root_map));
	if (co->n_inherit_fd > ARRAY_SIZE(r->inherit_fd))
		return fail(-EINVAL, "RESTORE: %zu inherit_fd, at most %zu", co->n_inherit_fd,
			    ARRAY_SIZE(r->inherit_fd));
	for (size_t i = 0; i < co->n_cg_root; i++) {
		if (co->cg_root[i]->path[0] != '/')
			return fail(-EINVAL, "RESTORE: cg_root %s: not an absolute cgroup path",
				    co->cg_root[i]->path);
		r->cg_root_map[i] = (struct cg_root_map){ co->cg_root[i]->ctrl,
							  co->cg_root[i]->path };
	}
	r->nr_cg_root_map = (int)co->n_cg_root;
	r->cg_mode = cg_mode_of(co);
	for (size_t i = 0; i < co->n_inherit_fd; i++)
		r->inherit_fd[i] = (struct inherit_fd){ co->inherit_fd[i]->key,
							co->inherit_fd[i]->fd };
	r->nr_inherit_fd = (int)co->n_inherit_fd;
	return 0;
}

static int map_restore(const CriuOpts *co, struct rpc_job *job)
{
	int ret;

	job->restore = (struct restore_opts){ .dir = job->dir, .detach = true,
					      .pid_out = &job->restored_pid,
					      .shell_job = co->has_shell_job && co->shell_job,
					      .sibling = co->has_rst_sibling && co->rst_sibling,
					      .orphan_pts = co->has_orphan_pts_master &&
							    co->orphan_pts_master,
					      .tcp_close = co->has_tcp_close && co->tcp_close,
					      .lazy = co->has_lazy_pages && co->lazy_pages,
					      .empty_net = co->has_empty_ns &&
							   (co->empty_ns & CLONE_NEWNET) };
	if (co->root && co->root[0] && !same_dir(co->root, "/"))
		job->restore.root = co->root;	/* mntns.c: where its root is built */
	if (co->n_join_ns > ARRAY_SIZE(job->restore.join_ns))
		return fail(-EINVAL, "RESTORE: %zu join_ns, at most %zu", co->n_join_ns,
			    ARRAY_SIZE(job->restore.join_ns));
	for (size_t i = 0; i < co->n_join_ns; i++)
		job->restore.join_ns[i] = (struct ns_join){ co->join_ns[i]->ns,
							    co->join_ns[i]->ns_file };
	job->restore.nr_join_ns = (int)co->n_join_ns;
	ret = map_ext_mnt(co, job);
	job->restore.mnt_ext = job->mnt_ext;
	job->restore.nr_mnt_ext = job->nr_mnt_ext;
	if (!ret)
		ret = map_cg_root_and_inherit(co, &job->restore);
	return ret ? ret : map_veths(co, &job->restore);
}

int rpc_opts_map(const CriuOpts *co, CriuReqType type, const struct rpc_conn *c,
		 struct rpc_job *job)
{
	static const CriuOpts none = CRIU_OPTS__INIT;
	int ret;

	memset(job, 0, sizeof(*job));
	job->status_fd = -1;
	if (!co)
		co = &none;
	ret = map_dirs_and_log(co, type, c, job);	/* first: a refusal goes to the log too */
	if (!ret)
		ret = refuse_unhonoured(co, type);
	if (!ret)
		ret = check_root(co, type);
	if (!ret)
		ret = map_key(co, c, job);
	if (ret)
		return ret;
	job->notify = co->has_notify_scripts && co->notify_scripts;
	if (type == CRIU_REQ_TYPE__DUMP || type == CRIU_REQ_TYPE__PRE_DUMP) {
		ret = map_dump(co, type, job);
		return ret ? ret : map_page_server(co, c, job);
	}
	if (type == CRIU_REQ_TYPE__RESTORE)
		return map_restore(co, job);
	return 0;
}
