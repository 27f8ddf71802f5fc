/*
 * Planning netd's rules and routes: the operations each request turns
 * into, given what the kernel holds (netd's tagged objects, and foreign
 * ones that must be left alone), and the link lookup schedule.  Pure.
 */
#include <endian.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "addr.h"
#include "conf.h"
#include "plan.h"
#include "policy.h"
#include "testaddr.h"

/* A, or from or to all (0.0.0.0/0), with length len. */
static struct ip_prefix
pfx(const char *a, uint8_t len)
{
	struct ip_prefix p;

	memset(&p, 0, sizeof(p));
	p.addr = ipa(a ? a : "0.0.0.0");
	p.len = len;
	return p;
}

static void
make_policy(struct netd_policy *p)
{
	struct enid_config cfg;

	config_defaults(&cfg);
	policy_init(p, &cfg);		/* priorities 512 and 1536 */
}

static struct nd_rule
rule(uint32_t prio, uint32_t table, const char *src, uint8_t src_len,
    const char *dst, uint8_t dst_len)
{
	struct nd_rule r;

	memset(&r, 0, sizeof(r));
	r.priority = prio;
	r.table = table;
	r.src = pfx(src, src_len);
	r.dst = pfx(dst, dst_len);
	r.protocol = NETD_PROTO;
	return r;
}

/* The same rule as someone else might have it: untagged, or tagged but
 * with a selector netd never sets. */
static struct nd_rule
foreign(struct nd_rule r, bool tagged)
{
	if (tagged)
		r.other_selectors = true;
	else
		r.protocol = 0;
	return r;
}

static struct nd_ifaddr
ifaddr(uint32_t ifindex, const char *a, uint8_t prefix, uint8_t proto)
{
	struct nd_ifaddr x;

	memset(&x, 0, sizeof(x));
	x.ifindex = ifindex;
	x.addr.addr = ipa(a);
	x.addr.len = prefix;
	x.proto = proto;
	return x;
}

/* SNAT off: an ENI's table as it always was. */
static const struct nd_egress no_snat;

/* eni()'s MAC's modified EUI-64 link-local address (the U/L bit flipped). */
#define LL6	"fe80::1a:2bff:fe3c:4d5e"

static struct msg_netd_setup_eni
eni(void)
{
	struct msg_netd_setup_eni s;

	static const uint8_t mac[6] = { 0x02, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e };

	memset(&s, 0, sizeof(s));
	memcpy(s.mac, mac, sizeof(s.mac));
	s.table = 101;
	s.addr.addr = ipa("10.0.16.5");
	s.addr.len = 20;
	s.gateway = ipa("10.0.16.1");
	s.mtu = 9001;
	return s;
}

static void
test_pod_rules(void **state)
{
	struct netd_policy p;
	struct nd_rule r[2];

	(void)state;
	make_policy(&p);
	assert_int_equal(plan_pod_rules(&p, ipp("10.0.1.7"), 0, r), 1);
	assert_int_equal(r[0].priority, 512);
	assert_int_equal(r[0].table, 254);
	assert_int_equal(ip_addr_in4(&r[0].dst.addr), ip("10.0.1.7"));
	assert_int_equal(r[0].dst.len, 32);
	assert_int_equal(r[0].src.len, 0);
	assert_int_equal(r[0].protocol, NETD_PROTO);
	assert_false(r[0].other_selectors);
	assert_true(plan_rule_owned(&p, &r[0]));
	assert_true(plan_rule_is_pod_to(&p, &r[0]));
	assert_int_equal(plan_pod_rules(&p, ipp("10.0.1.7"), 101, r), 2);
	assert_int_equal(r[1].protocol, NETD_PROTO);
	assert_false(plan_rule_is_pod_to(&p, &r[1]));
	assert_int_equal(r[1].priority, 1536);
	assert_int_equal(r[1].table, 101);
	assert_int_equal(ip_addr_in4(&r[1].src.addr), ip("10.0.1.7"));
	assert_int_equal(r[1].src.len, 32);
	assert_int_equal(r[1].dst.len, 0);
}

static void
test_pod_add_fresh(void **state)
{
	struct netd_policy p;
	struct nd_plan plan;
	struct msg_netd_pod_rule m = { .table = 101 };

	(void)state;
	make_policy(&p);
	m.addr = ipa("10.0.16.9");
	assert_int_equal(plan_pod_add(&p, &m, NULL, 0, &plan), 0);
	assert_int_equal(plan.nops, 2);
	assert_int_equal(plan.ops[0].kind, OP_RULE_ADD);
	assert_int_equal(plan.ops[0].u.rule.priority, 512);
	assert_int_equal(plan.ops[1].kind, OP_RULE_ADD);
	assert_int_equal(plan.ops[1].u.rule.priority, 1536);
	assert_int_equal(plan.ops[1].u.rule.table, 101);
}

static void
test_pod_add_idempotent(void **state)
{
	struct netd_policy p;
	struct nd_plan plan;
	struct msg_netd_pod_rule m = { .table = 101 };
	struct nd_rule cur[4];

	(void)state;
	make_policy(&p);
	m.addr = ipa("10.0.16.9");
	cur[0] = rule(512, 254, NULL, 0, "10.0.16.9", 32);
	cur[1] = rule(1536, 101, "10.0.16.9", 32, NULL, 0);
	/* Other pods' rules and foreign priorities are left alone. */
	cur[2] = rule(1536, 102, "10.0.16.10", 32, NULL, 0);
	cur[3] = rule(1000, 101, "10.0.16.9", 32, NULL, 0);
	assert_int_equal(plan_pod_add(&p, &m, cur, 4, &plan), 0);
	assert_int_equal(plan.nops, 0);
}

static void
test_pod_add_moves_table(void **state)
{
	struct netd_policy p;
	struct nd_plan plan;
	struct msg_netd_pod_rule m = { .table = 102 };
	struct nd_rule cur[2];

	(void)state;
	make_policy(&p);
	m.addr = ipa("10.0.16.9");
	cur[0] = rule(512, 254, NULL, 0, "10.0.16.9", 32);
	cur[1] = rule(1536, 101, "10.0.16.9", 32, NULL, 0);
	assert_int_equal(plan_pod_add(&p, &m, cur, 2, &plan), 0);
	assert_int_equal(plan.nops, 2);
	/* Add the new one before removing the stale one. */
	assert_int_equal(plan.ops[0].kind, OP_RULE_ADD);
	assert_int_equal(plan.ops[0].u.rule.table, 102);
	assert_int_equal(plan.ops[1].kind, OP_RULE_DEL);
	assert_int_equal(plan.ops[1].u.rule.table, 101);

	/* To the primary ENI: the from-rule goes. */
	m.table = 0;
	assert_int_equal(plan_pod_add(&p, &m, cur, 2, &plan), 0);
	assert_int_equal(plan.nops, 1);
	assert_int_equal(plan.ops[0].kind, OP_RULE_DEL);
	assert_int_equal(plan.ops[0].u.rule.priority, 1536);
}

/* A dual-stack pod's request: both addresses' rules in one plan, the
 * adds first; a move and a delete take both families' stale ones and no
 * other pod's. */
