/*
 * memdump swrk FD: CRIU's RPC server, as runc, crun, go-criu and pycriu
 * start it (criu swrk FD). One request, then another only while the
 * request asks keep_open (VERSION, FEATURE_CHECK and CHECK, as CRIU);
 * the exit status is 0 when the last request succeeded.
 *
 *   VERSION        CRIU RPC_CRIU_MAJOR.RPC_CRIU_MINOR, name "memdump", gitid memdump's version
 *   FEATURE_CHECK  mem_track true (a userfaultfd the target keeps, not soft-dirty),
 *                  lazy_pages true (a restore's, and a dump's with ps), pidfd_store false
 *   PRE_DUMP       as DUMP, pre_dump: memory only, left running and tracked
 *   CHECK          memdump check's probes, quietly
 *   DUMP           dump_run() in a worker (worker.c): a client that hangs up stops it,
 *                  and the target runs on; with lazy_pages and ps its pages served
 *                  after (lazy_server.c) before the answer, as CRIU's lazy dump
 *   RESTORE        restore_run() detached: the response carries the restored PID
 *
 * Any failure, a malformed or unknown request included, is answered with
 * success false and the one-line reason in cr_errmsg (its errno in cr_errno).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "cli/lazy_server.h"
#include "cli/options.h"
#include "cli/rpc.h"
#include "cli/stats_files.h"
#include "cli/worker.h"

static int respond(const struct rpc_conn *c, CriuResp *resp, int ret)
{
	int sent;

	resp->success = ret >= 0;
	if (ret < 0)	/* the log a runtime names (stderr without one) */
		pr_err("%s failed: %s", rpc_type_name(resp->type), fail_reason());
	if (ret < 0) {
		resp->has_cr_errno = true;
		resp->cr_errno = -ret;
		resp->cr_errmsg = (char *)fail_reason();
	}
	sent = rpc_send(c, resp);
	return ret < 0 ? ret : sent;
}

static int respond_error(const struct rpc_conn *c, CriuReqType type, int ret)
{
	CriuResp resp = CRIU_RESP__INIT;

	resp.type = type;
	return respond(c, &resp, ret);
}

static int serve_version(const struct rpc_conn *c)
{
	CriuResp resp = CRIU_RESP__INIT;
	CriuVersion v = CRIU_VERSION__INIT;

	v.major_number = RPC_CRIU_MAJOR;
	v.minor_number = RPC_CRIU_MINOR;
	v.has_sublevel = true;
	v.sublevel = 0;
	v.name = "memdump";
	v.gitid = "memdump-" MEMDUMP_VERSION;
	resp.type = CRIU_REQ_TYPE__VERSION;
	resp.version = &v;
	return respond(c, &resp, 0);
}

/*
 * Truthful: memory tracking (pre-dump), lazy pages (a RESTORE's lazy_pages is
 * memdump's lazy restore, a DUMP's with ps CRIU's lazy dump), no pidfd store yet.
 */
static int serve_features(const struct rpc_conn *c)
{
	CriuResp resp = CRIU_RESP__INIT;
	CriuFeatures f = CRIU_FEATURES__INIT;

	f.has_mem_track = f.has_lazy_pages = f.has_pidfd_store = true;
	f.mem_track = f.lazy_pages = true;
	resp.type = CRIU_REQ_TYPE__FEATURE_CHECK;
	resp.features = &f;
	return respond(c, &resp, 0);
}

/* The request's log level and file (in its work directory) from now on. */
static int apply_log(const struct rpc_job *job)
{
	log_close();
	return log_init(job->log_level, job->log_path[0] ? job->log_path : NULL);
}

/*
 * The job's options, and its log open: a refusal or a failure is written
 * there too (runtimes point their users at that file, not at cr_errmsg).
 */
static int prepare_job(const struct rpc_conn *c, const CriuReq *req, struct rpc_job *job)
{
	int ret = rpc_opts_map(req->opts, req->type, c, job);
	int log = job->log_path[0] ? apply_log(job) : 0;

	return ret ? ret : log;
}

static int serve_check(const struct rpc_conn *c, const CriuReq *req)
{
	struct rpc_job job;
	int ret = prepare_job(c, req, &job);

	if (!ret)
		ret = check_features(NULL);
	return respond_error(c, CRIU_REQ_TYPE__CHECK, ret);
}

/* ps without lazy_pages: the pages go to the page server at ps (as dump --page-server). */
static int dump_in_worker(void *arg, struct dump_trace *trace)
{
	static const struct xfer_tls no_tls;
	struct rpc_job *job = arg;
	struct xfer x = { .fd = -1 };
	bool ps = job->ps_port && !job->lazy_dump;
	int ret;

	job->dump.trace = trace;
	job->dump.xfer = ps ? &x : NULL;
	ret = dump_check_opts(&job->dump);	/* before the page server hears of it */
	if (!ret && ps)
		ret = xfer_connect(&x, "page server", job->ps_addr ? job->ps_addr : "localhost",
				   job->ps_port, &no_tls);
	if (!ret)
		ret = dump_run(&job->dump);
	xfer_close(&x);
	return ret;
}

