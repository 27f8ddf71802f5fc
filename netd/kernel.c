/*
 * netd's rtnetlink I/O through libnl-route-3 (see kernel.h).  Thin: it
 * turns kernel objects into the planner's plain structs and plan
 * operations into requests; every decision is made in policy.c and plan.c.
 *
 * Addresses and rules are dumped with netd's own parsers rather than
 * libnl's objects: libnl 3.7 keeps neither IFA_PROTO (netd's tag on its
 * addresses) nor the rule attributes it does not know, and a rule with a
 * selector netd cannot see must never pass for one of netd's.  Likewise
 * an address is added through libnl's message builder with IFA_PROTO
 * appended, as libnl 3.7 has no setter for it.
 */
#include <errno.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fib_rules.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <netlink/msg.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/inet6.h>
#include <netlink/route/route.h>
#include <netlink/route/rule.h>

#include "addr.h"
#include "kernel.h"
#include "testhook.h"

#define KERNEL_EVENT_BUDGET	64	/* recv batches per wakeup */
#define KERNEL_DUMP_TRIES	3	/* a dump interrupted by a change */
#define KERNEL_RCVBUF		(1024 * 1024)
#define KERNEL_MAX_DUMP		(1024 * 1024)	/* entries in one dump */
#define KERNEL_NO_SUPPRESS	0xffffffffu	/* FRA_SUPPRESS_*: unset */
/* recvmmsg calls of rule notifications read before a use of the view; a
 * socket holding more is dropped and the rules dumped instead. */
#define KERNEL_RULE_EVENT_BUDGET	256
/* Rule notifications read a call, and the room for each (a rule's
 * notification is well under 200 bytes; a longer one is cut and read as
 * a doubt). */
#define KERNEL_EVENT_BATCH	16
#define KERNEL_EVENT_LEN	1024
/* Rule changes of one kind sent in one message (a dual-stack pod's are
 * 4); the ack read back of each, its error and the request's header. */
#define KERNEL_BATCH		8
#define KERNEL_ACK_LEN		256
#define KERNEL_MSG_SIZE		1024	/* a message netd builds, at most */
#define KERNEL_BATCH_SEQ	1

_Static_assert(NETD_AF_INET == AF_INET && NETD_AF_INET6 == AF_INET6,
    "policy.h's address families are the kernel's");
_Static_assert(NETD_RTPROT_KERNEL == RTPROT_KERNEL,
    "policy.h's kernel protocol is the kernel's");
_Static_assert(NETD_TABLE_MAIN == RT_TABLE_MAIN, "main is table 254");
_Static_assert(NETD_RTPROT_STATIC == RTPROT_STATIC &&
    NETD_SCOPE_LINK == RT_SCOPE_LINK, "policy.h's host route is the kernel's");

/* libnl folds errno into its own codes; this undoes it for our answers. */
static int
nlerr_errno(int nlerr)
{
	switch (nlerr < 0 ? -nlerr : nlerr) {
	case 0:			return 0;
	case NLE_INTR:		return EINTR;
	case NLE_BAD_SOCK:	return EBADF;
	case NLE_AGAIN:		return EAGAIN;
	case NLE_NOMEM:		return ENOMEM;
	case NLE_EXIST:		return EEXIST;
	case NLE_INVAL:		return EINVAL;
	case NLE_RANGE:		return ERANGE;
	case NLE_MSGSIZE:	return EMSGSIZE;
	case NLE_OPNOTSUPP:	return EOPNOTSUPP;
	case NLE_AF_NOSUPPORT:	return EAFNOSUPPORT;
	case NLE_OBJ_NOTFOUND:	return ENOENT;
	case NLE_NOADDR:	return EADDRNOTAVAIL;
	case NLE_BUSY:		return EBUSY;
	case NLE_NOACCESS:	return EACCES;
	case NLE_PERM:		return EPERM;
	case NLE_NODEV:		return ENODEV;
	case NLE_DUMP_INTR:	return EINTR;
	default:		return EIO;
	}
}

/*
 * The kernel's family and bytes as a prefix: canonical when they make one
 * (ip_addr_from_bytes()), else kept as the kernel gave them, for a log to
 * show (an IPv4-mapped IPv6 address is no struct ip_addr of its own).
 */
static void
kernel_prefix(struct ip_prefix *p, uint8_t family, const void *bytes,
    size_t len, uint8_t plen)
{
	memset(p, 0, sizeof(*p));
	if (ip_addr_from_bytes(&p->addr, family, bytes, len) == -1) {
		p->addr.family = family;
		memcpy(p->addr.bytes, bytes, len < sizeof(p->addr.bytes) ?
		    len : sizeof(p->addr.bytes));
	}
	p->len = plen;
}

static uint32_t
attr_u32(const struct nlattr *a, uint32_t otherwise)
{
	return nla_len(a) >= (int)sizeof(uint32_t) ?
	    nla_get_u32((struct nlattr *)a) : otherwise;
}

/*
 * The socket's use: requests (libnl's objects and caches), netd's own dumps
 * (strictly checked, so the kernel filters them by what the request names
 * and refuses what it cannot filter), events, or rule events.
 */
enum sock_use { SOCK_REQ, SOCK_DUMP, SOCK_EVENTS, SOCK_RULES };

static struct nl_sock *
open_sock(enum sock_use use, char *err, size_t errlen)
{
	struct nl_sock *sk;
	int rc, one = 1;

	if ((sk = nl_socket_alloc()) == NULL) {
		snprintf(err, errlen, "netlink: out of memory");
		return NULL;
	}
	if (use == SOCK_EVENTS || use == SOCK_RULES) {
		/* Notifications carry no sequence numbers of ours. */
		nl_socket_disable_seq_check(sk);
		nl_socket_disable_auto_ack(sk);
	}
	if ((rc = nl_connect(sk, NETLINK_ROUTE)) < 0) {
		snprintf(err, errlen, "netlink: connect: %s", nl_geterror(rc));
		goto fail;
	}
	if ((rc = nl_socket_set_buffer_size(sk, KERNEL_RCVBUF, 0)) < 0) {
		snprintf(err, errlen, "netlink: buffer size: %s",
		    nl_geterror(rc));
		goto fail;
	}
	/* Set now: the sandbox allows no socket option later.  Linux 4.20
	 * and later; netd's address tag needs 6.3 anyway. */
	if (use == SOCK_DUMP && setsockopt(nl_socket_get_fd(sk), SOL_NETLINK,
	    NETLINK_GET_STRICT_CHK, &one, sizeof(one)) == -1) {
		snprintf(err, errlen, "netlink: strict checking: %s",
		    strerror(errno));
		goto fail;
	}
	if (use == SOCK_EVENTS) {
		/* Links for the lookups; addresses and routes for the node's
		 * own links, which netd re-reads when they change. */
		if ((rc = nl_socket_add_memberships(sk, RTNLGRP_LINK,
		    RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR,
		    RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE, 0)) < 0 ||
		    (rc = nl_socket_set_nonblocking(sk)) < 0) {
			snprintf(err, errlen, "netlink: events: %s",
			    nl_geterror(rc));
			goto fail;
		}
	}
	if (use == SOCK_RULES) {
		/* Read only before a use of the rule view, never from the
		 * loop: nonblocking, and an overrun costs one dump. */
		if ((rc = nl_socket_add_memberships(sk, RTNLGRP_IPV4_RULE,
		    RTNLGRP_IPV6_RULE, 0)) < 0 ||
		    (rc = nl_socket_set_nonblocking(sk)) < 0) {
			snprintf(err, errlen, "netlink: rule events: %s",
			    nl_geterror(rc));
			goto fail;
		}
	}
	return sk;
fail:
	nl_socket_free(sk);
	return NULL;
}

int
kernel_open(struct kernel *k, char *err, size_t errlen)
{
	memset(k, 0, sizeof(*k));
	/* A message libnl builds is a page, zeroed, by default; netd's (a
	 * rule, a route, an address, a link's flags) take a few hundred
	 * bytes, and a dual-stack pod's rules are 4 of them. */
	nlmsg_set_default_size(KERNEL_MSG_SIZE);
	if ((k->req = open_sock(SOCK_REQ, err, errlen)) == NULL)
		goto fail;
	if ((k->dump = open_sock(SOCK_DUMP, err, errlen)) == NULL)
		goto fail;
	if ((k->ev = open_sock(SOCK_EVENTS, err, errlen)) == NULL)
		goto fail;
	if ((k->rule_ev = open_sock(SOCK_RULES, err, errlen)) == NULL)
		goto fail;
	k->ev_cb = nl_socket_get_cb(k->ev);
	if ((k->dump_cb = nl_cb_alloc(NL_CB_DEFAULT)) == NULL) {
		snprintf(err, errlen, "netlink: out of memory");
		goto fail;
	}
	return 0;
fail:
	if (k->rule_ev != NULL)
		nl_socket_free(k->rule_ev);
	if (k->ev != NULL)
		nl_socket_free(k->ev);
	if (k->dump != NULL)
		nl_socket_free(k->dump);
	if (k->req != NULL)
		nl_socket_free(k->req);
	k->rule_ev = k->ev = k->dump = k->req = NULL;
	return -1;
}

int
kernel_event_fd(const struct kernel *k)
{
	return nl_socket_get_fd(k->ev);
}

/* ---- events ---- */

static bool
link_fill(struct rtnl_link *link, struct msg_netd_link *out)
{
	struct nl_addr *a = rtnl_link_get_addr(link);
	const char *name = rtnl_link_get_name(link);

	memset(out, 0, sizeof(*out));
	out->ifindex = (uint32_t)rtnl_link_get_ifindex(link);
	out->mtu = rtnl_link_get_mtu(link);
	out->up = (rtnl_link_get_flags(link) & IFF_UP) ? 1 : 0;
	msg_strlcpy(out->name, name ? name : "", sizeof(out->name));
	if (a != NULL && nl_addr_get_len(a) == 6)
		memcpy(out->mac, nl_addr_get_binary_addr(a), 6);
	return a != NULL && nl_addr_get_len(a) == 6;
}

/* What event_valid() is handed: the kernel's state to mark, the events'
 * receivers to tell. */
struct event_ctx {
	struct kernel			*k;
	const struct kernel_events	*ev;
};

static void
event_obj(struct nl_object *obj, void *arg)
{
	const struct kernel_events *ev = arg;
	struct msg_netd_link l;

	if (link_fill((struct rtnl_link *)obj, &l))
		ev->link(&l, ev->arg);
}

/* The table a route message is about: RTA_TABLE beats the 8-bit field. */
static uint32_t
route_msg_table(struct nlmsghdr *hdr)
{
	struct rtmsg *rtm = nlmsg_data(hdr);
	struct nlattr *a;

	a = nlmsg_find_attr(hdr, sizeof(*rtm), RTA_TABLE);
	if (a != NULL && nla_len(a) >= (int)sizeof(uint32_t))
		return nla_get_u32(a);
	return rtm->rtm_table;
}

static void	addr_view_event(struct kernel *, struct nlmsghdr *, uint32_t);

static int
event_valid(struct nl_msg *msg, void *arg)
{
	struct event_ctx *ctx = arg;
	const struct kernel_events *ev = ctx->ev;
	struct nlmsghdr *hdr = nlmsg_hdr(msg);

	switch (hdr->nlmsg_type) {
	case RTM_NEWLINK:
		ctx->k->links_current = false;
		(void)nl_msg_parse(msg, event_obj, (void *)ev);
		break;
	case RTM_DELLINK:
		ctx->k->links_current = false;
		/* A link's removal is of no family; a bridge announces a
		 * port's release (the link and its addresses stay) as an
		 * RTM_DELLINK of its own. */
		if (nlmsg_valid_hdr(hdr, sizeof(struct ifinfomsg)) &&
		    ((struct ifinfomsg *)nlmsg_data(hdr))->ifi_family ==
		    AF_UNSPEC)
			addr_view_event(ctx->k, NULL, (uint32_t)
			    ((struct ifinfomsg *)nlmsg_data(hdr))->ifi_index);
		break;
	case RTM_NEWADDR:
	case RTM_DELADDR:
		addr_view_event(ctx->k, hdr, 0);
		if (nlmsg_valid_hdr(hdr, sizeof(struct ifaddrmsg)))
			ev->node(((struct ifaddrmsg *)nlmsg_data(hdr))->ifa_index,
			    ev->arg);
		break;
	case RTM_NEWROUTE:
	case RTM_DELROUTE:
		if (nlmsg_valid_hdr(hdr, sizeof(struct rtmsg)) &&
		    ((struct rtmsg *)nlmsg_data(hdr))->rtm_dst_len == 0 &&
		    route_msg_table(hdr) == RT_TABLE_MAIN)
			ev->node(0, ev->arg);
		break;
	}
	return NL_OK;
}

