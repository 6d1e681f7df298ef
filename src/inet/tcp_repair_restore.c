/*
 * A TCP connection, rebuilt in repair mode from tcp-stream-INO.img:
 * sequence numbers, bind and connect (no handshake in repair mode), MSS,
 * window scales, SACK and timestamps, the receive queue and the sent part of
 * the send queue, then the window. The socket stays in repair mode until
 * the restore's commit point (golive.c): then it leaves repair mode (sending
 * nothing), the network lock goes, then it sends a window probe (the peer
 * answers, retransmissions resume) and what was never sent. Every process
 * of a tree (or the one) leaves repair mode before any lock goes (tcp_unrepair_all()),
 * and every lock goes before any probe (tcp_unlock_all(), then
 * tcp_probe_all()): a connection between two of them is in both locks,
 * neither end hears from the other before both are out of repair mode, and
 * each end's probe reaches the other. A probe the other's lock dropped would
 * leave its sender without what the dump's lock had held back (the ACK of
 * bytes its peer has) until its retransmission timer, backed off all the
 * while the lock was on.
 *
 * A closing connection (tcp_states.h) is rebuilt established, then closed
 * as it was: this end's FIN by shutdown() (after its unsent data, or counted
 * as sent when the peer had acknowledged it), the peer's FIN, and its
 * acknowledgment of ours, by segments sent in the peer's name
 * (tcp_peer.h). One in SYN_SENT connects again, from the same initial
 * sequence number. One over (reset, or closed both ways) is rebuilt
 * established, then reset in the peer's name (rebuild_over()).
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "image/image.h"
#include "common.h"
#include "log.h"
#include "netlock.h"
#include "ctx/restore_ctx.h"
#include "inet/tcp_peer.h"
#include "inet/tcp_states.h"
#include "net/sk_err.h"

#include "tcp-stream.pb-c.h"
#include "net/sock.h"
#include "inet/sk_inet.h"

#define CHUNK	(64 << 10)

static int tcp_int(int fd, int opt, int v)
{
	return setsockopt(fd, SOL_TCP, opt, &v, sizeof(v)) ? -errno : 0;
}

static int load_stream(struct rst *r, const InetSkEntry *e, TcpStreamEntry **out, uint8_t **data)
{
	struct image *img;
	size_t len;
	int ret = img_open(r->ds.dirfd, IMG_TCP_STREAM, e->ino, &img);

	if (ret)
		return ret;
	ret = img_read_msg(img, &tcp_stream_entry__descriptor, (void **)out);
	if (ret == 1) {
		len = (size_t)(*out)->inq_len + (*out)->outq_len;
		*data = malloc(len ? len : 1);
		ret = *data ? img_read_raw(img, *data, len) : -ENOMEM;
	} else if (!ret) {
		ret = fail(-EIO, "tcp-stream-%u.img is empty", e->ino);
	}
	img_abort(img);
	return ret < 0 ? ret : 0;
}

/* rcv_nxt before the peer's FIN (the FIN is replayed), and the first unacknowledged byte. */
static uint32_t rcv_nxt_of(int state, const TcpStreamEntry *t)
{
	return t->inq_seq - tcp_fin_received(state);
}

static uint32_t snd_una_of(int state, const TcpStreamEntry *t)
{
	return t->outq_seq - t->outq_len - (tcp_fin_sent(state) && !tcp_fin_acked(state));
}

/* The sequences the queues start at; in SYN_SENT, the SYN's (connect() takes one). */
static int set_seqs(int fd, int state, const TcpStreamEntry *t)
{
	uint32_t snd = t->outq_seq - t->outq_len - tcp_fin_sent(state) - (state == TCP_SYN_SENT);
	int ret = tcp_int(fd, TCP_REPAIR_QUEUE, TCP_RECV_QUEUE);

	if (!ret)
		ret = tcp_int(fd, TCP_QUEUE_SEQ, rcv_nxt_of(state, t) - t->inq_len);
	if (!ret)
		ret = tcp_int(fd, TCP_REPAIR_QUEUE, TCP_SEND_QUEUE);
	if (!ret)
		ret = tcp_int(fd, TCP_QUEUE_SEQ, snd);
	return ret;
}

