/*
 * netd's request policy (see policy.h).  Pure: no I/O, no logging; the
 * caller logs a refusal with the object it names.  A request is checked
 * whole before anything in the kernel is touched.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "policy.h"

uint32_t
policy_pod_cap(const struct enid_config *cfg)
{
	uint32_t enis = cfg->pool.max_enis;

	if (cfg->pool.max_pods != 0)
		return cfg->pool.max_pods;
	if (enis == 0 || enis > NETD_MAX_ENIS)
		enis = NETD_MAX_ENIS;
	return enis * (cfg->pool.prefix_delegation ? NETD_PODS_PER_ENI_PD :
	    NETD_PODS_PER_ENI);
}

void
policy_init(struct netd_policy *p, const struct enid_config *cfg)
{
	memset(p, 0, sizeof(*p));
	p->table_lo = cfg->routing.table_base;
	p->table_hi = cfg->routing.table_base + CONF_TABLE_SPAN;
	p->prio_to = cfg->routing.rule_priority_to;
	p->prio_from = cfg->routing.rule_priority_from;
	p->connmark = cfg->routing.connmark;
	p->max_pods = policy_pod_cap(cfg);
}

static bool
mac_is_unicast(const uint8_t mac[6])
{
	return !mac_is_zero(mac) && (mac[0] & 0x01) == 0;
}

static bool
mac_equal(const uint8_t a[6], const uint8_t b[6])
{
	return memcmp(a, b, 6) == 0;
}

/* ---- the node's own links ---- */

static struct netd_node_link *
node_link_known(struct netd_node *n, const struct netd_node_link *l)
{
	uint32_t i;

	for (i = 0; i < n->nlinks; i++)
		if (n->links[i].ifindex == l->ifindex &&
		    mac_equal(n->links[i].mac, l->mac))
			return &n->links[i];
	return NULL;
}

bool
policy_node_merge(struct netd_policy *p, const struct netd_node *fresh)
{
	struct netd_node *n = &p->node;
	bool added = false;
	uint32_t i, j;

	if (fresh->overflow)
		n->overflow = true;
	/* A link whose MAC changed is kept under both: by ifindex and by
	 * either MAC it stays the node's own. */
	for (i = 0; i < fresh->nlinks; i++) {
		struct netd_node_link *known;

		if ((known = node_link_known(n, &fresh->links[i])) != NULL) {
			if (fresh->links[i].gateway.family != 0 &&
			    !ip_addr_eq(&fresh->links[i].gateway,
			    &known->gateway)) {
				known->gateway = fresh->links[i].gateway;
				added = true;
			}
			continue;
		}
		if (n->nlinks == NETD_MAX_NODE_LINKS) {
			n->overflow = true;
			continue;
		}
		n->links[n->nlinks++] = fresh->links[i];
		added = true;
	}
	for (i = 0; i < fresh->naddrs; i++) {
		for (j = 0; j < n->naddrs; j++)
			if (ip_addr_eq(&n->addrs[j], &fresh->addrs[i]))
				break;
		if (j < n->naddrs)
			continue;
		if (n->naddrs == NETD_MAX_NODE_ADDRS) {
			n->overflow = true;
			continue;
		}
		n->addrs[n->naddrs++] = fresh->addrs[i];
		added = true;
	}
	return added;
}

const struct netd_node_link *
policy_node_link_by_mac(const struct netd_policy *p, const uint8_t mac[6])
{
	uint32_t i;

	if (mac_is_zero(mac))
		return NULL;
	for (i = 0; i < p->node.nlinks; i++)
		if (mac_equal(p->node.links[i].mac, mac))
			return &p->node.links[i];
	return NULL;
}

const struct netd_node_link *
policy_node_link_by_ifindex(const struct netd_policy *p, uint32_t ifindex)
{
	uint32_t i;

	for (i = 0; i < p->node.nlinks; i++)
		if (p->node.links[i].ifindex == ifindex)
			return &p->node.links[i];
	return NULL;
}

