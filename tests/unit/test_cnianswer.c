/*
 * enid-cni's reading of the broker's answer (cni/answer.c): the shapes the
 * broker sends parse; every other shape is refused with code 123 and a
 * message naming the field and its value; the special ranges are named.
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
#include "answer.h"

static const char ADD_OK[] =
    "{\"ok\":true,\"ip\":\"10.0.0.55\",\"prefix\":32,\"eni\":\"eni-0a97\","
    "\"eni_mac\":\"02:5a:96:2b:9b:a2\",\"table\":101,"
    "\"subnet\":\"10.0.0.0/20\",\"subnet_gateway\":\"10.0.0.1\","
    "\"vpc_cidrs\":[\"10.0.0.0/16\",\"100.64.0.0/10\"]}\n";

static int
parse(enum cni_cmd cmd, const char *s, struct cni_answer *a,
    struct cni_error *e)
{
	return cni_answer_parse(cmd, s, strlen(s), a, e);
}

static void
test_broker_shapes(void **state)
{
	struct cni_answer a;
	struct cni_error e;
	uint32_t ip;

	(void)state;
	assert_int_equal(parse(CNI_CMD_ADD, ADD_OK, &a, &e), 0);
	assert_true(a.ok);
	ip4_parse("10.0.0.55", &ip);
	assert_int_equal(ip_addr_in4(&a.ip), ip);
	assert_int_equal(a.ip.family, AF_INET);
	assert_int_equal(a.table, 101);
	assert_string_equal(a.eni, "eni-0a97");
	assert_true(a.have_subnet);
	assert_int_equal(a.subnet.len, 20);
	assert_true(ip_prefix_is_network(&a.subnet));
	assert_int_equal(a.ncidrs, 2);
	assert_int_equal(a.cidrs[1].len, 10);
	assert_int_equal(a.cidrs[1].addr.family, AF_INET);
	assert_int_equal(parse(CNI_CMD_CHECK, ADD_OK, &a, &e), 0);

	assert_int_equal(parse(CNI_CMD_DEL, "{\"ok\":true}\n", &a, &e), 0);
	assert_int_equal(parse(CNI_CMD_GC, "{ \"ok\" : true, \"released\": 3 }"
	    "\r\n", &a, &e), 0);
	assert_int_equal(a.released, 3);
	assert_int_equal(parse(CNI_CMD_STATUS, "{\"ok\":true,\"free\":0,"
	    "\"assigned\":4,\"available\":false,\"code\":\"subnet-full\","
	    "\"reason\":\"no free address\",\"lost_pods\":1,"
	    "\"limited_reason\":\"x\"}\n", &a, &e), 0);
	assert_false(a.available);
	assert_int_equal(a.lost_pods, 1);
	assert_string_equal(a.code, "subnet-full");

	assert_int_equal(parse(CNI_CMD_ADD, "{\"ok\":false,\"code\":"
	    "\"subnet-full\",\"error\":\"caf\\u00e9 \\ud83d\\ude00 \xc3\xa9\"}"
	    "\n", &a, &e), 0);
	assert_false(a.ok);
	assert_string_equal(a.error, "caf\xc3\xa9 \xf0\x9f\x98\x80 \xc3\xa9");
}

static void
refused(enum cni_cmd cmd, const char *line, size_t len, const char *needle)
{
	struct cni_answer a;
	struct cni_error e;

	if (cni_answer_parse(cmd, line, len, &a, &e) != -1)
		fail_msg("accepted: %s", line);
	assert_int_equal(e.code, CNI_ERR_ANSWER);
	if (strstr(e.msg, needle) == NULL)
		fail_msg("\"%s\" lacks \"%s\"", e.msg, needle);
}

#define REFUSED(cmd, s, needle)	refused(cmd, s, sizeof(s) - 1, needle)

static void
test_malformed(void **state)
{
	(void)state;
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":\"10.0.0.5\"}",
	    "newline");
	REFUSED(CNI_CMD_ADD, "[1]\n", "not a JSON object: [1]");
	REFUSED(CNI_CMD_ADD, "\n", "not a JSON object");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":\"10.0.0.5\"} x\n",
	    "text after the object: x");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":\"10.0.0.5\",\"ip\":"
	    "\"10.0.0.6\"}\n", "field \"ip\" appears twice");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":\"10.0.0.5\",\"colour\":"
	    "\"blue\"}\n", "unknown field \"colour\"");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":5}\n",
	    "\"ip\" must be a string, not 5");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":[\"10.0.0.5\"]}\n",
	    "\"ip\" must be a string, not [\"10.0.0.5\"]");
	REFUSED(CNI_CMD_ADD, "{\"ok\":\"yes\",\"ip\":\"10.0.0.5\"}\n",
	    "\"ok\" must be true or false, not \"yes\"");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":\"10.0.0.5/32\"}\n",
	    "\"ip\" \"10.0.0.5/32\" is not an IPv4 address");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":\"010.0.0.5\"}\n",
	    "is not an IPv4 address");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":\"10.0.0.5\",\"prefix\":"
	    "24}\n", "\"prefix\" is 24, not 32");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":\"10.0.0.5\",\"prefix\":"
	    "32.0}\n", "\"prefix\" must be an integer from 0 to 4294967295, "
	    "not 32.0");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":\"10.0.0.5\",\"table\":"
	    "-1}\n", "\"table\" must be an integer, not -1");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":\"10.0.0.5\",\"table\":"
	    "99999999999}\n", "not 99999999999");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":\"10.0.0.5\",\"subnet\":"
	    "\"10.0.0.1/20\"}\n", "\"subnet\" \"10.0.0.1/20\" is not a CIDR");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":\"10.0.0.5\",\"vpc_cidrs\":"
	    "[\"10.0.0.0/16\",7]}\n", "\"vpc_cidrs\" must be a string, not 7");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":\"10.0.0.5\",\"vpc_cidrs\":"
	    "[\"1.0.0.0/8\",\"2.0.0.0/8\",\"3.0.0.0/8\",\"4.0.0.0/8\","
	    "\"5.0.0.0/8\",\"6.0.0.0/8\",\"7.0.0.0/8\",\"8.0.0.0/8\","
	    "\"9.0.0.0/8\"]}\n", "\"vpc_cidrs\" has more than 8 IPv4 blocks");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":\"10.0.0.5\",\"eni_mac\":"
	    "\"zz\"}\n", "\"eni_mac\" \"zz\" is not a MAC address");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true}\n", "no \"ip\"");
	REFUSED(CNI_CMD_ADD, "{\"ip\":\"10.0.0.5\"}\n", "no \"ok\"");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":\"10.0.0.5\",\"released\":"
	    "1}\n", "field \"released\" in an answer to ADD");
	REFUSED(CNI_CMD_DEL, "{\"ok\":true,\"ip\":\"10.0.0.5\"}\n",
	    "field \"ip\" in an answer to DEL");
	REFUSED(CNI_CMD_ADD, "{\"ok\":false,\"code\":\"x\",\"ip\":"
	    "\"10.0.0.5\"}\n", "field \"ip\" in a failed answer");
	REFUSED(CNI_CMD_ADD, "{\"ok\":false}\n", "without \"code\"");
	REFUSED(CNI_CMD_ADD, "{\"ok\":false,\"code\":\"Bad Code\"}\n",
	    "\"code\" \"Bad Code\" is not a code");
	REFUSED(CNI_CMD_ADD, "{\"ok\":false,\"code\":\"x\",\"error\":"
	    "\"\xff\"}\n", "not valid UTF-8 at byte 32 of the line (0xff)");
	REFUSED(CNI_CMD_ADD, "{\"ok\":false,\"code\":\"x\",\"error\":"
	    "\"\xc0\xaf\"}\n", "not valid UTF-8");
	REFUSED(CNI_CMD_ADD, "{\"ok\":false,\"code\":\"x\",\"error\":"
	    "\"\xed\xa0\x80\"}\n", "not valid UTF-8");
	REFUSED(CNI_CMD_ADD, "{\"ok\":false,\"code\":\"x\",\"error\":"
	    "\"\\ud800\"}\n", "a lone high surrogate");
	REFUSED(CNI_CMD_ADD, "{\"ok\":false,\"code\":\"x\",\"error\":"
	    "\"\\u0000\"}\n", "a NUL");
	REFUSED(CNI_CMD_ADD, "{\"ok\":false,\"code\":\"x\",\"error\":"
	    "\"a\tb\"}\n", "a control byte 0x09");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":\"10.0.0.5\0\"}\n",
	    "a NUL byte at byte 25");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":\"10.0.0.5\"\n",
	    "',' or '}' expected after \"ip\"");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":{\"a\":[[[[[[[[[[[1]]]]]]]]]]]"
	    "}}\n", "nested deeper than 8");
	REFUSED(CNI_CMD_ADD, "{\"ok\" true}\n", "':' expected after \"ok\"");
	REFUSED(CNI_CMD_ADD, "{ok:true}\n", "a key expected at byte 1");
}

static void
test_long_text(void **state)
{
	static char line[CNI_ANS_TEXT_LEN + 64];
	size_t n;

	(void)state;
	n = (size_t)snprintf(line, sizeof(line), "{\"ok\":false,\"code\":"
	    "\"x\",\"error\":\"");
	memset(line + n, 'a', CNI_ANS_TEXT_LEN);
	n += CNI_ANS_TEXT_LEN;
	memcpy(line + n, "\"}\n", 4);
	refused(CNI_CMD_ADD, line, n + 3, "\"error\" is longer than 511 "
	    "bytes: \"aaaa");
}

static void
test_special(void **state)
{
	static const struct {
		const char *ip, *needle;
	} cases[] = {
		{ "0.1.2.3", "0.0.0.0/8" },
		{ "127.0.0.1", "loopback" },
		{ "169.254.169.254", "link-local" },
		{ "169.254.1.1", "own link-local gateway" },
		{ "224.0.0.251", "multicast" },
		{ "239.255.255.255", "multicast" },
		{ "240.0.0.1", "reserved" },
		{ "255.255.255.255", "broadcast" },
	};
	struct ip_addr ip;
	const char *why;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(ip_addr_parse(cases[i].ip, &ip, NULL), 0);
		why = cni_addr_special(&ip);
		assert_non_null(why);
		if (strstr(why, cases[i].needle) == NULL)
			fail_msg("%s: \"%s\"", cases[i].ip, why);
	}
	for (i = 0; i < 3; i++) {
		static const char *ok[] = { "10.0.0.5", "1.0.0.1",
		    "223.255.255.254" };

		assert_int_equal(ip_addr_parse(ok[i], &ip, NULL), 0);
		assert_null(cni_addr_special(&ip));
	}
	/* IPv6 is a pod's address now; no valid address at all never. */
	assert_int_equal(ip_addr_parse("2600:1f14::5", &ip, NULL), 0);
	assert_null(cni_addr_special(&ip));
	memset(&ip, 0, sizeof(ip));
	assert_non_null(strstr(cni_addr_special(&ip), "neither"));
}

