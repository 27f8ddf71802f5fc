/*
 * netd's request policy: every refusal the issue names, and the requests
 * that must pass; then randomized cases (fixed seed, many thousands) that
 * hold each check against a plain restatement of its rule, as chrony's
 * unit tests do for its address filter.  Pure; no root, no netlink.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "addr.h"
#include "conf.h"
#include "policy.h"
#include "testaddr.h"

static const uint8_t PRIMARY[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t ENI1[6] = { 0x02, 0, 0, 0, 0, 0x11 };
static const uint8_t ENI2[6] = { 0x02, 0, 0, 0, 0, 0x12 };
/* A second default-route link (multipath), and its address. */
static const uint8_t UPLINK2[6] = { 0x02, 0, 0, 0, 0, 0x02 };
#define PRIMARY_IFINDEX		2
#define UPLINK2_IFINDEX		3
#define PRIMARY_IP		"10.0.0.10"
#define UPLINK2_IP		"10.0.4.20"

/* What netd would find on a node whose default route is multipath over
 * eth0 (PRIMARY) and eth1 (UPLINK2). */
static void
node_view(struct netd_node *n)
{
	memset(n, 0, sizeof(*n));
	n->nlinks = 2;
	n->links[0].ifindex = PRIMARY_IFINDEX;
	memcpy(n->links[0].mac, PRIMARY, 6);
	memcpy(n->links[0].name, "eth0", 5);
	n->links[1].ifindex = UPLINK2_IFINDEX;
	memcpy(n->links[1].mac, UPLINK2, 6);
	memcpy(n->links[1].name, "eth1", 5);
	n->naddrs = 2;
	n->addrs[0] = ipa(PRIMARY_IP);
	n->addrs[1] = ipa(UPLINK2_IP);
}

/* tables 100-163, priorities 512/1536, VPC 10.0.0.0/16 + 100.64.0.0/16 */
static void
make_policy(struct netd_policy *p)
{
	struct enid_config cfg;
	struct msg_netd_policy m;
	struct netd_node n;

	config_defaults(&cfg);
	policy_init(p, &cfg);
	node_view(&n);
	assert_true(policy_node_merge(p, &n));
	assert_null(policy_check_primary(p, PRIMARY));
	memset(&m, 0, sizeof(m));
	memcpy(m.primary_mac, PRIMARY, 6);
	m.ncidrs = 2;
	m.cidrs[0].addr = ipa("10.0.0.0");
	m.cidrs[0].len = 16;
	m.cidrs[1].addr = ipa("100.64.0.0");
	m.cidrs[1].len = 16;
	assert_null(policy_set_vpc(p, &m));
}

static void
declare(struct netd_policy *p, const uint8_t mac[6], uint32_t table)
{
	struct msg_netd_eni e;

	memset(&e, 0, sizeof(e));
	memcpy(e.mac, mac, 6);
	e.table = table;
	assert_null(policy_check_declare(p, &e));
	policy_declare(p, &e);
}

static struct msg_netd_setup_eni
setup_req(const uint8_t mac[6], uint32_t table)
{
	struct msg_netd_setup_eni s;

	memset(&s, 0, sizeof(s));
	memcpy(s.mac, mac, 6);
	s.table = table;
	s.addr.addr = ipa("10.0.16.5");
	s.addr.len = 20;
	s.gateway = ipa("10.0.16.1");
	s.mtu = 9001;
	return s;
}

static void
test_vpc_policy(void **state)
{
	struct enid_config cfg;
	struct netd_policy p;
	struct msg_netd_policy m;
	struct netd_node n;

	(void)state;
	config_defaults(&cfg);
	policy_init(&p, &cfg);
	assert_int_equal(p.table_lo, 100);
	assert_int_equal(p.table_hi, 100 + CONF_TABLE_SPAN);
	node_view(&n);
	assert_true(policy_node_merge(&p, &n));
	memset(&m, 0, sizeof(m));
	memcpy(m.primary_mac, PRIMARY, 6);
	assert_non_null(policy_set_vpc(&p, &m));	/* no CIDR */
	m.ncidrs = 1;
	m.cidrs[0].addr = ipa("10.0.0.0");
	m.cidrs[0].len = 4;				/* too wide */
	assert_non_null(policy_set_vpc(&p, &m));
	m.cidrs[0].len = 16;
	m.cidrs[0].addr = ipa("10.0.0.1");		/* host bits */
	assert_non_null(policy_set_vpc(&p, &m));
	m.cidrs[0].addr = ipa("10.0.0.0");
	m.cidrs[0].len = 29;				/* too narrow */
	assert_non_null(policy_set_vpc(&p, &m));
	m.cidrs[0].len = 16;
	m.cidrs[0].addr = ipa("127.0.0.0");		/* loopback */
	assert_non_null(policy_set_vpc(&p, &m));
	m.cidrs[0].addr = ipa("169.254.0.0");		/* link-local */
	assert_non_null(policy_set_vpc(&p, &m));
	m.cidrs[0].addr = ipa("224.0.0.0");		/* multicast */
	assert_non_null(policy_set_vpc(&p, &m));
	m.cidrs[0].addr = ipa("0.0.0.0");		/* this network */
	assert_non_null(policy_set_vpc(&p, &m));
	m.cidrs[0].addr = ipa("2600:1f14::");		/* IPv6 alone */
	m.cidrs[0].len = 56;
	assert_string_equal(policy_set_vpc(&p, &m),
	    "no VPC CIDR, or too many");
	m.cidrs[0].len = 16;
	m.cidrs[0].addr.family = 0;			/* never set */
	assert_string_equal(policy_set_vpc(&p, &m),
	    "VPC CIDR is not a network");
	m.cidrs[0].addr = ipa("10.0.0.0");
	m.primary_mac[0] = 0x01;			/* multicast */
	assert_non_null(policy_set_vpc(&p, &m));
	memcpy(m.primary_mac, ENI1, 6);			/* not a node link's */
	assert_string_equal(policy_set_vpc(&p, &m), "primary MAC is not on "
	    "a link the main table's default route goes through");
	memcpy(m.primary_mac, PRIMARY, 6);
	assert_false(p.vpc_set);
	assert_null(policy_set_vpc(&p, &m));
	assert_true(p.vpc_set);
	/* Fixed: nothing can widen it later. */
	m.cidrs[0].len = 8;
	assert_non_null(policy_set_vpc(&p, &m));
	assert_int_equal(p.cidrs[0].len, 16);
}

static void
test_tables(void **state)
{
	struct netd_policy p;

	(void)state;
	make_policy(&p);
	assert_false(policy_table_allowed(&p, 0));
	assert_false(policy_table_allowed(&p, 99));
	assert_true(policy_table_allowed(&p, 100));
	assert_true(policy_table_allowed(&p, 163));
	assert_false(policy_table_allowed(&p, 164));
	assert_false(policy_table_allowed(&p, 253));
	assert_false(policy_table_allowed(&p, 254));
	assert_false(policy_table_allowed(&p, 255));
	assert_false(policy_table_allowed(&p, 0xffffffffu));
	/* Even a configuration reaching the reserved ones can't name them. */
	p.table_lo = 200;
	p.table_hi = 300;
	assert_false(policy_table_allowed(&p, 254));
	assert_true(policy_table_allowed(&p, 252));
}

