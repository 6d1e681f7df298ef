/*
 * --tls for the image stream (include/xfer.h): a GnuTLS session over the
 * connected socket, with mutual X.509 authentication as CRIU's page server:
 * each side presents its certificate (--tls-cert, --tls-key) and checks the
 * peer's against its CA (--tls-cacert; without it the system's CAs and
 * /etc/pki/CA/cacert.pem if present) and revocation list (--tls-cacrl, or
 * /etc/pki/CA/cacrl.pem if present), expiry included. The peer's certificate
 * must also name the host: the client checks the server's against the
 * address it connects to, the server the client's against its --address
 * (as CRIU does; none without --address or for a wildcard one);
 * --tls-no-cn-verify skips that.
 *
 * A failure is one line naming what failed (the file, the peer and why its
 * certificate was not accepted); nothing is sent before the session is made
 * and verified, so a dump to a page server that refuses it fails before it
 * seizes anything.
 *
 * libgnutls is opened (dlopen) by the first --tls connection only: linked,
 * it and the eight libraries it needs would be loaded by every memdump
 * process, a restore's too (+40% of a `memdump --version` here). Its
 * functions are called through gt, filled once in the process.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "common.h"
#include "log.h"
#include "xfer.h"

#define TLS_CACERT	"/etc/pki/CA/cacert.pem"
#define TLS_CACRL	"/etc/pki/CA/cacrl.pem"
#define TLS_CERT	"/etc/pki/criu/cert.pem"
#define TLS_KEY		"/etc/pki/criu/private/key.pem"

#define GNUTLS_SONAME	"libgnutls.so.30"

/* The functions of libgnutls memdump calls (gnutls_free is a variable: gt_free). */
#define GT_FUNCS(X) \
	X(gnutls_certificate_allocate_credentials) X(gnutls_certificate_free_credentials) \
	X(gnutls_certificate_set_x509_system_trust) X(gnutls_certificate_set_x509_trust_file) \
	X(gnutls_certificate_set_x509_crl_file) X(gnutls_certificate_set_x509_key_file) \
	X(gnutls_certificate_server_set_request) X(gnutls_certificate_send_x509_rdn_sequence) \
	X(gnutls_certificate_verification_status_print) X(gnutls_session_get_verify_cert_status) \
	X(gnutls_session_set_verify_cert) X(gnutls_session_get_desc) X(gnutls_init) \
	X(gnutls_deinit) X(gnutls_set_default_priority) X(gnutls_credentials_set) \
	X(gnutls_handshake_set_timeout) X(gnutls_transport_set_int2) X(gnutls_handshake) \
	X(gnutls_bye) X(gnutls_error_is_fatal) X(gnutls_strerror) X(gnutls_alert_get) \
	X(gnutls_alert_get_name) X(gnutls_alert_send_appropriate) X(gnutls_record_send) \
	X(gnutls_record_recv)

static struct {
#define GT_DECL(f) __typeof__(f) *f;
	GT_FUNCS(GT_DECL)
	gnutls_free_function *free;
	bool loaded;
} gt;

