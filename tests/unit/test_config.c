/*
 * Configuration errors: each bad input is refused with a message naming
 * the key and the reason; good input lands in the struct.
 */
#include <arpa/inet.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <json-c/json.h>

#include "addr.h"
#include "conf.h"
#include "maxima.h"
#include "log.h"

static struct enid_config cfg;

static const char *
parse_err(const char *text)
{
	static char err[1024];

	err[0] = '\0';
	if (config_parse(text, strlen(text), &cfg, err, sizeof(err)) == 0)
		return NULL;
	return err;
}

struct bad {
	const char	*text;
	const char	*expect;	/* the whole message */
};

static const struct bad bad_cases[] = {
	{ "", "invalid JSON: unexpected end of input" },
	{ "{", "invalid JSON: unexpected end of input" },
	{ "[]", "expected an object, got array" },
	{ "{} {}", "trailing data after the JSON object at offset 3" },
	{ "{\"usr\": \"x\"}", "usr: unknown key" },
	{ "{\"user\": 5}", "user: expected a string, got int" },
	{ "{\"user\": \"\"}", "user: must not be empty" },
	{ "{\"log_level\": \"loud\"}",
	  "log_level: unknown level \"loud\" (error, warning, info, debug)" },
	/* fuzz-config's same_level(): this was the level debug */
	{ "{\"log_level\": \"debug\\u0000x\"}",
	  "log_level: string contains a NUL byte" },
	{ "{\"ip_family\": \"ipv4v6\"}",
	  "ip_family: unknown family \"ipv4v6\" (ipv4, dual, ipv6)" },
	{ "{\"ip_family\": \"dual\\u0000\"}",
	  "ip_family: string contains a NUL byte" },
	{ "{\"ip_family\": 6}", "ip_family: expected a string, got int" },
	{ "{\"ip_family\": \"ipv6\", \"pool\": {\"prefix_delegation\": "
	  "true}}", "pool.prefix_delegation: delegates IPv4 /28 prefixes, and "
	  "ip_family \"ipv6\" gives pods no IPv4 address (their IPv6 "
	  "addresses come from /80 prefixes anyway)" },
	{ "{\"runtime_dir\": \"run/enid\"}",
	  "runtime_dir: must be an absolute path" },
	{ "{\"pool\": {\"warm_ip_target\": \"3\"}}",
	  "pool.warm_ip_target: expected an integer, got string" },
	{ "{\"pool\": {\"warm_ip_target\": -1}}",
	  "pool.warm_ip_target: -1 out of range 0..1000" },
	{ "{\"pool\": {\"add_timeout_s\": 0}}",
	  "pool.add_timeout_s: 0 out of range 1..600" },
	{ "{\"pool\": {\"max_enis\": 99999999999999999999}}",
	  "pool.max_enis: integer too large (range 0..32)" },
	{ "{\"pool\": {\"max_enis\": 2.5}}",
	  "pool.max_enis: expected an integer, got double" },
	{ "{\"pool\": {\"warm\": 1}}", "pool.warm: unknown key" },
	{ "{\"pool\": 3}", "pool: expected an object, got int" },
	{ "{\"cloud\": {\"allow_http\": \"yes\"}}",
	  "cloud.allow_http: expected true or false, got string" },
	{ "{\"cloud\": {\"provider\": \"gce\"}}",
	  "cloud.provider: unsupported provider \"gce\" (only \"ec2\")" },
	{ "{\"cloud\": {\"rate\": {\"mutating\": {\"capacity\": 0}}}}",
	  "cloud.rate.mutating.capacity: 0 out of range 1..10000" },
	{ "{\"cloud\": {\"rate\": {\"fast\": {}}}}",
	  "cloud.rate.fast: unknown key" },
	{ "{\"cloud\": {\"access_key_id\": \"AKID\"}}",
	  "cloud.access_key_id: access_key_id and secret_access_key must be "
	  "given together" },
	{ "{\"cloud\": {\"ca_file\": \"certs.pem\"}}",
	  "cloud.ca_file: must be an absolute path" },
	{ "{\"subnets\": {}}", "subnets: expected an array, got object" },
	{ "{\"subnets\": [{}]}", "subnets[0]: missing key \"id\"" },
	{ "{\"subnets\": [{\"id\": \"subnet-1\"}, {\"id\": \"net-2\"}]}",
	  "subnets[1].id: \"net-2\" is not a subnet id" },
	{ "{\"subnets\": [{\"id\": \"subnet-1\", \"sgs\": []}]}",
	  "subnets[0].sgs: unknown key" },
	{ "{\"subnets\": [{\"id\": \"subnet-1\", \"security_groups\": "
	  "[\"sg-1\", 7]}]}",
	  "subnets[0].security_groups[1]: expected a string, got int" },
	{ "{\"subnets\": [{\"id\": \"subnet-1\", \"security_groups\": "
	  "[\"group\"]}]}",
	  "subnets[0].security_groups[0]: \"group\" is not a security group id" },
	{ "{\"cloud\": {\"retry\": {\"base_ms\": 2000, \"cap_ms\": 1000}}}",
	  "cloud.retry.cap_ms: 1000 is below base_ms (2000)" },
	{ "{\"cloud\": {\"retry\": {\"base_ms\": 6000}}}",
	  "cloud.retry.cap_ms: 5000 is below base_ms (6000)" },
	{ "{\"cloud\": {\"rate\": {\"enabled\": 0}}}",
	  "cloud.rate.enabled: expected true or false, got int" },
	{ "{\"routing\": {\"table_base\": 250}}",
	  "routing.table_base: 250 out of range 1..188" },
	{ "{\"routing\": {\"rule_priority_to\": 2000, "
	  "\"rule_priority_from\": 1000}}",
	  "routing.rule_priority_to: 2000 must be below "
	  "routing.rule_priority_from (1000), so that traffic to pods is "
	  "matched first" },
	{ "{\"routing\": {\"rule_priority_to\": 1000, "
	  "\"rule_priority_from\": 1000}}",
	  "routing.rule_priority_to: 1000 must be below "
	  "routing.rule_priority_from (1000), so that traffic to pods is "
	  "matched first" },
	{ "{\"routing\": {\"rule_priority_to\": 1537}}",
	  "routing.rule_priority_to: 1537 must be below "
	  "routing.rule_priority_from (1536), so that traffic to pods is "
	  "matched first" },
	{ "{\"pool\": {\"minimum_ip_target\": 30, \"max_pods\": 29}}",
	  "pool.minimum_ip_target: above max_pods (29)" },
	{ "{\"cloud\": {\"session_token\": \"t\"}}",
	  "cloud.session_token: given without access_key_id" },
	{ "{\"cloud\": {\"secret_access_key\": \"s\"}}",
	  "cloud.access_key_id: access_key_id and secret_access_key must be "
	  "given together" },
	{ "{\"subnets\": [{\"id\": \"subnet-\"}]}",
	  "subnets[0].id: \"subnet-\" is not a subnet id" },
	{ "{\"subnets\": [{\"id\": \"subnet-0a/b\"}]}",
	  "subnets[0].id: \"subnet-0a/b\" is not a subnet id" },
	{ "{\"subnets\": [{\"id\": \"subnet-1\", \"security_groups\": "
	  "[\"sg-\"]}]}",
	  "subnets[0].security_groups[0]: \"sg-\" is not a security group id" },
	{ "{\"state_dir\": \"/var/../etc\"}",
	  "state_dir: must be an absolute path" },
	{ "{\"state_dir\": \"/var/..\"}",
	  "state_dir: must be an absolute path" },
	{ "{\"leak_gc\": {\"enabled\": 1}}",
	  "leak_gc.enabled: expected true or false, got int" },
	{ "{\"reconcile_interval_s\": 1}",
	  "reconcile_interval_s: 1 out of range 5..86400" },
	{ "{\"cluster_name\": \"a\\u0000b\"}",
	  "cluster_name: string contains a NUL byte" },
	{ "{\"metrics_textfile\": \"enid.prom\"}",
	  "metrics_textfile: must be an absolute path" },
	{ "{\"metrics_textfile\": \"/var/lib/ne/../enid.prom\"}",
	  "metrics_textfile: must be an absolute path" },
	{ "{\"metrics_textfile\": \"/var/lib/ne/enid.txt\"}",
	  "metrics_textfile: \"/var/lib/ne/enid.txt\" must name a file ending "
	  "in \".prom\" (the node exporter's textfile collector reads only "
	  "those)" },
	{ "{\"metrics_textfile\": \"/var/lib/ne/.prom\"}",
	  "metrics_textfile: \"/var/lib/ne/.prom\" must name a file ending "
	  "in \".prom\" (the node exporter's textfile collector reads only "
	  "those)" },
	{ "{\"metrics_textfile\": \"/var/lib/ne/\"}",
	  "metrics_textfile: \"/var/lib/ne/\" must name a file ending "
	  "in \".prom\" (the node exporter's textfile collector reads only "
	  "those)" },
	{ "{\"metrics_textfile\": 5}",
	  "metrics_textfile: expected a string, got int" },
	/* snat.* and routing.connmark (issue 22): each names the value */
	{ "{\"snat\": {\"enabled\": \"no\"}}",
	  "snat.enabled: expected true or false, got string" },
	{ "{\"snat\": {\"random_fully\": 1}}",
	  "snat.random_fully: expected true or false, got int" },
	{ "{\"snat\": {\"exclude\": [], \"on\": true}}",
	  "snat.on: unknown key" },
	{ "{\"snat\": {\"exclude\": \"10.1.0.0/16\"}}",
	  "snat.exclude: expected an array, got string" },
	{ "{\"snat\": {\"exclude\": [\"10.1.0.0/16\", 5]}}",
	  "snat.exclude[1]: expected a string, got int" },
	{ "{\"snat\": {\"exclude\": [\"10.1.0.0\"]}}",
	  "snat.exclude[0]: \"10.1.0.0\" is not an IPv4 CIDR (a.b.c.d/len): "
	  "prefix without a length (ADDR/LEN)" },
	{ "{\"snat\": {\"exclude\": [\"10.1.0.0/33\"]}}",
	  "snat.exclude[0]: \"10.1.0.0/33\" is not an IPv4 CIDR (a.b.c.d/len): "
	  "IPv4 prefix longer than 32" },
	{ "{\"snat\": {\"exclude\": [\"10.1.0/16\"]}}",
	  "snat.exclude[0]: \"10.1.0/16\" is not an IPv4 CIDR (a.b.c.d/len): "
	  "not an IPv4 address (four decimal octets 0-255 without leading "
	  "zeros)" },
	{ "{\"snat\": {\"exclude\": [\"10.1.0.0/016\"]}}",
	  "snat.exclude[0]: \"10.1.0.0/016\" is not an IPv4 CIDR "
	  "(a.b.c.d/len): prefix length not a decimal number without "
	  "leading zeros" },
	{ "{\"snat\": {\"exclude\": [\"fd00::/8\"]}}",
	  "snat.exclude[0]: \"fd00::/8\" is an IPv6 CIDR: SNAT is for IPv4 "
	  "only" },
	{ "{\"snat\": {\"exclude\": [\"FD00::/8\"]}}",
	  "snat.exclude[0]: \"FD00::/8\" is not an IPv4 CIDR (a.b.c.d/len): "
	  "IPv6 address not in RFC 5952 form (lower case, no leading zeros, "
	  "the longest run of zero groups as ::)" },
	{ "{\"snat\": {\"exclude\": [\"\"]}}",
	  "snat.exclude[0]: \"\" is not an IPv4 CIDR (a.b.c.d/len): prefix "
	  "without a length (ADDR/LEN)" },
	{ "{\"snat\": {\"exclude\": [\"192.168.1.1/24\"]}}",
	  "snat.exclude[0]: \"192.168.1.1/24\" has host bits set" },
	{ "{\"snat\": {\"exclude\": [\"172.16.0.0/16\", \"10.1.2.3/32\", "
	  "\"10.1.2.128/24\"]}}",
	  "snat.exclude[2]: \"10.1.2.128/24\" has host bits set" },
	{ "{\"snat\": {\"exclude\": [\"0.0.0.0/0\"]}}",
	  "snat.exclude[0]: \"0.0.0.0/0\" covers every address: turn SNAT "
	  "off (snat.enabled) instead" },
	{ "{\"snat\": {\"exclude\": [\"1.0.0.0/0\"]}}",
	  "snat.exclude[0]: \"1.0.0.0/0\" has host bits set" },
	/* mutual overlap, either way round, and a repeat */
	{ "{\"snat\": {\"exclude\": [\"10.1.0.0/16\", \"10.1.2.0/24\"]}}",
	  "snat.exclude[1]: \"10.1.2.0/24\" overlaps snat.exclude[0] "
	  "(10.1.0.0/16)" },
	{ "{\"snat\": {\"exclude\": [\"172.16.0.0/12\", \"10.1.2.0/24\", "
	  "\"10.0.0.0/8\"]}}",
	  "snat.exclude[2]: \"10.0.0.0/8\" overlaps snat.exclude[1] "
	  "(10.1.2.0/24)" },
	{ "{\"snat\": {\"exclude\": [\"203.0.113.7/32\", \"203.0.113.7/32\"]}}",
	  "snat.exclude[1]: \"203.0.113.7/32\" overlaps snat.exclude[0] "
	  "(203.0.113.7/32)" },
	{ "{\"snat\": {\"exclude\": [\"10.1.0.0/16\", \"10.2.0.0/16\", "
	  "\"10.3.0.0/16\", \"10.4.0.0/16\", \"10.5.0.0/16\", \"10.6.0.0/16\", "
	  "\"10.7.0.0/16\", \"10.8.0.0/16\", \"10.9.0.0/16\"]}}",
	  "snat.exclude: more than 8 CIDRs (ENID_MAX_SNAT_EXCLUDE)" },
	{ "{\"routing\": {\"connmark\": 0}}",
	  "routing.connmark: 0 is not a mark with exactly one bit set (128 is "
	  "0x80)" },
	{ "{\"routing\": {\"connmark\": 3}}",
	  "routing.connmark: 3 is not a mark with exactly one bit set (128 is "
	  "0x80)" },
	{ "{\"routing\": {\"connmark\": 49152}}",
	  "routing.connmark: 49152 is not a mark with exactly one bit set (128 "
	  "is 0x80)" },
	{ "{\"routing\": {\"connmark\": -128}}",
	  "routing.connmark: -128 is not a mark with exactly one bit set (128 "
	  "is 0x80)" },
	{ "{\"routing\": {\"connmark\": 4294967296}}",
	  "routing.connmark: 4294967296 is not a mark with exactly one bit set "
	  "(128 is 0x80)" },
	{ "{\"routing\": {\"connmark\": \"0x80\"}}",
	  "routing.connmark: expected an integer, got string" },
	{ "{\"routing\": {\"connmark\": 128.0}}",
	  "routing.connmark: expected an integer, got double" },
};