static void
test_declare(void **state)
{
	struct netd_policy p;
	struct msg_netd_eni e;

	(void)state;
	make_policy(&p);
	memset(&e, 0, sizeof(e));
	memcpy(e.mac, PRIMARY, 6);
	e.table = 101;
	assert_non_null(policy_check_declare(&p, &e));	/* primary */
	memcpy(e.mac, ENI1, 6);
	e.table = 254;
	assert_non_null(policy_check_declare(&p, &e));	/* main */
	e.table = 0;
	assert_non_null(policy_check_declare(&p, &e));
	e.table = 99;
	assert_non_null(policy_check_declare(&p, &e));
	memset(e.mac, 0, 6);
	e.table = 101;
	assert_non_null(policy_check_declare(&p, &e));	/* zero MAC */
	e.mac[0] = 0x01;
	assert_non_null(policy_check_declare(&p, &e));	/* multicast */

	declare(&p, ENI1, 101);
	declare(&p, ENI1, 101);				/* idempotent */
	assert_int_equal(p.nenis, 1);
	memcpy(e.mac, ENI1, 6);
	e.table = 102;
	assert_non_null(policy_check_declare(&p, &e));	/* rebinding */
	memcpy(e.mac, ENI2, 6);
	e.table = 101;
	assert_non_null(policy_check_declare(&p, &e));	/* table taken */
	declare(&p, ENI2, 102);
	assert_int_equal(p.nenis, 2);

	memcpy(e.mac, ENI1, 6);
	e.table = 105;
	assert_non_null(policy_check_forget(&p, &e));	/* other table */
	e.table = 101;
	assert_null(policy_check_forget(&p, &e));
	policy_forget(&p, &e);
	policy_forget(&p, &e);				/* idempotent */
	assert_null(policy_eni_by_mac(&p, ENI1));
	assert_non_null(policy_eni_by_mac(&p, ENI2));
	assert_int_equal(p.nenis, 1);
}

static void
test_before_policy(void **state)
{
	struct enid_config cfg;
	struct netd_policy p;
	struct msg_netd_eni e;
	struct msg_netd_pod_rule r = { 0 };

	(void)state;
	config_defaults(&cfg);
	policy_init(&p, &cfg);
	memset(&e, 0, sizeof(e));
	memcpy(e.mac, ENI1, 6);
	e.table = 101;
	assert_non_null(policy_check_declare(&p, &e));
	r.addr = ipa("10.0.1.1");
	assert_non_null(policy_check_pod(&p, &r, true));
}

static void
test_find_link(void **state)
{
	struct netd_policy p;
	struct msg_netd_find_link f;

	(void)state;
	make_policy(&p);
	memset(&f, 0, sizeof(f));
	memcpy(f.mac, ENI1, 6);
	f.deadline_ms = 30000;
	assert_non_null(policy_check_find_link(&p, &f));	/* undeclared */
	declare(&p, ENI1, 101);
	assert_null(policy_check_find_link(&p, &f));
	f.deadline_ms = NETD_MAX_DEADLINE_MS + 1;
	assert_non_null(policy_check_find_link(&p, &f));
	f.deadline_ms = 0;
	assert_null(policy_check_find_link(&p, &f));
	memcpy(f.mac, PRIMARY, 6);
	assert_non_null(policy_check_find_link(&p, &f));
}

static void
test_setup(void **state)
{
	struct netd_policy p;
	struct msg_netd_setup_eni s;

	(void)state;
	make_policy(&p);
	s = setup_req(ENI1, 101);
	assert_non_null(policy_check_setup(&p, &s));	/* undeclared */
	declare(&p, ENI1, 101);
	declare(&p, ENI2, 102);
	assert_null(policy_check_setup(&p, &s));
	assert_null(policy_check_teardown(&p, &s));

	s = setup_req(ENI1, 102);			/* ENI2's table */
	assert_non_null(policy_check_setup(&p, &s));
	s = setup_req(ENI1, 254);
	assert_non_null(policy_check_setup(&p, &s));
	s = setup_req(PRIMARY, 101);
	assert_non_null(policy_check_setup(&p, &s));
	assert_non_null(policy_check_teardown(&p, &s));

	s = setup_req(ENI1, 101);
	s.addr.addr = ipa("192.168.1.5");		/* outside the VPC */
	s.gateway = ipa("192.168.1.1");
	assert_non_null(policy_check_setup(&p, &s));
	assert_non_null(policy_check_teardown(&p, &s));
	s = setup_req(ENI1, 101);
	s.addr.len = 8;				/* wider than the VPC */
	assert_non_null(policy_check_setup(&p, &s));
	s = setup_req(ENI1, 101);
	s.gateway = ipa("8.8.8.8");
	assert_non_null(policy_check_setup(&p, &s));
	s.gateway = ipa("10.0.32.1");		/* VPC, other subnet */
	assert_non_null(policy_check_setup(&p, &s));
	s.gateway = s.addr.addr;
	assert_non_null(policy_check_setup(&p, &s));
	s = setup_req(ENI1, 101);
	s.mtu = 100;
	assert_non_null(policy_check_setup(&p, &s));
	s.mtu = 65000;
	assert_non_null(policy_check_setup(&p, &s));
	assert_null(policy_check_teardown(&p, &s));	/* mtu unused */
	s = setup_req(ENI1, 101);
	s.addr.addr = ipa("100.64.3.10");		/* second VPC block */
	s.addr.len = 24;
	s.gateway = ipa("100.64.3.1");
	assert_null(policy_check_setup(&p, &s));
}

static void
test_pod(void **state)
{
	struct netd_policy p;
	struct msg_netd_pod_rule r;

	(void)state;
	make_policy(&p);
	declare(&p, ENI1, 101);
	memset(&r, 0, sizeof(r));
	r.addr = ipa("10.0.16.9");
	r.table = 0;
	assert_null(policy_check_pod(&p, &r, true));
	r.table = 101;
	assert_null(policy_check_pod(&p, &r, true));
	r.table = 102;					/* in range, unbound */
	assert_non_null(policy_check_pod(&p, &r, true));
	assert_null(policy_check_pod(&p, &r, false));
	r.table = 254;
	assert_non_null(policy_check_pod(&p, &r, true));
	assert_non_null(policy_check_pod(&p, &r, false));
	r.table = 255;
	assert_non_null(policy_check_pod(&p, &r, false));
	r.table = 300;
	assert_non_null(policy_check_pod(&p, &r, false));
	r.table = 101;
	r.addr = ipa("172.16.0.1");
	assert_non_null(policy_check_pod(&p, &r, true));
	assert_non_null(policy_check_pod(&p, &r, false));
	r.addr = ipa("0.0.0.0");
	assert_non_null(policy_check_pod(&p, &r, true));
	/* IPv6, even with an IPv4 pod's bytes: in no VPC block yet */
	r.addr = ipa("a00:1009::");
	assert_string_equal(policy_check_pod(&p, &r, true),
	    "pod address outside the VPC CIDRs");
	assert_true(policy_prio_is_enid(&p, 512));
	assert_true(policy_prio_is_enid(&p, 1536));
	assert_false(policy_prio_is_enid(&p, 1024));
	assert_false(policy_prio_is_enid(&p, 0));
}

/* An address configured on any link is never a pod's; for an ENI setup
 * only on the ENI's own link (set up before: netd's own address). */
static void
test_addr_holder(void **state)
{
	(void)state;
	assert_non_null(policy_check_addr_holder(PRIMARY_IFINDEX, 0));
	assert_non_null(policy_check_addr_holder(1, 0));	/* lo */
	assert_non_null(policy_check_addr_holder(7, 0));
	assert_null(policy_check_addr_holder(7, 7));
	assert_non_null(policy_check_addr_holder(8, 7));
	assert_non_null(policy_check_addr_holder(PRIMARY_IFINDEX, 7));
}

/* The primary MAC of a policy must be one netd found itself. */
static void
test_primary(void **state)
{
	static const uint8_t FAKE[6] = { 0x02, 0xde, 0xad, 0xbe, 0xef, 0x01 };
	struct enid_config cfg;
	struct netd_policy p;
	struct netd_node n;

	(void)state;
	config_defaults(&cfg);
	policy_init(&p, &cfg);
	/* Nothing found: no MAC is acceptable. */
	assert_non_null(policy_check_primary(&p, PRIMARY));
	node_view(&n);
	assert_true(policy_node_merge(&p, &n));
	assert_false(policy_node_merge(&p, &n));	/* nothing new */
	assert_null(policy_check_primary(&p, PRIMARY));
	assert_null(policy_check_primary(&p, UPLINK2));	/* multipath */
	assert_non_null(policy_check_primary(&p, FAKE));
	assert_non_null(policy_check_primary(&p, ENI1));
	/* A link without a MAC (a tunnel) does not make the zero MAC one. */
	memset(&n, 0, sizeof(n));
	n.nlinks = 1;
	n.links[0].ifindex = 9;
	assert_true(policy_node_merge(&p, &n));
	assert_null(policy_node_link_by_mac(&p, (const uint8_t[6]){ 0 }));
	assert_non_null(policy_node_link_by_ifindex(&p, 9));
}

