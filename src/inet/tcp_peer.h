/*
 * A segment as the peer of a restored TCP connection would send it, put on
 * the wire to the restored socket (tcp_peer_restore.c): the FIN it sent, its
 * acknowledgment of ours, or its reset, none of which the kernel lets a
 * repair-mode socket be told otherwise. It carries the network lock's mark (netlock.h),
 * so that it passes the lock.
 */
#ifndef MEMDUMP_NET_TCP_PEER_H
#define MEMDUMP_NET_TCP_PEER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct tcp_peer_seg {
	const struct sockaddr_storage *local, *peer;	/* the restored socket's two ends */
	uint32_t seq, ack;
	uint16_t win;			/* as on the wire (scaled) */
	bool fin;			/* FIN and ACK, else ACK only */
	bool rst;			/* RST and ACK (fin unset) */
};

/* 0, or -errno */
int tcp_peer_send(const struct tcp_peer_seg *s);

#endif
