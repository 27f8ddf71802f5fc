/*
 * netd's rtnetlink I/O through libnl-route-3 (see kernel.h).  Thin: it
 * turns kernel objects into the planner's plain structs and plan
 * operations into requests; every decision is made in policy.c and plan.c.
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
		if ((rc = nl_socket_add_membership(sk, RTNLGRP_LINK)) < 0 ||
		    (rc = nl_socket_set_nonblocking(sk)) < 0) {
			snprintf(err, errlen, "netlink: link events: %s",
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

struct event_ctx {
	kernel_link_cb	 cb;
	void		*arg;
};

static void
event_obj(struct nl_object *obj, void *arg)
{
	struct event_ctx *ec = arg;
	struct msg_netd_link l;

	if (link_fill((struct rtnl_link *)obj, &l))
		ec->cb(&l, ec->arg);
}

static int
event_valid(struct nl_msg *msg, void *arg)
{
	if (nlmsg_hdr(msg)->nlmsg_type == RTM_NEWLINK)
		(void)nl_msg_parse(msg, event_obj, arg);
	return NL_OK;
}

int
kernel_read_events(struct kernel *k, kernel_link_cb cb, void *arg,
    bool *overrun)
{
	struct event_ctx ec = { cb, arg };
	int i, rc;

	*overrun = false;
	nl_cb_set(k->ev_cb, NL_CB_VALID, NL_CB_CUSTOM, event_valid, &ec);
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

/* ---- rules and routes ---- */

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

int
kernel_each_rule(struct kernel *k, uint32_t prio_a, uint32_t prio_b,
    kernel_rule_cb cb, void *arg)
{
	struct nl_cache *cache;
	struct nl_object *o;
	struct rtnl_rule *r;
	struct nd_rule nr;
	int rc = 0, i;

	for (i = 0; i < KERNEL_DUMP_TRIES; i++)
		if ((rc = rtnl_rule_alloc_cache(k->req, AF_INET, &cache)) !=
		    -NLE_DUMP_INTR)
			break;
	if (rc < 0)
		return -nlerr_errno(rc);
	for (o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
		r = (struct rtnl_rule *)o;
		if (rtnl_rule_get_family(r) != AF_INET ||
		    rtnl_rule_get_action(r) != FR_ACT_TO_TBL ||
		    (rtnl_rule_get_prio(r) != prio_a &&
		    rtnl_rule_get_prio(r) != prio_b))
			continue;
		/* A rule with other selectors is not one of enid's. */
		if (rtnl_rule_get_iif(r) != NULL ||
		    rtnl_rule_get_oif(r) != NULL ||
		    rtnl_rule_get_dsfield(r) != 0)
			continue;
		memset(&nr, 0, sizeof(nr));
		nr.priority = rtnl_rule_get_prio(r);
		nr.table = rtnl_rule_get_table(r);
		nr.src = addr4(rtnl_rule_get_src(r), &nr.src_len);
		nr.dst = addr4(rtnl_rule_get_dst(r), &nr.dst_len);
		cb(&nr, arg);
	}
	nl_cache_free(cache);
	return 0;
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
	int rc = 0, i;

	for (i = 0; i < KERNEL_DUMP_TRIES; i++)
		if ((rc = rtnl_route_alloc_cache(k->req, AF_INET, 0, &cache)) !=
		    -NLE_DUMP_INTR)
			break;
	if (rc < 0)
		return -nlerr_errno(rc);
	for (o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
		r = (struct rtnl_route *)o;
		if (rtnl_route_get_table(r) != table ||
		    rtnl_route_get_type(r) != RTN_UNICAST)
			continue;
		memset(&nr, 0, sizeof(nr));
		nr.table = table;
		nr.dst = addr4(rtnl_route_get_dst(r), &nr.dst_len);
		nr.scope = rtnl_route_get_scope(r);
		nr.protocol = rtnl_route_get_protocol(r);
		nr.metric = rtnl_route_get_priority(r);
		if (rtnl_route_get_nnexthops(r) == 1) {
			uint8_t glen;

			nh = rtnl_route_nexthop_n(r, 0);
			nr.ifindex = (uint32_t)rtnl_route_nh_get_ifindex(nh);
			nr.gateway = addr4(rtnl_route_nh_get_gateway(nh), &glen);
		} else
			nr.multipath = rtnl_route_get_nnexthops(r) > 1;
		cb(&nr, arg);
	}
	nl_cache_free(cache);
	return 0;
}

int
kernel_each_addr_holder(struct kernel *k, uint32_t addr, kernel_link_cb cb,
    void *arg)
{
	struct nl_cache *cache;
	struct nl_object *o;
	struct rtnl_addr *a;
	struct rtnl_link *link;
	struct msg_netd_link l;
	uint8_t len;
	int rc = 0, i;

	for (i = 0; i < KERNEL_DUMP_TRIES; i++)
		if ((rc = rtnl_addr_alloc_cache(k->req, &cache)) !=
		    -NLE_DUMP_INTR)
			break;
	if (rc < 0)
		return -nlerr_errno(rc);
	for (o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
		a = (struct rtnl_addr *)o;
		if (rtnl_addr_get_family(a) != AF_INET ||
		    addr4(rtnl_addr_get_local(a), &len) != addr)
			continue;
		link = NULL;
		rc = rtnl_link_get_kernel(k->req, rtnl_addr_get_ifindex(a),
		    NULL, &link);
		if (rc == -NLE_NODEV || rc == -NLE_OBJ_NOTFOUND) {
			rc = 0;		/* gone since the dump */
			continue;
		}
		if (rc < 0)
			break;
		link_fill(link, &l);
		rtnl_link_put(link);
		cb(&l, arg);
	}
	nl_cache_free(cache);
	return rc < 0 ? -nlerr_errno(rc) : 0;
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
			rc = rtnl_addr_add(k->req, a, NLM_F_REPLACE);
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
		rtnl_route_add_nexthop(r, nh);
	}
	if (op->kind == OP_ROUTE_ADD)
		rc = rtnl_route_add(k->req, r, NLM_F_REPLACE);
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
	if (rc == 0) {
		/* EXCL: an identical rule is reported, not duplicated. */
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
		snprintf(buf, len, "%s prio %u from %s to %s table %u",
		    plan_op_name(op->kind), op->u.rule.priority, a, b,
		    op->u.rule.table);
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