static void
test_bad_configs_name_key_and_reason(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const char *err = parse_err(bad_cases[i].text);

		if (err == NULL)
			fail_msg("accepted: %s", bad_cases[i].text);
		if (strcmp(err, bad_cases[i].expect) != 0)
			fail_msg("for %s\n  got:    %s\n  wanted: %s",
			    bad_cases[i].text, err, bad_cases[i].expect);
	}
}

static void
test_too_long_string(void **state)
{
	char text[600];
	const char *err;

	(void)state;
	snprintf(text, sizeof(text), "{\"user\": \"%0300d\"}", 0);
	err = parse_err(text);
	assert_non_null(err);
	assert_string_equal(err, "user: string longer than 255 bytes");
}

static void
test_defaults(void **state)
{
	(void)state;
	assert_null(parse_err("{}"));
	assert_string_equal(cfg.user, "enid");
	assert_string_equal(cfg.runtime_dir, "/run/enid");
	assert_string_equal(cfg.state_dir, "/var/lib/enid");
	assert_string_equal(cfg.cloud.imds_endpoint, "http://169.254.169.254");
	assert_false(cfg.cloud.allow_http);
	assert_int_equal(cfg.pool.ip_cooldown_s, 30);
	assert_int_equal(cfg.pool.add_timeout_s, 10);
	assert_int_equal(cfg.pool.warm_ip_target, 0);
	assert_int_equal(cfg.pool.warm_eni_target, 1);
	assert_int_equal(cfg.pool.shrink_delay_s, 60);
	assert_int_equal(cfg.pool.subnet_backoff_s, 600);
	assert_int_equal(cfg.pool.link_timeout_s, 30);
	assert_int_equal(cfg.routing.table_base, 100);
	assert_true(cfg.routing.rule_priority_to <
	    cfg.routing.rule_priority_from);
	assert_int_equal(cfg.log_level, LOG_LVL_INFO);
	assert_int_equal(cfg.ip_family, IP_FAMILY_IPV4);
	assert_true(cfg.leak_gc.enabled);
	/* SNAT on, random-fully, no exclusions, aws-vpc-cni's mark bit */
	assert_true(cfg.snat.enabled);
	assert_true(cfg.snat.random_fully);
	assert_int_equal(cfg.snat.nexclude, 0);
	assert_int_equal(cfg.routing.connmark, 0x80);
	assert_int_equal(CONF_CONNMARK_DEFAULT, 0x80);
	/* an empty "snat" object is the defaults too */
	assert_null(parse_err("{\"snat\": {}, \"routing\": {}}"));
	assert_true(cfg.snat.enabled);
	assert_true(cfg.snat.random_fully);
	assert_int_equal(cfg.routing.connmark, 0x80);
}

