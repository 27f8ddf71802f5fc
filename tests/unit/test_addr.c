/*
 * Address helpers: strict parsing of MACs, IPv4 addresses and CIDRs.
 * Beside the examples, fixed-seed randomized runs (as chrony's unit tests
 * do for its address filter) compare each helper with a reference written
 * another way: text built and checked digit by digit, containment bit by
 * bit on host-order numbers.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "addr.h"
#include "testrng.h"

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
		"256.0.0.0/8", "10.0.0.0/008", "10.0.0.0/08", "10.0.0.0/00",
		"10.0.0.0/+8", "/8", "10.0.0.0//8", "10.0.0.0/8/8",
		"010.0.0.0/8", "1.2.3.4.5/8",
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

/* ---- fixed-seed randomized runs ---- */

#define RUNS	200000

static uint32_t
rng_below(uint32_t n)
{
	return (uint32_t)rnd(n);
}

/* An address the edges favour: 0, all ones, octets 0, 1, 254, 255. */
static uint32_t
rng_addr(void)
{
	static const uint8_t edge[] = { 0, 1, 9, 10, 99, 100, 127, 128, 199,
	    200, 249, 250, 254, 255 };
	uint32_t a = 0;
	int i;

	if (rng_below(4) != 0)
		return (uint32_t)rng();
	for (i = 0; i < 4; i++)
		a = a << 8 | edge[rng_below(sizeof(edge))];
	return a;
}

/* The reference text of a host-order address. */
static void
ref_format(uint32_t h, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%u.%u.%u", h >> 24, h >> 16 & 255, h >> 8 & 255,
	    h & 255);
}

/* The reference parser: n decimal numbers without leading zeros, each at
 * most max, separated by sep, and nothing else. */
static bool
ref_numbers(const char *s, int n, char sep, unsigned max, unsigned *out)
{
	int i;

	for (i = 0; i < n; i++) {
		unsigned v = 0;
		int digits = 0;

		while (*s >= '0' && *s <= '9') {
			if (digits == 1 && v == 0)
				return false;		/* a leading zero */
			v = v * 10 + (unsigned)(*s++ - '0');
			if (++digits > 3 || v > max)
				return false;
		}
		if (digits == 0)
			return false;
		out[i] = v;
		if (i < n - 1 && *s++ != sep)
			return false;
	}
	return *s == '\0';
}

static bool
ref_ip4(const char *s, uint32_t *h)
{
	unsigned o[4];

	if (!ref_numbers(s, 4, '.', 255, o))
		return false;
	*h = (uint32_t)o[0] << 24 | o[1] << 16 | o[2] << 8 | o[3];
	return true;
}

static bool
ref_cidr4(const char *s, uint32_t *h, unsigned *prefix)
{
	char ip[64];
	const char *slash = strchr(s, '/');

	if (slash == NULL || (size_t)(slash - s) >= sizeof(ip))
		return false;
	memcpy(ip, s, (size_t)(slash - s));
	ip[slash - s] = '\0';
	return ref_ip4(ip, h) && ref_numbers(slash + 1, 1, 0, 32, prefix);
}

/* Containment, one bit at a time from the top. */
static bool
ref_contains(uint32_t net, unsigned prefix, uint32_t addr)
{
	unsigned i;

	for (i = 0; i < prefix && i < 32; i++)
		if ((net >> (31 - i) & 1) != (addr >> (31 - i) & 1))
			return false;
	return true;
}

/* Text that is often an address and often almost one. */
static void
rng_ip_text(char *buf, size_t len, bool cidr)
{
	static const char *const pieces[] = {
		"0", "1", "00", "01", "007", "10", "99", "255", "256", "300",
		"999", "1000", "", " 1", "1 ", "+1", "-1", "0x1", "a",
	};
	size_t n = 0;
	int parts = rng_below(8) == 0 ? 3 + (int)rng_below(3) : 4, i;

	buf[0] = '\0';
	for (i = 0; i < parts; i++) {
		if (rng_below(3) == 0)
			n += (size_t)snprintf(buf + n, len - n, "%s",
			    pieces[rng_below(sizeof(pieces) / sizeof(pieces[0]))]);
		else
			n += (size_t)snprintf(buf + n, len - n, "%u",
			    rng_below(256));
		if (i < parts - 1)
			n += (size_t)snprintf(buf + n, len - n, "%s",
			    rng_below(50) == 0 ? ".." : ".");
	}
	if (cidr) {
		static const char *const prefixes[] = {
			"/0", "/1", "/8", "/9", "/24", "/31", "/32", "/33",
			"/00", "/08", "/032", "/", "/ 8", "/8 ", "/+8", "/-0",
			"/99", "/1x", "//8", "",
		};

		if (rng_below(2) == 0)
			snprintf(buf + n, len - n, "/%u", rng_below(33));
		else
			snprintf(buf + n, len - n, "%s", prefixes[rng_below(
			    sizeof(prefixes) / sizeof(prefixes[0]))]);
	}
}