static int gt_load(void)
{
	void *h;

	if (gt.loaded)
		return 0;
	h = dlopen(GNUTLS_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return fail(-ENOPKG, "--tls needs %s (Debian's libgnutls30): %s", GNUTLS_SONAME,
			    dlerror());
#define GT_LOAD(f) \
	if (!(gt.f = (__typeof__(f) *)dlsym(h, #f))) \
		return fail(-ENOPKG, "%s has no %s", GNUTLS_SONAME, #f);
	GT_FUNCS(GT_LOAD)
	gt.free = dlsym(h, "gnutls_free");
	if (!gt.free)
		return fail(-ENOPKG, "%s has no gnutls_free", GNUTLS_SONAME);
	gt.loaded = true;
	return 0;
}

struct xfer_tls_session {
	gnutls_session_t s;
	gnutls_certificate_credentials_t cred;
	bool up;		/* handshake done: a close says goodbye */
};

/* The CAs: --tls-cacert alone, or the system's and the default file if present. */
static int load_cas(gnutls_certificate_credentials_t cred, const struct xfer_tls *t)
{
	const char *file = t->cacert ? t->cacert : TLS_CACERT;
	int n;

	if (!t->cacert) {
		n = gt.gnutls_certificate_set_x509_system_trust(cred);
		if (n < 0)
			pr_debug("no system CAs: %s", gt.gnutls_strerror(n));
		if (access(file, R_OK))
			return 0;
	}
	n = gt.gnutls_certificate_set_x509_trust_file(cred, file, GNUTLS_X509_FMT_PEM);
	if (n < 0)
		return fail(-EINVAL, "cannot load the CA certificate %s (--tls-cacert): %s", file,
			    gt.gnutls_strerror(n));
	if (n == 0 && t->cacert)
		return fail(-EINVAL, "no CA certificate in %s (--tls-cacert)", file);
	return 0;
}

/* The revocation list: --tls-cacrl must be readable, the default only if present. */
static int load_crl(gnutls_certificate_credentials_t cred, const struct xfer_tls *t)
{
	const char *file = t->cacrl ? t->cacrl : TLS_CACRL;
	int n;

	if (!t->cacrl && access(file, R_OK))
		return 0;
	n = gt.gnutls_certificate_set_x509_crl_file(cred, file, GNUTLS_X509_FMT_PEM);
	if (n < 0)
		return fail(-EINVAL, "cannot load the revocation list %s (--tls-cacrl): %s", file,
			    gt.gnutls_strerror(n));
	return 0;
}

static int load_creds(struct xfer_tls_session *ts, const struct xfer_tls *t)
{
	const char *cert = t->cert ? t->cert : TLS_CERT, *key = t->key ? t->key : TLS_KEY;
	int ret = gt.gnutls_certificate_allocate_credentials(&ts->cred);

	if (ret < 0)
		return fail(-ENOMEM, "TLS: %s", gt.gnutls_strerror(ret));
	ret = load_cas(ts->cred, t);
	if (!ret)
		ret = load_crl(ts->cred, t);
	if (ret)
		return ret;
	ret = gt.gnutls_certificate_set_x509_key_file(ts->cred, cert, key, GNUTLS_X509_FMT_PEM);
	if (ret < 0)
		return fail(-EINVAL, "cannot load the certificate %s and key %s (--tls-cert, "
			    "--tls-key): %s", cert, key, gt.gnutls_strerror(ret));
	return 0;
}

static int make_session(struct xfer_tls_session *ts, int fd, bool server, const char *hostname)
{
	int ret = gt.gnutls_init(&ts->s, (server ? GNUTLS_SERVER : GNUTLS_CLIENT) | GNUTLS_NO_SIGNAL);

	if (ret < 0) {
		ts->s = NULL;
		return fail(-ENOMEM, "TLS: %s", gt.gnutls_strerror(ret));
	}
	ret = gt.gnutls_set_default_priority(ts->s);
	if (!ret)
		ret = gt.gnutls_credentials_set(ts->s, GNUTLS_CRD_CERTIFICATE, ts->cred);
	if (ret < 0)
		return fail(-EINVAL, "TLS: %s", gt.gnutls_strerror(ret));
	if (server) {
		gt.gnutls_certificate_server_set_request(ts->s, GNUTLS_CERT_REQUIRE);
		gt.gnutls_certificate_send_x509_rdn_sequence(ts->s, 1);	/* no CA list sent */
	}
	/* the peer's certificate checked in the handshake: CA, CRL, time, and the name */
	gt.gnutls_session_set_verify_cert(ts->s, hostname, 0);
	gt.gnutls_handshake_set_timeout(ts->s, GNUTLS_DEFAULT_HANDSHAKE_TIMEOUT);
	gt.gnutls_transport_set_int2(ts->s, fd, fd);
	return 0;
}

/* Why the peer's certificate was refused, in GnuTLS's words. */
static int refused_cert(struct xfer *x)
{
	unsigned int status = gt.gnutls_session_get_verify_cert_status(x->tls->s);
	gnutls_datum_t out = { NULL, 0 };
	int ret;

	if (gt.gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &out, 0) < 0)
		ret = fail(-EACCES, "the certificate of the %s was refused (status %#x)", x->peer,
			   status);
	else {
		char *end = (char *)out.data + strlen((char *)out.data);

		while (end > (char *)out.data && end[-1] == ' ')
			*--end = '\0';
		ret = fail(-EACCES, "the certificate of the %s was refused: %s%s", x->peer,
			   (char *)out.data, status & GNUTLS_CERT_UNEXPECTED_OWNER ?
			   " (--tls-no-cn-verify accepts it)" : "");
	}
	(*gt.free)(out.data);
	return ret;
}

/* The peer ended the session with an alert: it refused this side (its certificate, ...). */
static int refused_here(struct xfer *x)
{
	const char *alert = gt.gnutls_alert_get_name(gt.gnutls_alert_get(x->tls->s));

	return fail(-EACCES, "the %s refused the TLS session: %s (does its --tls-cacert "
		    "trust this side's --tls-cert?)", x->peer, alert ? alert : "an alert");
}

static int handshake(struct xfer *x)
{
	char *desc;
	int ret;

	do
		ret = gt.gnutls_handshake(x->tls->s);
	while (ret < 0 && !gt.gnutls_error_is_fatal(ret));
	if (ret == GNUTLS_E_FATAL_ALERT_RECEIVED)
		return refused_here(x);
	if (ret < 0 && ret != GNUTLS_E_PULL_ERROR && ret != GNUTLS_E_PUSH_ERROR &&
	    ret != GNUTLS_E_PREMATURE_TERMINATION)
		gt.gnutls_alert_send_appropriate(x->tls->s, ret);	/* the peer learns why */
	if (ret == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR)
		return refused_cert(x);
	if (ret == GNUTLS_E_PULL_ERROR || ret == GNUTLS_E_PREMATURE_TERMINATION)
		return fail(-ECONNABORTED, "TLS handshake with the %s failed: it closed the "
			    "connection (no TLS there, or it refused this side)", x->peer);
	if (ret < 0)
		return fail(-ECONNABORTED, "TLS handshake with the %s failed: %s", x->peer,
			    gt.gnutls_strerror(ret));
	x->tls->up = true;
	desc = gt.gnutls_session_get_desc(x->tls->s);	/* gnutls_free()d */
	pr_info("TLS with the %s: %s", x->peer, desc ? desc : "?");
	(*gt.free)(desc);
	return 0;
}

int xfer_tls_start(struct xfer *x, bool server, const char *hostname,
		   const struct xfer_tls *tls)
{
	int ret;

	ret = gt_load();
	if (ret)
		return ret;
	x->tls = calloc(1, sizeof(*x->tls));
	if (!x->tls)
		return -ENOMEM;
	ret = load_creds(x->tls, tls);
	if (!ret)
		ret = make_session(x->tls, x->fd, server, tls->no_cn_verify ? NULL : hostname);
	if (!ret)
		ret = handshake(x);
	if (ret)
		xfer_tls_end(x);
	return ret;
}

void xfer_tls_end(struct xfer *x)
{
	if (!x->tls)
		return;
	if (x->tls->up)
		gt.gnutls_bye(x->tls->s, GNUTLS_SHUT_WR);
	if (x->tls->s)
		gt.gnutls_deinit(x->tls->s);
	if (x->tls->cred)
		gt.gnutls_certificate_free_credentials(x->tls->cred);
	free(x->tls);
	x->tls = NULL;
}

/* After a failed send: an alert the peer sent before it closed (it refused this side), or 0. */
static int pending_alert(struct xfer *x)
{
	int fl = fcntl(x->fd, F_GETFL), ret = 0;
	char c;

	if (fl < 0 || fcntl(x->fd, F_SETFL, fl | O_NONBLOCK))
		return 0;
	if (gt.gnutls_record_recv(x->tls->s, &c, 1) == GNUTLS_E_FATAL_ALERT_RECEIVED)
		ret = refused_here(x);
	fcntl(x->fd, F_SETFL, fl);
	return ret;
}

ssize_t xfer_tls_send(struct xfer *x, const void *buf, size_t len)
{
	ssize_t n;

	do
		n = gt.gnutls_record_send(x->tls->s, buf, len);
	while (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED);
	if (n < 0) {
		int ret = pending_alert(x);

		pr_debug("TLS send to the %s: %s", x->peer, gt.gnutls_strerror((int)n));
		x->tls->up = false;
		return ret ? ret : -EPIPE;
	}
	return n;
}

ssize_t xfer_tls_recv(struct xfer *x, void *buf, size_t len)
{
	ssize_t n;

	do
		n = gt.gnutls_record_recv(x->tls->s, buf, len);
	while (n == GNUTLS_E_INTERRUPTED);
	if (n >= 0)
		return n;
	if (n == GNUTLS_E_AGAIN)	/* SO_RCVTIMEO (xfer.c's hello) */
		return -EAGAIN;
	x->tls->up = false;
	if (n == GNUTLS_E_PREMATURE_TERMINATION || n == GNUTLS_E_PULL_ERROR)
		return 0;	/* the peer closed (or reset) without a goodbye */
	if (n == GNUTLS_E_FATAL_ALERT_RECEIVED)	/* TLS 1.3: a client's certificate refused */
		return refused_here(x);
	return fail(-EBADMSG, "TLS from the %s: %s", x->peer, gt.gnutls_strerror((int)n));
}
