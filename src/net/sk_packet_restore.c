/*
 * Restore of a packet socket: a new socket of its type and protocol, its
 * common options, then its packet options in the order the kernel takes them
 * (version, reserve, loss, vnet header: only before a ring), bound to its
 * device (SOCK_PACKET: by name), its rings, its memberships (each as many
 * times as it was added), its fanout group (joined once bound); the bind is
 * checked with getsockname.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_packet.h>

#include "common.h"
#include "log.h"
#include "ctx/restore_ctx.h"
#include "net/sock.h"

#ifndef PACKET_VNET_HDR_SZ
#define PACKET_VNET_HDR_SZ	24
#endif

static int pk_fail(const PacketSockEntry *e, int err, const char *what)
{
	return fail(err, "packet socket %u (type %u, protocol 0x%04x, ifindex %u): %s: %s", e->id,
		    e->type, ntohs(e->protocol), e->ifindex, what, strerror(-err));
}

static int set_packet_opts(int fd, const PacketSockEntry *e)
{
	const struct { bool has; int opt, v; const char *name; } o[] = {
		{ true, PACKET_VERSION, e->version, "PACKET_VERSION" },
		{ true, PACKET_RESERVE, e->reserve, "PACKET_RESERVE" },
		{ true, PACKET_AUXDATA, e->aux_data, "PACKET_AUXDATA" },
		{ true, PACKET_ORIGDEV, e->orig_dev, "PACKET_ORIGDEV" },
		{ true, PACKET_VNET_HDR, e->vnet_hdr, "PACKET_VNET_HDR" },
		{ e->has_vnet_hdr_sz && e->vnet_hdr_sz, PACKET_VNET_HDR_SZ, e->vnet_hdr_sz,
		  "PACKET_VNET_HDR_SZ" },
		{ true, PACKET_LOSS, e->loss, "PACKET_LOSS" },
		{ true, PACKET_TIMESTAMP, e->timestamp, "PACKET_TIMESTAMP" },
		{ e->copy_thresh, PACKET_COPY_THRESH, e->copy_thresh, "PACKET_COPY_THRESH" },
		{ e->has_qdisc_bypass, PACKET_QDISC_BYPASS, e->qdisc_bypass, "PACKET_QDISC_BYPASS" },
		{ e->has_ignore_outgoing, PACKET_IGNORE_OUTGOING, e->ignore_outgoing,
		  "PACKET_IGNORE_OUTGOING" },
		{ e->has_tx_has_off, PACKET_TX_HAS_OFF, e->tx_has_off, "PACKET_TX_HAS_OFF" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(o); i++) {
		char what[64];
		int ret;

		if (!o[i].has)
			continue;
		/* PACKET_COPY_THRESH cannot be read: always set */
		ret = o[i].opt == PACKET_COPY_THRESH ?
		      (setsockopt(fd, SOL_PACKET, o[i].opt, &o[i].v, sizeof(int)) ? -errno : 0) :
		      sk_keep_int_opt(fd, SOL_PACKET, o[i].opt, o[i].v);
		if (!ret)
			continue;
		snprintf(what, sizeof(what), "cannot set %s to %d", o[i].name, o[i].v);
		return pk_fail(e, ret, what);
	}
	return 0;
}

/* SOCK_PACKET binds to a device name; the others to an ifindex and protocol. */
static int bind_dev(int fd, const PacketSockEntry *e)
{
	struct sockaddr_ll ll = { .sll_family = AF_PACKET, .sll_protocol = e->protocol,
				  .sll_ifindex = e->ifindex };
	struct { sa_family_t family; char name[IF_NAMESIZE]; } sa = { .family = AF_PACKET };
	char dev[IF_NAMESIZE];
	int ret;

	if (!e->ifindex)
		return 0;
	if (e->type != SOCK_PACKET)
		ret = bind(fd, (struct sockaddr *)&ll, sizeof(ll));
	else if (!if_indextoname(e->ifindex, dev))
		return pk_fail(e, -ENODEV, "its device is gone");
	else {
		memcpy(sa.name, dev, strnlen(dev, sizeof(dev)));	/* up to 15, read as such */
		ret = bind(fd, (struct sockaddr *)&sa, sizeof(struct sockaddr));
	}
	return ret ? pk_fail(e, -errno, "cannot bind to its device") : 0;
}

