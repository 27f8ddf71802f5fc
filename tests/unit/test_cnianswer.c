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
	    "\"9.0.0.0/8\"]}\n", "\"vpc_cidrs\" has more than 8 entries");
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
	/* Not IPv4, or not a valid address at all: never, for now. */
	assert_int_equal(ip_addr_parse("2600:1f14::5", &ip, NULL), 0);
	assert_non_null(strstr(cni_addr_special(&ip), "not an IPv4"));
	memset(&ip, 0, sizeof(ip));
	assert_non_null(strstr(cni_addr_special(&ip), "not an IPv4"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_broker_shapes),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_long_text),
		cmocka_unit_test(test_special),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
