/*
 * Address helpers: strict parsing of MACs, and the one address type of
 * both families (struct ip_addr, struct ip_prefix) with its 32-bit edge.
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

/* ---- the one address type, both families ---- */

static struct ip_addr
v6(const char *s)
{
	struct ip_addr a;

	memset(&a, 0, sizeof(a));
	a.family = AF_INET6;
	assert_int_equal(inet_pton(AF_INET6, s, a.bytes), 1);
	return a;
}

static struct ip_addr
v4(const char *s)
{
	struct ip_addr a;

	memset(&a, 0, sizeof(a));
	a.family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, s, a.bytes), 1);
	return a;
}

/* The layout is the wire's: no hole, byte-aligned, one form per value. */
static void
test_ip_addr_layout(void **state)
{
	struct ip_addr a, b;

	(void)state;
	assert_int_equal(sizeof(struct ip_addr), 20);
	assert_int_equal(_Alignof(struct ip_addr), 1);
	assert_int_equal(sizeof(struct ip_prefix), 24);
	assert_int_equal(offsetof(struct ip_addr, bytes), 4);
	assert_int_equal(offsetof(struct ip_prefix, len), 20);

	a = ip_addr_from_in(htonl(0x0a000102));
	b = v4("10.0.1.2");
	assert_memory_equal(&a, &b, sizeof(a));
	assert_true(ip_addr_valid(&a));
	assert_null(ip_addr_check(&a));

	b = a;
	b.pad[1] = 1;
	assert_string_equal(ip_addr_check(&b), "address padding not zero");
	b = a;
	b.bytes[4] = 1;
	assert_string_equal(ip_addr_check(&b),
	    "IPv4 address with bytes past its fourth");
	b = a;
	b.bytes[15] = 1;
	assert_false(ip_addr_valid(&b));
	b = a;
	b.family = 0;
	assert_string_equal(ip_addr_check(&b), "address of an unknown family");
	b.family = 7;
	assert_false(ip_addr_valid(&b));
	b = v6("::ffff:10.0.1.2");
	assert_string_equal(ip_addr_check(&b),
	    "IPv4-mapped IPv6 address (its form is the IPv4 one)");
	b = v6("2600:1f14::1");
	assert_null(ip_addr_check(&b));
	b.pad[0] = 1;
	assert_false(ip_addr_valid(&b));
	memset(&b, 0, sizeof(b));
	assert_false(ip_addr_valid(&b));	/* never set */
}

