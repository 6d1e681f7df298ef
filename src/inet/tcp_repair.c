/*
 * A TCP connection (established, SYN_SENT, closing, or over: tcp_states.h), read in
 * repair mode (TCP_REPAIR) from a copy of the target's fd: both sequence numbers, the receive queue (read,
 * not yet taken by the process) and the send queue (sent and not yet
 * acknowledged, then not yet sent), the window (TCP_REPAIR_WINDOW), MSS,
 * window scales, SACK and timestamps. The network lock (netlock.h) is on
 * before: nothing the peer sends meanwhile can be lost, nor answered with a
 * reset. The socket is in repair mode only while it is read: a memdump
 * killed later (every process of it) leaves a connection that works once
 * the kernel took the lock away with memdump's socket (netlock.h). A killing
 * dump puts it in repair mode again once the target is killed, so that its
 * close sends nothing (sockets_finish()).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "ctx/dump_ctx.h"
#include "ctx/file_desc.h"
#include "net/sock.h"
#include "net/sk_err.h"
#include "inet/tcp_states.h"
#include "image/image.h"
#include "fault.h"
#include "log.h"

#include "tcp-stream.pb-c.h"
#include "inet/sk_inet.h"

struct tcp_stream {
	uint32_t sk_err;	/* a connection over (tcp_conn_over): its pending error */
	uint32_t inq_seq, outq_seq;
	uint8_t *inq, *outq;
	uint32_t inq_len, outq_len, unsq_len;
	uint32_t opt_mask, snd_wscale, rcv_wscale, mss_clamp, timestamp;
	struct tcp_repair_window win;
};

static int set_int(int fd, int opt, int v)
{
	return setsockopt(fd, SOL_TCP, opt, &v, sizeof(v)) ? -errno : 0;
}

static int get_u32(int fd, int opt, uint32_t *v)
{
	socklen_t l = sizeof(*v);

	return getsockopt(fd, SOL_TCP, opt, v, &l) ? -errno : 0;
}

/* One queue (TCP_RECV_QUEUE, TCP_SEND_QUEUE): its end sequence and bytes. */
static int read_queue(int fd, int q, uint32_t len, uint32_t *seq, uint8_t **data)
{
	ssize_t n;
	int ret = set_int(fd, TCP_REPAIR_QUEUE, q);

	if (!ret)
		ret = get_u32(fd, TCP_QUEUE_SEQ, seq);
	if (ret || !len)
		return ret;
	*data = malloc(len);
	if (!*data)
		return -ENOMEM;
	n = recv(fd, *data, len, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	return (uint32_t)n == len ? 0 : -EIO;
}

/*
 * A connection over: the reset (or timeout) purged its send queue but left
 * write_seq and snd_una apart, which SIOCOUTQ still shows; as many bytes of
 * zeros stand for them, sent in the rebuild and purged by its reset.
 */
static int purged_queue(int fd, struct tcp_stream *t)
{
	int ret = read_queue(fd, TCP_SEND_QUEUE, 0, &t->outq_seq, NULL);

	if (ret || !t->outq_len)
		return ret;
	t->outq = calloc(1, t->outq_len);
	return t->outq ? 0 : -ENOMEM;
}

bool tcp_repairable(int state)
{
	return tcp_state_repairable(state);
}

/*
 * The send queue counts this end's FIN until it is acknowledged, the unsent
 * part until it is sent (it is last: unsent data means an unsent FIN too).
 * The FIN is no data: not counted (tcp_states.h).
 */
static int queue_lengths(int fd, int state, struct tcp_stream *t)
{
	int in = 0, out = 0, unsent = 0;

	if (ioctl(fd, SIOCINQ, &in) || ioctl(fd, SIOCOUTQ, &out) || ioctl(fd, SIOCOUTQNSD, &unsent))
		return -errno;
	if (tcp_fin_sent(state) && !tcp_fin_acked(state)) {
		out -= out > 0;
		unsent -= unsent > 0;
	}
	t->inq_len = in;
	t->outq_len = out;
	t->unsq_len = unsent;
	return 0;
}

static int read_options(int fd, struct tcp_stream *t)
{
	struct tcp_info ti;
	socklen_t l = sizeof(ti);
	int ret;

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, SOL_TCP, TCP_INFO, &ti, &l))
		return -errno;
	t->opt_mask = ti.tcpi_options;
	t->snd_wscale = ti.tcpi_snd_wscale;
	t->rcv_wscale = ti.tcpi_rcv_wscale;
	ret = get_u32(fd, TCP_MAXSEG, &t->mss_clamp);	/* in repair mode: the clamp */
	if (!ret && (t->opt_mask & TCPI_OPT_TIMESTAMPS))
		ret = get_u32(fd, TCP_TIMESTAMP, &t->timestamp);
	l = sizeof(t->win);
	if (!ret && getsockopt(fd, SOL_TCP, TCP_REPAIR_WINDOW, &t->win, &l))
		ret = -errno;
	return ret;
}