/* The lazy dump's page server listens: status_fd's zero byte, the client's NOTIFY. */
struct ready {
	struct hooks hooks;
	const struct hooks *notify;	/* notify_scripts', or NULL */
	int *status_fd;
};

static int say_ready(void *arg, enum hook_point p, pid_t pid)
{
	struct ready *r = arg;

	if (*r->status_fd >= 0) {
		if (write(*r->status_fd, "", 1) != 1)
			pr_warn("cannot write to status_fd: %s", strerror(errno));
		close(*r->status_fd);
		*r->status_fd = -1;
	}
	return r->notify ? r->notify->fire(r->notify->arg, p, pid) : 0;	/* logged once, above */
}

/*
 * lazy_pages with ps (CRIU's lazy dump): the set is whole on disk, the target gone;
 * its pages-1.img served at ps to one lazy-pages --page-server until every page is
 * fetched. The DUMP is answered after, as CRIU's (runc waits for it to destroy the
 * container). A page server lost before the end leaves the set whole to restore.
 */
static int serve_lazy(struct rpc_job *job, const struct hooks *notify)
{
	struct ready r = { .hooks = { .fire = say_ready }, .notify = notify,
			   .status_fd = &job->status_fd };
	struct options o = { .address = job->ps_addr, .port = job->ps_port, .status_fd = -1,
			     .ready = &r.hooks };

	r.hooks.arg = &r;
	pr_info("lazy dump: serving %s/pages-1.img on %s:%d", job->dir,
		job->ps_addr ? job->ps_addr : "*", job->ps_port);
	return lazy_serve(&o, job->dir);
}

static int serve_dump(const struct rpc_conn *c, const CriuReq *req, CriuReqType type)
{
	CriuResp resp = CRIU_RESP__INIT;
	CriuDumpResp dr = CRIU_DUMP_RESP__INIT;
	struct rpc_notifier n;
	struct worker_result res;
	struct rpc_job job;
	int ret = prepare_job(c, req, &job);

	if (!ret && job.notify)
		job.dump.hooks = rpc_notifier_init(&n, c);
	if (!ret)
		ret = worker_call(dump_in_worker, &job, c->sk, &res);
	if (!ret && res.ret < 0)
		ret = fail(res.ret, "%s", res.reason);
	if (!ret && job.lazy_dump)
		ret = serve_lazy(&job, job.notify ? &n.hooks : NULL);
	if (job.status_fd >= 0)
		close(job.status_fd);
	memset(&job.key, 0, sizeof(job.key));
	if (!ret)
		stats_dump_to_work_dir(job.dir, job.work_dir);
	resp.type = type;
	dr.has_restored = true;		/* CRIU's: false, the target was not restored by memdump */
	resp.dump = &dr;
	return respond(c, &resp, ret);
}

/*
 * An encrypted set opened (authenticated whole) into a private tmpfs, as the
 * command line's restore --decrypt: *dirfd its directory there, path naming
 * it, job->restore reads it. Refused by name without a key. 0 or <0.
 */