static void
test_ip_addr_parse_format(void **state)
{
	static const struct {
		const char *text;
		int family;
	} good[] = {
		{ "10.0.1.2", AF_INET }, { "0.0.0.0", AF_INET },
		{ "255.255.255.255", AF_INET }, { "::", AF_INET6 },
		{ "::1", AF_INET6 }, { "fe80::1", AF_INET6 },
		{ "fe80:ec2::1", AF_INET6 }, { "fd00:ec2::254", AF_INET6 },
		{ "2600:1f14:abc:de00:1234:5678:9abc:def0", AF_INET6 },
		{ "2001:db8::", AF_INET6 }, { "2001:db8:0:1::", AF_INET6 },
		{ "2001:db8::1:0:0:1", AF_INET6 },	/* first of equal runs */
		{ "2001:0:0:1::1", AF_INET6 },		/* the longer run */
		{ "2001:db8:0:1:1:1:1:1", AF_INET6 },	/* one zero: no :: */
		{ "::ffff:0:a00:102", AF_INET6 },	/* not mapped: SIIT */
		{ "::a00:102", AF_INET6 },	/* IPv4-compatible, in hex */
		{ "ff02::1", AF_INET6 },
	};
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "", "empty address" },
		{ "10.0.1", "not an IPv4" }, { "10.0.1.2 ", "not an IPv4" },
		{ " 10.0.1.2", "not an IPv4" }, { "010.0.1.2", "not an IPv4" },
		{ "10.0.1.02", "not an IPv4" }, { "10.0.1.256", "not an IPv4" },
		{ "10.0.1.2.3", "not an IPv4" }, { "0x0a.0.1.2", "not an IPv4" },
		{ "10.0.1.2/32", "not an IPv4" }, { "1e1.0.0.0", "not an IPv4" },
		{ "fe80::1%eth0", "zone id" }, { "10.0.1.2%1", "zone id" },
		{ "::ffff:10.0.1.2", "dotted quad" },
		{ "::10.0.1.2", "dotted quad" },
		{ "::ffff:a00:102", "IPv4-mapped" },
		{ "FE80::1", "RFC 5952" }, { "fe80::01", "RFC 5952" },
		{ "fe80:0::1", "RFC 5952" }, { "fe80:0:0:0:0:0:0:1", "RFC 5952" },
		{ "2001:db8:0:0:1::1", "RFC 5952" },	/* a run left */
		{ "2001:db8::1:1:1:1:1", "RFC 5952" },	/* :: for one zero */
		{ "2001:0:0:1::1:1", "RFC 5952" },	/* not the first run */
		{ "0::", "RFC 5952" }, { "::0", "RFC 5952" },
		{ "[::1]", "not an IPv6" }, { "::1 ", "not an IPv6" },
		{ "1::2::3", "not an IPv6" }, { ":::", "not an IPv6" },
		{ "1:2:3:4:5:6:7:8:9", "not an IPv6" }, { "::g", "not an IPv6" },
		{ "12345::", "not an IPv6" }, { "::1/128", "not an IPv6" },
		{ "2600:1f14:abc:de00:1234:5678:9abc:def0:1", "not an IPv6" },
	};
	struct ip_addr a, ref;
	char buf[IP_ADDR_STR_LEN];
	const char *why;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		why = NULL;
		if (ip_addr_parse(good[i].text, &a, &why) != 0)
			fail_msg("refused %s: %s", good[i].text, why);
		assert_int_equal(a.family, good[i].family);
		assert_true(ip_addr_valid(&a));
		ref = good[i].family == AF_INET ? v4(good[i].text) :
		    v6(good[i].text);
		assert_memory_equal(&a, &ref, sizeof(a));
		ip_addr_format(&a, buf);
		assert_string_equal(buf, good[i].text);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		if (ip_addr_parse(bad[i].text, &a, &why) == 0)
			fail_msg("accepted \"%s\"", bad[i].text);
		assert_non_null(why);
		if (strstr(why, bad[i].why) == NULL)
			fail_msg("\"%s\" refused as \"%s\", not for %s",
			    bad[i].text, why, bad[i].why);
		/* a refusal leaves nothing that looks set */
		assert_false(ip_addr_valid(&a));
	}
	assert_int_equal(ip_addr_parse("x", &a, NULL), -1);

	/* an address that is not valid formats as such */
	memset(&a, 0, sizeof(a));
	ip_addr_format(&a, buf);
	assert_string_equal(buf, "invalid");
	a = v6("::ffff:1.2.3.4");
	ip_addr_format(&a, buf);
	assert_string_equal(buf, "invalid");
}