/* For the supervisor, should we die with the socket in repair mode. */
static int trace_repaired(struct dump_trace *tr, pid_t pid, int fd, int reuseaddr)
{
	struct stat st;
	int n;

	if (!tr)
		return 0;
	n = tr->nr_repair;
	if (n == DUMP_TRACE_REPAIRS || fstat(fd, &st))
		return fail(-E2BIG, "more than %d TCP connections in repair mode",
			    DUMP_TRACE_REPAIRS);
	tr->repair[n].ino = st.st_ino;
	tr->repair[n].reuseaddr = reuseaddr;
	tr->repair[n].pid = pid;
	__atomic_store_n(&tr->nr_repair, n + 1, __ATOMIC_RELEASE);
	return 0;
}

static int keep_repaired(struct dump_ctx *d, int copy, int reuseaddr)
{
	struct sk_set *set = &d->sockets;
	struct sk_repaired *r = realloc(set->repair, (set->nr_repair + 1) * sizeof(*r));
	int fd = r ? dup(copy) : -1;

	if (r)
		set->repair = r;
	if (fd < 0)
		return -ENOMEM;
	set->repair[set->nr_repair++] = (struct sk_repaired){ fd, reuseaddr };
	return trace_repaired(d->trace, d->pid, fd, reuseaddr);
}

/*
 * Out of repair mode at once, without the window probe (the lock would drop
 * it): leaving it clears SO_REUSEADDR, which is put back.
 */
static int leave_repair(int fd, int reuseaddr)
{
	int ret = set_int(fd, TCP_REPAIR, TCP_REPAIR_OFF_NO_WP);

	if (!ret && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuseaddr, sizeof(reuseaddr)))
		ret = -errno;
	return ret;
}

/*
 * POLLERR: sk_err, or the error queue. Both errors are read through BPF; one
 * that cannot be, with POLLERR, fails; without it, none is pending (soft
 * errors, which poll does not show, are taken as none, as for a connection
 * that is not over).
 */
int tcp_over_errors(int copy, struct sk_errs *e)
{
	struct pollfd p = { .fd = copy, .events = POLLIN };
	int ret;

	if (poll(&p, 1, 0) < 0)
		return -errno;
	ret = sk_errs_peek(copy, e);
	if (ret && !(p.revents & POLLERR)) {
		pr_debug("sk_err of a connection over not read (%s), none pending (no POLLERR)\n",
			 strerror(-ret));
		*e = (struct sk_errs){ 0, 0 };
		return 0;
	}
	if (!ret && (p.revents & POLLERR) && !e->err)
		return -EMSGSIZE;
	return ret;
}

