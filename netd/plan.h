/*
 * Planning netd's kernel changes: from a checked request and a snapshot of
 * the relevant kernel objects (as plain data) to an ordered list of
 * operations.  Pure, so the unit tests check every plan without root.
 *
 * Operations are idempotent by construction: an add of something present
 * and a delete of something absent both count as done, so replaying a plan
 * (or a request) converges on the same state.
 *
 * Everything a plan adds carries netd's tag (NETD_PROTO), and a plan only
 * ever deletes what carries it: snapshot entries without the tag, or with
 * selectors netd never sets, are someone else's and are left alone.
 */
#ifndef ENID_NETD_PLAN_H
#define ENID_NETD_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "msg.h"
#include "policy.h"

#define PLAN_MAX_OPS		128
_Static_assert(PLAN_MAX_OPS <= MSG_MAX_CHANGED,
    "an answer says how many objects a plan changed");
#define PLAN_SCOPE_UNIVERSE	0	/* RT_SCOPE_UNIVERSE */
#define PLAN_SCOPE_LINK		253	/* RT_SCOPE_LINK */
#define PLAN_METRIC6_DEFAULT	1024	/* IP6_RT_PRIO_USER */

/* A policy rule "[from SRC] [to DST] [fwmark M/MASK] lookup TABLE" at
 * a priority, of one family: src and dst are both IPv4 or both IPv6, and
 * src's family is the rule's.  From or to all: 0.0.0.0/0 or ::/0 (a
 * length 0, whatever the address bytes). */
struct nd_rule {
	uint32_t	priority;
	uint32_t	table;
	struct ip_prefix src;
	struct ip_prefix dst;
	uint32_t	fwmark;		/* FRA_FWMARK */
	uint32_t	fwmask;		/* FRA_FWMASK; 0: no fwmark selector */
	uint8_t		protocol;	/* NETD_PROTO on netd's own */
	/* Any other selector or flag (iif, oif, tos, uid range, ports,
	 * invert, ...): never one of netd's. */
	bool		other_selectors;
};

/* A unicast route of either family (dst's) with at most one next hop. */
struct nd_route {
	uint32_t	table;
	struct ip_prefix dst;		/* the default route: 0.0.0.0/0 */
	uint8_t		scope;		/* PLAN_SCOPE_* */
	uint8_t		protocol;	/* NETD_PROTO on netd's own */
	uint8_t		type;		/* RTN_*: NETD_ROUTE_UNICAST or not */
	bool		multipath;	/* more than one next hop */
	bool		onlink;		/* RTNH_F_ONLINK on its next hop */
	struct ip_addr	gateway;	/* never set (family 0): none */
	uint32_t	ifindex;	/* 0: none or any */
	uint32_t	metric;
};

/*
 * Where a secondary ENI's pods send what is not for the ENI's own subnet.
 * SNAT off: out of the ENI to its gateway, as before.  SNAT on: the
 * untranslated destinations (the VPC's CIDRs from the policy, then
 * snat.exclude from netd's own configuration) out of the ENI, everything
 * else out of the primary link to its default gateway, where netd's
 * nftables table translates it to the node's primary address.
 */
struct nd_egress {
	bool		snat;
	/* ip_family dual or ipv6: every ENI's link gets netd's link-local
	 * address (plan_eni_setup), an ENI set up before its own IPv6
	 * address is known included, so that its link is ready when the
	 * address comes (a later setup, the same link up). */
	bool		ll6;
	uint32_t	primary_ifindex;
	struct ip_addr	primary_gw;	/* family 0: none known */
	uint32_t	ncidrs;
	struct ip_prefix cidrs[MSG_MAX_SNAT_CIDRS];
};

struct nd_addr {
	uint32_t	ifindex;
	struct ip_prefix addr;		/* with its subnet's length */
	uint8_t		proto;		/* IFA_PROTO: NETD_PROTO when added */
};