static int set_options(int fd, const TcpStreamEntry *t)
{
	struct tcp_repair_opt o[4];
	int n = 0;

	o[n++] = (struct tcp_repair_opt){ TCPOPT_MAXSEG, t->mss_clamp };
	if (t->opt_mask & TCPI_OPT_WSCALE)
		o[n++] = (struct tcp_repair_opt){ TCPOPT_WINDOW,
						  t->snd_wscale | (t->rcv_wscale << 16) };
	if (t->opt_mask & TCPI_OPT_SACK)
		o[n++] = (struct tcp_repair_opt){ TCPOPT_SACK_PERMITTED, 0 };
	if (t->opt_mask & TCPI_OPT_TIMESTAMPS)
		o[n++] = (struct tcp_repair_opt){ TCPOPT_TIMESTAMP, 0 };
	if (setsockopt(fd, SOL_TCP, TCP_REPAIR_OPTIONS, o, n * sizeof(o[0])))
		return -errno;
	if ((t->opt_mask & TCPI_OPT_TIMESTAMPS) && t->has_timestamp)
		return tcp_int(fd, TCP_TIMESTAMP, t->timestamp);
	return 0;
}

/* len bytes into queue q (in repair mode, nothing goes on the wire). */
static int fill_queue(int fd, int q, const uint8_t *p, size_t len)
{
	int ret = tcp_int(fd, TCP_REPAIR_QUEUE, q);

	while (!ret && len) {
		ssize_t n = send(fd, p, MIN(len, (size_t)CHUNK), 0);

		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= n;
	}
	return ret;
}

/*
 * The window. The peer's FIN is not received yet: a window last advertised
 * past it starts one byte before, its right edge where it was.
 */
static int set_window(int fd, int state, const TcpStreamEntry *t)
{
	struct tcp_repair_window w = { t->snd_wl1, t->snd_wnd, t->max_window, t->rcv_wnd,
				       t->rcv_wup };
	uint32_t rcv_nxt = rcv_nxt_of(state, t);

	if (!t->has_snd_wl1)
		return 0;
	if ((int32_t)(w.rcv_wup - rcv_nxt) > 0) {
		w.rcv_wnd += w.rcv_wup - rcv_nxt;
		w.rcv_wup = rcv_nxt;
	}
	return setsockopt(fd, SOL_TCP, TCP_REPAIR_WINDOW, &w, sizeof(w)) ? -errno : 0;
}

static int bind_repaired(int fd, const InetSkEntry *e)
{
	struct sockaddr_storage ss;
	socklen_t l = inet_addr_of(e, false, &ss);

	if (bind(fd, (struct sockaddr *)&ss, l))
		return inet_fail(e, -errno, "cannot bind in repair mode");
	return 0;
}

static int connect_repaired(int fd, const InetSkEntry *e)
{
	struct sockaddr_storage ss;
	socklen_t l;
	int ret = bind_repaired(fd, e);

	if (ret)
		return ret;
	l = inet_addr_of(e, true, &ss);
	if (connect(fd, (struct sockaddr *)&ss, l))
		return inet_fail(e, -errno, "cannot connect in repair mode");
	return 0;
}

/*
 * SYN_SENT: out of repair mode for connect() to send the SYN (the network
 * lock drops it until the release; then it is sent again), non-blocking, from
 * the dumped initial sequence number.
 */
static int connect_syn_sent(int fd, const InetSkEntry *e)
{
	struct sockaddr_storage ss;
	socklen_t l = inet_addr_of(e, true, &ss);
	int ret = bind_repaired(fd, e), fl = fcntl(fd, F_GETFL);

	if (ret)
		return ret;
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) || tcp_int(fd, TCP_REPAIR, TCP_REPAIR_OFF))
		return inet_fail(e, -errno, "cannot leave repair mode to connect");
	if (connect(fd, (struct sockaddr *)&ss, l) && errno != EINPROGRESS)
		return inet_fail(e, -errno, "cannot connect (SYN_SENT)");
	ret = tcp_int(fd, TCP_REPAIR, TCP_REPAIR_ON);
	if (!ret && fcntl(fd, F_SETFL, fl))
		ret = -errno;
	return ret ? inet_fail(e, ret, "cannot go back to repair mode after connect") : 0;
}

/* A segment from the peer: its FIN (fin), or its acknowledgment of all we sent. */
static int peer_says(const InetSkEntry *e, const TcpStreamEntry *t, bool fin)
{
	struct sockaddr_storage local, peer;
	uint32_t wnd = t->has_snd_wnd ? t->snd_wnd : 0xffff;
	struct tcp_peer_seg s = {
		.local = &local, .peer = &peer, .fin = fin,
		.seq = rcv_nxt_of(e->state, t),
		.ack = fin ? snd_una_of(e->state, t) : t->outq_seq,
	};
	int ret;

	if (t->opt_mask & TCPI_OPT_WSCALE)
		wnd >>= t->snd_wscale;
	s.win = MIN(wnd, 0xffffu);
	inet_addr_of(e, false, &local);
	inet_addr_of(e, true, &peer);
	ret = tcp_peer_send(&s);
	return ret ? inet_fail(e, ret, fin ? "cannot replay the peer's FIN" :
					     "cannot replay the peer's ACK of our FIN") : 0;
}