/*
 * The primary interface is never an ENI to netd: its MAC is a node link's
 * when the policy is taken (policy_set_vpc), and stays one whatever the
 * default route does later, so the node-link check refuses it everywhere.
 */
static void
test_primary_stays_a_node_link(void **state)
{
	static const char own[] = "MAC is one of the node's own links (the "
	    "main table's default route goes through it)";
	struct enid_config cfg;
	struct netd_policy p;
	struct msg_netd_policy m;
	struct netd_node n;
	struct msg_netd_eni e;
	struct msg_netd_setup_eni su;

	(void)state;
	config_defaults(&cfg);
	policy_init(&p, &cfg);
	memset(&m, 0, sizeof(m));
	memcpy(m.primary_mac, PRIMARY, 6);
	m.ncidrs = 1;
	m.cidrs[0].addr = ipa("10.0.0.0");
	m.cidrs[0].len = 16;
	/* No default route found yet: no primary MAC is taken. */
	assert_non_null(policy_set_vpc(&p, &m));
	assert_false(p.vpc_set);
	/* The default route through eth1 only: eth0's MAC is not taken as
	 * the primary one either. */
	node_view(&n);
	n.nlinks = 1;
	n.links[0] = n.links[1];
	assert_true(policy_node_merge(&p, &n));
	assert_non_null(policy_set_vpc(&p, &m));
	assert_false(p.vpc_set);
	node_view(&n);
	assert_true(policy_node_merge(&p, &n));
	assert_null(policy_set_vpc(&p, &m));
	/* The default route leaves eth0 for good: eth0 stays the node's. */
	node_view(&n);
	n.nlinks = 1;
	n.links[0] = n.links[1];
	n.links[0].ifindex = 42;
	n.links[0].mac[5] = 0x42;
	assert_true(policy_node_merge(&p, &n));
	memset(&e, 0, sizeof(e));
	memcpy(e.mac, PRIMARY, 6);
	e.table = 101;
	assert_string_equal(policy_check_declare(&p, &e), own);
	su = setup_req(PRIMARY, 101);
	assert_non_null(policy_check_setup(&p, &su));
	assert_non_null(policy_check_link(&p, 77, PRIMARY));
	/* Forgetting checks no node link: it names the primary itself. */
	assert_string_equal(policy_check_forget(&p, &e),
	    "MAC is the primary interface's");
}

/* The node's view only grows; past its size every change is refused. */
static void
test_node_merge(void **state)
{
	struct netd_policy p;
	struct netd_node n;
	struct msg_netd_pod_rule r = { .table = 0 };
	uint32_t i;

	(void)state;
	make_policy(&p);
	/* The default route moved to eth1 only: eth0 stays protected. */
	memset(&n, 0, sizeof(n));
	n.nlinks = 1;
	n.links[0] = p.node.links[1];
	assert_false(policy_node_merge(&p, &n));
	assert_non_null(policy_node_link_by_mac(&p, PRIMARY));
	assert_true(policy_node_has_addr(&p, ipp(PRIMARY_IP)));
	/* eth0's MAC changed: both MACs are the node's. */
	n.links[0] = p.node.links[0];
	n.links[0].mac[5] = 0x99;
	assert_true(policy_node_merge(&p, &n));
	assert_non_null(policy_node_link_by_mac(&p, PRIMARY));
	assert_non_null(policy_node_link_by_mac(&p, n.links[0].mac));

	memset(&n, 0, sizeof(n));
	for (i = 0; i < NETD_MAX_NODE_ADDRS; i++)
		n.addrs[n.naddrs++] = ip_addr_from_in(htonl(0x0a000100u + i));
	assert_true(policy_node_merge(&p, &n));
	assert_true(p.node.overflow);
	assert_int_equal(p.node.naddrs, NETD_MAX_NODE_ADDRS);
	r.addr = ipa("10.0.9.9");
	assert_non_null(policy_check_pod(&p, &r, true));
	assert_non_null(policy_check_pod(&p, &r, false));
}

/* A link's default gateway is the latest one found; a scan that finds
 * none (the route briefly gone) keeps it. */
static void
test_node_gateway(void **state)
{
	struct netd_policy p;
	struct netd_node n;

	(void)state;
	make_policy(&p);
	assert_int_equal(policy_node_link_by_mac(&p, PRIMARY)->gateway.family,
	    0);
	node_view(&n);
	n.links[0].gateway = ipa("10.0.0.1");
	assert_true(policy_node_merge(&p, &n));
	assert_true(ip_addr_eq(&policy_node_link_by_mac(&p, PRIMARY)->gateway,
	    ipp("10.0.0.1")));
	assert_int_equal(policy_node_link_by_mac(&p, UPLINK2)->gateway.family,
	    0);
	assert_false(policy_node_merge(&p, &n));	/* nothing new */
	n.links[0].gateway = NO_ADDR;
	assert_false(policy_node_merge(&p, &n));
	assert_true(ip_addr_eq(&policy_node_link_by_mac(&p, PRIMARY)->gateway,
	    ipp("10.0.0.1")));
	n.links[0].gateway = ipa("10.0.0.254");
	assert_true(policy_node_merge(&p, &n));
	assert_true(ip_addr_eq(&policy_node_link_by_mac(&p, PRIMARY)->gateway,
	    ipp("10.0.0.254")));
	assert_int_equal(p.node.nlinks, 2);		/* no new link */
}

/* Whatever the policy says, the node's own links and addresses. */
static void
test_own_links_refused(void **state)
{
	struct netd_policy p;
	struct msg_netd_eni e;
	struct msg_netd_find_link f;
	struct msg_netd_setup_eni s;
	struct msg_netd_pod_rule r;
	struct netd_node n;

	(void)state;
	make_policy(&p);
	memset(&e, 0, sizeof(e));
	memcpy(e.mac, UPLINK2, 6);
	e.table = 101;
	assert_non_null(policy_check_declare(&p, &e));
	memset(&f, 0, sizeof(f));
	memcpy(f.mac, UPLINK2, 6);
	assert_non_null(policy_check_find_link(&p, &f));
	s = setup_req(UPLINK2, 101);
	assert_non_null(policy_check_setup(&p, &s));
	assert_non_null(policy_check_teardown(&p, &s));

	/* An ENI's setup or teardown naming a node address. */
	declare(&p, ENI1, 101);
	s = setup_req(ENI1, 101);
	s.addr.addr = ipa(UPLINK2_IP);
	s.gateway = ipa("10.0.4.1");
	assert_non_null(policy_check_setup(&p, &s));
	assert_non_null(policy_check_teardown(&p, &s));
	s.addr.addr = ipa("10.0.4.21");
	assert_null(policy_check_setup(&p, &s));

	/* Pod rules for the node's addresses, either way. */
	memset(&r, 0, sizeof(r));
	r.addr = ipa(PRIMARY_IP);
	assert_non_null(policy_check_pod(&p, &r, true));
	assert_non_null(policy_check_pod(&p, &r, false));
	r.table = 101;
	assert_non_null(policy_check_pod(&p, &r, true));

	/* A link found for a declared MAC that is the node's by ifindex. */
	assert_non_null(policy_check_link(&p, PRIMARY_IFINDEX, ENI1));
	assert_non_null(policy_check_link(&p, 7, PRIMARY));
	assert_null(policy_check_link(&p, 7, ENI1));

	/* ENI1 becomes the node's own later (a default route through it):
	 * from then on nothing may use it. */
	memset(&n, 0, sizeof(n));
	n.nlinks = 1;
	n.links[0].ifindex = 7;
	memcpy(n.links[0].mac, ENI1, 6);
	assert_true(policy_node_merge(&p, &n));
	s = setup_req(ENI1, 101);
	assert_non_null(policy_check_setup(&p, &s));
	r.addr = ipa("10.0.16.9");
	r.table = 101;
	assert_non_null(policy_check_pod(&p, &r, true));
	assert_null(policy_check_pod(&p, &r, false));	/* cleanup allowed */
	assert_non_null(policy_check_link(&p, 7, ENI1));
}