static const char ADD_DUAL[] =
    "{\"ok\":true,\"ip\":\"10.0.0.55\",\"prefix\":32,"
    "\"ip6\":\"2600:1f14:abc:de00:8f::5\",\"eni\":\"eni-0a97\","
    "\"eni_mac\":\"02:5a:96:2b:9b:a2\",\"table\":101,"
    "\"subnet\":\"10.0.0.0/20\",\"subnet_gateway\":\"10.0.0.1\","
    "\"subnet6\":\"2600:1f14:abc:de00::/64\","
    "\"vpc_cidrs\":[\"10.0.0.0/16\",\"2600:1f14:abc:de00::/56\"]}\n";

static const char ADD_V6[] =
    "{\"ok\":true,\"ip6\":\"2600:1f14:abc:de00:8f::5\","
    "\"eni\":\"eni-0a97\",\"eni_mac\":\"02:5a:96:2b:9b:a2\",\"table\":0,"
    "\"subnet6\":\"2600:1f14:abc:de00::/64\","
    "\"vpc_cidrs\":[\"2600:1f14:abc:de00::/56\"]}\n";

static void
test_ipv6_shapes(void **state)
{
	struct cni_answer a;
	struct cni_error e;
	struct ip_addr want;

	(void)state;
	assert_int_equal(parse(CNI_CMD_ADD, ADD_DUAL, &a, &e), 0);
	assert_int_equal(a.ip.family, AF_INET);
	assert_int_equal(a.ip6.family, AF_INET6);
	assert_int_equal(ip_addr_parse("2600:1f14:abc:de00:8f::5", &want,
	    NULL), 0);
	assert_true(ip_addr_eq(&a.ip6, &want));
	assert_true(a.have_subnet6);
	assert_int_equal(a.subnet6.len, 64);
	assert_int_equal(a.ncidrs, 2);
	assert_int_equal(a.cidrs[0].addr.family, AF_INET);
	assert_int_equal(a.cidrs[1].addr.family, AF_INET6);
	assert_null(cni_addr_outside_vpc(&a.ip6, a.cidrs, a.ncidrs));
	assert_int_equal(parse(CNI_CMD_CHECK, ADD_DUAL, &a, &e), 0);

	assert_int_equal(parse(CNI_CMD_ADD, ADD_V6, &a, &e), 0);
	assert_int_equal(a.ip.family, 0);
	assert_false(a.have_subnet);
	assert_int_equal(a.ip6.family, AF_INET6);
	assert_int_equal(parse(CNI_CMD_CHECK, ADD_V6, &a, &e), 0);
	/* Today's IPv4 answer sets nothing of IPv6. */
	assert_int_equal(parse(CNI_CMD_ADD, ADD_OK, &a, &e), 0);
	assert_int_equal(a.ip6.family, 0);
	assert_false(a.have_subnet6);
}