static void
test_ip_addr_order_and_edges(void **state)
{
	struct ip_addr a = v4("255.255.255.255"), b = v6("::"), c, d;
	uint32_t in;
	static const uint8_t mapped[16] = { [10] = 0xff, [11] = 0xff, [15] = 1 };
	static const uint8_t four[4] = { 10, 0, 1, 2 };

	(void)state;
	/* IPv4 before IPv6, then by bytes */
	assert_true(ip_addr_cmp(&a, &b) < 0);
	assert_true(ip_addr_cmp(&b, &a) > 0);
	c = v6("::1");
	assert_true(ip_addr_cmp(&b, &c) < 0);
	assert_int_equal(ip_addr_cmp(&c, &c), 0);
	assert_true(ip_addr_eq(&c, &c));
	assert_false(ip_addr_eq(&b, &c));
	c = v4("10.0.0.1");
	d = v4("10.0.0.2");
	assert_true(ip_addr_cmp(&c, &d) < 0);
	/* same bytes, other family: not equal */
	memset(&c, 0, sizeof(c));
	c.family = AF_INET;
	d = c;
	d.family = AF_INET6;
	assert_false(ip_addr_eq(&c, &d));
	assert_true(ip_addr_cmp(&c, &d) < 0);

	/* the 32-bit edge */
	assert_int_equal(ip_addr_to_in(&a, &in), 0);
	assert_int_equal(in, 0xffffffffu);
	in = 7;
	assert_int_equal(ip_addr_to_in(&b, &in), -1);
	assert_int_equal(in, 7);

	/* the kernel's bytes */
	assert_int_equal(ip_addr_from_bytes(&c, AF_INET, four, 4), 0);
	d = v4("10.0.1.2");
	assert_true(ip_addr_eq(&c, &d));
	assert_int_equal(ip_addr_from_bytes(&c, AF_INET6, mapped, 16), -1);
	assert_false(ip_addr_valid(&c));
	assert_int_equal(ip_addr_from_bytes(&c, AF_INET, mapped, 16), -1);
	assert_int_equal(ip_addr_from_bytes(&c, AF_INET6, four, 4), -1);
	assert_int_equal(ip_addr_from_bytes(&c, AF_UNIX, four, 4), -1);
	assert_int_equal(ip_addr_from_bytes(&c, AF_INET6, b.bytes, 16), 0);
	assert_true(ip_addr_eq(&c, &b));

	assert_int_equal(ip_family_bits(AF_INET), 32);
	assert_int_equal(ip_family_bits(AF_INET6), 128);
	assert_int_equal(ip_family_bits(AF_UNSPEC), 0);
	assert_string_equal(ip_family_name(AF_INET), "IPv4");
	assert_string_equal(ip_family_name(AF_INET6), "IPv6");
	assert_string_equal(ip_family_name(99), "an unknown family");
}

/* Each kind, each family, and the addresses just outside each. */
static void
test_ip_addr_classes(void **state)
{
	enum { UNSPEC = 1, LOOP = 2, LL = 4, MCAST = 8, RSVD = 16,
	    V4E = 32 };
	static const struct {
		const char *text;
		unsigned int kinds;
	} cases[] = {
		{ "0.0.0.0", UNSPEC | RSVD }, { "0.1.2.3", RSVD },
		{ "1.0.0.0", 0 }, { "10.0.0.1", 0 },
		{ "126.255.255.255", 0 }, { "127.0.0.0", LOOP },
		{ "127.255.255.255", LOOP }, { "128.0.0.0", 0 },
		{ "169.253.255.255", 0 }, { "169.254.0.0", LL },
		{ "169.254.169.254", LL }, { "169.255.0.0", 0 },
		{ "223.255.255.255", 0 }, { "224.0.0.0", MCAST },
		{ "239.255.255.255", MCAST }, { "240.0.0.0", RSVD },
		{ "255.255.255.255", RSVD },
		{ "::", UNSPEC | RSVD }, { "::1", LOOP | RSVD },
		{ "::2", RSVD }, { "::a00:1", RSVD }, { "ff::", RSVD },
		{ "100::", 0 }, { "2600:1f14::1", 0 }, { "fd00:ec2::254", 0 },
		{ "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 0 },
		{ "fe80::", LL }, { "fe80:ec2::1", LL },
		{ "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", LL },
		{ "fec0::", 0 }, { "ff00::", MCAST }, { "ff02::1", MCAST },
		{ "feff::", 0 },
		/* NAT64's prefixes lie in ::/8 too */
		{ "64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", RSVD },
		{ "64:ff9b::", RSVD | V4E }, { "64:ff9b::a00:1", RSVD | V4E },
		{ "64:ff9b::ffff:ffff", RSVD | V4E },
		{ "64:ff9b:0:0:1::", RSVD },
		{ "64:ff9b:1::", RSVD | V4E }, { "64:ff9b:1:ffff::1", RSVD | V4E },
		{ "64:ff9b:2::", RSVD }, { "2001:db8::1", 0 },
	};
	struct ip_addr a;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned int k = cases[i].kinds, got;

		assert_int_equal(ip_addr_parse(cases[i].text, &a, NULL), 0);
		got = (ip_addr_is_unspecified(&a) ? UNSPEC : 0) |
		    (ip_addr_is_loopback(&a) ? LOOP : 0) |
		    (ip_addr_is_link_local(&a) ? LL : 0) |
		    (ip_addr_is_multicast(&a) ? MCAST : 0) |
		    (ip_addr_is_reserved(&a) ? RSVD : 0) |
		    (ip_addr_is_ipv4_embedded(&a) ? V4E : 0);
		if (got != k)
			fail_msg("%s: kinds 0x%x, want 0x%x", cases[i].text,
			    got, k);
		assert_int_equal(ip_addr_is_special(&a), k != 0);
	}
	/* IPv4-mapped bytes, which no canonical value holds */
	memset(&a, 0, sizeof(a));
	a.family = AF_INET6;
	a.bytes[10] = a.bytes[11] = 0xff;
	a.bytes[12] = 10;
	assert_true(ip_addr_is_ipv4_embedded(&a));
	assert_true(ip_addr_is_special(&a));
	/* an address never set is none of them */
	memset(&a, 0, sizeof(a));
	assert_false(ip_addr_is_unspecified(&a) || ip_addr_is_loopback(&a) ||
	    ip_addr_is_link_local(&a) || ip_addr_is_multicast(&a) ||
	    ip_addr_is_reserved(&a) || ip_addr_is_ipv4_embedded(&a) ||
	    ip_addr_is_special(&a));
}