bool
policy_node_has_addr(const struct netd_policy *p, const struct ip_addr *addr)
{
	uint32_t i;

	for (i = 0; i < p->node.naddrs; i++)
		if (ip_addr_eq(&p->node.addrs[i], addr))
			return true;
	return false;
}

const char *
policy_check_primary(const struct netd_policy *p, const uint8_t mac[6])
{
	if (p->node.overflow)
		return "the node has more default-route links or addresses "
		    "than netd can track";
	if (p->node.nlinks == 0)
		return "netd found no default route in the main table";
	if (policy_node_link_by_mac(p, mac) == NULL)
		return "primary MAC is not on a link the main table's default "
		    "route goes through";
	return NULL;
}

/* Ranges no VPC can use: this network, loopback, link-local, multicast
 * and reserved (for IPv4: 0/8, 127/8, 169.254/16, 224/4 and 240/4). */
static bool
special_range(const struct ip_addr *a)
{
	return ip_addr_is_reserved(a) || ip_addr_is_loopback(a) ||
	    ip_addr_is_link_local(a) || ip_addr_is_multicast(a);
}

/* One IPv4 block of the VPC. */
static const char *
check_vpc_cidr4(const struct ip_prefix *c)
{
	if (c->len < NETD_MIN_VPC_PREFIX || c->len > NETD_MAX_VPC_PREFIX)
		return "VPC CIDR prefix out of range (/16 to /28)";
	if (!ip_prefix_is_network(c))
		return "VPC CIDR has host bits set";
	if (special_range(&c->addr))
		return "VPC CIDR in a reserved range (this network, "
		    "loopback, link-local, multicast or reserved)";
	return NULL;
}

/* One IPv6 block of the VPC: a unicast network, global or unique local,
 * never one holding EC2's own service addresses (fd00:ec2::/32). */
static const char *
check_vpc_cidr6(const struct ip_prefix *c)
{
	static const struct ip_prefix ec2 = { { AF_INET6, { 0 },
	    { 0xfd, 0x00, 0x0e, 0xc2 } }, 32, { 0 } };

	if (c->len < NETD_MIN_VPC6_PREFIX || c->len > NETD_MAX_VPC6_PREFIX)
		return "VPC IPv6 CIDR prefix out of range (/44 to /60)";
	if (!ip_prefix_is_network(c))
		return "VPC IPv6 CIDR has host bits set";
	if (ip_addr_is_special(&c->addr))
		return "VPC IPv6 CIDR in a special range (link-local, "
		    "multicast, loopback, ::/8 or IPv4-embedded)";
	if (ip_prefix_overlaps(c, &ec2))
		return "VPC IPv6 CIDR overlaps EC2's service addresses "
		    "(fd00:ec2::/32)";
	return NULL;
}

/* The VPC's blocks: 1 to MSG_MAX_CIDRS IPv4 ones, then up to
 * MSG_MAX_CIDRS6 IPv6 ones. */
static const char *
check_vpc_cidrs(const struct msg_netd_policy *m)
{
	const char *why;
	uint32_t i, n4 = 0, n6 = 0;

	if (m->ncidrs > MSG_MAX_VPC_CIDRS)
		return "no VPC CIDR, or too many";
	for (i = 0; i < m->ncidrs; i++) {
		const struct ip_prefix *c = &m->cidrs[i];

		if (!ip_prefix_valid(c))
			return "VPC CIDR is not a network";
		if (c->addr.family == AF_INET) {
			if (n6 > 0)
				return "VPC IPv4 CIDR after an IPv6 one";
			n4++;
			why = check_vpc_cidr4(c);
		} else {
			n6++;
			why = check_vpc_cidr6(c);
		}
		if (why != NULL)
			return why;
	}
	if (n4 == 0 || n4 > MSG_MAX_CIDRS || n6 > MSG_MAX_CIDRS6)
		return "no VPC CIDR, or too many";
	return NULL;
}