static void
test_ipv6_malformed(void **state)
{
	(void)state;
	/* The right family in each field. */
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"10.0.0.5\"}\n",
	    "\"ip6\" \"10.0.0.5\" is not an IPv6 address");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":\"2600:1f14::5\"}\n",
	    "\"ip\" \"2600:1f14::5\" is not an IPv4 address");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":\"10.0.0.5\",\"subnet\":"
	    "\"2600:1f14::/64\"}\n", "\"subnet\" \"2600:1f14::/64\" is not a "
	    "CIDR block a.b.c.d/n");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":\"10.0.0.5\","
	    "\"subnet_gateway\":\"2600:1f14::1\"}\n", "\"subnet_gateway\" "
	    "\"2600:1f14::1\" is not an IPv4 address");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"2600:1f14::5\","
	    "\"subnet6\":\"10.0.0.0/20\"}\n", "\"subnet6\" \"10.0.0.0/20\" "
	    "is not an IPv6 CIDR block");
	/* Canonical text only (RFC 5952). */
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"2600:1F14::5\"}\n",
	    "is not an IPv6 address in RFC 5952 text");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"2600:1f14:0:0:0:0:0:5\"}"
	    "\n", "\"ip6\" \"2600:1f14:0:0:0:0:0:5\" is not an IPv6");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"2600:01f14::5\"}\n",
	    "is not an IPv6");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"2600:1f14::0:5\"}\n",
	    "is not an IPv6");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"::ffff:10.0.0.5\"}\n",
	    "is not an IPv6");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"fe80::1%eth0\"}\n",
	    "is not an IPv6");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"[2600:1f14::5]\"}\n",
	    "is not an IPv6");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"2600:1f14::5/128\"}\n",
	    "\"ip6\" \"2600:1f14::5/128\" is not an IPv6 address");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"\"}\n", "is not an IPv6");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":5}\n",
	    "\"ip6\" must be a string, not 5");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":[\"2600:1f14::5\"]}\n",
	    "\"ip6\" must be a string");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"2600:1f14::5\",\"ip6\":"
	    "\"2600:1f14::6\"}\n", "field \"ip6\" appears twice");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"2600:1f14::5\",\"prefix6\":"
	    "128}\n", "unknown field \"prefix6\"");
	/* /64 subnets only, networks only. */
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"2600:1f14::5\","
	    "\"subnet6\":\"2600:1f14::/80\"}\n", "\"subnet6\" 2600:1f14::/80 is "
	    "not a /64");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"2600:1f14::5\","
	    "\"subnet6\":\"2600:1f14::/56\"}\n", "is not a /64");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"2600:1f14::5\","
	    "\"subnet6\":\"2600:1f14::5/64\"}\n", "no host bits");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"2600:1f14::5\","
	    "\"subnet6\":\"2600:1f14::\"}\n", "is not an IPv6 CIDR block");
	/* Each family's fields with its address only. */
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip\":\"10.0.0.5\","
	    "\"subnet6\":\"2600:1f14::/64\"}\n",
	    "field \"subnet6\" without \"ip6\"");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"2600:1f14::5\","
	    "\"subnet\":\"10.0.0.0/20\"}\n", "field \"subnet\" without \"ip\"");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"2600:1f14::5\","
	    "\"subnet_gateway\":\"10.0.0.1\"}\n",
	    "field \"subnet_gateway\" without \"ip\"");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"2600:1f14::5\","
	    "\"prefix\":32}\n", "field \"prefix\" without \"ip\"");
	REFUSED(CNI_CMD_DEL, "{\"ok\":true,\"ip6\":\"2600:1f14::5\"}\n",
	    "field \"ip6\" in an answer to DEL");
	REFUSED(CNI_CMD_ADD, "{\"ok\":false,\"code\":\"x\",\"ip6\":"
	    "\"2600:1f14::5\"}\n", "field \"ip6\" in a failed answer");
	/* The VPC's blocks: IPv4 first, each family capped, IPv6 /32../64. */
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"2600:1f14::5\","
	    "\"vpc_cidrs\":[\"2600:1f14::/56\",\"10.0.0.0/16\"]}\n",
	    "the IPv4 block 10.0.0.0/16 comes after an IPv6 one");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"2600:1f14::5\","
	    "\"vpc_cidrs\":[\"::/0\"]}\n", "the IPv6 block ::/0 is not a /32 "
	    "to /64");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"2600:1f14::5\","
	    "\"vpc_cidrs\":[\"2600:1f14::/80\"]}\n", "is not a /32 to /64");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"2600:1f14::5\","
	    "\"vpc_cidrs\":[\"2600:1f14::1/56\"]}\n", "with no host bits");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"2600:1f14::5\","
	    "\"vpc_cidrs\":[\"2600:1F14::/56\"]}\n", "\"vpc_cidrs\" "
	    "\"2600:1F14::/56\" is not a CIDR block");
	REFUSED(CNI_CMD_ADD, "{\"ok\":true,\"ip6\":\"2600:1f14::5\","
	    "\"vpc_cidrs\":[\"2600:1::/56\",\"2600:2::/56\",\"2600:3::/56\","
	    "\"2600:4::/56\",\"2600:5::/56\",\"2600:6::/56\",\"2600:7::/56\","
	    "\"2600:8::/56\",\"2600:9::/56\"]}\n",
	    "\"vpc_cidrs\" has more than 8 IPv6 blocks");
}

