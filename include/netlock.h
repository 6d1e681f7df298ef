/*
 * The network lock, as CRIU's: while an established TCP connection of a
 * process is dumped, and until it is restored, packets of that connection are
 * dropped on input (an nftables table "inet memdump-lock-PID"), so its peer
 * can neither slip data in after the queues were read nor get a reset from a
 * socket that is gone: it retransmits until the restore takes the lock off.
 */
#ifndef MEMDUMP_NETLOCK_H
#define MEMDUMP_NETLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Packets with this mark pass the lock: the segments a restore sends in the
 * peer's name to a connection it rebuilds (a FIN the peer had sent).
 */
#define NETLOCK_MARK	0x6d656d64	/* "memd" */

struct netlock_conn {
	int family;			/* AF_INET, AF_INET6 */
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
};

/* Drop every packet of conns (both directions); 0 or <0 after fail(). */
int netlock_add(pid_t pid, const struct netlock_conn *conns, size_t n);
/* Take pid's lock off (nothing if there is none). */
void netlock_remove(pid_t pid);

#endif