static void
test_ip_prefix(void **state)
{
	static const char *const good[] = {
		"10.0.0.0/16", "10.0.1.2/20", "0.0.0.0/0", "1.2.3.4/32",
		"::/0", "2600:1f14:abc:de00::/56", "2600:1f14:0:0:1::/80",
		"::1/128", "fe80::/10", "2001:db8::1/100",
	};
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "10.0.0.0", "without a length" }, { "::", "without a length" },
		{ "10.0.0.0/", "decimal" }, { "10.0.0.0/33", "longer than 32" },
		{ "::/129", "longer than 128" }, { "::/999", "longer than 128" },
		{ "::/1280", "decimal" }, { "10.0.0.0/08", "decimal" },
		{ "::/00", "decimal" }, { "::/064", "decimal" },
		{ "10.0.0.0/+8", "decimal" }, { "10.0.0.0/-8", "decimal" },
		{ "10.0.0.0/8 ", "decimal" }, { "10.0.0.0/ 8", "decimal" },
		{ "10.0.0.0/8/8", "decimal" }, { "::/0x10", "decimal" },
		{ "/8", "empty address" }, { "010.0.0.0/8", "not an IPv4" },
		{ "FE80::/10", "RFC 5952" }, { "fe80::%1/64", "zone id" },
		{ "::ffff:10.0.0.0/104", "dotted quad" },
		{ "::ffff:a00:0/104", "IPv4-mapped" },
		{ "0000:0000:0000:0000:0000:0000:0000:0000:0000/64",
		    "too long" },
	};
	struct ip_prefix p, q;
	struct ip_addr a, m;
	char buf[IP_PREFIX_STR_LEN];
	const char *why;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		why = NULL;
		if (ip_prefix_parse(good[i], &p, &why) != 0)
			fail_msg("refused %s: %s", good[i], why);
		assert_true(ip_prefix_valid(&p));
		ip_prefix_format(&p, buf);
		assert_string_equal(buf, good[i]);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		if (ip_prefix_parse(bad[i].text, &p, &why) == 0)
			fail_msg("accepted \"%s\"", bad[i].text);
		if (why == NULL || strstr(why, bad[i].why) == NULL)
			fail_msg("\"%s\" refused as \"%s\", not for %s",
			    bad[i].text, why ? why : "(nothing)", bad[i].why);
		assert_false(ip_prefix_valid(&p));
	}

	/* host bits, the network, containment across families */
	assert_int_equal(ip_prefix_parse("10.0.1.2/20", &p, NULL), 0);
	assert_false(ip_prefix_is_network(&p));
	q = ip_prefix_network(&p);
	ip_prefix_format(&q, buf);
	assert_string_equal(buf, "10.0.0.0/20");
	assert_true(ip_prefix_is_network(&q));
	a = v4("10.0.15.255");
	assert_true(ip_prefix_contains(&p, &a));
	assert_true(ip_prefix_contains(&q, &a));
	a = v4("10.0.16.0");
	assert_false(ip_prefix_contains(&q, &a));
	a = v6("a00:0:0:1::");		/* 10.0.0.1's bytes, other family */
	assert_false(ip_prefix_contains(&q, &a));

	assert_int_equal(ip_prefix_parse("2600:1f14:abc:de00:1234::/80", &p,
	    NULL), 0);
	assert_true(ip_prefix_is_network(&p));
	a = v6("2600:1f14:abc:de00:1234:ffff:ffff:ffff");
	assert_true(ip_prefix_contains(&p, &a));
	a = v6("2600:1f14:abc:de00:1235::");
	assert_false(ip_prefix_contains(&p, &a));
	a = v4("38.0.31.20");		/* 0x2600_1f14's bytes */
	assert_false(ip_prefix_contains(&p, &a));
	assert_int_equal(ip_prefix_parse("2600:1f14:abc:de00:1234::1/79", &q,
	    NULL), 0);
	assert_false(ip_prefix_is_network(&q));
	m = ip_addr_masked(&q.addr, 79);
	ip_addr_format(&m, buf);
	assert_string_equal(buf, "2600:1f14:abc:de00:1234::");
	m = ip_addr_masked(&q.addr, 0);
	assert_true(ip_addr_is_unspecified(&m));
	m = ip_addr_masked(&q.addr, 200);
	assert_true(ip_addr_eq(&m, &q.addr));

	/* overlap: one holds the other, same family only */
	assert_int_equal(ip_prefix_parse("10.0.0.0/16", &p, NULL), 0);
	assert_int_equal(ip_prefix_parse("10.0.16.0/20", &q, NULL), 0);
	assert_true(ip_prefix_overlaps(&p, &q));
	assert_true(ip_prefix_overlaps(&q, &p));
	assert_int_equal(ip_prefix_parse("10.1.0.0/16", &q, NULL), 0);
	assert_false(ip_prefix_overlaps(&p, &q));
	assert_int_equal(ip_prefix_parse("a00::/8", &q, NULL), 0);
	assert_false(ip_prefix_overlaps(&p, &q));
	assert_int_equal(ip_prefix_parse("::/0", &p, NULL), 0);
	assert_true(ip_prefix_overlaps(&p, &q));
	assert_true(ip_prefix_eq(&q, &q));
	assert_false(ip_prefix_eq(&p, &q));

	/* what is not valid */
	assert_int_equal(ip_prefix_parse("10.0.0.0/8", &p, NULL), 0);
	p.len = 33;
	assert_string_equal(ip_prefix_check(&p), "IPv4 prefix longer than 32");
	a = v4("10.0.0.1");
	assert_false(ip_prefix_contains(&p, &a));
	ip_prefix_format(&p, buf);
	assert_string_equal(buf, "invalid");
	p.len = 8;
	p.pad[2] = 1;
	assert_string_equal(ip_prefix_check(&p), "prefix padding not zero");
	p.pad[2] = 0;
	p.addr.bytes[5] = 1;
	assert_false(ip_prefix_valid(&p));
	assert_int_equal(ip_prefix_parse("::/64", &p, NULL), 0);
	p.len = 129;
	assert_string_equal(ip_prefix_check(&p), "IPv6 prefix longer than 128");
}