/* snat.exclude as it lands in the struct: network order, prefix, order
 * kept; and routing.connmark at each end of its range. */
static void
test_snat_good(void **state)
{
	char text[1024];
	int i, k;

	(void)state;
	assert_null(parse_err("{\"snat\": {\"enabled\": false, "
	    "\"random_fully\": false, \"exclude\": [\"192.168.0.0/16\", "
	    "\"172.16.0.0/12\", \"203.0.113.7/32\", \"100.64.0.0/10\"]}}"));
	assert_false(cfg.snat.enabled);
	assert_false(cfg.snat.random_fully);
	assert_int_equal(cfg.snat.nexclude, 4);
	assert_int_equal(ip_addr_in4(&cfg.snat.exclude[0].addr),
	    htonl(0xc0a80000));
	assert_int_equal(cfg.snat.exclude[0].len, 16);
	assert_int_equal(ip_addr_in4(&cfg.snat.exclude[1].addr),
	    htonl(0xac100000));
	assert_int_equal(cfg.snat.exclude[1].len, 12);
	assert_int_equal(ip_addr_in4(&cfg.snat.exclude[2].addr),
	    htonl(0xcb007107));
	assert_int_equal(cfg.snat.exclude[2].len, 32);
	assert_int_equal(ip_addr_in4(&cfg.snat.exclude[3].addr),
	    htonl(0x64400000));
	assert_int_equal(cfg.snat.exclude[3].len, 10);
	/* neighbours that touch do not overlap */
	assert_null(parse_err("{\"snat\": {\"exclude\": [\"10.1.0.0/24\", "
	    "\"10.1.1.0/24\", \"10.1.2.0/23\", \"128.0.0.0/1\"]}}"));
	assert_int_equal(cfg.snat.nexclude, 4);
	assert_int_equal(cfg.snat.exclude[3].len, 1);
	/* exactly the cap */
	i = snprintf(text, sizeof(text), "{\"snat\": {\"exclude\": [");
	for (k = 0; k < CONF_MAX_SNAT_EXCLUDE; k++)
		i += snprintf(text + i, sizeof(text) - (size_t)i,
		    "%s\"10.%d.0.0/16\"", k ? ", " : "", k + 1);
	snprintf(text + i, sizeof(text) - (size_t)i, "]}}");
	assert_null(parse_err(text));
	assert_int_equal(cfg.snat.nexclude, CONF_MAX_SNAT_EXCLUDE);
	assert_int_equal(ip_addr_in4(&cfg.snat.exclude[7].addr),
	    htonl(0x0a080000));
	/* an empty list: none */
	assert_null(parse_err("{\"snat\": {\"exclude\": []}}"));
	assert_int_equal(cfg.snat.nexclude, 0);
	/* every single bit is a mark; the lowest and the highest */
	assert_null(parse_err("{\"routing\": {\"connmark\": 1}}"));
	assert_int_equal(cfg.routing.connmark, 1);
	assert_null(parse_err("{\"routing\": {\"connmark\": 2147483648}}"));
	assert_int_equal(cfg.routing.connmark, 0x80000000u);
	assert_null(parse_err("{\"routing\": {\"connmark\": 256}}"));
	assert_int_equal(cfg.routing.connmark, 0x100);
}

