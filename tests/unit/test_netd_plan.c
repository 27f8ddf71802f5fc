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

static uint32_t
ip(const char *s)
{
	uint32_t a = 0;

	assert_int_equal(ip4_parse(s, &a), 0);
	return a;
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
	r.src = src ? ip(src) : 0;
	r.src_len = src_len;
	r.dst = dst ? ip(dst) : 0;
	r.dst_len = dst_len;
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
	uint32_t v = ip(a);

	memset(&x, 0, sizeof(x));
	x.ifindex = ifindex;
	x.family = NETD_AF_INET;
	x.prefix = prefix;
	x.proto = proto;
	memcpy(x.addr, &v, 4);
	return x;
}

static struct msg_netd_setup_eni
eni(void)
{
	struct msg_netd_setup_eni s;

	memset(&s, 0, sizeof(s));
	s.table = 101;
	s.addr = ip("10.0.16.5");
	s.prefix = 20;
	s.gateway = ip("10.0.16.1");
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
	assert_int_equal(plan_pod_rules(&p, ip("10.0.1.7"), 0, r), 1);
	assert_int_equal(r[0].priority, 512);
	assert_int_equal(r[0].table, 254);
	assert_int_equal(r[0].dst, ip("10.0.1.7"));
	assert_int_equal(r[0].dst_len, 32);
	assert_int_equal(r[0].src_len, 0);
	assert_int_equal(r[0].protocol, NETD_PROTO);
	assert_false(r[0].other_selectors);
	assert_true(plan_rule_owned(&r[0]));
	assert_true(plan_rule_is_pod_to(&p, &r[0]));
	assert_int_equal(plan_pod_rules(&p, ip("10.0.1.7"), 101, r), 2);
	assert_int_equal(r[1].protocol, NETD_PROTO);
	assert_false(plan_rule_is_pod_to(&p, &r[1]));
	assert_int_equal(r[1].priority, 1536);
	assert_int_equal(r[1].table, 101);
	assert_int_equal(r[1].src, ip("10.0.1.7"));
	assert_int_equal(r[1].src_len, 32);
	assert_int_equal(r[1].dst_len, 0);
}