static void
test_pod_dual(void **state)
{
	struct netd_policy p;
	struct nd_plan plan;
	struct msg_netd_pod_rule m = { .table = 101 };
	struct nd_rule cur[6];
	size_t n;

	(void)state;
	make_policy(&p);
	m.addr = ipa("10.0.16.9");
	m.addr6 = ipa("2600:1f14:abc:110::a");
	assert_int_equal(plan_pod_add(&p, &m, NULL, 0, &plan), 0);
	assert_int_equal(plan.nops, 4);
	for (n = 0; n < 4; n++)
		assert_int_equal(plan.ops[n].kind, OP_RULE_ADD);
	assert_int_equal(plan.ops[2].u.rule.dst.addr.family, AF_INET6);
	assert_int_equal(plan.ops[3].u.rule.src.addr.family, AF_INET6);

	/* What it made, and another pod's: in place, nothing to do. */
	n = plan_pod_rules(&p, &m.addr, 101, cur);
	n += plan_pod_rules(&p, &m.addr6, 101, cur + n);
	n += plan_pod_rules(&p, ipp("2600:1f14:abc:110::b"), 101, cur + n);
	assert_int_equal(n, 6);
	assert_int_equal(plan_pod_add(&p, &m, cur, n, &plan), 0);
	assert_int_equal(plan.nops, 0);

	/* Moved to table 102: two adds, then both families' stale
	 * from-rules go. */
	m.table = 102;
	assert_int_equal(plan_pod_add(&p, &m, cur, n, &plan), 0);
	assert_int_equal(plan.nops, 4);
	assert_int_equal(plan.ops[0].kind, OP_RULE_ADD);
	assert_int_equal(plan.ops[1].kind, OP_RULE_ADD);
	assert_int_equal(plan.ops[2].kind, OP_RULE_DEL);
	assert_int_equal(plan.ops[2].u.rule.src.addr.family, AF_INET);
	assert_int_equal(plan.ops[3].kind, OP_RULE_DEL);
	assert_int_equal(plan.ops[3].u.rule.src.addr.family, AF_INET6);
	assert_int_equal(plan.ops[3].u.rule.table, 101);

	/* Deleted: its four, not the other pod's two. */
	assert_int_equal(plan_pod_del(&p, &m, cur, n, &plan), 0);
	assert_int_equal(plan.nops, 4);
}

static void
test_pod_del(void **state)
{
	struct netd_policy p;
	struct nd_plan plan;
	struct msg_netd_pod_rule m = { .table = 0 };
	struct nd_rule cur[4];

	(void)state;
	make_policy(&p);
	m.addr = ipa("10.0.16.9");
	assert_int_equal(plan_pod_del(&p, &m, NULL, 0, &plan), 0);
	assert_int_equal(plan.nops, 0);			/* nothing: done */
	cur[0] = rule(512, 254, NULL, 0, "10.0.16.9", 32);
	cur[1] = rule(1536, 101, "10.0.16.9", 32, NULL, 0);
	cur[2] = rule(512, 254, NULL, 0, "10.0.16.19", 32);
	cur[3] = rule(1536, 101, "10.0.16.0", 24, NULL, 0);
	/* Whatever table the broker names, every rule of the pod goes. */
	assert_int_equal(plan_pod_del(&p, &m, cur, 4, &plan), 0);
	assert_int_equal(plan.nops, 2);
	assert_int_equal(plan.ops[0].kind, OP_RULE_DEL);
	assert_int_equal(plan.ops[0].u.rule.priority, 512);
	assert_int_equal(plan.ops[1].kind, OP_RULE_DEL);
	assert_int_equal(plan.ops[1].u.rule.table, 101);
}

/*
 * Foreign rules at enid's priorities, for the same pod: untagged copies,
 * and tagged ones with an iif or fwmark, and a /24.  None is netd's: an
 * add does not count them as present, a delete never names them.
 */
static void
test_pod_foreign_rules(void **state)
{
	struct netd_policy p;
	struct nd_plan plan;
	struct msg_netd_pod_rule m = { .table = 101 };
	struct nd_rule cur[6];
	size_t i;

	(void)state;
	make_policy(&p);
	m.addr = ipa("10.0.16.9");
	cur[0] = foreign(rule(512, 254, NULL, 0, "10.0.16.9", 32), false);
	cur[1] = foreign(rule(1536, 101, "10.0.16.9", 32, NULL, 0), false);
	cur[2] = foreign(rule(512, 254, NULL, 0, "10.0.16.9", 32), true);
	cur[3] = foreign(rule(1536, 102, "10.0.16.9", 32, NULL, 0), true);
	cur[4] = foreign(rule(1536, 101, "10.0.16.0", 24, NULL, 0), false);
	cur[5] = rule(1536, 101, "10.0.16.0", 24, NULL, 0);	/* not a pod's */
	for (i = 0; i < 6; i++)
		assert_false(plan_rule_is_pods(&p, &cur[i], &m.addr));
	assert_false(plan_rule_owned(&p, &cur[0]));
	assert_false(plan_rule_owned(&p, &cur[2]));
	assert_false(plan_rule_is_pod_to(&p, &cur[0]));
	assert_false(plan_rule_is_pod_to(&p, &cur[2]));
	assert_true(plan_rule_owned(&p, &cur[5]));

	assert_int_equal(plan_pod_add(&p, &m, cur, 6, &plan), 0);
	assert_int_equal(plan.nops, 2);
	for (i = 0; i < plan.nops; i++) {
		assert_int_equal(plan.ops[i].kind, OP_RULE_ADD);
		assert_int_equal(plan.ops[i].u.rule.protocol, NETD_PROTO);
	}
	assert_int_equal(plan_pod_del(&p, &m, cur, 6, &plan), 0);
	assert_int_equal(plan.nops, 0);
	m.table = 102;
	assert_int_equal(plan_pod_add(&p, &m, cur, 6, &plan), 0);
	assert_int_equal(plan.nops, 2);
	assert_int_equal(plan.ops[1].u.rule.table, 102);
}

static void
test_setup_fresh(void **state)
{
	struct msg_netd_setup_eni s = eni();
	struct nd_plan plan;
	const struct nd_op *o;

	(void)state;
	assert_int_equal(plan_eni_setup(&s, 7, &no_snat, NULL, NULL, 0, &plan), 0);
	assert_int_equal(plan.nops, 4);
	o = plan.ops;
	assert_int_equal(o[0].kind, OP_LINK_UP);
	assert_int_equal(o[0].u.link.ifindex, 7);
	assert_int_equal(o[0].u.link.mtu, 9001);
	assert_int_equal(o[1].kind, OP_ADDR_ADD);
	assert_int_equal(ip_addr_in4(&o[1].u.addr.addr.addr), ip("10.0.16.5"));
	assert_int_equal(o[1].u.addr.addr.len, 20);
	assert_int_equal(o[1].u.addr.proto, NETD_PROTO);
	/* The gateway's on-link /32, then default via it, in table T. */
	assert_int_equal(o[2].kind, OP_ROUTE_ADD);
	assert_int_equal(o[2].u.route.table, 101);
	assert_int_equal(ip_addr_in4(&o[2].u.route.dst.addr), ip("10.0.16.1"));
	assert_int_equal(o[2].u.route.dst.len, 32);
	assert_int_equal(o[2].u.route.scope, PLAN_SCOPE_LINK);
	assert_int_equal(o[2].u.route.gateway.family, 0);
	assert_int_equal(o[2].u.route.ifindex, 7);
	assert_int_equal(o[2].u.route.protocol, NETD_PROTO);
	assert_int_equal(o[3].kind, OP_ROUTE_ADD);
	assert_int_equal(o[3].u.route.dst.len, 0);
	assert_int_equal(ip_addr_in4(&o[3].u.route.gateway), ip("10.0.16.1"));
	assert_int_equal(o[3].u.route.ifindex, 7);
	assert_int_equal(o[3].u.route.protocol, NETD_PROTO);
	/* Nothing in main: the address is added without a prefix route. */
}