/*
 * A new socket's send buffer is the default (tcp_wmem's), the dumped one's
 * had grown with the connection: one that cannot take the unsent bytes is
 * grown to (SO_SNDBUFFORCE, CAP_NET_ADMIN), since nothing drains it before
 * the release. That fixes its size, where the kernel would have tuned it.
 */
static int room_for(int fd, uint32_t len)
{
	int cur = 0, want = (int)MIN((uint64_t)len * 2 + 65536, (uint64_t)INT_MAX / 2);
	socklen_t l = sizeof(cur);

	if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &cur, &l))
		return -errno;
	if (cur >= want)
		return 0;
	return setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &want, sizeof(want)) ? -errno : 0;
}

/*
 * This end's FIN after its unsent data, as the process queued them: out of
 * repair mode (no window probe) for send() and shutdown(), whose segments the
 * network lock drops until the release. All of it must fit the send buffer
 * it fitted.
 */
static int send_fin_after(int fd, const InetSkEntry *e, const uint8_t *p, uint32_t len)
{
	int ret = room_for(fd, len) ?: tcp_int(fd, TCP_REPAIR, TCP_REPAIR_OFF_NO_WP);

	while (!ret && len) {
		ssize_t n = send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n <= 0)
			ret = n < 0 ? -errno : -EIO;
		else {
			p += n;
			len -= n;
		}
	}
	if (!ret && shutdown(fd, SHUT_WR))
		ret = -errno;
	if (!ret)
		ret = tcp_int(fd, TCP_REPAIR, TCP_REPAIR_ON);
	return ret ? inet_fail(e, ret, "cannot queue its unsent data and FIN") : 0;
}

/* The FIN the peer acknowledged: counted as sent (in the send queue), then its ACK. */
static int acked_fin(int fd, const InetSkEntry *e, const TcpStreamEntry *t)
{
	int ret = tcp_int(fd, TCP_REPAIR_QUEUE, TCP_SEND_QUEUE);

	if (!ret && shutdown(fd, SHUT_WR))
		ret = -errno;
	if (!ret)
		ret = tcp_int(fd, TCP_REPAIR_QUEUE, TCP_NO_QUEUE);
	if (ret)
		return inet_fail(e, ret, "cannot queue its FIN as sent");
	return peer_says(e, t, false);
}

/*
 * Established now: close it as it was (tcp_states.h). FIN_WAIT1: our FIN;
 * FIN_WAIT2: our FIN, acknowledged; CLOSE_WAIT: the peer's; CLOSING: ours,
 * then the peer's; LAST_ACK: the peer's, then ours. *flushed: the unsent data
 * is queued (before our FIN).
 */
static int replay_close(int fd, const InetSkEntry *e, const TcpStreamEntry *t,
			const uint8_t *unsent, uint32_t len, bool *flushed)
{
	int st = e->state, ret = 0;

	*flushed = tcp_fin_sent(st);
	if (tcp_fin_acked(st))
		return acked_fin(fd, e, t);
	if (tcp_fin_sent(st) && st != TCP_LAST_ACK)
		ret = send_fin_after(fd, e, unsent, len);
	if (!ret && tcp_fin_received(st))
		ret = peer_says(e, t, true);
	if (!ret && st == TCP_LAST_ACK)
		ret = send_fin_after(fd, e, unsent, len);
	return ret;
}

static int check_state(int fd, const InetSkEntry *e)
{
	struct tcp_info ti;
	socklen_t l = sizeof(ti);
	char why[96];

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, SOL_TCP, TCP_INFO, &ti, &l))
		return inet_fail(e, -errno, "cannot read its TCP_INFO");
	if (ti.tcpi_state == e->state)
		return 0;
	snprintf(why, sizeof(why), "rebuilt in TCP state %u instead of %u", ti.tcpi_state,
		 e->state);
	return inet_fail(e, -EPROTO, why);
}

