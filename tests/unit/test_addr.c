/*
 * Address helpers: strict parsing of MACs, IPv4 addresses and CIDRs.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "addr.h"

static void
test_mac(void **state)
{
	uint8_t mac[6];
	char buf[MAC_STR_LEN];
	static const char *const bad[] = {
		"", "02:5a:96:2b:9b", "02:5a:96:2b:9b:a2:", "02-5a-96-2b-9b-a2",
		"02:5a:96:2b:9b:ag", "2:5a:96:2b:9b:a2a", "02:5a:96:2b:9b:a2 ",
	};
	size_t i;

	(void)state;
	assert_int_equal(mac_parse("02:5A:96:2b:9b:a2", mac), 0);
	mac_format(mac, buf);
	assert_string_equal(buf, "02:5a:96:2b:9b:a2");
	assert_false(mac_is_zero(mac));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(mac_parse(bad[i], mac), -1);
}

static void
test_ip4_and_cidr(void **state)
{
	uint32_t a, n;
	uint8_t p;
	char buf[CIDR4_STR_LEN];
	static const char *const bad[] = {
		"10.0.0.0", "10.0.0.0/", "10.0.0.0/33", "10.0.0/8",
		"10.0.0.0/-1", "10.0.0.0/8x", "x/8", "10.0.0.0/ 8",
		"256.0.0.0/8", "10.0.0.0/008",
	};
	size_t i;

	(void)state;
	assert_int_equal(ip4_parse("10.0.1.2", &a), 0);
	assert_int_equal(a, htonl(0x0a000102));
	assert_int_equal(ip4_parse("10.0.1", &a), -1);
	assert_int_equal(ip4_parse("10.0.1.2 ", &a), -1);
	assert_int_equal(cidr4_parse("10.0.16.0/20", &n, &p), 0);
	assert_int_equal(p, 20);
	cidr4_format(n, p, buf);
	assert_string_equal(buf, "10.0.16.0/20");
	cidr4_format(htonl(0xffffffff), 32, buf);
	assert_string_equal(buf, "255.255.255.255/32");
	assert_true(cidr4_contains(n, p, htonl(0x0a001fff)));
	assert_false(cidr4_contains(n, p, htonl(0x0a002000)));
	assert_true(cidr4_contains(0, 0, htonl(0x01020304)));
	assert_int_equal(prefix_mask(0), 0);
	assert_int_equal(prefix_mask(32), 0xffffffffu);
	assert_int_equal(prefix_mask(20), htonl(0xfffff000));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (cidr4_parse(bad[i], &n, &p) == 0)
			fail_msg("accepted %s", bad[i]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mac),
		cmocka_unit_test(test_ip4_and_cidr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
