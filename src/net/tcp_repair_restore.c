/*
 * An established TCP connection, rebuilt in repair mode from
 * tcp-stream-INO.img: sequence numbers, bind and connect (no handshake in
 * repair mode), MSS, window scales, SACK and timestamps, the receive queue
 * and the sent part of the send queue, then the window. The socket stays in
 * repair mode until every thread is parked: tcp_release_all() takes the
 * network lock off, then repair mode (the kernel sends a window probe, the
 * peer answers, retransmissions resume) and sends what was never sent.
 */
#include <errno.h>
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

#include "tcp-stream.pb-c.h"

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

static int set_seqs(int fd, const TcpStreamEntry *t)
{
	int ret = tcp_int(fd, TCP_REPAIR_QUEUE, TCP_RECV_QUEUE);

	if (!ret)
		ret = tcp_int(fd, TCP_QUEUE_SEQ, t->inq_seq - t->inq_len);
	if (!ret)
		ret = tcp_int(fd, TCP_REPAIR_QUEUE, TCP_SEND_QUEUE);
	if (!ret)
		ret = tcp_int(fd, TCP_QUEUE_SEQ, t->outq_seq - t->outq_len);
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

static int set_window(int fd, const TcpStreamEntry *t)
{
	struct tcp_repair_window w = { t->snd_wl1, t->snd_wnd, t->max_window, t->rcv_wnd,
				       t->rcv_wup };

	if (!t->has_snd_wl1)
		return 0;
	return setsockopt(fd, SOL_TCP, TCP_REPAIR_WINDOW, &w, sizeof(w)) ? -errno : 0;
}

static int connect_repaired(int fd, const InetSkEntry *e)
{
	struct sockaddr_storage ss;
	socklen_t l = inet_addr_of(e, false, &ss);

	if (bind(fd, (struct sockaddr *)&ss, l))
		return inet_fail(e, -errno, "cannot bind in repair mode");
	l = inet_addr_of(e, true, &ss);
	if (connect(fd, (struct sockaddr *)&ss, l))
		return inet_fail(e, -errno, "cannot connect in repair mode");
	return 0;
}

static int rebuild(int fd, const InetSkEntry *e, const TcpStreamEntry *t, const uint8_t *data)
{
	uint32_t unsent = t->has_unsq_len ? MIN(t->unsq_len, t->outq_len) : 0;
	int ret = tcp_int(fd, TCP_REPAIR, 1);

	if (!ret)
		ret = set_seqs(fd, t);
	if (ret)
		return inet_fail(e, ret, "cannot set the sequence numbers in repair mode");
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
	ret = set_window(fd, t);
	if (!ret)
		ret = tcp_int(fd, TCP_REPAIR_QUEUE, TCP_NO_QUEUE);
	return ret ? inet_fail(e, ret, "cannot set its window") : 0;
}

static int keep(struct rst *r, int fd, const InetSkEntry *e, TcpStreamEntry *t, uint8_t *data)
{
	struct rtcp *k = realloc(r->tcp, (r->nr_tcp + 1) * sizeof(*k));
	int copy = k ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : -1;

	if (k)
		r->tcp = k;
	if (copy < 0)
		return -ENOMEM;
	r->tcp[r->nr_tcp++] = (struct rtcp){ .fd = copy, .t = t, .data = data,
					     .reuseaddr = e->opts->has_reuseaddr && e->opts->reuseaddr };
	return 0;
}

int tcp_repair_open(struct rst *r, int fd, const InetSkEntry *e)
{
	TcpStreamEntry *t = NULL;
	uint8_t *data = NULL;
	int ret = load_stream(r, e, &t, &data);

	if (!ret)
		ret = rebuild(fd, e, t, data);
	if (!ret)
		ret = keep(r, fd, e, t, data);
	if (ret) {
		if (t)
			img_free(&tcp_stream_entry__descriptor, t);
		free(data);
	}
	return ret;
}

static void release(const struct rtcp *k)
{
	uint32_t unsent = k->t->has_unsq_len ? MIN(k->t->unsq_len, k->t->outq_len) : 0;
	const uint8_t *p = k->data + k->t->inq_len + (k->t->outq_len - unsent);

	int reuse = k->reuseaddr;

	/* leaving repair mode clears SO_REUSEADDR */
	if (tcp_int(k->fd, TCP_REPAIR, 0) ||
	    setsockopt(k->fd, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof(reuse)))
		pr_warn("cannot take a TCP connection out of repair mode: %s\n", strerror(errno));
	while (unsent) {
		ssize_t n = send(k->fd, p, unsent, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n <= 0) {
			pr_warn("TCP: %u unsent byte(s) could not be sent again: %s\n", unsent,
				strerror(errno));
			break;
		}
		p += n;
		unsent -= n;
	}
}

void tcp_release_all(struct rst *r)
{
	if (r->nr_tcp)
		netlock_remove(r->pid);
	for (size_t i = 0; i < r->nr_tcp; i++)
		release(&r->tcp[i]);
	tcp_close_all(r);
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
