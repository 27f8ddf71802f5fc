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
#include <stdio.h>
#include <string.h>
#include <linux/fib_rules.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <netlink/msg.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/route.h>
#include <netlink/route/rule.h>

#include "addr.h"
#include "kernel.h"

#define KERNEL_EVENT_BUDGET	64	/* recv batches per wakeup */
#define KERNEL_DUMP_TRIES	3	/* a dump interrupted by a change */
#define KERNEL_RCVBUF		(1024 * 1024)
#define KERNEL_MAX_DUMP		(1024 * 1024)	/* entries in one dump */
#define KERNEL_NO_SUPPRESS	0xffffffffu	/* FRA_SUPPRESS_*: unset */

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

static struct nl_sock *
open_sock(bool events, char *err, size_t errlen)
{
	struct nl_sock *sk;
	int rc;

	if ((sk = nl_socket_alloc()) == NULL) {
		snprintf(err, errlen, "netlink: out of memory");
		return NULL;
	}
	if (events) {
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
	if (events) {
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
	return sk;
fail:
	nl_socket_free(sk);
	return NULL;
}

int
kernel_open(struct kernel *k, char *err, size_t errlen)
{
	memset(k, 0, sizeof(*k));
	if ((k->req = open_sock(false, err, errlen)) == NULL)
		return -1;
	if ((k->ev = open_sock(true, err, errlen)) == NULL) {
		nl_socket_free(k->req);
		k->req = NULL;
		return -1;
	}
	k->ev_cb = nl_socket_get_cb(k->ev);
	if ((k->dump_cb = nl_cb_alloc(NL_CB_DEFAULT)) == NULL) {
		snprintf(err, errlen, "netlink: out of memory");
		nl_socket_free(k->ev);
		nl_socket_free(k->req);
		k->ev = k->req = NULL;
		return -1;
	}
	return 0;
}

int
kernel_event_fd(const struct kernel *k)
{
	return nl_socket_get_fd(k->ev);
}

/* ---- links ---- */

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

static int
event_valid(struct nl_msg *msg, void *arg)
{
	const struct kernel_events *ev = arg;
	struct nlmsghdr *hdr = nlmsg_hdr(msg);

	switch (hdr->nlmsg_type) {
	case RTM_NEWLINK:
		(void)nl_msg_parse(msg, event_obj, arg);
		break;
	case RTM_NEWADDR:
	case RTM_DELADDR:
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
	int i, rc;

	*overrun = false;
	nl_cb_set(k->ev_cb, NL_CB_VALID, NL_CB_CUSTOM, event_valid,
	    (void *)ev);
	for (i = 0; i < KERNEL_EVENT_BUDGET; i++) {
		rc = nl_recvmsgs_report(k->ev, k->ev_cb);
		if (rc == 0 || rc == -NLE_AGAIN)
			return 0;
		if (rc == -NLE_NOMEM) {		/* ENOBUFS: events lost */
			*overrun = true;
			continue;
		}
		if (rc < 0)
			return -nlerr_errno(rc);
	}
	return 0;
}

static int
link_cache(struct kernel *k, struct nl_cache **cache)
{
	int rc = 0, i;

	for (i = 0; i < KERNEL_DUMP_TRIES; i++)
		if ((rc = rtnl_link_alloc_cache(k->req, AF_UNSPEC, cache)) !=
		    -NLE_DUMP_INTR)
			break;
	return rc < 0 ? -nlerr_errno(rc) : 0;
}

int
kernel_each_link(struct kernel *k, kernel_link_cb cb, void *arg)
{
	struct nl_cache *cache;
	struct nl_object *o;
	struct msg_netd_link l;
	int rc;

	if ((rc = link_cache(k, &cache)) < 0)
		return rc;
	for (o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
		link_fill((struct rtnl_link *)o, &l);
		cb(&l, arg);
	}
	nl_cache_free(cache);
	return 0;
}

int
kernel_find_link(struct kernel *k, const uint8_t mac[6],
    struct msg_netd_link *out)
{
	struct nl_cache *cache;
	struct nl_object *o;
	struct msg_netd_link l;
	int rc, found = 0;

	if ((rc = link_cache(k, &cache)) < 0)
		return rc;
	for (o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
		if (!link_fill((struct rtnl_link *)o, &l) ||
		    memcmp(l.mac, mac, 6) != 0)
			continue;
		if (!found || l.ifindex < out->ifindex)
			*out = l;
		found = 1;
	}
	nl_cache_free(cache);
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

/* ---- netd's own dumps ---- */

struct raw_dump {
	int	(*parse)(struct kernel *, struct nlmsghdr *, void *);
	struct kernel	*k;
	void	*arg;
	int	 err;		/* the first parse error, negative errno */
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
 * One dump request and its answer through parse; reset runs before each
 * try, as a dump the kernel reports interrupted (a change meanwhile) is
 * done again whole.
 */
static int
raw_dump(struct kernel *k, int type, void *req, size_t reqlen,
    int (*parse)(struct kernel *, struct nlmsghdr *, void *), void *arg,
    void (*reset)(struct kernel *))
{
	struct raw_dump d = { parse, k, arg, 0 };
	int i, rc = 0;

	for (i = 0; i < KERNEL_DUMP_TRIES; i++) {
		reset(k);
		d.err = 0;
		if ((rc = nl_send_simple(k->req, type, NLM_F_DUMP, req,
		    reqlen)) < 0)
			return -nlerr_errno(rc);
		nl_cb_set(k->dump_cb, NL_CB_VALID, NL_CB_CUSTOM, raw_valid, &d);
		rc = nl_recvmsgs(k->req, k->dump_cb);
		if (rc == -NLE_DUMP_INTR)
			continue;
		if (rc < 0)
			return -nlerr_errno(rc);
		return d.err;
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

static void
addrs_reset(struct kernel *k)
{
	k->naddrs = 0;
}

static int
addr_parse(struct kernel *k, struct nlmsghdr *hdr, void *arg)
{
	struct ifaddrmsg *ifa;
	struct nlattr *tb[IFA_MAX + 1], *a;
	struct nd_ifaddr *e;
	size_t alen;
	int rc;

	(void)arg;
	if (hdr->nlmsg_type != RTM_NEWADDR ||
	    !nlmsg_valid_hdr(hdr, sizeof(*ifa)))
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
	 * point-to-point link, and the address itself otherwise. */
	if ((a = tb[IFA_LOCAL]) == NULL)
		a = tb[IFA_ADDRESS];
	if (a == NULL || nla_len(a) < (int)alen)
		return 0;
	if ((rc = grow((void **)&k->addrs, &k->addrs_cap, k->naddrs,
	    sizeof(*k->addrs))) < 0)
		return rc;
	e = &k->addrs[k->naddrs++];
	memset(e, 0, sizeof(*e));
	e->ifindex = ifa->ifa_index;
	e->family = ifa->ifa_family;
	e->prefix = ifa->ifa_prefixlen;
	memcpy(e->addr, nla_data(a), alen);
	if (tb[IFA_PROTO] != NULL && nla_len(tb[IFA_PROTO]) >= 1)
		e->proto = nla_get_u8(tb[IFA_PROTO]);
	return 0;
}

static int
addr_dump(struct kernel *k)
{
	struct ifaddrmsg req;

	memset(&req, 0, sizeof(req));
	req.ifa_family = AF_UNSPEC;
	return raw_dump(k, RTM_GETADDR, &req, sizeof(req), addr_parse, NULL,
	    addrs_reset);
}

int
kernel_each_addr(struct kernel *k, kernel_addr_cb cb, void *arg)
{
	size_t i;
	int rc;

	if ((rc = addr_dump(k)) < 0)
		return rc;
	for (i = 0; i < k->naddrs; i++)
		cb(&k->addrs[i], arg);
	return 0;
}

static void
rules_reset(struct kernel *k)
{
	k->nrules = 0;
}

struct rule_prios {
	uint32_t	a, b;
};

static uint32_t
attr_u32(const struct nlattr *a, uint32_t otherwise)
{
	return nla_len(a) >= (int)sizeof(uint32_t) ?
	    nla_get_u32((struct nlattr *)a) : otherwise;
}

/*
 * An IPv4 lookup rule at one of the priorities.  Every attribute netd does
 * not set itself marks the rule as having other selectors, also the ones
 * this code was written before: a rule netd cannot fully see is never
 * taken for one of its own.  A fwmark is read as it is (the planner
 * tells netd's connection-mark rule from everyone else's).
 */
static int
rule_parse(struct kernel *k, struct nlmsghdr *hdr, void *arg)
{
	const struct rule_prios *pr = arg;
	struct fib_rule_hdr *frh;
	struct nlattr *a;
	struct nd_rule r;
	bool have_prio = false, have_mark = false, have_mask = false;
	int rem, rc;

	if (hdr->nlmsg_type != RTM_NEWRULE ||
	    !nlmsg_valid_hdr(hdr, sizeof(*frh)))
		return 0;
	frh = nlmsg_data(hdr);
	if (frh->family != AF_INET || frh->action != FR_ACT_TO_TBL)
		return 0;
	memset(&r, 0, sizeof(r));
	r.table = frh->table;
	r.src_len = frh->src_len;
	r.dst_len = frh->dst_len;
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
			if (nla_len(a) >= 4)
				memcpy(&r.src, nla_data(a), 4);
			break;
		case FRA_DST:
			if (nla_len(a) >= 4)
				memcpy(&r.dst, nla_data(a), 4);
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
	if (r.src_len > 32 || r.dst_len > 32)
		r.other_selectors = true;
	if ((rc = grow((void **)&k->rules, &k->rules_cap, k->nrules,
	    sizeof(*k->rules))) < 0)
		return rc;
	k->rules[k->nrules++] = r;
	return 0;
}

int
kernel_each_rule(struct kernel *k, uint32_t prio_a, uint32_t prio_b,
    kernel_rule_cb cb, void *arg)
{
	struct fib_rule_hdr req;
	struct rule_prios pr = { prio_a, prio_b };
	size_t i;
	int rc;

	memset(&req, 0, sizeof(req));
	req.family = AF_INET;
	if ((rc = raw_dump(k, RTM_GETRULE, &req, sizeof(req), rule_parse, &pr,
	    rules_reset)) < 0)
		return rc;
	for (i = 0; i < k->nrules; i++)
		cb(&k->rules[i], arg);
	return 0;
}

/* ---- routes ---- */

static uint32_t
addr4(struct nl_addr *a, uint8_t *len)
{
	uint32_t v = 0;

	*len = 0;
	if (a == NULL || nl_addr_get_family(a) != AF_INET)
		return 0;
	*len = (uint8_t)nl_addr_get_prefixlen(a);
	if (nl_addr_get_len(a) == 4)
		memcpy(&v, nl_addr_get_binary_addr(a), 4);
	return v;
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

int
kernel_each_route(struct kernel *k, uint32_t table, kernel_route_cb cb,
    void *arg)
{
	struct nl_cache *cache;
	struct nl_object *o;
	struct rtnl_route *r;
	struct rtnl_nexthop *nh;
	struct nd_route nr;
	int rc;

	if ((rc = route_cache(k, AF_INET, &cache)) < 0)
		return rc;
	for (o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
		r = (struct rtnl_route *)o;
		/* Every type: a blackhole, unreachable or prohibit route
		 * is a route too, and the callers must see it. */
		if (rtnl_route_get_table(r) != table)
			continue;
		memset(&nr, 0, sizeof(nr));
		nr.table = table;
		nr.type = rtnl_route_get_type(r);
		nr.dst = addr4(rtnl_route_get_dst(r), &nr.dst_len);
		nr.scope = rtnl_route_get_scope(r);
		nr.protocol = rtnl_route_get_protocol(r);
		nr.metric = rtnl_route_get_priority(r);
		if (rtnl_route_get_nnexthops(r) == 1) {
			uint8_t glen;

			nh = rtnl_route_nexthop_n(r, 0);
			nr.ifindex = (uint32_t)rtnl_route_nh_get_ifindex(nh);
			nr.gateway = addr4(rtnl_route_nh_get_gateway(nh), &glen);
			nr.onlink = (rtnl_route_nh_get_flags(nh) &
			    RTNH_F_ONLINK) != 0;
		} else
			nr.multipath = rtnl_route_get_nnexthops(r) > 1;
		cb(&nr, arg);
	}
	nl_cache_free(cache);
	return 0;
}

static bool
route_via(struct rtnl_route *r, uint32_t ifindex)
{
	int i, n = rtnl_route_get_nnexthops(r);

	for (i = 0; i < n; i++)
		if ((uint32_t)rtnl_route_nh_get_ifindex(
		    rtnl_route_nexthop_n(r, i)) == ifindex)
			return true;
	return false;
}

static void
route_dst(struct rtnl_route *r, struct nd_link_route *out)
{
	struct nl_addr *d = rtnl_route_get_dst(r);
	unsigned int len;

	if (d == NULL)
		return;
	out->dst_len = (uint8_t)nl_addr_get_prefixlen(d);
	len = nl_addr_get_len(d);
	memcpy(out->dst, nl_addr_get_binary_addr(d),
	    len < sizeof(out->dst) ? len : sizeof(out->dst));
}

int
kernel_link_state(struct kernel *k, uint32_t ifindex,
    struct nd_link_state *out)
{
	struct rtnl_link *link;
	struct nl_cache *cache;
	struct nl_object *o;
	struct rtnl_route *r;
	struct nd_link_route *lr;
	struct msg_netd_link self, l;
	size_t i;
	int rc;

	memset(out, 0, sizeof(*out));
	out->ifindex = ifindex;
	/* The link among all others: its master, its slaves, its MAC. */
	if ((rc = link_cache(k, &cache)) < 0)
		return rc;
	if ((link = rtnl_link_get(cache, (int)ifindex)) == NULL) {
		nl_cache_free(cache);
		return -ENODEV;
	}
	(void)link_fill(link, &self);
	out->enslaved = rtnl_link_get_master(link) != 0;
	rtnl_link_put(link);
	for (o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
		struct rtnl_link *other = (struct rtnl_link *)o;

		if ((uint32_t)rtnl_link_get_ifindex(other) == ifindex)
			continue;
		if ((uint32_t)rtnl_link_get_master(other) == ifindex)
			out->master = true;
		if (link_fill(other, &l) && !mac_is_zero(self.mac) &&
		    memcmp(l.mac, self.mac, 6) == 0)
			out->same_mac++;
	}
	nl_cache_free(cache);

	if ((rc = addr_dump(k)) < 0)
		return rc;
	for (i = 0; i < k->naddrs; i++) {
		if (k->addrs[i].ifindex != ifindex)
			continue;
		if (out->naddrs == NETD_MAX_LINK_ADDRS)
			out->overflow = true;
		else
			out->addrs[out->naddrs++] = k->addrs[i];
	}

	if ((rc = route_cache(k, AF_UNSPEC, &cache)) < 0)
		return rc;
	for (o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
		r = (struct rtnl_route *)o;
		if (!route_via(r, ifindex))
			continue;
		if (out->nroutes == NETD_MAX_LINK_ROUTES) {
			out->overflow = true;
			continue;
		}
		lr = &out->routes[out->nroutes++];
		lr->table = rtnl_route_get_table(r);
		lr->family = (uint8_t)rtnl_route_get_family(r);
		lr->protocol = rtnl_route_get_protocol(r);
		route_dst(r, lr);
	}
	nl_cache_free(cache);
	return 0;
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
	uint32_t gw, prio = rtnl_route_get_priority(r);
	uint8_t glen;

	if (rtnl_route_get_family(r) != AF_INET ||
	    (gw = addr4(rtnl_route_nh_get_gateway(nh), &glen)) == 0)
		return;
	if (l->gateway != 0 && prio >= *metric)
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

	if ((rc = addr_dump(k)) < 0)
		return rc;
	for (i = 0; i < k->naddrs; i++) {
		if (k->addrs[i].family != AF_INET)
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
		memcpy(&out->addrs[out->naddrs++], k->addrs[i].addr, 4);
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
	struct nl_cache *routes = NULL, *links = NULL;
	struct nl_object *o;
	struct rtnl_route *r;
	struct rtnl_nexthop *nh;
	struct rtnl_link *l;
	struct msg_netd_route mr;
	uint8_t len, glen;
	int rc;

	if ((rc = link_cache(k, &links)) < 0)
		return rc;
	if ((rc = route_cache(k, AF_INET, &routes)) < 0) {
		nl_cache_free(links);
		return rc;
	}
	for (o = nl_cache_get_first(routes); o; o = nl_cache_get_next(o)) {
		r = (struct rtnl_route *)o;
		if (rtnl_route_get_table(r) != RT_TABLE_MAIN ||
		    rtnl_route_get_type(r) != RTN_UNICAST ||
		    rtnl_route_get_scope(r) != RT_SCOPE_LINK ||
		    rtnl_route_get_nnexthops(r) != 1)
			continue;
		memset(&mr, 0, sizeof(mr));
		mr.addr = addr4(rtnl_route_get_dst(r), &len);
		nh = rtnl_route_nexthop_n(r, 0);
		if (len != 32 || addr4(rtnl_route_nh_get_gateway(nh), &glen) != 0)
			continue;
		mr.ifindex = (uint32_t)rtnl_route_nh_get_ifindex(nh);
		if ((l = rtnl_link_get(links, (int)mr.ifindex)) != NULL) {
			const char *name = rtnl_link_get_name(l);

			msg_strlcpy(mr.dev, name ? name : "", sizeof(mr.dev));
			rtnl_link_put(l);
		}
		cb(&mr, arg);
	}
	nl_cache_free(routes);
	nl_cache_free(links);
	return 0;
}

/* ---- applying a plan ---- */

static struct nl_addr *
build_addr4(uint32_t addr, uint8_t len)
{
	struct nl_addr *a = nl_addr_build(AF_INET, &addr, 4);

	if (a != NULL)
		nl_addr_set_prefixlen(a, len);
	return a;
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
	if (op->kind == OP_LINK_UP) {
		rtnl_link_set_flags(change, IFF_UP);
		if (op->u.link.mtu != 0)
			rtnl_link_set_mtu(change, op->u.link.mtu);
	} else
		rtnl_link_unset_flags(change, IFF_UP);
	rc = rtnl_link_change(k->req, orig, change, 0);
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
	if ((local = build_addr4(op->u.addr.addr, op->u.addr.prefix)) == NULL) {
		rtnl_addr_put(a);
		return -NLE_NOMEM;
	}
	rtnl_addr_set_ifindex(a, (int)op->u.addr.ifindex);
	rtnl_addr_set_family(a, AF_INET);
	if ((rc = rtnl_addr_set_local(a, local)) == 0) {
		rtnl_addr_set_prefixlen(a, op->u.addr.prefix);
		if (op->kind == OP_ADDR_ADD) {
			/* No connected route in main: the ENI's subnet is
			 * reached through its own table only. */
			rtnl_addr_set_flags(a, IFA_F_NOPREFIXROUTE);
			rc = addr_add_tagged(k, a, op->u.addr.proto);
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
	if ((dst = build_addr4(nr->dst, nr->dst_len)) == NULL)
		goto out;
	rtnl_route_set_family(r, AF_INET);
	rtnl_route_set_table(r, nr->table);
	rtnl_route_set_type(r, RTN_UNICAST);
	rtnl_route_set_scope(r, nr->scope);
	rtnl_route_set_protocol(r, nr->protocol);
	if (nr->metric != 0)
		rtnl_route_set_priority(r, nr->metric);
	if ((rc = rtnl_route_set_dst(r, dst)) < 0)
		goto out;
	if (!nr->multipath && (nr->ifindex != 0 || nr->gateway != 0)) {
		if ((nh = rtnl_route_nh_alloc()) == NULL) {
			rc = -NLE_NOMEM;
			goto out;
		}
		if (nr->ifindex != 0)
			rtnl_route_nh_set_ifindex(nh, (int)nr->ifindex);
		if (nr->gateway != 0) {
			if ((gw = build_addr4(nr->gateway, 32)) == NULL) {
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
op_rule(struct kernel *k, const struct nd_op *op)
{
	const struct nd_rule *nr = &op->u.rule;
	struct rtnl_rule *r;
	struct nl_addr *a;
	int rc = 0;

	if ((r = rtnl_rule_alloc()) == NULL)
		return -NLE_NOMEM;
	rtnl_rule_set_family(r, AF_INET);
	rtnl_rule_set_prio(r, nr->priority);
	rtnl_rule_set_table(r, nr->table);
	rtnl_rule_set_action(r, FR_ACT_TO_TBL);
	/* The kernel matches a delete on every attribute given and on
	 * nothing else: an unset iif, oif or fwmark matches any.  The tag
	 * is what keeps a delete off rules that are not netd's. */
	rtnl_rule_set_protocol(r, nr->protocol);
	if (nr->src_len != 0) {
		if ((a = build_addr4(nr->src, nr->src_len)) == NULL)
			rc = -NLE_NOMEM;
		else {
			rc = rtnl_rule_set_src(r, a);
			nl_addr_put(a);
		}
	}
	if (rc == 0 && nr->dst_len != 0) {
		if ((a = build_addr4(nr->dst, nr->dst_len)) == NULL)
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
	if (rc == 0) {
		/* EXCL: an identical rule (the tag included) is reported,
		 * not duplicated. */
		if (op->kind == OP_RULE_ADD)
			rc = rtnl_rule_add(k->req, r, NLM_F_EXCL);
		else
			rc = rtnl_rule_delete(k->req, r, 0);
	}
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
	char a[CIDR4_STR_LEN], b[CIDR4_STR_LEN], g[IP4_STR_LEN];

	switch (op->kind) {
	case OP_LINK_UP:
	case OP_LINK_DOWN:
		snprintf(buf, len, "%s ifindex %u mtu %u", plan_op_name(op->kind),
		    op->u.link.ifindex, op->u.link.mtu);
		break;
	case OP_ADDR_ADD:
	case OP_ADDR_DEL:
		cidr4_format(op->u.addr.addr, op->u.addr.prefix, a);
		snprintf(buf, len, "%s %s ifindex %u", plan_op_name(op->kind),
		    a, op->u.addr.ifindex);
		break;
	case OP_ROUTE_ADD:
	case OP_ROUTE_DEL:
	case OP_HOST_ROUTE_ADD:
		cidr4_format(op->u.route.dst, op->u.route.dst_len, a);
		ip4_format(op->u.route.gateway, g);
		snprintf(buf, len, "%s %s via %s ifindex %u table %u",
		    plan_op_name(op->kind), a, g, op->u.route.ifindex,
		    op->u.route.table);
		break;
	case OP_RULE_ADD:
	case OP_RULE_DEL:
		cidr4_format(op->u.rule.src, op->u.rule.src_len, a);
		cidr4_format(op->u.rule.dst, op->u.rule.dst_len, b);
		snprintf(buf, len, "%s prio %u from %s to %s fwmark 0x%x/0x%x "
		    "table %u", plan_op_name(op->kind), op->u.rule.priority, a,
		    b, op->u.rule.fwmark, op->u.rule.fwmask, op->u.rule.table);
		break;
	}
}

int
kernel_apply(struct kernel *k, const struct nd_plan *plan, char *err,
    size_t errlen)
{
	const struct nd_op *op;
	char what[160];
	size_t i;
	int rc;

	for (i = 0; i < plan->nops; i++) {
		op = &plan->ops[i];
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