/* Random bytes spliced into the new fields' values, with a fixed seed:
 * whatever comes out is refused with code 123 or parses into values of
 * the field's own family and shape. */
static void
test_ipv6_fuzzed(void **state)
{
	static const char alphabet[] = "0123456789abcdefABCDEF:./%[]\"\\ x";
	static const char *const pre[] = {
		"{\"ok\":true,\"ip6\":\"",
		"{\"ok\":true,\"ip6\":\"2600:1f14::5\",\"subnet6\":\"",
		"{\"ok\":true,\"ip6\":\"2600:1f14::5\",\"vpc_cidrs\":[\"",
	};
	static const char *const post[] = { "\"}\n", "\"}\n", "\"]}\n" };
	uint32_t seed = 0x35a6u;
	char line[256];
	size_t i, k, n, len;

	(void)state;
	for (i = 0; i < 30000; i++) {
		struct cni_answer a;
		struct cni_error e;
		size_t which = i % 3;

		len = (size_t)snprintf(line, sizeof(line), "%s", pre[which]);
		seed = seed * 1103515245u + 12345u;
		n = (seed >> 16) % 44;
		for (k = 0; k < n; k++) {
			seed = seed * 1103515245u + 12345u;
			line[len++] = alphabet[(seed >> 16) %
			    (sizeof(alphabet) - 1)];
		}
		len += (size_t)snprintf(line + len, sizeof(line) - len, "%s",
		    post[which]);
		if (cni_answer_parse(CNI_CMD_ADD, line, len, &a, &e) == -1) {
			assert_int_equal(e.code, CNI_ERR_ANSWER);
			continue;
		}
		assert_int_equal(a.ip6.family, AF_INET6);
		assert_true(ip_addr_valid(&a.ip6));
		if (a.have_subnet6) {
			assert_int_equal(a.subnet6.addr.family, AF_INET6);
			assert_int_equal(a.subnet6.len, 64);
			assert_true(ip_prefix_is_network(&a.subnet6));
		}
		for (k = 0; k < a.ncidrs; k++) {
			assert_true(ip_prefix_is_network(&a.cidrs[k]));
			if (a.cidrs[k].addr.family == AF_INET6)
				assert_true(a.cidrs[k].len >= 32 &&
				    a.cidrs[k].len <= 64);
		}
	}
}

