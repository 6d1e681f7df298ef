/*
 * Packet sockets (AF_PACKET: SOCK_RAW, SOCK_DGRAM, SOCK_PACKET). packet_diag
 * (sock_diag.c) tells what getsockopt does not: the bound device, version,
 * reserve, copy threshold, timestamp source and flags, the memberships
 * (with how many times each was added), the fanout group and the geometry
 * of the rings; getsockopt the rest (PACKET_QDISC_BYPASS, ...).
 *
 * Refused: frames queued (the receive queue is not dumped), an error
 * pending, frames in a ring the process has not read (RX) or sent (TX), a
 * fanout group a socket outside the dump is in, or made with a BPF program
 * or a unique id the kernel chose.
 */
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <linux/if_packet.h>

#include "common.h"
#include "ctx/file_desc.h"
#include "net/sock.h"
#include "image/image.h"
#include "log.h"

#include "files.pb-c.h"

#ifndef PACKET_VNET_HDR_SZ
#define PACKET_VNET_HDR_SZ	24
#endif

static const char *type_name(int type)
{
	return type == SOCK_RAW ? "raw" : type == SOCK_DGRAM ? "datagram" :
	       type == SOCK_PACKET ? "SOCK_PACKET" : "other";
}

void sk_packet_describe(const struct sk_diag *s, char *buf, size_t len)
{
	char dev[IF_NAMESIZE] = "";
	int ifindex = s->pk ? (int)s->pk->info.pdi_index : 0;

	if (ifindex && !if_indextoname(ifindex, dev))
		snprintf(dev, sizeof(dev), "#%d", ifindex);
	snprintf(buf, len, "a packet %s socket (protocol 0x%04x)%s%s", type_name(s->type),
		 s->proto, ifindex ? " on " : "", dev);
}

static bool held_by_dump(const struct sk_set *set, uint64_t ino)
{
	for (size_t i = 0; i < set->nr_inos; i++)
		if (set->inos[i] == ino)
			return true;
	for (size_t i = 0; i < set->nr_tree_inos; i++)
		if (set->tree_inos[i] == ino)
			return true;
	return false;
}

/*
 * The fanout group (PACKET_FANOUT: id | mode << 16 | flags << 24): its
 * program (CBPF, EBPF modes) cannot be read back, a unique id would be
 * chosen again, and a socket outside the dump in it would leave the group
 * without it after the restore.
 */
static const char *fanout_unsupported(const struct sk_diag *s, const struct sk_set *set,
				      char *buf, size_t len)
{
	uint32_t f = s->pk->fanout, id = f & 0xffff, mode = (f >> 16) & 0xff;

	if (!s->pk->has_fanout)
		return NULL;
	if (mode == PACKET_FANOUT_CBPF || mode == PACKET_FANOUT_EBPF) {
		snprintf(buf, len, "its fanout group %u steers by a BPF program, which memdump "
			 "cannot read back", id);
		return buf;
	}
	if ((f >> 24) & (PACKET_FANOUT_FLAG_UNIQUEID >> 8)) {
		snprintf(buf, len, "its fanout group %u has an id the kernel chose "
			 "(PACKET_FANOUT_FLAG_UNIQUEID)", id);
		return buf;
	}
	for (size_t i = 0; i < set->diag.n; i++) {
		const struct sk_diag *o = &set->diag.v[i];

		if (o->family != AF_PACKET || o->ino == s->ino || !o->pk || !o->pk->has_fanout ||
		    (o->pk->fanout & 0xffff) != id || held_by_dump(set, o->ino))
			continue;
		snprintf(buf, len, "its fanout group %u is shared with socket:[%lu] outside the "
			 "dump", id, (unsigned long)o->ino);
		return buf;
	}
	return NULL;
}

static size_t ring_bytes(const struct packet_diag_ring *r)
{
	return (size_t)r->pdr_block_size * r->pdr_block_nr;
}

/* The status word of frame i of a ring (V1: an unsigned long; V2; V3: tp_status at 20). */
static uint32_t frame_status(const uint8_t *ring, const struct packet_diag_ring *r, int version,
			     uint32_t i)
{
	uint32_t per_block = r->pdr_block_size / r->pdr_frame_size;
	const uint8_t *h = ring + (size_t)(i / per_block) * r->pdr_block_size +
			   (size_t)(i % per_block) * r->pdr_frame_size;

	if (version == TPACKET_V1)
		return (uint32_t)*(const unsigned long *)h;
	return version == TPACKET_V2 ? *(const uint32_t *)h : *(const uint32_t *)(h + 20);
}