/* What an answer says a set-up changed: 0 for an ENI in place. */
static void
test_setup_changes(void **state)
{
	struct msg_netd_setup_eni s = eni();
	struct nd_plan first, again;
	struct nd_route cur[2];
	struct nd_link_state link;
	uint32_t a = ip("10.0.16.5");

	(void)state;
	assert_int_equal(plan_eni_setup(&s, 7, &no_snat, NULL, NULL, 0, &first), 0);
	/* fresh: the address and both routes; the link's up is not told */
	assert_int_equal(plan_changes(&first, NULL), 3);
	memset(&link, 0, sizeof(link));
	link.ifindex = 7;
	link.naddrs = 1;
	link.addrs[0].ifindex = 7;
	link.addrs[0].addr.addr = ip_addr_from_in(a);
	link.addrs[0].addr.len = 20;
	link.addrs[0].proto = NETD_PROTO;
	cur[0] = first.ops[2].u.route;
	cur[1] = first.ops[3].u.route;
	assert_int_equal(plan_eni_setup(&s, 7, &no_snat, &link, cur, 2, &again), 0);
	assert_int_equal(plan_changes(&again, &link), 0);
	/* the table flushed: its two routes */
	assert_int_equal(plan_eni_setup(&s, 7, &no_snat, &link, NULL, 0, &again), 0);
	assert_int_equal(plan_changes(&again, &link), 2);
	/* the address gone, or another's (no tag), or another prefix */
	link.addrs[0].proto = 0;
	assert_int_equal(plan_eni_setup(&s, 7, &no_snat, &link, cur, 2, &again), 0);
	assert_int_equal(plan_changes(&again, &link), 1);
	link.addrs[0].proto = NETD_PROTO;
	link.addrs[0].addr.len = 24;
	assert_int_equal(plan_changes(&again, &link), 1);
}

static void
test_setup_again_and_stale(void **state)
{
	struct msg_netd_setup_eni s = eni();
	struct nd_plan first, again;
	struct nd_route cur[4];
	struct nd_link_state link;
	size_t i;

	(void)state;
	assert_int_equal(plan_eni_setup(&s, 7, &no_snat, NULL, NULL, 0, &first), 0);
	cur[0] = first.ops[2].u.route;
	cur[1] = first.ops[3].u.route;
	/* Setting up again changes no route. */
	assert_int_equal(plan_eni_setup(&s, 7, &no_snat, NULL, cur, 2, &again), 0);
	assert_int_equal(again.nops, 2);
	for (i = 0; i < again.nops; i++)
		assert_int_not_equal(again.ops[i].kind, OP_ROUTE_ADD);

	/* The same route, someone else's: netd's own goes in beside it, and
	 * the foreign one stays. */
	cur[0].protocol = 3;
	assert_int_equal(plan_eni_setup(&s, 7, &no_snat, NULL, cur, 2, &again), 0);
	assert_int_equal(again.nops, 3);
	assert_int_equal(again.ops[2].kind, OP_ROUTE_ADD);
	assert_int_equal(again.ops[2].u.route.dst.len, 32);
	assert_int_equal(again.ops[2].u.route.protocol, NETD_PROTO);
	cur[0].protocol = NETD_PROTO;

	/* A stale route of netd's in the table (an old link's) is removed,
	 * after the new ones are in; a foreign one is not. */
	memset(&cur[2], 0, sizeof(cur[2]));
	cur[2].table = 101;
	cur[2].dst.addr = ipa("10.0.32.0");
	cur[2].dst.len = 20;
	cur[2].ifindex = 5;
	cur[2].scope = PLAN_SCOPE_LINK;
	cur[2].protocol = NETD_PROTO;
	cur[3] = cur[2];
	cur[3].dst.addr = ipa("10.0.48.0");
	cur[3].protocol = 4;		/* static: someone else's */
	cur[1].ifindex = 5;		/* default via the old link */
	assert_int_equal(plan_eni_setup(&s, 7, &no_snat, NULL, cur, 4, &again), 0);
	assert_int_equal(again.ops[2].kind, OP_ROUTE_ADD);
	assert_int_equal(again.ops[2].u.route.dst.len, 0);
	assert_int_equal(again.ops[3].kind, OP_ROUTE_DEL);
	assert_int_equal(again.ops[3].u.route.ifindex, 5);
	assert_int_equal(again.ops[3].u.route.dst.len, 0);
	assert_int_equal(again.ops[4].kind, OP_ROUTE_DEL);
	assert_int_equal(ip_addr_in4(&again.ops[4].u.route.dst.addr),
	    ip("10.0.32.0"));
	assert_int_equal(again.ops[4].u.route.protocol, NETD_PROTO);
	assert_int_equal(again.nops, 5);

	/* netd's address from an earlier setup goes; the wanted one, an
	 * untagged one (never there on a link netd takes) and another
	 * link's are not deleted. */
	memset(&link, 0, sizeof(link));
	link.ifindex = 7;
	link.addrs[link.naddrs++] = ifaddr(7, "10.0.16.5", 20, NETD_PROTO);
	link.addrs[link.naddrs++] = ifaddr(7, "10.0.16.6", 20, NETD_PROTO);
	link.addrs[link.naddrs++] = ifaddr(7, "10.0.16.5", 24, NETD_PROTO);
	link.addrs[link.naddrs++] = ifaddr(7, "10.0.16.7", 20, 0);
	link.addrs[link.naddrs++] = ifaddr(8, "10.0.16.8", 20, NETD_PROTO);
	assert_int_equal(plan_eni_setup(&s, 7, &no_snat, &link, NULL, 0, &again), 0);
	assert_int_equal(again.nops, 6);
	assert_int_equal(again.ops[4].kind, OP_ADDR_DEL);
	assert_int_equal(ip_addr_in4(&again.ops[4].u.addr.addr.addr),
	    ip("10.0.16.6"));
	assert_int_equal(again.ops[5].kind, OP_ADDR_DEL);
	assert_int_equal(ip_addr_in4(&again.ops[5].u.addr.addr.addr),
	    ip("10.0.16.5"));
	assert_int_equal(again.ops[5].u.addr.addr.len, 24);
}

static void
test_teardown(void **state)
{
	struct netd_policy p;
	struct msg_netd_setup_eni s = eni();
	struct nd_plan first, plan;
	struct nd_route routes[4];
	struct nd_rule rules[5];
	struct nd_link_state link;

	(void)state;
	make_policy(&p);
	assert_int_equal(plan_eni_setup(&s, 7, &no_snat, NULL, NULL, 0, &first), 0);
	routes[0] = first.ops[2].u.route;
	routes[1] = first.ops[3].u.route;
	routes[2] = first.ops[3].u.route;
	routes[2].table = 102;		/* another ENI's: not ours to touch */
	routes[3] = first.ops[3].u.route;
	routes[3].protocol = 16;	/* dhcp: someone else's, in T */
	rules[0] = rule(1536, 101, "10.0.16.9", 32, NULL, 0);
	rules[1] = rule(1536, 102, "10.0.16.10", 32, NULL, 0);
	rules[2] = rule(512, 254, NULL, 0, "10.0.16.9", 32);
	rules[3] = foreign(rule(1536, 101, "10.0.16.11", 32, NULL, 0), false);
	rules[4] = foreign(rule(1536, 101, "10.0.16.12", 32, NULL, 0), true);
	memset(&link, 0, sizeof(link));
	link.ifindex = 7;
	link.addrs[link.naddrs++] = ifaddr(7, "10.0.16.5", 20, NETD_PROTO);

	assert_int_equal(plan_eni_teardown(&p, &s, 7, &link, routes, 4, rules,
	    5, &plan), 0);
	assert_int_equal(plan.nops, 5);
	assert_int_equal(plan.ops[0].kind, OP_RULE_DEL);
	assert_int_equal(plan.ops[0].u.rule.table, 101);
	assert_int_equal(ip_addr_in4(&plan.ops[0].u.rule.src.addr),
	    ip("10.0.16.9"));
	assert_int_equal(plan.ops[0].u.rule.protocol, NETD_PROTO);
	assert_int_equal(plan.ops[1].kind, OP_ROUTE_DEL);
	assert_int_equal(plan.ops[1].u.route.protocol, NETD_PROTO);
	assert_int_equal(plan.ops[2].kind, OP_ROUTE_DEL);
	assert_int_equal(plan.ops[2].u.route.table, 101);
	assert_int_equal(plan.ops[2].u.route.protocol, NETD_PROTO);
	assert_int_equal(plan.ops[3].kind, OP_ADDR_DEL);
	assert_int_equal(ip_addr_in4(&plan.ops[3].u.addr.addr.addr),
	    ip("10.0.16.5"));
	assert_int_equal(plan.ops[4].kind, OP_LINK_DOWN);

	/* The link is gone: only the table and its rules. */
	assert_int_equal(plan_eni_teardown(&p, &s, 0, NULL, routes, 4, rules,
	    5, &plan), 0);
	assert_int_equal(plan.nops, 3);
	/* Already torn down: nothing but the harmless link-down. */
	link.naddrs = 0;
	assert_int_equal(plan_eni_teardown(&p, &s, 7, &link, NULL, 0, NULL, 0,
	    &plan), 0);
	assert_int_equal(plan.nops, 1);
	assert_int_equal(plan.ops[0].kind, OP_LINK_DOWN);
}