int
kernel_read_events(struct kernel *k, const struct kernel_events *ev,
    bool *overrun)
{
	struct event_ctx ctx = { k, ev };
	int i, rc;

	/* A loss a look found (events_unread()) is reported here. */
	*overrun = k->ev_lost;
	k->ev_lost = false;
	nl_cb_set(k->ev_cb, NL_CB_VALID, NL_CB_CUSTOM, event_valid, &ctx);
	for (i = 0; i < KERNEL_EVENT_BUDGET; i++) {
		rc = nl_recvmsgs_report(k->ev, k->ev_cb);
		if (rc == -NLE_AGAIN)
			k->ev_congested = false;
		if (rc == 0 || rc == -NLE_AGAIN)
			return 0;
		if (rc == -NLE_NOMEM) {		/* ENOBUFS: events lost */
			*overrun = true;
			k->links_current = k->aview_current = false;
			k->ev_congested = true;
			continue;
		}
		if (rc < 0) {
			k->aview_current = false;
			return -nlerr_errno(rc);
		}
	}
	return 0;
}

/* ---- netd's own dumps ---- */

/* A dump request: a header, then up to two u32 attributes naming what the
 * kernel is to dump (a link, a table, the extras to leave out). */
struct dump_req {
	int		 type;
	const void	*hdr;
	size_t		 hdrlen;
	size_t		 nattrs;
	struct {
		int		type;
		uint32_t	value;
	}		 attrs[2];
};

struct raw_dump {
	int	(*parse)(struct kernel *, struct nlmsghdr *, void *);
	struct kernel	*k;
	void	*arg;
	int	 err;		/* the first parse error, negative errno */
	int	 done_err;	/* the kernel's, in NLMSG_DONE */
};

static int
raw_valid(struct nl_msg *msg, void *arg)
{
	struct raw_dump *d = arg;
	int rc;

	if (d->err == 0 && (rc = d->parse(d->k, nlmsg_hdr(msg), d->arg)) < 0)
		d->err = rc;
	return NL_OK;
}

/*
 * The end of a dump.  A dump the kernel could not make (a filter naming a
 * link that is gone, a table that does not exist, a request strict
 * checking refuses) ends here with the error as its payload, which libnl
 * does not look at: without this it would read as an empty dump.
 */
static int
raw_finish(struct nl_msg *msg, void *arg)
{
	struct raw_dump *d = arg;
	struct nlmsghdr *hdr = nlmsg_hdr(msg);
	int e;

	if (hdr->nlmsg_len >= NLMSG_LENGTH(sizeof(e))) {
		memcpy(&e, nlmsg_data(hdr), sizeof(e));
		if (e < 0)
			d->done_err = e;
	}
	return NL_STOP;
}

static int
raw_send(struct kernel *k, const struct dump_req *rq)
{
	struct nl_msg *msg;
	size_t i;
	int rc;

	if ((msg = nlmsg_alloc_simple(rq->type, NLM_F_DUMP)) == NULL)
		return -ENOMEM;
	rc = nlmsg_append(msg, (void *)rq->hdr, rq->hdrlen, NLMSG_ALIGNTO);
	for (i = 0; rc == 0 && i < rq->nattrs; i++)
		rc = nla_put_u32(msg, rq->attrs[i].type, rq->attrs[i].value);
	if (rc == 0)
		rc = nl_send_auto(k->dump, msg);
	nlmsg_free(msg);
	return rc < 0 ? -nlerr_errno(rc) : 0;
}

/*
 * One dump request and its answer through parse; reset runs before each
 * try, as a dump the kernel reports interrupted (a change meanwhile) is
 * done again whole.
 */
static int
raw_dump(struct kernel *k, const struct dump_req *rq,
    int (*parse)(struct kernel *, struct nlmsghdr *, void *), void *arg,
    void (*reset)(struct kernel *, void *))
{
	struct raw_dump d = { parse, k, arg, 0, 0 };
	int i, rc = 0;

	for (i = 0; i < KERNEL_DUMP_TRIES; i++) {
		reset(k, arg);
		d.err = d.done_err = 0;
		if ((rc = raw_send(k, rq)) < 0)
			return rc;
		nl_cb_set(k->dump_cb, NL_CB_VALID, NL_CB_CUSTOM, raw_valid, &d);
		nl_cb_set(k->dump_cb, NL_CB_FINISH, NL_CB_CUSTOM, raw_finish,
		    &d);
		rc = nl_recvmsgs(k->dump, k->dump_cb);
		if (rc == -NLE_DUMP_INTR)
			continue;
		if (rc < 0)
			return -nlerr_errno(rc);
		return d.done_err < 0 ? d.done_err : d.err;
	}
	return -EINTR;
}

/* Room for one more entry in a kept array; -E2BIG past KERNEL_MAX_DUMP. */
static int
grow(void **arr, size_t *cap, size_t n, size_t size)
{
	size_t ncap;
	void *na;

	if (n < *cap)
		return 0;
	if (n >= KERNEL_MAX_DUMP)
		return -E2BIG;
	ncap = *cap ? *cap * 2 : 256;
	if ((na = reallocarray(*arr, ncap, size)) == NULL)
		return -ENOMEM;
	*arr = na;
	*cap = ncap;
	return 0;
}

/* ---- links ---- */

/*
 * A link as netd's link dump keeps it.  The dump is netd's own rather than
 * libnl's cache: on a node of hundreds of pod veths, libnl's parse of every
 * link whole, and the statistics the kernel gathers for each unless asked
 * not to, were most of what a lookup cost.
 */
struct kernel_link {
	struct msg_netd_link	l;
	uint32_t		master;		/* IFLA_MASTER, or 0 */
	bool			has_mac;	/* a 6-byte IFLA_ADDRESS */
};

static void
links_reset(struct kernel *k, void *arg)
{
	(void)arg;
	k->nlinks = 0;
}

static int
link_parse(struct kernel *k, struct nlmsghdr *hdr, void *arg)
{
	struct ifinfomsg *ifi;
	struct nlattr *tb[IFLA_MAX + 1];
	struct kernel_link *e;
	int rc;

	(void)arg;
	if (hdr->nlmsg_type != RTM_NEWLINK ||
	    !nlmsg_valid_hdr(hdr, sizeof(*ifi)))
		return 0;
	ifi = nlmsg_data(hdr);
	if (nlmsg_parse(hdr, sizeof(*ifi), tb, IFLA_MAX, NULL) < 0)
		return -EIO;
	if ((rc = grow((void **)&k->links, &k->links_cap, k->nlinks,
	    sizeof(*k->links))) < 0)
		return rc;
	e = &k->links[k->nlinks++];
	memset(e, 0, sizeof(*e));
	e->l.ifindex = (uint32_t)ifi->ifi_index;
	e->l.up = (ifi->ifi_flags & IFF_UP) ? 1 : 0;
	if (tb[IFLA_MTU] != NULL)
		e->l.mtu = attr_u32(tb[IFLA_MTU], 0);
	if (tb[IFLA_IFNAME] != NULL)
		nla_strlcpy(e->l.name, tb[IFLA_IFNAME], sizeof(e->l.name));
	if (tb[IFLA_MASTER] != NULL)
		e->master = attr_u32(tb[IFLA_MASTER], 0);
	if (tb[IFLA_ADDRESS] != NULL && nla_len(tb[IFLA_ADDRESS]) == 6) {
		memcpy(e->l.mac, nla_data(tb[IFLA_ADDRESS]), 6);
		e->has_mac = true;
	}
	return 0;
}

/*
 * Whether the event socket holds a notification (or a lost-events error)
 * not read yet.  The kernel queues a link's notification before the call
 * that changed the link returns, so with nothing unread and no link event
 * read since the last whole dump, that dump is still the kernel's links.
 */
static bool
sock_unread(struct nl_sock *sk)
{
	char c;

	return recvfrom(nl_socket_get_fd(sk), &c, 1,
	    MSG_PEEK | MSG_DONTWAIT, NULL, NULL) != -1 ||
	    (errno != EAGAIN && errno != EWOULDBLOCK);
}

/*
 * sock_unread() of the event socket.  A look that finds the socket's
 * error takes it, as a read would: an overrun found so is a loss all the
 * same, and the socket stays congested (dropping every notification
 * without a word) until it is read empty.  So the look marks what a read
 * of the loss marks (kernel_read_events()), and the next read reports it.
 */
static bool
events_unread(struct kernel *k)
{
	char c;

	if (recvfrom(nl_socket_get_fd(k->ev), &c, 1, MSG_PEEK | MSG_DONTWAIT,
	    NULL, NULL) != -1)
		return true;
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return false;
	if (errno == ENOBUFS) {
		k->ev_lost = k->ev_congested = true;
		k->links_current = false;
	}
	k->aview_current = false;
	return true;
}

/*
 * Every link into k->links; the kernel leaves out the statistics.  A node
 * with hundreds of pods has hundreds of veths, and each ENI set up again
 * after a restart looks its link up three times (declare, lookup,
 * set-up): the last whole dump is used again while it is current (see
 * links_current), and read again as soon as anything may have changed.
 */
static int
links_dump(struct kernel *k)
{
	struct ifinfomsg req;
	struct dump_req rq = { RTM_GETLINK, &req, sizeof(req), 1,
	    { { IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS } } };
	int rc;

	if (k->links_current && !events_unread(k))
		return 0;
	k->links_current = false;
	memset(&req, 0, sizeof(req));
	req.ifi_family = AF_UNSPEC;
	if ((rc = raw_dump(k, &rq, link_parse, NULL, links_reset)) == 0)
		k->links_current = true;
	return rc;
}

static const struct kernel_link *
links_by_ifindex(const struct kernel *k, uint32_t ifindex)
{
	size_t i;

	for (i = 0; i < k->nlinks; i++)
		if (k->links[i].l.ifindex == ifindex)
			return &k->links[i];
	return NULL;
}

int
kernel_each_link(struct kernel *k, kernel_link_cb cb, void *arg)
{
	size_t i;
	int rc;

	if ((rc = links_dump(k)) < 0)
		return rc;
	for (i = 0; i < k->nlinks; i++)
		cb(&k->links[i].l, arg);
	return 0;
}

/* The half of a link's state that the other links make: whether it has a
 * master, is one, and which others carry its MAC.  -ENODEV if it is not
 * among them. */
static int
link_kin(const struct kernel *k, uint32_t ifindex, struct nd_link_state *out)
{
	const struct kernel_link *self, *e;
	size_t i;

	memset(out, 0, sizeof(*out));
	out->ifindex = ifindex;
	if ((self = links_by_ifindex(k, ifindex)) == NULL)
		return -ENODEV;
	out->enslaved = self->master != 0;
	for (i = 0; i < k->nlinks; i++) {
		e = &k->links[i];
		if (e->l.ifindex == ifindex)
			continue;
		if (e->master == ifindex)
			out->master = true;
		if (e->has_mac && !mac_is_zero(self->l.mac) &&
		    memcmp(e->l.mac, self->l.mac, 6) == 0)
			out->same_mac++;
	}
	return 0;
}

int
kernel_find_link(struct kernel *k, const uint8_t mac[6],
    struct msg_netd_link *out, struct nd_link_state *st)
{
	const struct kernel_link *e;
	size_t i;
	int rc, found = 0;

