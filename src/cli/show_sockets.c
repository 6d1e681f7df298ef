/*
 * memdump show: what a socket of the dump is, in the PATH column: UNIX
 * type, name, state, peer inode, shutdown; TCP/UDP addresses and state.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "cli/show_sockets.h"

static const char *type_name(uint32_t t)
{
	return t == SOCK_STREAM ? "stream" : t == SOCK_DGRAM ? "dgram" :
	       t == SOCK_SEQPACKET ? "seqpacket" : "?";
}

static const char *state_name(uint32_t s)
{
	static const char *names[] = { "?", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1",
				       "FIN_WAIT2", "TIME_WAIT", "CLOSE", "CLOSE_WAIT",
				       "LAST_ACK", "LISTEN", "CLOSING" };

	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

static void unix_text(const UnixSkEntry *u, char *buf, size_t len)
{
	char name[120] = "(unnamed)";

	if (u->name.len && u->name.data[0])
		snprintf(name, sizeof(name), "%.*s", (int)u->name.len, (const char *)u->name.data);
	else if (u->name.len)
		snprintf(name, sizeof(name), "@%.*s", (int)u->name.len - 1,
			 (const char *)u->name.data + 1);
	snprintf(buf, len, "unix %s %s %s peer %u%s%s", type_name(u->type), name,
		 state_name(u->state), u->peer, u->has_shutdown && u->shutdown ? " shutdown " : "",
		 !u->has_shutdown || !u->shutdown ? "" : u->shutdown == 1 ? "rd" :
		 u->shutdown == 2 ? "wr" : "rdwr");
}

static void addr_text(uint32_t family, const uint32_t *w, size_t n, char *buf, size_t len)
{
	if ((family == AF_INET && n >= 1) || (family == AF_INET6 && n >= 4))
		inet_ntop(family, w, buf, len);
	else
		snprintf(buf, len, "?");
}

static void inet_text(const InetSkEntry *e, char *buf, size_t len)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];

	addr_text(e->family, e->src_addr, e->n_src_addr, src, sizeof(src));
	addr_text(e->family, e->dst_addr, e->n_dst_addr, dst, sizeof(dst));
	snprintf(buf, len, "%s%s %s:%u -> %s:%u %s", e->proto == IPPROTO_TCP ? "tcp" : "udp",
		 e->family == AF_INET6 ? "6" : "", src, e->src_port, dst, e->dst_port,
		 state_name(e->state));
}

bool show_socket(const FileEntry *fe, char *buf, size_t len, uint32_t *flags)
{
	if (fe->type == FD_TYPES__UNIXSK && fe->usk) {
		unix_text(fe->usk, buf, len);
		*flags = fe->usk->flags;
	} else if (fe->type == FD_TYPES__INETSK && fe->isk) {
		inet_text(fe->isk, buf, len);
		*flags = fe->isk->flags;
	} else {
		return false;
	}
	return true;
}