static struct ip_prefix
cidr(const char *text)
{
	struct ip_prefix c;

	if (ip_prefix_parse(text, &c, NULL) == -1)
		fail_msg("test: %s", text);
	return c;
}

/*
 * snat.exclude against the VPC's CIDR blocks, which only the cloud names:
 * inside one, around one, equal, in the second block; apart and touching
 * are fine.  The message names the exclusion, its index and the block.
 */
static void
test_snat_vpc_overlap(void **state)
{
	struct ip_prefix vpc[3];
	char err[256];

	(void)state;
	vpc[0] = cidr("10.0.0.0/16");
	vpc[1] = cidr("100.64.0.0/16");
	vpc[2] = cidr("10.2.0.0/24");
	assert_null(parse_err("{\"snat\": {\"exclude\": [\"172.16.0.0/12\", "
	    "\"10.0.5.0/24\"]}}"));
	err[0] = '\0';
	assert_int_equal(config_check_snat_vpc(&cfg, vpc, 1, err, sizeof(err)),
	    -1);
	assert_string_equal(err, "snat.exclude[1]: \"10.0.5.0/24\" overlaps "
	    "the VPC's CIDR 10.0.0.0/16 (the VPC's own CIDRs are never "
	    "translated)");
	/* one around a block */
	assert_null(parse_err("{\"snat\": {\"exclude\": [\"10.0.0.0/8\"]}}"));
	assert_int_equal(config_check_snat_vpc(&cfg, vpc, 3, err, sizeof(err)),
	    -1);
	assert_string_equal(err, "snat.exclude[0]: \"10.0.0.0/8\" overlaps "
	    "the VPC's CIDR 10.0.0.0/16 (the VPC's own CIDRs are never "
	    "translated)");
	/* equal to the second block */
	assert_null(parse_err("{\"snat\": {\"exclude\": [\"192.168.0.0/16\", "
	    "\"100.64.0.0/16\"]}}"));
	assert_int_equal(config_check_snat_vpc(&cfg, vpc, 3, err, sizeof(err)),
	    -1);
	assert_string_equal(err, "snat.exclude[1]: \"100.64.0.0/16\" overlaps "
	    "the VPC's CIDR 100.64.0.0/16 (the VPC's own CIDRs are never "
	    "translated)");
	/* a single address of the third */
	assert_null(parse_err("{\"snat\": {\"exclude\": [\"10.2.0.77/32\"]}}"));
	assert_int_equal(config_check_snat_vpc(&cfg, vpc, 3, err, sizeof(err)),
	    -1);
	assert_string_equal(err, "snat.exclude[0]: \"10.2.0.77/32\" overlaps "
	    "the VPC's CIDR 10.2.0.0/24 (the VPC's own CIDRs are never "
	    "translated)");
	/* ...which the first two blocks alone do not hold */
	assert_int_equal(config_check_snat_vpc(&cfg, vpc, 2, err, sizeof(err)),
	    0);
	/* apart, and touching on either side */
	assert_null(parse_err("{\"snat\": {\"exclude\": [\"10.1.0.0/16\", "
	    "\"9.255.255.255/32\", \"100.65.0.0/16\", \"10.2.1.0/24\", "
	    "\"192.0.2.0/24\"]}}"));
	assert_int_equal(config_check_snat_vpc(&cfg, vpc, 3, err, sizeof(err)),
	    0);
	/* no exclusions, or no blocks: nothing to overlap */
	assert_null(parse_err("{}"));
	assert_int_equal(config_check_snat_vpc(&cfg, vpc, 3, err, sizeof(err)),
	    0);
	assert_null(parse_err("{\"snat\": {\"exclude\": [\"10.0.0.0/8\"]}}"));
	assert_int_equal(config_check_snat_vpc(&cfg, vpc, 0, err, sizeof(err)),
	    0);
	/* with SNAT off the exclusions are still checked: they are still
	 * configuration, and netd refuses them the same way */
	assert_null(parse_err("{\"snat\": {\"enabled\": false, \"exclude\": "
	    "[\"10.0.0.0/24\"]}}"));
	assert_int_equal(config_check_snat_vpc(&cfg, vpc, 1, err, sizeof(err)),
	    -1);
	/* a message cut to the buffer, still terminated */
	assert_int_equal(config_check_snat_vpc(&cfg, vpc, 1, err, 16), -1);
	assert_string_equal(err, "snat.exclude[0]");
}

static void
test_full_config(void **state)
{
	const char *text =
	    "{\n"
	    "  \"user\": \"nobody\", \"admin_group\": \"adm\",\n"
	    "  \"runtime_dir\": \"/tmp/r\", \"state_dir\": \"/tmp/s\",\n"
	    "  \"log_level\": \"debug\", \"cluster_name\": \"prod\",\n"
	    "  \"ip_family\": \"dual\",\n"
	    "  \"cloud\": {\"provider\": \"ec2\", \"region\": \"eu-west-1\",\n"
	    "    \"ec2_endpoint\": \"http://198.18.0.1/\", \"allow_http\": true,\n"
	    "    \"rate\": {\"mutating\": {\"capacity\": 5, \"refill_per_s\": 1},\n"
	    "             \"describe\": {\"capacity\": 9, \"refill_per_s\": 3},\n"
	    "             \"enabled\": false},\n"
	    "    \"retry\": {\"base_ms\": 1000, \"cap_ms\": 1000, \"jitter\": false,\n"
	    "              \"max_attempts\": 4}},\n"
	    "  \"pool\": {\"warm_ip_target\": 3, \"minimum_ip_target\": 5,\n"
	    "    \"warm_eni_target\": 0, \"max_pods\": 29, \"max_enis\": 3,\n"
	    "    \"ip_cooldown_s\": 0, \"add_timeout_s\": 4},\n"
	    "  \"subnets\": [{\"id\": \"subnet-a\", \"security_groups\": "
	    "[\"sg-1\", \"sg-2\"]}, {\"id\": \"subnet-b\"}],\n"
	    "  \"routing\": {\"table_base\": 10, \"rule_priority_to\": 100,\n"
	    "    \"rule_priority_from\": 200},\n"
	    "  \"reconcile_interval_s\": 30,\n"
	    "  \"leak_gc\": {\"enabled\": false, \"grace_s\": 60}\n"
	    "}\n";

	(void)state;
	assert_null(parse_err(text));
	assert_string_equal(cfg.user, "nobody");
	assert_string_equal(cfg.admin_group, "adm");
	assert_int_equal(cfg.log_level, LOG_LVL_DEBUG);
	assert_int_equal(cfg.ip_family, IP_FAMILY_DUAL);
	assert_string_equal(cfg.cloud.region, "eu-west-1");
	assert_true(cfg.cloud.allow_http);
	assert_int_equal(cfg.cloud.rate_mutating.capacity, 5);
	assert_int_equal(cfg.cloud.rate_describe.refill_per_s, 3);
	assert_false(cfg.cloud.rate_enabled);
	assert_int_equal(cfg.cloud.retry.base_ms, 1000);
	assert_int_equal(cfg.cloud.retry.cap_ms, 1000);
	assert_false(cfg.cloud.retry.jitter);
	assert_int_equal(cfg.pool.max_pods, 29);
	assert_int_equal(cfg.nsubnets, 2);
	assert_string_equal(cfg.subnets[0].sgs[1], "sg-2");
	assert_int_equal(cfg.subnets[1].nsgs, 0);
	assert_int_equal(cfg.routing.table_base, 10);
	assert_false(cfg.leak_gc.enabled);
	assert_int_equal(cfg.leak_gc.grace_s, 60);
}