const char *
policy_set_vpc(struct netd_policy *p, const struct msg_netd_policy *m)
{
	const char *why;

	if (p->vpc_set)
		return "policy already set";
	if (!mac_is_unicast(m->primary_mac))
		return "primary MAC is not a unicast address";
	/* From here on the primary MAC is a node link's, and stays one: the
	 * node's view only grows (policy_node_merge).  So the checks that
	 * refuse the node's own links refuse the primary interface too. */
	if ((why = policy_check_primary(p, m->primary_mac)) != NULL)
		return why;
	if ((why = check_vpc_cidrs(m)) != NULL)
		return why;
	memcpy(p->primary_mac, m->primary_mac, 6);
	p->ncidrs = m->ncidrs;
	memcpy(p->cidrs, m->cidrs, m->ncidrs * sizeof(m->cidrs[0]));
	for (p->ncidrs4 = 0; p->ncidrs4 < p->ncidrs &&
	    p->cidrs[p->ncidrs4].addr.family == AF_INET; p->ncidrs4++)
		;
	p->vpc_set = true;
	return NULL;
}

bool
policy_table_allowed(const struct netd_policy *p, uint32_t table)
{
	if (table == NETD_TABLE_UNSPEC || table == NETD_TABLE_DEFAULT ||
	    table == NETD_TABLE_MAIN || table == NETD_TABLE_LOCAL)
		return false;
	return table >= p->table_lo && table < p->table_hi;
}

bool
policy_in_vpc(const struct netd_policy *p, const struct ip_addr *addr)
{
	uint32_t i;

	if (ip_addr_is_unspecified(addr))
		return false;
	for (i = 0; i < p->ncidrs; i++)
		if (ip_prefix_contains(&p->cidrs[i], addr))
			return true;
	return false;
}

const char *
policy_check_unicast(const struct netd_policy *p, const struct ip_addr *addr)
{
	static const struct ip_prefix ula = { { AF_INET6, { 0 }, { 0xfc } },
	    7, { 0 } };

	if (ip_addr_is_special(addr))
		return "address is a special one (unspecified, loopback, "
		    "link-local, multicast, reserved or IPv4-embedded)";
	if (ip_addr_ec2_service(addr) != NULL)
		return "address is one of EC2's service addresses (IMDS, DNS, "
		    "NTP at fd00:ec2::)";
	if (ip_prefix_contains(&ula, addr) && !policy_in_vpc(p, addr))
		return "address is a unique local one (fc00::/7) outside the "
		    "VPC's blocks";
	return NULL;
}

/* The subnet lies wholly inside one VPC block. */
static bool
subnet_in_vpc(const struct netd_policy *p, const struct ip_prefix *subnet)
{
	uint32_t i;

	for (i = 0; i < p->ncidrs; i++)
		if (subnet->len >= p->cidrs[i].len &&
		    ip_prefix_contains(&p->cidrs[i], &subnet->addr))
			return true;
	return false;
}

const struct netd_eni *
policy_eni_by_mac(const struct netd_policy *p, const uint8_t mac[6])
{
	uint32_t i;

	for (i = 0; i < p->nenis; i++)
		if (mac_equal(p->enis[i].mac, mac))
			return &p->enis[i];
	return NULL;
}

const struct netd_eni *
policy_eni_by_table(const struct netd_policy *p, uint32_t table)
{
	uint32_t i;

	for (i = 0; i < p->nenis; i++)
		if (p->enis[i].table == table)
			return &p->enis[i];
	return NULL;
}

bool
policy_prio_is_enid(const struct netd_policy *p, uint32_t prio)
{
	return prio == p->prio_to || prio == p->prio_from;
}

/* What every request that may change the kernel needs first. */
static const char *
check_ready(const struct netd_policy *p)
{
	if (!p->vpc_set)
		return "no policy yet";
	if (p->node.overflow)
		return "netd's view of the node's own links is incomplete";
	return NULL;
}

