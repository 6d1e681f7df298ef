/*
 * The network lock (netlock.h): an nftables table per dumped PID, fed to
 * `nft -f -`. Rules drop on the input hook, before conntrack: on loopback
 * both directions pass there, and a remote peer's packets are what must not
 * reach a socket that is gone.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "log.h"
#include "netlock.h"

static void rule(FILE *f, const struct netlock_conn *c, bool reverse)
{
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
	const char *ip = c->family == AF_INET6 ? "ip6" : "ip";

	inet_ntop(c->family, reverse ? c->dst : c->src, a, sizeof(a));
	inet_ntop(c->family, reverse ? c->src : c->dst, b, sizeof(b));
	fprintf(f, "\t\t%s saddr %s tcp sport %u %s daddr %s tcp dport %u drop\n", ip, a,
		reverse ? c->dport : c->sport, ip, b, reverse ? c->sport : c->dport);
}

static int run_nft(const char *script)
{
	FILE *p = popen("nft -f - >/dev/null 2>&1", "w");
	int st;

	if (!p)
		return -errno;
	fputs(script, p);
	st = pclose(p);
	return st == 0 ? 0 : -EIO;
}

int netlock_add(pid_t pid, const struct netlock_conn *conns, size_t n)
{
	char *script = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&script, &len);
	int ret;

	if (!f)
		return -ENOMEM;
	fprintf(f, "table inet memdump-lock-%d {\n\tchain in {\n"
		"\t\ttype filter hook input priority -300; policy accept;\n", pid);
	for (size_t i = 0; i < n; i++) {
		rule(f, &conns[i], false);
		rule(f, &conns[i], true);
	}
	fprintf(f, "\t}\n}\n");
	fclose(f);
	ret = run_nft(script);
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

	snprintf(cmd, sizeof(cmd), "nft delete table inet memdump-lock-%d 2>/dev/null", pid);
	if (system(cmd) == 0)
		pr_info("network unlocked: table inet memdump-lock-%d removed\n", pid);
}
