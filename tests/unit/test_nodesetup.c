/*
 * enidctl node-setup's choice of uplink (ctl/nodesetup.c) from the texts
 * of /proc/net/route and /proc/net/ipv6_route, as the kernel writes them:
 * the IPv4 default of least metric, else the IPv6 one; never lo's reject
 * route, never a route that is not a default; two links tied refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "nodesetup.h"

#define HEAD4 "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\t" \
	"Mask\t\tMTU\tWindow\tIRTT\n"
#define Z32 "00000000000000000000000000000000"
/* The kernel's ::/0 reject route on lo: flags RTF_REJECT|RTF_NONEXTHOP. */
#define REJECT6 Z32 " 00 " Z32 " 00 " Z32 " ffffffff 00000001 00000000 " \
	"00200200       lo\n"

static char name[IF_NAMESIZE], why[160];
static const char *from;

static int
pick(const char *r4, const char *r6)
{
	memset(name, 0, sizeof(name));
	why[0] = '\0';
	return nodesetup_uplink(r4, r6, name, &from, why, sizeof(why));
}

static void
test_ipv4_least_metric(void **state)
{
	(void)state;
	/* Amazon Linux gives each ENI a default route in main, metric
	 * 512 + its device number: the primary's is the least. */
	assert_int_equal(pick(HEAD4
	    "ens6\t00000000\t0100200A\t0003\t0\t0\t513\t00000000\t0\t0\t0\n"
	    "ens5\t0000200A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
	    "ens5\t00000000\t0100200A\t0003\t0\t0\t512\t00000000\t0\t0\t0\n",
	    REJECT6), 0);
	assert_string_equal(name, "ens5");
	assert_string_equal(from, "/proc/net/route");
}

static void
test_ipv6_when_no_ipv4(void **state)
{
	(void)state;
	assert_int_equal(pick(HEAD4
	    "eth0\t0000200A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n",
	    "fd000000000000000000000000000000 40 " Z32 " 00 " Z32
	    " 00000100 00000001 00000000 00000001     eth0\n"
	    Z32 " 00 " Z32 " 00 fe800000000000000000000000000001 00000400 "
	    "00000001 00000000 00450003     eth1\n" REJECT6), 0);
	assert_string_equal(name, "eth1");
	assert_string_equal(from, "/proc/net/ipv6_route");
}

static void
test_none(void **state)
{
	(void)state;
	/* A down route (no RTF_UP) and a reject one are not defaults. */
	assert_int_equal(pick(HEAD4
	    "eth0\t00000000\t0100200A\t0002\t0\t0\t0\t00000000\t0\t0\t0\n"
	    "eth0\t00000000\t00000000\t0201\t0\t0\t0\t00000000\t0\t0\t0\n",
	    REJECT6), -1);
	assert_non_null(strstr(why, "no default route"));
	assert_int_equal(pick("", ""), -1);
}

static void
test_tie_refused(void **state)
{
	(void)state;
	assert_int_equal(pick(HEAD4
	    "eth0\t00000000\t0100200A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
	    "eth1\t00000000\t0101200A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n",
	    ""), -1);
	assert_string_equal(why, "the default routes of least metric (100, "
	    "in /proc/net/route) go by two links, eth0 and eth1");
	/* The same link twice (ECMP through two gateways) is no tie; a
	 * lesser metric later ends one. */
	assert_int_equal(pick(HEAD4
	    "eth0\t00000000\t0100200A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
	    "eth0\t00000000\t0200200A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
	    "eth1\t00000000\t0101200A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
	    "eth2\t00000000\t0102200A\t0003\t0\t0\t50\t00000000\t0\t0\t0\n",
	    ""), 0);
	assert_string_equal(name, "eth2");
}

static void
test_garbage_ignored(void **state)
{
	(void)state;
	/* A name too long for a link, a line cut short: skipped. */
	assert_int_equal(pick(HEAD4
	    "abcdefghijklmnopq\t00000000\t0100200A\t0003\t0\t0\t0\t00000000\n"
	    "eth0\t00000000\n"
	    "eth3\t00000000\t0100200A\t0003\t0\t0\t7\t00000000\t0\t0\t0",
	    ""), 0);
	assert_string_equal(name, "eth3");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv4_least_metric),
		cmocka_unit_test(test_ipv6_when_no_ipv4),
		cmocka_unit_test(test_none),
		cmocka_unit_test(test_tie_refused),
		cmocka_unit_test(test_garbage_ignored),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