/* The MAC checks every ENI request shares. */
static const char *
check_eni_mac(const struct netd_policy *p, const uint8_t mac[6])
{
	const char *why;

	if ((why = check_ready(p)) != NULL)
		return why;
	if (!mac_is_unicast(mac))
		return "MAC is not a unicast address";
	/* The primary interface's among them (policy_set_vpc). */
	if (policy_node_link_by_mac(p, mac) != NULL)
		return "MAC is one of the node's own links (the main table's "
		    "default route goes through it)";
	return NULL;
}

const char *
policy_check_declare(const struct netd_policy *p, const struct msg_netd_eni *m)
{
	const struct netd_eni *e;
	const char *why;

	if ((why = check_eni_mac(p, m->mac)) != NULL)
		return why;
	if (!policy_table_allowed(p, m->table))
		return "table outside enid's range";
	if ((e = policy_eni_by_mac(p, m->mac)) != NULL && e->table != m->table)
		return "MAC already declared with another table";
	if ((e = policy_eni_by_table(p, m->table)) != NULL &&
	    !mac_equal(e->mac, m->mac))
		return "table already bound to another ENI";
	if (policy_eni_by_mac(p, m->mac) == NULL && p->nenis >= NETD_MAX_ENIS)
		return "too many ENIs declared";
	return NULL;
}

const char *
policy_check_forget(const struct netd_policy *p, const struct msg_netd_eni *m)
{
	const struct netd_eni *e;

	/* Forgetting changes nothing in the kernel; the node's view need
	 * not be complete for it. */
	if (!p->vpc_set)
		return "no policy yet";
	if (!mac_is_unicast(m->mac))
		return "MAC is not a unicast address";
	if (mac_equal(m->mac, p->primary_mac))
		return "MAC is the primary interface's";
	if ((e = policy_eni_by_mac(p, m->mac)) != NULL && e->table != m->table)
		return "MAC declared with another table";
	return NULL;
}

void
policy_declare(struct netd_policy *p, const struct msg_netd_eni *m)
{
	if (policy_eni_by_mac(p, m->mac) != NULL || p->nenis >= NETD_MAX_ENIS)
		return;
	memcpy(p->enis[p->nenis].mac, m->mac, 6);
	p->enis[p->nenis].table = m->table;
	p->nenis++;
}

void
policy_forget(struct netd_policy *p, const struct msg_netd_eni *m)
{
	uint32_t i;

	for (i = 0; i < p->nenis; i++) {
		if (mac_equal(p->enis[i].mac, m->mac)) {
			p->enis[i] = p->enis[p->nenis - 1];
			p->nenis--;
			return;
		}
	}
}

const char *
policy_check_find_link(const struct netd_policy *p,
    const struct msg_netd_find_link *m)
{
	const char *why;

	if ((why = check_eni_mac(p, m->mac)) != NULL)
		return why;
	if (policy_eni_by_mac(p, m->mac) == NULL)
		return "MAC not declared as an ENI";
	if (m->deadline_ms > NETD_MAX_DEADLINE_MS)
		return "deadline longer than netd allows";
	return NULL;
}

/* An ENI's IPv4 address: its subnet inside the VPC, not the node's. */
static const char *
check_eni_addr4(const struct netd_policy *p,
    const struct msg_netd_setup_eni *m)
{
	if (m->addr.addr.family != AF_INET)
		return "ENI address is not IPv4";
	if (m->addr.len > 32)
		return "address prefix over 32";
	if (!policy_in_vpc(p, &m->addr.addr) || !subnet_in_vpc(p, &m->addr))
		return "ENI address or its subnet outside the VPC CIDRs";
	if (policy_node_has_addr(p, &m->addr.addr))
		return "address is one of the node's own (on a default-route "
		    "link)";
	return NULL;
}

