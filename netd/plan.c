/*
 * Planning netd's kernel changes (see plan.h).  Pure: requests and
 * snapshots in, ordered operations out.
 */
#include <string.h>

#include "addr.h"
#include "plan.h"

static const char *const op_names[] = {
	[OP_LINK_UP] = "link-up",
	[OP_LINK_DOWN] = "link-down",
	[OP_ADDR_ADD] = "addr-add",
	[OP_ADDR_DEL] = "addr-del",
	[OP_ROUTE_ADD] = "route-add",
	[OP_ROUTE_DEL] = "route-del",
	[OP_RULE_ADD] = "rule-add",
	[OP_RULE_DEL] = "rule-del",
	[OP_HOST_ROUTE_ADD] = "host-route-add",
};

const char *
plan_op_name(enum nd_op_kind kind)
{
	if ((size_t)kind >= sizeof(op_names) / sizeof(op_names[0]))
		return "?";
	return op_names[kind];
}

static struct nd_op *
plan_push(struct nd_plan *plan, enum nd_op_kind kind)
{
	struct nd_op *op;

	if (plan->nops >= PLAN_MAX_OPS)
		return NULL;
	op = &plan->ops[plan->nops++];
	memset(op, 0, sizeof(*op));
	op->kind = kind;
	return op;
}

static int
push_rule(struct nd_plan *plan, enum nd_op_kind kind, const struct nd_rule *r)
{
	struct nd_op *op;

	if ((op = plan_push(plan, kind)) == NULL)
		return -1;
	op->u.rule = *r;
	return 0;
}

static int
push_route(struct nd_plan *plan, enum nd_op_kind kind,
    const struct nd_route *r)
{
	struct nd_op *op;

	if ((op = plan_push(plan, kind)) == NULL)
		return -1;
	op->u.route = *r;
	return 0;
}

static int
push_addr(struct nd_plan *plan, enum nd_op_kind kind, uint32_t ifindex,
    const struct ip_prefix *addr)
{
	struct nd_op *op;

	if ((op = plan_push(plan, kind)) == NULL)
		return -1;
	op->u.addr.ifindex = ifindex;
	op->u.addr.addr = *addr;
	op->u.addr.proto = NETD_PROTO;
	return 0;
}

/* From or to all in a family, as a rule or a default route holds it:
 * 0.0.0.0/0 or ::/0. */
static struct ip_prefix
any_of(uint8_t family)
{
	struct ip_prefix p;

	memset(&p, 0, sizeof(p));
	if (family == AF_INET6)
		p.addr.family = AF_INET6;
	else
		p.addr = ip_addr_from_in(0);
	return p;
}

static struct ip_prefix
any4(void)
{
	return any_of(AF_INET);
}

/* The VPC router's link-local address on every ENI link (REFERENCE.md,
 * "IPv6 on EC2"): fe80:ec2::1. */
static struct ip_addr
ec2_router6(void)
{
	struct ip_addr a;

	memset(&a, 0, sizeof(a));
	a.family = AF_INET6;
	a.bytes[0] = 0xfe;
	a.bytes[1] = 0x80;
	a.bytes[2] = 0x0e;
	a.bytes[3] = 0xc2;
	a.bytes[15] = 0x01;
	return a;
}

/* addr/32 (or /128). */
static struct ip_prefix
host(const struct ip_addr *addr)
{
	struct ip_prefix p;

	memset(&p, 0, sizeof(p));
	p.addr = *addr;
	p.len = (uint8_t)ip_family_bits(addr->family);
	return p;
}

/* The same selector: of one family, both all, or the same address and
 * length.  "All" of IPv4 is not "all" of IPv6: the kernel keeps each
 * family's rules apart. */
static bool
same_sel(const struct ip_prefix *a, const struct ip_prefix *b)
{
	return a->addr.family == b->addr.family && a->len == b->len &&
	    (a->len == 0 || ip_addr_eq(&a->addr, &b->addr));
}

