/*
 * The network lock (netlock.h): an nftables table per dumped PID, fed to
 * `nft -f -`. Rules drop on the input and output hooks, before conntrack: a
 * remote peer's packets must not reach a socket that is gone, nor may the
 * socket answer them (on loopback both directions pass both hooks). An IPv6
 * socket's connection to an IPv4 peer (v4-mapped) gets IPv4 rules.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "log.h"
#include "netlock.h"
#include "nsswitch.h"

/*
 * An IPv6 socket's connection with an IPv4 peer (::ffff:a.b.c.d on both
 * ends) is IPv4 on the wire: its rules must match IPv4 packets.
 */
static bool v4_mapped(const struct netlock_conn *c)
{
	return c->family == AF_INET6 && IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)c->src) &&
	       IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)c->dst);
}

static void rule(FILE *f, const struct netlock_conn *c, bool reverse)
{
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
	const uint8_t *from = reverse ? c->dst : c->src, *to = reverse ? c->src : c->dst;
	bool mapped = v4_mapped(c);
	const char *ip = c->family == AF_INET6 && !mapped ? "ip6" : "ip";

	inet_ntop(mapped ? AF_INET : c->family, mapped ? from + 12 : from, a, sizeof(a));
	inet_ntop(mapped ? AF_INET : c->family, mapped ? to + 12 : to, b, sizeof(b));
	fprintf(f, "\t\t%s saddr %s tcp sport %u %s daddr %s tcp dport %u drop\n", ip, a,
		reverse ? c->dport : c->sport, ip, b, reverse ? c->sport : c->dport);
}

/* One chain per direction: what the peer sends, and what the socket might still send. */
static void chain(FILE *f, const char *name, const char *hook, const struct netlock_conn *conns,
		  size_t n)
{
	fprintf(f, "\tchain %s {\n\t\ttype filter hook %s priority -300; policy accept;\n", name,
		hook);
	fprintf(f, "\t\tmeta mark 0x%x accept\n", NETLOCK_MARK);
	for (size_t i = 0; i < n; i++) {
		rule(f, &conns[i], false);
		rule(f, &conns[i], true);
	}
	fprintf(f, "\t}\n");
}

/*
 * nft, run in pid's network namespace (where its connections are): memdump
 * may be elsewhere, as a restore or a supervisor of a container is.
 */
static int run_nft(pid_t pid, const char *script)
{
	const struct ns_kind *k = ns_kind_by_name("net");
	int back, ret = ns_enter_pid(pid, k, &back), st;
	FILE *p = ret ? NULL : popen("nft -f - >/dev/null 2>&1", "w");

	if (!ret && !p)
		ret = -errno;
	if (p) {
		fputs(script, p);
		st = pclose(p);
		ret = st == 0 ? 0 : -EIO;
	}
	ns_return(back, k);
	return ret;
}

int netlock_add(pid_t pid, const struct netlock_conn *conns, size_t n)
{
	char *script = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&script, &len);
	int ret;

	if (!f)
		return -ENOMEM;
	fprintf(f, "table inet memdump-lock-%d {\n", pid);
	chain(f, "in", "input", conns, n);
	chain(f, "out", "output", conns, n);
	fprintf(f, "}\n");
	fclose(f);
	ret = run_nft(pid, script);
	free(script);
	if (ret)
		return fail(ret, "cannot lock the network of %zu TCP connection(s) with nftables "
			    "(nft -f failed)", n);
	pr_info("network locked for %zu connection(s): table inet memdump-lock-%d\n", n, pid);
	return 0;
}

void netlock_remove(pid_t pid)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "delete table inet memdump-lock-%d\n", pid);
	if (run_nft(pid, cmd) == 0)
		pr_info("network unlocked: table inet memdump-lock-%d removed\n", pid);
}