static void
test_load_file_errors(void **state)
{
	char path[] = "/tmp/enid-test-conf-XXXXXX";
	char err[1024];
	int fd;

	(void)state;
	assert_int_equal(config_load("/nonexistent/enid.conf", &cfg, err,
	    sizeof(err)), -1);
	assert_string_equal(err, "/nonexistent/enid.conf: No such file or "
	    "directory");
	assert_int_equal(config_load("/tmp", &cfg, err, sizeof(err)), -1);
	assert_string_equal(err, "/tmp: not a regular file");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"pool\": {\"max_pods\": true}}", 28), 28);
	close(fd);
	assert_int_equal(config_load(path, &cfg, err, sizeof(err)), -1);
	assert_non_null(strstr(err, ": pool.max_pods: expected an integer, "
	    "got boolean"));
	assert_true(strncmp(err, path, strlen(path)) == 0);
	unlink(path);
}

/*
 * Text of a config that sets one key, given by its dotted path, to value;
 * sibling (or NULL) is more members for the innermost object.
 */
static char *
config_with(const char *path, const char *value, const char *sibling)
{
	size_t cap = strlen(path) * 4 + strlen(value) +
	    (sibling ? strlen(sibling) : 0) + 64;
	char *text = malloc(cap), *p = text;
	const char *seg = path, *dot;
	int depth = 0;

	assert_non_null(text);
	p += sprintf(p, "{");
	while ((dot = strchr(seg, '.')) != NULL) {
		p += sprintf(p, "\"%.*s\": {", (int)(dot - seg), seg);
		seg = dot + 1;
		depth++;
	}
	p += sprintf(p, "\"%s\": %s", seg, value);
	if (sibling != NULL)
		p += sprintf(p, ", %s", sibling);
	while (depth-- >= 0)
		p += sprintf(p, "}");
	return text;
}

/* Every integer key, with the range enid.conf(5) gives it. */
struct u32_key {
	const char	*path;
	size_t		 off;
	uint32_t	 min, max;
	const char	*sibling;	/* NULL, or what makes min and max valid */
	const char	*err_at_min;	/* NULL: min is accepted */
	const char	*err_at_max;	/* NULL: max is accepted */
};

#define CFG_OFF(f)	offsetof(struct enid_config, f)

static const struct u32_key u32_keys[] = {
	{ "cloud.timeout_ms", CFG_OFF(cloud.timeout_ms), 100, 600000,
	  NULL, NULL, NULL },
	{ "cloud.rate.mutating.capacity",
	  CFG_OFF(cloud.rate_mutating.capacity), 1, 10000, NULL, NULL, NULL },
	{ "cloud.rate.mutating.refill_per_s",
	  CFG_OFF(cloud.rate_mutating.refill_per_s), 1, 10000,
	  NULL, NULL, NULL },
	{ "cloud.rate.describe.capacity",
	  CFG_OFF(cloud.rate_describe.capacity), 1, 10000, NULL, NULL, NULL },
	{ "cloud.rate.describe.refill_per_s",
	  CFG_OFF(cloud.rate_describe.refill_per_s), 1, 10000,
	  NULL, NULL, NULL },
	{ "cloud.retry.base_ms", CFG_OFF(cloud.retry.base_ms), 1, 60000,
	  "\"cap_ms\": 600000", NULL, NULL },
	{ "cloud.retry.cap_ms", CFG_OFF(cloud.retry.cap_ms), 1, 600000,
	  "\"base_ms\": 1", NULL, NULL },
	{ "cloud.retry.max_attempts", CFG_OFF(cloud.retry.max_attempts), 1,
	  100, NULL, NULL, NULL },
	{ "pool.warm_ip_target", CFG_OFF(pool.warm_ip_target), 0, 1000,
	  NULL, NULL, NULL },
	{ "pool.minimum_ip_target", CFG_OFF(pool.minimum_ip_target), 0, 1000,
	  NULL, NULL, NULL },
	{ "pool.warm_eni_target", CFG_OFF(pool.warm_eni_target), 0, 32,
	  NULL, NULL, NULL },
	{ "pool.max_pods", CFG_OFF(pool.max_pods), 0, 2048,
	  NULL, NULL, NULL },
	{ "pool.max_enis", CFG_OFF(pool.max_enis), 0, 32, NULL, NULL, NULL },
	{ "pool.ip_cooldown_s", CFG_OFF(pool.ip_cooldown_s), 0, 3600,
	  NULL, NULL, NULL },
	{ "pool.add_timeout_s", CFG_OFF(pool.add_timeout_s), 1, 600,
	  NULL, NULL, NULL },
	{ "pool.shrink_delay_s", CFG_OFF(pool.shrink_delay_s), 0, 86400,
	  NULL, NULL, NULL },
	{ "pool.subnet_backoff_s", CFG_OFF(pool.subnet_backoff_s), 1, 86400,
	  NULL, NULL, NULL },
	{ "pool.link_timeout_s", CFG_OFF(pool.link_timeout_s), 1, 600,
	  NULL, NULL, NULL },
	{ "routing.table_base", CFG_OFF(routing.table_base), 1, 188,
	  NULL, NULL, NULL },
	/* the two priorities are also ordered: to < from */
	{ "routing.rule_priority_to", CFG_OFF(routing.rule_priority_to),
	  1, 32765, "\"rule_priority_from\": 32765", NULL,
	  "routing.rule_priority_to: 32765 must be below "
	  "routing.rule_priority_from (32765), so that traffic to pods is "
	  "matched first" },
	{ "routing.rule_priority_from", CFG_OFF(routing.rule_priority_from),
	  1, 32765, "\"rule_priority_to\": 1",
	  "routing.rule_priority_to: 1 must be below "
	  "routing.rule_priority_from (1), so that traffic to pods is "
	  "matched first", NULL },
	{ "reconcile_interval_s", CFG_OFF(reconcile_interval_s), 5, 86400,
	  NULL, NULL, NULL },
	{ "leak_gc.grace_s", CFG_OFF(leak_gc.grace_s), 0, 30 * 86400,
	  NULL, NULL, NULL },
};