/* format then parse gives the address back; the text is the reference's. */
/* A pod's host veth name: what enid-cni makes, and nothing else. */
static void
test_veth_name(void **state)
{
	(void)state;
	assert_true(veth_name_ok("enid1a2b3c4d5e6"));
	assert_true(veth_name_ok("a"));
	assert_true(veth_name_ok("0123456789abcde"));
	assert_false(veth_name_ok(""));
	assert_false(veth_name_ok("0123456789abcdef"));	/* 16 */
	assert_false(veth_name_ok("enid-1"));
	assert_false(veth_name_ok("eth0:1"));
	assert_false(veth_name_ok("../x"));
	assert_false(veth_name_ok("Enid1"));
	assert_false(veth_name_ok("enid 1"));
	assert_false(veth_name_ok("enid\x01"));
}

static void
test_random_ip4_round_trip(void **state)
{
	char buf[IP4_STR_LEN], want[32];
	uint32_t h, back;
	int i;

	(void)state;
	rng_state = 13;
	for (i = 0; i < RUNS; i++) {
		h = rng_addr();
		ip4_format(htonl(h), buf);
		ref_format(h, want, sizeof(want));
		if (strcmp(buf, want) != 0)
			fail_msg("0x%08x formatted as %s, not %s", h, buf, want);
		assert_int_equal(ip4_parse(buf, &back), 0);
		assert_int_equal(back, htonl(h));
	}
}

/* parse agrees with the reference on text that is and isn't an address. */
static void
test_random_ip4_parse(void **state)
{
	char text[64];
	uint32_t a, h;
	bool ok;
	int i;

	(void)state;
	rng_state = 14;
	for (i = 0; i < RUNS; i++) {
		rng_ip_text(text, sizeof(text), false);
		ok = ref_ip4(text, &h);
		if ((ip4_parse(text, &a) == 0) != ok)
			fail_msg("\"%s\": %s by ip4_parse, %s by the reference",
			    text, ok ? "refused" : "accepted",
			    ok ? "accepted" : "refused");
		if (ok)
			assert_int_equal(a, htonl(h));
	}
}

static void
test_random_cidr4(void **state)
{
	char text[64], buf[CIDR4_STR_LEN], want[40];
	uint32_t a, h;
	uint8_t p;
	unsigned rp;
	bool ok;
	int i;

	(void)state;
	rng_state = 15;
	for (i = 0; i < RUNS; i++) {
		/* round trip */
		h = rng_addr();
		rp = rng_below(33);
		cidr4_format(htonl(h), (uint8_t)rp, buf);
		ref_format(h, want, sizeof(want));
		snprintf(want + strlen(want), sizeof(want) - strlen(want),
		    "/%u", rp);
		if (strcmp(buf, want) != 0)
			fail_msg("0x%08x/%u formatted as %s, not %s", h, rp,
			    buf, want);
		assert_int_equal(cidr4_parse(buf, &a, &p), 0);
		assert_int_equal(a, htonl(h));
		assert_int_equal(p, rp);
		/* parse against the reference */
		rng_ip_text(text, sizeof(text), true);
		ok = ref_cidr4(text, &h, &rp);
		if ((cidr4_parse(text, &a, &p) == 0) != ok)
			fail_msg("\"%s\": %s by cidr4_parse, %s by the "
			    "reference", text, ok ? "refused" : "accepted",
			    ok ? "accepted" : "refused");
		if (ok) {
			assert_int_equal(a, htonl(h));
			assert_int_equal(p, rp);
		}
	}
}

/* Containment against the bit-by-bit reference, often at a network's
 * first and last address and just outside them. */