	if ((rc = links_dump(k)) < 0)
		return rc;
	for (i = 0; i < k->nlinks; i++) {
		e = &k->links[i];
		if (!e->has_mac || memcmp(e->l.mac, mac, 6) != 0)
			continue;
		if (!found || e->l.ifindex < out->ifindex)
			*out = e->l;
		found = 1;
	}
	if (found && st != NULL && (rc = link_kin(k, out->ifindex, st)) < 0)
		return rc;
	return found;
}

int
kernel_get_link(struct kernel *k, uint32_t ifindex, struct msg_netd_link *out)
{
	struct rtnl_link *link = NULL;
	int rc;

	rc = rtnl_link_get_kernel(k->req, (int)ifindex, NULL, &link);
	if (rc == -NLE_NODEV || rc == -NLE_OBJ_NOTFOUND)
		return 0;
	if (rc < 0)
		return -nlerr_errno(rc);
	link_fill(link, out);
	rtnl_link_put(link);
	return 1;
}

/* ---- addresses ---- */

static void
addrs_reset(struct kernel *k, void *arg)
{
	if (arg != NULL) {
		k->naview = 0;
		k->aview_peers = false;
	} else
		k->naddrs = 0;
}

/*
 * An address message into *out: 1, or 0 if it is no address netd reads (a
 * family other than IPv4's and IPv6's, no address attribute).  *peer: an
 * IPv4 point-to-point address, whose peer is part of what the kernel tells
 * it apart by but not of what netd keeps.  A dump's addresses and a
 * notification's are read here alike.
 */
static int
addr_read(struct nlmsghdr *hdr, struct nd_ifaddr *out, bool *peer)
{
	struct ifaddrmsg *ifa;
	struct nlattr *tb[IFA_MAX + 1], *a;
	size_t alen;

	if (!nlmsg_valid_hdr(hdr, sizeof(*ifa)))
		return 0;
	ifa = nlmsg_data(hdr);
	if (nlmsg_parse(hdr, sizeof(*ifa), tb, IFA_MAX, NULL) < 0)
		return -EIO;
	if (ifa->ifa_family == AF_INET)
		alen = 4;
	else if (ifa->ifa_family == AF_INET6)
		alen = 16;
	else
		return 0;
	/* IFA_LOCAL is the address itself; IFA_ADDRESS is the peer's on a
	 * point-to-point link, and the address itself otherwise.  IPv4's
	 * peer 0.0.0.0 comes as no IFA_ADDRESS at all. */
	if ((a = tb[IFA_LOCAL]) == NULL)
		a = tb[IFA_ADDRESS];
	if (a == NULL || nla_len(a) < (int)alen)
		return 0;
	*peer = tb[IFA_LOCAL] != NULL && (tb[IFA_ADDRESS] == NULL ||
	    nla_len(tb[IFA_ADDRESS]) < (int)alen ||
	    memcmp(nla_data(tb[IFA_ADDRESS]), nla_data(a), alen) != 0);
	memset(out, 0, sizeof(*out));
	out->ifindex = ifa->ifa_index;
	kernel_prefix(&out->addr, ifa->ifa_family, nla_data(a), alen,
	    ifa->ifa_prefixlen);
	if (tb[IFA_PROTO] != NULL && nla_len(tb[IFA_PROTO]) >= 1)
		out->proto = nla_get_u8(tb[IFA_PROTO]);
	return 1;
}

/* Into k->addrs, or with arg set into the address view. */
static int
addr_parse(struct kernel *k, struct nlmsghdr *hdr, void *arg)
{
	struct nd_ifaddr e, **arr = arg != NULL ? &k->aview : &k->addrs;
	size_t *n = arg != NULL ? &k->naview : &k->naddrs;
	size_t *cap = arg != NULL ? &k->aview_cap : &k->addrs_cap;
	bool peer;
	int rc = 0;

	if (hdr->nlmsg_type != RTM_NEWADDR ||
	    (rc = addr_read(hdr, &e, &peer)) != 1)
		return rc < 0 ? rc : 0;
	if ((rc = grow((void **)arr, cap, *n, sizeof(**arr))) < 0)
		return rc;
	(*arr)[(*n)++] = e;
	if (arg != NULL && peer && e.addr.addr.family == AF_INET)
		k->aview_peers = true;
	return 0;
}

/*
 * The addresses of family (0: all) on link ifindex (0: all) into k->addrs.
 * The kernel filters by both; the parse keeps every address it is given,
 * and the callers still look at each one's link and family.
 */
static int
addr_dump(struct kernel *k, uint8_t family, uint32_t ifindex)
{
	struct ifaddrmsg req;
	struct dump_req rq = { RTM_GETADDR, &req, sizeof(req), 0, { { 0, 0 } } };

	memset(&req, 0, sizeof(req));
	req.ifa_family = family;
	req.ifa_index = ifindex;
	return raw_dump(k, &rq, addr_parse, NULL, addrs_reset);
}

/* Whether a and b are the same address to the kernel: the link, the
 * address and its length (an IPv4 peer aside, see addr_read()). */
static bool
addr_same(const struct nd_ifaddr *a, const struct nd_ifaddr *b)
{
	return a->ifindex == b->ifindex && a->addr.len == b->addr.len &&
	    a->addr.addr.family == b->addr.addr.family &&
	    memcmp(a->addr.addr.bytes, b->addr.addr.bytes,
	    sizeof(a->addr.addr.bytes)) == 0;
}

/* An address into the view, in place of slot i if i < k->naview (the
 * same address, its tag or flags changed). */
static void
addr_view_put(struct kernel *k, const struct nd_ifaddr *e, size_t i)
{
	if (i < k->naview) {
		k->aview[i] = *e;
		return;
	}
	if (grow((void **)&k->aview, &k->aview_cap, k->naview,
	    sizeof(*k->aview)) < 0) {
		k->aview_current = false;
		return;
	}
	k->aview[k->naview++] = *e;
}

/*
 * An address netd has just added, into the view at once.  The kernel
 * announces an IPv6 address from its address work queue, after the
 * change that added it has returned (the address is in the kernel
 * already): without this, a request read before that notification would
 * not see the ENI address netd itself put on a link an instant ago.  Its
 * notification, when it comes, replaces it (addr_view_event()).
 */
static void
addr_view_added(struct kernel *k, uint32_t ifindex,
    const struct ip_prefix *addr, uint8_t proto)
{
	struct nd_ifaddr e;
	size_t i;

	if (!k->aview_current)
		return;		/* the next use dumps, and sees it */
	memset(&e, 0, sizeof(e));
	e.ifindex = ifindex;
	e.addr = *addr;
	e.proto = proto;
	for (i = 0; i < k->naview; i++)
		if (addr_same(&k->aview[i], &e))
			break;
	addr_view_put(k, &e, i);
}

/*
 * One address notification (or a link's removal, ifindex) applied to the
 * view.  An address is kept once whatever the notifications say of it:
 * RTM_NEWADDR puts it in or replaces it (its tag, its flags changed),
 * RTM_DELADDR takes it out, and one of an address the view does not hold
 * is no doubt.  So the notifications queued before a dump, read after it,
 * do no harm: each address ends as its last notification says, and one
 * without any since the dump as the dump showed it.  Only an IPv4 peer
 * address's removal is a doubt (two such can differ in their peer alone,
 * which the view does not keep), and, once the view has held an IPv4 peer
 * address, any IPv4 removal (a plain address and a peer one can share
 * their local address and length, which the view keeps once); and room
 * that cannot be had.
 */
static void
addr_view_event(struct kernel *k, struct nlmsghdr *hdr, uint32_t ifindex)
{
	struct nd_ifaddr e;
	bool peer = false;
	size_t i;
	int rc;

	if (!k->aview_current)
		return;
	if (hdr == NULL) {
		for (i = k->naview; i-- > 0; )
			if (k->aview[i].ifindex == ifindex)
				k->aview[i] = k->aview[--k->naview];
		return;
	}
	if ((rc = addr_read(hdr, &e, &peer)) < 0) {
		k->aview_current = false;
		return;
	}
	if (rc == 0)
		return;		/* nothing the dump would keep either */
	for (i = 0; i < k->naview; i++)
		if (addr_same(&k->aview[i], &e))
			break;
	if (peer && e.addr.addr.family == AF_INET)
		k->aview_peers = true;
	if (hdr->nlmsg_type == RTM_DELADDR) {
		if (peer || (k->aview_peers && e.addr.addr.family == AF_INET))
			k->aview_current = false;
		else if (i < k->naview)
			k->aview[i] = k->aview[--k->naview];
		return;
	}
	addr_view_put(k, &e, i);
}

/*
 * The view made current: used as it is while the event socket holds
 * nothing unread (the caller has just read it), dumped whole otherwise.
 * After an overrun the kernel reports the next loss only once a read has
 * found the socket empty (it clears the socket's congestion then): until
 * then notifications can go missing without a word, and a dump is used
 * once and not kept.
 */
static int
addr_view_sync(struct kernel *k)
{
	struct ifaddrmsg req;
	struct dump_req rq = { RTM_GETADDR, &req, sizeof(req), 0, { { 0, 0 } } };
	bool unread = events_unread(k);
	int rc;

	if (k->aview_current && !unread)
		return 0;
	k->aview_current = false;
	memset(&req, 0, sizeof(req));
	req.ifa_family = AF_UNSPEC;
	/* Notifications older than the dump still queued would be applied
	 * after it: a removal of an IPv6 address added again since, whose
	 * announcement comes only later from the kernel's work queue (netd's
	 * own add too), would take out what the dump shows.  Such a dump is
	 * used once; the next use reads the socket empty and dumps again. */
	if ((rc = raw_dump(k, &rq, addr_parse, k, addrs_reset)) == 0)
		k->aview_current = !k->ev_congested && !unread;
	return rc;
}

int
kernel_each_addr(struct kernel *k, uint8_t family, uint32_t ifindex,
    kernel_addr_cb cb, void *arg)
{
	const struct nd_ifaddr *v;
	size_t i, n;
	int rc;

	if (ifindex == 0) {
		if ((rc = addr_view_sync(k)) < 0)
			return rc;
		v = k->aview;
		n = k->naview;
	} else {
		if ((rc = addr_dump(k, family, ifindex)) < 0)
			return rc;
		v = k->addrs;
		n = k->naddrs;
	}
	for (i = 0; i < n; i++)
		if ((family == 0 || v[i].addr.addr.family == family) &&
		    (ifindex == 0 || v[i].ifindex == ifindex))
			cb(&v[i], arg);
	return 0;
}

void
kernel_addrs_forget(struct kernel *k)
{
	k->aview_current = false;
}

/* ---- rules ---- */

/* ---- the rule view's index ---- */

static bool	rule_same(const struct nd_rule *, const struct nd_rule *);

/* A slot of the index: a rule of k->rules, by its place there, under one
 * of its host addresses, which the rule holds (8 bytes a slot). */
struct kernel_rule_slot {
	uint32_t	pos;		/* in k->rules */
	uint8_t		state;		/* SLOT_* */
	uint8_t		dst;		/* its key: the rule's to, else from */
};

enum { SLOT_FREE, SLOT_USED, SLOT_DEAD };

static const struct ip_addr *
slot_key(const struct kernel *k, const struct kernel_rule_slot *s)
{
	return s->dst ? &k->rules[s->pos].dst.addr : &k->rules[s->pos].src.addr;
}

static size_t
rix_hash(const struct ip_addr *a, size_t cap)
{
	uint32_t h = 2166136261u;	/* FNV-1a */
	size_t i;

	h = (h ^ a->family) * 16777619u;
	for (i = 0; i < sizeof(a->bytes); i++)
		h = (h ^ a->bytes[i]) * 16777619u;
	return h & (cap - 1);
}

static void
rix_place(struct kernel_rule_slot *tab, size_t cap,
    const struct kernel_rule_slot *s, const struct ip_addr *key)
{
	size_t i;

	for (i = rix_hash(key, cap); tab[i].state == SLOT_USED;
	    i = (i + 1) & (cap - 1))
		;
	tab[i] = *s;
	tab[i].state = SLOT_USED;
}

/*
 * Room for one more: the table at most 70% full, dead slots counted, and
 * grown to twice what it holds (a probe then reads 2 slots on average to
 * find a rule, a few more to find none; a node of 500 dual-stack pods
 * indexes some 2,000 rules, 4,096 slots of 8 bytes).
 */