static int check_bind(int fd, const PacketSockEntry *e)
{
	struct sockaddr_ll ll;
	socklen_t l = sizeof(ll);

	if (e->type == SOCK_PACKET)
		return 0;	/* by name: bind() found that device or failed */
	memset(&ll, 0, sizeof(ll));
	if (getsockname(fd, (struct sockaddr *)&ll, &l))
		return pk_fail(e, -errno, "getsockname");
	if ((uint32_t)ll.sll_ifindex != e->ifindex || ll.sll_protocol != e->protocol)
		return pk_fail(e, -EINVAL, "bound to another device or protocol");
	return 0;
}

static int set_ring(int fd, const PacketSockEntry *e, const PacketRing *r, int opt)
{
	struct tpacket_req3 req = {
		.tp_block_size = r->block_size, .tp_block_nr = r->block_nr,
		.tp_frame_size = r->frame_size, .tp_frame_nr = r->frame_nr,
		.tp_retire_blk_tov = r->retire_tmo, .tp_sizeof_priv = r->sizeof_priv,
		.tp_feature_req_word = r->features,
	};
	socklen_t l = e->version == TPACKET_V3 ? sizeof(req) : sizeof(struct tpacket_req);

	if (setsockopt(fd, SOL_PACKET, opt, &req, l))
		return pk_fail(e, -errno, opt == PACKET_RX_RING ? "cannot set its RX ring" :
								  "cannot set its TX ring");
	return 0;
}

/* struct packet_mreq with room for any device address (the kernel takes up to 32 bytes) */
struct mreq_max {
	int mr_ifindex;
	unsigned short mr_type, mr_alen;
	unsigned char mr_address[32];
};

static int add_memberships(int fd, const PacketSockEntry *e)
{
	for (size_t i = 0; i < e->n_mclist; i++) {
		const PacketMclist *m = e->mclist[i];
		struct mreq_max mr = { .mr_ifindex = m->index, .mr_type = m->type,
				       .mr_alen = MIN(m->addr.len, sizeof(mr.mr_address)) };

		if (mr.mr_alen)
			memcpy(mr.mr_address, m->addr.data, mr.mr_alen);
		if (setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)))
			return pk_fail(e, -errno, "cannot add its membership");
	}
	return 0;
}

static int build(int fd, const PacketSockEntry *e)
{
	char why[160];
	int ret = sk_opts_apply(fd, e->opts, true, why, sizeof(why));

	if (ret)
		return pk_fail(e, ret, why);
	if (e->type != SOCK_PACKET)	/* it has no SOL_PACKET options */
		ret = set_packet_opts(fd, e);
	if (!ret)
		ret = bind_dev(fd, e);
	if (!ret)
		ret = check_bind(fd, e);
	if (!ret && e->rx_ring)
		ret = set_ring(fd, e, e->rx_ring, PACKET_RX_RING);
	if (!ret && e->tx_ring)
		ret = set_ring(fd, e, e->tx_ring, PACKET_TX_RING);
	if (!ret)
		ret = add_memberships(fd, e);
	if (!ret && e->has_fanout && e->fanout != 0xffffffff &&
	    setsockopt(fd, SOL_PACKET, PACKET_FANOUT, &e->fanout, sizeof(e->fanout)))
		ret = pk_fail(e, -errno, "cannot join its fanout group");
	if (!ret && fcntl(fd, F_SETFL, e->flags & O_NONBLOCK))
		ret = pk_fail(e, -errno, "cannot set its file flags");
	return ret;
}

int sk_packet_open(const PacketSockEntry *e)
{
	int fd = socket(AF_PACKET, e->type | SOCK_CLOEXEC, e->protocol), ret;

	if (fd < 0)
		return pk_fail(e, -errno, "cannot create");
	ret = build(fd, e);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}