static void
test_pod_cap(void **state)
{
	struct enid_config cfg;
	struct netd_policy p;

	(void)state;
	config_defaults(&cfg);
	assert_int_equal(policy_pod_cap(&cfg), NETD_MAX_ENIS *
	    NETD_PODS_PER_ENI);
	cfg.pool.max_enis = 4;
	assert_int_equal(policy_pod_cap(&cfg), 4 * NETD_PODS_PER_ENI);
	/* prefixes: 16 of 16 addresses an ENI, so 250 pods fit on 3 */
	cfg.pool.prefix_delegation = true;
	cfg.pool.max_enis = 3;
	assert_int_equal(policy_pod_cap(&cfg), 3 * 256);
	cfg.pool.prefix_delegation = false;
	cfg.pool.max_enis = 4;
	cfg.pool.max_pods = 17;
	assert_int_equal(policy_pod_cap(&cfg), 17);
	policy_init(&p, &cfg);
	assert_null(policy_check_pod_count(&p, 0, false));
	assert_null(policy_check_pod_count(&p, 16, false));
	assert_non_null(policy_check_pod_count(&p, 17, false));
	assert_non_null(policy_check_pod_count(&p, 18, false));
	/* A pod that has its rules already may be re-added at the cap. */
	assert_null(policy_check_pod_count(&p, 17, true));
}

static struct nd_ifaddr
ifaddr4(uint32_t ifindex, const char *a, uint8_t prefix, uint8_t proto)
{
	struct nd_ifaddr x;

	memset(&x, 0, sizeof(x));
	x.ifindex = ifindex;
	x.addr.addr = ipa(a);
	x.addr.len = prefix;
	x.proto = proto;
	return x;
}

static void
test_bare(void **state)
{
	struct nd_link_state st;
	struct nd_link_route *r;
	char detail[160];

	(void)state;
	memset(&st, 0, sizeof(st));
	st.ifindex = 7;
	assert_null(policy_check_bare(&st, detail, sizeof(detail)));
	/* The kernel's own: the IPv6 link-local address, routes from it. */
	st.addrs[0].ifindex = 7;
	st.addrs[0].addr.addr.family = NETD_AF_INET6;
	st.addrs[0].addr.len = 64;
	st.addrs[0].addr.addr.bytes[0] = 0xfe;
	st.addrs[0].addr.addr.bytes[1] = 0x80;
	st.naddrs = 1;
	r = &st.routes[st.nroutes++];
	r->dst.addr.family = NETD_AF_INET6;
	r->table = 254;
	r->protocol = NETD_RTPROT_KERNEL;
	r->dst.addr.bytes[0] = 0xfe;
	r->dst.addr.bytes[1] = 0x80;
	r->dst.len = 64;
	assert_null(policy_check_bare(&st, detail, sizeof(detail)));
	/* What netd set up before (a restart): tagged. */
	st.addrs[st.naddrs++] = ifaddr4(7, "10.0.16.5", 20, NETD_PROTO);
	r = &st.routes[st.nroutes++];
	r->dst.addr.family = NETD_AF_INET;
	r->table = 101;
	r->protocol = NETD_PROTO;
	assert_null(policy_check_bare(&st, detail, sizeof(detail)));

	/* Someone else's address: DHCP, ip addr add, a SLAAC address. */
	st.addrs[st.naddrs++] = ifaddr4(7, "192.168.5.5", 24, 0);
	assert_non_null(policy_check_bare(&st, detail, sizeof(detail)));
	assert_non_null(strstr(detail, "192.168.5.5/24"));
	st.naddrs--;
	st.addrs[st.naddrs] = st.addrs[0];
	st.addrs[st.naddrs].addr.addr.bytes[0] = 0x20;	/* 2000::/3 */
	st.addrs[st.naddrs].addr.addr.bytes[1] = 0;
	st.addrs[st.naddrs++].proto = 2;	/* IFA_PROTO_KERNEL_RA */
	assert_non_null(policy_check_bare(&st, detail, sizeof(detail)));
	assert_non_null(strstr(detail, "2000::"));
	st.naddrs--;
	/* Someone else's route: boot, static, dhcp, ra. */
	r = &st.routes[st.nroutes++];
	r->dst.addr.family = NETD_AF_INET;
	r->table = 254;
	r->protocol = 3;
	assert_non_null(policy_check_bare(&st, detail, sizeof(detail)));
	assert_non_null(strstr(detail, "0.0.0.0/0 table 254 proto 3"));
	st.nroutes--;
	assert_null(policy_check_bare(&st, detail, sizeof(detail)));
	/* A bond or bridge member or master, a link sharing its MAC with
	 * another (a macvlan or VLAN on it), or more than netd judges. */
	st.enslaved = true;
	assert_non_null(policy_check_bare(&st, detail, sizeof(detail)));
	st.enslaved = false;
	st.master = true;
	assert_non_null(policy_check_bare(&st, detail, sizeof(detail)));
	st.master = false;
	st.same_mac = 1;
	assert_non_null(policy_check_bare(&st, detail, sizeof(detail)));
	st.same_mac = 0;
	assert_null(policy_check_bare(&st, detail, sizeof(detail)));
	st.overflow = true;
	assert_non_null(policy_check_bare(&st, detail, sizeof(detail)));
}

/* ---- randomized: each check against a restatement of its rule ---- */

#define RAND_SEED	0x5eed0e1du
#define RAND_CASES	20000

static uint32_t rng_state;

/* xorshift32: small, and the same sequence on every machine. */
static uint32_t
rnd(void)
{
	uint32_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return rng_state = x;
}

/* Both outcomes must be common, or a case generator went blind. */
static void
assert_mixed(const char *what, int accepted, int cases)
{
	if (accepted < cases / 20 || accepted > cases - cases / 20)
		fail_msg("%s: %d of %d cases accepted; the generator misses "
		    "one side", what, accepted, cases);
}

static uint32_t
rnd_below(uint32_t n)
{
	return rnd() % n;
}

/* MACs from a small pool, so that collisions with the primary, the
 * node's links and declared ENIs are common. */
static void
rnd_mac(uint8_t mac[6])
{
	static const uint8_t *const pool[] = { PRIMARY, UPLINK2, ENI1, ENI2 };
	uint32_t k = rnd_below(8);

	if (k < 4) {
		memcpy(mac, pool[k], 6);
		return;
	}
	memset(mac, 0, 6);
	if (k == 4)
		return;				/* zero */
	/* The last byte names the MAC (the model's bindings go by it). */
	mac[0] = k == 5 ? 0x03 : 0x02;		/* multicast, or not */
	mac[5] = (uint8_t)(0x20 + rnd_below(6));
}

static uint32_t
rnd_table(void)
{
	static const uint32_t edge[] = { 0, 99, 100, 101, 102, 163, 164,
	    253, 254, 255, 0xffffffffu };

	if (rnd_below(2))
		return edge[rnd_below(sizeof(edge) / sizeof(edge[0]))];
	return 90 + rnd_below(90);
}

/* Addresses near the VPC's edges, the node's own, and anywhere. */
static uint32_t
rnd_addr(void)
{
	switch (rnd_below(7)) {
	case 0:
		return ip(PRIMARY_IP);
	case 1:
		return ip(UPLINK2_IP);
	case 2:
		return htonl(0x0a000000u | rnd_below(0x10000));	/* VPC */
	case 3:
		return htonl(0x64400000u | rnd_below(0x10000));	/* VPC */
	case 4:
		return htonl(0x0a010000u | rnd_below(0x10000));	/* next */
	case 5:
		return htonl(0x0a00ff00u + rnd_below(0x200));	/* edge */
	default:
		return rnd();
	}
}

static bool
unicast(const uint8_t mac[6])
{
	static const uint8_t zero[6];

	return memcmp(mac, zero, 6) != 0 && (mac[0] & 1) == 0;
}