enum nd_op_kind {
	OP_LINK_UP,		/* set IFF_UP and the MTU */
	OP_LINK_DOWN,
	/* link.ll6 (an ENI with an IPv6 address): up, the kernel's IPv6
	 * address generation mode set to none first (netd adds the
	 * link-local address itself, without DAD); down, set back to
	 * EUI-64 after. */
	OP_ADDR_ADD,		/* without a prefix route */
	OP_ADDR_DEL,
	OP_ROUTE_ADD,		/* replace */
	OP_ROUTE_DEL,
	OP_RULE_ADD,
	OP_RULE_DEL,
	OP_HOST_ROUTE_ADD,	/* create only: an existing route is a failure */
};

struct nd_op {
	enum nd_op_kind	kind;
	union {
		struct {
			uint32_t ifindex;
			uint32_t mtu;
			bool	 ll6;
		}		link;
		struct nd_addr	addr;
		struct nd_route	route;
		struct nd_rule	rule;
	}		u;
};

struct nd_plan {
	size_t		nops;
	struct nd_op	ops[PLAN_MAX_OPS];
};

const char	*plan_op_name(enum nd_op_kind kind);

/*
 * How many of plan's operations change what the kernel holds, as far as
 * netd can tell from link (its state before, or NULL): a link set up (its
 * flags are not read) and an address the link has already are made sure
 * of, not changed.  What an answer reports (msg_result.changed), so that
 * a set-up asked again of an ENI in place counts 0.
 */
size_t		 plan_changes(const struct nd_plan *plan,
		    const struct nd_link_state *link);

/* The rules enid installs for a pod: "to" always, "from" when table != 0.
 * Returns how many (1 or 2) were written to out. */
size_t		 plan_pod_rules(const struct netd_policy *p,
		    const struct ip_addr *addr, uint32_t table,
		    struct nd_rule out[2]);
/*
 * True if netd added r: its tag and no selector netd never sets, and a
 * fwmark only as netd's connection-mark rule has it (exactly
 * "fwmark M/M lookup main" at prio_to, M the policy's connmark).  Any
 * other rule with a fwmark is someone else's, tagged or not.
 */
bool		 plan_rule_owned(const struct netd_policy *p,
		    const struct nd_rule *r);
/*
 * netd's connection-mark rule: "fwmark M/M lookup main" at prio_to, so
 * that packets netd's nftables table marks (replies of connections that
 * came in on the primary link) leave by the main table, before any pod's
 * "from POD lookup T" at prio_from can send them out of an ENI.
 */
void		 plan_connmark_rule(const struct netd_policy *p,
		    struct nd_rule *out);
/*
 * Whether the kernel's delete of d would take r: a rule delete names d's
 * priority, table, tag, addresses and fwmark (those d has), and any other
 * selector of r, a fwmark d lacks included, matches it.
 */
bool		 plan_rule_del_takes(const struct nd_rule *d,
		    const struct nd_rule *r);
/* The first of plan's rule deletes that could take one of the rules
 * others (someone else's) instead, or NULL. */
const struct nd_op *plan_rule_del_unsafe(const struct nd_plan *plan,
		    const struct nd_rule *others, size_t nothers);
/* True if r is netd's connection-mark rule under any one-bit mark (the
 * current one, or an earlier routing.connmark's). */
bool		 plan_rule_is_connmark_shape(const struct netd_policy *p,
		    const struct nd_rule *r);
/* True if r is netd's connection-mark rule (plan_connmark_rule's). */
bool		 plan_rule_is_connmark(const struct netd_policy *p,
		    const struct nd_rule *r);
/*
 * Make netd's connection-mark rule present exactly once: add it if
 * missing, and remove the ones netd wrote with another one-bit mark (an
 * earlier routing.connmark).  cur: the rules at prio_to.
 */
int		 plan_connmark(const struct netd_policy *p,
		    const struct nd_rule *cur, size_t ncur,
		    struct nd_plan *plan);
/* True if r is one of netd's rules for the pod at addr, whatever table. */
bool		 plan_rule_is_pods(const struct netd_policy *p,
		    const struct nd_rule *r, const struct ip_addr *addr);
/* True if r is netd's "to POD" rule of some pod: one per pod, so counting
 * these counts pods. */
bool		 plan_rule_is_pod_to(const struct netd_policy *p,
		    const struct nd_rule *r);
/* Equal in every field, the tag included. */
bool		 plan_rule_equal(const struct nd_rule *a, const struct nd_rule *b);
bool		 plan_route_equal(const struct nd_route *a,
		    const struct nd_route *b);