/* The keys whose maximum is one of maxima.h's caps, and how a value
 * above it is refused: naming the cap. */
static const char *
cap_of(const char *path)
{
	static const struct { const char *path, *cap; } caps[] = {
		{ "pool.warm_eni_target", "ENID_MAX_ENIS, ENIs on a node" },
		{ "pool.max_pods", "ENID_MAX_PODS, pods with an address on a "
		  "node" },
		{ "pool.max_enis", "ENID_MAX_ENIS, ENIs on a node, the primary "
		  "included" },
	};
	size_t i;

	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
		if (strcmp(caps[i].path, path) == 0)
			return caps[i].cap;
	return NULL;
}

/*
 * The limits agree (issue 27): what the configuration accepts is what
 * the pool, the messages and the checkpoint hold, and more is refused
 * naming the cap; values the old bounds took are refused now.
 */
static void
test_caps_agree(void **state)
{
	static const struct { const char *text, *err; } cases[] = {
		{ "{\"pool\": {\"max_enis\": 33}}", "pool.max_enis: 33 is above "
		  "32, the most one enid holds (ENID_MAX_ENIS, ENIs on a node, "
		  "the primary included)" },
		{ "{\"pool\": {\"max_enis\": 64}}", "pool.max_enis: 64 is above "
		  "32, the most one enid holds (ENID_MAX_ENIS, ENIs on a node, "
		  "the primary included)" },
		{ "{\"pool\": {\"max_pods\": 2049}}", "pool.max_pods: 2049 is "
		  "above 2048, the most one enid holds (ENID_MAX_PODS, pods "
		  "with an address on a node)" },
		{ "{\"pool\": {\"max_pods\": 10000}}", "pool.max_pods: 10000 is "
		  "above 2048, the most one enid holds (ENID_MAX_PODS, pods "
		  "with an address on a node)" },
		{ "{\"pool\": {\"warm_eni_target\": 33}}", "pool.warm_eni_target: "
		  "33 is above 32, the most one enid holds (ENID_MAX_ENIS, ENIs "
		  "on a node)" },
		{ "{\"pool\": {\"max_enis\": 32, \"max_pods\": 2048, "
		  "\"warm_eni_target\": 32}}", NULL },
	};
	const char *err;
	size_t i;

	(void)state;
	assert_int_equal(ENID_MAX_ENIS, 32);
	assert_int_equal(ENID_MAX_PODS, ENID_MAX_ENIS * ENID_MAX_ENI_ADDRS);
	assert_true(ENID_MAX_RECORDED_PODS >= 2 * ENID_MAX_PODS);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err = parse_err(cases[i].text);
		if (cases[i].err == NULL && err != NULL)
			fail_msg("%s refused: %s", cases[i].text, err);
		if (cases[i].err != NULL && (err == NULL ||
		    strcmp(err, cases[i].err) != 0))
			fail_msg("%s\n  got:    %s\n  wanted: %s", cases[i].text,
			    err ? err : "(accepted)", cases[i].err);
	}
}

static void
expect_u32(const struct u32_key *k, long long v, const char *want_err)
{
	char num[32], wanted[256];
	const char *err;
	char *text;

	snprintf(num, sizeof(num), "%lld", v);
	text = config_with(k->path, num, k->sibling);
	err = parse_err(text);
	if (want_err == NULL) {
		if (err != NULL)
			fail_msg("%s refused: %s", text, err);
		assert_int_equal(*(uint32_t *)(void *)((char *)&cfg + k->off),
		    v);
	} else {
		if (strcmp(want_err, "range") == 0 && v > k->max &&
		    cap_of(k->path) != NULL) {
			snprintf(wanted, sizeof(wanted), "%s: %lld is above "
			    "%u, the most one enid holds (%s)", k->path, v,
			    k->max, cap_of(k->path));
			want_err = wanted;
		} else if (strcmp(want_err, "range") == 0) {
			snprintf(wanted, sizeof(wanted), "%s: %lld out of "
			    "range %u..%u", k->path, v, k->min, k->max);
			want_err = wanted;
		}
		if (err == NULL)
			fail_msg("accepted: %s", text);
		if (strcmp(err, want_err) != 0)
			fail_msg("for %s\n  got:    %s\n  wanted: %s", text,
			    err, want_err);
	}
	free(text);
}

/* Each integer key at min - 1, min, max, max + 1, and past 32 bits. */
static void
test_u32_bounds(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(u32_keys) / sizeof(u32_keys[0]); i++) {
		const struct u32_key *k = &u32_keys[i];

		expect_u32(k, (long long)k->min - 1, "range");
		expect_u32(k, k->min, k->err_at_min);
		if (k->min + 1 <= k->max)
			expect_u32(k, (long long)k->min + 1, NULL);
		expect_u32(k, (long long)k->max - 1, NULL);
		expect_u32(k, k->max, k->err_at_max);
		expect_u32(k, (long long)k->max + 1, "range");
		/* a 64-bit value whose low 32 bits are in range */
		expect_u32(k, (1LL << 32) + k->min, "range");
		expect_u32(k, (1LL << 32) + k->max, "range");
	}
}

/* Every string key, with the size of its field. */
struct str_key {
	const char	*path;
	size_t		 off;
	size_t		 size;
	const char	*sibling;
	char		 first;		/* '/' for paths, else 'a' */
	const char	*err_at_fit;	/* NULL: size - 1 bytes are accepted */
};

static const struct str_key str_keys[] = {
	{ "user", CFG_OFF(user), CONF_STR_LEN, NULL, 'a', NULL },
	{ "admin_group", CFG_OFF(admin_group), CONF_STR_LEN, NULL, 'a', NULL },
	{ "runtime_dir", CFG_OFF(runtime_dir), CONF_PATH_LEN, NULL, '/',
	  NULL },
	{ "state_dir", CFG_OFF(state_dir), CONF_PATH_LEN, NULL, '/', NULL },
	{ "cluster_name", CFG_OFF(cluster_name), CONF_STR_LEN, NULL, 'a',
	  NULL },
	{ "cloud.provider", CFG_OFF(cloud.provider), CONF_STR_LEN, NULL, 'a',
	  "unsupported" },
	{ "cloud.region", CFG_OFF(cloud.region), CONF_STR_LEN, NULL, 'a',
	  NULL },
	{ "cloud.ec2_endpoint", CFG_OFF(cloud.ec2_endpoint), CONF_STR_LEN,
	  NULL, 'a', NULL },
	{ "cloud.imds_endpoint", CFG_OFF(cloud.imds_endpoint), CONF_STR_LEN,
	  NULL, 'a', NULL },
	{ "cloud.ca_file", CFG_OFF(cloud.ca_file), CONF_PATH_LEN, NULL, '/',
	  NULL },
	{ "cloud.access_key_id", CFG_OFF(cloud.access_key_id), CONF_STR_LEN,
	  "\"secret_access_key\": \"s\"", 'a', NULL },
	{ "cloud.secret_access_key", CFG_OFF(cloud.secret_access_key),
	  CONF_STR_LEN, "\"access_key_id\": \"k\"", 'a', NULL },
	{ "cloud.session_token", CFG_OFF(cloud.session_token), 2048,
	  "\"access_key_id\": \"k\", \"secret_access_key\": \"s\"", 'a',
	  NULL },
};