static int rebuild(int fd, const InetSkEntry *e, const TcpStreamEntry *t, const uint8_t *data,
		   bool *flushed)
{
	uint32_t unsent = t->has_unsq_len ? MIN(t->unsq_len, t->outq_len) : 0;
	int ret = tcp_int(fd, TCP_REPAIR, 1);

	if (!ret)
		ret = set_seqs(fd, e->state, t);
	if (ret)
		return inet_fail(e, ret, "cannot set the sequence numbers in repair mode");
	if (e->state == TCP_SYN_SENT) {
		ret = connect_syn_sent(fd, e);
		return ret ? ret : check_state(fd, e);
	}
	ret = connect_repaired(fd, e);
	if (ret)
		return ret;
	ret = set_options(fd, t);
	if (ret)
		return inet_fail(e, ret, "cannot set MSS, window scale, SACK, timestamps");
	ret = fill_queue(fd, TCP_RECV_QUEUE, data, t->inq_len);
	if (!ret)
		ret = fill_queue(fd, TCP_SEND_QUEUE, data + t->inq_len, t->outq_len - unsent);
	if (ret)
		return inet_fail(e, ret, "cannot refill its queues");
	ret = set_window(fd, e->state, t);
	if (!ret)
		ret = tcp_int(fd, TCP_REPAIR_QUEUE, TCP_NO_QUEUE);
	if (ret)
		return inet_fail(e, ret, "cannot set its window");
	ret = replay_close(fd, e, t, data + t->inq_len + t->outq_len - unsent, unsent, flushed);
	return ret ? ret : check_state(fd, e);
}

/* The peer's reset, at the sequence the socket expects next (RFC 5961: exactly). */
static int peer_resets(const InetSkEntry *e, const TcpStreamEntry *t)
{
	struct sockaddr_storage local, peer;
	struct tcp_peer_seg s = { .local = &local, .peer = &peer, .rst = true,
				  .seq = t->inq_seq, .ack = t->outq_seq };
	int ret;

	inet_addr_of(e, false, &local);
	inet_addr_of(e, true, &peer);
	ret = tcp_peer_send(&s);
	return ret ? inet_fail(e, ret, "cannot reset it in the peer's name") : 0;
}

/* The error the reset left, read without taking it, where BPF can (net/sk_err.h). */
static int check_error(const InetSkEntry *e, int fd, int want)
{
	struct sk_errs got;
	char why[96];

	if (sk_errs_peek(fd, &got))
		return 0;
	if (got.err == want && !got.soft)
		return 0;
	snprintf(why, sizeof(why), "reset with the error %d pending instead of %d", got.err, want);
	return inet_fail(e, -EPROTO, why);
}

/*
 * A connection over (tcp_conn_over): rebuilt established, or in CLOSE_WAIT
 * for EPIPE (a reset after the peer's FIN), then reset by a segment in the
 * peer's name: the kernel closes it with that state's error, keeps its
 * receive queue (and its port: bound) and purges its send queue (refilled
 * as sent, with the dump's zeros: the sequence numbers SIOCOUTQ shows), as
 * it did for the process. No error
 * pending (the process had taken it, or it was closed both ways): the
 * reset's is taken (SO_ERROR). It stays in repair mode (SO_REUSEADDR forced,
 * for a listener on its port yet to come) until the release, as the others.
 */
static int rebuild_over(int fd, const InetSkEntry *e, const TcpStreamEntry *t, const uint8_t *data)
{
	InetSkEntry before = *e;
	int err = t->has_sk_err ? (int)t->sk_err : 0, got = 0, ret;
	socklen_t l = sizeof(got);
	bool flushed;

	if (err && err != ECONNRESET && err != EPIPE)
		return inet_fail(e, -EINVAL, "a connection over with an error other than a reset's");
	if (t->has_unsq_len && t->unsq_len)
		return inet_fail(e, -EINVAL, "a connection over with data it never sent");
	before.state = err == EPIPE ? TCP_CLOSE_WAIT : TCP_ESTABLISHED;
	ret = rebuild(fd, &before, t, data, &flushed);
	if (!ret)
		ret = peer_resets(e, t);
	if (!ret)
		ret = check_state(fd, e);
	if (!ret && !err && getsockopt(fd, SOL_SOCKET, SO_ERROR, &got, &l))
		ret = inet_fail(e, -errno, "cannot take the reset's error (SO_ERROR)");
	return ret ? ret : check_error(e, fd, err);
}

static int keep(struct rst *r, int fd, const InetSkEntry *e, TcpStreamEntry *t, uint8_t *data,
		bool flushed)
{
	struct rtcp *k = realloc(r->tcp, (r->nr_tcp + 1) * sizeof(*k));
	int copy = k ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : -1;

	if (k)
		r->tcp = k;
	if (copy < 0)
		return -ENOMEM;
	r->tcp[r->nr_tcp++] = (struct rtcp){ .fd = copy, .t = t, .data = data,
					     .reuseaddr = e->opts->has_reuseaddr && e->opts->reuseaddr,
					     .flushed = flushed };
	return 0;
}