/*
 * Plans return 0, or -1 if the plan would exceed PLAN_MAX_OPS (then nothing
 * may be applied).  cur lists kernel objects; entries that do not concern
 * the request are ignored, so callers may pass a superset.
 */

/* Make the pod's rules exactly the desired ones: remove stale ones (e.g. a
 * from-rule to another table), add what is missing. */
int		 plan_pod_add(const struct netd_policy *p,
		    const struct msg_netd_pod_rule *m, const struct nd_rule *cur,
		    size_t ncur, struct nd_plan *plan);
/* Remove every enid rule for the pod, whatever its table. */
int		 plan_pod_del(const struct netd_policy *p,
		    const struct msg_netd_pod_rule *m, const struct nd_rule *cur,
		    size_t ncur, struct nd_plan *plan);

/*
 * The egress an ENI setup needs: SNAT as netd's configuration says, the
 * primary link (the policy's primary MAC among the node's own links) and
 * its main-table default gateway, the VPC's CIDRs and snat.exclude.
 * NULL, or (SNAT on only) why no table can be built: no primary gateway.
 */
const char	*plan_egress(const struct netd_policy *p,
		    const struct enid_config *cfg, struct nd_egress *out);

/*
 * Link up with its MTU, the primary address (no prefix route, so main gets
 * no route for the ENI's subnet), netd's routes in table T exactly
 *   SNAT off: { gateway/32 dev ENI scope link, default via gateway dev ENI }
 *   SNAT on:  { gateway/32 dev ENI scope link,
 *               each of eg's CIDRs via gateway dev ENI,
 *               default via primary_gw dev primary onlink }
 * (none of them for an ENI without an IPv4 address), and with an IPv6
 * address (addr6) ADDR6/128 on the link (no DAD, no prefix route) and
 *   { ::/0 via fe80:ec2::1 dev ENI }
 * and no other netd address (of either family) on the link.  link: its
 * addresses now (NULL: none known); cur: the routes in table T now.  The
 * main table is never touched.  -1 also if SNAT is on without a primary
 * link and gateway, or if the ENI has neither address.
 */
int		 plan_eni_setup(const struct msg_netd_setup_eni *m,
		    uint32_t ifindex, const struct nd_egress *eg,
		    const struct nd_link_state *link,
		    const struct nd_route *cur, size_t ncur,
		    struct nd_plan *plan);
/*
 * Undo setup: netd's from-rules to table T, netd's routes in table T, and,
 * if the link still exists (ifindex != 0), netd's addresses on it (from
 * link) and link down (with addr6 or netd's link-local address on the
 * link: the kernel's EUI-64 link-local address generation back on for
 * the link's next up).
 */
int		 plan_eni_teardown(const struct netd_policy *p,
		    const struct msg_netd_setup_eni *m, uint32_t ifindex,
		    const struct nd_link_state *link,
		    const struct nd_route *routes, size_t nroutes,
		    const struct nd_rule *rules, size_t nrules,
		    struct nd_plan *plan);

/*
 * A pod's host route as enid-cni makes it (main table, scope link, libnl's
 * default protocol "static", not netd's tag: it is the plugin's route,
 * which its DEL, CHECK and GC know), for a request policy_check_pod_route
 * accepted.  Created with NLM_F_EXCL: a route that appeared since the
 * check makes the add fail and stays as it was.
 */
void		 plan_pod_route(const struct msg_netd_pod_route *m,
		    uint32_t ifindex, struct nd_plan *plan);

/*
 * The link lookup schedule: check 1 at once, then after 250 ms, 500 ms,
 * 1 s, ... doubling up to steps of 8 s, with a last check at the deadline.
 * Link events answer sooner; these checks are the safety net.
 */
#define LOOKUP_FIRST_STEP_MS	250
#define LOOKUP_MAX_STEP_MS	8000

/* When check k (1-based) is due, in ms after the request. */
uint32_t	 plan_lookup_offset(uint32_t k, uint32_t deadline_ms);
/* How many checks a deadline allows (the "N" of "attempt k/N"). */
uint32_t	 plan_lookup_attempts(uint32_t deadline_ms);

#endif /* ENID_NETD_PLAN_H */
