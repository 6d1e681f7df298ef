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
#include "nsswitch.h"

static void rule(FILE *f, const struct netlock_conn *c, bool reverse)
{
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
	const char *ip = c->family == AF_INET6 ? "ip6" : "ip";

	inet_ntop(c->family, reverse ? c->dst : c->src, a, sizeof(a));
	inet_ntop(c->family, reverse ? c->src : c->dst, b, sizeof(b));
	fprintf(f, "\t\t%s saddr %s tcp sport %u %s daddr %s tcp dport %u drop\n", ip, a,
		reverse ? c->dport : c->sport, ip, b, reverse ? c->sport : c->dport);
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
	fprintf(f, "table inet memdump-lock-%d {\n\tchain in {\n"
		"\t\ttype filter hook input priority -300; policy accept;\n", pid);
	for (size_t i = 0; i < n; i++) {
		rule(f, &conns[i], false);
		rule(f, &conns[i], true);
	}
	fprintf(f, "\t}\n}\n");
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