static bool
node_mac(const uint8_t mac[6])
{
	return memcmp(mac, PRIMARY, 6) == 0 || memcmp(mac, UPLINK2, 6) == 0;
}

static bool
in_vpc(uint32_t a)
{
	uint32_t h = ntohl(a);

	return (h & 0xffff0000u) == 0x0a000000u ||
	    (h & 0xffff0000u) == 0x64400000u;
}

static bool
node_addr(uint32_t a)
{
	return a == ip(PRIMARY_IP) || a == ip(UPLINK2_IP);
}

static bool
table_ok(uint32_t t)
{
	return t >= 100 && t <= 163;
}

/* Declares and forgets in random order against a model of the bindings. */
static void
test_random_declare(void **state)
{
	struct netd_policy p;
	struct msg_netd_eni e;
	uint8_t bound_table[256];	/* by mac[5]: 0 unbound */
	bool want;
	int i, accepted = 0;

	(void)state;
	rng_state = RAND_SEED;
	make_policy(&p);
	memset(bound_table, 0, sizeof(bound_table));
	for (i = 0; i < RAND_CASES; i++) {
		bool table_taken = false;
		int k;

		memset(&e, 0, sizeof(e));
		rnd_mac(e.mac);
		/* Often the table a bound MAC has: re-declares, forgets. */
		e.table = bound_table[e.mac[5]] != 0 && rnd_below(2) ?
		    bound_table[e.mac[5]] : rnd_table();
		for (k = 0; k < 256; k++)
			if (bound_table[k] != 0 && bound_table[k] == e.table &&
			    k != e.mac[5])
				table_taken = true;
		if (rnd_below(3) == 0) {
			want = unicast(e.mac) && memcmp(e.mac, PRIMARY, 6) &&
			    (bound_table[e.mac[5]] == 0 ||
			    bound_table[e.mac[5]] == e.table);
			assert_int_equal(policy_check_forget(&p, &e) == NULL,
			    want);
			if (want) {
				policy_forget(&p, &e);
				bound_table[e.mac[5]] = 0;
			}
			continue;
		}
		want = unicast(e.mac) && !node_mac(e.mac) &&
		    table_ok(e.table) && !table_taken &&
		    (bound_table[e.mac[5]] == 0 ||
		    bound_table[e.mac[5]] == e.table);
		if ((policy_check_declare(&p, &e) == NULL) != want)
			fail_msg("case %d: declare %02x table %u: want %d", i,
			    e.mac[5], e.table, want);
		if (want) {
			policy_declare(&p, &e);
			bound_table[e.mac[5]] = (uint8_t)e.table;
			accepted++;
		}
	}
	assert_mixed("declare", accepted, RAND_CASES * 2 / 3);
}

/* Setups and teardowns of random ENIs, addresses, gateways and MTUs. */
static void
test_random_setup(void **state)
{
	static const uint8_t prefixes[] = { 0, 8, 15, 16, 17, 20, 24, 28, 31,
	    32, 33, 40 };
	struct netd_policy p;
	struct msg_netd_setup_eni s;
	bool common, want;
	int i, accepted = 0;

	(void)state;
	rng_state = RAND_SEED ^ 0x1234;
	make_policy(&p);
	declare(&p, ENI1, 101);
	declare(&p, ENI2, 102);
	for (i = 0; i < RAND_CASES; i++) {
		uint32_t net, h, k, addr, gw;
		uint8_t prefix;

		/* A plausible request, then zero to three fields spoilt. */
		memset(&s, 0, sizeof(s));
		memcpy(s.mac, rnd_below(2) ? ENI1 : ENI2, 6);
		s.table = s.mac[5] == ENI1[5] ? 101 : 102;
		addr = htonl((rnd_below(2) ? 0x0a000000u : 0x64400000u) |
		    rnd_below(0x10000));
		prefix = prefixes[3 + rnd_below(5)];
		net = ntohl(addr) & (0xffffffffu << (32 - prefix));
		gw = htonl(net | 1);
		s.mtu = 1500 + rnd_below(7000);
		for (k = rnd_below(4); k > 0; k--) {
			switch (rnd_below(6)) {
			case 0:
				rnd_mac(s.mac);
				break;
			case 1:
				s.table = rnd_table();
				break;
			case 2:
				addr = rnd_addr();
				break;
			case 3:
				prefix = prefixes[rnd_below(sizeof(prefixes))];
				break;
			case 4:
				net = prefix > 32 ? 0 : ntohl(addr) &
				    (prefix ? 0xffffffffu << (32 - prefix) :
				    0);
				h = prefix >= 32 ? 0 : rnd_below(prefix > 24 ?
				    1u << (32 - prefix) : 256);
				gw = rnd_below(2) ? htonl(net | h) :
				    rnd_addr();
				break;
			default:
				s.mtu = rnd_below(2) ? 570 + rnd_below(10) :
				    9210 + rnd_below(10);
				break;
			}
		}

		s.addr.addr = ip_addr_from_in(addr);
		s.addr.len = prefix;
		s.gateway = ip_addr_from_in(gw);

		common = unicast(s.mac) && !node_mac(s.mac) &&
		    ((memcmp(s.mac, ENI1, 6) == 0 && s.table == 101) ||
		    (memcmp(s.mac, ENI2, 6) == 0 && s.table == 102)) &&
		    prefix >= 16 && prefix <= 32 && in_vpc(addr) &&
		    !node_addr(addr);
		assert_int_equal(policy_check_teardown(&p, &s) == NULL, common);
		want = common && in_vpc(gw) &&
		    ((ntohl(gw) ^ ntohl(addr)) &
		    (prefix ? 0xffffffffu << (32 - prefix) : 0)) == 0 &&
		    gw != addr && s.mtu >= 576 && s.mtu <= 9216;
		if ((policy_check_setup(&p, &s) == NULL) != want)
			fail_msg("case %d: setup %02x table %u %08x/%u gw %08x "
			    "mtu %u: want %d", i, s.mac[5], s.table,
			    ntohl(addr), prefix, ntohl(gw), s.mtu, want);
		accepted += want;
	}
	assert_mixed("setup", accepted, RAND_CASES);
}

static void
test_random_pod(void **state)
{
	struct netd_policy p;
	struct msg_netd_pod_rule r;
	bool add, want;
	int i, accepted = 0;

	(void)state;
	rng_state = RAND_SEED ^ 0x5678;
	make_policy(&p);
	declare(&p, ENI1, 101);
	for (i = 0; i < RAND_CASES; i++) {
		uint32_t addr = rnd_addr();

		r.addr = ip_addr_from_in(addr);
		r.table = rnd_below(3) == 0 ? 0 : rnd_table();
		add = rnd_below(2);
		want = addr != 0 && in_vpc(addr) && !node_addr(addr) &&
		    (r.table == 0 || (table_ok(r.table) &&
		    (!add || r.table == 101)));
		if ((policy_check_pod(&p, &r, add) == NULL) != want)
			fail_msg("case %d: pod %s %08x table %u: want %d", i,
			    add ? "add" : "del", ntohl(addr), r.table, want);
		accepted += want;
	}
	assert_mixed("pod", accepted, RAND_CASES);
}

/* Random links: bare exactly when every address and route is netd's or
 * the kernel's link-local kind. */