static int
rix_room(struct kernel *k)
{
	struct kernel_rule_slot *nt;
	size_t ncap, i;

	if ((k->rix_used + k->rix_dead + 1) * 10 <= k->rix_cap * 7)
		return 0;
	for (ncap = 64; ncap < (k->rix_used + 1) * 2; ncap *= 2)
		if (ncap >= KERNEL_MAX_DUMP * 4)
			return -E2BIG;
	if ((nt = calloc(ncap, sizeof(*nt))) == NULL)
		return -ENOMEM;
	for (i = 0; i < k->rix_cap; i++)
		if (k->rix[i].state == SLOT_USED)
			rix_place(nt, ncap, &k->rix[i],
			    slot_key(k, &k->rix[i]));
	free(k->rix);
	k->rix = nt;
	k->rix_cap = ncap;
	k->rix_dead = 0;
	return 0;
}

/* Whether a rule's from is a host address, a key of the index. */
static bool
rule_src_keyed(const struct nd_rule *r)
{
	return r->src.len != 0 && r->src.len == ip_family_bits(r->src.addr.family);
}

/* The host addresses a rule is indexed under: its full-length from, and
 * its full-length to unless it is the same. */
static size_t
rix_keys(const struct nd_rule *r, struct ip_addr keys[2])
{
	size_t n = 0;

	if (rule_src_keyed(r))
		keys[n++] = r->src.addr;
	if (r->dst.len != 0 && r->dst.len == ip_family_bits(r->dst.addr.family) &&
	    (n == 0 || !ip_addr_eq(&keys[0], &r->dst.addr)))
		keys[n++] = r->dst.addr;
	return n;
}

static unsigned
rix_class(const struct kernel *k, const struct nd_rule *r)
{
	return k->rules_class != NULL ? k->rules_class(r, k->rules_class_arg) :
	    0;
}

/* The rule at k->rules[pos], come into the view, into its index: 0, or a
 * negative errno (then the index does not hold the view, and the view is
 * in doubt). */
static int
rix_add(struct kernel *k, size_t pos)
{
	const struct nd_rule *r = &k->rules[pos];
	struct kernel_rule_slot s;
	struct ip_addr keys[2];
	unsigned cls = rix_class(k, r);
	size_t n, i;
	int rc;

	for (i = 0; i < 2; i++)
		if (cls & KERNEL_RULE_COUNT(i))
			k->rules_count[i]++;
	if (cls & KERNEL_RULE_ASIDE) {
		if ((rc = grow((void **)&k->aside, &k->aside_cap, k->naside,
		    sizeof(*k->aside))) < 0)
			return rc;
		k->aside[k->naside++] = *r;
		return 0;	/* shown to every request: not by address */
	}
	n = rix_keys(r, keys);
	memset(&s, 0, sizeof(s));
	s.pos = (uint32_t)pos;
	for (i = 0; i < n; i++) {
		if ((rc = rix_room(k)) < 0)
			return rc;
		/* rix_keys(): the from first, if it is a key at all. */
		s.dst = i == 1 || !rule_src_keyed(r);
		rix_place(k->rix, k->rix_cap, &s, &keys[i]);
		k->rix_used++;
	}
	return 0;
}

/* The slot of the rule at pos under key, or (size_t)-1. */
static size_t
rix_slot(const struct kernel *k, const struct ip_addr *key, size_t pos)
{
	size_t j;

	if (k->rix_cap == 0)
		return (size_t)-1;
	for (j = rix_hash(key, k->rix_cap); k->rix[j].state != SLOT_FREE;
	    j = (j + 1) & (k->rix_cap - 1))
		if (k->rix[j].state == SLOT_USED && k->rix[j].pos == pos &&
		    ip_addr_eq(slot_key(k, &k->rix[j]), key))
			return j;
	return (size_t)-1;
}

/*
 * Where in k->rules a rule that reads as r is, or (size_t)-1: through the
 * index for one it holds (a pod's, by its address), else by a walk (a
 * rule of an ENI's, or one of another's with netd's tag: few).  Of
 * identical rules, either: no decision of netd's tells them apart.
 */
static size_t
rules_find(const struct kernel *k, const struct nd_rule *r)
{
	struct ip_addr keys[2];
	size_t i, j;

	if (!(rix_class(k, r) & KERNEL_RULE_ASIDE) && rix_keys(r, keys) > 0) {
		if (k->rix_cap == 0)
			return (size_t)-1;
		for (j = rix_hash(&keys[0], k->rix_cap);
		    k->rix[j].state != SLOT_FREE; j = (j + 1) & (k->rix_cap - 1))
			if (k->rix[j].state == SLOT_USED &&
			    ip_addr_eq(slot_key(k, &k->rix[j]), &keys[0]) &&
			    rule_same(&k->rules[k->rix[j].pos], r))
				return k->rix[j].pos;
		return (size_t)-1;
	}
	for (i = k->nrules; i-- > 0; )
		if (rule_same(&k->rules[i], r))
			return i;
	return (size_t)-1;
}

/*
 * The rule at k->rules[pos] gone from the view: out of its index, and out
 * of k->rules, the last rule taking its place (the view keeps no order:
 * no decision of netd's depends on one).
 */
static void
rules_remove(struct kernel *k, size_t pos)
{
	const struct nd_rule *r = &k->rules[pos];
	struct ip_addr keys[2];
	unsigned cls = rix_class(k, r);
	size_t n, i, j, last = k->nrules - 1;

	for (i = 0; i < 2; i++)
		if ((cls & KERNEL_RULE_COUNT(i)) && k->rules_count[i] > 0)
			k->rules_count[i]--;
	if (cls & KERNEL_RULE_ASIDE) {
		for (j = 0; j < k->naside; j++)
			if (rule_same(&k->aside[j], r)) {
				k->aside[j] = k->aside[--k->naside];
				break;
			}
	} else {
		n = rix_keys(r, keys);
		for (i = 0; i < n; i++)
			if ((j = rix_slot(k, &keys[i], pos)) != (size_t)-1) {
				k->rix[j].state = SLOT_DEAD;
				k->rix_used--;
				k->rix_dead++;
			}
	}
	if (pos != last) {
		k->rules[pos] = k->rules[last];
		n = (rix_class(k, &k->rules[pos]) & KERNEL_RULE_ASIDE) ? 0 :
		    rix_keys(&k->rules[pos], keys);
		for (i = 0; i < n; i++)
			if ((j = rix_slot(k, &keys[i], last)) != (size_t)-1)
				k->rix[j].pos = (uint32_t)pos;
	}
	k->nrules--;
}

static void
rules_reset(struct kernel *k, void *arg)
{
	(void)arg;
	k->nrules = 0;
	k->naside = 0;
	k->rules_count[0] = k->rules_count[1] = 0;
	if (k->rix != NULL)
		memset(k->rix, 0, k->rix_cap * sizeof(*k->rix));
	k->rix_used = k->rix_dead = 0;
}

void
kernel_rules_classify(struct kernel *k,
    unsigned (*cls)(const struct nd_rule *, void *), void *arg)
{
	k->rules_class = cls;
	k->rules_class_arg = arg;
	k->rules_current = false;
}

struct rule_prios {
	uint32_t	a, b;
};

/*
 * A lookup rule of either family at one of the priorities into *out: 1,
 * or 0 if the message is no such rule.  Every attribute netd does not set
 * itself marks the rule as having other selectors, also the ones this
 * code was written before: a rule netd cannot fully see is never taken for
 * one of its own.  A fwmark is read as it is (the planner tells netd's
 * connection-mark rule from everyone else's).  A dump's rules and a
 * notification's are read here alike, so the view judges as a dump does.
 */
static int
rule_read(struct nlmsghdr *hdr, const struct rule_prios *pr,
    struct nd_rule *out)
{
	struct fib_rule_hdr *frh;
	struct nlattr *a;
	struct nd_rule r;
	bool have_prio = false, have_mark = false, have_mask = false;
	int rem, alen;

	if (!nlmsg_valid_hdr(hdr, sizeof(*frh)))
		return 0;
	frh = nlmsg_data(hdr);
	if ((frh->family != AF_INET && frh->family != AF_INET6) ||
	    frh->action != FR_ACT_TO_TBL)
		return 0;
	alen = frh->family == AF_INET ? 4 : 16;
	memset(&r, 0, sizeof(r));
	r.table = frh->table;
	/* All of the rule's family until an address says otherwise. */
	r.src.addr.family = r.dst.addr.family = frh->family;
	r.src.len = frh->src_len;
	r.dst.len = frh->dst_len;
	r.other_selectors = frh->tos != 0 || frh->flags != 0;
	nla_for_each_attr(a, nlmsg_attrdata(hdr, sizeof(*frh)),
	    nlmsg_attrlen(hdr, sizeof(*frh)), rem) {
		switch (nla_type(a)) {
		case FRA_PRIORITY:
			r.priority = attr_u32(a, 0);
			have_prio = true;
			break;
		case FRA_TABLE:
			r.table = attr_u32(a, r.table);
			break;
		case FRA_SRC:
			if (nla_len(a) >= alen)
				memcpy(r.src.addr.bytes, nla_data(a),
				    (size_t)alen);
			break;
		case FRA_DST:
			if (nla_len(a) >= alen)
				memcpy(r.dst.addr.bytes, nla_data(a),
				    (size_t)alen);
			break;
		case FRA_PROTOCOL:
			if (nla_len(a) >= 1)
				r.protocol = nla_get_u8(a);
			break;
		case FRA_SUPPRESS_PREFIXLEN:
		case FRA_SUPPRESS_IFGROUP:
			if (attr_u32(a, 0) != KERNEL_NO_SUPPRESS)
				r.other_selectors = true;
			break;
		case FRA_FWMARK:
			r.fwmark = attr_u32(a, 0);
			have_mark = true;
			break;
		case FRA_FWMASK:
			r.fwmask = attr_u32(a, 0);
			have_mask = true;
			break;
		default:
			r.other_selectors = true;
			break;
		}
	}
	if (!have_prio || (r.priority != pr->a && r.priority != pr->b))
		return 0;
	/* A mark without a mask is matched whole (the kernel's default);
	 * "fwmark 0/0" selects nothing. */
	if (have_mark && !have_mask)
		r.fwmask = 0xffffffffu;
	if (r.fwmask == 0)
		r.fwmark = 0;
	/* Past the family's bits, or an address that is no canonical one
	 * (IPv4-mapped): nothing netd wrote. */
	if (r.src.len > alen * 8 || r.dst.len > alen * 8 ||
	    !ip_addr_valid(&r.src.addr) || !ip_addr_valid(&r.dst.addr))
		r.other_selectors = true;
	*out = r;
	return 1;
}

static int
rule_parse(struct kernel *k, struct nlmsghdr *hdr, void *arg)
{
	struct nd_rule r;
	int rc;

	if (hdr->nlmsg_type != RTM_NEWRULE || rule_read(hdr, arg, &r) != 1)
		return 0;
	if ((rc = grow((void **)&k->rules, &k->rules_cap, k->nrules,
	    sizeof(*k->rules))) < 0)
		return rc;
	k->rules[k->nrules] = r;
	if ((rc = rix_add(k, k->nrules)) < 0)
		return rc;
	k->nrules++;
	return 0;
}

/* Whether two rules read alike (rule_read()'s every field). */
static bool
rule_same(const struct nd_rule *a, const struct nd_rule *b)
{
	return a->priority == b->priority && a->table == b->table &&
	    a->fwmark == b->fwmark && a->fwmask == b->fwmask &&
	    a->protocol == b->protocol &&
	    a->other_selectors == b->other_selectors &&
	    a->src.len == b->src.len && a->dst.len == b->dst.len &&
	    a->src.addr.family == b->src.addr.family &&
	    a->dst.addr.family == b->dst.addr.family &&
	    memcmp(a->src.addr.bytes, b->src.addr.bytes,
	    sizeof(a->src.addr.bytes)) == 0 &&
	    memcmp(a->dst.addr.bytes, b->dst.addr.bytes,
	    sizeof(a->dst.addr.bytes)) == 0;
}