static void
test_overflow(void **state)
{
	static struct nd_route many[PLAN_MAX_OPS + 1];
	struct msg_netd_setup_eni s = eni();
	struct nd_plan plan;
	size_t i;

	(void)state;
	for (i = 0; i < PLAN_MAX_OPS + 1; i++) {
		many[i].table = 101;
		many[i].dst.addr = ip_addr_from_in(htobe32(0x0a630000u +
		    (uint32_t)i));
		many[i].dst.len = 32;
		many[i].protocol = NETD_PROTO;
	}
	assert_int_equal(plan_eni_setup(&s, 7, &no_snat, NULL, many, PLAN_MAX_OPS + 1,
	    &plan), -1);
	/* Foreign ones are never planned for, however many. */
	for (i = 0; i < PLAN_MAX_OPS + 1; i++)
		many[i].protocol = 4;
	assert_int_equal(plan_eni_setup(&s, 7, &no_snat, NULL, many, PLAN_MAX_OPS + 1,
	    &plan), 0);
	assert_int_equal(plan.nops, 4);
}

/* ---- the connection-mark rule ---- */

static struct nd_rule
mark_rule(uint32_t prio, uint32_t table, uint32_t mark, uint32_t mask)
{
	struct nd_rule r = rule(prio, table, NULL, 0, NULL, 0);

	r.fwmark = mark;
	r.fwmask = mask;
	return r;
}

/* Exactly "fwmark M/M lookup main" at prio_to, tagged, is netd's; every
 * other rule with a fwmark is someone else's, tagged or not. */
static void
test_connmark_rule_owned(void **state)
{
	struct netd_policy p;
	struct nd_rule r, x[9];
	size_t i;

	(void)state;
	make_policy(&p);
	assert_int_equal(p.connmark, 0x80);		/* the default */
	plan_connmark_rule(&p, &r);
	assert_int_equal(r.priority, 512);
	assert_int_equal(r.table, 254);
	assert_int_equal(r.fwmark, 0x80);
	assert_int_equal(r.fwmask, 0x80);
	assert_int_equal(r.src.len, 0);
	assert_int_equal(r.dst.len, 0);
	assert_int_equal(r.protocol, NETD_PROTO);
	assert_false(r.other_selectors);
	assert_true(plan_rule_owned(&p, &r));
	assert_true(plan_rule_is_connmark(&p, &r));
	/* No pod's: not counted, never a pod's rule whatever the address. */
	assert_false(plan_rule_is_pod_to(&p, &r));
	assert_false(plan_rule_is_pods(&p, &r, ipp("0.0.0.0")));
	assert_false(plan_rule_is_pods(&p, &r, ipp("10.0.16.9")));

	x[0] = mark_rule(512, 254, 0x80, 0xff);		/* another mask */
	x[1] = mark_rule(512, 254, 0x80, 0xffffffff);	/* "fwmark 0x80" */
	x[2] = mark_rule(512, 254, 0, 0x80);		/* bit clear */
	x[3] = mark_rule(512, 100, 0x80, 0x80);		/* another table */
	x[4] = mark_rule(1536, 254, 0x80, 0x80);	/* another priority */
	x[5] = mark_rule(512, 254, 0x100, 0x100);	/* another bit */
	x[6] = mark_rule(512, 254, 0x80, 0x80);
	x[6].protocol = 0;				/* untagged */
	x[7] = mark_rule(512, 254, 0x80, 0x80);
	x[7].dst.addr = ipa("10.0.16.9");		/* and a pod's dst */
	x[7].dst.len = 32;
	x[8] = mark_rule(512, 254, 0x80, 0x80);
	x[8].other_selectors = true;			/* an iif, say */
	for (i = 0; i < 9; i++) {
		assert_false(plan_rule_owned(&p, &x[i]));
		assert_false(plan_rule_is_connmark(&p, &x[i]));
		assert_false(plan_rule_is_pod_to(&p, &x[i]));
		assert_false(plan_rule_is_pods(&p, &x[i], ipp("10.0.16.9")));
		assert_false(plan_rule_equal(&x[i], &r));
	}
}

/* The kernel matches a rule delete on what it names only: netd's "to POD"
 * also takes a tagged "to POD fwmark X", and a plan that could is caught. */
static void
test_rule_del_takes(void **state)
{
	struct netd_policy p;
	struct nd_plan plan;
	struct nd_rule pod, other[3], stale;
	struct msg_netd_pod_rule m;

	(void)state;
	make_policy(&p);
	pod = rule(512, 254, NULL, 0, "10.0.16.9", 32);
	other[0] = pod;
	other[0].fwmark = other[0].fwmask = 0x4;
	other[1] = pod;
	other[1].other_selectors = true;	/* iif, say */
	other[2] = pod;
	other[2].protocol = 0;			/* untagged: never taken */
	assert_true(plan_rule_del_takes(&pod, &pod));
	assert_true(plan_rule_del_takes(&pod, &other[0]));
	assert_true(plan_rule_del_takes(&pod, &other[1]));
	assert_false(plan_rule_del_takes(&pod, &other[2]));
	/* A delete naming a fwmark takes only that fwmark's. */
	assert_false(plan_rule_del_takes(&other[0], &pod));

	memset(&m, 0, sizeof(m));
	m.addr = pod.dst.addr;
	assert_int_equal(plan_pod_del(&p, &m, &pod, 1, &plan), 0);
	assert_int_equal(plan.nops, 1);
	assert_non_null(plan_rule_del_unsafe(&plan, other, 2));
	assert_null(plan_rule_del_unsafe(&plan, other + 2, 1));

	/* A stale connection-mark rule's delete and a tagged rule for the
	 * same mark with a source. */
	stale = mark_rule(512, 254, 0x100, 0x100);
	other[0] = stale;
	other[0].src.len = 16;
	assert_false(plan_rule_is_connmark_shape(&p, &other[0]));
	assert_true(plan_rule_is_connmark_shape(&p, &stale));
	assert_int_equal(plan_connmark(&p, &stale, 1, &plan), 0);
	assert_int_equal(plan.nops, 2);
	assert_non_null(plan_rule_del_unsafe(&plan, other, 1));
}