static void
test_pod_add_fresh(void **state)
{
	struct netd_policy p;
	struct nd_plan plan;
	struct msg_netd_pod_rule m = { 0, 101 };

	(void)state;
	make_policy(&p);
	m.addr = ip("10.0.16.9");
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
	struct msg_netd_pod_rule m = { 0, 101 };
	struct nd_rule cur[4];

	(void)state;
	make_policy(&p);
	m.addr = ip("10.0.16.9");
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
	struct msg_netd_pod_rule m = { 0, 102 };
	struct nd_rule cur[2];

	(void)state;
	make_policy(&p);
	m.addr = ip("10.0.16.9");
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

static void
test_pod_del(void **state)
{
	struct netd_policy p;
	struct nd_plan plan;
	struct msg_netd_pod_rule m = { 0, 0 };
	struct nd_rule cur[4];

	(void)state;
	make_policy(&p);
	m.addr = ip("10.0.16.9");
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
	struct msg_netd_pod_rule m = { 0, 101 };
	struct nd_rule cur[6];
	size_t i;

	(void)state;
	make_policy(&p);
	m.addr = ip("10.0.16.9");
	cur[0] = foreign(rule(512, 254, NULL, 0, "10.0.16.9", 32), false);
	cur[1] = foreign(rule(1536, 101, "10.0.16.9", 32, NULL, 0), false);
	cur[2] = foreign(rule(512, 254, NULL, 0, "10.0.16.9", 32), true);
	cur[3] = foreign(rule(1536, 102, "10.0.16.9", 32, NULL, 0), true);
	cur[4] = foreign(rule(1536, 101, "10.0.16.0", 24, NULL, 0), false);
	cur[5] = rule(1536, 101, "10.0.16.0", 24, NULL, 0);	/* not a pod's */
	for (i = 0; i < 6; i++)
		assert_false(plan_rule_is_pods(&p, &cur[i], m.addr));
	assert_false(plan_rule_owned(&cur[0]));
	assert_false(plan_rule_owned(&cur[2]));
	assert_false(plan_rule_is_pod_to(&p, &cur[0]));
	assert_false(plan_rule_is_pod_to(&p, &cur[2]));
	assert_true(plan_rule_owned(&cur[5]));

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
	assert_int_equal(plan_eni_setup(&s, 7, NULL, NULL, 0, &plan), 0);
	assert_int_equal(plan.nops, 4);
	o = plan.ops;
	assert_int_equal(o[0].kind, OP_LINK_UP);
	assert_int_equal(o[0].u.link.ifindex, 7);
	assert_int_equal(o[0].u.link.mtu, 9001);
	assert_int_equal(o[1].kind, OP_ADDR_ADD);
	assert_int_equal(o[1].u.addr.addr, ip("10.0.16.5"));
	assert_int_equal(o[1].u.addr.prefix, 20);
	assert_int_equal(o[1].u.addr.proto, NETD_PROTO);
	/* The gateway's on-link /32, then default via it, in table T. */
	assert_int_equal(o[2].kind, OP_ROUTE_ADD);
	assert_int_equal(o[2].u.route.table, 101);
	assert_int_equal(o[2].u.route.dst, ip("10.0.16.1"));
	assert_int_equal(o[2].u.route.dst_len, 32);
	assert_int_equal(o[2].u.route.scope, PLAN_SCOPE_LINK);
	assert_int_equal(o[2].u.route.gateway, 0);
	assert_int_equal(o[2].u.route.ifindex, 7);
	assert_int_equal(o[2].u.route.protocol, NETD_PROTO);
	assert_int_equal(o[3].kind, OP_ROUTE_ADD);
	assert_int_equal(o[3].u.route.dst_len, 0);
	assert_int_equal(o[3].u.route.gateway, ip("10.0.16.1"));
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
	assert_int_equal(plan_eni_setup(&s, 7, NULL, NULL, 0, &first), 0);
	/* fresh: the address and both routes; the link's up is not told */
	assert_int_equal(plan_changes(&first, NULL), 3);
	memset(&link, 0, sizeof(link));
	link.ifindex = 7;
	link.naddrs = 1;
	link.addrs[0].ifindex = 7;
	link.addrs[0].family = NETD_AF_INET;
	link.addrs[0].prefix = 20;
	link.addrs[0].proto = NETD_PROTO;
	memcpy(link.addrs[0].addr, &a, 4);
	cur[0] = first.ops[2].u.route;
	cur[1] = first.ops[3].u.route;
	assert_int_equal(plan_eni_setup(&s, 7, &link, cur, 2, &again), 0);
	assert_int_equal(plan_changes(&again, &link), 0);
	/* the table flushed: its two routes */
	assert_int_equal(plan_eni_setup(&s, 7, &link, NULL, 0, &again), 0);
	assert_int_equal(plan_changes(&again, &link), 2);
	/* the address gone, or another's (no tag), or another prefix */
	link.addrs[0].proto = 0;
	assert_int_equal(plan_eni_setup(&s, 7, &link, cur, 2, &again), 0);
	assert_int_equal(plan_changes(&again, &link), 1);
	link.addrs[0].proto = NETD_PROTO;
	link.addrs[0].prefix = 24;
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
	assert_int_equal(plan_eni_setup(&s, 7, NULL, NULL, 0, &first), 0);
	cur[0] = first.ops[2].u.route;
	cur[1] = first.ops[3].u.route;
	/* Setting up again changes no route. */
	assert_int_equal(plan_eni_setup(&s, 7, NULL, cur, 2, &again), 0);
	assert_int_equal(again.nops, 2);
	for (i = 0; i < again.nops; i++)
		assert_int_not_equal(again.ops[i].kind, OP_ROUTE_ADD);

	/* The same route, someone else's: netd's own goes in beside it, and
	 * the foreign one stays. */
	cur[0].protocol = 3;
	assert_int_equal(plan_eni_setup(&s, 7, NULL, cur, 2, &again), 0);
	assert_int_equal(again.nops, 3);
	assert_int_equal(again.ops[2].kind, OP_ROUTE_ADD);
	assert_int_equal(again.ops[2].u.route.dst_len, 32);
	assert_int_equal(again.ops[2].u.route.protocol, NETD_PROTO);
	cur[0].protocol = NETD_PROTO;

	/* A stale route of netd's in the table (an old link's) is removed,
	 * after the new ones are in; a foreign one is not. */
	memset(&cur[2], 0, sizeof(cur[2]));
	cur[2].table = 101;
	cur[2].dst = ip("10.0.32.0");
	cur[2].dst_len = 20;
	cur[2].ifindex = 5;
	cur[2].scope = PLAN_SCOPE_LINK;
	cur[2].protocol = NETD_PROTO;
	cur[3] = cur[2];
	cur[3].dst = ip("10.0.48.0");
	cur[3].protocol = 4;		/* static: someone else's */
	cur[1].ifindex = 5;		/* default via the old link */
	assert_int_equal(plan_eni_setup(&s, 7, NULL, cur, 4, &again), 0);
	assert_int_equal(again.ops[2].kind, OP_ROUTE_ADD);
	assert_int_equal(again.ops[2].u.route.dst_len, 0);
	assert_int_equal(again.ops[3].kind, OP_ROUTE_DEL);
	assert_int_equal(again.ops[3].u.route.ifindex, 5);
	assert_int_equal(again.ops[3].u.route.dst_len, 0);
	assert_int_equal(again.ops[4].kind, OP_ROUTE_DEL);
	assert_int_equal(again.ops[4].u.route.dst, ip("10.0.32.0"));
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
	assert_int_equal(plan_eni_setup(&s, 7, &link, NULL, 0, &again), 0);
	assert_int_equal(again.nops, 6);
	assert_int_equal(again.ops[4].kind, OP_ADDR_DEL);
	assert_int_equal(again.ops[4].u.addr.addr, ip("10.0.16.6"));
	assert_int_equal(again.ops[5].kind, OP_ADDR_DEL);
	assert_int_equal(again.ops[5].u.addr.addr, ip("10.0.16.5"));
	assert_int_equal(again.ops[5].u.addr.prefix, 24);
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
	assert_int_equal(plan_eni_setup(&s, 7, NULL, NULL, 0, &first), 0);
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
	assert_int_equal(plan.ops[0].u.rule.src, ip("10.0.16.9"));
	assert_int_equal(plan.ops[0].u.rule.protocol, NETD_PROTO);
	assert_int_equal(plan.ops[1].kind, OP_ROUTE_DEL);
	assert_int_equal(plan.ops[1].u.route.protocol, NETD_PROTO);
	assert_int_equal(plan.ops[2].kind, OP_ROUTE_DEL);
	assert_int_equal(plan.ops[2].u.route.table, 101);
	assert_int_equal(plan.ops[2].u.route.protocol, NETD_PROTO);
	assert_int_equal(plan.ops[3].kind, OP_ADDR_DEL);
	assert_int_equal(plan.ops[3].u.addr.addr, ip("10.0.16.5"));
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
		many[i].dst = htobe32(0x0a630000u + (uint32_t)i);
		many[i].dst_len = 32;
		many[i].protocol = NETD_PROTO;
	}
	assert_int_equal(plan_eni_setup(&s, 7, NULL, many, PLAN_MAX_OPS + 1,
	    &plan), -1);
	/* Foreign ones are never planned for, however many. */
	for (i = 0; i < PLAN_MAX_OPS + 1; i++)
		many[i].protocol = 4;
	assert_int_equal(plan_eni_setup(&s, 7, NULL, many, PLAN_MAX_OPS + 1,
	    &plan), 0);
	assert_int_equal(plan.nops, 4);
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pod_rules),
		cmocka_unit_test(test_pod_add_fresh),
		cmocka_unit_test(test_pod_add_idempotent),
		cmocka_unit_test(test_pod_add_moves_table),
		cmocka_unit_test(test_pod_del),
		cmocka_unit_test(test_pod_foreign_rules),
		cmocka_unit_test(test_setup_fresh),
		cmocka_unit_test(test_setup_changes),
		cmocka_unit_test(test_setup_again_and_stale),
		cmocka_unit_test(test_teardown),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_lookup_schedule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