/* An address netd put on the link, of either family: its tag, on this
 * link, canonical. */
static bool
addr_is_netds(const struct nd_ifaddr *a, uint32_t ifindex)
{
	return a->ifindex == ifindex && a->proto == NETD_PROTO &&
	    ip_prefix_valid(&a->addr);
}


static int
push_link(struct nd_plan *plan, enum nd_op_kind kind, uint32_t ifindex,
    uint32_t mtu, bool ll6)
{
	struct nd_op *op;

	if ((op = plan_push(plan, kind)) == NULL)
		return -1;
	op->u.link.ifindex = ifindex;
	op->u.link.mtu = mtu;
	op->u.link.ll6 = ll6;
	return 0;
}

/*
 * The link-local address/64 the kernel would give a link with mac (RFC
 * 4291's modified EUI-64).  netd adds it itself, without DAD: while the
 * kernel's own one is tentative (a second or more after the link is up)
 * the kernel sends no neighbour solicitation for the VPC router
 * (fe80:ec2::1) on the link, for want of a source address, and a pod's
 * first packets out of a new ENI wait or are lost.  A MAC is unique on
 * the VPC's link, so a duplicate is not expected.
 */
static struct ip_prefix
eui64_link_local(const uint8_t mac[6])
{
	struct ip_prefix p;

	memset(&p, 0, sizeof(p));
	p.addr.family = AF_INET6;
	p.addr.bytes[0] = 0xfe;
	p.addr.bytes[1] = 0x80;
	p.addr.bytes[8] = mac[0] ^ 0x02;
	p.addr.bytes[9] = mac[1];
	p.addr.bytes[10] = mac[2];
	p.addr.bytes[11] = 0xff;
	p.addr.bytes[12] = 0xfe;
	p.addr.bytes[13] = mac[3];
	p.addr.bytes[14] = mac[4];
	p.addr.bytes[15] = mac[5];
	p.len = 64;
	return p;
}

size_t
plan_pod_rules(const struct netd_policy *p, const struct ip_addr *addr,
    uint32_t table, struct nd_rule out[2])
{
	size_t n = 0;

	/* Of the address's family alone: never a mixed-family rule. */
	memset(out, 0, 2 * sizeof(out[0]));
	out[n].priority = p->prio_to;
	out[n].table = NETD_TABLE_MAIN;
	out[n].src = any_of(addr->family);
	out[n].dst = host(addr);
	out[n].protocol = NETD_PROTO;
	n++;
	if (table != NETD_TABLE_UNSPEC) {
		out[n].priority = p->prio_from;
		out[n].table = table;
		out[n].src = host(addr);
		out[n].dst = any_of(addr->family);
		out[n].protocol = NETD_PROTO;
		n++;
	}
	return n;
}

/* "fwmark M/M lookup main" at prio_to with nothing else, for mark M: an
 * IPv4 rule (the marks are set by netd's ip table, IPv4 only). */
static bool
rule_is_mark_rule(const struct netd_policy *p, const struct nd_rule *r,
    uint32_t mark)
{
	return r->protocol == NETD_PROTO && !r->other_selectors &&
	    r->src.addr.family == AF_INET &&
	    r->priority == p->prio_to && r->table == NETD_TABLE_MAIN &&
	    r->src.len == 0 && r->dst.len == 0 && mark != 0 &&
	    r->fwmark == mark && r->fwmask == mark;
}

bool
plan_rule_is_connmark(const struct netd_policy *p, const struct nd_rule *r)
{
	return rule_is_mark_rule(p, r, p->connmark);
}

bool
plan_rule_owned(const struct netd_policy *p, const struct nd_rule *r)
{
	if (r->protocol != NETD_PROTO || r->other_selectors)
		return false;
	if (r->fwmark == 0 && r->fwmask == 0)
		return true;
	return plan_rule_is_connmark(p, r);
}