static void
test_connmark_plan(void **state)
{
	struct netd_policy p;
	struct nd_plan plan;
	struct nd_rule cur[8];
	size_t n = 0;

	(void)state;
	make_policy(&p);
	/* Absent: added once. */
	assert_int_equal(plan_connmark(&p, NULL, 0, &plan), 0);
	assert_int_equal(plan.nops, 1);
	assert_int_equal(plan.ops[0].kind, OP_RULE_ADD);
	assert_true(plan_rule_is_connmark(&p, &plan.ops[0].u.rule));

	/* Present, beside pods' rules and everyone else's fwmark rules:
	 * nothing to do, nothing of theirs touched. */
	plan_connmark_rule(&p, &cur[n++]);
	cur[n++] = rule(512, 254, NULL, 0, "10.0.16.9", 32);
	cur[n++] = mark_rule(512, 100, 0x80, 0x80);
	cur[n] = mark_rule(512, 254, 0x80, 0x80);
	cur[n++].protocol = 0;
	cur[n++] = mark_rule(512, 254, 0x80, 0xff);
	cur[n++] = mark_rule(512, 254, 0x4000, 0x4000 | 0x80);
	assert_int_equal(plan_connmark(&p, cur, n, &plan), 0);
	assert_int_equal(plan.nops, 0);
	/* Only the foreign ones: netd's is added, theirs stay. */
	assert_int_equal(plan_connmark(&p, cur + 1, n - 1, &plan), 0);
	assert_int_equal(plan.nops, 1);
	assert_int_equal(plan.ops[0].kind, OP_RULE_ADD);

	/* netd's rule under an earlier routing.connmark: the new one goes in
	 * first, then the old one goes. */
	cur[n++] = mark_rule(512, 254, 0x100, 0x100);
	assert_int_equal(plan_connmark(&p, cur + 1, n - 1, &plan), 0);
	assert_int_equal(plan.nops, 2);
	assert_int_equal(plan.ops[0].kind, OP_RULE_ADD);
	assert_int_equal(plan.ops[0].u.rule.fwmark, 0x80);
	assert_int_equal(plan.ops[1].kind, OP_RULE_DEL);
	assert_int_equal(plan.ops[1].u.rule.fwmark, 0x100);
	assert_int_equal(plan.ops[1].u.rule.fwmask, 0x100);
	assert_int_equal(plan.ops[1].u.rule.protocol, NETD_PROTO);
	assert_int_equal(plan_connmark(&p, cur, n, &plan), 0);
	assert_int_equal(plan.nops, 1);
	assert_int_equal(plan.ops[0].kind, OP_RULE_DEL);
	/* The setting changed back: 0x100 is netd's now, 0x80 the stale. */
	p.connmark = 0x100;
	assert_int_equal(plan_connmark(&p, cur, n, &plan), 0);
	assert_int_equal(plan.nops, 1);
	assert_int_equal(plan.ops[0].kind, OP_RULE_DEL);
	assert_int_equal(plan.ops[0].u.rule.fwmark, 0x80);
	assert_int_equal(plan.ops[0].u.rule.protocol, NETD_PROTO);
}

/* Pods come and go and ENIs are torn down: the rule stays. */
static void
test_connmark_survives_pods_and_teardown(void **state)
{
	struct netd_policy p;
	struct msg_netd_setup_eni s = eni();
	struct msg_netd_pod_rule m = { .table = 101 };
	struct nd_plan plan;
	struct nd_rule cur[3];
	size_t i;

	(void)state;
	make_policy(&p);
	plan_connmark_rule(&p, &cur[0]);
	cur[1] = rule(512, 254, NULL, 0, "10.0.16.9", 32);
	cur[2] = rule(1536, 101, "10.0.16.9", 32, NULL, 0);
	m.addr = ipa("10.0.16.9");
	assert_int_equal(plan_pod_del(&p, &m, cur, 3, &plan), 0);
	assert_int_equal(plan.nops, 2);
	for (i = 0; i < plan.nops; i++)
		assert_false(plan_rule_is_connmark(&p, &plan.ops[i].u.rule));
	/* A delete naming no address, or the rule's "to all": nothing. */
	m.addr = ipa("0.0.0.0");
	assert_int_equal(plan_pod_del(&p, &m, cur, 1, &plan), 0);
	assert_int_equal(plan.nops, 0);
	m.addr = ipa("10.0.16.9");
	m.table = 0;
	assert_int_equal(plan_pod_add(&p, &m, cur, 3, &plan), 0);
	assert_int_equal(plan.nops, 1);			/* the from-rule */
	assert_int_equal(plan.ops[0].u.rule.priority, 1536);
	assert_int_equal(plan_eni_teardown(&p, &s, 0, NULL, NULL, 0, cur, 3,
	    &plan), 0);
	assert_int_equal(plan.nops, 1);
	assert_int_equal(ip_addr_in4(&plan.ops[0].u.rule.src.addr),
	    ip("10.0.16.9"));
	/* The same rule at prio_from (if a config ever shared it) stays. */
	p.prio_from = 512;
	s.table = 254;
	assert_int_equal(plan_eni_teardown(&p, &s, 0, NULL, NULL, 0, cur, 1,
	    &plan), 0);
	assert_int_equal(plan.nops, 0);
}

/* ---- an ENI's table with SNAT ---- */

static struct nd_egress
snat_egress(void)
{
	struct nd_egress eg;

	memset(&eg, 0, sizeof(eg));
	eg.snat = true;
	eg.primary_ifindex = 2;
	eg.primary_gw = ipa("10.0.0.1");
	eg.cidrs[eg.ncidrs].addr = ipa("10.0.0.0");
	eg.cidrs[eg.ncidrs++].len = 16;
	eg.cidrs[eg.ncidrs].addr = ipa("198.18.0.7");	/* host bits */
	eg.cidrs[eg.ncidrs++].len = 24;
	return eg;
}

static void
test_setup_snat(void **state)
{
	struct msg_netd_setup_eni s = eni();
	struct nd_egress eg = snat_egress();
	struct nd_plan plan, again;
	struct nd_route cur[8];
	const struct nd_op *o;
	size_t i, n;

	(void)state;
	assert_int_equal(plan_eni_setup(&s, 7, &eg, NULL, NULL, 0, &plan), 0);
	assert_int_equal(plan.nops, 6);
	o = plan.ops;
	assert_int_equal(o[0].kind, OP_LINK_UP);
	assert_int_equal(o[1].kind, OP_ADDR_ADD);
	/* gateway/32 dev ENI scope link first */
	assert_int_equal(o[2].kind, OP_ROUTE_ADD);
	assert_int_equal(ip_addr_in4(&o[2].u.route.dst.addr), ip("10.0.16.1"));
	assert_int_equal(o[2].u.route.dst.len, 32);
	assert_int_equal(o[2].u.route.scope, PLAN_SCOPE_LINK);
	assert_int_equal(o[2].u.route.ifindex, 7);
	/* the VPC and the exclusion via the ENI's gateway */
	assert_int_equal(ip_addr_in4(&o[3].u.route.dst.addr), ip("10.0.0.0"));
	assert_int_equal(o[3].u.route.dst.len, 16);
	assert_int_equal(ip_addr_in4(&o[4].u.route.dst.addr), ip("198.18.0.0"));
	assert_int_equal(o[4].u.route.dst.len, 24);
	for (i = 3; i <= 4; i++) {
		assert_int_equal(o[i].kind, OP_ROUTE_ADD);
		assert_int_equal(o[i].u.route.table, 101);
		assert_int_equal(ip_addr_in4(&o[i].u.route.gateway),
		    ip("10.0.16.1"));
		assert_int_equal(o[i].u.route.ifindex, 7);
		assert_int_equal(o[i].u.route.scope, PLAN_SCOPE_UNIVERSE);
		assert_int_equal(o[i].u.route.protocol, NETD_PROTO);
		assert_false(o[i].u.route.onlink);
	}
	/* the rest via the primary's gateway, on the primary, onlink */
	assert_int_equal(o[5].kind, OP_ROUTE_ADD);
	assert_int_equal(o[5].u.route.table, 101);
	assert_int_equal(o[5].u.route.dst.len, 0);
	assert_int_equal(ip_addr_in4(&o[5].u.route.gateway), ip("10.0.0.1"));
	assert_int_equal(o[5].u.route.ifindex, 2);
	assert_true(o[5].u.route.onlink);
	assert_int_equal(o[5].u.route.protocol, NETD_PROTO);
	assert_int_equal(plan_changes(&plan, NULL), 5);

	/* In place: no route to add or remove. */
	for (n = 0; n < 4; n++)
		cur[n] = plan.ops[2 + n].u.route;
	assert_int_equal(plan_eni_setup(&s, 7, &eg, NULL, cur, n, &again), 0);
	assert_int_equal(again.nops, 2);
	/* Read back without the onlink flag it is another route. */
	cur[3].onlink = false;
	assert_int_equal(plan_eni_setup(&s, 7, &eg, NULL, cur, n, &again), 0);
	assert_int_equal(again.nops, 4);
	assert_int_equal(again.ops[2].kind, OP_ROUTE_ADD);
	assert_true(again.ops[2].u.route.onlink);
	assert_int_equal(again.ops[3].kind, OP_ROUTE_DEL);
	cur[3].onlink = true;

	/* SNAT turned off: the table as before, the SNAT routes go after
	 * the ENI's default is in. */
	assert_int_equal(plan_eni_setup(&s, 7, &no_snat, NULL, cur, n, &again),
	    0);
	assert_int_equal(again.nops, 6);
	assert_int_equal(again.ops[2].kind, OP_ROUTE_ADD);
	assert_int_equal(ip_addr_in4(&again.ops[2].u.route.gateway),
	    ip("10.0.16.1"));
	assert_int_equal(again.ops[2].u.route.ifindex, 7);
	assert_int_equal(again.ops[2].u.route.dst.len, 0);
	for (i = 3; i < 6; i++)
		assert_int_equal(again.ops[i].kind, OP_ROUTE_DEL);
	assert_int_equal(again.ops[5].u.route.ifindex, 2);

	/* And on again from the SNAT-off table: its default goes. */
	cur[1] = again.ops[2].u.route;
	assert_int_equal(plan_eni_setup(&s, 7, &eg, NULL, cur, 2, &again), 0);
	assert_int_equal(again.nops, 6);
	assert_int_equal(again.ops[4].u.route.ifindex, 2);
	assert_int_equal(again.ops[5].kind, OP_ROUTE_DEL);
	assert_int_equal(again.ops[5].u.route.ifindex, 7);
	assert_int_equal(again.ops[5].u.route.dst.len, 0);

	/* Teardown takes all of netd's routes in the table. */
	{
		struct netd_policy p;

		make_policy(&p);
		assert_int_equal(plan_eni_teardown(&p, &s, 0, NULL, cur, n,
		    NULL, 0, &again), 0);
		assert_int_equal(again.nops, n);
		for (i = 0; i < n; i++)
			assert_int_equal(again.ops[i].kind, OP_ROUTE_DEL);
	}
}