static void
test_special6(void **state)
{
	static const struct {
		const char *ip, *needle;
	} cases[] = {
		{ "::", "unspecified" },
		{ "::1", "loopback" },
		{ "::a00:5", "::/8" },			/* IPv4-compatible */
		{ "::ffff:0:a00:5", "::/8" },		/* SIIT's */
		{ "64:ff9b::a00:5", "NAT64" },
		{ "64:ff9b:1::a00:5", "IPv4-embedded" },
		{ "fe80::1", "own link-local gateway fe80::1" },
		{ "fe80::5", "link-local" },
		{ "fe80:ec2::1", "link-local" },
		{ "febf::1", "link-local" },
		{ "ff02::1", "multicast" },
		{ "ff05::1:3", "multicast" },
		{ "fd00:ec2::254", "instance metadata" },
		{ "fd00:ec2::253", "DNS" },
		{ "fd00:ec2::123", "time" },
	};
	static const char *const ok[] = { "2600:1f14::5", "fd00:ec2::5",
	    "fec0::1", "100::1", "2001:db8::1" };
	struct ip_addr ip;
	const char *why;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(ip_addr_parse(cases[i].ip, &ip, NULL), 0);
		why = cni_addr_special(&ip);
		if (why == NULL || strstr(why, cases[i].needle) == NULL)
			fail_msg("%s: \"%s\"", cases[i].ip, why ? why : "");
	}
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(ip_addr_parse(ok[i], &ip, NULL), 0);
		assert_null(cni_addr_special(&ip));
	}
	/* An IPv4-mapped address in bytes (never canonical). */
	memset(&ip, 0, sizeof(ip));
	ip.family = AF_INET6;
	ip.bytes[10] = ip.bytes[11] = 0xff;
	ip.bytes[12] = 10;
	assert_non_null(cni_addr_special(&ip));
}