static char *
quoted_string(char first, size_t len)
{
	char *v = malloc(len + 3);

	assert_non_null(v);
	v[0] = '"';
	memset(v + 1, 'a', len);
	if (len > 0)
		v[1] = first;
	v[len + 1] = '"';
	v[len + 2] = '\0';
	return v;
}

/* Each string key at size - 1 bytes (fits with its NUL) and at size. */
static void
test_string_bounds(void **state)
{
	char wanted[128];
	const char *err;
	char *v, *text;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(str_keys) / sizeof(str_keys[0]); i++) {
		const struct str_key *k = &str_keys[i];

		v = quoted_string(k->first, k->size - 1);
		text = config_with(k->path, v, k->sibling);
		err = parse_err(text);
		if (k->err_at_fit != NULL) {
			assert_non_null(err);
			assert_non_null(strstr(err, k->err_at_fit));
		} else {
			if (err != NULL)
				fail_msg("%s at %zu bytes refused: %s",
				    k->path, k->size - 1, err);
			assert_int_equal(strlen((char *)&cfg + k->off),
			    k->size - 1);
		}
		free(text);
		free(v);

		v = quoted_string(k->first, k->size);
		text = config_with(k->path, v, k->sibling);
		snprintf(wanted, sizeof(wanted), "%s: string longer than %zu "
		    "bytes", k->path, k->size - 1);
		err = parse_err(text);
		if (err == NULL)
			fail_msg("%s at %zu bytes accepted", k->path, k->size);
		assert_string_equal(err, wanted);
		free(text);
		free(v);
	}
}

/* Lists: 16 subnets of 8 groups each fit, one more of either does not;
 * an id fills its field up to its NUL. */
static void
test_subnet_bounds(void **state)
{
	char text[16384], id[CONF_ID_LEN + 1];
	const char *err;
	int n, i, j, nsub, nsg;

	(void)state;
	for (nsub = CONF_MAX_SUBNETS; nsub <= CONF_MAX_SUBNETS + 1; nsub++)
	for (nsg = CONF_MAX_SGS; nsg <= CONF_MAX_SGS + 1; nsg++) {
		n = snprintf(text, sizeof(text), "{\"subnets\": [");
		for (i = 0; i < nsub; i++) {
			n += snprintf(text + n, sizeof(text) - n, "%s{\"id\": "
			    "\"subnet-%d\", \"security_groups\": [", i ? ", " :
			    "", i);
			for (j = 0; j < nsg; j++)
				n += snprintf(text + n, sizeof(text) - n,
				    "%s\"sg-%d%d\"", j ? ", " : "", i, j);
			n += snprintf(text + n, sizeof(text) - n, "]}");
		}
		snprintf(text + n, sizeof(text) - n, "]}");
		err = parse_err(text);
		if (nsub > CONF_MAX_SUBNETS) {
			assert_non_null(err);
			assert_string_equal(err, "subnets: more than 16 subnets");
		} else if (nsg > CONF_MAX_SGS) {
			assert_non_null(err);
			assert_string_equal(err, "subnets[0].security_groups: "
			    "more than 8 security groups");
		} else {
			if (err != NULL)
				fail_msg("refused: %s", err);
			assert_int_equal(cfg.nsubnets, CONF_MAX_SUBNETS);
			assert_int_equal(cfg.subnets[15].nsgs, CONF_MAX_SGS);
			assert_string_equal(cfg.subnets[15].sgs[7], "sg-157");
		}
	}

	/* "subnet-" and 56 more: 63 bytes, the field's size less its NUL */
	memset(id, '0', sizeof(id));
	memcpy(id, "subnet-", 7);
	id[CONF_ID_LEN - 1] = '\0';
	snprintf(text, sizeof(text), "{\"subnets\": [{\"id\": \"%s\"}]}", id);
	assert_null(parse_err(text));
	assert_string_equal(cfg.subnets[0].id, id);
	id[CONF_ID_LEN - 1] = '0';
	id[CONF_ID_LEN] = '\0';
	snprintf(text, sizeof(text), "{\"subnets\": [{\"id\": \"%s\"}]}", id);
	err = parse_err(text);
	assert_non_null(err);
	assert_string_equal(err, "subnets[0].id: string longer than 63 bytes");
	/* an empty list is the primary ENI's subnet */
	assert_null(parse_err("{\"subnets\": []}"));
	assert_int_equal(cfg.nsubnets, 0);
}

/* The cross-key checks at their edges. */
static void
test_cross_key_edges(void **state)
{
	(void)state;
	assert_null(parse_err("{\"routing\": {\"rule_priority_to\": 1535}}"));
	assert_int_equal(cfg.routing.rule_priority_to, 1535);
	assert_null(parse_err("{\"routing\": {\"rule_priority_to\": 1, "
	    "\"rule_priority_from\": 2}}"));
	assert_null(parse_err("{\"routing\": {\"rule_priority_to\": 32764, "
	    "\"rule_priority_from\": 32765}}"));
	/* minimum_ip_target may equal max_pods; 0 max_pods is "the cloud's" */
	assert_null(parse_err("{\"pool\": {\"minimum_ip_target\": 29, "
	    "\"max_pods\": 29}}"));
	assert_null(parse_err("{\"pool\": {\"minimum_ip_target\": 1000, "
	    "\"max_pods\": 0}}"));
	assert_null(parse_err("{\"cloud\": {\"access_key_id\": \"k\", "
	    "\"secret_access_key\": \"s\", \"session_token\": \"t\"}}"));
	assert_null(parse_err("{\"runtime_dir\": \"/\"}"));
	assert_null(parse_err("{\"runtime_dir\": \"/run/..enid\"}"));
	assert_null(parse_err("{\"cloud\": {\"ca_file\": \"\"}}"));
}

/* The size cap: exactly ENID_CONF_MAX_BYTES is parsed, one more is not. */
static void
test_size_cap(void **state)
{
	size_t n = ENID_CONF_MAX_BYTES + 1;
	char *text = malloc(n), err[256];

	(void)state;
	assert_non_null(text);
	memset(text, ' ', n);
	memcpy(text, "{}", 2);
	if (config_parse(text, n - 1, &cfg, err, sizeof(err)) != 0)
		fail_msg("%zu bytes refused: %s", n - 1, err);
	assert_int_equal(config_parse(text, n, &cfg, err, sizeof(err)), -1);
	assert_string_equal(err, "larger than 1048576 bytes");
	free(text);
}