/* SNAT on and no way out known: nothing planned at all. */
static void
test_setup_snat_no_gateway(void **state)
{
	struct msg_netd_setup_eni s = eni();
	struct nd_egress eg = snat_egress();
	struct nd_plan plan;

	(void)state;
	eg.primary_gw = NO_ADDR;
	assert_int_equal(plan_eni_setup(&s, 7, &eg, NULL, NULL, 0, &plan), -1);
	assert_int_equal(plan.nops, 0);
	eg = snat_egress();
	eg.primary_ifindex = 0;
	assert_int_equal(plan_eni_setup(&s, 7, &eg, NULL, NULL, 0, &plan), -1);
	assert_int_equal(plan.nops, 0);
	/* SNAT off needs neither. */
	eg.snat = false;
	assert_int_equal(plan_eni_setup(&s, 7, &eg, NULL, NULL, 0, &plan), 0);
	assert_int_equal(plan.nops, 4);
}

static void
test_egress(void **state)
{
	static const uint8_t primary[6] = { 0x02, 0, 0, 0, 0, 0x01 };
	struct enid_config cfg;
	struct netd_policy p;
	struct netd_node n;
	struct msg_netd_policy m;
	struct nd_egress eg;

	(void)state;
	config_defaults(&cfg);
	assert_true(cfg.snat.enabled);
	cfg.snat.nexclude = 1;
	cfg.snat.exclude[0].addr = ipa("198.18.0.0");
	cfg.snat.exclude[0].len = 24;
	policy_init(&p, &cfg);
	memset(&n, 0, sizeof(n));
	n.nlinks = 1;
	n.links[0].ifindex = 2;
	memcpy(n.links[0].mac, primary, 6);
	assert_true(policy_node_merge(&p, &n));
	memset(&m, 0, sizeof(m));
	memcpy(m.primary_mac, primary, 6);
	m.ncidrs = 2;
	m.cidrs[0].addr = ipa("10.0.0.0");
	m.cidrs[0].len = 16;
	m.cidrs[1].addr = ipa("100.64.0.0");
	m.cidrs[1].len = 16;
	assert_null(policy_set_vpc(&p, &m));

	/* No gateway on the primary yet: SNAT on cannot build a table. */
	assert_non_null(plan_egress(&p, &cfg, &eg));
	cfg.snat.enabled = false;
	assert_null(plan_egress(&p, &cfg, &eg));
	assert_false(eg.snat);
	cfg.snat.enabled = true;

	n.links[0].gateway = ipa("10.0.0.1");
	assert_true(policy_node_merge(&p, &n));
	assert_null(plan_egress(&p, &cfg, &eg));
	assert_true(eg.snat);
	assert_int_equal(eg.primary_ifindex, 2);
	assert_int_equal(ip_addr_in4(&eg.primary_gw), ip("10.0.0.1"));
	/* The VPC's CIDRs, then the exclusions. */
	assert_int_equal(eg.ncidrs, 3);
	assert_int_equal(ip_addr_in4(&eg.cidrs[0].addr), ip("10.0.0.0"));
	assert_int_equal(ip_addr_in4(&eg.cidrs[1].addr), ip("100.64.0.0"));
	assert_int_equal(ip_addr_in4(&eg.cidrs[2].addr), ip("198.18.0.0"));
	assert_int_equal(eg.cidrs[2].len, 24);
}

static void
test_lookup_schedule(void **state)
{
	(void)state;
	assert_int_equal(plan_lookup_attempts(0), 1);
	assert_int_equal(plan_lookup_offset(1, 0), 0);
	assert_int_equal(plan_lookup_offset(1, 30000), 0);
	assert_int_equal(plan_lookup_offset(2, 30000), 250);
	assert_int_equal(plan_lookup_offset(3, 30000), 750);
	assert_int_equal(plan_lookup_offset(4, 30000), 1750);
	assert_int_equal(plan_lookup_offset(6, 30000), 7750);
	assert_int_equal(plan_lookup_offset(7, 30000), 15750);	/* 8 s cap */
	assert_int_equal(plan_lookup_offset(8, 30000), 23750);
	assert_int_equal(plan_lookup_offset(9, 30000), 30000);	/* clamped */
	assert_int_equal(plan_lookup_attempts(30000), 9);
	assert_int_equal(plan_lookup_attempts(100), 2);
	assert_int_equal(plan_lookup_attempts(250), 2);
	assert_int_equal(plan_lookup_attempts(251), 3);
	/* The longest deadline allowed still has a bounded schedule. */
	assert_true(plan_lookup_attempts(NETD_MAX_DEADLINE_MS) < 100);
}

/* ---- IPv6 (issue 35) ---- */