/* An ENI's IPv6 address: a unicast one of the VPC's, not the node's. */
static const char *
check_eni_addr6(const struct netd_policy *p,
    const struct msg_netd_setup_eni *m)
{
	const char *why;

	if (m->addr6.family != AF_INET6)
		return "ENI IPv6 address is not IPv6";
	if ((why = policy_check_unicast(p, &m->addr6)) != NULL)
		return why;
	if (!policy_in_vpc(p, &m->addr6))
		return "ENI IPv6 address outside the VPC's IPv6 CIDRs";
	if (policy_node_has_addr(p, &m->addr6))
		return "ENI IPv6 address is one of the node's own (on a "
		    "default-route link)";
	return NULL;
}

/* What setup and teardown share: a declared MAC on its own table, and
 * addresses inside the VPC that are not the node's own. */
static const char *
check_eni_common(const struct netd_policy *p,
    const struct msg_netd_setup_eni *m)
{
	const struct netd_eni *e;
	const char *why;

	if ((why = check_eni_mac(p, m->mac)) != NULL)
		return why;
	if (!policy_table_allowed(p, m->table))
		return "table outside enid's range";
	if ((e = policy_eni_by_mac(p, m->mac)) == NULL)
		return "MAC not declared as an ENI";
	if (e->table != m->table)
		return "table differs from the one declared for this MAC";
	if (m->addr.addr.family == 0 && m->addr6.family == 0)
		return "ENI has neither an IPv4 nor an IPv6 address";
	if (m->addr.addr.family != 0 && (why = check_eni_addr4(p, m)) != NULL)
		return why;
	if (m->addr6.family != 0 && (why = check_eni_addr6(p, m)) != NULL)
		return why;
	return NULL;
}

const char *
policy_check_setup(const struct netd_policy *p,
    const struct msg_netd_setup_eni *m)
{
	const char *why;

	if ((why = check_eni_common(p, m)) != NULL)
		return why;
	if (m->mtu < NETD_MTU_MIN || m->mtu > NETD_MTU_MAX)
		return "MTU out of range";
	if (m->addr6.family != 0 && m->mtu < NETD_MTU_MIN6)
		return "MTU below IPv6's minimum (1280) for an ENI with an "
		    "IPv6 address";
	if (m->addr.addr.family == 0)
		return m->gateway.family == 0 ? NULL :
		    "gateway without an IPv4 address";
	if (!policy_in_vpc(p, &m->gateway))
		return "gateway outside the VPC CIDRs";
	if (!ip_prefix_contains(&m->addr, &m->gateway))
		return "gateway outside the ENI's subnet";
	if (ip_addr_eq(&m->gateway, &m->addr.addr))
		return "gateway is the ENI's own address";
	return NULL;
}

const char *
policy_check_teardown(const struct netd_policy *p,
    const struct msg_netd_setup_eni *m)
{
	/* The gateway and MTU are not used to tear down. */
	return check_eni_common(p, m);
}

const char *
policy_check_pod(const struct netd_policy *p, const struct msg_netd_pod_rule *m,
    bool adding)
{
	const struct netd_eni *e;
	const char *why;

	if ((why = check_ready(p)) != NULL)
		return why;
	if ((why = policy_check_unicast(p, &m->addr)) != NULL)
		return why;
	if (!policy_in_vpc(p, &m->addr))
		return "pod address outside the VPC CIDRs";
	if (policy_node_has_addr(p, &m->addr))
		return "pod address is one of the node's own (on a "
		    "default-route link)";
	if (m->table == NETD_TABLE_UNSPEC)
		return NULL;		/* a pod on the primary ENI */
	if (!policy_table_allowed(p, m->table))
		return "table outside enid's range";
	/* Removing may outlive the ENI's declaration; adding may not. */
	e = policy_eni_by_table(p, m->table);
	if (adding && e == NULL)
		return "table not bound to a declared ENI";
	if (adding && policy_node_link_by_mac(p, e->mac) != NULL)
		return "table bound to an ENI that is now one of the node's "
		    "own links";
	return NULL;
}

const char policy_no_such_device[] = "no such device";