/*
 * One notification applied to the view.  A rule the kernel removed is
 * found by what netd reads of it: two rules that read alike are
 * interchangeable to every decision of netd's, so which one goes does not
 * matter, but one must, and identical rules (ip rule add makes them
 * without complaint) are kept once each.  A removal the view has no rule
 * for, or no room for an addition, leaves the view in doubt.
 */
static void
rule_event(struct kernel *k, struct nlmsghdr *hdr)
{
	struct rule_prios pr = { k->rules_prio[0], k->rules_prio[1] };
	struct nd_rule r;
	size_t i;

	if (k->rules_doubt || (hdr->nlmsg_type != RTM_NEWRULE &&
	    hdr->nlmsg_type != RTM_DELRULE) || rule_read(hdr, &pr, &r) != 1)
		return;
	if (hdr->nlmsg_type == RTM_DELRULE) {
		if ((i = rules_find(k, &r)) == (size_t)-1)
			k->rules_doubt = true;
		else
			rules_remove(k, i);
		return;
	}
	if (grow((void **)&k->rules, &k->rules_cap, k->nrules,
	    sizeof(*k->rules)) < 0) {
		k->rules_doubt = true;
		return;
	}
	k->rules[k->nrules] = r;
	if (rix_add(k, k->nrules) < 0) {
		k->rules_doubt = true;
		return;
	}
	k->nrules++;
}

/* n receive headers for recvmmsg(2), one buffer of len bytes each, the
 * buffers one after another from bufs. */
static void
mmsg_prepare(struct mmsghdr *mh, struct iovec *iov, char *bufs, size_t len,
    size_t n)
{
	size_t i;

	memset(mh, 0, n * sizeof(*mh));
	for (i = 0; i < n; i++) {
		iov[i].iov_base = bufs + i * len;
		iov[i].iov_len = len;
		mh[i].msg_hdr.msg_iov = &iov[i];
		mh[i].msg_hdr.msg_iovlen = 1;
	}
}

/*
 * Read every queued rule notification, applying each (apply) or throwing
 * it away: 0 if the socket is empty now, -ENOBUFS if notifications were
 * lost (the socket overran) or more are queued than the budget reads, or
 * another negative errno.
 */