bool
plan_rule_del_takes(const struct nd_rule *d, const struct nd_rule *r)
{
	/* A delete goes to one family's rules only. */
	return r->src.addr.family == d->src.addr.family &&
	    r->priority == d->priority && r->table == d->table &&
	    r->protocol == d->protocol &&
	    (d->src.len == 0 || same_sel(&r->src, &d->src)) &&
	    (d->dst.len == 0 || same_sel(&r->dst, &d->dst)) &&
	    (d->fwmask == 0 || (r->fwmark == d->fwmark &&
	    r->fwmask == d->fwmask));
}

const struct nd_op *
plan_rule_del_unsafe(const struct nd_plan *plan, const struct nd_rule *others,
    size_t nothers)
{
	size_t i, j;

	for (i = 0; i < plan->nops; i++)
		for (j = 0; plan->ops[i].kind == OP_RULE_DEL && j < nothers;
		    j++)
			if (plan_rule_del_takes(&plan->ops[i].u.rule,
			    &others[j]))
				return &plan->ops[i];
	return NULL;
}

void
plan_connmark_rule(const struct netd_policy *p, struct nd_rule *out)
{
	memset(out, 0, sizeof(*out));
	out->priority = p->prio_to;
	out->table = NETD_TABLE_MAIN;
	out->src = out->dst = any4();
	out->fwmark = p->connmark;
	out->fwmask = p->connmark;
	out->protocol = NETD_PROTO;
}