static void
test_pod_rules6(void **state)
{
	struct netd_policy p;
	struct nd_rule r[2], v4[2];
	size_t i;

	(void)state;
	make_policy(&p);
	assert_int_equal(plan_pod_rules(&p, ipp("2600:1f14:abc:110::a"), 101,
	    r), 2);
	/* Each of one family, the address's: never a mixed rule. */
	for (i = 0; i < 2; i++) {
		assert_int_equal(r[i].src.addr.family, AF_INET6);
		assert_int_equal(r[i].dst.addr.family, AF_INET6);
		assert_int_equal(r[i].protocol, NETD_PROTO);
		assert_true(plan_rule_owned(&p, &r[i]));
	}
	assert_int_equal(r[0].priority, 512);
	assert_int_equal(r[0].table, 254);
	assert_int_equal(r[0].dst.len, 128);
	assert_int_equal(r[0].src.len, 0);
	assert_true(plan_rule_is_pod_to(&p, &r[0]));
	assert_int_equal(r[1].priority, 1536);
	assert_int_equal(r[1].table, 101);
	assert_int_equal(r[1].src.len, 128);
	assert_true(ip_addr_eq(&r[1].src.addr, ipp("2600:1f14:abc:110::a")));
	assert_false(plan_rule_is_connmark_shape(&p, &r[0]));
	/* "All" of one family is not of the other: the kernel keeps them
	 * apart, and a delete of one never takes the other. */
	v4[0] = rule(512, 254, NULL, 0, NULL, 0);
	v4[1] = rule(512, 254, "::", 0, "::", 0);
	assert_false(plan_rule_equal(&v4[0], &v4[1]));
	assert_false(plan_rule_del_takes(&v4[0], &v4[1]));
	assert_false(plan_rule_del_takes(&v4[1], &v4[0]));
	assert_true(plan_rule_del_takes(&v4[1], &r[0]));
	/* A connection-mark rule is IPv4's alone. */
	plan_connmark_rule(&p, &v4[0]);
	assert_true(plan_rule_is_connmark(&p, &v4[0]));
	v4[0].src.addr = ipa("::");
	v4[0].dst.addr = ipa("::");
	assert_false(plan_rule_is_connmark(&p, &v4[0]));
	assert_false(plan_rule_owned(&p, &v4[0]));
}

static void
test_pod_add_del6(void **state)
{
	struct netd_policy p;
	struct nd_plan plan;
	struct msg_netd_pod_rule m = { .table = 101 };
	struct nd_rule c[6];

	(void)state;
	make_policy(&p);
	m.addr = ipa("2600:1f14:abc:110::a");
	/* The same pod's IPv4 rules, a neighbour's, and someone else's rule
	 * for the very address. */
	c[0] = rule(512, 254, NULL, 0, "10.0.16.9", 32);
	c[1] = rule(1536, 101, "10.0.16.9", 32, NULL, 0);
	c[2] = rule(512, 254, "::", 0, "2600:1f14:abc:110::b", 128);
	c[3] = foreign(rule(512, 254, "::", 0, "2600:1f14:abc:110::a", 128),
	    false);
	c[4] = rule(1536, 102, "2600:1f14:abc:110::a", 128, "::", 0);
	c[5] = rule(512, 254, "::", 0, "2600:1f14:abc:110::a", 128);
	assert_int_equal(plan_pod_add(&p, &m, c, 6, &plan), 0);
	/* The from-rule to 101 added, the one to 102 gone. */
	assert_int_equal(plan.nops, 2);
	assert_int_equal(plan.ops[0].kind, OP_RULE_ADD);
	assert_int_equal(plan.ops[0].u.rule.table, 101);
	assert_int_equal(plan.ops[0].u.rule.src.addr.family, AF_INET6);
	assert_int_equal(plan.ops[1].kind, OP_RULE_DEL);
	assert_int_equal(plan.ops[1].u.rule.table, 102);
	assert_int_equal(plan_pod_del(&p, &m, c, 6, &plan), 0);
	assert_int_equal(plan.nops, 2);
	assert_int_equal(plan.ops[0].u.rule.table, 102);
	assert_int_equal(plan.ops[1].u.rule.table, 254);
	assert_int_equal(plan.ops[1].u.rule.dst.len, 128);
	assert_true(plan.ops[1].u.rule.protocol == NETD_PROTO);
	/* The IPv4 address's plan leaves the IPv6 rules. */
	m.addr = ipa("10.0.16.9");
	assert_int_equal(plan_pod_del(&p, &m, c, 6, &plan), 0);
	assert_int_equal(plan.nops, 2);
	assert_int_equal(plan.ops[0].u.rule.dst.addr.family, AF_INET);
	assert_int_equal(plan.ops[1].u.rule.src.addr.family, AF_INET);
}

static void
test_setup6(void **state)
{
	struct msg_netd_setup_eni s = eni();
	struct nd_egress eg = snat_egress();
	struct nd_plan plan;
	struct nd_link_state link;
	struct nd_route cur[PLAN_MAX_OPS];
	const struct nd_op *o;
	size_t i, n;

	(void)state;
	s.addr6 = ipa("2600:1f14:abc:110::5");
	assert_int_equal(plan_eni_setup(&s, 7, &no_snat, NULL, NULL, 0, &plan),
	    0);
	assert_int_equal(plan.nops, 7);
	o = plan.ops;
	/* The kernel's link-local address generation off before the up. */
	assert_int_equal(o[0].kind, OP_LINK_UP);
	assert_true(o[0].u.link.ll6);
	assert_int_equal(o[1].kind, OP_ADDR_ADD);
	assert_int_equal(o[1].u.addr.addr.addr.family, AF_INET);
	/* netd's own link-local address: the MAC's EUI-64, before the
	 * route through fe80:ec2::1 needs it. */
	assert_int_equal(o[2].kind, OP_ADDR_ADD);
	assert_true(ip_addr_eq(&o[2].u.addr.addr.addr, ipp(LL6)));
	assert_int_equal(o[2].u.addr.addr.len, 64);
	assert_int_equal(o[2].u.addr.proto, NETD_PROTO);
	assert_int_equal(o[3].kind, OP_ADDR_ADD);
	assert_true(ip_addr_eq(&o[3].u.addr.addr.addr, &s.addr6));
	assert_int_equal(o[3].u.addr.addr.len, 128);
	assert_int_equal(o[3].u.addr.proto, NETD_PROTO);
	assert_int_equal(o[6].kind, OP_ROUTE_ADD);
	assert_int_equal(o[6].u.route.table, 101);
	assert_int_equal(o[6].u.route.dst.addr.family, AF_INET6);
	assert_int_equal(o[6].u.route.dst.len, 0);
	assert_true(ip_addr_eq(&o[6].u.route.gateway, ipp("fe80:ec2::1")));
	assert_int_equal(o[6].u.route.ifindex, 7);
	assert_int_equal(o[6].u.route.metric, PLAN_METRIC6_DEFAULT);
	assert_int_equal(o[6].u.route.protocol, NETD_PROTO);
	/* A link up before netd: the kernel's own address of the same value
	 * (perhaps tentative) goes first, netd's without DAD after. */
	memset(&link, 0, sizeof(link));
	link.ifindex = 7;
	link.addrs[link.naddrs++] = ifaddr(7, LL6, 64, 0);
	assert_int_equal(plan_eni_setup(&s, 7, &no_snat, &link, NULL, 0,
	    &plan), 0);
	assert_int_equal(plan.ops[2].kind, OP_ADDR_DEL);
	assert_true(ip_addr_eq(&plan.ops[2].u.addr.addr.addr, ipp(LL6)));
	assert_int_equal(plan.ops[3].kind, OP_ADDR_ADD);
	assert_true(ip_addr_eq(&plan.ops[3].u.addr.addr.addr, ipp(LL6)));
	/* An IPv4-only ENI's link is left to the kernel's own. */
	{
		struct msg_netd_setup_eni v4 = eni();
		struct nd_plan p4;

		assert_int_equal(plan_eni_setup(&v4, 7, &no_snat, NULL, NULL,
		    0, &p4), 0);
		struct nd_egress dual = no_snat;
		struct netd_policy pol;

		assert_false(p4.ops[0].u.link.ll6);
		for (i = 0; i < p4.nops; i++)
			assert_false(p4.ops[i].kind == OP_ADDR_ADD &&
			    p4.ops[i].u.addr.addr.addr.family == AF_INET6);
		/* But with ip_family dual, one set up before its own IPv6
		 * address is known gets netd's link-local address already,
		 * and its teardown sets the generation mode back. */
		dual.ll6 = true;
		assert_int_equal(plan_eni_setup(&v4, 7, &dual, NULL, NULL,
		    0, &p4), 0);
		assert_true(p4.ops[0].u.link.ll6);
		assert_int_equal(p4.ops[2].kind, OP_ADDR_ADD);
		assert_true(ip_addr_eq(&p4.ops[2].u.addr.addr.addr, ipp(LL6)));
		memset(&link, 0, sizeof(link));
		link.ifindex = 7;
		link.addrs[link.naddrs++] = ifaddr(7, LL6, 64, NETD_PROTO);
		make_policy(&pol);
		assert_int_equal(plan_eni_teardown(&pol, &v4, 7, &link, NULL,
		    0, NULL, 0, &p4), 0);
		assert_int_equal(p4.nops, 2);
		assert_int_equal(p4.ops[1].kind, OP_LINK_DOWN);
		assert_true(p4.ops[1].u.link.ll6);
	}

	/* In place: counts 0. */
	memset(&link, 0, sizeof(link));
	link.ifindex = 7;
	link.addrs[link.naddrs++] = ifaddr(7, "10.0.16.5", 20, NETD_PROTO);
	link.addrs[link.naddrs++] = ifaddr(7, "2600:1f14:abc:110::5", 128,
	    NETD_PROTO);
	link.addrs[link.naddrs++] = ifaddr(7, LL6, 64, NETD_PROTO);
	/* A link-local address of the kernel's from before: not netd's to
	 * remove, nor drift. */
	link.addrs[link.naddrs++] = ifaddr(7, "fe80::1", 64, 0);
	for (i = n = 0; i < plan.nops; i++)
		if (plan.ops[i].kind == OP_ROUTE_ADD)
			cur[n++] = plan.ops[i].u.route;
	assert_int_equal(plan_eni_setup(&s, 7, &no_snat, &link, cur, n, &plan),
	    0);
	assert_int_equal(plan_changes(&plan, &link), 0);

	/* IPv6-only: no IPv4 route, no need of a primary gateway even with
	 * SNAT on; the IPv4 address and routes of before go. */
	memset(&s.addr, 0, sizeof(s.addr));
	memset(&s.gateway, 0, sizeof(s.gateway));
	memset(&eg.primary_gw, 0, sizeof(eg.primary_gw));
	assert_int_equal(plan_eni_setup(&s, 7, &eg, &link, cur, n, &plan), 0);
	o = plan.ops;
	assert_int_equal(o[0].kind, OP_LINK_UP);
	assert_int_equal(o[1].kind, OP_ADDR_ADD);
	assert_true(ip_addr_eq(&o[1].u.addr.addr.addr, ipp(LL6)));
	assert_int_equal(o[2].kind, OP_ADDR_ADD);
	assert_true(ip_addr_eq(&o[2].u.addr.addr.addr, &s.addr6));
	for (i = 3; i < plan.nops; i++) {
		if (o[i].kind == OP_ROUTE_DEL)
			assert_int_equal(o[i].u.route.dst.addr.family, AF_INET);
		else if (o[i].kind == OP_ADDR_DEL)
			assert_int_equal(ip_addr_in4(&o[i].u.addr.addr.addr),
			    ip("10.0.16.5"));
		else
			fail_msg("op %zu: %s", i, plan_op_name(o[i].kind));
	}
	assert_int_equal(plan.nops, 3 + 2 + 1);	/* 2 routes, 1 address */
	assert_int_equal(plan_changes(&plan, &link), 3);
	/* Neither family: no plan. */
	memset(&s.addr6, 0, sizeof(s.addr6));
	assert_int_equal(plan_eni_setup(&s, 7, &no_snat, NULL, NULL, 0, &plan),
	    -1);
}

