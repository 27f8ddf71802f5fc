/*
 * netd's request policy: every refusal the issue names, and the requests
 * that must pass.  Pure; no root, no netlink.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "addr.h"
#include "conf.h"
#include "policy.h"

static const uint8_t PRIMARY[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t ENI1[6] = { 0x02, 0, 0, 0, 0, 0x11 };
static const uint8_t ENI2[6] = { 0x02, 0, 0, 0, 0, 0x12 };

static uint32_t
ip(const char *s)
{
	uint32_t a = 0;

	assert_int_equal(ip4_parse(s, &a), 0);
	return a;
}

/* tables 100-163, priorities 512/1536, VPC 10.0.0.0/16 + 100.64.0.0/16 */
static void
make_policy(struct netd_policy *p)
{
	struct enid_config cfg;
	struct msg_netd_policy m;

	config_defaults(&cfg);
	policy_init(p, &cfg);
	memset(&m, 0, sizeof(m));
	memcpy(m.primary_mac, PRIMARY, 6);
	m.ncidrs = 2;
	m.cidrs[0].addr = ip("10.0.0.0");
	m.cidrs[0].prefix = 16;
	m.cidrs[1].addr = ip("100.64.0.0");
	m.cidrs[1].prefix = 16;
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
	s.addr = ip("10.0.16.5");
	s.prefix = 20;
	s.gateway = ip("10.0.16.1");
	s.mtu = 9001;
	return s;
}

static void
test_vpc_policy(void **state)
{
	struct enid_config cfg;
	struct netd_policy p;
	struct msg_netd_policy m;

	(void)state;
	config_defaults(&cfg);
	policy_init(&p, &cfg);
	assert_int_equal(p.table_lo, 100);
	assert_int_equal(p.table_hi, 100 + CONF_TABLE_SPAN);
	memset(&m, 0, sizeof(m));
	memcpy(m.primary_mac, PRIMARY, 6);
	assert_non_null(policy_set_vpc(&p, &m));	/* no CIDR */
	m.ncidrs = 1;
	m.cidrs[0].addr = ip("10.0.0.0");
	m.cidrs[0].prefix = 4;				/* too wide */
	assert_non_null(policy_set_vpc(&p, &m));
	m.cidrs[0].prefix = 16;
	m.cidrs[0].addr = ip("10.0.0.1");		/* host bits */
	assert_non_null(policy_set_vpc(&p, &m));
	m.cidrs[0].addr = ip("10.0.0.0");
	m.cidrs[0].prefix = 29;				/* too narrow */
	assert_non_null(policy_set_vpc(&p, &m));
	m.cidrs[0].prefix = 16;
	m.cidrs[0].addr = ip("127.0.0.0");		/* loopback */
	assert_non_null(policy_set_vpc(&p, &m));
	m.cidrs[0].addr = ip("169.254.0.0");		/* link-local */
	assert_non_null(policy_set_vpc(&p, &m));
	m.cidrs[0].addr = ip("224.0.0.0");		/* multicast */
	assert_non_null(policy_set_vpc(&p, &m));
	m.cidrs[0].addr = ip("0.0.0.0");		/* this network */
	assert_non_null(policy_set_vpc(&p, &m));
	m.cidrs[0].addr = ip("10.0.0.0");
	m.primary_mac[0] = 0x01;			/* multicast */
	assert_non_null(policy_set_vpc(&p, &m));
	memcpy(m.primary_mac, PRIMARY, 6);
	assert_false(p.vpc_set);
	assert_null(policy_set_vpc(&p, &m));
	assert_true(p.vpc_set);
	/* Fixed: nothing can widen it later. */
	m.cidrs[0].prefix = 8;
	assert_non_null(policy_set_vpc(&p, &m));
	assert_int_equal(p.cidrs[0].prefix, 16);
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
	r.addr = ip("10.0.1.1");
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
	s.addr = ip("192.168.1.5");			/* outside the VPC */
	s.gateway = ip("192.168.1.1");
	assert_non_null(policy_check_setup(&p, &s));
	assert_non_null(policy_check_teardown(&p, &s));
	s = setup_req(ENI1, 101);
	s.prefix = 8;					/* wider than the VPC */
	assert_non_null(policy_check_setup(&p, &s));
	s = setup_req(ENI1, 101);
	s.gateway = ip("8.8.8.8");
	assert_non_null(policy_check_setup(&p, &s));
	s.gateway = ip("10.0.32.1");			/* VPC, other subnet */
	assert_non_null(policy_check_setup(&p, &s));
	s.gateway = s.addr;
	assert_non_null(policy_check_setup(&p, &s));
	s = setup_req(ENI1, 101);
	s.mtu = 100;
	assert_non_null(policy_check_setup(&p, &s));
	s.mtu = 65000;
	assert_non_null(policy_check_setup(&p, &s));
	assert_null(policy_check_teardown(&p, &s));	/* mtu unused */
	s = setup_req(ENI1, 101);
	s.addr = ip("100.64.3.10");			/* second VPC block */
	s.prefix = 24;
	s.gateway = ip("100.64.3.1");
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
	r.addr = ip("10.0.16.9");
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
	r.addr = ip("172.16.0.1");
	assert_non_null(policy_check_pod(&p, &r, true));
	assert_non_null(policy_check_pod(&p, &r, false));
	r.addr = 0;
	assert_non_null(policy_check_pod(&p, &r, true));
	assert_true(policy_prio_is_enid(&p, 512));
	assert_true(policy_prio_is_enid(&p, 1536));
	assert_false(policy_prio_is_enid(&p, 1024));
	assert_false(policy_prio_is_enid(&p, 0));
}

/* An address held by the primary interface is never a pod's or an ENI's;
 * one held by a declared ENI only for that ENI's own table (its from-rule
 * then leads where its traffic goes anyway); one on any other link (a pod's
 * veth) is not judged. */
static void
test_addr_holder(void **state)
{
	static const uint8_t VETH[6] = { 0x0a, 0x58, 0, 0, 0, 0x07 };
	struct netd_policy p;
	struct msg_netd_eni e;

	(void)state;
	make_policy(&p);
	declare(&p, ENI1, 101);
	assert_non_null(policy_check_addr_holder(&p, PRIMARY, 0));
	assert_non_null(policy_check_addr_holder(&p, PRIMARY, 101));
	assert_null(policy_check_addr_holder(&p, ENI1, 101));
	assert_non_null(policy_check_addr_holder(&p, ENI1, 102));
	assert_non_null(policy_check_addr_holder(&p, ENI1, 0));
	assert_null(policy_check_addr_holder(&p, ENI2, 102));
	assert_null(policy_check_addr_holder(&p, VETH, 101));
	memset(&e, 0, sizeof(e));
	memcpy(e.mac, ENI1, 6);
	e.table = 101;
	policy_forget(&p, &e);
	assert_null(policy_check_addr_holder(&p, ENI1, 102));
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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