static int
rules_drain(struct kernel *k, bool apply)
{
	static char bufs[KERNEL_EVENT_BATCH][KERNEL_EVENT_LEN];
	struct iovec iov[KERNEL_EVENT_BATCH];
	struct mmsghdr mh[KERNEL_EVENT_BATCH];
	struct nlmsghdr *h;
	int fd = nl_socket_get_fd(k->rule_ev), i, j, got, lost = 0, len;

	mmsg_prepare(mh, iov, bufs[0], sizeof(bufs[0]), KERNEL_EVENT_BATCH);
	/* Each notification is a datagram of its own: read many a call,
	 * where libnl reads one (or two, to learn its size). */
	for (i = 0; i < KERNEL_RULE_EVENT_BUDGET; i++) {
		got = recvmmsg(fd, mh, KERNEL_EVENT_BATCH, MSG_DONTWAIT, NULL);
		if (got == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return lost;
		if (got == -1 && errno == ENOBUFS) {	/* events lost */
			lost = -ENOBUFS;
			continue;
		}
		if (got == -1 && errno == EINTR)
			continue;
		if (got == -1)
			return -errno;
		for (j = 0; j < got; j++) {
			/* Cut short, it cannot be read: the view is in doubt. */
			if (mh[j].msg_hdr.msg_flags & MSG_TRUNC) {
				k->rules_doubt = true;
				continue;
			}
			len = (int)mh[j].msg_len;
			for (h = (struct nlmsghdr *)bufs[j]; apply &&
			    nlmsg_ok(h, len); h = nlmsg_next(h, &len))
				rule_event(k, h);
		}
		if (got < KERNEL_EVENT_BATCH)
			return lost;
	}
	return -ENOBUFS;
}

/* Whether the view is kept for priority p. */
static bool
rules_kept(const struct kernel *k, uint32_t p)
{
	return p == k->rules_prio[0] || p == k->rules_prio[1];
}

/*
 * The view made current for priorities a and b.  The notifications queued
 * are applied; with none kept, or lost ones, or one the view cannot take,
 * the socket is emptied and the rules dumped.  A change made while the
 * dump runs may show both in the dump and as a notification after it;
 * the dump is then done again, and if changes keep coming its rules are
 * handed out once and not kept.  A change the dump showed whose
 * notification is queued only after the check (a window of a few
 * instructions, open only where the kernel dumps rules without the lock
 * its changes take) would leave a rule too many in the view: the
 * reconciliation's dump (kernel_rules_forget()) ends it.
 */
static int
rules_sync(struct kernel *k, uint32_t a, uint32_t b)
{
	struct fib_rule_hdr req;
	struct dump_req rq = { RTM_GETRULE, &req, sizeof(req), 0, { { 0, 0 } } };
	struct rule_prios pr = { a, b };
	int i, rc;

	if (k->rules_current && rules_kept(k, a) && rules_kept(k, b)) {
		rc = rules_drain(k, true);
		if (rc == 0 && !k->rules_doubt)
			return 0;
		if (rc < 0 && rc != -ENOBUFS)
			return rc;
		if (rc == -ENOBUFS)
			k->rules_lost++;
	}
	/* Asked for one priority, the view keeps the one it kept besides:
	 * netd reads its two priorities one at a time and both at once,
	 * and the view should settle on the two, not flip between them. */
	if (a == b && k->rules_prio_set)
		b = k->rules_prio[0] != a ? k->rules_prio[0] : k->rules_prio[1];
	pr.b = b;
	k->rules_current = k->rules_doubt = false;
	k->rules_prio[0] = a;
	k->rules_prio[1] = b;
	k->rules_prio_set = true;
	/* Both families' rules in one dump: netd's pods have rules in
	 * each. */
	memset(&req, 0, sizeof(req));
	req.family = AF_UNSPEC;
	for (i = 0; i < KERNEL_DUMP_TRIES; i++) {
		if ((rc = rules_drain(k, false)) < 0 && rc != -ENOBUFS)
			return rc;
		if ((rc = raw_dump(k, &rq, rule_parse, &pr, rules_reset)) < 0)
			return rc;
		if (!sock_unread(k->rule_ev)) {
			k->rules_current = true;
			return 0;
		}
	}
	return 0;
}

int
kernel_each_rule(struct kernel *k, uint32_t prio_a, uint32_t prio_b,
    kernel_rule_cb cb, void *arg)
{
	size_t i;
	int rc;

	if ((rc = rules_sync(k, prio_a, prio_b)) < 0) {
		k->rules_current = false;
		return rc;
	}
	/* The view may keep another priority besides. */
	for (i = 0; i < k->nrules; i++)
		if (k->rules[i].priority == prio_a ||
		    k->rules[i].priority == prio_b)
			cb(&k->rules[i], arg);
	return 0;
}

int
kernel_pod_rules(struct kernel *k, uint32_t prio_a, uint32_t prio_b,
    const struct ip_addr *addrs, size_t n, kernel_rule_cb cb, void *arg,
    uint32_t counts[2])
{
	const struct kernel_rule_slot *s;
	struct ip_addr keys[2];
	size_t i, j, m, nk;
	int rc;

	if ((rc = rules_sync(k, prio_a, prio_b)) < 0) {
		k->rules_current = false;
		return rc;
	}
	counts[0] = k->rules_count[0];
	counts[1] = k->rules_count[1];
	for (i = 0; i < k->naside; i++)
		if (k->aside[i].priority == prio_a ||
		    k->aside[i].priority == prio_b)
			cb(&k->aside[i], arg);
	for (i = 0; i < n && k->rix_cap > 0; i++) {
		if (addrs[i].family == 0)
			continue;
		/* The same address twice: its rules once. */
		for (m = 0; m < i; m++)
			if (ip_addr_eq(&addrs[m], &addrs[i]))
				break;
		if (m < i)
			continue;
		for (j = rix_hash(&addrs[i], k->rix_cap);
		    (s = &k->rix[j])->state != SLOT_FREE;
		    j = (j + 1) & (k->rix_cap - 1)) {
			if (s->state != SLOT_USED ||
			    !ip_addr_eq(slot_key(k, s), &addrs[i]) ||
			    (k->rules[s->pos].priority != prio_a &&
			    k->rules[s->pos].priority != prio_b))
				continue;
			/* Indexed under both of its addresses, a rule naming
			 * two of the request's is shown under the first. */
			nk = rix_keys(&k->rules[s->pos], keys);
			for (m = 0; m < i; m++)
				if (ip_addr_eq(&addrs[m], &keys[0]) ||
				    (nk == 2 && ip_addr_eq(&addrs[m], &keys[1])))
					break;
			if (m == i)
				cb(&k->rules[s->pos], arg);
		}
	}
	return 0;
}

void
kernel_rules_forget(struct kernel *k)
{
	k->rules_current = false;
}

/* ---- routes ---- */

/* libnl's address as a struct ip_addr: 0, or -1 if it is none, of
 * another family than IPv4's (netd reads IPv4 routes only) or 0.0.0.0. */
static int
nl_ip4(struct nl_addr *a, struct ip_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (a == NULL || nl_addr_get_family(a) != AF_INET ||
	    ip_addr_from_bytes(out, AF_INET, nl_addr_get_binary_addr(a),
	    nl_addr_get_len(a)) == -1 || ip_addr_is_unspecified(out)) {
		memset(out, 0, sizeof(*out));
		return -1;
	}
	return 0;
}

static int
route_cache(struct kernel *k, int family, struct nl_cache **cache)
{
	int rc = 0, i;

	for (i = 0; i < KERNEL_DUMP_TRIES; i++)
		if ((rc = rtnl_route_alloc_cache(k->req, family, 0, cache)) !=
		    -NLE_DUMP_INTR)
			break;
	return rc < 0 ? -nlerr_errno(rc) : 0;
}

/* A route message, parsed: its header, its table, its attributes. */
struct route_msg {
	struct rtmsg	*rtm;
	uint32_t	 table;
	struct nlattr	*tb[RTA_MAX + 1];
};

/* 1 a route, 0 something else, -EIO a route that does not parse. */
static int
route_msg_parse(struct nlmsghdr *hdr, struct route_msg *rm)
{
	if (hdr->nlmsg_type != RTM_NEWROUTE ||
	    !nlmsg_valid_hdr(hdr, sizeof(*rm->rtm)))
		return 0;
	rm->rtm = nlmsg_data(hdr);
	if (nlmsg_parse(hdr, sizeof(*rm->rtm), rm->tb, RTA_MAX, NULL) < 0)
		return -EIO;
	rm->table = route_msg_table(hdr);
	return 1;
}

/* Each next hop of RTA_MULTIPATH in turn (*nh NULL to start); false at
 * the end. */
static bool
route_next_hop(const struct nlattr *mp, struct rtnexthop **nh, int *rem)
{
	if (*nh == NULL) {
		*nh = nla_data(mp);
		*rem = nla_len(mp);
	} else {
		*rem -= RTNH_ALIGN((*nh)->rtnh_len);
		*nh = RTNH_NEXT(*nh);
	}
	return *rem >= (int)sizeof(**nh) &&
	    (*nh)->rtnh_len >= sizeof(**nh) && (*nh)->rtnh_len <= *rem;
}

/* A gateway attribute of the route's family into *gw; none leaves it
 * unset (family 0).  One that makes no canonical address (IPv4-mapped)
 * keeps the kernel's family and bytes, so it is never taken for none. */
static void
gateway_attr(const struct nlattr *a, uint8_t family, struct ip_addr *gw)
{
	size_t len = family == AF_INET ? 4 : 16;

	memset(gw, 0, sizeof(*gw));
	if (a == NULL || (family != AF_INET && family != AF_INET6) ||
	    nla_len(a) != (int)len)
		return;
	if (ip_addr_from_bytes(gw, family, nla_data(a), len) == -1) {
		gw->family = family;
		memcpy(gw->bytes, nla_data(a), len);
	}
}

/* The gateway among a next hop's attributes, if any. */
static void
next_hop_gateway(struct rtnexthop *nh, uint8_t family, struct ip_addr *gw)
{
	struct nlattr *tb[RTA_MAX + 1];

	if (nla_parse(tb, RTA_MAX, (struct nlattr *)RTNH_DATA(nh),
	    nh->rtnh_len - (int)sizeof(*nh), NULL) == 0)
		gateway_attr(tb[RTA_GATEWAY], family, gw);
	else
		memset(gw, 0, sizeof(*gw));
}

/*
 * A route of the table, IPv4 or IPv6, into the kept array.  Read as
 * libnl read it before: one next hop, from RTA_MULTIPATH or from the
 * route's own attributes (the flags then in the header), gives its link,
 * gateway and onlink; several make it multipath; none leaves them unset.
 */
static int
table_route_parse(struct kernel *k, struct nlmsghdr *hdr, void *arg)
{
	const uint32_t *table = arg;
	struct route_msg rm;
	struct nd_route *nr;
	struct rtnexthop *nh = NULL;
	struct nlattr **tb = rm.tb;
	int rc, rem, n = 0, alen;

	if ((rc = route_msg_parse(hdr, &rm)) <= 0)
		return rc;
	if ((rm.rtm->rtm_family != AF_INET &&
	    rm.rtm->rtm_family != AF_INET6) || rm.table != *table)
		return 0;
	alen = rm.rtm->rtm_family == AF_INET ? 4 : 16;
	if ((rc = grow((void **)&k->routes, &k->routes_cap, k->nroutes,
	    sizeof(*k->routes))) < 0)
		return rc;
	nr = &k->routes[k->nroutes++];
	memset(nr, 0, sizeof(*nr));
	nr->table = rm.table;
	nr->type = rm.rtm->rtm_type;
	nr->dst.addr.family = rm.rtm->rtm_family;
	nr->dst.len = rm.rtm->rtm_dst_len;
	if (tb[RTA_DST] != NULL && nla_len(tb[RTA_DST]) == alen)
		kernel_prefix(&nr->dst, rm.rtm->rtm_family,
		    nla_data(tb[RTA_DST]), (size_t)alen, rm.rtm->rtm_dst_len);
	nr->scope = rm.rtm->rtm_scope;
	nr->protocol = rm.rtm->rtm_protocol;
	if (tb[RTA_PRIORITY] != NULL)
		nr->metric = attr_u32(tb[RTA_PRIORITY], 0);
	if (tb[RTA_MULTIPATH] != NULL) {
		while (route_next_hop(tb[RTA_MULTIPATH], &nh, &rem)) {
			if (n++ > 0)
				continue;
			nr->ifindex = (uint32_t)nh->rtnh_ifindex;
			next_hop_gateway(nh, rm.rtm->rtm_family,
			    &nr->gateway);
			nr->onlink = (nh->rtnh_flags & RTNH_F_ONLINK) != 0;
		}
		if (n > 1) {
			nr->ifindex = 0;
			memset(&nr->gateway, 0, sizeof(nr->gateway));
			nr->onlink = false;
			nr->multipath = true;
		}
	} else if (tb[RTA_OIF] != NULL || tb[RTA_GATEWAY] != NULL ||
	    tb[RTA_FLOW] != NULL || tb[RTA_NEWDST] != NULL ||
	    tb[RTA_VIA] != NULL || tb[RTA_ENCAP] != NULL) {
		if (tb[RTA_OIF] != NULL)
			nr->ifindex = attr_u32(tb[RTA_OIF], 0);
		gateway_attr(tb[RTA_GATEWAY], rm.rtm->rtm_family,
		    &nr->gateway);
		nr->onlink = (rm.rtm->rtm_flags & RTNH_F_ONLINK) != 0;
	}
	return 0;
}

static void
routes_reset(struct kernel *k, void *arg)
{
	(void)arg;
	k->nroutes = 0;
}

/* The routes of one table, both families, into k->routes.  Only the
 * table's are read: the kernel filters by RTA_TABLE (a table that does
 * not exist yet is ENOENT, and empty; asked for every family, a family
 * without it says nothing). */
static int
table_routes_dump(struct kernel *k, uint32_t table)
{
	struct rtmsg req;
	struct dump_req rq = { RTM_GETROUTE, &req, sizeof(req), 1,
	    { { RTA_TABLE, table } } };
	int rc;

	memset(&req, 0, sizeof(req));
	req.rtm_family = AF_UNSPEC;
	rc = raw_dump(k, &rq, table_route_parse, &table, routes_reset);
	if (rc == -ENOENT) {
		k->nroutes = 0;
		return 0;
	}
	return rc;
}

int
kernel_each_route(struct kernel *k, uint32_t table, kernel_route_cb cb,
    void *arg)
{
	size_t i;
	int rc;

	if ((rc = table_routes_dump(k, table)) < 0)
		return rc;
	/* Every type: a blackhole, unreachable or prohibit route is a
	 * route too, and the callers must see it. */
	for (i = 0; i < k->nroutes; i++)
		cb(&k->routes[i], arg);
	return 0;
}

/*
 * Whether a route the kernel gave for a link goes through it: a next hop
 * names it, or none names a link at all (a next-hop object the kernel
 * matched).  A route with next hops on other links only is not the link's.
 */
static bool
route_via(const struct route_msg *rm, uint32_t ifindex)
{
	struct rtnexthop *nh = NULL;
	bool named = false;
	int rem;

	if (rm->tb[RTA_OIF] != NULL) {
		if (attr_u32(rm->tb[RTA_OIF], 0) == ifindex)
			return true;
		named = true;
	}
	if (rm->tb[RTA_MULTIPATH] != NULL)
		while (route_next_hop(rm->tb[RTA_MULTIPATH], &nh, &rem)) {
			if ((uint32_t)nh->rtnh_ifindex == ifindex)
				return true;
			named = true;
		}
	return !named;
}

/* The routes of a link's state, and whether more came than fit. */
struct link_routes {
	struct nd_link_state	*out;
	bool			 overflow;
};

static int
link_route_parse(struct kernel *k, struct nlmsghdr *hdr, void *arg)
{
	struct link_routes *lrs = arg;
	struct nd_link_state *out = lrs->out;
	struct nd_link_route *lr;
	struct route_msg rm;
	int rc, len;

	(void)k;
	if ((rc = route_msg_parse(hdr, &rm)) <= 0)
		return rc;
	if (!route_via(&rm, out->ifindex))
		return 0;
	if (out->nroutes == NETD_MAX_LINK_ROUTES) {
		lrs->overflow = true;
		return 0;
	}
	lr = &out->routes[out->nroutes++];
	memset(lr, 0, sizeof(*lr));
	lr->table = rm.table;
	lr->protocol = rm.rtm->rtm_protocol;
	if (rm.tb[RTA_DST] != NULL && (len = nla_len(rm.tb[RTA_DST])) > 0)
		kernel_prefix(&lr->dst, rm.rtm->rtm_family,
		    nla_data(rm.tb[RTA_DST]), (size_t)len,
		    rm.rtm->rtm_dst_len);
	else {
		lr->dst.addr.family = rm.rtm->rtm_family;
		lr->dst.len = rm.rtm->rtm_dst_len;
	}
	return 0;
}

static void
link_routes_reset(struct kernel *k, void *arg)
{
	struct link_routes *lrs = arg;

	(void)k;
	lrs->out->nroutes = 0;
	lrs->overflow = false;
}

/*
 * What netd judges a link by, read for that link only: the kernel filters
 * the address dump by ifindex and the route dump by RTA_OIF, every family
 * and table, the routes through the link's next-hop objects included.
 */
int
kernel_link_contents(struct kernel *k, struct nd_link_state *out)
{
	struct link_routes lrs = { out, false };
	struct rtmsg rreq;
	struct dump_req rq = { RTM_GETROUTE, &rreq, sizeof(rreq), 1,
	    { { RTA_OIF, out->ifindex } } };
	size_t i;
	int rc;

	out->naddrs = out->nroutes = 0;
	if ((rc = addr_dump(k, AF_UNSPEC, out->ifindex)) < 0)
		return rc;
	for (i = 0; i < k->naddrs; i++) {
		if (k->addrs[i].ifindex != out->ifindex)
			continue;
		if (out->naddrs == NETD_MAX_LINK_ADDRS)
			out->overflow = true;
		else
			out->addrs[out->naddrs++] = k->addrs[i];
	}

	memset(&rreq, 0, sizeof(rreq));
	rreq.rtm_family = AF_UNSPEC;
	if ((rc = raw_dump(k, &rq, link_route_parse, &lrs,
	    link_routes_reset)) < 0)
		return rc;
	if (lrs.overflow)
		out->overflow = true;
	return 0;
}

/* The links are all read (no filter finds the other links with its MAC),
 * but without their statistics. */
int
kernel_link_state(struct kernel *k, uint32_t ifindex,
    struct nd_link_state *out)
{
	int rc;

	if ((rc = links_dump(k)) < 0 || (rc = link_kin(k, ifindex, out)) < 0)
		return rc;
	return kernel_link_contents(k, out);
}

/* ---- the node's own links ---- */

static bool
route_is_main_default(struct rtnl_route *r)
{
	struct nl_addr *d = rtnl_route_get_dst(r);

	return rtnl_route_get_table(r) == RT_TABLE_MAIN &&
	    rtnl_route_get_type(r) == RTN_UNICAST &&
	    (d == NULL || nl_addr_get_prefixlen(d) == 0);
}

/* The link's entry (a new one if need be), or NULL. */
static struct netd_node_link *
node_add_link(struct netd_node *n, uint32_t ifindex)
{
	uint32_t i;

	if (ifindex == 0)
		return NULL;
	for (i = 0; i < n->nlinks; i++)
		if (n->links[i].ifindex == ifindex)
			return &n->links[i];
	if (n->nlinks == NETD_MAX_NODE_LINKS) {
		n->overflow = true;
		return NULL;
	}
	n->links[n->nlinks].ifindex = ifindex;
	return &n->links[n->nlinks++];
}

/* The next hop's IPv4 gateway becomes its link's, if the route's metric
 * is the lowest seen for that link: the one the kernel uses. */
static void
node_gateway(struct netd_node_link *l, struct rtnl_route *r,
    struct rtnl_nexthop *nh, uint32_t *metric)
{
	uint32_t prio = rtnl_route_get_priority(r);
	struct ip_addr gw;

	if (rtnl_route_get_family(r) != AF_INET ||
	    nl_ip4(rtnl_route_nh_get_gateway(nh), &gw) == -1)
		return;
	if (l->gateway.family != 0 && prio >= *metric)
		return;
	l->gateway = gw;
	*metric = prio;
}

int
kernel_node_scan(struct kernel *k, struct netd_node *out)
{
	struct nl_cache *cache;
	struct nl_object *o;
	struct rtnl_route *r;
	struct rtnl_nexthop *nh;
	struct netd_node_link *nl;
	struct msg_netd_link l;
	uint32_t metric[NETD_MAX_NODE_LINKS];
	uint32_t i, j;
	int rc, n;

	memset(out, 0, sizeof(*out));
	memset(metric, 0, sizeof(metric));
	if ((rc = route_cache(k, AF_UNSPEC, &cache)) < 0)
		return rc;
	for (o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
		r = (struct rtnl_route *)o;
		if (!route_is_main_default(r))
			continue;
		n = rtnl_route_get_nnexthops(r);
		for (j = 0; j < (uint32_t)n; j++) {
			nh = rtnl_route_nexthop_n(r, (int)j);
			nl = node_add_link(out,
			    (uint32_t)rtnl_route_nh_get_ifindex(nh));
			if (nl != NULL)
				node_gateway(nl, r, nh,
				    &metric[nl - out->links]);
		}
	}
	nl_cache_free(cache);

	for (i = 0; i < out->nlinks; i++) {
		/* A link gone since the route dump keeps its ifindex only. */
		if ((rc = kernel_get_link(k, out->links[i].ifindex, &l)) < 0)
			return rc;
		if (rc == 1) {
			memcpy(out->links[i].mac, l.mac, 6);
			memcpy(out->links[i].name, l.name, sizeof(l.name));
		}
	}

	/* Both families: a pod or an ENI naming the node's own IPv6
	 * address is refused as an IPv4 one is. */
	if ((rc = addr_dump(k, AF_UNSPEC, 0)) < 0)
		return rc;
	for (i = 0; i < k->naddrs; i++) {
		if (!ip_addr_valid(&k->addrs[i].addr.addr))
			continue;
		for (j = 0; j < out->nlinks; j++)
			if (out->links[j].ifindex == k->addrs[i].ifindex)
				break;
		if (j == out->nlinks)
			continue;
		if (out->naddrs == NETD_MAX_NODE_ADDRS) {
			out->overflow = true;
			continue;
		}
		out->addrs[out->naddrs++] = k->addrs[i].addr.addr;
	}
	return 0;
}

/* ---- pods' host routes ---- */

int
kernel_pod_link(struct kernel *k, const char *name, struct nd_pod_link *out)
{
	struct rtnl_link *link = NULL;
	struct nl_addr *a;
	const char *kind;
	int32_t nsid;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = rtnl_link_get_kernel(k->req, 0, name, &link);
	if (rc == -NLE_NODEV || rc == -NLE_OBJ_NOTFOUND)
		return 0;
	if (rc < 0)
		return -nlerr_errno(rc);
	out->found = true;
	out->ifindex = (uint32_t)rtnl_link_get_ifindex(link);
	if ((a = rtnl_link_get_addr(link)) != NULL && nl_addr_get_len(a) == 6)
		memcpy(out->mac, nl_addr_get_binary_addr(a), 6);
	kind = rtnl_link_get_type(link);
	out->is_veth = kind != NULL && strcmp(kind, "veth") == 0;
	out->peer_netns = rtnl_link_get_link_netnsid(link, &nsid) == 0;
	rtnl_link_put(link);
	return 0;
}

int
kernel_each_host_route(struct kernel *k, kernel_host_route_cb cb, void *arg)
{
	const struct kernel_link *l;
	const struct nd_route *nr;
	struct msg_netd_route mr;
	size_t i;
	int rc;

	if ((rc = links_dump(k)) < 0 ||
	    (rc = table_routes_dump(k, RT_TABLE_MAIN)) < 0)
		return rc;
	for (i = 0; i < k->nroutes; i++) {
		nr = &k->routes[i];
		/* One next hop, a link and no gateway: a /32 of scope link,
		 * or a /128 (IPv6 routes have no scope). */
		if (nr->type != RTN_UNICAST || nr->multipath ||
		    nr->ifindex == 0 || nr->gateway.family != 0 ||
		    !ip_addr_valid(&nr->dst.addr) ||
		    nr->dst.len != ip_family_bits(nr->dst.addr.family) ||
		    (nr->dst.addr.family == AF_INET &&
		    nr->scope != RT_SCOPE_LINK))
			continue;
		memset(&mr, 0, sizeof(mr));
		mr.addr = nr->dst.addr;
		mr.ifindex = nr->ifindex;
		if ((l = links_by_ifindex(k, mr.ifindex)) != NULL)
			memcpy(mr.dev, l->l.name, sizeof(mr.dev));
		cb(&mr, arg);
	}
	return 0;
}

/* ---- applying a plan ---- */

/* libnl's address for a prefix of either family (an address: its
 * family's whole length). */
static struct nl_addr *
build_addr(const struct ip_addr *addr, uint8_t len)
{
	struct nl_addr *a = nl_addr_build(addr->family, addr->bytes,
	    ip_family_bits(addr->family) / 8);

	if (a != NULL)
		nl_addr_set_prefixlen(a, len);
	return a;
}

/* Set the link's IPv6 address generation mode (rtnetlink's
 * IFLA_INET6_ADDR_GEN_MODE, no sysctl). */
static int
link_gen_mode(struct kernel *k, struct rtnl_link *orig, uint8_t mode)
{
	struct rtnl_link *change;
	int rc;

	if ((change = rtnl_link_alloc()) == NULL)
		return -NLE_NOMEM;
	if ((rc = rtnl_link_inet6_set_addr_gen_mode(change, mode)) == 0)
		rc = rtnl_link_change(k->req, orig, change, 0);
	rtnl_link_put(change);
	return rc;
}

static int
op_link(struct kernel *k, const struct nd_op *op)
{
	struct rtnl_link *orig = NULL, *change = NULL;
	int rc;

	if ((rc = rtnl_link_get_kernel(k->req, (int)op->u.link.ifindex, NULL,
	    &orig)) < 0)
		return rc;
	if ((change = rtnl_link_alloc()) == NULL) {
		rc = -NLE_NOMEM;
		goto out;
	}
	/* The generation mode in a request of its own, before the up: in
	 * one with IFF_UP the kernel applies the flags first, and would
	 * have made its own (tentative) link-local address already. */
	if (op->kind == OP_LINK_UP && op->u.link.ll6 &&
	    (rc = link_gen_mode(k, orig, IN6_ADDR_GEN_MODE_NONE)) < 0)
		goto out;
	if (op->kind == OP_LINK_UP) {
		rtnl_link_set_flags(change, IFF_UP);
		if (op->u.link.mtu != 0)
			rtnl_link_set_mtu(change, op->u.link.mtu);
	} else
		rtnl_link_unset_flags(change, IFF_UP);
	rc = rtnl_link_change(k->req, orig, change, 0);
	if (rc == 0 && op->kind == OP_LINK_DOWN && op->u.link.ll6)
		rc = link_gen_mode(k, orig, IN6_ADDR_GEN_MODE_EUI64);
out:
	rtnl_link_put(change);
	rtnl_link_put(orig);
	return rc;
}

/* rtnl_addr_add with IFA_PROTO, which libnl 3.7 cannot set, appended. */
static int
addr_add_tagged(struct kernel *k, struct rtnl_addr *a, uint8_t proto)
{
	struct nl_msg *msg = NULL;
	int rc;

	if ((rc = rtnl_addr_build_add_request(a, NLM_F_REPLACE, &msg)) < 0)
		return rc;
	if (nla_put_u8(msg, IFA_PROTO, proto) < 0) {
		nlmsg_free(msg);
		return -NLE_NOMEM;
	}
	return nl_send_sync(k->req, msg);	/* frees msg */
}

static int
op_addr(struct kernel *k, const struct nd_op *op)
{
	struct rtnl_addr *a;
	struct nl_addr *local;
	int rc;

	if ((a = rtnl_addr_alloc()) == NULL)
		return -NLE_NOMEM;
	if ((local = build_addr(&op->u.addr.addr.addr,
	    op->u.addr.addr.len)) == NULL) {
		rtnl_addr_put(a);
		return -NLE_NOMEM;
	}
	rtnl_addr_set_ifindex(a, (int)op->u.addr.ifindex);
	rtnl_addr_set_family(a, op->u.addr.addr.addr.family);
	if ((rc = rtnl_addr_set_local(a, local)) == 0) {
		rtnl_addr_set_prefixlen(a, op->u.addr.addr.len);
		if (op->kind == OP_ADDR_ADD) {
			/* No connected route in main: the ENI's subnet is
			 * reached through its own table only.  An IPv6 one
			 * without DAD: EC2 gave it to this ENI alone, and
			 * DAD would hold it tentative (unusable) for a
			 * second or more.
			 *
			 * The ENI's IPv6 link-local address (plan.c's
			 * eui64_link_local) without DAD too, but with its
			 * fe80::/64 route in main, as the kernel's own
			 * link-local address has. */
			if (ip_addr_is_link_local(&op->u.addr.addr.addr))
				rtnl_addr_set_flags(a, IFA_F_NODAD);
			else
				rtnl_addr_set_flags(a, IFA_F_NOPREFIXROUTE |
				    (op->u.addr.addr.addr.family == AF_INET6 ?
				    IFA_F_NODAD : 0));
			if ((rc = addr_add_tagged(k, a, op->u.addr.proto)) == 0)
				addr_view_added(k, op->u.addr.ifindex,
				    &op->u.addr.addr, op->u.addr.proto);
		} else
			rc = rtnl_addr_delete(k->req, a, 0);
	}
	nl_addr_put(local);
	rtnl_addr_put(a);
	return rc;
}

static int
op_route(struct kernel *k, const struct nd_op *op)
{
	const struct nd_route *nr = &op->u.route;
	struct rtnl_route *r;
	struct rtnl_nexthop *nh;
	struct nl_addr *dst = NULL, *gw = NULL;
	int rc = -NLE_NOMEM;

	if ((r = rtnl_route_alloc()) == NULL)
		return -NLE_NOMEM;
	if ((dst = build_addr(&nr->dst.addr, nr->dst.len)) == NULL)
		goto out;
	rtnl_route_set_family(r, nr->dst.addr.family);
	rtnl_route_set_table(r, nr->table);
	rtnl_route_set_type(r, RTN_UNICAST);
	rtnl_route_set_scope(r, nr->scope);
	rtnl_route_set_protocol(r, nr->protocol);
	if (nr->metric != 0)
		rtnl_route_set_priority(r, nr->metric);
	if ((rc = rtnl_route_set_dst(r, dst)) < 0)
		goto out;
	if (!nr->multipath && (nr->ifindex != 0 || nr->gateway.family != 0)) {
		if ((nh = rtnl_route_nh_alloc()) == NULL) {
			rc = -NLE_NOMEM;
			goto out;
		}
		if (nr->ifindex != 0)
			rtnl_route_nh_set_ifindex(nh, (int)nr->ifindex);
		if (nr->gateway.family != 0) {
			if ((gw = build_addr(&nr->gateway, (uint8_t)
			    ip_family_bits(nr->gateway.family))) == NULL) {
				rtnl_route_nh_free(nh);
				rc = -NLE_NOMEM;
				goto out;
			}
			rtnl_route_nh_set_gateway(nh, gw);
		}
		if (nr->onlink)
			rtnl_route_nh_set_flags(nh, RTNH_F_ONLINK);
		rtnl_route_add_nexthop(r, nh);
	}
	/*
	 * Created beside whatever is there, never replacing: a foreign route
	 * with the same destination stays (netd's, added first, wins the
	 * lookup), and an identical one of netd's is EEXIST.  A delete names
	 * the tag, so the kernel matches only netd's.
	 */
	if (op->kind == OP_ROUTE_ADD)
		rc = rtnl_route_add(k->req, r, 0);
	else if (op->kind == OP_HOST_ROUTE_ADD)
		rc = rtnl_route_add(k->req, r, NLM_F_EXCL);
	else
		rc = rtnl_route_delete(k->req, r, 0);
out:
	nl_addr_put(gw);
	nl_addr_put(dst);
	rtnl_route_put(r);
	return rc;
}

static int
rule_obj(const struct nd_op *op, struct rtnl_rule **out)
{
	const struct nd_rule *nr = &op->u.rule;
	struct rtnl_rule *r;
	struct nl_addr *a;
	int rc = 0;

	if ((r = rtnl_rule_alloc()) == NULL)
		return -NLE_NOMEM;
	/* The rule's family is its addresses': never a mixed one. */
	rtnl_rule_set_family(r, nr->src.addr.family);
	rtnl_rule_set_prio(r, nr->priority);
	rtnl_rule_set_table(r, nr->table);
	rtnl_rule_set_action(r, FR_ACT_TO_TBL);
	/* The kernel matches a delete on every attribute given and on
	 * nothing else: an unset iif, oif or fwmark matches any.  The tag
	 * is what keeps a delete off rules that are not netd's. */
	rtnl_rule_set_protocol(r, nr->protocol);
	if (nr->src.len != 0) {
		if ((a = build_addr(&nr->src.addr, nr->src.len)) == NULL)
			rc = -NLE_NOMEM;
		else {
			rc = rtnl_rule_set_src(r, a);
			nl_addr_put(a);
		}
	}
	if (rc == 0 && nr->dst.len != 0) {
		if ((a = build_addr(&nr->dst.addr, nr->dst.len)) == NULL)
			rc = -NLE_NOMEM;
		else {
			rc = rtnl_rule_set_dst(r, a);
			nl_addr_put(a);
		}
	}
	/* Given on a delete too, so it takes only the rule with this mark. */
	if (nr->fwmask != 0) {
		rtnl_rule_set_mark(r, nr->fwmark);
		rtnl_rule_set_mask(r, nr->fwmask);
	}
	if (rc < 0) {
		rtnl_rule_put(r);
		return rc;
	}
	*out = r;
	return 0;
}

/* EXCL: an identical rule (the tag included) is reported, not
 * duplicated. */
#define RULE_ADD_FLAGS	NLM_F_EXCL

static int
op_rule(struct kernel *k, const struct nd_op *op)
{
	struct rtnl_rule *r;
	int rc;

	if ((rc = rule_obj(op, &r)) < 0)
		return rc;
	if (op->kind == OP_RULE_ADD)
		rc = rtnl_rule_add(k->req, r, RULE_ADD_FLAGS);
	else
		rc = rtnl_rule_delete(k->req, r, 0);
	rtnl_rule_put(r);
	return rc;
}

/* Is this libnl result "already done" for the operation? */
static bool
op_done(enum nd_op_kind kind, int rc)
{
	if (rc >= 0)
		return true;
	switch (kind) {
	case OP_ADDR_ADD:
	case OP_ROUTE_ADD:
	case OP_RULE_ADD:
		return rc == -NLE_EXIST;
	case OP_HOST_ROUTE_ADD:
		return false;	/* a route that appeared since the check */
	case OP_ADDR_DEL:
		return rc == -NLE_NOADDR || rc == -NLE_OBJ_NOTFOUND ||
		    rc == -NLE_NODEV;
	case OP_ROUTE_DEL:
	case OP_RULE_DEL:
		return rc == -NLE_OBJ_NOTFOUND;
	case OP_LINK_DOWN:
		return rc == -NLE_NODEV || rc == -NLE_OBJ_NOTFOUND;
	default:
		return false;
	}
}

static void
op_describe(const struct nd_op *op, char *buf, size_t len)
{
	char a[IP_PREFIX_STR_LEN], b[IP_PREFIX_STR_LEN], g[IP_ADDR_STR_LEN];

	switch (op->kind) {
	case OP_LINK_UP:
	case OP_LINK_DOWN:
		snprintf(buf, len, "%s ifindex %u mtu %u", plan_op_name(op->kind),
		    op->u.link.ifindex, op->u.link.mtu);
		break;
	case OP_ADDR_ADD:
	case OP_ADDR_DEL:
		ip_prefix_format(&op->u.addr.addr, a);
		snprintf(buf, len, "%s %s ifindex %u", plan_op_name(op->kind),
		    a, op->u.addr.ifindex);
		break;
	case OP_ROUTE_ADD:
	case OP_ROUTE_DEL:
	case OP_HOST_ROUTE_ADD:
		ip_prefix_format(&op->u.route.dst, a);
		if (op->u.route.gateway.family != 0)
			ip_addr_format(&op->u.route.gateway, g);
		else
			snprintf(g, sizeof(g), "none");
		snprintf(buf, len, "%s %s via %s ifindex %u table %u",
		    plan_op_name(op->kind), a, g, op->u.route.ifindex,
		    op->u.route.table);
		break;
	case OP_RULE_ADD:
	case OP_RULE_DEL:
		ip_prefix_format(&op->u.rule.src, a);
		ip_prefix_format(&op->u.rule.dst, b);
		snprintf(buf, len, "%s prio %u from %s to %s fwmark 0x%x/0x%x "
		    "table %u", plan_op_name(op->kind), op->u.rule.priority, a,
		    b, op->u.rule.fwmark, op->u.rule.fwmask, op->u.rule.table);
		break;
	}
}


/*
 * A run of rule changes of one kind (all adds or all deletes), sent to
 * the kernel in one message and their answers read in one call: a
 * dual-stack pod's 4 rule changes cost the system calls of one.  Only the
 * last change asks for an ack: the kernel answers a failed change whether
 * asked or not, so the answers are the failures and the last change's,
 * which ends them (each numbered by its change); an ack for each was a
 * message made and read for nothing, a dual pod's 3.  The kernel does
 * each change of the message in turn and goes on after a failed one,
 * where kernel_apply() stops; so after a failure the later changes of the
 * run that took effect are undone, last first, and the kernel holds what
 * one change at a time, stopping at the failure, would have left.  An
 * add is undone by a delete, which the kernel matches on what it names
 * only: one that could take another rule the view holds (a tagged one
 * with another selector) is left made instead, and said so, as is an
 * undo the kernel refuses.  Returns the index of the failed change, or
 * n; *rc its error (libnl's), 0 if none; 0 with *rc set if the message
 * could not be made or sent (nothing done); -1 with *rc set if the acks
 * could not be read, when what the kernel did is not known.
 */
static ssize_t
rule_batch(struct kernel *k, const struct nd_op *ops, size_t n, int *rc,
    char *note, size_t notelen)
{
	static char acks[KERNEL_BATCH][KERNEL_ACK_LEN];
	struct nl_msg *msgs[KERNEL_BATCH];
	struct iovec iov[KERNEL_BATCH], aiov[KERNEL_BATCH];
	struct mmsghdr amh[KERNEL_BATCH];
	struct sockaddr_nl kern = { .nl_family = AF_NETLINK };
	struct msghdr mh;
	struct rtnl_rule *r;
	struct nlmsghdr *h;
	struct nlmsgerr *e;
	struct nd_op u;
	int err[KERNEL_BATCH], fd = nl_socket_get_fd(k->req), got, i, j;
	size_t f, idx, left = 0, undone = 0, nmsgs = 0;
	bool last = false;

	*rc = 0;
	for (idx = 0; idx < n; idx++) {
		if ((*rc = rule_obj(&ops[idx], &r)) < 0)
			goto out;
		*rc = ops[idx].kind == OP_RULE_ADD ?
		    rtnl_rule_build_add_request(r, RULE_ADD_FLAGS, &msgs[idx]) :
		    rtnl_rule_build_delete_request(r, 0, &msgs[idx]);
		rtnl_rule_put(r);
		if (*rc < 0)
			goto out;
		nmsgs++;
		h = nlmsg_hdr(msgs[idx]);
		h->nlmsg_flags |= NLM_F_REQUEST;
		if (idx + 1 == n)
			h->nlmsg_flags |= NLM_F_ACK;
		else
			h->nlmsg_flags &= ~NLM_F_ACK;
		/* Not libnl's, which it counts ack by ack: these answers
		 * are read here, before the socket carries anything else. */
		h->nlmsg_seq = KERNEL_BATCH_SEQ + (uint32_t)idx;
		h->nlmsg_pid = nl_socket_get_local_port(k->req);
		iov[idx].iov_base = h;
		iov[idx].iov_len = h->nlmsg_len;
		err[idx] = idx + 1 == n ? 1 : 0;  /* done unless answered */
		/* Sanitizer builds' tests only: a family the kernel has
		 * no rules of, which it refuses. */
		if (testhook_rule_fail() == (int)idx + 1)
			((struct fib_rule_hdr *)nlmsg_data(h))->family = 0xff;
	}
	memset(&mh, 0, sizeof(mh));
	mh.msg_name = &kern;
	mh.msg_namelen = sizeof(kern);
	mh.msg_iov = iov;
	mh.msg_iovlen = n;
	if (sendmsg(fd, &mh, 0) == -1) {
		/* Nothing was done: the kernel takes the message whole. */
		*rc = -nl_syserr2nlerr(errno);
		goto out;
	}
	/* The kernel made the changes and queued the answers before
	 * sendmsg returned: they are there to read, in order, the last
	 * change's last. */
	mmsg_prepare(amh, aiov, acks[0], sizeof(acks[0]), n);
	for (i = 0, idx = 0; !last && i < (int)n; i += got) {
		if ((got = recvmmsg(fd, amh + i, (unsigned)n - (unsigned)i,
		    MSG_DONTWAIT, NULL)) <= 0)
			break;
		for (j = i; j < i + got; j++) {
			h = (struct nlmsghdr *)acks[j];
			/* An answer carries its change's header (at least):
			 * of this batch, in order, none after the last's. */
			if (last || amh[j].msg_len < NLMSG_LENGTH(sizeof(*e)) ||
			    h->nlmsg_type != NLMSG_ERROR ||
			    h->nlmsg_seq < KERNEL_BATCH_SEQ + idx ||
			    h->nlmsg_seq >= KERNEL_BATCH_SEQ + n) {
				*rc = -NLE_MSG_TRUNC;
				goto unknown;
			}
			idx = h->nlmsg_seq - KERNEL_BATCH_SEQ;
			e = nlmsg_data(h);
			err[idx++] = e->error;
			last = idx == n;
		}
	}
	if (!last) {
		*rc = -NLE_AGAIN;
		goto unknown;
	}
	for (f = 0; f < n; f++) {
		*rc = err[f] == 0 ? 0 : -nl_syserr2nlerr(-err[f]);
		if (!op_done(ops[f].kind, *rc))
			break;
	}
	for (idx = n; f < n && idx-- > f + 1; ) {
		if (err[idx] != 0)		/* changed nothing */
			continue;
		u = ops[idx];
		u.kind = u.kind == OP_RULE_ADD ? OP_RULE_DEL : OP_RULE_ADD;
		for (i = 0; u.kind == OP_RULE_DEL && (size_t)i < k->nrules; i++)
			if (!rule_same(&k->rules[i], &u.u.rule) &&
			    plan_rule_del_takes(&u.u.rule, &k->rules[i]))
				break;
		if ((u.kind == OP_RULE_DEL && (size_t)i < k->nrules) ||
		    !op_done(u.kind, op_rule(k, &u)))
			left++;
		else
			undone++;
	}
	if (f < n && (left > 0 || undone > 0))
		snprintf(note, notelen, "; of the later changes sent with it, "
		    "%zu undone, %zu left made", undone, left);
	for (idx = 0; idx < nmsgs; idx++)
		nlmsg_free(msgs[idx]);
	return (ssize_t)f;
unknown:
	snprintf(note, notelen, "; the kernel's answers to %zu rule changes "
	    "sent at once could not be read", n);
	for (idx = 0; idx < nmsgs; idx++)
		nlmsg_free(msgs[idx]);
	return -1;
out:
	/* Nothing sent: failed at the first change, nothing done. */
	for (idx = 0; idx < nmsgs; idx++)
		nlmsg_free(msgs[idx]);
	return 0;
}

int
kernel_apply(struct kernel *k, const struct nd_plan *plan, char *err,
    size_t errlen)
{
	const struct nd_op *op;
	char what[160], note[96];
	size_t i, n;
	ssize_t f;
	int rc;

	for (i = 0; i < plan->nops; i++) {
		op = &plan->ops[i];
		for (n = 1; (op->kind == OP_RULE_ADD ||
		    op->kind == OP_RULE_DEL) && i + n < plan->nops &&
		    n < KERNEL_BATCH && plan->ops[i + n].kind == op->kind; n++)
			;
		if (n > 1) {
			note[0] = '\0';
			if ((f = rule_batch(k, op, n, &rc, note,
			    sizeof(note))) == (ssize_t)n) {
				i += n - 1;
				continue;
			}
			op_describe(f < 0 ? op : op + f, what, sizeof(what));
			snprintf(err, errlen, "%s: %s%s", what, nl_geterror(rc),
			    note);
			return -nlerr_errno(rc);
		}
		switch (op->kind) {
		case OP_LINK_UP:
		case OP_LINK_DOWN:
			rc = op_link(k, op);
			break;
		case OP_ADDR_ADD:
		case OP_ADDR_DEL:
			rc = op_addr(k, op);
			break;
		case OP_ROUTE_ADD:
		case OP_ROUTE_DEL:
		case OP_HOST_ROUTE_ADD:
			rc = op_route(k, op);
			break;
		case OP_RULE_ADD:
		case OP_RULE_DEL:
			rc = op_rule(k, op);
			break;
		default:
			rc = -NLE_INVAL;
			break;
		}
		if (!op_done(op->kind, rc)) {
			op_describe(op, what, sizeof(what));
			snprintf(err, errlen, "%s: %s", what, nl_geterror(rc));
			return -nlerr_errno(rc);
		}
	}
	return 0;
}