static void
test_random_bare(void **state)
{
	struct nd_link_state st;
	char detail[160];
	bool want;
	uint32_t j;
	int i, accepted = 0;

	(void)state;
	rng_state = RAND_SEED ^ 0x9abc;
	for (i = 0; i < RAND_CASES; i++) {
		memset(&st, 0, sizeof(st));
		st.ifindex = 7;
		st.enslaved = rnd_below(20) == 0;
		want = !st.enslaved;
		st.naddrs = rnd_below(5);
		for (j = 0; j < st.naddrs; j++) {
			struct nd_ifaddr *a = &st.addrs[j];
			uint8_t *b = a->addr.addr.bytes;

			a->ifindex = 7;
			a->addr.addr.family = rnd_below(2) ? NETD_AF_INET :
			    NETD_AF_INET6;
			a->proto = rnd_below(3) ? NETD_PROTO :
			    (uint8_t)rnd_below(4);
			b[0] = rnd_below(2) ? 0xfe : (uint8_t)rnd();
			b[1] = rnd_below(2) ? 0x80 : (uint8_t)rnd();
			a->addr.len = a->addr.addr.family == NETD_AF_INET ?
			    24 : 64;
			/* netd's own of either family, and link-local */
			if (!(a->proto == NETD_PROTO ||
			    (a->addr.addr.family == NETD_AF_INET6 &&
			    b[0] == 0xfe && (b[1] & 0xc0) == 0x80)))
				want = false;
		}
		st.nroutes = rnd_below(6);
		for (j = 0; j < st.nroutes; j++) {
			struct nd_link_route *r = &st.routes[j];
			static const uint8_t protos[] = { 0, 2, 2, 3, 4, 9, 16,
			    NETD_PROTO, NETD_PROTO, NETD_PROTO };

			r->dst.addr.family = rnd_below(2) ? NETD_AF_INET :
			    NETD_AF_INET6;
			r->table = rnd_below(2) ? 254 : 100 + rnd_below(64);
			r->protocol = protos[rnd_below(sizeof(protos))];
			if (r->protocol != 2 && r->protocol != NETD_PROTO)
				want = false;
		}
		if (rnd_below(50) == 0) {
			st.overflow = true;
			want = false;
		}
		if ((policy_check_bare(&st, detail, sizeof(detail)) == NULL) !=
		    want)
			fail_msg("case %d: bare want %d (%s)", i, want, detail);
		accepted += want;
	}
	assert_mixed("bare", accepted, RAND_CASES);
}

/* Random views merged in turn: nothing once seen is lost, the arrays never
 * overrun, and overflow is set exactly when more were seen than fit. */
static void
test_random_node_merge(void **state)
{
	struct netd_policy p;
	struct netd_node n;
	struct enid_config cfg;
	uint32_t seen_links[4 * NETD_MAX_NODE_LINKS], nseen = 0;
	uint32_t j, k;
	int i, round;

	(void)state;
	rng_state = RAND_SEED ^ 0xdef0;
	for (round = 0; round < 200; round++) {
		config_defaults(&cfg);
		policy_init(&p, &cfg);
		nseen = 0;
		for (i = 0; i < 30; i++) {
			memset(&n, 0, sizeof(n));
			n.nlinks = rnd_below(4);
			for (j = 0; j < n.nlinks; j++) {
				/* ifindex and MAC move together here */
				n.links[j].ifindex = 1 + rnd_below(
				    2 * NETD_MAX_NODE_LINKS);
				n.links[j].mac[0] = 0x02;
				n.links[j].mac[5] = (uint8_t)n.links[j].ifindex;
				for (k = 0; k < nseen; k++)
					if (seen_links[k] == n.links[j].ifindex)
						break;
				if (k == nseen)
					seen_links[nseen++] =
					    n.links[j].ifindex;
			}
			(void)policy_node_merge(&p, &n);
			assert_true(p.node.nlinks <= NETD_MAX_NODE_LINKS);
			assert_int_equal(p.node.overflow,
			    nseen > NETD_MAX_NODE_LINKS);
			if (p.node.overflow)
				break;
			assert_int_equal(p.node.nlinks, nseen);
			for (k = 0; k < nseen; k++)
				assert_non_null(policy_node_link_by_ifindex(&p,
				    seen_links[k]));
		}
	}
}

/* ---- a pod's host route ---- */

#define VETH_IFINDEX	40

static void
route_req(struct msg_netd_pod_route *m, const char *addr, const char *dev)
{
	memset(m, 0, sizeof(*m));
	m->addr = ipa(addr);
	msg_strlcpy(m->dev, dev, sizeof(m->dev));
}

static void
pod_veth(struct nd_pod_link *l)
{
	static const uint8_t mac[6] = { 0x0a, 0x58, 0, 0, 0, 0x40 };

	memset(l, 0, sizeof(*l));
	l->found = true;
	l->ifindex = VETH_IFINDEX;
	memcpy(l->mac, mac, 6);
	l->is_veth = true;
	l->peer_netns = true;
}

static struct nd_host_route
host_route(const char *dst, uint32_t ifindex, const char *gw)
{
	struct nd_host_route r;

	memset(&r, 0, sizeof(r));
	r.dst.addr = ipa(dst);
	r.dst.len = 32;
	r.type = NETD_ROUTE_UNICAST;
	r.scope = gw == NULL ? NETD_SCOPE_LINK : 0;
	if (gw != NULL)
		r.gateway = ipa(gw);
	r.ifindex = ifindex;
	return r;
}

static const char *
check_route(const struct netd_policy *p, const struct msg_netd_pod_route *m,
    bool rule, const struct nd_pod_link *l, const struct nd_host_route *r,
    size_t n, bool *present)
{
	char detail[64];

	return policy_check_pod_route(p, m, rule, l, r, n, present, detail,
	    sizeof(detail));
}

static void
test_pod_route(void **state)
{
	struct netd_policy p;
	struct msg_netd_pod_route m;
	struct msg_netd_eni e;
	struct nd_pod_link l;
	struct nd_host_route r[3];
	bool present;

	(void)state;
	make_policy(&p);
	pod_veth(&l);
	route_req(&m, "10.0.16.9", "enid1a2b3c4d5e6");
	assert_null(check_route(&p, &m, true, &l, NULL, 0, &present));
	assert_false(present);
	/* There already, exactly: nothing to do. */
	r[0] = host_route("10.0.16.9", VETH_IFINDEX, NULL);
	assert_null(check_route(&p, &m, true, &l, r, 1, &present));
	assert_true(present);
	/* Routes elsewhere that are not /32s through the veth don't count. */
	r[1] = host_route("10.0.16.10", VETH_IFINDEX + 1, NULL);
	r[2] = host_route("10.0.17.0", VETH_IFINDEX, NULL);
	r[2].dst.len = 24;
	assert_null(check_route(&p, &m, true, &l, r + 1, 2, &present));
	assert_false(present);

	/* Without netd's rule for the address: the broker's word only. */
	assert_non_null(check_route(&p, &m, false, &l, NULL, 0, &present));
	/* Addresses a pod may not have. */
	route_req(&m, "192.168.0.9", "enid1a2b3c4d5e6");
	assert_non_null(check_route(&p, &m, true, &l, NULL, 0, &present));
	route_req(&m, PRIMARY_IP, "enid1a2b3c4d5e6");
	assert_non_null(check_route(&p, &m, true, &l, NULL, 0, &present));
	/* Names no pod veth has. */
	route_req(&m, "10.0.16.9", "");
	assert_non_null(check_route(&p, &m, true, &l, NULL, 0, &present));
	route_req(&m, "10.0.16.9", "eth0:1");
	assert_non_null(check_route(&p, &m, true, &l, NULL, 0, &present));
	route_req(&m, "10.0.16.9", "Enid1a2b3c4d5e6");
	assert_non_null(check_route(&p, &m, true, &l, NULL, 0, &present));
	route_req(&m, "10.0.16.9", "enid1a2b3c4d5e6");

	/* The device: there, a veth, its peer elsewhere, no ENI or uplink. */
	l.found = false;
	assert_ptr_equal(check_route(&p, &m, true, &l, NULL, 0, &present),
	    policy_no_such_device);
	pod_veth(&l);
	l.is_veth = false;
	assert_non_null(check_route(&p, &m, true, &l, NULL, 0, &present));
	pod_veth(&l);
	l.peer_netns = false;
	assert_non_null(check_route(&p, &m, true, &l, NULL, 0, &present));
	pod_veth(&l);
	l.ifindex = PRIMARY_IFINDEX;
	assert_non_null(check_route(&p, &m, true, &l, NULL, 0, &present));
	pod_veth(&l);
	memcpy(l.mac, UPLINK2, 6);
	assert_non_null(check_route(&p, &m, true, &l, NULL, 0, &present));
	pod_veth(&l);
	memset(&e, 0, sizeof(e));
	memcpy(e.mac, l.mac, 6);
	e.table = 101;
	policy_declare(&p, &e);
	assert_non_null(check_route(&p, &m, true, &l, NULL, 0, &present));
	policy_forget(&p, &e);
	assert_null(check_route(&p, &m, true, &l, NULL, 0, &present));

	/* Never replaced or moved: through another link, via a gateway. */
	r[0] = host_route("10.0.16.9", VETH_IFINDEX + 1, NULL);
	assert_non_null(check_route(&p, &m, true, &l, r, 1, &present));
	assert_false(present);
	r[0] = host_route("10.0.16.9", VETH_IFINDEX, "10.0.0.1");
	assert_non_null(check_route(&p, &m, true, &l, r, 1, &present));
	r[0] = host_route("10.0.16.9", VETH_IFINDEX, NULL);
	r[0].multipath = true;
	assert_non_null(check_route(&p, &m, true, &l, r, 1, &present));
	/* One pod per veth, also when the pod's own route is there too. */
	r[0] = host_route("10.0.16.9", VETH_IFINDEX, NULL);
	r[1] = host_route("10.0.16.33", VETH_IFINDEX, NULL);
	assert_non_null(check_route(&p, &m, true, &l, r + 1, 1, &present));
	assert_non_null(check_route(&p, &m, true, &l, r, 2, &present));
	assert_false(present);
}