/* A route's type as ip-route(8) names it (RTN_*). */
static const char *
route_type_name(uint8_t type)
{
	static const char *const names[] = {
		"unspec", "unicast", "local", "broadcast", "anycast",
		"multicast", "blackhole", "unreachable", "prohibit", "throw",
		"nat", "xresolve",
	};

	return type < sizeof(names) / sizeof(names[0]) ? names[type] :
	    "of an unknown type";
}

const char *
policy_check_pod_route(const struct netd_policy *p,
    const struct msg_netd_pod_route *m, bool has_rule,
    const struct nd_pod_link *link, const struct nd_host_route *routes,
    size_t nroutes, bool *present, char *detail, size_t detaillen)
{
	char ip[IP_PREFIX_STR_LEN];
	const char *why;
	unsigned int bits = ip_family_bits(m->addr.family);
	size_t i;

	*present = false;
	detail[0] = '\0';
	if ((why = check_ready(p)) != NULL)
		return why;
	if (!veth_name_ok(m->dev))
		return "device name is not a pod veth's (1 to 15 of a-z 0-9)";
	if ((why = policy_check_unicast(p, &m->addr)) != NULL)
		return why;
	if (!policy_in_vpc(p, &m->addr))
		return "pod address outside the VPC CIDRs";
	if (policy_node_has_addr(p, &m->addr))
		return "pod address is one of the node's own (on a "
		    "default-route link)";
	if (!has_rule)
		return "the address has no rule of netd's for a pod (to "
		    "ADDR/32 or ADDR/128 lookup main)";
	if (!link->found)
		return policy_no_such_device;
	if (policy_node_link_by_ifindex(p, link->ifindex) != NULL ||
	    policy_node_link_by_mac(p, link->mac) != NULL)
		return "the device is one of the node's own links";
	if (policy_eni_by_mac(p, link->mac) != NULL)
		return "the device is a declared ENI's link";
	if (!link->is_veth)
		return "the device is not a veth";
	if (!link->peer_netns)
		return "the device's peer is not in another network namespace";
	for (i = 0; i < nroutes; i++) {
		const struct nd_host_route *r = &routes[i];

		if (ip_addr_eq(&r->dst.addr, &m->addr) && r->dst.len == bits) {
			/* IPv6 routes have no scope: the kernel lists each
			 * as universe. */
			if (r->type == NETD_ROUTE_UNICAST && !r->multipath &&
			    r->gateway.family == 0 &&
			    r->ifindex == link->ifindex &&
			    (r->scope == NETD_SCOPE_LINK ||
			    m->addr.family == AF_INET6)) {
				*present = true;
				continue;
			}
			/* Whatever its kind or metric: a /32 of netd's
			 * would take its place (a blackhole at metric 50
			 * loses to one at 0; at the same metric the
			 * kernel would refuse it). */
			if (r->type != NETD_ROUTE_UNICAST)
				snprintf(detail, detaillen, "%s, metric %u",
				    route_type_name(r->type), r->metric);
			else
				snprintf(detail, detaillen, "ifindex %u%s, "
				    "metric %u", r->ifindex, r->gateway.family ?
				    ", via a gateway" : r->multipath ?
				    ", multipath" : "", r->metric);
			*present = false;
			return "the address is routed already; netd replaces "
			    "no route";
		}
	}
	for (i = 0; i < nroutes; i++) {
		const struct nd_host_route *r = &routes[i];

		/* Of the request's family only: a dual-stack pod's veth
		 * carries its /32 and its /128. */
		if (r->dst.addr.family == m->addr.family &&
		    r->dst.len == bits && !ip_addr_eq(&r->dst.addr, &m->addr) &&
		    !r->multipath && r->type == NETD_ROUTE_UNICAST &&
		    r->ifindex == link->ifindex) {
			ip_addr_format(&r->dst.addr, ip);
			snprintf(detail, detaillen, "to %s", ip);
			*present = false;
			return "the device carries another pod's host route";
		}
	}
	return NULL;
}