static void
test_teardown6(void **state)
{
	struct netd_policy p;
	struct msg_netd_setup_eni s = eni();
	struct nd_plan first, plan;
	struct nd_route routes[4];
	struct nd_rule rules[3];
	struct nd_link_state link;
	size_t i, n = 0;

	(void)state;
	make_policy(&p);
	s.addr6 = ipa("2600:1f14:abc:110::5");
	assert_int_equal(plan_eni_setup(&s, 7, &no_snat, NULL, NULL, 0,
	    &first), 0);
	for (i = 0; i < first.nops; i++)
		if (first.ops[i].kind == OP_ROUTE_ADD)
			routes[n++] = first.ops[i].u.route;
	assert_int_equal(n, 3);
	routes[n] = routes[2];
	routes[n++].protocol = 3;	/* someone else's IPv6 default */
	rules[0] = rule(1536, 101, "2600:1f14:abc:110::a", 128, "::", 0);
	rules[1] = foreign(rule(1536, 101, "2600:1f14:abc:110::b", 128, "::",
	    0), false);
	rules[2] = rule(1536, 101, "10.0.16.9", 32, NULL, 0);
	memset(&link, 0, sizeof(link));
	link.ifindex = 7;
	link.addrs[link.naddrs++] = ifaddr(7, "10.0.16.5", 20, NETD_PROTO);
	link.addrs[link.naddrs++] = ifaddr(7, "2600:1f14:abc:110::5", 128,
	    NETD_PROTO);
	link.addrs[link.naddrs++] = ifaddr(7, "fe80::1", 64, 0);
	link.addrs[link.naddrs++] = ifaddr(7, LL6, 64, NETD_PROTO);
	assert_int_equal(plan_eni_teardown(&p, &s, 7, &link, routes, n, rules,
	    3, &plan), 0);
	/* 2 rules, 3 routes, 3 addresses (netd's link-local one too, not
	 * the kernel's), link down with the generation mode back. */
	assert_int_equal(plan.nops, 9);
	assert_int_equal(plan.ops[0].u.rule.src.addr.family, AF_INET6);
	assert_int_equal(plan.ops[1].u.rule.src.addr.family, AF_INET);
	assert_int_equal(plan.ops[4].u.route.dst.addr.family, AF_INET6);
	assert_int_equal(plan.ops[4].u.route.protocol, NETD_PROTO);
	assert_int_equal(plan.ops[6].kind, OP_ADDR_DEL);
	assert_int_equal(plan.ops[6].u.addr.addr.addr.family, AF_INET6);
	assert_true(ip_addr_eq(&plan.ops[7].u.addr.addr.addr, ipp(LL6)));
	assert_int_equal(plan.ops[8].kind, OP_LINK_DOWN);
	assert_true(plan.ops[8].u.link.ll6);
}

static void
test_pod_route6_plan(void **state)
{
	struct msg_netd_pod_route m;
	struct nd_plan plan;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.addr = ipa("2600:1f14:abc:110::a");
	plan_pod_route(&m, 9, &plan);
	assert_int_equal(plan.nops, 1);
	assert_int_equal(plan.ops[0].kind, OP_HOST_ROUTE_ADD);
	assert_int_equal(plan.ops[0].u.route.dst.len, 128);
	assert_int_equal(plan.ops[0].u.route.table, 254);
	assert_int_equal(plan.ops[0].u.route.ifindex, 9);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pod_rules),
		cmocka_unit_test(test_pod_add_fresh),
		cmocka_unit_test(test_pod_add_idempotent),
		cmocka_unit_test(test_pod_add_moves_table),
		cmocka_unit_test(test_pod_dual),
		cmocka_unit_test(test_pod_del),
		cmocka_unit_test(test_pod_foreign_rules),
		cmocka_unit_test(test_setup_fresh),
		cmocka_unit_test(test_setup_changes),
		cmocka_unit_test(test_setup_again_and_stale),
		cmocka_unit_test(test_teardown),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_connmark_rule_owned),
		cmocka_unit_test(test_connmark_plan),
		cmocka_unit_test(test_rule_del_takes),
		cmocka_unit_test(test_connmark_survives_pods_and_teardown),
		cmocka_unit_test(test_setup_snat),
		cmocka_unit_test(test_setup_snat_no_gateway),
		cmocka_unit_test(test_egress),
		cmocka_unit_test(test_lookup_schedule),
		cmocka_unit_test(test_pod_rules6),
		cmocka_unit_test(test_pod_add_del6),
		cmocka_unit_test(test_setup6),
		cmocka_unit_test(test_teardown6),
		cmocka_unit_test(test_pod_route6_plan),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