static void
test_outside_vpc(void **state)
{
	struct ip_prefix c[3];
	struct ip_addr ip;

	(void)state;
	assert_int_equal(ip_prefix_parse("10.0.0.0/16", &c[0], NULL), 0);
	assert_int_equal(ip_prefix_parse("2600:1f14:abc:de00::/56", &c[1],
	    NULL), 0);
	assert_int_equal(ip_prefix_parse("fd12:3456:789a::/48", &c[2], NULL),
	    0);
	assert_int_equal(ip_addr_parse("2600:1f14:abc:de42::5", &ip, NULL), 0);
	assert_null(cni_addr_outside_vpc(&ip, c, 2));
	assert_int_equal(ip_addr_parse("2600:1f14:abc:df00::5", &ip, NULL), 0);
	assert_string_equal(cni_addr_outside_vpc(&ip, c, 2),
	    "outside the VPC's IPv6 blocks");
	assert_string_equal(cni_addr_outside_vpc(&ip, c, 0),
	    "outside the VPC's IPv6 blocks");
	/* A ULA: the VPC's own when a block holds it, else named. */
	assert_int_equal(ip_addr_parse("fd12:3456:789a::5", &ip, NULL), 0);
	assert_null(cni_addr_outside_vpc(&ip, c, 3));
	assert_non_null(strstr(cni_addr_outside_vpc(&ip, c, 2),
	    "unique local"));
	assert_int_equal(ip_addr_parse("fd00:ec2::5", &ip, NULL), 0);
	assert_non_null(strstr(cni_addr_outside_vpc(&ip, c, 3),
	    "unique local"));
	/* IPv4 is never asked (not checked against vpc_cidrs today). */
	assert_int_equal(ip_addr_parse("8.8.8.8", &ip, NULL), 0);
	assert_null(cni_addr_outside_vpc(&ip, c, 3));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_broker_shapes),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_long_text),
		cmocka_unit_test(test_special),
		cmocka_unit_test(test_ipv6_shapes),
		cmocka_unit_test(test_ipv6_malformed),
		cmocka_unit_test(test_ipv6_fuzzed),
		cmocka_unit_test(test_special6),
		cmocka_unit_test(test_outside_vpc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