/* A route to the address of another kind (blackhole 6, unreachable 7,
 * prohibit 8, and the rest), at any metric, is a route to it: never
 * shadowed by a /32 of netd's, also beside the pod's own. */
static void
test_pod_route_other_kinds(void **state)
{
	static const struct {
		uint8_t type;
		const char *name;
	} kinds[] = {
		{ 6, "blackhole" }, { 7, "unreachable" }, { 8, "prohibit" },
		{ 9, "throw" }, { 2, "local" }, { 0, "unspec" },
		{ 200, "of an unknown type" },
	};
	static const uint32_t metrics[] = { 0, 50, 1024, UINT32_MAX };
	struct netd_policy p;
	struct msg_netd_pod_route m;
	struct nd_pod_link l;
	struct nd_host_route r[2];
	char detail[96], want[96];
	bool present;
	size_t i, j;

	(void)state;
	make_policy(&p);
	pod_veth(&l);
	route_req(&m, "10.0.16.9", "enid1a2b3c4d5e6");
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		for (j = 0; j < sizeof(metrics) / sizeof(metrics[0]); j++) {
			memset(&r[0], 0, sizeof(r[0]));
			r[0].dst.addr = ipa("10.0.16.9");
			r[0].dst.len = 32;
			r[0].type = kinds[i].type;
			r[0].metric = metrics[j];
			r[1] = host_route("10.0.16.9", VETH_IFINDEX, NULL);
			assert_string_equal(policy_check_pod_route(&p, &m,
			    true, &l, r, 1, &present, detail,
			    sizeof(detail)), "the address is routed already; "
			    "netd replaces no route");
			assert_false(present);
			snprintf(want, sizeof(want), "%s, metric %u",
			    kinds[i].name, metrics[j]);
			assert_string_equal(detail, want);
			/* the pod's own route there too changes nothing */
			assert_non_null(policy_check_pod_route(&p, &m, true,
			    &l, r, 2, &present, detail, sizeof(detail)));
			assert_false(present);
			/* nor one of another kind on the veth of another
			 * address: that is no pod's route (ifindex 0) */
			r[0].dst.addr = ipa("10.0.16.33");
			assert_null(check_route(&p, &m, true, &l, r, 1,
			    &present));
		}
	}
	/* A unicast route through another device names its metric. */
	r[0] = host_route("10.0.16.9", VETH_IFINDEX + 1, NULL);
	r[0].metric = 50;
	assert_non_null(policy_check_pod_route(&p, &m, true, &l, r, 1,
	    &present, detail, sizeof(detail)));
	assert_string_equal(detail, "ifindex 41, metric 50");
}

/* ---- IPv6 (issue 35) ---- */

#define VPC6		"2600:1f14:abc:100::"
#define NODE6		"2600:1f14:abc:100::10"

/* make_policy's, with VPC6/56 after the IPv4 blocks (and ula, if not
 * NULL, a /56 of its own) and NODE6 on the primary link. */
static void
make_policy6(struct netd_policy *p, const char *ula)
{
	struct enid_config cfg;
	struct msg_netd_policy m;
	struct netd_node n;

	config_defaults(&cfg);
	policy_init(p, &cfg);
	node_view(&n);
	n.addrs[n.naddrs++] = ipa(NODE6);
	assert_true(policy_node_merge(p, &n));
	memset(&m, 0, sizeof(m));
	memcpy(m.primary_mac, PRIMARY, 6);
	m.cidrs[m.ncidrs].addr = ipa("10.0.0.0");
	m.cidrs[m.ncidrs++].len = 16;
	m.cidrs[m.ncidrs].addr = ipa(VPC6);
	m.cidrs[m.ncidrs++].len = 56;
	if (ula != NULL) {
		m.cidrs[m.ncidrs].addr = ipa(ula);
		m.cidrs[m.ncidrs++].len = 56;
	}
	assert_null(policy_set_vpc(p, &m));
	assert_int_equal(p->ncidrs, ula ? 3 : 2);
	assert_int_equal(p->ncidrs4, 1);
}

static void
test_vpc_policy6(void **state)
{
	static const struct {
		const char	*net;
		uint8_t		 len;
		bool		 ok;
	} cases[] = {
		{ "2600:1f14:abc:100::", 56, true },
		{ "2600:1f14:ab0::", 44, true },
		{ "2600:1f14:abc:1f0::", 60, true },
		{ "fd12:3456:789a:100::", 56, true },	/* an IPAM ULA */
		{ "2600:1f14::", 40, false },		/* too wide */
		{ "2600:1f14:abc:100::", 64, false },	/* a subnet's */
		{ "2600:1f14:abc:101::", 56, false },	/* host bits */
		{ "fe80::", 56, false },
		{ "ff00::", 56, false },
		{ "64:ff9b::", 56, false },
		{ "fd00:ec2::", 56, false },		/* EC2's services */
		{ "fd00:ec2:10::", 44, false },	/* among them */
	};
	struct enid_config cfg;
	struct netd_policy p;
	struct msg_netd_policy m;
	struct netd_node n;
	size_t i;

	(void)state;
	config_defaults(&cfg);
	node_view(&n);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		policy_init(&p, &cfg);
		assert_true(policy_node_merge(&p, &n));
		memset(&m, 0, sizeof(m));
		memcpy(m.primary_mac, PRIMARY, 6);
		m.ncidrs = 2;
		m.cidrs[0].addr = ipa("10.0.0.0");
		m.cidrs[0].len = 16;
		m.cidrs[1].addr = ipa(cases[i].net);
		m.cidrs[1].len = cases[i].len;
		if ((policy_set_vpc(&p, &m) == NULL) != cases[i].ok)
			fail_msg("%s/%u", cases[i].net, cases[i].len);
	}
	/* IPv4 after IPv6, and IPv6 alone, are refused. */
	policy_init(&p, &cfg);
	assert_true(policy_node_merge(&p, &n));
	m.ncidrs = 2;
	m.cidrs[0].addr = ipa(VPC6);
	m.cidrs[0].len = 56;
	m.cidrs[1].addr = ipa("10.0.0.0");
	m.cidrs[1].len = 16;
	assert_string_equal(policy_set_vpc(&p, &m),
	    "VPC IPv4 CIDR after an IPv6 one");
	m.ncidrs = 1;
	assert_string_equal(policy_set_vpc(&p, &m), "no VPC CIDR, or too many");
}