/* The broker and netd forget the static credentials; nothing else moves. */
static void
test_wipe_secrets(void **state)
{
	static struct enid_config before;
	static const char zero[2048];

	(void)state;
	assert_null(parse_err("{\"cluster_name\": \"c\", \"cloud\": "
	    "{\"access_key_id\": \"AKIDEXAMPLE\", \"secret_access_key\": "
	    "\"wJalrXUtnFEMI\", \"session_token\": \"FwoGZXIvYXdz\"}}"));
	assert_string_equal(cfg.cloud.secret_access_key, "wJalrXUtnFEMI");
	before = cfg;
	config_wipe_secrets(&cfg);
	assert_memory_equal(cfg.cloud.access_key_id, zero,
	    sizeof(cfg.cloud.access_key_id));
	assert_memory_equal(cfg.cloud.secret_access_key, zero,
	    sizeof(cfg.cloud.secret_access_key));
	assert_memory_equal(cfg.cloud.session_token, zero,
	    sizeof(cfg.cloud.session_token));
	/* the rest is as it was */
	memset(before.cloud.access_key_id, 0,
	    sizeof(before.cloud.access_key_id));
	memset(before.cloud.secret_access_key, 0,
	    sizeof(before.cloud.secret_access_key));
	memset(before.cloud.session_token, 0,
	    sizeof(before.cloud.session_token));
	assert_memory_equal(&cfg, &before, sizeof(cfg));
}

/* The longest file name metrics_textfile takes, and one byte more. */
static void
test_textfile_name_bound(void **state)
{
	char name[256], text[512];

	(void)state;
	memset(name, 'a', sizeof(name));
	memcpy(name + 200 - 5, ".prom", 6);
	snprintf(text, sizeof(text), "{\"metrics_textfile\": \"/m/%s\"}",
	    name);
	assert_null(parse_err(text));
	assert_int_equal(strlen(strrchr(cfg.metrics_textfile, '/') + 1), 200);
	memset(name, 'a', sizeof(name));
	memcpy(name + 201 - 5, ".prom", 6);
	snprintf(text, sizeof(text), "{\"metrics_textfile\": \"/m/%s\"}",
	    name);
	assert_string_equal(parse_err(text),
	    "metrics_textfile: file name longer than 200 bytes");
	assert_null(parse_err("{}"));
	assert_string_equal(cfg.metrics_textfile, "");
	assert_null(parse_err("{\"metrics_textfile\": "
	    "\"/var/lib/node_exporter/textfile/enid.prom\"}"));
	assert_string_equal(cfg.metrics_textfile,
	    "/var/lib/node_exporter/textfile/enid.prom");
}

/*
 * enidctl show config: every key but the secrets, in the file's shape,
 * so that it parses back to the same configuration, secrets empty.
 */
static void
test_config_to_json_round_trip(void **state)
{
	static struct enid_config first;
	const char *text =
	    "{\"user\": \"nobody\", \"admin_group\": \"adm\",\n"
	    " \"log_level\": \"warning\", \"cluster_name\": \"prod\",\n"
	    " \"ip_family\": \"ipv6\",\n"
	    " \"cloud\": {\"region\": \"eu-west-1\", \"allow_http\": true,\n"
	    "   \"access_key_id\": \"AKIDEXAMPLE\",\n"
	    "   \"secret_access_key\": \"wJalrXUtnFEMI\",\n"
	    "   \"session_token\": \"FwoGZXIvYXdz\",\n"
	    "   \"rate\": {\"mutating\": {\"capacity\": 5}}},\n"
	    " \"pool\": {\"max_pods\": 29, \"link_timeout_s\": 7},\n"
	    " \"subnets\": [{\"id\": \"subnet-a\", \"security_groups\": "
	    "[\"sg-1\", \"sg-2\"]}, {\"id\": \"subnet-b\"}],\n"
	    " \"leak_gc\": {\"enabled\": false},\n"
	    " \"routing\": {\"connmark\": 256},\n"
	    " \"snat\": {\"enabled\": false, \"random_fully\": false,\n"
	    "   \"exclude\": [\"192.168.0.0/16\", \"203.0.113.7/32\"]},\n"
	    " \"metrics_textfile\": \"/m/enid.prom\"}\n";
	struct json_object *o, *cloud;
	const char *out;
	char err[256];

	(void)state;
	assert_null(parse_err(text));
	config_wipe_secrets(&cfg);
	first = cfg;
	assert_null(parse_err(text));	/* the secrets, again */
	o = config_to_json(&cfg);
	out = json_object_to_json_string(o);
	assert_null(strstr(out, "AKIDEXAMPLE"));
	assert_null(strstr(out, "wJalrXUtnFEMI"));
	assert_null(strstr(out, "FwoGZXIvYXdz"));
	assert_true(json_object_object_get_ex(o, "cloud", &cloud));
	assert_false(json_object_object_get_ex(cloud, "access_key_id", NULL));
	assert_false(json_object_object_get_ex(cloud, "session_token", NULL));
	assert_non_null(strstr(out, "\"log_level\": \"warning\""));
	assert_non_null(strstr(out, "\"ip_family\": \"ipv6\""));
	assert_non_null(strstr(out,
	    "\"metrics_textfile\": \"\\/m\\/enid.prom\""));
	/* snat.* as the file says them: CIDRs as strings, the mark a number */
	assert_non_null(strstr(out, "\"snat\": { \"enabled\": false, "
	    "\"exclude\": [ \"192.168.0.0\\/16\", \"203.0.113.7\\/32\" ], "
	    "\"random_fully\": false }"));
	assert_non_null(strstr(out, "\"connmark\": 256"));
	assert_int_equal(config_parse(out, strlen(out), &cfg, err,
	    sizeof(err)), 0);
	assert_memory_equal(&cfg, &first, sizeof(cfg));
	json_object_put(o);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_configs_name_key_and_reason),
		cmocka_unit_test(test_too_long_string),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_snat_good),
		cmocka_unit_test(test_snat_vpc_overlap),
		cmocka_unit_test(test_full_config),
		cmocka_unit_test(test_load_file_errors),
		cmocka_unit_test(test_u32_bounds),
		cmocka_unit_test(test_caps_agree),
		cmocka_unit_test(test_string_bounds),
		cmocka_unit_test(test_subnet_bounds),
		cmocka_unit_test(test_cross_key_edges),
		cmocka_unit_test(test_size_cap),
		cmocka_unit_test(test_wipe_secrets),
		cmocka_unit_test(test_textfile_name_bound),
		cmocka_unit_test(test_config_to_json_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