int tcp_repair_open(struct rst *r, int fd, const InetSkEntry *e)
{
	TcpStreamEntry *t = NULL;
	uint8_t *data = NULL;
	bool flushed = false;
	int ret = load_stream(r, e, &t, &data);

	if (!ret && tcp_conn_over(e->state, e->dst_port))
		ret = rebuild_over(fd, e, t, data);
	else if (!ret)
		ret = rebuild(fd, e, t, data, &flushed);
	if (!ret)
		ret = keep(r, fd, e, t, data, flushed);
	if (ret) {
		if (t)
			img_free(&tcp_stream_entry__descriptor, t);
		free(data);
	}
	return ret;
}

#ifndef SO_BUF_LOCK
#define SO_BUF_LOCK	72
#endif

static int sol_int(int fd, int opt, int v)
{
	return setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v)) ? -errno : 0;
}

/*
 * The bytes the process had queued and the kernel never sent, sent now (out
 * of repair mode). The send buffer holds what it held when they fitted, but
 * the rebuilt sent part may take more of it (other segment sizes): it is
 * grown while they do not fit, then set back as dumped, its size and lock.
 */
static int send_unsent(int fd, const uint8_t *p, uint32_t len)
{
	int size = 0, lock = 0, ret = 0, grown = 0;
	socklen_t l = sizeof(size);

	if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, &l))
		return -errno;
	l = sizeof(lock);
	if (getsockopt(fd, SOL_SOCKET, SO_BUF_LOCK, &lock, &l))
		lock = -1;
	while (!ret && len) {
		ssize_t n = send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0) {
			p += n;
			len -= n;
		} else if (n < 0 && errno == EAGAIN && grown < 8) {
			grown++;
			ret = sol_int(fd, SO_SNDBUFFORCE, (int)MIN((int64_t)size << grown, INT_MAX / 2));
		} else {
			ret = n < 0 ? -errno : -EIO;
		}
	}
	if (grown && !sol_int(fd, SO_SNDBUFFORCE, size / 2) && lock >= 0)
		sol_int(fd, SO_BUF_LOCK, lock);
	return ret;
}

static int set_reuseaddr(const struct rtcp *k)
{
	int reuse = k->reuseaddr;

	return setsockopt(k->fd, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof(reuse)) ? -errno : 0;
}

/* Out of repair mode, the lock still on: nothing sent (no window probe). */
static void unrepair(struct rtcp *k)
{
	if (k->unrepaired)
		return;
	/* leaving repair mode clears SO_REUSEADDR */
	if (tcp_int(k->fd, TCP_REPAIR, TCP_REPAIR_OFF_NO_WP) || set_reuseaddr(k))
		pr_warn("cannot take a TCP connection out of repair mode: %s\n", strerror(errno));
	k->unrepaired = true;
}

/*
 * The lock off: the window probe that restarts the peer's retransmissions
 * (repair mode on and off again sends it), then what was never sent.
 */
static void release(const struct rtcp *k)
{
	uint32_t unsent = k->t->has_unsq_len ? MIN(k->t->unsq_len, k->t->outq_len) : 0;
	const uint8_t *p = k->data + k->t->inq_len + (k->t->outq_len - unsent);
	int ret;

	if (k->flushed)
		unsent = 0;	/* queued before its FIN (replay_close) */
	if (tcp_int(k->fd, TCP_REPAIR, TCP_REPAIR_ON) || tcp_int(k->fd, TCP_REPAIR, TCP_REPAIR_OFF) ||
	    set_reuseaddr(k))
		pr_warn("cannot send a TCP connection's window probe: %s\n", strerror(errno));
	if (unsent && (ret = send_unsent(k->fd, p, unsent)))
		pr_warn("TCP: %u unsent byte(s) could not be sent again: %s\n", unsent,
			strerror(-ret));
}

void tcp_unrepair_all(struct rst *r)
{
	for (size_t i = 0; i < r->nr_tcp; i++)
		unrepair(&r->tcp[i]);
}

int tcp_unlock_all(struct rst *r)
{
	int ret = 0;

	tcp_unrepair_all(r);
	if (r->nr_tcp || r->net_isolated || r->lock_kept)
		ret = netlock_remove(r->pid);
	return ret < 0 ? ret : 0;
}

void tcp_probe_one(struct rst *r, size_t i)
{
	release(&r->tcp[i]);
}

void tcp_close_all(struct rst *r)
{
	for (size_t i = 0; i < r->nr_tcp; i++) {
		close(r->tcp[i].fd);
		img_free(&tcp_stream_entry__descriptor, r->tcp[i].t);
		free(r->tcp[i].data);
	}
	free(r->tcp);
	r->tcp = NULL;
	r->nr_tcp = 0;
}
