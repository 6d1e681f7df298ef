/*
 * rtnetlink without a library: a NETLINK_ROUTE socket (of the network
 * namespace the calling thread is in when it is opened), dumps handed one
 * message at a time to a callback, requests answered by their ack's errno,
 * and the few attribute helpers the network namespace code needs.
 */
#ifndef MEMDUMP_RTNL_H
#define MEMDUMP_RTNL_H

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stddef.h>
#include <stdint.h>

struct rtnl {
	int fd;
	uint32_t seq;
};

/* A request being built: the header, then room for its body and attributes. */
struct rtnl_req {
	struct nlmsghdr h;
	char body[4096 - sizeof(struct nlmsghdr)];
};

int rtnl_open(struct rtnl *n);		/* 0 or -errno (reported) */
/* Another netlink family (NETLINK_NETFILTER): 0 or -errno, not reported. */
int nl_open_proto(struct rtnl *n, int proto);
void rtnl_close(struct rtnl *n);
/* A socket of the network namespace open at netns (the thread goes there and back). */
int rtnl_open_in(struct rtnl *n, int netns);

/* cb gets every message of the dump of req; a non-zero return stops it. */
typedef int (*rtnl_cb)(const struct nlmsghdr *h, void *arg);
int rtnl_dump(struct rtnl *n, struct nlmsghdr *req, rtnl_cb cb, void *arg);
/* Send req (a copy of it, with NLM_F_REQUEST|NLM_F_ACK added): 0 or the ack's -errno. */
int rtnl_talk(struct rtnl *n, const struct nlmsghdr *req);
/* The same, with the answer's messages (RTM_GETLINK of one device...) to cb. */
int rtnl_ask(struct rtnl *n, const struct nlmsghdr *req, rtnl_cb cb, void *arg);

/* req with type, flags and a zeroed body of len bytes; the body's address. */
void *rtnl_req_init(struct rtnl_req *r, int type, int flags, size_t len);
/* One attribute at the end of req: 0, or -ENOSPC. */
int rtnl_add(struct rtnl_req *r, int type, const void *data, size_t len);
/* A nested attribute: rtnl_nest() opens it (NULL if full), rtnl_nest_end() sets its length. */
struct rtattr *rtnl_nest(struct rtnl_req *r, int type);
void rtnl_nest_end(struct rtnl_req *r, struct rtattr *nest);
/* len zeroed bytes at the end of req (a nested message's header), or NULL. */
void *rtnl_reserve(struct rtnl_req *r, size_t len);

/* tb[type] for every attribute in [rta, rta + len) up to max; the others NULL. */
void rtnl_parse(struct rtattr **tb, int max, const struct rtattr *rta, size_t len);
/* The attributes after a message's fixed body of hlen bytes. */
void rtnl_parse_msg(struct rtattr **tb, int max, const struct nlmsghdr *h, size_t hlen);

#endif