/* The reference RFC 5952 text, built another way: every group in full
 * hex, then the longest textual run of ":0" groups (two or more; the
 * first of equal ones) cut to "::". */
static void
ref_format6(const uint8_t b[16], char *out, size_t outlen)
{
	char full[64], pat[64];
	int len, k;

	snprintf(full, sizeof(full), ":%x:%x:%x:%x:%x:%x:%x:%x:",
	    b[0] << 8 | b[1], b[2] << 8 | b[3], b[4] << 8 | b[5],
	    b[6] << 8 | b[7], b[8] << 8 | b[9], b[10] << 8 | b[11],
	    b[12] << 8 | b[13], b[14] << 8 | b[15]);
	for (len = 8; len >= 2; len--) {
		char *at;

		pat[0] = '\0';
		for (k = 0; k < len; k++)
			strcat(pat, ":0");
		strcat(pat, ":");
		if ((at = strstr(full, pat)) != NULL) {
			char tmp[64];

			snprintf(tmp, sizeof(tmp), "%.*s::%s", (int)(at - full),
			    full, at + strlen(pat));
			strcpy(full, tmp);
			break;
		}
	}
	/* drop the outer colons unless they are part of a "::" */
	len = (int)strlen(full);
	if (len >= 2 && full[len - 1] == ':' && full[len - 2] != ':')
		full[--len] = '\0';
	snprintf(out, outlen, "%s", full[0] == ':' && full[1] != ':' ?
	    full + 1 : full);
}