static void
test_random_contains(void **state)
{
	uint32_t net, addr, size;
	unsigned prefix;
	int i;

	(void)state;
	rng_state = 16;
	for (prefix = 0; prefix <= 32; prefix++) {
		uint32_t m = prefix == 0 ? 0 : 0xffffffffu << (32 - prefix);

		assert_int_equal(prefix_mask((uint8_t)prefix), htonl(m));
	}
	assert_int_equal(prefix_mask(33), 0xffffffffu);
	assert_int_equal(prefix_mask(255), 0xffffffffu);
	for (i = 0; i < RUNS; i++) {
		net = rng_addr();
		prefix = rng_below(33);
		size = prefix == 0 ? 0 : (uint32_t)(1ULL << (32 - prefix));
		switch (rng_below(5)) {
		case 0:
			addr = rng_addr();
			break;
		case 1:			/* the first address */
			addr = net & ~(size - 1);
			break;
		case 2:			/* the last address */
			addr = (net & ~(size - 1)) + size - 1;
			break;
		case 3:			/* just below the network */
			addr = (net & ~(size - 1)) - 1;
			break;
		default:		/* just above it */
			addr = (net & ~(size - 1)) + size;
			break;
		}
		if (cidr4_contains(htonl(net), (uint8_t)prefix, htonl(addr)) !=
		    ref_contains(net, prefix, addr))
			fail_msg("0x%08x/%u contains 0x%08x: the reference says "
			    "%s", net, prefix, addr,
			    ref_contains(net, prefix, addr) ? "yes" : "no");
	}
}

/* MACs: random bytes round trip, in either case; one character changed
 * is refused unless it is still a hex digit where one belongs. */
static void
test_random_mac(void **state)
{
	static const char alphabet[] = "0123456789abcdefABCDEFgGxX:-. \t/";
	uint8_t mac[6], back[6];
	char buf[MAC_STR_LEN], want[MAC_STR_LEN + 8], text[32];
	int i, j, pos;

	(void)state;
	rng_state = 17;
	for (i = 0; i < RUNS; i++) {
		for (j = 0; j < 6; j++)
			mac[j] = (uint8_t)rng_below(256);
		mac_format(mac, buf);
		snprintf(want, sizeof(want), "%02x:%02x:%02x:%02x:%02x:%02x",
		    mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
		assert_string_equal(buf, want);
		for (j = 0; buf[j] != '\0'; j++)
			if (rng_below(2) && buf[j] >= 'a' && buf[j] <= 'f')
				buf[j] = (char)(buf[j] - 'a' + 'A');
		assert_int_equal(mac_parse(buf, back), 0);
		assert_memory_equal(back, mac, 6);
		assert_int_equal(mac_is_zero(mac), mac[0] == 0 && mac[1] == 0 &&
		    mac[2] == 0 && mac[3] == 0 && mac[4] == 0 && mac[5] == 0);

		/* one character replaced */
		strcpy(text, buf);
		pos = (int)rng_below(17);
		text[pos] = alphabet[rng_below(sizeof(alphabet) - 1)];
		{
			bool colon = pos % 3 == 2;
			bool hex = strchr("0123456789abcdefABCDEF",
			    text[pos]) != NULL;

			assert_int_equal(mac_parse(text, back) == 0,
			    colon ? text[pos] == ':' : hex);
		}
		/* one character cut or added */
		strcpy(text, buf);
		if (rng_below(2)) {
			text[rng_below(17)] = '\0';
		} else {
			text[17] = alphabet[rng_below(sizeof(alphabet) - 1)];
			text[18] = '\0';
		}
		assert_int_equal(mac_parse(text, back), -1);
	}
	memset(mac, 0, sizeof(mac));
	assert_true(mac_is_zero(mac));
	mac[5] = 1;
	assert_false(mac_is_zero(mac));
}

/* The widest texts fit their buffers exactly. */
static void
test_text_sizes(void **state)
{
	char ip[IP4_STR_LEN], cidr[CIDR4_STR_LEN], mac[MAC_STR_LEN];
	uint8_t m[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

	(void)state;
	ip4_format(0xffffffffu, ip);
	assert_int_equal(strlen(ip), IP4_STR_LEN - 1);
	cidr4_format(htonl(0xc8c8c8c8), 32, cidr);
	assert_string_equal(cidr, "200.200.200.200/32");
	assert_int_equal(strlen(cidr), CIDR4_STR_LEN - 1);
	mac_format(m, mac);
	assert_int_equal(strlen(mac), MAC_STR_LEN - 1);
	cidr4_format(0, 0, cidr);
	assert_string_equal(cidr, "0.0.0.0/0");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mac),
		cmocka_unit_test(test_veth_name),
		cmocka_unit_test(test_ip4_and_cidr),
		cmocka_unit_test(test_random_ip4_round_trip),
		cmocka_unit_test(test_random_ip4_parse),
		cmocka_unit_test(test_random_cidr4),
		cmocka_unit_test(test_random_contains),
		cmocka_unit_test(test_random_mac),
		cmocka_unit_test(test_text_sizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
