/*
 * The TCP states tcp_repair dumps and restores, and where each stands in a
 * close: whether this end's FIN is queued (and acknowledged), whether the
 * peer's was received. A FIN takes a sequence number but carries no data:
 * the images count it in the sequences (inq_seq, outq_seq), not in the queue
 * lengths, as CRIU's do.
 */
#ifndef MEMDUMP_NET_TCP_STATES_H
#define MEMDUMP_NET_TCP_STATES_H

#include <stdbool.h>
#include <netinet/tcp.h>

#define TCPS_BIT(s)	(1u << (s))

/* This end's FIN is in its send queue (shutdown(SHUT_WR) or close). */
static inline bool tcp_fin_sent(int s)
{
	return TCPS_BIT(s) & (TCPS_BIT(TCP_FIN_WAIT1) | TCPS_BIT(TCP_FIN_WAIT2) |
			      TCPS_BIT(TCP_CLOSING) | TCPS_BIT(TCP_LAST_ACK));
}

/* ... and the peer acknowledged it. */
static inline bool tcp_fin_acked(int s)
{
	return s == TCP_FIN_WAIT2;
}

/* The peer's FIN was received (the process reads EOF after the queue). */
static inline bool tcp_fin_received(int s)
{
	return TCPS_BIT(s) & (TCPS_BIT(TCP_CLOSE_WAIT) | TCPS_BIT(TCP_CLOSING) |
			      TCPS_BIT(TCP_LAST_ACK));
}

/* The states a connection is dumped in through TCP_REPAIR. */
static inline bool tcp_state_repairable(int s)
{
	return s == TCP_ESTABLISHED || s == TCP_SYN_SENT || tcp_fin_sent(s) ||
	       tcp_fin_received(s);
}

/*
 * A connection that is over but still names its peer (SO_PEERNAME): reset,
 * timed out, or closed by both ends. Its receive queue stays readable; it is
 * dumped through TCP_REPAIR too, and rebuilt established, then reset.
 */
static inline bool tcp_conn_over(int s, unsigned int dport)
{
	return s == TCP_CLOSE && dport;
}

#endif