/* An IPv6 address the edges favour: runs of zero groups, all ones. */
static void
rng_addr6(uint8_t b[16])
{
	int i;

	for (i = 0; i < 8; i++) {
		uint16_t g;

		switch (rng_below(4)) {
		case 0:
		case 1:
			g = 0;
			break;
		case 2:
			g = (uint16_t)rng();
			break;
		default:
			g = (uint16_t)(rng_below(2) ? 0xffff :
			    rng_below(2) ? 1 : 0x10);
			break;
		}
		b[2 * i] = (uint8_t)(g >> 8);
		b[2 * i + 1] = (uint8_t)g;
	}
	if (rng_below(20) == 0) {	/* mapped now and then */
		memset(b, 0, 10);
		b[10] = b[11] = 0xff;
	}
}

/* IPv6: format agrees with the reference and parses back; an address
 * written another way is refused for not being canonical, and is the
 * same address by inet_pton. */
static void
test_random_ip6(void **state)
{
	char buf[IP_ADDR_STR_LEN], want[64], text[80];
	uint8_t b[16], other[16];
	struct ip_addr a, back;
	const char *why;
	bool mapped;
	int i, g;

	(void)state;
	rng_state = 18;
	for (i = 0; i < RUNS; i++) {
		rng_addr6(b);
		mapped = ip_addr_from_bytes(&a, AF_INET6, b, 16) == -1;
		if (mapped) {
			assert_true(b[10] == 0xff && b[11] == 0xff);
			continue;
		}
		ip_addr_format(&a, buf);
		ref_format6(b, want, sizeof(want));
		if (strcmp(buf, want) != 0)
			fail_msg("formatted as %s, not %s", buf, want);
		why = NULL;
		if (ip_addr_parse(buf, &back, &why) != 0)
			fail_msg("%s refused: %s", buf, why);
		assert_memory_equal(&back, &a, sizeof(a));

		/* another spelling: full groups, some leading zeros or
		 * upper case */
		text[0] = '\0';
		for (g = 0; g < 8; g++)
			snprintf(text + strlen(text),
			    sizeof(text) - strlen(text),
			    rng_below(2) ? "%s%04X" : "%s%x", g ? ":" : "",
			    b[2 * g] << 8 | b[2 * g + 1]);
		assert_int_equal(inet_pton(AF_INET6, text, other), 1);
		assert_memory_equal(other, b, 16);
		if (strcmp(text, buf) == 0)
			assert_int_equal(ip_addr_parse(text, &back, NULL), 0);
		else if (ip_addr_parse(text, &back, &why) == 0)
			fail_msg("accepted %s (canonical %s)", text, buf);
		else if (strstr(why, "RFC 5952") == NULL)
			fail_msg("%s refused as \"%s\"", text, why);
	}
}