/* Frames the process owns: received and not handed back (RX), queued to send (TX). */
static uint32_t ring_pending(const uint8_t *ring, const struct packet_diag_ring *r, int version,
			     bool rx)
{
	uint32_t n = 0;

	if (rx && version == TPACKET_V3) {	/* blocks: block_status at 8 */
		for (uint32_t b = 0; b < r->pdr_block_nr; b++)
			n += !!(*(const uint32_t *)(ring + (size_t)b * r->pdr_block_size + 8) &
				TP_STATUS_USER);
		return n;
	}
	if (!r->pdr_frame_size || r->pdr_frame_size > r->pdr_block_size)
		return 0;
	for (uint32_t i = 0; i < r->pdr_frame_nr; i++) {
		uint32_t st = frame_status(ring, r, version, i);

		n += rx ? !!(st & TP_STATUS_USER) :
			  !!(st & (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING | TP_STATUS_WRONG_FORMAT));
	}
	return n;
}

/*
 * A ring is restored empty, with its geometry: frames in it the process has
 * not read, or not yet had sent, refuse the dump. They are read through a
 * mapping of memdump's own (the kernel maps both rings at once).
 */
static const char *rings_unsupported(int copy, const struct sk_packet_diag *pk, char *buf,
				     size_t len)
{
	size_t rx = pk->has_rx ? ring_bytes(&pk->rx) : 0, tx = pk->has_tx ? ring_bytes(&pk->tx) : 0;
	uint32_t nrx = 0, ntx = 0;
	uint8_t *m;

	if (!rx && !tx)
		return NULL;
	m = mmap(NULL, rx + tx, PROT_READ, MAP_SHARED, copy, 0);
	if (m == MAP_FAILED) {
		snprintf(buf, len, "its ring cannot be mapped to be read: %s", strerror(errno));
		return buf;
	}
	if (rx)
		nrx = ring_pending(m, &pk->rx, pk->info.pdi_version, true);
	if (tx)
		ntx = ring_pending(m + rx, &pk->tx, pk->info.pdi_version, false);
	munmap(m, rx + tx);
	if (!nrx && !ntx)
		return NULL;
	snprintf(buf, len, "%u frame(s) received in its RX ring not yet read, %u queued in its TX "
		 "ring not yet sent, which memdump does not dump", nrx, ntx);
	return buf;
}

const char *sk_packet_unsupported(int copy, const struct sk_diag *s, const struct sk_set *set,
				  char *buf, size_t len)
{
	struct pollfd p = { .fd = copy, .events = POLLIN };
	const char *why;

	if (!s || !s->pk)
		return "it is not in sock_diag (the kernel has no packet_diag)";
	if (s->rqueue) {
		snprintf(buf, len, "%u bytes of frames queued, which memdump does not dump",
			 s->rqueue);
		return buf;
	}
	if (poll(&p, 1, 0) < 0 || (p.revents & POLLERR))
		return "an error is pending on it (sk_err or its error queue), which memdump "
		       "cannot restore";
	why = fanout_unsupported(s, set, buf, len);
	return why ? why : rings_unsupported(copy, s->pk, buf, len);
}

int sk_packet_collect(int copy, const struct sk_diag *s, struct sk_state *st)
{
	struct sk_pkt *pk = &st->pk;

	st->family = AF_PACKET;
	if (!s || !s->pk)
		return fail(-EOPNOTSUPP, "packet socket:[%lu] is not in sock_diag",
			    (unsigned long)st->ino);
	pk->type = s->type;
	pk->num = s->pk->num;
	pk->info = s->pk->info;
	pk->rx = s->pk->rx;
	pk->tx = s->pk->tx;
	pk->has_rx = s->pk->has_rx;
	pk->has_tx = s->pk->has_tx;
	pk->has_fanout = s->pk->has_fanout;
	pk->fanout = s->pk->fanout;
	if (s->pk->nr_mc) {
		pk->mc = malloc(s->pk->nr_mc * sizeof(*pk->mc));
		if (!pk->mc)
			return -ENOMEM;
		memcpy(pk->mc, s->pk->mc, s->pk->nr_mc * sizeof(*pk->mc));
		pk->nr_mc = s->pk->nr_mc;
	}
	pk->qdisc_bypass = sk_int_opt(copy, SOL_PACKET, PACKET_QDISC_BYPASS);
	pk->ignore_outgoing = sk_int_opt(copy, SOL_PACKET, PACKET_IGNORE_OUTGOING);
	pk->tx_has_off = sk_int_opt(copy, SOL_PACKET, PACKET_TX_HAS_OFF);
	pk->vnet_hdr_sz = sk_int_opt(copy, SOL_PACKET, PACKET_VNET_HDR_SZ);
	return 0;
}