/* One bit set: what routing.connmark may be. */
static bool
one_bit(uint32_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

bool
plan_rule_is_connmark_shape(const struct netd_policy *p,
    const struct nd_rule *r)
{
	return one_bit(r->fwmark) && rule_is_mark_rule(p, r, r->fwmark);
}

int
plan_connmark(const struct netd_policy *p, const struct nd_rule *cur,
    size_t ncur, struct nd_plan *plan)
{
	struct nd_rule want;
	bool kept = false;
	size_t j;

	memset(plan, 0, sizeof(*plan));
	plan_connmark_rule(p, &want);
	for (j = 0; j < ncur; j++)
		if (plan_rule_equal(&cur[j], &want))
			kept = true;
	/* Added before a stale one goes: marked replies always have a rule. */
	if (!kept && push_rule(plan, OP_RULE_ADD, &want) == -1)
		return -1;
	for (j = 0; j < ncur; j++) {
		/* netd's own rule under another one-bit routing.connmark;
		 * any other shape with a fwmark is left to its owner. */
		if (cur[j].fwmark == p->connmark ||
		    !one_bit(cur[j].fwmark) ||
		    !rule_is_mark_rule(p, &cur[j], cur[j].fwmark))
			continue;
		if (push_rule(plan, OP_RULE_DEL, &cur[j]) == -1)
			return -1;
	}
	return 0;
}

/* A rule with no fwmark selector: what every pod rule is. */
static bool
rule_unmarked(const struct nd_rule *r)
{
	return r->fwmark == 0 && r->fwmask == 0;
}

bool
plan_rule_is_pods(const struct netd_policy *p, const struct nd_rule *r,
    const struct ip_addr *addr)
{
	struct ip_prefix h = host(addr);

	if (!plan_rule_owned(p, r) || !rule_unmarked(r) || h.len == 0)
		return false;
	if (r->priority == p->prio_to)
		return same_sel(&r->dst, &h) && r->src.len == 0;
	if (r->priority == p->prio_from)
		return same_sel(&r->src, &h) && r->dst.len == 0;
	return false;
}

bool
plan_rule_is_pod_to(const struct netd_policy *p, const struct nd_rule *r)
{
	return plan_rule_owned(p, r) && rule_unmarked(r) &&
	    r->priority == p->prio_to && r->src.len == 0 &&
	    r->dst.addr.family == r->src.addr.family &&
	    r->dst.len == ip_family_bits(r->dst.addr.family) &&
	    r->dst.len != 0;
}

bool
plan_rule_equal(const struct nd_rule *a, const struct nd_rule *b)
{
	return a->priority == b->priority && a->table == b->table &&
	    same_sel(&a->src, &b->src) && same_sel(&a->dst, &b->dst) &&
	    a->fwmark == b->fwmark && a->fwmask == b->fwmask &&
	    a->protocol == b->protocol &&
	    a->other_selectors == b->other_selectors;
}

/* The tag counts: a foreign route doing the same job is not netd's, and
 * netd's own must exist beside it. */
bool
plan_route_equal(const struct nd_route *a, const struct nd_route *b)
{
	return a->table == b->table && ip_prefix_eq(&a->dst, &b->dst) &&
	    a->scope == b->scope &&
	    !a->multipath && !b->multipath &&
	    ip_addr_eq(&a->gateway, &b->gateway) &&
	    a->onlink == b->onlink &&
	    a->ifindex == b->ifindex && a->metric == b->metric &&
	    a->protocol == b->protocol;
}

static bool
route_is_netds(const struct nd_route *r, uint32_t table)
{
	return r->table == table && r->protocol == NETD_PROTO;
}

/* Whether r is one of the rules of m's pod, of either of its addresses. */
static bool
rule_is_req_pods(const struct netd_policy *p, const struct nd_rule *r,
    const struct msg_netd_pod_rule *m)
{
	return plan_rule_is_pods(p, r, &m->addr) ||
	    (m->addr6.family != 0 && plan_rule_is_pods(p, r, &m->addr6));
}

int
plan_pod_add(const struct netd_policy *p, const struct msg_netd_pod_rule *m,
    const struct nd_rule *cur, size_t ncur, struct nd_plan *plan)
{
	struct nd_rule want[4];
	size_t nwant, i, j;
	bool found;

	memset(plan, 0, sizeof(*plan));
	nwant = plan_pod_rules(p, &m->addr, m->table, want);
	if (m->addr6.family != 0)
		nwant += plan_pod_rules(p, &m->addr6, m->table, want + nwant);
	/* Add first, so the pod is never without its rules. */
	for (i = 0; i < nwant; i++) {
		found = false;
		for (j = 0; j < ncur && !found; j++)
			found = plan_rule_equal(&cur[j], &want[i]);
		if (!found && push_rule(plan, OP_RULE_ADD, &want[i]) == -1)
			return -1;
	}
	for (j = 0; j < ncur; j++) {
		if (!rule_is_req_pods(p, &cur[j], m))
			continue;
		found = false;
		for (i = 0; i < nwant && !found; i++)
			found = plan_rule_equal(&cur[j], &want[i]);
		if (!found && push_rule(plan, OP_RULE_DEL, &cur[j]) == -1)
			return -1;
	}
	return 0;
}

int
plan_pod_del(const struct netd_policy *p, const struct msg_netd_pod_rule *m,
    const struct nd_rule *cur, size_t ncur, struct nd_plan *plan)
{
	size_t j;

	memset(plan, 0, sizeof(*plan));
	for (j = 0; j < ncur; j++)
		if (rule_is_req_pods(p, &cur[j], m) &&
		    push_rule(plan, OP_RULE_DEL, &cur[j]) == -1)
			return -1;
	return 0;
}

/* A route of netd's in the ENI's table. */
static struct nd_route
eni_route(const struct msg_netd_setup_eni *m, const struct ip_prefix *dst,
    uint8_t scope, const struct ip_addr *gateway, uint32_t ifindex)
{
	struct nd_route r;

	memset(&r, 0, sizeof(r));
	r.table = m->table;
	r.dst = *dst;
	r.scope = scope;
	r.protocol = NETD_PROTO;
	if (gateway != NULL)
		r.gateway = *gateway;
	r.ifindex = ifindex;
	return r;
}

/* IPv4's on-link, VPC, exclusions and default; IPv6's default. */
#define ENI_MAX_ROUTES	(2 + MSG_MAX_SNAT_CIDRS + 1)

/*
 * The routes of an ENI's table, in the order they must be added: the
 * gateway's on-link route first, as every route via the gateway needs it.
 * Returns how many, or 0 if SNAT is on and eg names no primary link and
 * gateway to send the rest to.
 */
static size_t
eni_routes(const struct msg_netd_setup_eni *m, uint32_t ifindex,
    const struct nd_egress *eg, struct nd_route out[ENI_MAX_ROUTES])
{
	struct ip_prefix gw = host(&m->gateway), all = any4();
	size_t n = 0;
	uint32_t i;

	if (m->addr.addr.family == 0)
		return 0;
	out[n++] = eni_route(m, &gw, PLAN_SCOPE_LINK, NULL, ifindex);
	if (!eg->snat) {
		out[n++] = eni_route(m, &all, PLAN_SCOPE_UNIVERSE, &m->gateway,
		    ifindex);
		return n;
	}
	if (eg->primary_ifindex == 0 || eg->primary_gw.family == 0 ||
	    ip_addr_is_unspecified(&eg->primary_gw) ||
	    eg->ncidrs > MSG_MAX_SNAT_CIDRS)
		return 0;
	/* Untranslated: the VPC and the exclusions, through the ENI. */
	for (i = 0; i < eg->ncidrs; i++) {
		struct ip_prefix net = ip_prefix_network(&eg->cidrs[i]);

		out[n++] = eni_route(m, &net, PLAN_SCOPE_UNIVERSE, &m->gateway,
		    ifindex);
	}
	/* The rest through the primary link, where it is translated.  The
	 * gateway is on the primary's subnet, which this table has no route
	 * for: onlink says it is reachable there all the same. */
	out[n] = eni_route(m, &all, PLAN_SCOPE_UNIVERSE, &eg->primary_gw,
	    eg->primary_ifindex);
	out[n++].onlink = true;
	return n;
}

const char *
plan_egress(const struct netd_policy *p, const struct enid_config *cfg,
    struct nd_egress *out)
{
	const struct netd_node_link *primary;
	uint32_t i;

	memset(out, 0, sizeof(*out));
	out->snat = cfg->snat.enabled;
	out->ll6 = config_family_v6(cfg->ip_family);
	/* IPv4's: the egress of IPv4 traffic (IPv6 is never translated). */
	for (i = 0; i < p->ncidrs4 && out->ncidrs < MSG_MAX_SNAT_CIDRS; i++)
		out->cidrs[out->ncidrs++] = p->cidrs[i];
	for (i = 0; i < cfg->snat.nexclude &&
	    out->ncidrs < MSG_MAX_SNAT_CIDRS; i++) {
		out->cidrs[out->ncidrs++] = cfg->snat.exclude[i];
	}
	if ((primary = policy_node_link_by_mac(p, p->primary_mac)) != NULL) {
		out->primary_ifindex = primary->ifindex;
		out->primary_gw = primary->gateway;
	}
	if (!out->snat)
		return NULL;
	if (primary == NULL)
		return "SNAT is on and the primary link is not known";
	if (primary->gateway.family == 0)
		return "SNAT is on and the primary link has no IPv4 default "
		    "gateway in the main table to send pods' traffic beyond "
		    "the VPC to";
	return NULL;
}

/*
 * An ENI's IPv6 default route, in its table: to the VPC router's
 * link-local address on the ENI's own link, which the kernel takes as a
 * gateway without a route to it.  Not translated (IPv6 has no SNAT here):
 * what leaves from the ENI's or its pods' IPv6 addresses leaves by it.
 */
static struct nd_route
eni_route6(const struct msg_netd_setup_eni *m, uint32_t ifindex)
{
	struct ip_prefix all = any_of(AF_INET6);
	struct ip_addr router = ec2_router6();
	struct nd_route r;

	r = eni_route(m, &all, PLAN_SCOPE_UNIVERSE, &router, ifindex);
	/* The metric the kernel gives an IPv6 route added without one
	 * (IP6_RT_PRIO_USER), named so the route read back is equal. */
	r.metric = PLAN_METRIC6_DEFAULT;
	return r;
}

static bool
route_wanted(const struct nd_route *r, const struct nd_route *want,
    size_t nwant)
{
	size_t i;

	for (i = 0; i < nwant; i++)
		if (plan_route_equal(r, &want[i]))
			return true;
	return false;
}

int
plan_eni_setup(const struct msg_netd_setup_eni *m, uint32_t ifindex,
    const struct nd_egress *eg, const struct nd_link_state *link,
    const struct nd_route *cur, size_t ncur, struct nd_plan *plan)
{
	struct nd_route want[ENI_MAX_ROUTES];
	struct ip_prefix addr6 = host(&m->addr6);
	struct ip_prefix ll6 = eui64_link_local(m->mac);
	bool v6 = m->addr6.family != 0, ll = v6 || eg->ll6;
	size_t nwant = 0, i, j;

	memset(plan, 0, sizeof(*plan));
	if (m->addr.addr.family == 0 && m->addr6.family == 0)
		return -1;
	if (m->addr.addr.family != 0 &&
	    (nwant = eni_routes(m, ifindex, eg, want)) == 0)
		return -1;
	if (m->addr6.family != 0)
		want[nwant++] = eni_route6(m, ifindex);

	if (push_link(plan, OP_LINK_UP, ifindex, m->mtu, ll) == -1)
		return -1;
	if (m->addr.addr.family != 0 &&
	    push_addr(plan, OP_ADDR_ADD, ifindex, &m->addr) == -1)
		return -1;
	/* The kernel's own address of the same value on a link up before
	 * (its generation mode was still on) goes first: an add over it
	 * would not cut its DAD short, and it would stay tentative. */
	for (i = 0; ll && link != NULL && i < link->naddrs; i++) {
		const struct nd_ifaddr *a = &link->addrs[i];

		if (a->ifindex == ifindex && a->proto != NETD_PROTO &&
		    ip_prefix_eq(&a->addr, &ll6) &&
		    push_addr(plan, OP_ADDR_DEL, ifindex, &a->addr) == -1)
			return -1;
	}
	if (ll && push_addr(plan, OP_ADDR_ADD, ifindex, &ll6) == -1)
		return -1;
	if (v6 && push_addr(plan, OP_ADDR_ADD, ifindex, &addr6) == -1)
		return -1;
	for (i = 0; i < nwant; i++) {
		if (!route_wanted(&want[i], cur, ncur) &&
		    push_route(plan, OP_ROUTE_ADD, &want[i]) == -1)
			return -1;
	}
	/* Then netd's other routes in the table, of both families: stale
	 * (an old link's, the other SNAT setting's, a family the ENI no
	 * longer has). */
	for (j = 0; j < ncur; j++) {
		if (!route_is_netds(&cur[j], m->table) ||
		    route_wanted(&cur[j], want, nwant))
			continue;
		if (push_route(plan, OP_ROUTE_DEL, &cur[j]) == -1)
			return -1;
	}
	/* And netd's other addresses on the link: an earlier setup's. */
	for (i = 0; link != NULL && i < link->naddrs; i++) {
		const struct nd_ifaddr *a = &link->addrs[i];

		if (!addr_is_netds(a, ifindex) ||
		    (m->addr.addr.family != 0 &&
		    ip_prefix_eq(&a->addr, &m->addr)) ||
		    (v6 && ip_prefix_eq(&a->addr, &addr6)) ||
		    (ll && ip_prefix_eq(&a->addr, &ll6)))
			continue;
		if (push_addr(plan, OP_ADDR_DEL, ifindex, &a->addr) == -1)
			return -1;
	}
	return 0;
}

int
plan_eni_teardown(const struct netd_policy *p,
    const struct msg_netd_setup_eni *m, uint32_t ifindex,
    const struct nd_link_state *link, const struct nd_route *routes,
    size_t nroutes, const struct nd_rule *rules, size_t nrules,
    struct nd_plan *plan)
{
	bool ll = m->addr6.family != 0;
	size_t j;

	memset(plan, 0, sizeof(*plan));
	/* Rules first, so no pod traffic is steered into an emptying table. */
	for (j = 0; j < nrules; j++) {
		if (!plan_rule_owned(p, &rules[j]) ||
		    !rule_unmarked(&rules[j]) ||
		    rules[j].priority != p->prio_from ||
		    rules[j].table != m->table)
			continue;
		if (push_rule(plan, OP_RULE_DEL, &rules[j]) == -1)
			return -1;
	}
	for (j = 0; j < nroutes; j++) {
		if (!route_is_netds(&routes[j], m->table))
			continue;
		if (push_route(plan, OP_ROUTE_DEL, &routes[j]) == -1)
			return -1;
	}
	if (ifindex == 0)
		return 0;
	for (j = 0; link != NULL && j < link->naddrs; j++) {
		if (!addr_is_netds(&link->addrs[j], ifindex))
			continue;
		/* netd's link-local address: netd turned the kernel's
		 * generation off (an ENI set up before its addr6). */
		if (ip_addr_is_link_local(&link->addrs[j].addr.addr))
			ll = true;
		if (push_addr(plan, OP_ADDR_DEL, ifindex,
		    &link->addrs[j].addr) == -1)
			return -1;
	}
	return push_link(plan, OP_LINK_DOWN, ifindex, 0, ll);
}

uint32_t
plan_lookup_offset(uint32_t k, uint32_t deadline_ms)
{
	uint64_t at = 0, step = LOOKUP_FIRST_STEP_MS;
	uint32_t i;

	for (i = 1; i < k && at < deadline_ms; i++) {
		at += step;
		step = step * 2 > LOOKUP_MAX_STEP_MS ? LOOKUP_MAX_STEP_MS :
		    step * 2;
	}
	return at > deadline_ms ? deadline_ms : (uint32_t)at;
}

uint32_t
plan_lookup_attempts(uint32_t deadline_ms)
{
	uint32_t k = 1;

	/* Bounded: offsets grow by at least LOOKUP_FIRST_STEP_MS. */
	while (plan_lookup_offset(k, deadline_ms) < deadline_ms)
		k++;
	return k;
}

void
plan_pod_route(const struct msg_netd_pod_route *m, uint32_t ifindex,
    struct nd_plan *plan)
{
	struct nd_op *op;

	plan->nops = 0;
	op = plan_push(plan, OP_HOST_ROUTE_ADD);
	op->u.route.table = NETD_TABLE_MAIN;
	op->u.route.dst = host(&m->addr);
	op->u.route.scope = PLAN_SCOPE_LINK;
	op->u.route.protocol = NETD_RTPROT_STATIC;
	op->u.route.ifindex = ifindex;
}

size_t
plan_changes(const struct nd_plan *plan, const struct nd_link_state *link)
{
	size_t i, j, n = 0;

	for (i = 0; i < plan->nops; i++) {
		const struct nd_op *op = &plan->ops[i];
		bool there = false;

		if (op->kind == OP_LINK_UP)
			continue;
		for (j = 0; op->kind == OP_ADDR_ADD && link != NULL &&
		    j < link->naddrs; j++)
			if (addr_is_netds(&link->addrs[j], op->u.addr.ifindex) &&
			    ip_prefix_eq(&link->addrs[j].addr,
			    &op->u.addr.addr))
				there = true;
		if (!there)
			n++;
	}
	return n;
}