/* Containment of either family against the bit-by-bit reference, near
 * the network's edges. */
static void
test_random_prefix_contains(void **state)
{
	struct ip_prefix p;
	struct ip_addr a;
	unsigned int bits, j;
	bool want;
	int i;

	(void)state;
	rng_state = 19;
	for (i = 0; i < RUNS; i++) {
		memset(&p, 0, sizeof(p));
		if (rng_below(2)) {
			p.addr = ip_addr_from_in(htonl(rng_addr()));
			bits = 32;
		} else {
			do
				rng_addr6(p.addr.bytes);
			while (ip_addr_from_bytes(&p.addr, AF_INET6,
			    p.addr.bytes, 16) == -1);
			bits = 128;
		}
		p.len = (uint8_t)rng_below(bits + 1);
		a = p.addr;
		switch (rng_below(4)) {
		case 0:			/* one bit flipped */
			j = (unsigned int)rng_below(bits);
			a.bytes[j / 8] ^= (uint8_t)(0x80u >> (j % 8));
			break;
		case 1:			/* the first address */
			a = ip_addr_masked(&p.addr, p.len);
			break;
		case 2:			/* the last */
			for (j = p.len; j < bits; j++)
				a.bytes[j / 8] |= (uint8_t)(0x80u >> (j % 8));
			break;
		default:		/* the other family */
			if (bits == 32) {
				memset(&a, 0, sizeof(a));
				a.family = AF_INET6;
				memcpy(a.bytes, p.addr.bytes, 4);
				a.bytes[0] |= 0x20;	/* never mapped */
			} else {
				a = ip_addr_from_in(0);
				memcpy(a.bytes, p.addr.bytes, 4);
			}
			break;
		}
		want = a.family == p.addr.family;
		for (j = 0; want && j < p.len; j++)
			if (((p.addr.bytes[j / 8] ^ a.bytes[j / 8]) >>
			    (7 - j % 8) & 1) != 0)
				want = false;
		if (ip_prefix_contains(&p, &a) != want)
			fail_msg("contains gave %d, the reference %d (len %u)",
			    !want, want, p.len);
		/* the network holds what the prefix holds */
		{
			struct ip_prefix n = ip_prefix_network(&p);

			assert_true(ip_prefix_is_network(&n));
			assert_int_equal(ip_prefix_contains(&n, &a), want);
			assert_true(ip_prefix_overlaps(&n, &p));
		}
	}
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
	{
		char a6[IP_ADDR_STR_LEN], p6[IP_PREFIX_STR_LEN];
		struct ip_prefix p;

		memset(&p, 0, sizeof(p));
		p.addr.family = AF_INET6;
		memset(p.addr.bytes, 0xff, 16);
		p.len = 128;
		ip_addr_format(&p.addr, a6);
		assert_int_equal(strlen(a6), IP_ADDR_STR_LEN - 1);
		ip_prefix_format(&p, p6);
		assert_int_equal(strlen(p6), IP_PREFIX_STR_LEN - 1);
		/* the longest is no longer than the widest */
		assert_int_equal(ip_prefix_parse(
		    "1111:2222:3333:4444:5555:6666:7777:8888/128", &p, NULL),
		    0);
	}
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
		cmocka_unit_test(test_ip_addr_layout),
		cmocka_unit_test(test_ip_addr_parse_format),
		cmocka_unit_test(test_ip_addr_order_and_edges),
		cmocka_unit_test(test_ip_addr_classes),
		cmocka_unit_test(test_ip_prefix),
		cmocka_unit_test(test_random_ip6),
		cmocka_unit_test(test_random_prefix_contains),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