static void fill_ring(PacketRing *e, const struct packet_diag_ring *r)
{
	e->block_size = r->pdr_block_size;
	e->block_nr = r->pdr_block_nr;
	e->frame_size = r->pdr_frame_size;
	e->frame_nr = r->pdr_frame_nr;
	e->retire_tmo = r->pdr_retire_tmo;
	e->sizeof_priv = r->pdr_sizeof_priv;
	e->features = r->pdr_features;
}

/* One entry per time a membership was added (the kernel counts them): as many adds back. */
static int fill_mclist(const struct sk_pkt *pk, PacketMclist ***out, size_t *n)
{
	size_t total = 0, k = 0;
	PacketMclist **v, *e;

	for (size_t i = 0; i < pk->nr_mc; i++)
		total += pk->mc[i].pdmc_count;
	*n = 0;
	*out = NULL;
	if (!total)
		return 0;
	v = calloc(total, sizeof(*v));
	e = calloc(total, sizeof(*e));
	if (!v || !e) {
		free(v);
		free(e);
		return -ENOMEM;
	}
	for (size_t i = 0; i < pk->nr_mc; i++)
		for (uint32_t c = 0; c < pk->mc[i].pdmc_count; c++, k++) {
			packet_mclist__init(&e[k]);
			e[k].index = pk->mc[i].pdmc_index;
			e[k].type = pk->mc[i].pdmc_type;
			e[k].addr.len = MIN(pk->mc[i].pdmc_alen, sizeof(pk->mc[i].pdmc_addr));
			e[k].addr.data = (uint8_t *)pk->mc[i].pdmc_addr;
			v[k] = &e[k];
		}
	*out = v;
	*n = total;
	return 0;
}

static void fill_flags(const struct sk_pkt *pk, PacketSockEntry *e)
{
	uint32_t fl = pk->info.pdi_flags;

	e->version = pk->info.pdi_version;
	e->reserve = pk->info.pdi_reserve;
	e->copy_thresh = pk->info.pdi_copy_thresh;
	e->timestamp = pk->info.pdi_tstamp;
	e->aux_data = !!(fl & PDI_AUXDATA);
	e->orig_dev = !!(fl & PDI_ORIGDEV);
	e->vnet_hdr = !!(fl & PDI_VNETHDR);
	e->loss = !!(fl & PDI_LOSS);
	e->has_qdisc_bypass = pk->qdisc_bypass >= 0;
	e->qdisc_bypass = pk->qdisc_bypass > 0;
	e->has_ignore_outgoing = pk->ignore_outgoing >= 0;
	e->ignore_outgoing = pk->ignore_outgoing > 0;
	e->has_tx_has_off = pk->tx_has_off >= 0;
	e->tx_has_off = pk->tx_has_off > 0;
	e->has_vnet_hdr_sz = pk->vnet_hdr_sz >= 0;
	e->vnet_hdr_sz = pk->vnet_hdr_sz;
}

int sk_packet_write(const struct file_desc *f, struct image *files)
{
	const struct sk_pkt *pk = &f->sk->pk;
	FileEntry fe = FILE_ENTRY__INIT;
	PacketSockEntry e = PACKET_SOCK_ENTRY__INIT;
	FownEntry fown = FOWN_ENTRY__INIT;
	SkOptsEntry opts = SK_OPTS_ENTRY__INIT;
	PacketRing rx = PACKET_RING__INIT, tx = PACKET_RING__INIT;
	int ret;

	sk_opts_fill(&f->sk->opts, &opts);
	e.id = f->id;
	e.type = pk->type;
	e.protocol = htons(pk->num);
	e.flags = f->flags;
	e.ifindex = pk->info.pdi_index;
	fd_owner_fill(&fown, &f->fown);
	e.fown = &fown;
	e.opts = &opts;
	fill_flags(pk, &e);
	e.has_fanout = pk->has_fanout;
	e.fanout = pk->fanout;
	fill_ring(&rx, &pk->rx);
	fill_ring(&tx, &pk->tx);
	e.rx_ring = pk->has_rx ? &rx : NULL;
	e.tx_ring = pk->has_tx ? &tx : NULL;
	ret = fill_mclist(pk, &e.mclist, &e.n_mclist);
	if (ret)
		return ret;
	fe.type = FD_TYPES__PACKETSK;
	fe.id = f->id;
	fe.psk = &e;
	ret = img_write_msg(files, &fe.base);
	if (e.n_mclist)
		free(e.mclist[0]);
	free(e.mclist);
	return ret;
}