const char *
policy_check_pod_count(const struct netd_policy *p, uint32_t npods,
    bool pod_has_rules)
{
	if (!pod_has_rules && npods >= p->max_pods)
		return "pod limit reached (pool.max_pods, or 64 per ENI, 256 "
		    "with prefix delegation)";
	return NULL;
}

const char *
policy_check_link(const struct netd_policy *p, uint32_t ifindex,
    const uint8_t mac[6])
{
	if (p->node.overflow)
		return "netd's view of the node's own links is incomplete";
	if (policy_node_link_by_ifindex(p, ifindex) != NULL)
		return "link is one of the node's own (the main table's "
		    "default route goes through it)";
	if (policy_node_link_by_mac(p, mac) != NULL)
		return "link has the MAC of one of the node's own links";
	return NULL;
}

const char *
policy_check_addr_holder(uint32_t holder_ifindex, uint32_t own_ifindex)
{
	if (own_ifindex != 0 && holder_ifindex == own_ifindex)
		return NULL;
	return "address is configured on a link of the node";
}

/* As the kernel listed it: inet_ntop(3) also writes what is no
 * canonical struct ip_addr (an IPv4-mapped address). */
static void
format_addr(const struct ip_prefix *p, char *buf, size_t buflen)
{
	char s[INET6_ADDRSTRLEN];

	if (inet_ntop(p->addr.family, p->addr.bytes, s, sizeof(s)) == NULL)
		snprintf(s, sizeof(s), "?");
	snprintf(buf, buflen, "%s/%u", s, p->len);
}

const char *
policy_check_bare(const struct nd_link_state *s, char *detail,
    size_t detaillen)
{
	const struct nd_ifaddr *a;
	const struct nd_link_route *r;
	char what[INET6_ADDRSTRLEN + 8];
	uint32_t i;

	if (detaillen > 0)
		detail[0] = '\0';
	if (s->enslaved)
		return "link is enslaved to another (bond, bridge or VRF)";
	if (s->master)
		return "link is the master of others (a bond, bridge or VRF)";
	if (s->same_mac > 0) {
		snprintf(detail, detaillen, "%u other links", s->same_mac);
		return "another link carries the same MAC (a bridge, VLAN or "
		    "macvlan built on it)";
	}
	if (s->overflow || s->naddrs > NETD_MAX_LINK_ADDRS ||
	    s->nroutes > NETD_MAX_LINK_ROUTES)
		return "link carries more addresses or routes than netd "
		    "judges";
	for (i = 0; i < s->naddrs; i++) {
		a = &s->addrs[i];
		if ((a->addr.addr.family == AF_INET ||
		    a->addr.addr.family == AF_INET6) && a->proto == NETD_PROTO)
			continue;
		if (a->addr.addr.family == AF_INET6 &&
		    ip_addr_is_link_local(&a->addr.addr))
			continue;
		if (a->addr.addr.family != AF_INET &&
		    a->addr.addr.family != AF_INET6)
			snprintf(what, sizeof(what), "family %u",
			    a->addr.addr.family);
		else
			format_addr(&a->addr, what, sizeof(what));
		snprintf(detail, detaillen, "address %s proto %u", what,
		    a->proto);
		return "link carries an address netd did not install";
	}
	for (i = 0; i < s->nroutes; i++) {
		r = &s->routes[i];
		if (r->protocol == NETD_PROTO ||
		    r->protocol == NETD_RTPROT_KERNEL)
			continue;
		if (r->dst.addr.family != AF_INET &&
		    r->dst.addr.family != AF_INET6)
			snprintf(what, sizeof(what), "family %u",
			    r->dst.addr.family);
		else
			format_addr(&r->dst, what, sizeof(what));
		snprintf(detail, detaillen, "route %s table %u proto %u", what,
		    r->table, r->protocol);
		return "link carries a route netd did not install";
	}
	return NULL;
}