int tcp_stream_collect(struct dump_ctx *d, int copy, struct sk_inet *in, int reuseaddr)
{
	struct tcp_stream *t = calloc(1, sizeof(*t));
	struct sk_errs e;
	int ret;

	if (!t)
		return -ENOMEM;
	in->stream = t;
	if (tcp_conn_over(in->state, in->dport)) {	/* sends nothing, receives nothing */
		ret = tcp_over_errors(copy, &e);
		if (ret)
			return fail(ret, "cannot read the pending error of a TCP connection over: %s",
				    strerror(-ret));
		t->sk_err = e.err;
	} else if (!d->sockets.locked) {
		return fail(-EIO, "an established connection without the network lock");
	}
	ret = keep_repaired(d, copy, reuseaddr);	/* traced before it is in repair mode */
	if (!ret)
		ret = set_int(copy, TCP_REPAIR, 1);
	if (ret)
		return fail(ret, "cannot put a TCP connection in repair mode: %s", strerror(-ret));
	if (!ret)
		ret = queue_lengths(copy, in->state, t);
	if (!ret)
		ret = read_options(copy, t);
	if (!ret)
		ret = read_queue(copy, TCP_RECV_QUEUE, t->inq_len, &t->inq_seq, &t->inq);
	if (!ret && tcp_conn_over(in->state, in->dport))
		ret = purged_queue(copy, t);
	else if (!ret)
		ret = read_queue(copy, TCP_SEND_QUEUE, t->outq_len, &t->outq_seq, &t->outq);
	set_int(copy, TCP_REPAIR_QUEUE, TCP_NO_QUEUE);
	if (!ret)
		fault_point("tcp-repaired");
	if (!ret)
		ret = leave_repair(copy, reuseaddr);
	else
		leave_repair(copy, reuseaddr);	/* the dump fails: not left in it meanwhile */
	if (ret)
		return fail(ret, "cannot read a TCP connection in repair mode: %s", strerror(-ret));
	fault_point("tcp-read");
	return 0;
}

int tcp_stream_write(struct dump_ctx *d, const struct file_desc *f)
{
	const struct tcp_stream *t = f->sk->in.stream;
	TcpStreamEntry e = TCP_STREAM_ENTRY__INIT;
	struct image *img;
	int ret = img_create(&d->dir, IMG_TCP_STREAM, f->sk->ino, &img);

	if (ret)
		return ret;
	e.inq_len = t->inq_len;
	e.inq_seq = t->inq_seq;
	e.outq_len = t->outq_len;
	e.outq_seq = t->outq_seq;
	e.opt_mask = t->opt_mask;
	e.snd_wscale = t->snd_wscale;
	e.has_rcv_wscale = true;
	e.rcv_wscale = t->rcv_wscale;
	e.mss_clamp = t->mss_clamp;
	e.has_timestamp = true;
	e.timestamp = t->timestamp;
	e.has_unsq_len = true;
	e.unsq_len = t->unsq_len;
	e.has_snd_wl1 = e.has_snd_wnd = e.has_max_window = e.has_rcv_wnd = e.has_rcv_wup = true;
	e.snd_wl1 = t->win.snd_wl1;
	e.snd_wnd = t->win.snd_wnd;
	e.max_window = t->win.max_window;
	e.rcv_wnd = t->win.rcv_wnd;
	e.rcv_wup = t->win.rcv_wup;
	e.has_sk_err = tcp_conn_over(f->sk->in.state, f->sk->in.dport);
	e.sk_err = t->sk_err;
	ret = img_write_msg(img, &e.base);
	if (!ret && t->inq_len)
		ret = img_write_raw(img, t->inq, t->inq_len);
	if (!ret && t->outq_len)
		ret = img_write_raw(img, t->outq, t->outq_len);
	if (ret) {
		img_abort(img);
		return ret;
	}
	return img_close(img);
}

void tcp_stream_free(struct tcp_stream *t)
{
	if (!t)
		return;
	free(t->inq);
	free(t->outq);
	free(t);
}
