/*
 * netd's request policy (see policy.h).  Pure: no I/O, no logging; the
 * caller logs a refusal with the object it names.  A request is checked
 * whole before anything in the kernel is touched.
 */
#include <arpa/inet.h>
#include <string.h>

#include "addr.h"
#include "policy.h"

void
policy_init(struct netd_policy *p, const struct enid_config *cfg)
{
	memset(p, 0, sizeof(*p));
	p->table_lo = cfg->routing.table_base;
	p->table_hi = cfg->routing.table_base + CONF_TABLE_SPAN;
	p->prio_to = cfg->routing.rule_priority_to;
	p->prio_from = cfg->routing.rule_priority_from;
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

/* Ranges no VPC can use: 0/8, 127/8, 169.254/16, 224/4 and 240/4. */
static bool
special_range(uint32_t addr)
{
	uint32_t h = ntohl(addr);

	return (h >> 24) == 0 || (h >> 24) == 127 || (h >> 16) == 0xa9fe ||
	    (h >> 28) >= 0xe;
}

const char *
policy_set_vpc(struct netd_policy *p, const struct msg_netd_policy *m)
{
	uint32_t i;

	if (p->vpc_set)
		return "policy already set";
	if (!mac_is_unicast(m->primary_mac))
		return "primary MAC is not a unicast address";
	if (m->ncidrs == 0 || m->ncidrs > MSG_MAX_CIDRS)
		return "no VPC CIDR, or too many";
	for (i = 0; i < m->ncidrs; i++) {
		if (m->cidrs[i].prefix < NETD_MIN_VPC_PREFIX ||
		    m->cidrs[i].prefix > NETD_MAX_VPC_PREFIX)
			return "VPC CIDR prefix out of range (/16 to /28)";
		if ((m->cidrs[i].addr & ~prefix_mask(m->cidrs[i].prefix)) != 0)
			return "VPC CIDR has host bits set";
		if (special_range(m->cidrs[i].addr))
			return "VPC CIDR in a reserved range (this network, "
			    "loopback, link-local, multicast or reserved)";
	}
	memcpy(p->primary_mac, m->primary_mac, 6);
	p->ncidrs = m->ncidrs;
	memcpy(p->cidrs, m->cidrs, m->ncidrs * sizeof(m->cidrs[0]));
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
policy_in_vpc(const struct netd_policy *p, uint32_t addr)
{
	uint32_t i;

	if (addr == 0)
		return false;
	for (i = 0; i < p->ncidrs; i++)
		if (cidr4_contains(p->cidrs[i].addr, p->cidrs[i].prefix, addr))
			return true;
	return false;
}

/* addr/prefix lies wholly inside one VPC block. */
static bool
subnet_in_vpc(const struct netd_policy *p, uint32_t addr, uint8_t prefix)
{
	uint32_t i;

	for (i = 0; i < p->ncidrs; i++)
		if (prefix >= p->cidrs[i].prefix &&
		    cidr4_contains(p->cidrs[i].addr, p->cidrs[i].prefix, addr))
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

/* The MAC checks every ENI request shares. */
static const char *
check_eni_mac(const struct netd_policy *p, const uint8_t mac[6])
{
	if (!p->vpc_set)
		return "no policy yet";
	if (!mac_is_unicast(mac))
		return "MAC is not a unicast address";
	if (mac_equal(mac, p->primary_mac))
		return "MAC is the primary interface's";
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
	const char *why;

	if ((why = check_eni_mac(p, m->mac)) != NULL)
		return why;
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

/* What setup and teardown share: a declared MAC on its own table, and an
 * address whose subnet lies inside the VPC. */
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
	if (m->prefix > 32)
		return "address prefix over 32";
	if (!policy_in_vpc(p, m->addr) || !subnet_in_vpc(p, m->addr, m->prefix))
		return "ENI address or its subnet outside the VPC CIDRs";
	return NULL;
}

const char *
policy_check_setup(const struct netd_policy *p,
    const struct msg_netd_setup_eni *m)
{
	const char *why;

	if ((why = check_eni_common(p, m)) != NULL)
		return why;
	if (!policy_in_vpc(p, m->gateway))
		return "gateway outside the VPC CIDRs";
	if (!cidr4_contains(m->addr & prefix_mask(m->prefix), m->prefix,
	    m->gateway))
		return "gateway outside the ENI's subnet";
	if (m->gateway == m->addr)
		return "gateway is the ENI's own address";
	if (m->mtu < NETD_MTU_MIN || m->mtu > NETD_MTU_MAX)
		return "MTU out of range";
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
	if (!p->vpc_set)
		return "no policy yet";
	if (!policy_in_vpc(p, m->addr))
		return "pod address outside the VPC CIDRs";
	if (m->table == NETD_TABLE_UNSPEC)
		return NULL;		/* a pod on the primary ENI */
	if (!policy_table_allowed(p, m->table))
		return "table outside enid's range";
	/* Removing may outlive the ENI's declaration; adding may not. */
	if (adding && policy_eni_by_table(p, m->table) == NULL)
		return "table not bound to a declared ENI";
	return NULL;
}

const char *
policy_check_addr_holder(const struct netd_policy *p,
    const uint8_t holder_mac[6], uint32_t table)
{
	const struct netd_eni *e;

	if (mac_equal(holder_mac, p->primary_mac))
		return "address belongs to the primary interface";
	if ((e = policy_eni_by_mac(p, holder_mac)) != NULL && e->table != table)
		return "address belongs to an ENI bound to another table";
	return NULL;
}