static int open_sealed(struct rpc_job *job, int *dirfd, char *path, size_t len)
{
	int fd = open(job->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bool sealed = fd >= 0 && img_set_sealed(fd);
	int ret;

	if (fd >= 0)
		close(fd);
	if (sealed && !job->has_key)
		return fail(-EACCES, "image set %s is encrypted: the request gives no key "
			    "(criu_opts image_key_fd, field 1000, memdump's own)", job->dir);
	if (!sealed && job->has_key)
		return fail(-EINVAL, "image set %s is not encrypted (image_key_fd)", job->dir);
	if (!sealed)
		return 0;
	ret = crypt_open_set(&job->key, job->dir, dirfd, path, len, NULL);
	if (!ret)
		job->restore.dir = path;
	return ret;
}

/*
 * lazy_pages on a restore: a lazy-pages daemon waiting on lazy-pages.socket in the
 * work directory (else the images directory), as CRIU's, is joined, and takes the
 * pages from a lazy dump's page server when it was started so; without one, memdump's
 * own page handler serves them from the set's pages-1.img.
 */
static int join_lazy_daemon(struct rpc_job *job)
{
	char path[PATH_MAX + 32];
	struct stat st;

	snprintf(path, sizeof(path), "%s/lazy-pages.socket",
		 job->work_dir[0] ? job->work_dir : job->dir);
	if (lstat(path, &st) || !S_ISSOCK(st.st_mode)) {
		pr_info("lazy restore: no lazy-pages daemon at %s, memdump's page handler "
			"serves the pages", path);
		return 0;
	}
	return lazy_daemon_join(path, &job->restore);
}

static int serve_restore(const struct rpc_conn *c, const CriuReq *req)
{
	CriuResp resp = CRIU_RESP__INIT;
	CriuRestoreResp rr = CRIU_RESTORE_RESP__INIT;
	struct rpc_notifier n;
	struct rpc_job job;
	char sealed[64];
	int dirfd = -1, ret = prepare_job(c, req, &job);

	if (!ret && job.notify)
		job.restore.hooks = rpc_notifier_init(&n, c);
	uint64_t t0 = now_us();

	if (!ret)
		ret = open_sealed(&job, &dirfd, sealed, sizeof(sealed));
	memset(&job.key, 0, sizeof(job.key));
	if (!ret && job.restore.lazy)
		ret = join_lazy_daemon(&job);
	if (!ret)
		ret = restore_run(&job.restore);
	lazy_daemon_leave(&job.restore);
	if (dirfd >= 0)
		close(dirfd);
	if (!ret)
		stats_restore_to_work_dir(job.work_dir, now_us() - t0);
	resp.type = CRIU_REQ_TYPE__RESTORE;
	if (!ret) {
		rr.pid = job.restored_pid;
		resp.restore = &rr;
	}
	return respond(c, &resp, ret);
}

static int serve(const struct rpc_conn *c, const CriuReq *req)
{
	pr_info("RPC request %s (%d)%s", rpc_type_name(req->type), req->type,
		req->keep_open ? ", keep_open" : "");
	switch (req->type) {
	case CRIU_REQ_TYPE__VERSION:
		return serve_version(c);
	case CRIU_REQ_TYPE__FEATURE_CHECK:
		return serve_features(c);
	case CRIU_REQ_TYPE__CHECK:
		return serve_check(c, req);
	case CRIU_REQ_TYPE__DUMP:
	case CRIU_REQ_TYPE__PRE_DUMP:
		return serve_dump(c, req, req->type);
	case CRIU_REQ_TYPE__RESTORE:
		return serve_restore(c, req);
	case CRIU_REQ_TYPE__NOTIFY:
		return respond_error(c, CRIU_REQ_TYPE__EMPTY, fail(-EPROTO, "a NOTIFY request "
								  "outside a notification"));
	default:
		return respond_error(c, req->type, fail(-EOPNOTSUPP,
			"request type %s (%d) is not supported by memdump", rpc_type_name(req->type),
			req->type));
	}
}

static bool keep_open_ok(CriuReqType t)
{
	return t == CRIU_REQ_TYPE__VERSION || t == CRIU_REQ_TYPE__FEATURE_CHECK ||
	       t == CRIU_REQ_TYPE__CHECK;
}

/* fd argv[0]: a connected SOCK_SEQPACKET socket; its peer is the client. */
static int open_conn(const struct options *o, struct rpc_conn *c)
{
	struct ucred cred;
	socklen_t len = sizeof(int);
	int type = 0;
	char *end;

	if (o->argc != 1)
		return fail(-EINVAL, "usage: swrk FD (a SOCK_SEQPACKET socket)");
	c->sk = strtol(o->argv[0], &end, 10);
	if (*end || c->sk < 0)
		return fail(-EINVAL, "swrk: bad fd '%s'", o->argv[0]);
	if (getsockopt(c->sk, SOL_SOCKET, SO_TYPE, &type, &len) || type != SOCK_SEQPACKET)
		return fail(-ENOTSOCK, "swrk: fd %d is not a SOCK_SEQPACKET socket", c->sk);
	len = sizeof(cred);
	if (getsockopt(c->sk, SOL_SOCKET, SO_PEERCRED, &cred, &len) || cred.pid <= 0)
		return fail(-ENOTCONN, "swrk: fd %d has no peer", c->sk);
	c->peer = cred.pid;
	return 0;
}

int cmd_swrk(const struct options *o)
{
	struct rpc_conn c;
	CriuReq *req;
	bool keep;
	int ret = open_conn(o, &c);

	if (ret)
		return ret;
	signal(SIGPIPE, SIG_IGN);
	pr_info("serving CRIU RPC on fd %d for process %d", c.sk, c.peer);
	do {
		fail_clear();
		ret = rpc_recv(&c, &req);
		if (ret == 1)
			return 0;	/* the client is done */
		if (ret < 0)
			return respond_error(&c, CRIU_REQ_TYPE__EMPTY, ret);
		if (req->keep_open && !keep_open_ok(req->type))
			ret = respond_error(&c, req->type, fail(-EINVAL, "keep_open is only for VERSION, "
						"FEATURE_CHECK and CHECK requests"));
		else
			ret = serve(&c, req);
		keep = req->keep_open && keep_open_ok(req->type);
		criu_req__free_unpacked(req, NULL);
	} while (keep);
	return ret;
}
