/*
 * The network lock, as CRIU's: while an established TCP connection of a
 * process is dumped, and until it is restored, packets of that connection are
 * dropped on input and output (an nftables table "inet memdump-lock-PID"), so
 * its peer can neither slip data in after the queues were read nor get a
 * reset from a socket that is gone: it retransmits until the restore takes
 * the lock off.
 *
 * While the dump runs, the table is owned (NFT_TABLE_F_OWNER) by a netlink
 * socket only the dump holds: if memdump dies, however, the kernel removes
 * it with that socket. A killing dump that got its target killed swaps it
 * for a plain table of the same name and rules in one transaction
 * (netlock_keep): that one outlives memdump until the restore removes it.
 */
#ifndef MEMDUMP_NETLOCK_H
#define MEMDUMP_NETLOCK_H

#include <stdbool.h>
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

/* A dump's lock: its owning socket and what it drops. */
struct netlock {
	int sk;				/* nf_tables netlink socket in pid's namespace, or -1 */
	pid_t pid;
	uint32_t seq;
	struct netlock_conn *conns;
	size_t n;
	bool isolate;			/* everything but lo, and TCP on lo (netlock_isolate) */
};

/*
 * Drop every packet of conns (both directions) in a table owned by a socket
 * of lk's own (lk->sk, close-on-exec): 0 or <0 after fail().
 */
int netlock_add(struct netlock *lk, pid_t pid, const struct netlock_conn *conns, size_t n);
/* Take the owned lock off and close its socket; 0 or <0 after fail(). */
int netlock_release(struct netlock *lk);
/*
 * The target is dead: the owned lock becomes a plain one (one transaction,
 * never no lock), which the restore takes off; 0 or <0 after fail().
 */
int netlock_keep(struct netlock *lk);
/*
 * A network namespace the restore makes again (the calling thread's, still
 * without devices up): a plain table of pid's name that drops every packet
 * not on lo and every TCP segment on lo, both ways (but the restore's own,
 * marked), until netlock_remove(pid). The peers outside of the connections
 * restored in it retransmit, and are not reset by a namespace whose sockets
 * do not exist yet; nor is a connection with both ends inside by the end
 * rebuilt last, before it exists. 0 or <0 after fail().
 */
int netlock_isolate(pid_t pid);
/* Take pid's plain lock off: 1 removed, 0 there was none, <0 after fail(). */
int netlock_remove(pid_t pid);

#endif
