/*
 * The hook points as CRIU's NOTIFY messages (with notify_scripts): a
 * criu_resp of type NOTIFY naming the point (criu_notify.script) and the
 * process (criu_notify.pid), then the client's criu_req of type NOTIFY; its
 * notify_success false, anything else, or the client gone fails the hook.
 * orphan-pts-master carries an fd (SCM_RIGHTS), the new pty master, as CRIU's.
 */
#include <errno.h>

#include "log.h"
#include "cli/rpc.h"

static int await_ack(const struct rpc_conn *c, const char *name)
{
	CriuReq *req = NULL;
	int ret = rpc_recv(c, &req);
	bool ok;

	if (ret == 1)
		return fail(-ECONNRESET, "the RPC client hung up at the %s notification", name);
	if (ret < 0) {
		fail_context("the answer to the %s notification: ", name);
		return ret;
	}
	ok = req->type == CRIU_REQ_TYPE__NOTIFY && req->has_notify_success && req->notify_success;
	if (!ok && req->type != CRIU_REQ_TYPE__NOTIFY)
		ret = fail(-EPROTO, "the RPC client answered the %s notification with a %s request",
			   name, rpc_type_name(req->type));
	else if (!ok)
		ret = fail(-ECANCELED, "the RPC client failed the %s notification", name);
	criu_req__free_unpacked(req, NULL);
	return ret;
}

static int notify_fd(void *arg, enum hook_point p, pid_t pid, int fd)
{
	const struct rpc_conn *c = arg;
	CriuNotify n = CRIU_NOTIFY__INIT;
	CriuResp resp = CRIU_RESP__INIT;
	int ret;

	n.script = (char *)hook_name(p);
	n.has_pid = true;
	n.pid = pid;
	resp.type = CRIU_REQ_TYPE__NOTIFY;
	resp.success = true;
	resp.notify = &n;
	ret = rpc_send_fd(c, &resp, fd);
	return ret ? ret : await_ack(c, n.script);
}

static int notify(void *arg, enum hook_point p, pid_t pid)
{
	return notify_fd(arg, p, pid, -1);
}

const struct hooks *rpc_notifier_init(struct rpc_notifier *n, const struct rpc_conn *c)
{
	*n = (struct rpc_notifier){ .c = c, .hooks = { .fire = notify, .give_fd = notify_fd, .arg = (void *)c } };
	return &n->hooks;
}