static void
test_pod6(void **state)
{
	static const char *const refused[] = {
		"::", "::1", "::a00:1", "::ffff:0:a00:1", "fe80::5",
		"fe80:ec2::1", "ff02::1", "ff05::2", "64:ff9b::a00:1",
		"64:ff9b:1::5", "fd00:ec2::254", "fd00:ec2::253",
		"fd00:ec2::123", "fd12::5", "fc00::5", "2600:1f14:abd::5",
		"2001:db8::5", NODE6,
	};
	struct netd_policy p;
	struct msg_netd_pod_rule m;
	size_t i;

	(void)state;
	make_policy6(&p, NULL);
	declare(&p, ENI1, 101);
	memset(&m, 0, sizeof(m));
	m.addr = ipa("2600:1f14:abc:110::a");
	assert_null(policy_check_pod(&p, &m, true));
	m.table = 101;
	assert_null(policy_check_pod(&p, &m, true));
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		m.addr = ipa(refused[i]);
		/* ::ffff:0:a00:1 is never canonical: its bytes, as a
		 * kernel or a hostile peer might give them. */
		if (strcmp(refused[i], "::ffff:0:a00:1") == 0) {
			memset(&m.addr, 0, sizeof(m.addr));
			m.addr.family = AF_INET6;
			m.addr.bytes[10] = m.addr.bytes[11] = 0xff;
			m.addr.bytes[12] = 10;
			m.addr.bytes[15] = 1;
		}
		if (policy_check_pod(&p, &m, true) == NULL ||
		    policy_check_pod(&p, &m, false) == NULL)
			fail_msg("pod %s accepted", refused[i]);
	}
	m.addr = ipa("fd00:ec2::254");
	assert_string_equal(policy_check_pod(&p, &m, true),
	    "address is one of EC2's service addresses (IMDS, DNS, NTP at "
	    "fd00:ec2::)");
	m.addr = ipa("fd12::5");
	assert_string_equal(policy_check_pod(&p, &m, true),
	    "address is a unique local one (fc00::/7) outside the VPC's "
	    "blocks");

	/* A ULA of the VPC's own block is the VPC's; fd00:ec2:: never. */
	make_policy6(&p, "fd12:3456:789a:100::");
	m.table = 0;
	m.addr = ipa("fd12:3456:789a:100::9");
	assert_null(policy_check_pod(&p, &m, true));
	m.addr = ipa("fd12:3456:789a:200::9");
	assert_non_null(policy_check_pod(&p, &m, true));

	/* Without an IPv6 block, no IPv6 pod. */
	make_policy(&p);
	m.addr = ipa("2600:1f14:abc:110::a");
	assert_string_equal(policy_check_pod(&p, &m, true),
	    "pod address outside the VPC CIDRs");
}

static void
test_setup6(void **state)
{
	struct netd_policy p;
	struct msg_netd_setup_eni s;

	(void)state;
	make_policy6(&p, NULL);
	declare(&p, ENI1, 101);
	/* Dual-stack, IPv6-only, IPv4-only. */
	s = setup_req(ENI1, 101);
	s.addr6 = ipa("2600:1f14:abc:110::5");
	assert_null(policy_check_setup(&p, &s));
	assert_null(policy_check_teardown(&p, &s));
	memset(&s.addr, 0, sizeof(s.addr));
	memset(&s.gateway, 0, sizeof(s.gateway));
	assert_null(policy_check_setup(&p, &s));
	assert_null(policy_check_teardown(&p, &s));
	s.gateway = ipa("10.0.16.1");
	assert_string_equal(policy_check_setup(&p, &s),
	    "gateway without an IPv4 address");
	memset(&s.gateway, 0, sizeof(s.gateway));
	s.mtu = 1279;
	assert_non_null(policy_check_setup(&p, &s));
	s.mtu = 1280;
	assert_null(policy_check_setup(&p, &s));
	memset(&s.addr6, 0, sizeof(s.addr6));
	assert_string_equal(policy_check_setup(&p, &s),
	    "ENI has neither an IPv4 nor an IPv6 address");
	/* The ENI's IPv6 address gets the pods' checks. */
	s = setup_req(ENI1, 101);
	s.addr6 = ipa(NODE6);
	assert_non_null(policy_check_setup(&p, &s));
	assert_non_null(policy_check_teardown(&p, &s));
	s.addr6 = ipa("2600:1f14:abd::5");
	assert_non_null(policy_check_setup(&p, &s));
	s.addr6 = ipa("fd00:ec2::253");
	assert_non_null(policy_check_setup(&p, &s));
	s.addr6 = ipa("fe80::5");
	assert_non_null(policy_check_setup(&p, &s));
	s.addr6 = ipa("10.0.16.6");		/* IPv4 in the IPv6 field */
	assert_non_null(policy_check_setup(&p, &s));
}

/* An IPv6 host route as the kernel lists it: no scope (universe). */
static struct nd_host_route
host_route6(const char *dst, uint32_t ifindex)
{
	struct nd_host_route r = host_route(dst, ifindex, NULL);

	r.dst.len = 128;
	r.scope = 0;
	return r;
}

static void
test_pod_route6(void **state)
{
	struct netd_policy p;
	struct msg_netd_pod_route m;
	struct nd_pod_link l;
	struct nd_host_route r[3];
	bool present;

	(void)state;
	make_policy6(&p, NULL);
	pod_veth(&l);
	route_req(&m, "2600:1f14:abc:110::a", "enid1a2b3c4d5e6");
	assert_null(check_route(&p, &m, true, &l, NULL, 0, &present));
	assert_false(present);
	r[0] = host_route6("2600:1f14:abc:110::a", VETH_IFINDEX);
	assert_null(check_route(&p, &m, true, &l, r, 1, &present));
	assert_true(present);
	/* A dual-stack pod's veth carries its /32 too: no other pod's. */
	r[1] = host_route("10.0.16.9", VETH_IFINDEX, NULL);
	assert_null(check_route(&p, &m, true, &l, r, 2, &present));
	assert_true(present);
	route_req(&m, "10.0.16.9", "enid1a2b3c4d5e6");
	assert_null(check_route(&p, &m, true, &l, r, 2, &present));
	assert_true(present);
	/* Another pod's /128 on the veth. */
	route_req(&m, "2600:1f14:abc:110::b", "enid1a2b3c4d5e6");
	assert_string_equal(check_route(&p, &m, true, &l, r, 1, &present),
	    "the device carries another pod's host route");
	/* Routed already elsewhere, or as a blackhole. */
	r[2] = host_route6("2600:1f14:abc:110::b", VETH_IFINDEX + 1);
	assert_string_equal(check_route(&p, &m, true, &l, r + 2, 1,
	    &present), "the address is routed already; netd replaces no "
	    "route");
	r[2].ifindex = 0;
	r[2].type = 6;			/* RTN_BLACKHOLE */
	assert_non_null(check_route(&p, &m, true, &l, r + 2, 1, &present));
	/* Special and outside addresses. */
	route_req(&m, "fe80::5", "enid1a2b3c4d5e6");
	assert_non_null(check_route(&p, &m, true, &l, NULL, 0, &present));
	route_req(&m, "fd00:ec2::254", "enid1a2b3c4d5e6");
	assert_non_null(check_route(&p, &m, true, &l, NULL, 0, &present));
	route_req(&m, NODE6, "enid1a2b3c4d5e6");
	assert_non_null(check_route(&p, &m, true, &l, NULL, 0, &present));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vpc_policy),
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_declare),
		cmocka_unit_test(test_before_policy),
		cmocka_unit_test(test_find_link),
		cmocka_unit_test(test_setup),
		cmocka_unit_test(test_pod),
		cmocka_unit_test(test_addr_holder),
		cmocka_unit_test(test_primary),
		cmocka_unit_test(test_primary_stays_a_node_link),
		cmocka_unit_test(test_node_merge),
		cmocka_unit_test(test_node_gateway),
		cmocka_unit_test(test_own_links_refused),
		cmocka_unit_test(test_pod_cap),
		cmocka_unit_test(test_bare),
		cmocka_unit_test(test_random_declare),
		cmocka_unit_test(test_random_setup),
		cmocka_unit_test(test_random_pod),
		cmocka_unit_test(test_random_bare),
		cmocka_unit_test(test_random_node_merge),
		cmocka_unit_test(test_pod_route),
		cmocka_unit_test(test_pod_route_other_kinds),
		cmocka_unit_test(test_vpc_policy6),
		cmocka_unit_test(test_pod6),
		cmocka_unit_test(test_setup6),
		cmocka_unit_test(test_pod_route6),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
